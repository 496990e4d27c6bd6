/* Scaled dot-product attention: scores, softcap, the additive mask, a
 * max-subtracted softmax and the weighted sum of V. Each q.k sums float
 * products in blocks of 64 and everything after it is in double but the
 * weights (each e^(s - max) computed in float by vexp.h, within 3e-7
 * relative, the same float in the numerator and the denominator; the
 * weighted sum of V in float blocks of 64 keys, the blocks in double), as
 * GEMM's reference does, so the reference is far inside the float
 * tolerance. Tasks are blocks of query rows of one (batch, head).
 * A block runs as two products on GEMM's packed kernel (tile.h): S = Q K^T
 * for all the keys its rows see, then P V, with the softmax in between;
 * where V holds a non-finite value among those keys (a weight of 0 must
 * keep it out, and 0 * inf is NaN in a product) or the block's scores
 * would not fit its scratch, rows run one at a time instead, on the same
 * sums (dot.h; its q.k adds the products in another order). Operands are
 * addressed through their (resolved) element strides. Typed operands (f16,
 * bf16) are converted to float as they are read (rows into a buffer,
 * packed slivers as GEMM's), so the sums are those of the f32 call, and
 * a typed O is rounded once from the double result. */
#include "cpu.h"
#include "dot.h"
#include "dtype.h"
#include "split.h"
#include "tile.h"
#include "vexp.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define ROWS_PER_TASK 16 /* a multiple of TILE_MR */
#define KEY_BLOCK 256    /* keys packed at once for S = Q K^T */
/* The largest score block a task keeps (ROWS_PER_TASK x the keys its last
 * row sees, in doubles and floats): beyond it rows run one at a time. */
#define TILED_MAX_KEYS (1u << 16)
/* exp(x) for x below this is a weight of 0: e^-87 is 1.6e-38, the bottom
 * of float32's normal range, where devices that flush subnormals agree. */
#define WEIGHT_MIN_LOG (-87.0)

/* An operand of its type from element at: f32 read in place, another
 * type converted (row) or packed (pack) as it is read. */
typedef struct attn_src {
  const void *p;
  wgc_dtype t;
  size_t at;
} attn_src;

/* Elements [e, e + n) of s as floats: in place for f32, else converted
 * into buf. */
static const float *row(const attn_src *s, size_t e, size_t n, float *buf) {
  if (s->t == WGC_DTYPE_F32)
    return (const float *)s->p + s->at + e;
  wgc_dtype_load_run(s->p, s->t, s->at + e, n, buf);
  return buf;
}

/* tile.h's packers over s: xn slivers' lanes (rows of A with mr TILE_MR,
 * columns of B with TILE_NR) at element e + x*xs + p*ps for p < kc. */
static void pack(const attn_src *s, size_t e, size_t xs, size_t ps, size_t xn,
                 size_t kc, size_t mr, float *dst) {
  const float *f = (const float *)s->p + s->at + e;
  if (s->t != WGC_DTYPE_F32)
    tile_pack_typed(s->p, s->t, s->at + e, xs, ps, xn, kc, mr, dst);
  else if (mr == TILE_MR)
    tile_pack_a(f, xs, ps, xn, kc, dst);
  else
    tile_pack_b(f, ps, xs, kc, xn, dst);
}

/* O from element at, its rows rs apart: each element stored once, as a
 * float or rounded once from the double to a 2-byte type. */
typedef struct attn_dst {
  void *p;
  wgc_dtype t;
  size_t at, rs;
} attn_dst;

static void put(const attn_dst *o, size_t i, size_t x, double v) {
  size_t e = o->at + i * o->rs + x;
  if (o->t == WGC_DTYPE_F32)
    ((float *)o->p)[e] = (float)v;
  else
    wgc_dtype_store(o->p, o->t, e, v);
}

/* Row i of O := acc[0 .. n) / div, each quotient in double and stored
 * once (a 2-byte O in runs). */
static void put_row(const attn_dst *o, size_t i, const double *acc, size_t n,
                    double div) {
  if (o->t == WGC_DTYPE_F32) {
    for (size_t x = 0; x < n; x++)
      put(o, i, x, acc[x] / div);
    return;
  }
  double q[64];
  for (size_t x0 = 0; x0 < n; x0 += 64) {
    size_t m = cpu_min(64, n - x0);
    for (size_t x = 0; x < m; x++)
      q[x] = acc[x0 + x] / div;
    wgc_dtype_store_doubles(o->p, o->t, o->at + i * o->rs + x0, q, m);
  }
}

