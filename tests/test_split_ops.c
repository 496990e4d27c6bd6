/* Operations on tensors beyond the storage binding limit: a WebGPU context
 * whose bindings are capped at 64 KiB (or 4 KiB) must split them, never
 * answer WGC_ERR_UNSUPPORTED. reduce with one row of [outer, len, inner]
 * (inner) wider than a binding; attention with one head's Q/O and K/V
 * beyond a binding (split over query rows and key blocks, the partial
 * softmax states merged). Each case is compared against the CPU backend
 * within API.md's bounds. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reduce ------------------------------------------------------------ */

/* Reduces x (of shape) over axis on the CPU backend and on gpu; the input
 * and output share one allocation when shared (output right after the
 * input). Sums within 1e-6 of the column's sum of |x| (MEAN: / len), MAX
 * and MIN exact, NaN where the CPU has NaN. */
static void reduce_case(wgc_context *gpu, wgc_reduce_op op, const float *x,
                        const size_t *shape, size_t rank, size_t axis,
                        bool shared) {
  wgc_context *cpu = test_ctx(WGC_BACKEND_CPU);
  size_t n = 1, outer = 1, inner = 1;
  for (size_t d = 0; d < rank; d++) {
    n *= shape[d];
    if (d < axis)
      outer *= shape[d];
    if (d > axis)
      inner *= shape[d];
  }
  size_t len = shape[axis], m = outer * inner;
  float *want = falloc(m), *got = falloc(m);
  wgc_ptr cx = dev_from(cpu, x, n), cy = dev_alloc(cpu, 4 * m);
  CHECK_STATUS(wgc_reduce(cpu, op, cx, cy, shape, rank, axis), WGC_OK);
  dev_read(cpu, want, cy, m);
  wgc_ptr gx, gy;
  if (shared) {
    gx = dev_alloc(gpu, 4 * (n + m));
    dev_write(gpu, gx, x, n);
    gy = at(gx, n);
  } else {
    gx = dev_from(gpu, x, n);
    gy = dev_alloc(gpu, 4 * m);
  }
  wgc_status s = wgc_reduce(gpu, op, gx, gy, shape, rank, axis);
  CHECK(s == WGC_OK, "wgc_reduce returned %s: %s", wgc_status_name(s),
        wgc_last_error(gpu));
  dev_read(gpu, got, gy, m);
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      size_t j = o * inner + i;
      double g = got[j], w = want[j], tol = 0;
      if (op != WGC_REDUCE_MAX && op != WGC_REDUCE_MIN) {
        /* the bound of each side against the exact value */
        double mag = 0;
        for (size_t r = 0; r < len; r++) {
          double v = x[(o * len + r) * inner + i];
          mag += op == WGC_REDUCE_SUM_SQUARE || op == WGC_REDUCE_L2 ? v * v
                                                                    : fabs(v);
        }
        if (op == WGC_REDUCE_PROD)
          mag = fabs(w);
        if (op == WGC_REDUCE_SUM || op == WGC_REDUCE_MEAN)
          tol = 1e-6 * mag / (op == WGC_REDUCE_MEAN ? (double)len : 1.0) + 1e-6;
        else
          tol = 2 * ref_reduce_tol(op, len, w, mag);
      }
      bool ok = isnan(w) ? isnan(g) : fabs(g - w) <= tol;
      if (!ok) {
        CHECK(false, "out[%zu] = %.9g, want %.9g (tolerance %.3g)", j, g, w,
              tol);
        break;
      }
    }
  dev_free(cpu, cx);
  dev_free(cpu, cy);
  dev_free(gpu, gx);
  if (!shared)
    dev_free(gpu, gy);
  free(want);
  free(got);
}

