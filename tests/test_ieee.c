/* Special values and accuracy corners, against float64 references computed
 * here: empty reductions that must not read memory, NaN scalars (GEMM
 * beta), NaN and infinities in attention, subnormal and extreme inputs of
 * the element-wise functions, and sums a large bias must not swallow. Each
 * case runs on both backends ("[cpu]", "[webgpu]"); the test runner runs the
 * webgpu ones again with WGC_KERNELS=gpu, so both kernel forms are covered. */
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill(float *x, size_t n, float v) {
  for (size_t i = 0; i < n; i++)
    x[i] = v;
}

/* Whether got is NaN exactly where want is, and elsewhere within
 * rel*|want| + abs_tol; names the first mismatch. */
static void check_values(const char *what, const float *got, const double *want,
                         size_t n, double rel, double abs_tol) {
  for (size_t i = 0; i < n; i++) {
    double g = got[i], w = want[i];
    bool ok;
    if (isnan(w) || isnan(g))
      ok = isnan(w) && isnan(g);
    else if (isinf(w) || isinf(g))
      ok = g == w;
    else
      ok = fabs(g - w) <= rel * fabs(w) + abs_tol;
    if (!ok) {
      CHECK(false, "%s: element %zu is %.9g, want %.9g (bound %.3g)", what, i,
            g, w, rel * fabs(w) + abs_tol);
      return;
    }
  }
}

/* ---- conv2d ------------------------------------------------------------ */

/* c == 0: the sum over input channels is empty, so every output is its
 * channel's bias (or 0), whatever the memory at the input and filter
 * addresses holds. The allocations hold garbage right where they start. */