static void fill(const attn_dst *o, size_t i, size_t n, float value) {
  for (size_t x = 0; x < n; x++)
    put(o, i, x, value);
}

/* Floats of a worker's row buffers: a Q row, a K row, a V row and a mask
 * row of seen keys, for operands that are not f32. */
static size_t row_bufs(const wgc_attention_desc *d, size_t seen) {
  return 2 * d->head_dim + d->head_dim_v + seen;
}

typedef struct attn_job {
  const wgc_attention_desc *d;
  const void *q, *k, *v, *mask;
  void *o;
  size_t row_blocks;
  size_t bufs;   /* floats of row buffers at the end of a worker's scratch */
  size_t seen;   /* keys the last row sees */
  bool tiled;    /* seen is small enough for the tiled scratch */
  size_t per;    /* scratch bytes per worker */
  char *scratch; /* per worker */
} attn_job;

/* Keys j < visible(i) are seen by query i (the masks all keep a prefix). */
static size_t visible(const wgc_attention_desc *d, size_t i) {
  size_t n = d->seq_kv;
  switch (d->causal) {
  case WGC_CAUSAL_TOP_LEFT: /* j <= i */
    return i + 1 < n ? i + 1 : n;
  case WGC_CAUSAL_BOTTOM_RIGHT: /* j <= i + seq_kv - seq_q, maybe negative */
    if (i + 1 + n <= d->seq_q)
      return 0;
    return i + 1 + n - d->seq_q < n ? i + 1 + n - d->seq_q : n;
  default:
    return n;
  }
}

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

/* Turns the scaled dots s[0 .. len) of a row into scores (the float
 * overflow, softcap, the mask) and finds their max. Non-finite scores
 * follow the unfused softmax(s) V (API.md): a NaN or +inf score makes the
 * row NaN (exp(inf - inf)), a -inf one gets weight 0, and a row whose
 * scores are all -inf is NaN (exp(-inf - -inf)); false for such a row. */
static bool row_scores(const wgc_attention_desc *d, double *s,
                       const float *mask, size_t len, double *top_out) {
  double cap = d->softcap, top = -INFINITY;
  bool bad = false;
  for (size_t j = 0; j < len; j++) {
    /* beyond the float range a score is the infinity float arithmetic
     * gives (as the WebGPU kernels do): 1e30 * 1e30 is +inf, a NaN row */
    if (isinf((float)s[j]))
      s[j] = (float)s[j];
    if (cap > 0)
      s[j] = cap * tanh(s[j] / cap);
    if (mask)
      s[j] += mask[j];
    bad = bad || isnan(s[j]) || s[j] == INFINITY;
    top = s[j] > top ? s[j] : top;
  }
  *top_out = top;
  return !bad && top != -INFINITY;
}

/* p[j] := key j's weight as a float for j < len, VEXP_LANES at a time:
 * e^(s[j] - top), 0 below float32's normal range (as the kernels'
 * attn_exp), so its key does not reach the row, even with an infinite or
 * NaN value. */
static void weights(const double *s, double top, float *p, size_t len) {
  float k[VEXP_K];
  vexp_constants(k);
  for (size_t j = 0; j < len; j += VEXP_LANES) {
    size_t n = len - j < VEXP_LANES ? len - j : VEXP_LANES;
    float u[VEXP_LANES] = {0};
    for (size_t q = 0; q < n; q++)
      u[q] = (float)(s[j + q] - top);
    vexp_f v;
    memcpy(&v, u, sizeof v);
    v = vexp(v, k);
    memcpy(u, &v, sizeof u);
    for (size_t q = 0; q < n; q++)
      p[j + q] = s[j + q] - top >= WEIGHT_MIN_LOG ? u[q] : 0.0f;
  }
}

/* One key's weight (weights), for the row path. */
static float weight(double s, double top) {
  float p;
  weights(&s, top, &p, 1);
  return p;
}

/* The operands of one (batch, head), at its element 0 (mask: none when
 * its p is NULL), and the row buffers (row_bufs). */
