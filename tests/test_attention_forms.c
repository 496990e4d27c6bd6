/* Attention at shapes that reach each fused kernel form and its edges: on a
 * CPU adapter kernels/attention_block.wgsl (several query rows per
 * invocation; head sizes up to 512), attention.wgsl past 512; on GPUs
 * (WGC_KERNELS=gpu) the staged forms. Row counts that leave an invocation's
 * rows partly past seq_q, both causal corners with seq_q above and below
 * seq_kv, GQA, additive masks with -inf entries, softcap, head_dim_v !=
 * head_dim, head sizes 1..3 and 65..130, [batch, seq, heads, dim] strides, a
 * single row and key, key ranges beyond one launch's loop budget
 * (split-KV), and decoding's key blocks in one launch. Each result is
 * compared with a float64 reference on both backends. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct form_case {
  size_t batch, heads, heads_kv, seq_q, seq_kv, hd, hdv;
  wgc_causal causal;
  float softcap;
  int mask;   /* 0 none; 1 additive [heads, seq_q, seq_kv], broadcast over
                 batch; 2 the same with -inf entries */
  bool bshd;  /* [batch, seq, heads, dim] layouts for Q, K, V and O */
  size_t pad; /* floats after each row of Q, K, V and O */
  size_t off; /* floats before element 0 of Q, K, V and O in their buffers */
} form_case;

static wgc_attention_strides layout(const form_case *c, size_t heads,
                                    size_t seq, size_t dim) {
  dim += c->pad;
  if (c->bshd)
    return (wgc_attention_strides){seq * heads * dim, dim, heads * dim};
  return (wgc_attention_strides){heads * seq * dim, seq * dim, dim};
}

/* The largest |error| against the reference, per backend. */
static double worst_abs[2];

/* Whether got matches want within bound, NaN where want is NaN. */
static bool close_to(float got, double want, double bound) {
  if (isnan(want))
    return isnan(got);
  return fabs((double)got - want) <= bound;
}

static void form_run(int bi, const form_case *c) {
  static const char *masks[] = {"none", "top_left", "bottom_right"};
  wgc_context *ctx;
  if (!backend_case(bi, &ctx,
                    "attention_forms batch=%zu heads=%zu heads_kv=%zu "
                    "seq_q=%zu seq_kv=%zu head_dim=%zu head_dim_v=%zu "
                    "causal=%s softcap=%g mask=%d bshd=%d pad=%zu off=%zu",
                    c->batch, c->heads, c->heads_kv, c->seq_q, c->seq_kv, c->hd,
                    c->hdv, masks[c->causal], c->softcap, c->mask, c->bshd,
                    c->pad, c->off))
    return;
  wgc_attention_desc d = {.batch = c->batch,
                          .heads = c->heads,
                          .heads_kv = c->heads_kv,
                          .seq_q = c->seq_q,
                          .seq_kv = c->seq_kv,
                          .head_dim = c->hd,
                          .head_dim_v = c->hdv,
                          .scale = (float)(1.0 / sqrt((double)c->hd)),
                          .causal = c->causal,
                          .softcap = c->softcap};
  d.q_stride = layout(c, c->heads, c->seq_q, c->hd);
  d.k_stride = layout(c, c->heads_kv, c->seq_kv, c->hd);
  d.v_stride = layout(c, c->heads_kv, c->seq_kv, c->hdv);
  d.o_stride = layout(c, c->heads, c->seq_q, c->hdv);
  /* buffers of off + n floats (K and V one more) */
  size_t off = c->off;
  size_t nq = off + c->batch * c->heads * c->seq_q * (c->hd + c->pad);
  size_t nk = off + c->batch * c->heads_kv * c->seq_kv * (c->hd + c->pad);
  size_t nv = off + c->batch * c->heads_kv * c->seq_kv * (c->hdv + c->pad);
  size_t no = off + c->batch * c->heads * c->seq_q * (c->hdv + c->pad);
  size_t nm = c->heads * c->seq_q * c->seq_kv;
  float *qb = falloc(nq), *kb = falloc(nk + 1), *vb = falloc(nv + 1);
  float *m = falloc(nm + 1), *ob = falloc(no);
  float *q = qb + off, *k = kb + off, *v = vb + off, *o = ob + off;
  /* scores of a few units: the softmax is far from uniform */
  fill_uniform(qb, nq, -1.5f, 1.5f, 41);
  fill_uniform(kb, nk, -1.5f, 1.5f, 42);
  fill_uniform(vb, nv, -1.0f, 1.0f, 43);
  fill_uniform(m, nm, -2.0f, 2.0f, 44);
  if (c->mask == 2)
    for (size_t i = 0; i < nm; i += 7)
      m[i] = -INFINITY;
  wgc_ptr dq = dev_from(ctx, qb, nq), dk = dev_from(ctx, kb, nk + 1),
          dv = dev_from(ctx, vb, nv + 1), dm = 0, dout = dev_alloc(ctx, 4 * no);
  if (c->mask) {
    dm = dev_from(ctx, m, nm + 1);
    d.mask = dm;
    d.mask_stride = (wgc_attention_strides){0, c->seq_q * c->seq_kv, c->seq_kv};
  }
  if (dq && dk && dv && dout && (dm || !c->mask)) {
    wgc_status s = wgc_attention(ctx, &d, dq + 4 * off, dk + 4 * off,
                                 dv + 4 * off, dout + 4 * off);
    CHECK(s == WGC_OK, "wgc_attention returned %s: %s", wgc_status_name(s),
          wgc_last_error(ctx));
    if (s == WGC_OK && dev_read(ctx, ob, dout, no)) {
      double *want = dalloc(no ? no : 1);
      wgc_attention_desc rd = d;
      rd.mask = c->mask ? (wgc_ptr)(uintptr_t)m : 0;
      ref_attention(&rd, q, k, v, want);
      /* API.md's bound, with a mask's entries and softcap in the scores
       * adding no more than their own rounding */
      double bound = 1e-5 * (double)(c->hd + 8) * 1.5 * 1.5 * 1.0 + 1e-6;
      size_t bad = 0;
      for (size_t b = 0; b < c->batch; b++)
        for (size_t h = 0; h < c->heads; h++)
          for (size_t i = 0; i < c->seq_q; i++)
            for (size_t e = 0; e < c->hdv; e++) {
              size_t r = ((b * c->heads + h) * c->seq_q + i) * c->hdv + e;
              float g = o[b * d.o_stride.batch + h * d.o_stride.head +
                          i * d.o_stride.seq + e];
              if (!isnan(want[r]) && fabs((double)g - want[r]) > worst_abs[bi])
                worst_abs[bi] = fabs((double)g - want[r]);
              if (!close_to(g, want[r], bound) && bad++ == 0)
                CHECK(false,
                      "o[b=%zu h=%zu i=%zu e=%zu] = %.9g, want %.9g "
                      "(bound %.3g)",
                      b, h, i, e, g, want[r], bound);
            }
      CHECK(bad == 0, "%zu elements out of bound", bad);
      free(want);
    }
  }
  dev_free(ctx, dq);
  dev_free(ctx, dk);
  dev_free(ctx, dv);
  dev_free(ctx, dm);
  dev_free(ctx, dout);
  free(qb);
  free(kb);
  free(vb);
  free(m);
  free(ob);
  case_end();
}