static void conv_no_channels(int bi, size_t k, bool bias) {
  if (!case_begin("ieee conv2d[%s] c=0 k=%zu %s with garbage at input and "
                  "filter -> %s",
                  backend_label(test_backends[bi]), k,
                  bias ? "bias" : "no-bias", bias ? "bias" : "zeros"))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  wgc_conv2d_desc d = {.n = 2,
                       .c = 0,
                       .h = 5,
                       .w = 6,
                       .k = k,
                       .r = 3,
                       .s = 3,
                       .pad_h = 1,
                       .pad_w = 1};
  size_t p = 5, q = 6, ny = d.n * k * p * q;
  float junk[16], *b = falloc(k), *y = falloc(ny);
  fill(junk, 16, 7.0f);
  fill_uniform(b, k, -2, 2, 5);
  fill(y, ny, -1.0f);
  wgc_ptr dx = ctx ? dev_from(ctx, junk, 16) : 0;
  wgc_ptr dw = ctx ? dev_from(ctx, junk, 16) : 0;
  wgc_ptr db = ctx ? dev_from(ctx, b, k) : 0;
  wgc_ptr dy = ctx ? dev_from(ctx, y, ny) : 0;
  if (dx && dw && db && dy) {
    CHECK_STATUS(wgc_conv2d(ctx, &d, dx, dw, bias ? db : 0, dy), WGC_OK);
    if (dev_read(ctx, y, dy, ny)) {
      double *want = dalloc(ny);
      for (size_t i = 0; i < ny; i++)
        want[i] = bias ? b[i / (p * q) % k] : 0.0;
      check_values("output", y, want, ny, 0, 0);
      free(want);
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dw);
  dev_free(ctx, db);
  dev_free(ctx, dy);
  free(b);
  free(y);
  case_end();
}

/* A bias far larger than the sum of the taps: the sum is formed first and
 * the bias added last, so the taps are not lost to its rounding (bias 1e6
 * plus 256 taps of 0.03 is 1000007.68; starting at the bias in float, each
 * tap vanishes). c_mul scales the channels; with many taps the WebGPU
 * kernels split the sum over launches and the bias must still come once. */
static void conv_big_bias(int bi, size_t c, size_t k) {
  wgc_conv2d_desc d = {.n = 1, .c = c, .h = 4, .w = 4, .k = k, .r = 4, .s = 4};
  size_t taps = c * 16, nx = c * 16, nw = k * taps, ny = k;
  if (!case_begin("ieee conv2d[%s] bias 1e6 plus %zu taps of 0.03 k=%zu",
                  backend_label(test_backends[bi]), taps, k))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  float *x = falloc(nx), *w = falloc(nw), *b = falloc(k), *y = falloc(ny);
  fill(x, nx, 1.0f);
  fill(w, nw, 0.03f);
  for (size_t o = 0; o < k; o++)
    b[o] = 1e6f + (float)o;
  wgc_ptr dx = ctx ? dev_from(ctx, x, nx) : 0;
  wgc_ptr dw = ctx ? dev_from(ctx, w, nw) : 0;
  wgc_ptr db = ctx ? dev_from(ctx, b, k) : 0;
  wgc_ptr dy = ctx ? dev_alloc(ctx, 4 * ny) : 0;
  if (dx && dw && db && dy) {
    CHECK_STATUS(wgc_conv2d(ctx, &d, dx, dw, db, dy), WGC_OK);
    if (dev_read(ctx, y, dy, ny)) {
      double *want = dalloc(ny);
      for (size_t o = 0; o < k; o++)
        want[o] = (double)b[o] + (double)taps * (double)0.03f;
      /* API.md's conv bound: 1e-5*K*max|x|*max|f| + 1e-6*max|bias| */
      double bound = 1e-5 * (double)taps * 0.03 + 1e-6 * (1e6 + k);
      check_values("output", y, want, ny, 0, bound);
      free(want);
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dw);
  dev_free(ctx, db);
  dev_free(ctx, dy);
  free(x);
  free(w);
  free(b);
  free(y);
  case_end();
}

TEST(ieee_conv2d) {
  for (int bi = 0; bi < 2; bi++) {
    /* k < 8: the direct kernel; 8..47 and 64: the GEMM-shaped forms */
    const size_t ks[] = {1, 3, 8, 64};
    for (size_t i = 0; i < 4; i++) {
      conv_no_channels(bi, ks[i], true);
      conv_no_channels(bi, ks[i], false);
    }
    conv_big_bias(bi, 16, 1);
    conv_big_bias(bi, 16, 8);
    /* 35200 taps: more than one launch runs on CPU adapters (loop budget) */
    conv_big_bias(bi, 2200, 2);
    conv_big_bias(bi, 2200, 8);
  }
}

/* ---- GEMM ---------------------------------------------------------------- */

/* beta = NaN makes every element of C NaN (only an exact beta == 0 skips C),
 * on every path: the per-element, tiled and split-K kernels and the
 * k == 0 and alpha == 0 quick returns; batched too. */
static void gemm_nan_beta(int bi, size_t m, size_t n, size_t k, float alpha,
                          size_t batch) {
  if (!case_begin("ieee gemm[%s] beta=NaN m=%zu n=%zu k=%zu alpha=%g "
                  "batch=%zu -> NaN",
                  backend_label(test_backends[bi]), m, n, k, alpha, batch))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  size_t na = batch * m * (k ? k : 1), nb = batch * (k ? k : 1) * n,
         nc = batch * m * n;
  float *a = falloc(na), *b = falloc(nb), *c = falloc(nc);
  fill_uniform(a, na, -1, 1, 1);
  fill_uniform(b, nb, -1, 1, 2);
  fill_uniform(c, nc, -1, 1, 3);
  wgc_ptr da = ctx ? dev_from(ctx, a, na) : 0;
  wgc_ptr db = ctx ? dev_from(ctx, b, nb) : 0;
  wgc_ptr dc = ctx ? dev_from(ctx, c, nc) : 0;
  if (da && db && dc) {
    float beta = NAN;
    size_t lk = k ? k : 1;
    if (batch == 1)
      CHECK_STATUS(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, m,
                            n, k, alpha, da, lk, db, n, beta, dc, n),
                   WGC_OK);
    else
      CHECK_STATUS(wgc_gemm_batched(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS,
                                    WGC_NO_TRANS, m, n, k, alpha, da, lk,
                                    m * lk, db, n, lk * n, beta, dc, n, m * n,
                                    batch),
                   WGC_OK);
    if (dev_read(ctx, c, dc, nc)) {
      double *want = dalloc(nc);
      for (size_t i = 0; i < nc; i++)
        want[i] = NAN;
      check_values("C", c, want, nc, 0, 0);
      free(want);
    }
  }
  dev_free(ctx, da);
  dev_free(ctx, db);
  dev_free(ctx, dc);
  free(a);
  free(b);
  free(c);
  case_end();
}

TEST(ieee_gemm) {
  for (int bi = 0; bi < 2; bi++) {
    gemm_nan_beta(bi, 3, 5, 7, 1, 1);      /* per-element kernel */
    gemm_nan_beta(bi, 128, 96, 64, 1, 1);  /* tiled */
    gemm_nan_beta(bi, 4, 4, 4096, 1, 1);   /* per-element, split-K */
    gemm_nan_beta(bi, 64, 64, 2048, 1, 1); /* tiled, split-K */
    gemm_nan_beta(bi, 9, 10, 0, 1, 1);     /* k == 0 */
    gemm_nan_beta(bi, 9, 10, 11, 0, 1);    /* alpha == 0 */
    gemm_nan_beta(bi, 5, 6, 7, 1, 3);      /* batched */
    gemm_nan_beta(bi, 70, 70, 33, 2, 2);   /* batched, tiled */
  }
}