typedef struct attn_head {
  attn_src q, k, v, mask;
  attn_dst o;
  float *qb, *kb, *vb, *mb;
} attn_head;

/* Query row i: its keys and values at seq strides ks and vs, its row of
 * the mask, O's row i (head_dim_v). */
static void attn_row(const wgc_attention_desc *d, const attn_head *hp, size_t i,
                     size_t len, double *s, double *acc, float *part) {
  size_t hd = d->head_dim, hdv = d->head_dim_v;
  size_t ks = d->k_stride.seq, vs = d->v_stride.seq;
  if (len == 0) { /* no key to attend to: zeros, as the contract says */
    fill(&hp->o, i, hdv, 0.0f);
    return;
  }
  const float *q = row(&hp->q, i * d->q_stride.seq, hd, hp->qb);
  for (size_t j = 0; j < len; j++)
    s[j] = d->scale * dot_rows(q, row(&hp->k, j * ks, hd, hp->kb), hd);
  const float *mask =
      hp->mask.p ? row(&hp->mask, i * d->mask_stride.seq, len, hp->mb) : NULL;
  double top;
  if (!row_scores(d, s, mask, len, &top)) {
    fill(&hp->o, i, hdv, NAN);
    return;
  }
  double sum = 0.0;
  for (size_t x = 0; x < hdv; x++)
    acc[x] = 0.0;
  for (size_t j0 = 0; j0 < len; j0 += DOT_BLOCK) {
    size_t j1 = len - j0 < DOT_BLOCK ? len : j0 + DOT_BLOCK;
    for (size_t x = 0; x < hdv; x++)
      part[x] = 0.0f;
    for (size_t j = j0; j < j1; j++) {
      float p = weight(s[j], top);
      if (p == 0.0f)
        continue;
      sum += p;
      axpy(part, p, row(&hp->v, j * vs, hdv, hp->vb), hdv);
    }
    for (size_t x = 0; x < hdv; x++)
      acc[x] += part[x];
  }
  put_row(&hp->o, i, acc, hdv, sum);
}

/* Whether rows [0, n) of V (hdv each, stride vs) are all finite. */
static bool finite_rows(const attn_src *v, size_t vs, size_t n, size_t hdv,
                        float *buf) {
  for (size_t j = 0; j < n; j++) {
    const float *r = row(v, j * vs, hdv, buf);
    for (size_t x = 0; x < hdv; x++) {
      uint32_t bits;
      memcpy(&bits, r + x, sizeof bits);
      if ((bits & 0x7f800000u) == 0x7f800000u)
        return false;
    }
  }
  return true;
}

/* The tiled scratch of a task whose last row sees seen keys, by parts. */
typedef struct tiled_scratch {
  double *s;    /* ROWS_PER_TASK x seen scores */
  double *acc;  /* ROWS_PER_TASK x hdv_r sums of P V */
  double *sum;  /* ROWS_PER_TASK weight sums */
  float *p;     /* ROWS_PER_TASK x seen_r weights (0 past a row's keys) */
  float *pa;    /* ROWS_PER_TASK x TILE_KC packed rows */
  float *pb;    /* TILE_KC x max(KEY_BLOCK, hdv_r) packed keys or values */
  size_t bytes; /* the whole */
} tiled_scratch;

static tiled_scratch tiled_layout(char *base, size_t seen, size_t hdv) {
  size_t seen_r = round_up(seen, TILE_KC), hdv_r = round_up(hdv, TILE_NR);
  size_t cols = KEY_BLOCK > hdv_r ? KEY_BLOCK : hdv_r;
  size_t n_s = ROWS_PER_TASK * seen, n_acc = ROWS_PER_TASK * hdv_r;
  size_t n_p = ROWS_PER_TASK * seen_r, n_pa = ROWS_PER_TASK * TILE_KC;
  tiled_scratch t = {0};
  t.bytes = (n_s + n_acc + ROWS_PER_TASK) * sizeof(double) +
            (n_p + n_pa + TILE_KC * cols) * sizeof(float);
  if (base) {
    t.s = (double *)base;
    t.acc = t.s + n_s;
    t.sum = t.acc + n_acc;
    t.p = (float *)(t.sum + ROWS_PER_TASK);
    t.pa = t.p + n_p;
    t.pb = t.pa + n_pa;
  }
  return t;
}