TEST(attention_forms) {
  const wgc_causal NONE = WGC_CAUSAL_NONE, TL = WGC_CAUSAL_TOP_LEFT,
                   BR = WGC_CAUSAL_BOTTOM_RIGHT;
  const form_case cases[] = {
      /* rows past seq_q in the last invocation, both corners */
      {1, 2, 2, 37, 37, 64, 64, TL, 0, 0, false, 0, 0},
      {2, 4, 2, 70, 29, 32, 32, BR, 0, 0, false, 0, 0}, /* rows seeing no key */
      {1, 4, 1, 50, 90, 64, 64, BR, 0, 0, false, 0, 0},
      {1, 3, 3, 61, 130, 64, 64, NONE, 0, 0, false, 0, 0},
      /* head_dim 128, head_dim_v != head_dim */
      {1, 4, 2, 45, 45, 128, 128, TL, 0, 0, false, 0, 0},
      {1, 2, 1, 33, 51, 80, 48, BR, 0, 0, false, 0, 0},
      {1, 2, 2, 19, 23, 48, 112, NONE, 0, 0, false, 0, 0},
      /* head sizes 1..3 and 65..130 (past 128: the staged form) */
      {1, 2, 1, 9, 13, 1, 1, TL, 0, 0, false, 0, 0},
      {1, 2, 2, 11, 7, 2, 3, BR, 0, 0, false, 0, 0},
      {1, 1, 1, 26, 26, 3, 5, NONE, 0, 0, false, 0, 0},
      {1, 2, 1, 18, 25, 65, 65, TL, 0, 0, false, 0, 0},
      {1, 2, 1, 17, 21, 130, 66, NONE, 0, 0, false, 0, 0},
      /* masks, -inf entries (rows whose visible keys are all -inf: NaN),
       * softcap */
      {2, 2, 1, 37, 31, 64, 64, TL, 0, 1, false, 0, 0},
      {1, 2, 2, 37, 25, 64, 64, BR, 0, 2, false, 0, 0},
      {1, 2, 1, 37, 27, 64, 64, TL, 5.0f, 2, false, 0, 0},
      /* [batch, seq, heads, dim] strides */
      {2, 4, 2, 37, 26, 64, 64, TL, 0, 0, true, 0, 0},
      {1, 2, 1, 33, 19, 80, 48, BR, 0, 0, true, 0, 0},
      /* K/V (and Q) rows loaded as vec4s: operands 4 bytes past a 16-byte
       * boundary; rows padded to a multiple of 4 floats; rows at strides
       * that are not (scalar loads) */
      {1, 2, 1, 37, 29, 64, 64, TL, 0, 0, false, 0, 1},
      {1, 2, 2, 21, 33, 32, 48, NONE, 0, 0, false, 4, 0},
      {1, 2, 1, 19, 27, 64, 32, BR, 0, 0, false, 1, 2},
      {2, 2, 1, 23, 17, 32, 48, TL, 0, 0, true, 2, 3},
      /* a single row, a single key */
      {1, 2, 1, 1, 40, 64, 64, BR, 0, 0, false, 0, 0},
      {1, 2, 1, 45, 1, 128, 128, NONE, 0, 0, false, 0, 0},
      /* keys beyond one launch's loop budget on lavapipe (split-KV):
       * about 3600 keys at head size 64 */
      {1, 1, 1, 20, 3700, 64, 64, BR, 0, 0, false, 0, 0},
      /* decoding, a few rows a head: the block form's key blocks, merged
       * by the combine (a last block partly seen; rows whose first keys
       * fall in a later block; GQA, masks, softcap, strides, scalar
       * loads, head_dim_v != head_dim) */
      {1, 4, 4, 1, 90, 32, 32, BR, 0, 0, false, 0, 0},
      {1, 1, 1, 8, 40, 64, 64, BR, 0, 0, false, 0, 0},
      {2, 4, 2, 3, 70, 64, 48, BR, 0, 2, false, 0, 0},
      {1, 2, 1, 2, 77, 64, 64, BR, 5.0f, 1, true, 0, 0},
      {1, 3, 3, 1, 45, 3, 5, NONE, 0, 0, false, 1, 2},
      {1, 2, 1, 1, 300, 16, 24, NONE, 0, 2, true, 2, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int bi = 0; bi < 2; bi++)
      form_run(bi, &cases[i]);
  if (worst_abs[0] > 0 || worst_abs[1] > 0)
    printf("# attention forms: worst |error| cpu %.3g, webgpu %.3g\n",
           worst_abs[0], worst_abs[1]);
}

/* The form for CPU adapters: decoding (one row a head here) takes two
 * launches, its key blocks in one and their combine; a call with rows
 * enough for the lanes (a prompt) or too few keys to split one, but two
 * with an f16 O (states for every head, then the combine writing O). The
 * results of such shapes are checked above and in test_types_attention.c. */
TEST(attention_decode_launches) {
  static const struct {
    size_t heads, seq_q, seq_kv;
    uint32_t launches;
    wgc_dtype o_type;
  } runs[] = {{4, 1, 90, 2, WGC_DTYPE_F32},
              {2, 3, 200, 2, WGC_DTYPE_F32},
              {4, 64, 64, 1, WGC_DTYPE_F32},
              {4, 1, 20, 1, WGC_DTYPE_F32},
              {4, 64, 64, 2, WGC_DTYPE_F16}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    if (!case_begin("attention_decode_launches heads=%zu seq_q=%zu "
                    "seq_kv=%zu o_type=%s",
                    runs[i].heads, runs[i].seq_q, runs[i].seq_kv,
                    wgc_dtype_name(runs[i].o_type)))
      continue;
    wgc_context *ctx = new_ctx_kernels(WGC_BACKEND_WEBGPU, 0, KERNELS_CPU);
    size_t H = runs[i].heads, SQ = runs[i].seq_q, SK = runs[i].seq_kv;
    wgc_attention_desc d = {.batch = 1,
                            .heads = H,
                            .seq_q = SQ,
                            .seq_kv = SK,
                            .head_dim = 32,
                            .scale = 0.25f,
                            .causal = WGC_CAUSAL_BOTTOM_RIGHT,
                            .o_type = runs[i].o_type};
    wgc_ptr q = ctx ? dev_alloc(ctx, 4 * H * SQ * 32) : 0;
    wgc_ptr kv = ctx ? dev_alloc(ctx, 4 * H * SK * 32) : 0;
    wgc_ptr o = ctx ? dev_alloc(ctx, 4 * H * SQ * 32) : 0;
    if (q && kv && o) {
      CHECK_STATUS(wgc_profile_start(ctx), WGC_OK);
      CHECK_STATUS(wgc_attention(ctx, &d, q, kv, kv, o), WGC_OK);
      CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
      wgc_profile_record rec;
      size_t n = 0;
      CHECK_STATUS(wgc_profile_records(ctx, &rec, 1, &n), WGC_OK);
      CHECK(n == 1 && rec.launches == runs[i].launches,
            "%zu records, launches %u, want %u", n, n ? rec.launches : 0,
            runs[i].launches);
    }
    dev_free(ctx, q);
    dev_free(ctx, kv);
    dev_free(ctx, o);
    wgc_destroy(ctx);
    case_end();
  }
}