TEST(split_reduce) {
  static const struct {
    size_t rank, axis, shape[3];
    bool shared;
  } cases[] = {
      {2, 0, {3, 40000, 0}, false},   /* inner 2.5 bindings, 3 rows */
      {2, 0, {257, 20000, 0}, false}, /* 257 rows of 1.2 bindings */
      {3, 1, {2, 5, 30000}, false},   /* middle axis, huge inner */
      {3, 1, {3, 70, 5000}, false},   /* inner 0.3 binding: rows per launch */
      {2, 0, {3, 40000, 0}, true},    /* input and output adjacent */
  };
  wgc_context *gpu = NULL; /* created by the first case the filter runs */
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    size_t n = 1;
    for (size_t d = 0; d < cases[c].rank; d++)
      n *= cases[c].shape[d];
    float *x = falloc(n);
    fill_uniform(x, n, -1.0f, 1.0f, 100 + (unsigned)c);
    for (int op = 0; op < WGC_REDUCE_OP_COUNT; op++) {
      char shape[64];
      if (cases[c].rank == 2)
        snprintf(shape, sizeof shape, "[%zu,%zu]", cases[c].shape[0],
                 cases[c].shape[1]);
      else
        snprintf(shape, sizeof shape, "[%zu,%zu,%zu]", cases[c].shape[0],
                 cases[c].shape[1], cases[c].shape[2]);
      bool nan = op == WGC_REDUCE_MAX || op == WGC_REDUCE_MIN;
      if (!case_begin("reduce[webgpu split] %s shape=%s axis=%zu%s%s, 64 KiB "
                      "bindings",
                      ref_reduce_name(op), shape, cases[c].axis,
                      nan ? " with NaN" : "",
                      cases[c].shared ? " one allocation" : ""))
        continue;
      if (!gpu)
        gpu = new_ctx(WGC_BACKEND_WEBGPU, 64 * 1024);
      float *y = falloc(n);
      memcpy(y, x, n * sizeof *x);
      if (nan) { /* NaN in the first, a middle and the last element */
        y[0] = NAN;
        y[n / 2 + 7] = NAN;
        y[n - 1] = NAN;
      }
      if (gpu)
        reduce_case(gpu, (wgc_reduce_op)op, y, cases[c].shape, cases[c].rank,
                    cases[c].axis, cases[c].shared);
      free(y);
      case_end();
    }
    free(x);
  }
  wgc_destroy(gpu);
}

/* ---- attention --------------------------------------------------------- */