/* Rows [i0, i1) of one (batch, head) as S = Q K^T, softmax, P V on the
 * packed kernel; V's rows [0, seen) are finite. */
static void attn_tiled(const wgc_attention_desc *d, const attn_head *hp,
                       size_t i0, size_t i1, size_t seen,
                       const tiled_scratch *t) {
  size_t rows = i1 - i0, hd = d->head_dim, hdv = d->head_dim_v;
  size_t qs = d->q_stride.seq, ks = d->k_stride.seq, vs = d->v_stride.seq;
  size_t seen_r = round_up(seen, TILE_KC), hdv_r = round_up(hdv, TILE_NR);
  /* S = Q K^T: depth blocks of TILE_KC, keys in blocks of KEY_BLOCK */
  for (size_t p0 = 0; p0 < hd; p0 += TILE_KC) {
    size_t kc = hd - p0 < TILE_KC ? hd - p0 : TILE_KC;
    pack(&hp->q, i0 * qs + p0, qs, 1, rows, kc, TILE_MR, t->pa);
    for (size_t j0 = 0; j0 < seen; j0 += KEY_BLOCK) {
      size_t keys = seen - j0 < KEY_BLOCK ? seen - j0 : KEY_BLOCK;
      pack(&hp->k, j0 * ks + p0, ks, 1, keys, kc, TILE_NR, t->pb);
      for (size_t js = 0; js < keys; js += TILE_NR)
        for (size_t is = 0; is < rows; is += TILE_MR) {
          tile_kernel_add(kc, t->pa + is * kc, t->pb + js * kc, t->s, seen, is,
                          j0 + js, rows - is < TILE_MR ? rows - is : TILE_MR,
                          keys - js < TILE_NR ? keys - js : TILE_NR, p0 == 0);
        }
    }
  }
  /* the softmax of each row into P (float weights, 0 past its keys) */
  bool ok[ROWS_PER_TASK];
  for (size_t i = 0; i < rows; i++) {
    size_t len = visible(d, i0 + i);
    double *s = t->s + i * seen, top = 0.0;
    float *p = t->p + i * seen_r;
    for (size_t j = 0; j < len; j++)
      s[j] *= d->scale;
    const float *mask =
        hp->mask.p && len
            ? row(&hp->mask, (i0 + i) * d->mask_stride.seq, len, hp->mb)
            : NULL;
    ok[i] = len > 0 && row_scores(d, s, mask, len, &top);
    double sum = 0.0;
    if (ok[i])
      weights(s, top, p, len);
    for (size_t j = 0; j < len && ok[i]; j++)
      sum += p[j];
    for (size_t j = ok[i] ? len : 0; j < seen_r; j++)
      p[j] = 0.0f;
    t->sum[i] = sum;
  }
  /* O = P V: depth blocks of TILE_KC keys */
  for (size_t p0 = 0; p0 < seen; p0 += TILE_KC) {
    size_t kc = seen - p0 < TILE_KC ? seen - p0 : TILE_KC;
    tile_pack_a(t->p + p0, seen_r, 1, rows, kc, t->pa);
    pack(&hp->v, p0 * vs, 1, vs, hdv, kc, TILE_NR, t->pb);
    for (size_t js = 0; js < hdv; js += TILE_NR)
      for (size_t is = 0; is < rows; is += TILE_MR) {
        tile_kernel_add(kc, t->pa + is * kc, t->pb + js * kc, t->acc, hdv_r, is,
                        js, rows - is < TILE_MR ? rows - is : TILE_MR,
                        hdv - js < TILE_NR ? hdv - js : TILE_NR, p0 == 0);
      }
  }
  for (size_t i = 0; i < rows; i++) {
    size_t len = visible(d, i0 + i);
    if (len == 0)
      fill(&hp->o, i0 + i, hdv, 0.0f);
    else if (!ok[i])
      fill(&hp->o, i0 + i, hdv, NAN);
    else
      put_row(&hp->o, i0 + i, t->acc + i * hdv_r, hdv, t->sum[i]);
  }
}

/* The row path's scratch: seen scores, hdv sums and hdv floats. */
static size_t row_scratch_bytes(size_t seen, size_t hdv) {
  return (seen + hdv) * sizeof(double) + hdv * sizeof(float);
}

