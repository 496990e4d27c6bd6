/* Scaled dot-product attention, one query row at a time: scores, softcap,
 * the additive mask, a max-subtracted softmax and the weighted sum of V,
 * all in double so the reference is far inside the float tolerance. Tasks
 * are blocks of query rows of one (batch, head); each worker has a scratch
 * row of scores and one of output accumulators. Operands are addressed
 * through their (resolved) element strides. */
#include "cpu.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define ROWS_PER_TASK 16

typedef struct attn_job {
  const wgc_attention_desc *d;
  const float *q, *k, *v, *mask;
  float *o;
  size_t row_blocks;
  double *scratch; /* per worker: scores of the keys the last row sees,
                     then head_dim_v sums */
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
                     float *o, size_t len, double *s, double *acc) {
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
   * key of weight 0 contributes nothing, not even a NaN value. */
  double scale = d->scale, cap = d->softcap, top = -INFINITY;
  bool bad = false;
  for (size_t j = 0; j < len; j++) {
    const float *kj = k + j * ks;
    double dot = 0.0;
    for (size_t x = 0; x < hd; x++)
      dot += (double)q[x] * kj[x];
    s[j] = scale * dot;
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
  double sum = 0.0;
  for (size_t x = 0; x < hdv; x++)
    acc[x] = 0.0;
  for (size_t j = 0; j < len; j++) {
    double p = exp(s[j] - top);
    if (p == 0.0)
      continue;
    const float *vj = v + j * vs;
    sum += p;
    for (size_t x = 0; x < hdv; x++)
      acc[x] += p * vj[x];
  }
  for (size_t x = 0; x < hdv; x++)
    o[x] = (float)(acc[x] / sum);
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
  double *s = job->scratch + worker * (seen + d->head_dim_v);
  for (size_t i = i0; i < i1; i++)
    attn_row(job, q + i * d->q_stride.seq, k, d->k_stride.seq, v,
             d->v_stride.seq, mask ? mask + i * d->mask_stride.seq : NULL,
             o + i * d->o_stride.seq, visible(d, i), s, s + seen);
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
  size_t per = (d->seq_q ? visible(d, d->seq_q - 1) : 0) + d->head_dim_v;
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
