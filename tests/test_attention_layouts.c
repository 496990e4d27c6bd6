/* Attention with the desc's later fields on both backends against the
 * float64 formula (ops_ref.c): additive masks broadcast through strides,
 * causal and mask together, softcap, a value head size of its own, and Q,
 * K, V, O strides: [batch, seq, heads, dim], packed QKV (also GQA), and a
 * decode step over a KV cache allocated for a longer sequence, read in
 * place. Every operand lives in one input and one output allocation at
 * the case's offsets; output elements between O's rows must stay as they
 * were. Bad descs are rejected naming the field, output untouched. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef wgc_attention_strides strides;

/* How a case places its operands. */
typedef enum layout {
  LAY_PLAIN,   /* contiguous, strides 0 */
  LAY_BSHD,    /* [batch, seq, heads, dim] for Q, K, V and O */
  LAY_PACKED,  /* Q, K, V packed [batch, seq, heads + 2*heads_kv, dim] */
  LAY_CACHE,   /* K, V: [batch, heads_kv, max_seq, dim] caches */
  LAY_CACHE_T, /* K, V: [batch, max_seq, heads_kv, dim] caches */
} layout;

/* Which mask, broadcast how. */
typedef enum mask_kind {
  MASK_NONE,
  MASK_FULL,  /* [batch, heads, seq_q, seq_kv] */
  MASK_ROWS,  /* [seq_q, seq_kv] shared by batches and heads */
  MASK_BATCH, /* [batch, 1, 1, ld]: key padding per batch */
} mask_kind;

typedef struct lay_case {
  const char *name;
  wgc_attention_desc d; /* scale 0: 1/sqrt(head_dim) */
  layout lay;
  mask_kind mask;
  size_t max_seq; /* LAY_CACHE*: the cache's length; MASK_BATCH: its ld */
  float range;    /* q and k in [-range, range); 0: 1 */
} lay_case;

static size_t span_of(size_t b, size_t h, size_t s, size_t row, strides st) {
  if (!b || !h || !s || !row)
    return 0;
  return (b - 1) * st.batch + (h - 1) * st.head + (s - 1) * st.seq + row;
}

static double max_abs_f(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i]))
      m = fmax(m, fabs((double)x[i]));
  return m;
}

/* Worst |got - want| over finite elements, per backend, for the summary. */
static double worst_abs[2];

/* Offsets (elements) of the operands in the input and output buffers. */
typedef struct placed {
  wgc_attention_desc d;
  size_t qo, ko, vo, mo, n_in; /* in the input buffer */
  size_t oo, n_out;            /* in the output buffer */
} placed;

