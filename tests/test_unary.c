/* The element-wise ops of ONNX models beyond the per-op loops of
 * test_ops.c and test_ieee.c: wgc_unary_params with chosen, NaN and
 * infinite parameters (clip with min > max too), rounding ties and signed
 * zeros, sin and cos over the whole float range, dense accuracy sweeps
 * whose worst errors each case line shows, and bad input. Each case runs on
 * both backends against the float64 references of ops_ref.c. */
#include "ops_ref.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* As backend_case, for names that hold the backend label themselves. */
static bool open_case(int bi, wgc_context **ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool open_case(int bi, wgc_context **ctx, const char *fmt, ...) {
  char name[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  if (!case_begin("%s", name))
    return false;
  *ctx = test_ctx(test_backends[bi]);
  if (!*ctx) { /* test_ctx failed the case */
    case_end();
    return false;
  }
  return true;
}

/* Runs op with alpha and beta on x (n) into got, out of place or in place;
 * false after a failed CHECK. */
static bool run_params(wgc_context *ctx, wgc_unary_op op, float alpha,
                       float beta, const float *x, float *got, size_t n,
                       bool inplace) {
  wgc_ptr dx = dev_from(ctx, x, n), dy = inplace ? dx : dev_alloc(ctx, 4 * n);
  bool ok = dx && dy;
  if (ok) {
    wgc_status s = wgc_unary_params(ctx, op, alpha, beta, dx, dy, n);
    CHECK(s == WGC_OK, "wgc_unary_params(%s, %g, %g) returned %s: %s",
          ref_unary_name(op), alpha, beta, wgc_status_name(s),
          wgc_last_error(ctx));
    ok = s == WGC_OK && dev_read(ctx, got, dy, n);
  }
  if (!inplace)
    dev_free(ctx, dy);
  dev_free(ctx, dx);
  return ok;
}

static const float SPECIALS[] = {
    NAN,    INFINITY, -INFINITY, 0.0f,  -0.0f,   1e-40f, -1e-40f, 1.0f,
    -1.0f,  0.5f,     -0.5f,     2.5f,  -2.5f,   1e-3f,  -1e-3f,  1e30f,
    -1e30f, 3e38f,    -3e38f,    88.0f, -104.0f, 6.0f,   -6.0f,   1.0f / 3};
#define NSPECIALS (sizeof SPECIALS / sizeof *SPECIALS)

/* A subnormal as the zero of its sign: WGSL lets implementations flush. */
static float flushed(float x) {
  return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

/* op(alpha, beta) on the special values and 997 values in [-10, 10),
 * against the float64 formula (for a subnormal input, of the value or of
 * its flushed zero). */
static void params_case(int bi, wgc_unary_op op, float alpha, float beta,
                        bool inplace) {
  wgc_context *ctx;
  if (!open_case(bi, &ctx, "unary_params[%s] %s alpha=%g beta=%g%s",
                 backend_label(test_backends[bi]), ref_unary_name(op), alpha,
                 beta, inplace ? " in-place" : ""))
    return;
  size_t n = NSPECIALS + 997;
  float *x = falloc(n), *got = falloc(n);
  memcpy(x, SPECIALS, sizeof SPECIALS);
  fill_uniform(x + NSPECIALS, n - NSPECIALS, -10, 10, 77u + (unsigned)op);
  if (run_params(ctx, op, alpha, beta, x, got, n, inplace)) {
    double *want = dalloc(n), rel, abs_tol;
    ref_unary_bound(op, &rel, &abs_tol);
    for (size_t i = 0; i < n; i++) {
      want[i] = ref_unary_params(op, x[i], alpha, beta);
      /* a flushed subnormal counts as its zero */
      double w2 = ref_unary_params(op, flushed(x[i]), alpha, beta);
      if ((isnan(w2) && isnan(got[i])) ||
          fabs(got[i] - w2) <= rel * fabs(w2) + abs_tol)
        want[i] = w2;
    }
    char key[64];
    snprintf(key, sizeof key, "unary_params_%s[%s]", ref_unary_name(op),
             backend_label(test_backends[bi]));
    CHECK_CLOSE(key, NULL, got, want, n, rel, abs_tol);
    free(want);
  }
  free(x);
  free(got);
  case_end();
}

/* wgc_unary is wgc_unary_params with ONNX's defaults, bit for bit. */
static void defaults_case(int bi, wgc_unary_op op) {
  wgc_context *ctx;
  if (!open_case(bi, &ctx, "unary_params[%s] %s defaults as wgc_unary",
                 backend_label(test_backends[bi]), ref_unary_name(op)))
    return;
  enum { N = 515 };
  float x[N], a[N], b[N], alpha, beta;
  fill_uniform(x, N, -8, 8, 5u + (unsigned)op);
  ref_unary_defaults(op, &alpha, &beta);
  wgc_ptr dx = dev_from(ctx, x, N), dy = dev_alloc(ctx, 4 * N);
  if (dx && dy) {
    CHECK_OK(ctx, wgc_unary(ctx, op, dx, dy, N));
    bool ok = dev_read(ctx, a, dy, N) &&
              run_params(ctx, op, alpha, beta, x, b, N, false);
    for (size_t i = 0; ok && i < N; i++)
      if (!same_bits(a[i], b[i])) {
        CHECK(false, "%s(%.9g): wgc_unary gave %.9g, wgc_unary_params %.9g",
              ref_unary_name(op), x[i], a[i], b[i]);
        break;
      }
    /* and the default is what ONNX says */
    for (size_t i = 0; ok && i < N; i++) {
      double w = ref_unary(op, x[i]), rel, abs_tol;
      ref_unary_bound(op, &rel, &abs_tol);
      if (fabs(a[i] - w) > rel * fabs(w) + abs_tol) {
        CHECK(false, "%s(%.9g) is %.9g, want %.9g", ref_unary_name(op), x[i],
              a[i], w);
        break;
      }
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dy);
  case_end();
}

TEST(unary_params) {
  static const struct {
    wgc_unary_op op;
    float alpha, beta;
  } cases[] = {
      {WGC_UNARY_LEAKY_RELU, 0.01f, 0},
      {WGC_UNARY_LEAKY_RELU, -1.5f, 0},
      {WGC_UNARY_LEAKY_RELU, 0, 0},
      {WGC_UNARY_LEAKY_RELU, NAN, 0},
      {WGC_UNARY_LEAKY_RELU, INFINITY, 0},
      {WGC_UNARY_ELU, 1, 0},
      {WGC_UNARY_ELU, 0.25f, 0},
      {WGC_UNARY_ELU, 3, 0},
      {WGC_UNARY_ELU, NAN, 0},
      {WGC_UNARY_ELU, -INFINITY, 0},
      {WGC_UNARY_HARD_SIGMOID, 0.2f, 0.5f},
      {WGC_UNARY_HARD_SIGMOID, 1.0f / 6, 0.5f}, /* HardSwish's */
      {WGC_UNARY_HARD_SIGMOID, -0.3f, 0.1f},
      {WGC_UNARY_HARD_SIGMOID, NAN, 0.5f},
      {WGC_UNARY_HARD_SIGMOID, 0.2f, NAN},
      {WGC_UNARY_HARD_SIGMOID, INFINITY, 0},
      /* alpha*x overflows float32 at |x| = 3e38 but is finite: inf - inf
       * is not the answer */
      {WGC_UNARY_HARD_SIGMOID, -2.5f, INFINITY},
      {WGC_UNARY_HARD_SIGMOID, 3e38f, -INFINITY},
      {WGC_UNARY_CLIP, -INFINITY, INFINITY},
      {WGC_UNARY_CLIP, -1, 1},
      {WGC_UNARY_CLIP, 0, 6},  /* relu6 */
      {WGC_UNARY_CLIP, 2, -2}, /* min > max: max everywhere */
      {WGC_UNARY_CLIP, 3, 3},
      {WGC_UNARY_CLIP, NAN, 1},
      {WGC_UNARY_CLIP, -1, NAN},
      {WGC_UNARY_CLIP, -INFINITY, 0.5f},
      {WGC_UNARY_SIN, NAN, NAN}, /* ignored by the ops without parameters */
      {WGC_UNARY_GELU_TANH, INFINITY, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int bi = 0; bi < 2; bi++)
      params_case(bi, cases[i].op, cases[i].alpha, cases[i].beta, i % 5 == 1);
  static const wgc_unary_op with_defaults[] = {
      WGC_UNARY_LEAKY_RELU, WGC_UNARY_ELU, WGC_UNARY_HARD_SIGMOID,
      WGC_UNARY_CLIP};
  for (size_t i = 0; i < sizeof with_defaults / sizeof *with_defaults; i++)
    for (int bi = 0; bi < 2; bi++)
      defaults_case(bi, with_defaults[i]);
}

/* ---- rounding ------------------------------------------------------------ */

static bool sign_bit(float x) { return signbit(x) != 0; }

/* floor, ceil and round exactly, ties to even, with the sign of a zero
 * result as IEEE's roundToIntegral (round(-0.4) is -0): the values where
 * floor(x + 0.5) or rounding half away from zero would differ. */
static void rounding_case(int bi, wgc_unary_op op) {
  wgc_context *ctx;
  if (!open_case(bi, &ctx, "unary_rounding[%s] %s ties, signed zeros",
                 backend_label(test_backends[bi]), ref_unary_name(op)))
    return;
  static const float x[] = {
      0.5f,       -0.5f,       1.5f,       -1.5f,       2.5f,
      -2.5f,      3.5f,        -3.5f,      0.49999997f, -0.49999997f,
      8388607.5f, -8388607.5f, 8388606.5f, 4194303.75f, 4194302.5f,
      -0.0f,      0.0f,        -0.3f,      0.3f,        -0.7f,
      0.7f,       -1.0f,       1e30f,      -1e30f,      16777215.0f,
      INFINITY,   -INFINITY,   NAN,        -1e-40f,     1e-40f,
      -5.5f,      5.5f,        -6.5f,      1.0000001f,  -0.99999994f};
  enum { N = sizeof x / sizeof *x };
  float got[N];
  if (run_params(ctx, op, 0, 0, x, got, N, false))
    for (size_t i = 0; i < N; i++) {
      double w = ref_unary(op, x[i]), w2 = ref_unary(op, flushed(x[i]));
      bool ok = (isnan(w) && isnan(got[i])) ||
                (got[i] == w && (w != 0 || sign_bit(got[i]) == signbit(w))) ||
                (got[i] == w2 && (w2 != 0 || sign_bit(got[i]) == signbit(w2)));
      if (!ok) {
        CHECK(false, "%s(%.9g) is %.9g, want %.9g", ref_unary_name(op), x[i],
              got[i], w);
        break;
      }
    }
  case_end();
}

TEST(unary_rounding) {
  for (int bi = 0; bi < 2; bi++) {
    rounding_case(bi, WGC_UNARY_FLOOR);
    rounding_case(bi, WGC_UNARY_CEIL);
    rounding_case(bi, WGC_UNARY_ROUND);
  }
}

/* ---- accuracy sweeps ----------------------------------------------------- */

/* Runs op on x (n) and CHECKs it against the float64 reference within the
 * op's bound; the case line gets the worst relative error where |want| >=
 * 1e-3 and the worst absolute error below. */
static void sweep(wgc_context *ctx, int bi, wgc_unary_op op, const float *x,
                  size_t n) {
  float *got = falloc(n), alpha, beta;
  ref_unary_defaults(op, &alpha, &beta);
  if (run_params(ctx, op, alpha, beta, x, got, n, false)) {
    double *want = dalloc(n), rel, abs_tol, worst_abs = 0, worst_rel = 0;
    for (size_t i = 0; i < n; i++) {
      want[i] = ref_unary(op, x[i]);
      double e = fabs(got[i] - want[i]);
      if (fabs(want[i]) < 1e-3 && !(e <= worst_abs))
        worst_abs = e;
      if (fabs(want[i]) >= 1e-3 && !(e / fabs(want[i]) <= worst_rel))
        worst_rel = e / fabs(want[i]);
    }
    ref_unary_bound(op, &rel, &abs_tol);
    char key[64];
    snprintf(key, sizeof key, "unary_sweep_%s[%s]", ref_unary_name(op),
             backend_label(test_backends[bi]));
    CHECK_CLOSE(key, NULL, got, want, n, rel, abs_tol);
    case_note(" (worst rel %.2g, abs %.2g below 1e-3)", worst_rel, worst_abs);
    free(want);
  }
  free(got);
}

/* sin and cos over the whole float range: magnitudes log-uniform over
 * 2^-20..2^128, the floats nearest k*pi/2 (where the reduction cancels
 * most) for k up to 2^26, and their neighbours. */
static void sincos_case(int bi, wgc_unary_op op) {
  wgc_context *ctx;
  if (!open_case(bi, &ctx, "unary_sweep[%s] %s over the float range",
                 backend_label(test_backends[bi]), ref_unary_name(op)))
    return;
  enum { N = 1 << 14 };
  float *x = falloc(N), *u = falloc(N);
  fill_uniform(u, N, 0, 1, 91u + (unsigned)op);
  for (size_t i = 0; i < N / 2; i++) {
    float mag = (float)exp2(-20.0 + 148.0 * u[i]);
    x[i] = i % 2 ? -mag : mag;
  }
  for (size_t i = N / 2; i < N; i++) {
    double k = floor(exp2(26.0 * u[i]));
    float v = (float)(k * M_PI / 2);
    x[i] = i % 3 == 0 ? v : nextafterf(v, i % 3 == 1 ? INFINITY : -INFINITY);
  }
  sweep(ctx, bi, op, x, N);
  free(x);
  free(u);
  case_end();
}

/* A dense grid over [lo, hi] plus tiny magnitudes of both signs, where
 * series and cancellations matter. */
static void grid_case(int bi, wgc_unary_op op, float lo, float hi) {
  wgc_context *ctx;
  if (!open_case(bi, &ctx, "unary_sweep[%s] %s on [%g, %g] and near 0",
                 backend_label(test_backends[bi]), ref_unary_name(op), lo, hi))
    return;
  enum { GRID = 1 << 15, TINY = 2048, N = GRID + TINY };
  float *x = falloc(N);
  for (size_t i = 0; i < GRID; i++)
    x[i] = lo + (hi - lo) * (float)i / (GRID - 1);
  for (size_t i = 0; i < TINY; i++) {
    float mag = (float)exp2(-30.0 + 30.0 * (double)i / TINY);
    x[GRID + i] = i % 2 ? -mag : mag;
  }
  sweep(ctx, bi, op, x, N);
  free(x);
  case_end();
}

TEST(unary_sweep) {
  static const struct {
    wgc_unary_op op;
    float lo, hi;
  } grids[] = {
      {WGC_UNARY_GELU_TANH, -12, 12},
      {WGC_UNARY_ERF, -6, 6},
      {WGC_UNARY_SOFTPLUS, -90, 90},
      {WGC_UNARY_ELU, -20, 5},
      {WGC_UNARY_RECIPROCAL, -1e3f, 1e3f},
      {WGC_UNARY_SIN, -8, 8},
      {WGC_UNARY_COS, -8, 8},
  };
  for (int bi = 0; bi < 2; bi++) {
    for (size_t i = 0; i < sizeof grids / sizeof *grids; i++)
      grid_case(bi, grids[i].op, grids[i].lo, grids[i].hi);
    sincos_case(bi, WGC_UNARY_SIN);
    sincos_case(bi, WGC_UNARY_COS);
  }
}

/* ---- bad input ----------------------------------------------------------- */

TEST(val_unary_params) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!open_case(bi, &ctx, "val_unary_params[%s]",
                   backend_label(test_backends[bi])))
      continue;
    const char *F = "wgc_unary_params";
    float x[16], y[16];
    fill_uniform(x, 16, -1, 1, 3);
    fill_uniform(y, 16, -1, 1, 4);
    wgc_ptr dx = dev_from(ctx, x, 16), dy = dev_from(ctx, y, 16);
    if (dx && dy) {
      CHECK_REJECTED(ctx,
                     wgc_unary_params(ctx, (wgc_unary_op)WGC_UNARY_OP_COUNT, 0,
                                      0, dx, dy, 16),
                     F, "op");
      CHECK_REJECTED(ctx,
                     wgc_unary_params(ctx, (wgc_unary_op)-1, 1, 2, dx, dy, 16),
                     F, "op");
      CHECK_ERROR_VALUE(ctx, "-1");
      CHECK_REJECTED(ctx,
                     wgc_unary_params(ctx, WGC_UNARY_CLIP, 0, 1, 0, dy, 16), F,
                     "input");
      CHECK_REJECTED(ctx,
                     wgc_unary_params(ctx, WGC_UNARY_CLIP, 0, 1, dx, 0, 16), F,
                     "output");
      CHECK_REJECTED(ctx,
                     wgc_unary_params(ctx, WGC_UNARY_ELU, 1, 0, dx, dy, 17), F,
                     "input|output");
      CHECK_REJECTED(
          ctx,
          wgc_unary_params(ctx, WGC_UNARY_ELU, 1, 0, dx, wild_address(5), 16),
          F, "output");
      /* overlapping but not identical */
      CHECK_REJECTED(
          ctx, wgc_unary_params(ctx, WGC_UNARY_ELU, 1, 0, dy, at(dy, 1), 15), F,
          "output|input");
      CHECK_REJECTED(
          ctx, wgc_unary_params(ctx, WGC_UNARY_ELU, 1, 0, dx, dy, SIZE_MAX / 2),
          F, "n");
      CHECK_STATUS(wgc_unary_params(NULL, WGC_UNARY_ELU, 1, 0, dx, dy, 16),
                   WGC_ERR_INVALID_ARGUMENT);
      CHECK_DEVICE_EQUALS(ctx, dy, y, 16, "output after rejected calls");
      CHECK_DEVICE_EQUALS(ctx, dx, x, 16, "input after rejected calls");
      /* n = 0 is a no-op even at address 0; NaN parameters are data */
      CHECK_OK(ctx, wgc_unary_params(ctx, WGC_UNARY_CLIP, NAN, NAN, 0, 0, 0));
      CHECK_OK(ctx, wgc_unary_params(ctx, WGC_UNARY_CLIP, NAN, 1, dx, dy, 16));
      float got[16];
      if (dev_read(ctx, got, dy, 16))
        for (int i = 0; i < 16; i++)
          CHECK(isnan(got[i]), "clip(%g, NaN, 1) is %g, want NaN", x[i],
                got[i]);
    }
    dev_free(ctx, dx);
    dev_free(ctx, dy);
    case_end();
  }
}