static void attn_task(void *arg, size_t task, unsigned worker) {
  const attn_job *job = arg;
  const wgc_attention_desc *d = job->d;
  size_t bh = task / job->row_blocks; /* batch * heads + head */
  size_t i0 = task % job->row_blocks * ROWS_PER_TASK;
  size_t i1 = i0 + ROWS_PER_TASK < d->seq_q ? i0 + ROWS_PER_TASK : d->seq_q;
  size_t group = d->heads / d->heads_kv;
  size_t b = bh / d->heads, h = bh % d->heads, hk = h / group;
  /* seq_kv == 0 may come with NULL K and V, which are never read */
  attn_head hp = {
      .q = {job->q, d->q_type, b * d->q_stride.batch + h * d->q_stride.head},
      .k = {job->k, d->k_type, b * d->k_stride.batch + hk * d->k_stride.head},
      .v = {job->v, d->v_type, b * d->v_stride.batch + hk * d->v_stride.head},
      .mask = {job->mask, d->mask_type,
               b * d->mask_stride.batch + h * d->mask_stride.head},
      .o = {job->o, d->o_type, b * d->o_stride.batch + h * d->o_stride.head,
            d->o_stride.seq}};
  char *scratch = job->scratch + worker * job->per;
  hp.qb = (float *)(scratch + job->per - job->bufs * sizeof(float));
  hp.kb = hp.qb + d->head_dim;
  hp.vb = hp.kb + d->head_dim;
  hp.mb = hp.vb + d->head_dim_v;
  size_t seen = visible(d, i1 - 1), hdv = d->head_dim_v;
  if (job->tiled && seen &&
      finite_rows(&hp.v, d->v_stride.seq, seen, hdv, hp.vb)) {
    tiled_scratch t = tiled_layout(scratch, seen, hdv);
    attn_tiled(d, &hp, i0, i1, seen, &t);
    return;
  }
  double *s = (double *)scratch;
  for (size_t i = i0; i < i1; i++)
    attn_row(d, &hp, i, visible(d, i), s, s + job->seen,
             (float *)(s + job->seen + hdv));
}

wgc_status cpu_attention(wgc_context *ctx, const wgc_attention_args *a) {
  const wgc_attention_desc *d = &a->d;
  attn_job job = {
      .d = d,
      .q = cpu_ptr(a->q),
      .k = cpu_ptr(a->k),
      .v = cpu_ptr(a->v),
      .o = cpu_ptr(a->o),
      .mask = a->has_mask ? cpu_ptr(a->mask) : NULL,
      .row_blocks = (d->seq_q + ROWS_PER_TASK - 1) / ROWS_PER_TASK,
  };
  size_t tasks = d->batch * d->heads * job.row_blocks;
  double work = 2.0 * d->batch * d->heads * d->seq_q * (d->seq_kv + 1) *
                (d->head_dim + d->head_dim_v);
  unsigned workers = cpu_workers(ctx, tasks, work);
  /* scores of the keys a row sees: the last row sees the most. K alone
   * bounds seq_kv by the address space, but not the scratch times the
   * workers: sizes are checked before they are multiplied. */
  job.seen = d->seq_q ? visible(d, d->seq_q - 1) : 0;
  size_t hdv = d->head_dim_v;
  bool fits = job.seen <= SIZE_MAX / 16 - hdv;
  job.per = fits ? row_scratch_bytes(job.seen, hdv) : 0;
  job.tiled = fits && job.seen <= TILED_MAX_KEYS && hdv <= SIZE_MAX / 64;
  if (job.tiled) {
    size_t t = tiled_layout(NULL, job.seen, hdv).bytes;
    job.per = t > job.per ? t : job.per;
  }
  bool typed = d->q_type || d->k_type || d->v_type || d->o_type ||
               (a->has_mask && d->mask_type);
  job.bufs = typed && fits ? row_bufs(d, job.seen) : 0;
  job.per = round_up((job.per ? job.per : 1) + job.bufs * sizeof(float), 64);
  fits = fits && job.per <= SIZE_MAX / workers;
  job.scratch = fits ? aligned_alloc(64, workers * job.per) : NULL;
  if (!job.scratch)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory for %u score rows of "
                    "seq_kv %zu",
                    a->fn, workers, d->seq_kv);
  cpu_parallel(ctx, tasks, work, attn_task, &job);
  free(job.scratch);
  return WGC_OK;
}