static placed place(const lay_case *c) {
  placed p = {.d = c->d};
  wgc_attention_desc *d = &p.d;
  if (d->scale == 0)
    d->scale = (float)(1.0 / sqrt((double)d->head_dim));
  if (strstr(c->name, "softcap")) /* scores up to about 50 */
    d->softcap = 5.0f;
  size_t B = d->batch, H = d->heads, HK = d->heads_kv ? d->heads_kv : H;
  size_t SQ = d->seq_q, SK = d->seq_kv, D = d->head_dim;
  size_t DV = d->head_dim_v ? d->head_dim_v : D;
  size_t at = 0;
  switch (c->lay) {
  case LAY_PLAIN:
    break;
  case LAY_BSHD:
    d->q_stride = (strides){SQ * H * D, D, H * D};
    d->k_stride = (strides){SK * HK * D, D, HK * D};
    d->v_stride = (strides){SK * HK * DV, DV, HK * DV};
    d->o_stride = (strides){SQ * H * DV, DV, H * DV};
    break;
  case LAY_PACKED: { /* D == DV, SQ == SK */
    size_t row = (H + 2 * HK) * D;
    d->q_stride = (strides){SQ * row, D, row};
    d->k_stride = d->v_stride = (strides){SQ * row, D, row};
    d->o_stride = (strides){SQ * H * D, D, H * D};
    p.qo = 0, p.ko = H * D, p.vo = (H + HK) * D;
    at = B * SQ * row;
    break;
  }
  case LAY_CACHE:
    d->k_stride = (strides){HK * c->max_seq * D, c->max_seq * D, D};
    d->v_stride = (strides){HK * c->max_seq * DV, c->max_seq * DV, DV};
    break;
  case LAY_CACHE_T:
    d->k_stride = (strides){c->max_seq * HK * D, D, HK * D};
    d->v_stride = (strides){c->max_seq * HK * DV, DV, HK * DV};
    break;
  }
  strides qs = d->q_stride, ks = d->k_stride, vs = d->v_stride,
          os = d->o_stride;
  if (!qs.seq)
    qs = (strides){H * SQ * D, SQ * D, D};
  if (!ks.seq)
    ks = (strides){HK * SK * D, SK * D, D};
  if (!vs.seq)
    vs = (strides){HK * SK * DV, SK * DV, DV};
  if (!os.seq)
    os = (strides){H * SQ * DV, SQ * DV, DV};
  if (c->lay != LAY_PACKED) {
    size_t kspan = span_of(B, HK, c->max_seq ? c->max_seq : SK, D, ks);
    size_t vspan = span_of(B, HK, c->max_seq ? c->max_seq : SK, DV, vs);
    p.qo = 0, at = span_of(B, H, SQ, D, qs) + 3;
    p.ko = at, at += kspan + 5;
    p.vo = at, at += vspan + 2;
  }
  p.mo = at + 1;
  switch (c->mask) {
  case MASK_NONE:
    break;
  case MASK_FULL:
    d->mask_stride = (strides){H * SQ * SK, SQ * SK, SK};
    at = p.mo + B * H * SQ * SK;
    break;
  case MASK_ROWS:
    d->mask_stride = (strides){0, 0, SK};
    at = p.mo + SQ * SK;
    break;
  case MASK_BATCH:
    d->mask_stride = (strides){c->max_seq, 0, 0};
    at = p.mo + B * c->max_seq;
    break;
  }
  p.n_in = at + 7;
  p.oo = 5;
  p.n_out = p.oo + span_of(B, H, SQ, DV, os) + 9;
  return p;
}

/* Mask values: mostly finite in [-2, 2), some -inf (never a whole row:
 * key 0 stays finite); MASK_BATCH: -inf past each batch's length. */
static void fill_mask(const lay_case *c, const placed *p, float *m, size_t n) {
  fill_uniform(m, n, -2, 2, 41);
  if (c->mask == MASK_BATCH) {
    for (size_t b = 0; b < p->d.batch; b++)
      for (size_t j = p->d.seq_kv - 3 * b; j < c->max_seq; j++)
        m[b * c->max_seq + j] = -INFINITY;
    return;
  }
  size_t SK = p->d.seq_kv;
  for (size_t i = 0; i < n; i++)
    if (i % SK && i % 7 == 3)
      m[i] = -INFINITY;
}

/* A WebGPU context of a test's own, made on the first case that runs. */
typedef struct own_ctx {
  const char *label;
  size_t max_binding_bytes; /* 0: the adapter's */
  bool gpu_kernels;         /* the kernel form made for GPUs (WGC_KERNELS) */
  wgc_context *ctx;
} own_ctx;

/* own (NULL: the shared context of backend bi): a WebGPU context of the
 * test's own. */
