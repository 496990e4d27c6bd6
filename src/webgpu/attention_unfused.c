/* Attention whose head sizes are too long for the fused kernels: with a
 * query row (or one softmax state) beyond a storage binding, no launch of
 * kernels/attention*.wgsl can hold it. Each query row then runs as the
 * unfused formula from the other ops, which split any length:
 *   s = scale * q K^T (GEMM, k = head_dim split as it needs; K read
 *       through its seq stride),
 *   softcap: s = softcap * tanh(s) with scale / softcap in the GEMM,
 *   s += the row's mask,
 *   s = exp(s - max s), l = sum s, o = (s V) / l,
 * over the prefix of keys the causal mask lets the row see (zeros when
 * none). IEEE cases follow as in the fused path: NaN scores or a +inf
 * score give NaN rows through the max and exp; but a key of weight 0
 * (a -inf score) with a NaN or infinite value makes the row NaN here
 * (0 * inf in the GEMM), where the fused kernels skip it. Only tiny
 * binding limits reach this (4 KiB bindings: head sizes from about 1000),
 * so its launch count does not matter. */
#include "wg.h"

/* Keys j < visible(i) are seen by query row i: every mask keeps a prefix. */
static uint64_t visible(const wgc_attention_desc *d, uint64_t i) {
  uint64_t n = d->seq_kv;
  switch (d->causal) {
  case WGC_CAUSAL_TOP_LEFT:
    return i + 1 < n ? i + 1 : n;
  case WGC_CAUSAL_BOTTOM_RIGHT:
    if (i + 1 + n <= d->seq_q)
      return 0;
    return i + 1 + n - d->seq_q < n ? i + 1 + n - d->seq_q : n;
  default:
    return n;
  }
}

/* c (1 x n, contiguous) := alpha * a (1 x k) b (k x n; strides rs, cs). */
static wgc_status row_gemm(wgc_context *ctx, const char *fn, uint64_t n,
                           uint64_t k, float alpha, wgc_ref a, wgc_ref b,
                           size_t rs_b, size_t cs_b, wgc_ref c) {
  wgc_gemm_args g = {.m = 1,
                     .n = n,
                     .k = k,
                     .batch = 1,
                     .alpha = alpha,
                     .beta = 0.0f,
                     .a = a,
                     .b = b,
                     .c = c,
                     .rs_a = k,
                     .cs_a = 1,
                     .rs_b = rs_b,
                     .cs_b = cs_b,
                     .rs_c = n,
                     .cs_c = 1,
                     .fn = fn};
  return wg_gemm(ctx, &g);
}

/* x[i] := x[i] op y[i * y_stride] for n elements. */
static wgc_status row_scalar(wgc_context *ctx, const char *fn, wgc_binary_op op,
                             wgc_ref x, wgc_ref y, uint64_t n,
                             size_t y_stride) {
  wgc_binary_args b = {.op = op,
                       .rank = 1,
                       .count = n,
                       .shape = {n},
                       .stride_a = {1},
                       .stride_b = {y_stride},
                       .a = x,
                       .b = y,
                       .out = x,
                       .fn = fn};
  return wg_binary(ctx, &b);
}

static wgc_status row_reduce(wgc_context *ctx, const char *fn, wgc_reduce_op op,
                             wgc_ref x, uint64_t n, wgc_ref out) {
  wgc_reduce_args r = {.op = op,
                       .outer = 1,
                       .len = n,
                       .inner = 1,
                       .input = x,
                       .output = out,
                       .fn = fn};
  return wg_reduce(ctx, &r);
}

/* x (1 x n) := beta * x: a GEMM with k = 0. */
static wgc_status row_scale(wgc_context *ctx, const char *fn, wgc_ref x,
                            uint64_t n, float beta) {
  wgc_gemm_args g = {.m = 1,
                     .n = n,
                     .k = 0,
                     .batch = 1,
                     .alpha = 1.0f,
                     .beta = beta,
                     .a = x,
                     .b = x,
                     .c = x,
                     .rs_a = 1,
                     .cs_a = 1,
                     .rs_b = n,
                     .cs_b = 1,
                     .rs_c = n,
                     .cs_c = 1,
                     .fn = fn};
  return wg_gemm(ctx, &g);
}

