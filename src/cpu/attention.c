/* Scaled dot-product attention, one query row at a time: scores, softcap,
 * the additive mask, a max-subtracted softmax and the weighted sum of V.
 * Each q.k sums float products in blocks of 64 (dot.h), as GEMM does, and
 * everything after it is in double, so the reference is far inside the
 * float tolerance. Tasks
 * are blocks of query rows of one (batch, head); each worker has a scratch
 * row of scores and one of output accumulators. Operands are addressed
 * through their (resolved) element strides. */
#include "cpu.h"
#include "dot.h"
#include "split.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define ROWS_PER_TASK 16
/* exp(x) for x below this is a weight of 0: e^-87 is 1.6e-38, the bottom
 * of float32's normal range, where devices that flush subnormals agree. */
#define WEIGHT_MIN_LOG (-87.0)

typedef struct attn_job {
  const wgc_attention_desc *d;
  const float *q, *k, *v, *mask;
  float *o;
  size_t row_blocks;
  double *scratch; /* per worker: scores of the keys the last row sees,
                     head_dim_v sums, then head_dim_v floats of a block */
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

/* One query row: q (head_dim), keys and values at k and v with seq
 * strides ks and vs, the row of the mask (NULL: none), o (head_dim_v). */
static void attn_row(const attn_job *job, const float *q, const float *k,
                     size_t ks, const float *v, size_t vs, const float *mask,
                     float *o, size_t len, double *s, double *acc,
                     float *part) {
  const wgc_attention_desc *d = job->d;
  size_t hd = d->head_dim, hdv = d->head_dim_v;
  if (len == 0) { /* no key to attend to: zeros, as the contract says */
    for (size_t x = 0; x < hdv; x++)
      o[x] = 0.0f;
    return;
  }
  /* Non-finite scores follow the unfused softmax(s) V (API.md): a NaN or
   * +inf score makes the row NaN (exp(inf - inf)), a -inf one gets weight
   * 0, and a row whose scores are all -inf is NaN (exp(-inf - -inf)). A
   * key of weight 0 (score more than 87 below the max) contributes
   * nothing, not even a NaN value. */
  double scale = d->scale, cap = d->softcap, top = -INFINITY;
  bool bad = false;
  for (size_t j = 0; j < len; j++) {
    s[j] = scale * dot_rows(q, k + j * ks, hd);
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
  if (bad || top == -INFINITY) {
    for (size_t x = 0; x < hdv; x++)
      o[x] = NAN;
    return;
  }
  /* The weighted sum of V: float over blocks of DOT_BLOCK keys (SIMD over
   * the head's dimensions), the blocks in double, as dot.h's sums. Each
   * weight is rounded to float once and the same float goes into the
   * numerator and the denominator. */
  double sum = 0.0;
  for (size_t x = 0; x < hdv; x++)
    acc[x] = 0.0;
  for (size_t j0 = 0; j0 < len; j0 += DOT_BLOCK) {
    size_t j1 = len - j0 < DOT_BLOCK ? len : j0 + DOT_BLOCK;
    for (size_t x = 0; x < hdv; x++)
      part[x] = 0.0f;
    for (size_t j = j0; j < j1; j++) {
      /* A weight below float32's normal range is 0 (as the kernels'
       * attn_exp): its key does not reach the row, even with an infinite
       * or NaN value. */
      if (!(s[j] - top >= WEIGHT_MIN_LOG))
        continue;
      float p = (float)exp(s[j] - top);
      sum += p;
      axpy(part, p, v + j * vs, hdv);
    }
    for (size_t x = 0; x < hdv; x++)
      acc[x] += part[x];
  }
  for (size_t x = 0; x < hdv; x++)
    o[x] = (float)(acc[x] / sum);
}

/* A worker's scratch: seen scores, hdv sums and hdv floats, in doubles. */
static size_t scratch_doubles(size_t seen, size_t hdv) {
  return seen + hdv + (hdv + 1) / 2;
}

static void attn_task(void *arg, size_t task, unsigned worker) {
  const attn_job *job = arg;
  const wgc_attention_desc *d = job->d;
  size_t bh = task / job->row_blocks; /* batch * heads + head */
  size_t i0 = task % job->row_blocks * ROWS_PER_TASK;
  size_t i1 = i0 + ROWS_PER_TASK < d->seq_q ? i0 + ROWS_PER_TASK : d->seq_q;
  size_t group = d->heads / d->heads_kv;
  size_t b = bh / d->heads, h = bh % d->heads, hk = h / group;
  /* seq_kv == 0 may come with NULL K and V, which must not be offset */
  const float *k = job->k, *v = job->v;
  if (d->seq_kv) {
    k += b * d->k_stride.batch + hk * d->k_stride.head;
    v += b * d->v_stride.batch + hk * d->v_stride.head;
  }
  const float *q = job->q + b * d->q_stride.batch + h * d->q_stride.head;
  float *o = job->o + b * d->o_stride.batch + h * d->o_stride.head;
  const float *mask =
      job->mask ? job->mask + b * d->mask_stride.batch + h * d->mask_stride.head
                : NULL;
  size_t seen = d->seq_q ? visible(d, d->seq_q - 1) : 0;
  size_t hdv = d->head_dim_v;
  double *s = job->scratch + worker * scratch_doubles(seen, hdv);
  for (size_t i = i0; i < i1; i++)
    attn_row(job, q + i * d->q_stride.seq, k, d->k_stride.seq, v,
             d->v_stride.seq, mask ? mask + i * d->mask_stride.seq : NULL,
             o + i * d->o_stride.seq, visible(d, i), s, s + seen,
             (float *)(s + seen + hdv));
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
  /* scores of the keys a row sees: the last row sees the most */
  size_t per =
      scratch_doubles(d->seq_q ? visible(d, d->seq_q - 1) : 0, d->head_dim_v);
  /* K alone bounds seq_kv by the address space, but not 8 bytes per key
   * times the workers: a wrapped size would allocate too little. */
  bool fits = per <= SIZE_MAX / sizeof(double) / workers;
  job.scratch = fits ? malloc(workers * per * sizeof(double)) : NULL;
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
  p.q = cpu_ref_at(a->q, b * d->q_stride.batch + h * d->q_stride.head +
                             r0 * d->q_stride.seq);
  p.o = cpu_ref_at(a->o, b * d->o_stride.batch + h * d->o_stride.head +
                             r0 * d->o_stride.seq);
  p.k = cpu_ref_at(a->k, b * d->k_stride.batch + hk * d->k_stride.head);
  p.v = cpu_ref_at(a->v, b * d->v_stride.batch + hk * d->v_stride.head);
  p.has_mask = a->has_mask && seq_kv;
  if (p.has_mask)
    p.mask =
        cpu_ref_at(a->mask, b * d->mask_stride.batch + h * d->mask_stride.head +
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