static void run_case(int bi, const lay_case *c, own_ctx *own) {
  wgc_context *ctx;
  if (own) {
    if (!case_begin("attention layout %s[webgpu %s]", c->name, own->label))
      return;
    if (!own->ctx)
      own->ctx = new_ctx_kernels(WGC_BACKEND_WEBGPU, own->max_binding_bytes,
                                 own->gpu_kernels ? KERNELS_GPU : KERNELS_ENV);
    ctx = own->ctx;
    if (!ctx) {
      case_end();
      return;
    }
  } else if (!backend_case(bi, &ctx, "attention layout %s", c->name)) {
    return;
  }
  placed p = place(c);
  wgc_attention_desc d = p.d;
  size_t DV = d.head_dim_v ? d.head_dim_v : d.head_dim;
  float range = c->range ? c->range : 1;
  float *in = falloc(p.n_in), *out = falloc(p.n_out), *got = falloc(p.n_out);
  fill_uniform(in, p.mo, -range, range, 31);
  /* V in [-1, 1): its own scale in the bound */
  fill_uniform(in + p.vo, p.mo - p.vo, -1, 1, 32);
  if (c->mask != MASK_NONE)
    fill_mask(c, &p, in + p.mo, p.n_in - p.mo);
  if (c->lay == LAY_CACHE || c->lay == LAY_CACHE_T) /* never read */
    for (size_t b = 0; b < d.batch; b++)
      for (size_t hk = 0; hk < (d.heads_kv ? d.heads_kv : d.heads); hk++)
        for (size_t j = d.seq_kv; j < c->max_seq; j++) {
          float *kr = in + p.ko + b * d.k_stride.batch + hk * d.k_stride.head +
                      j * d.k_stride.seq;
          float *vr = in + p.vo + b * d.v_stride.batch + hk * d.v_stride.head +
                      j * d.v_stride.seq;
          for (size_t x = 0; x < d.head_dim; x++)
            kr[x] = NAN;
          for (size_t x = 0; x < DV; x++)
            vr[x] = NAN;
        }
  for (size_t i = 0; i < p.n_out; i++)
    out[i] = (float)(1000 + i);
  wgc_ptr din = dev_from(ctx, in, p.n_in), dout = dev_from(ctx, out, p.n_out);
  size_t nrow = d.batch * d.heads * d.seq_q, n = nrow * DV;
  if (din && dout) {
    wgc_attention_desc dd = d;
    if (c->mask != MASK_NONE)
      dd.mask = at(din, p.mo);
    wgc_status s = wgc_attention(ctx, &dd, at(din, p.qo), at(din, p.ko),
                                 at(din, p.vo), at(dout, p.oo));
    CHECK(s == WGC_OK, "wgc_attention returned %s: %s", wgc_status_name(s),
          wgc_last_error(ctx));
    if (s == WGC_OK && dev_read(ctx, got, dout, p.n_out)) {
      wgc_attention_desc hd = d;
      if (c->mask != MASK_NONE)
        hd.mask = (wgc_ptr)(uintptr_t)(in + p.mo);
      double *want = dalloc(n);
      ref_attention(&hd, in + p.qo, in + p.ko, in + p.vo, want);
      /* gather O's rows; mark them written */
      strides os = d.o_stride;
      if (!os.seq)
        os = (strides){d.heads * d.seq_q * DV, d.seq_q * DV, DV};
      float *o = falloc(n);
      bool *written = calloc(p.n_out, 1);
      for (size_t r = 0; r < nrow; r++) {
        size_t b = r / (d.heads * d.seq_q), h = r / d.seq_q % d.heads;
        size_t i = r % d.seq_q;
        size_t e = p.oo + b * os.batch + h * os.head + i * os.seq;
        for (size_t x = 0; x < DV; x++) {
          o[r * DV + x] = got[e + x];
          written[e + x] = true;
        }
      }
      double mq = max_abs_f(in + p.qo, p.ko - p.qo);
      double mk = max_abs_f(in + p.ko, p.vo - p.ko);
      double mv = max_abs_f(in + p.vo, p.mo - p.vo);
      double mm =
          c->mask != MASK_NONE ? max_abs_f(in + p.mo, p.n_in - p.mo) : 0;
      if (c->lay == LAY_PACKED) /* q, k, v interleave: one bound for all */
        mq = mk = mv = max_abs_f(in, p.mo);
      double bound =
          1e-5 * (double)d.head_dim * mq * mk * mv + 4e-6 * mv + 1e-6 * mm * mv;
      char key[64];
      snprintf(key, sizeof key, "attention_layouts[%s]",
               backend_label(test_backends[bi]));
      CHECK_CLOSE(key, NULL, o, want, n, 0, bound);
      for (size_t i = 0; i < n; i++)
        if (isfinite(want[i]) && isfinite(o[i]))
          worst_abs[bi] = fmax(worst_abs[bi], fabs(o[i] - want[i]));
      for (size_t i = 0; i < p.n_out; i++)
        if (!written[i] && !same_bits(got[i], out[i])) {
          CHECK(false, "element %zu outside O's rows changed: %g, was %g", i,
                got[i], out[i]);
          break;
        }
      free(o);
      free(written);
      free(want);
    }
  }
  dev_free(ctx, din);
  dev_free(ctx, dout);
  free(in);
  free(out);
  free(got);
  case_end();
}