static void attention_case(size_t cap, size_t batch, size_t heads,
                           size_t heads_kv, size_t seq_q, size_t seq_kv,
                           size_t hd, wgc_causal causal) {
  static const char *masks[] = {"none", "top_left", "bottom_right"};
  if (!case_begin("attention[webgpu split] batch=%zu heads=%zu heads_kv=%zu "
                  "seq_q=%zu seq_kv=%zu head_dim=%zu causal=%s, %zu KiB "
                  "bindings",
                  batch, heads, heads_kv, seq_q, seq_kv, hd, masks[causal],
                  cap / 1024))
    return;
  wgc_context *cpu = test_ctx(WGC_BACKEND_CPU);
  wgc_context *gpu = new_ctx(WGC_BACKEND_WEBGPU, cap);
  wgc_attention_desc d = {.batch = batch,
                          .heads = heads,
                          .heads_kv = heads_kv,
                          .seq_q = seq_q,
                          .seq_kv = seq_kv,
                          .head_dim = hd,
                          .scale = 1.0f / sqrtf((float)hd),
                          .causal = causal};
  size_t nq = batch * heads * seq_q * hd, nkv = batch * heads_kv * seq_kv * hd;
  float *q = falloc(nq), *k = falloc(nkv), *v = falloc(nkv);
  float *want = falloc(nq), *got = falloc(nq);
  /* scores of several units: the softmax is far from uniform */
  fill_uniform(q, nq, -2.0f, 2.0f, 1);
  fill_uniform(k, nkv, -2.0f, 2.0f, 2);
  fill_uniform(v, nkv, -1.0f, 1.0f, 3);
  wgc_context *ctxs[2] = {cpu, gpu};
  float *outs[2] = {want, got};
  for (int i = 0; i < 2 && gpu; i++) {
    wgc_context *c = ctxs[i];
    wgc_ptr dq = dev_from(c, q, nq), dk = dev_from(c, k, nkv),
            dv = dev_from(c, v, nkv), dout = dev_alloc(c, 4 * nq);
    wgc_status s = wgc_attention(c, &d, dq, dk, dv, dout);
    CHECK(s == WGC_OK, "wgc_attention[%s] returned %s: %s", wgc_backend_name(c),
          wgc_status_name(s), wgc_last_error(c));
    dev_read(c, outs[i], dout, nq);
    dev_free(c, dq);
    dev_free(c, dk);
    dev_free(c, dv);
    dev_free(c, dout);
  }
  /* API.md: 1e-5 * head_dim * max|q| * max|k| * max|v| of the exact
   * result, for each side: twice that between them. */
  double tol = 2e-5 * (double)hd * 2.0 * 2.0 * 1.0;
  size_t zero_rows = 0;
  for (size_t r = 0; gpu && r < nq / hd; r++) {
    bool all_zero = true;
    for (size_t j = 0; j < hd; j++) {
      double g = got[r * hd + j], w = want[r * hd + j];
      all_zero = all_zero && w == 0;
      if (!(fabs(g - w) <= tol)) {
        CHECK(false, "o[%zu] = %.9g, want %.9g", r * hd + j, g, w);
        r = nq;
        break;
      }
    }
    if (all_zero && r < nq) {
      zero_rows++;
      for (size_t j = 0; j < hd; j++)
        if (got[r * hd + j] != 0.0f) {
          CHECK(false, "row %zu sees no key but o[%zu] = %.9g", r, r * hd + j,
                got[r * hd + j]);
          r = nq;
          break;
        }
    }
  }
  if (gpu && causal == WGC_CAUSAL_BOTTOM_RIGHT && seq_q > seq_kv)
    CHECK(zero_rows == batch * heads * (seq_q - seq_kv),
          "%zu rows of zeros, want %zu", zero_rows,
          batch * heads * (seq_q - seq_kv));
  free(q);
  free(k);
  free(v);
  free(want);
  free(got);
  wgc_destroy(gpu);
  case_end();
}

TEST(split_attention) {
  const size_t kib64 = 64 * 1024;
  /* one head's Q/O and K/V of 70 KB: query blocks and two key blocks */
  attention_case(kib64, 1, 2, 1, 1100, 1100, 16, WGC_CAUSAL_NONE);
  attention_case(kib64, 1, 2, 1, 1100, 1100, 16, WGC_CAUSAL_TOP_LEFT);
  attention_case(kib64, 1, 2, 2, 1100, 1100, 16, WGC_CAUSAL_BOTTOM_RIGHT);
  /* BOTTOM_RIGHT with seq_q > seq_kv: the first 200 rows see no key */
  attention_case(kib64, 1, 2, 1, 1300, 1100, 16, WGC_CAUSAL_BOTTOM_RIGHT);
  /* decoding: one query row, a K/V cache of 5000 keys (5 key blocks) */
  attention_case(kib64, 2, 4, 2, 1, 5000, 16, WGC_CAUSAL_BOTTOM_RIGHT);
  attention_case(kib64, 1, 4, 1, 1, 5000, 16, WGC_CAUSAL_NONE);
  attention_case(kib64, 1, 2, 2, 1, 5000, 16, WGC_CAUSAL_TOP_LEFT);
  /* the tiles kernel shape (head_dim > 64) */
  attention_case(kib64, 1, 2, 1, 300, 300, 80, WGC_CAUSAL_TOP_LEFT);
  /* 4 KiB bindings: 23 key blocks, merged in several combine rounds */
  attention_case(4096, 1, 2, 1, 300, 1100, 16, WGC_CAUSAL_BOTTOM_RIGHT);
}