wgc_status wg_attention_unfused(wgc_context *ctx, const wgc_attention_args *a) {
  const wgc_attention_desc *d = &a->d;
  uint64_t hd = d->head_dim, hdv = d->head_dim_v;
  uint64_t seq_q = d->seq_q, seq_kv = d->seq_kv;
  uint64_t bh_total = (uint64_t)d->batch * d->heads;
  uint64_t group = d->heads / d->heads_kv;
  float cap = d->softcap;
  wgc_ref s = {0}, stat = {0};
  wgc_status st = wg_scratch(ctx, a->fn, 4 * (seq_kv ? seq_kv : 1), &s);
  if (st == WGC_OK) /* the row's max, then its sum */
    st = wg_scratch(ctx, a->fn, 8, &stat);
  wgc_ref mx = stat, sum = wg_advance(stat, 1);
  for (uint64_t bh = 0; bh < bh_total && st == WGC_OK; bh++) {
    uint64_t b = bh / d->heads, h = bh % d->heads, hk = h / group;
    wgc_ref k = wg_advance(a->k, b * d->k_stride.batch + hk * d->k_stride.head);
    wgc_ref v = wg_advance(a->v, b * d->v_stride.batch + hk * d->v_stride.head);
    for (uint64_t i = 0; i < seq_q && st == WGC_OK; i++) {
      wgc_ref q =
          wg_advance(a->q, b * d->q_stride.batch + h * d->q_stride.head +
                               i * d->q_stride.seq);
      wgc_ref o =
          wg_advance(a->o, b * d->o_stride.batch + h * d->o_stride.head +
                               i * d->o_stride.seq);
      uint64_t n = visible(d, i);
      if (n == 0) { /* k == 0: o := 0 */
        st = row_gemm(ctx, a->fn, hdv, 0, 1.0f, o, o, hdv, 1, o);
        continue;
      }
      st = row_gemm(ctx, a->fn, n, hd, cap > 0 ? d->scale / cap : d->scale, q,
                    k, 1, d->k_stride.seq, s);
      if (st == WGC_OK && cap > 0) {
        wgc_unary_args u = {
            .op = WGC_UNARY_TANH, .n = n, .input = s, .output = s, .fn = a->fn};
        st = wg_unary(ctx, &u);
        if (st == WGC_OK)
          st = row_scale(ctx, a->fn, s, n, cap);
      }
      if (st == WGC_OK && a->has_mask)
        st = row_scalar(ctx, a->fn, WGC_BINARY_ADD, s,
                        wg_advance(a->mask, b * d->mask_stride.batch +
                                                h * d->mask_stride.head +
                                                i * d->mask_stride.seq),
                        n, 1);
      if (st == WGC_OK)
        st = row_reduce(ctx, a->fn, WGC_REDUCE_MAX, s, n, mx);
      if (st == WGC_OK)
        st = row_scalar(ctx, a->fn, WGC_BINARY_SUB, s, mx, n, 0);
      if (st == WGC_OK) {
        wgc_unary_args u = {
            .op = WGC_UNARY_EXP, .n = n, .input = s, .output = s, .fn = a->fn};
        st = wg_unary(ctx, &u);
      }
      if (st == WGC_OK)
        st = row_reduce(ctx, a->fn, WGC_REDUCE_SUM, s, n, sum);
      if (st == WGC_OK)
        st = row_gemm(ctx, a->fn, hdv, n, 1.0f, s, v, d->v_stride.seq, 1, o);
      if (st == WGC_OK)
        st = row_scalar(ctx, a->fn, WGC_BINARY_DIV, o, sum, hdv, 0);
    }
  }
  return st;
}