#define DESC(b, h, hkv, sq, skv, dim, dimv, cz)                                \
  (wgc_attention_desc) {                                                       \
    .batch = b, .heads = h, .heads_kv = hkv, .seq_q = sq, .seq_kv = skv,       \
    .head_dim = dim, .head_dim_v = dimv, .causal = cz                          \
  }

TEST(attention_layouts) {
  const wgc_causal NONE = WGC_CAUSAL_NONE, TL = WGC_CAUSAL_TOP_LEFT,
                   BR = WGC_CAUSAL_BOTTOM_RIGHT;
  lay_case cases[] = {
      {"mask full", DESC(2, 3, 1, 7, 13, 16, 0, NONE), LAY_PLAIN, MASK_FULL, 0,
       0},
      {"mask rows + causal", DESC(2, 2, 2, 19, 19, 8, 0, TL), LAY_PLAIN,
       MASK_ROWS, 0, 0},
      {"mask rows + bottom-right", DESC(1, 2, 1, 5, 21, 12, 0, BR), LAY_PLAIN,
       MASK_ROWS, 0, 0},
      {"key padding", DESC(3, 2, 2, 9, 30, 16, 0, NONE), LAY_PLAIN, MASK_BATCH,
       32, 0},
      {"softcap", DESC(1, 2, 2, 24, 33, 32, 0, NONE), LAY_PLAIN, MASK_NONE, 0,
       3},
      {"softcap + mask", DESC(2, 4, 2, 17, 17, 20, 0, TL), LAY_PLAIN, MASK_FULL,
       0, 3},
      {"head_dim_v 40", DESC(1, 2, 1, 11, 18, 16, 40, NONE), LAY_PLAIN,
       MASK_NONE, 0, 0},
      {"head_dim_v 3", DESC(2, 2, 2, 6, 9, 24, 3, BR), LAY_PLAIN, MASK_ROWS, 0,
       0},
      {"head_dim_v 24 tiles", DESC(1, 2, 2, 20, 37, 96, 24, TL), LAY_PLAIN,
       MASK_FULL, 0, 0},
      {"head_dim_v 200 tiles", DESC(1, 1, 1, 18, 21, 72, 200, NONE), LAY_PLAIN,
       MASK_NONE, 0, 0},
      {"bshd", DESC(2, 3, 3, 10, 14, 8, 0, NONE), LAY_BSHD, MASK_NONE, 0, 0},
      {"bshd gqa mask", DESC(2, 4, 2, 70, 70, 64, 0, TL), LAY_BSHD, MASK_ROWS,
       0, 0},
      {"bshd tiles", DESC(1, 2, 1, 20, 25, 128, 0, BR), LAY_BSHD, MASK_FULL, 0,
       0},
      {"packed qkv", DESC(2, 3, 3, 12, 12, 16, 0, TL), LAY_PACKED, MASK_NONE, 0,
       0},
      {"packed qkv gqa", DESC(1, 6, 2, 33, 33, 8, 0, NONE), LAY_PACKED,
       MASK_ROWS, 0, 0},
      {"decode cache", DESC(2, 4, 2, 1, 37, 32, 0, BR), LAY_CACHE, MASK_NONE,
       64, 0},
      {"decode cache wide", DESC(1, 4, 1, 1, 37, 128, 0, BR), LAY_CACHE,
       MASK_NONE, 64, 0},
      {"decode cache [b, s, h, d]", DESC(2, 4, 2, 1, 50, 16, 0, BR),
       LAY_CACHE_T, MASK_NONE, 64, 0},
      {"decode cache padded", DESC(3, 2, 2, 1, 20, 16, 0, NONE), LAY_CACHE,
       MASK_BATCH, 64, 0},
      {"prefill cache", DESC(1, 2, 1, 9, 29, 16, 0, BR), LAY_CACHE_T, MASK_NONE,
       40, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int bi = 0; bi < 2; bi++)
      run_case(bi, &cases[i], NULL);
  if (worst_abs[0] > 0 || worst_abs[1] > 0)
    printf("# attention layouts: worst |error| cpu %.3g, webgpu %.3g\n",
           worst_abs[0], worst_abs[1]);
}

/* Under 4 KiB bindings: launches over windows of strided operands and of
 * the mask, key blocks merged by the split-KV combine (states of
 * head_dim_v + 2, in slices of dims when two do not bind), interleaved
 * packed QKV, and the unfused path for query rows beyond a binding. */
TEST(attention_layouts_small_bindings) {
  const wgc_causal NONE = WGC_CAUSAL_NONE, TL = WGC_CAUSAL_TOP_LEFT,
                   BR = WGC_CAUSAL_BOTTOM_RIGHT;
  lay_case cases[] = {
      {"packed qkv gqa", DESC(1, 6, 2, 33, 33, 8, 0, NONE), LAY_PACKED,
       MASK_ROWS, 0, 0},
      {"bshd tiles", DESC(1, 2, 1, 20, 25, 128, 0, BR), LAY_BSHD, MASK_FULL, 0,
       0},
      {"decode cache wide padded", DESC(2, 4, 2, 1, 300, 128, 0, NONE),
       LAY_CACHE, MASK_BATCH, 320, 0},
      {"prefill cache softcap", DESC(1, 2, 1, 9, 129, 16, 0, BR), LAY_CACHE_T,
       MASK_ROWS, 140, 2},
      {"head_dim_v 200 tiles", DESC(1, 1, 1, 18, 60, 72, 200, TL), LAY_BSHD,
       MASK_FULL, 0, 0},
      {"sliced states softcap", DESC(1, 1, 1, 2, 9, 16, 541, BR), LAY_BSHD,
       MASK_ROWS, 0, 2},
      {"unfused softcap", DESC(1, 2, 1, 3, 5, 1100, 40, BR), LAY_BSHD,
       MASK_FULL, 0, 0},
  };
  int bi = test_backends[0] == WGC_BACKEND_WEBGPU ? 0 : 1;
  own_ctx capped = {.label = "4 KiB bindings", .max_binding_bytes = 4096};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run_case(bi, &cases[i], &capped);
  wgc_destroy(capped.ctx);
}

/* The unfused path (a query, key or value row beyond a 4 KiB binding) on
 * the adapter's kernel forms and on those made for GPUs: GQA, both causal
 * alignments (rows that see no key among them), each mask broadcast,
 * softcap, head_dim_v above and below head_dim, query blocks past the
 * first, strided, packed and cached layouts. */
TEST(attention_layouts_unfused) {
  const wgc_causal NONE = WGC_CAUSAL_NONE, TL = WGC_CAUSAL_TOP_LEFT,
                   BR = WGC_CAUSAL_BOTTOM_RIGHT;
  lay_case cases[] = {
      {"unfused gqa mask", DESC(2, 4, 2, 7, 9, 1100, 40, TL), LAY_PLAIN,
       MASK_FULL, 0, 0},
      {"unfused bottom-right softcap", DESC(1, 2, 1, 12, 5, 1030, 0, BR),
       LAY_BSHD, MASK_ROWS, 0, 0},
      {"unfused head_dim_v 1500", DESC(2, 2, 2, 5, 30, 16, 1500, NONE),
       LAY_CACHE, MASK_BATCH, 40, 0},
      {"unfused query blocks", DESC(1, 1, 1, 70, 20, 1100, 8, TL), LAY_BSHD,
       MASK_NONE, 0, 0},
      {"unfused packed qkv", DESC(1, 2, 1, 6, 6, 1050, 0, TL), LAY_PACKED,
       MASK_ROWS, 0, 0},
      {"unfused decode softcap", DESC(2, 4, 1, 1, 37, 1024, 0, BR), LAY_CACHE_T,
       MASK_NONE, 50, 0},
  };
  int bi = test_backends[0] == WGC_BACKEND_WEBGPU ? 0 : 1;
  own_ctx ctxs[] = {
      {.label = "4 KiB bindings", .max_binding_bytes = 4096},
      {.label = "4 KiB bindings, gpu kernels",
       .max_binding_bytes = 4096,
       .gpu_kernels = true},
  };
  for (size_t c = 0; c < 2; c++) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      run_case(bi, &cases[i], &ctxs[c]);
    wgc_destroy(ctxs[c].ctx);
  }
}