/* ---- pieces for the wasm32 queue (split.h) -------------------------------
 * Pieces are block_size[0] query rows of one (batch, head). A causal block
 * becomes a BOTTOM_RIGHT call on the keys its rows can see: query i sees
 * keys j < i + 1 + delta (delta 0 for TOP_LEFT, seq_kv - seq_q for
 * BOTTOM_RIGHT), so rows [r0, r1) with seq_kv' = r1 + delta see exactly
 * that; rows past the point where every key is visible run unmasked. */
wgc_status cpu_split_attention_plan(const wgc_attention_args *a, cpu_split *s) {
  const wgc_attention_desc *d = &a->d;
  double row =
      2.0 * (double)(d->seq_kv + 1) * (double)(d->head_dim + d->head_dim_v);
  s->work = row * (double)(d->seq_q * d->batch * d->heads);
  s->block_size[0] = cpu_fit(s, row, d->seq_q);
  s->blocks[0] = cpu_div_up(d->seq_q, s->block_size[0]);
  s->pieces = d->batch * d->heads * s->blocks[0];
  return WGC_OK;
}

static wgc_status attention_rows(wgc_context *ctx, const wgc_attention_args *a,
                                 size_t bh, size_t r0, size_t r1,
                                 wgc_causal causal, size_t seq_kv) {
  const wgc_attention_desc *d = &a->d;
  size_t group = d->heads / d->heads_kv;
  size_t b = bh / d->heads, h = bh % d->heads, hk = h / group;
  wgc_attention_args p = *a;
  p.d.batch = p.d.heads = p.d.heads_kv = 1;
  p.d.seq_q = r1 - r0;
  p.d.seq_kv = seq_kv;
  p.d.causal = causal;
  p.q = cpu_ref_typed(a->q, d->q_type,
                      b * d->q_stride.batch + h * d->q_stride.head +
                          r0 * d->q_stride.seq);
  p.o = cpu_ref_typed(a->o, d->o_type,
                      b * d->o_stride.batch + h * d->o_stride.head +
                          r0 * d->o_stride.seq);
  p.k = cpu_ref_typed(a->k, d->k_type,
                      b * d->k_stride.batch + hk * d->k_stride.head);
  p.v = cpu_ref_typed(a->v, d->v_type,
                      b * d->v_stride.batch + hk * d->v_stride.head);
  p.has_mask = a->has_mask && seq_kv;
  if (p.has_mask)
    p.mask = cpu_ref_typed(a->mask, d->mask_type,
                           b * d->mask_stride.batch + h * d->mask_stride.head +
                               r0 * d->mask_stride.seq);
  return cpu_attention(ctx, &p);
}

wgc_status cpu_split_attention_run(wgc_context *ctx,
                                   const wgc_attention_args *a, cpu_split *s,
                                   size_t i) {
  const wgc_attention_desc *d = &a->d;
  size_t bh = i / s->blocks[0];
  size_t r0 = i % s->blocks[0] * s->block_size[0];
  size_t r1 = cpu_min(r0 + s->block_size[0], d->seq_q);
  if (d->causal == WGC_CAUSAL_NONE)
    return attention_rows(ctx, a, bh, r0, r1, WGC_CAUSAL_NONE, d->seq_kv);
  long long n = (long long)d->seq_kv;
  long long delta =
      d->causal == WGC_CAUSAL_TOP_LEFT ? 0 : n - (long long)d->seq_q;
  long long seen = (long long)r1 + delta; /* keys the last row sees */
  if (seen <= 0)
    return attention_rows(ctx, a, bh, r0, r1, WGC_CAUSAL_BOTTOM_RIGHT, 0);
  if (seen <= n)
    return attention_rows(ctx, a, bh, r0, r1, WGC_CAUSAL_BOTTOM_RIGHT,
                          (size_t)seen);
  size_t all = (size_t)(n - delta); /* the first row that sees every key */
  if (all > r0) {
    wgc_status st =
        attention_rows(ctx, a, bh, r0, all, WGC_CAUSAL_BOTTOM_RIGHT, d->seq_kv);
    if (st != WGC_OK)
      return st;
    r0 = all;
  }
  return attention_rows(ctx, a, bh, r0, r1, WGC_CAUSAL_NONE, d->seq_kv);
}