/* The kernel form made for GPUs, whatever the adapter: head_dim 1 and 2
 * with head_dim_v over 64 run the "tiles" shape, whose score chunks were
 * sized from head_dim alone (DC 1 and 2, zero vec4s staged), so every
 * score came out 0 and the output was the plain mean of V. */
TEST(attention_layouts_gpu_kernels) {
  const wgc_causal NONE = WGC_CAUSAL_NONE, TL = WGC_CAUSAL_TOP_LEFT,
                   BR = WGC_CAUSAL_BOTTOM_RIGHT;
  lay_case cases[] = {
      {"head_dim 1 head_dim_v 256 tiles", DESC(1, 1, 1, 1, 8, 1, 256, NONE),
       LAY_PLAIN, MASK_NONE, 0, 3},
      {"head_dim 2 head_dim_v 80 tiles", DESC(2, 2, 1, 19, 23, 2, 80, TL),
       LAY_BSHD, MASK_FULL, 0, 3},
      {"head_dim 1 head_dim_v 130 tiles", DESC(1, 2, 2, 5, 40, 1, 130, BR),
       LAY_PLAIN, MASK_ROWS, 0, 3},
      {"head_dim 3 head_dim_v 200 tiles", DESC(1, 1, 1, 17, 20, 3, 200, NONE),
       LAY_PLAIN, MASK_NONE, 0, 3},
  };
  int bi = test_backends[0] == WGC_BACKEND_WEBGPU ? 0 : 1;
  own_ctx gpu = {.label = "gpu kernels", .gpu_kernels = true};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run_case(bi, &cases[i], &gpu);
  wgc_destroy(gpu.ctx);
}

/* Bad new fields: each rejected naming its parameter, O untouched. */
TEST(attention_layouts_invalid) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "attention layout invalid"))
      continue;
    enum { N = 4096 };
    float *h = falloc(N);
    fill_uniform(h, N, -1, 1, 3);
    wgc_ptr x = dev_from(ctx, h, N), y = dev_from(ctx, h, N);
    const wgc_attention_desc base = {.batch = 2,
                                     .heads = 2,
                                     .seq_q = 4,
                                     .seq_kv = 5,
                                     .head_dim = 8,
                                     .scale = 0.3f};
    wgc_attention_desc d = base;
    d.softcap = -1;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "d->softcap");
    d.softcap = NAN;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "d->softcap");
    d.softcap = INFINITY;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "d->softcap");
    d = base;
    d.head_dim = 0, d.head_dim_v = 4;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "d->head_dim");
    /* rows of O overlapping one another */
    d = base;
    d.o_stride = (strides){64, 32, 4};
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "d->o_stride");
    d.o_stride = (strides){64, 0, 8};
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "d->o_stride");
    /* strided footprints past the allocation */
    d = base;
    d.q_stride = (strides){4000, 512, 8};
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "q");
    d = base;
    d.v_stride = (strides){1, 1, 2000};
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "v");
    d = base;
    d.o_stride = (strides){4090, 8, 16};
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "o");
    /* the mask: past the allocation, not an allocation, overlapping O */
    d = base;
    d.mask = at(x, N - 10);
    d.mask_stride = (strides){20, 0, 5};
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "mask");
    d.mask = wild_address(5);
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "mask");
    d.mask = at(y, 100);
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, x, x, y), "wgc_attention",
                   "o|mask");
    /* O between Q's rows in one allocation still overlaps Q's footprint */
    d = base;
    d.q_stride = (strides){128, 64, 16};
    d.o_stride = d.q_stride;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, x, y, y, at(x, 8)),
                   "wgc_attention", "o|q");
    CHECK_DEVICE_EQUALS(ctx, y, h, N, "o");
    CHECK_DEVICE_EQUALS(ctx, x, h, N, "q");
    dev_free(ctx, x);
    dev_free(ctx, y);
    free(h);
    case_end();
  }
}
