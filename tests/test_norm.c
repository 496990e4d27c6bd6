/* softmax, log-softmax, LayerNorm and RMSNorm against float64 loops written
 * here (ONNX's formulas, two passes), on both backends: every axis of
 * awkward shapes, rows long enough for several statistics passes, scale
 * and bias, in place, the special values ONNX's formulas define, a row
 * where E[x^2] - E[x]^2 fails in float32, and rejected arguments. Each
 * case notes its largest absolute and relative error. */
#include "ops_ref.h"
#include "util.h"

#include "cpu/cpu.h"
#include "cpu/work.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 3

typedef enum kind { SOFTMAX, LOG_SOFTMAX, LAYER, RMS } kind;
static const char *const kind_names[] = {"softmax", "log_softmax", "layer_norm",
                                         "rms_norm"};

/* The bounds stated in wgc.h: rel * |want| + abs. */
static const double bound_rel[] = {1e-5, 1e-5, 1e-5, 1e-5};
static const double bound_abs[] = {1e-6, 2e-6, 1e-5, 1e-6};

/* float64 reference of [outer, len, inner] rows (inner 1 for the norms). */
static void ref_norm(kind k, const float *x, size_t outer, size_t len,
                     size_t inner, const float *scale, const float *bias,
                     float eps, double *y) {
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      const float *xr = x + o * len * inner + i;
      double *yr = y + o * len * inner + i;
#define X(r) ((double)xr[(r)*inner])
      if (k == SOFTMAX || k == LOG_SOFTMAX) {
        double m = -INFINITY;
        for (size_t r = 0; r < len; r++)
          m = isnan(m) || isnan(X(r)) ? NAN : fmax(m, X(r));
        double s = 0;
        for (size_t r = 0; r < len; r++)
          s += exp(X(r) - m);
        for (size_t r = 0; r < len; r++)
          yr[r * inner] =
              k == SOFTMAX ? exp(X(r) - m) / s : (X(r) - m) - log(s);
        continue;
      }
      double mean = 0, var = 0;
      if (k == LAYER) {
        for (size_t r = 0; r < len; r++)
          mean += X(r);
        mean /= (double)len;
        for (size_t r = 0; r < len; r++)
          var += (X(r) - mean) * (X(r) - mean);
      } else {
        for (size_t r = 0; r < len; r++)
          var += X(r) * X(r);
      }
      double rstd = 1.0 / sqrt(var / (double)len + (double)eps);
      for (size_t r = 0; r < len; r++) {
        double v = (X(r) - mean) * rstd;
        if (scale)
          v *= scale[r];
        if (bias)
          v += bias[r];
        yr[r * inner] = v;
      }
#undef X
    }
}

static wgc_status call(wgc_context *ctx, kind k, wgc_ptr x, wgc_ptr scale,
                       wgc_ptr bias, wgc_ptr y, const size_t *shape,
                       size_t rank, size_t axis, float eps) {
  switch (k) {
  case SOFTMAX:
    return wgc_softmax(ctx, x, y, shape, rank, axis);
  case LOG_SOFTMAX:
    return wgc_log_softmax(ctx, x, y, shape, rank, axis);
  case LAYER:
    return wgc_layer_norm(ctx, x, scale, bias, y, shape, rank, axis, eps);
  case RMS:
    break;
  }
  return wgc_rms_norm(ctx, x, scale, y, shape, rank, axis, eps);
}

typedef struct norm_case {
  kind k;
  size_t rank, axis;
  size_t shape[8];
  bool scale, bias, in_place;
  float eps;
} norm_case;

/* Runs c on x (n floats), compares with the reference within the bounds
 * times slack, and checks the guards around the output. */
static void run_case(wgc_context *ctx, int bi, const norm_case *c,
                     const float *x, const char *label, double slack) {
  size_t n = ref_count(c->shape, c->rank), len = 1, outer = 1, inner = 1;
  for (size_t d = 0; d < c->rank; d++) {
    if (d < c->axis)
      outer *= c->shape[d];
    else if (d == c->axis || c->k >= LAYER)
      len *= c->shape[d];
    else
      inner *= c->shape[d];
  }
  float *scale = NULL, *bias = NULL;
  if (c->scale) {
    scale = falloc(len);
    fill_uniform(scale, len, -2, 2, 71);
  }
  if (c->bias) {
    bias = falloc(len);
    fill_uniform(bias, len, -1, 1, 73);
  }
  size_t total = n + 2 * GUARD;
  float *y = falloc(total), *got = falloc(total);
  for (size_t i = 0; i < total; i++)
    y[i] = sentinel();
  if (c->in_place)
    memcpy(y + GUARD, x, n * sizeof *x);
  wgc_ptr dy = dev_from(ctx, y, total);
  wgc_ptr dx = c->in_place ? at(dy, GUARD) : dev_from(ctx, x, n);
  wgc_ptr ds = scale ? dev_from(ctx, scale, len) : 0;
  wgc_ptr db = bias ? dev_from(ctx, bias, len) : 0;
  if (dx && dy && (!scale || ds) && (!bias || db)) {
    CHECK_OK(ctx, call(ctx, c->k, dx, ds, db, at(dy, GUARD), c->shape, c->rank,
                       c->axis, c->eps));
    if (dev_read(ctx, got, dy, total)) {
      double *want = dalloc(n);
      ref_norm(c->k, x, outer, len, inner, scale, bias, c->eps, want);
      char key[48];
      snprintf(key, sizeof key, "%s[%s]", kind_names[c->k],
               backend_label(test_backends[bi]));
      check_close_at(__FILE__, __LINE__, key, label, got + GUARD, want, n,
                     slack * bound_rel[c->k], slack * bound_abs[c->k], NULL);
      double eabs = 0, erel = 0;
      for (size_t i = 0; i < n; i++) {
        double e = fabs(got[GUARD + i] - want[i]);
        if (!isfinite(want[i]) || !isfinite(e))
          continue;
        eabs = fmax(eabs, e);
        if (fabs(want[i]) > 1e-3)
          erel = fmax(erel, e / fabs(want[i]));
      }
      case_note(" abs %.2g rel %.2g", eabs, erel);
      for (size_t g = 0; g < GUARD; g++)
        CHECK(same_bits(got[g], y[g]) &&
                  same_bits(got[total - 1 - g], y[total - 1 - g]),
              "%s: a guard element changed", label);
      free(want);
    }
  }
  if (!c->in_place)
    dev_free(ctx, dx);
  dev_free(ctx, dy);
  dev_free(ctx, ds);
  dev_free(ctx, db);
  free(y);
  free(got);
  free(scale);
  free(bias);
}

static void fmt_case(char *buf, size_t size, const norm_case *c) {
  int at_ = snprintf(buf, size, "[");
  for (size_t i = 0; i < c->rank && at_ > 0 && (size_t)at_ < size; i++)
    at_ += snprintf(buf + at_, size - (size_t)at_, "%s%zu", i ? "," : "",
                    c->shape[i]);
  if (at_ > 0 && (size_t)at_ < size)
    snprintf(buf + at_, size - (size_t)at_, "] axis=%zu%s%s%s", c->axis,
             c->scale ? " scale" : "", c->bias ? " bias" : "",
             c->in_place ? " in-place" : "");
}

static void run_all(const norm_case *c, const float *x, const char *what,
                    double slack) {
  char desc[160];
  fmt_case(desc, sizeof desc, c);
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "%s %s %s", kind_names[c->k], desc, what))
      continue;
    run_case(ctx, bi, c, x, desc, slack);
    case_end();
  }
}

/* Shapes whose every axis is tried. */
static const struct {
  size_t rank, shape[8];
} shapes[] = {
    {1, {1}},          {1, {7}},        {2, {3, 5}},    {3, {2, 3, 4}},
    {3, {4, 1, 3}},    {2, {1, 1000}},  {2, {5, 2053}}, {2, {2053, 3}},
    {4, {2, 3, 1, 5}}, {2, {3, 70001}}, /* several statistics passes on every
                                           adapter */
};

TEST(norm_shapes) {
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    size_t n = ref_count(shapes[si].shape, shapes[si].rank);
    float *x = falloc(n);
    fill_uniform(x, n, -4, 4, (unsigned)(101 + si));
    for (int k = SOFTMAX; k <= RMS; k++)
      for (size_t axis = 0; axis < shapes[si].rank; axis++) {
        norm_case c = {
            .k = (kind)k, .rank = shapes[si].rank, .axis = axis, .eps = 1e-5f};
        memcpy(c.shape, shapes[si].shape, sizeof c.shape);
        /* the norms: scale and bias alternate with the axis */
        c.scale = k >= LAYER && axis % 2 == 0;
        c.bias = k == LAYER && axis < 2;
        run_all(&c, x, "", 1.0);
      }
    free(x);
  }
}

TEST(norm_in_place) {
  size_t n = 6 * 301;
  float *x = falloc(n);
  fill_uniform(x, n, -3, 3, 7);
  for (int k = SOFTMAX; k <= RMS; k++) {
    norm_case c = {.k = (kind)k,
                   .rank = 2,
                   .axis = k == SOFTMAX ? 0 : 1,
                   .shape = {6, 301},
                   .scale = k >= LAYER,
                   .bias = k == LAYER,
                   .in_place = true,
                   .eps = 1e-3f};
    run_all(&c, x, "", 1.0);
  }
  free(x);
}

/* Special rows (axis 1 of [rows, 4] and axis 0 of its transpose). */
TEST(norm_special) {
  const float inf = INFINITY;
  const float rows[][4] = {
      {-inf, 0, -inf, -inf},     /* softmax [0, 1, 0, 0] */
      {-inf, -inf, -inf, -inf},  /* NaN */
      {1, inf, 2, 3},            /* NaN */
      {1, NAN, 2, 3},            /* NaN */
      {1e30f, -1e30f, 1e30f, 0}, /* max-subtracted: no overflow */
      {-1e30f, -2e30f, -3e30f, -1e30f},
      {88, 89, 90, 91},         /* exp(x) overflows float, exp(x - max) not */
      {-100, -101, -102, -103}, /* exp(x) underflows */
  };
  size_t nr = sizeof rows / sizeof rows[0];
  float x[sizeof rows / sizeof rows[0] * 4], xt[sizeof x / sizeof x[0]];
  for (size_t r = 0; r < nr; r++)
    for (size_t j = 0; j < 4; j++) {
      x[r * 4 + j] = rows[r][j];
      xt[j * nr + r] = rows[r][j];
    }
  for (int k = SOFTMAX; k <= LOG_SOFTMAX; k++) {
    norm_case c = {.k = (kind)k, .rank = 2, .axis = 1, .shape = {nr, 4}};
    run_all(&c, x, "-inf/inf/NaN/1e30 rows", 1.0);
    norm_case t = {.k = (kind)k, .rank = 2, .axis = 0, .shape = {4, nr}};
    run_all(&t, xt, "-inf/inf/NaN/1e30 columns", 1.0);
    /* an axis of length 1: softmax 1, log-softmax 0 */
    norm_case one = {.k = (kind)k, .rank = 3, .axis = 1, .shape = {nr, 1, 4}};
    run_all(&one, x, "axis of length 1", 1.0);
  }
  /* NaN and infinity reach the whole row of a norm. */
  const float bad[] = {1, 2, NAN, 4, 5, -inf, 7, 8, 9, 10, 11, 12};
  for (int k = LAYER; k <= RMS; k++) {
    norm_case c = {.k = (kind)k,
                   .rank = 2,
                   .axis = 1,
                   .shape = {3, 4},
                   .scale = true,
                   .bias = k == LAYER,
                   .eps = 1e-5f};
    run_all(&c, bad, "NaN and -inf rows", 1.0);
  }
  /* epsilon 0: a constant (LayerNorm) or zero (RMSNorm) row is 0/0, NaN;
   * the other rows stay finite */
  const float flat[] = {2, 2, 2, 2, 0, 0, 0, 0, 1, -1, 3, 5};
  for (int k = LAYER; k <= RMS; k++) {
    norm_case c = {.k = (kind)k,
                   .rank = 2,
                   .axis = 1,
                   .shape = {3, 4},
                   .bias = k == LAYER,
                   .eps = 0.0f};
    run_all(&c, flat, "epsilon 0, constant and zero rows", 1.0);
  }
}

/* The header's sentences, value by value: LayerNorm of a constant group
 * is exactly bias with epsilon > 0 and NaN (0/0) with epsilon 0; RMSNorm
 * of a group holding an infinity is NaN there and 0, of x's sign, at the
 * finite elements (x / inf). */
TEST(norm_header_special) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "norm: constant group, epsilon 0, infinity"))
      continue;
    const float flat[4] = {2, 2, 2, 2}, bias[4] = {1, -2, 3, 0.5f};
    const float inf_row[4] = {1, INFINITY, -2, 3};
    wgc_ptr x = dev_from(ctx, flat, 4), b = dev_from(ctx, bias, 4);
    wgc_ptr r = dev_from(ctx, inf_row, 4), y = dev_alloc(ctx, 16);
    size_t shape[1] = {4};
    float got[4];
    if (x && b && r && y) {
      CHECK_OK(ctx, wgc_layer_norm(ctx, x, 0, b, y, shape, 1, 0, 1e-5f));
      if (dev_read(ctx, got, y, 4))
        for (int i = 0; i < 4; i++)
          CHECK(got[i] == bias[i], "LayerNorm eps 1e-5 [%d] = %g, want %g", i,
                (double)got[i], (double)bias[i]);
      CHECK_OK(ctx, wgc_layer_norm(ctx, x, 0, b, y, shape, 1, 0, 0.0f));
      if (dev_read(ctx, got, y, 4))
        for (int i = 0; i < 4; i++)
          CHECK(isnan(got[i]), "LayerNorm eps 0 [%d] = %g, want NaN", i,
                (double)got[i]);
      CHECK_OK(ctx, wgc_rms_norm(ctx, r, 0, y, shape, 1, 0, 1e-5f));
      if (dev_read(ctx, got, y, 4)) {
        CHECK(isnan(got[1]), "RMSNorm [1] = %g, want NaN", (double)got[1]);
        CHECK(got[0] == 0 && !signbit(got[0]) && got[2] == 0 &&
                  signbit(got[2]) && got[3] == 0 && !signbit(got[3]),
              "RMSNorm finite elements %g %g %g, want 0 -0 0", (double)got[0],
              (double)got[2], (double)got[3]);
      }
    }
    dev_free(ctx, x);
    dev_free(ctx, b);
    dev_free(ctx, r);
    dev_free(ctx, y);
    case_end();
  }
}

/* A normalised value below FLT_MIN times an infinite scale: the formula
 * gives +-inf (x / rms is tiny, not 0), also on a device that flushes the
 * subnormal product to zero (where 0 * inf would be NaN). RMSNorm of
 * [2e-38, 100] (x / rms = 2.8e-40) with scale [-inf, 1], and LayerNorm of
 * [3e-38, 100, -100] (x - mean = 2e-38, over the deviation 81.6) with
 * scale [inf, 1, 1] and a bias. */
TEST(norm_tiny_times_inf_scale) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "norm: a value below FLT_MIN times inf scale"))
      continue;
    const float xr[2] = {2e-38f, 100}, sr[2] = {-INFINITY, 1};
    const float xl[3] = {3e-38f, 100, -100}, sl[3] = {INFINITY, 1, 1},
                bl[3] = {0.5f, 0.5f, 0.5f};
    wgc_ptr x1 = dev_from(ctx, xr, 2), s1 = dev_from(ctx, sr, 2);
    wgc_ptr x2 = dev_from(ctx, xl, 3), s2 = dev_from(ctx, sl, 3),
            b2 = dev_from(ctx, bl, 3), y = dev_alloc(ctx, 12);
    float got[3];
    if (x1 && s1 && x2 && s2 && b2 && y) {
      size_t shape[1] = {2};
      CHECK_OK(ctx, wgc_rms_norm(ctx, x1, s1, y, shape, 1, 0, 0.0f));
      if (dev_read(ctx, got, y, 2))
        CHECK(got[0] == -INFINITY && fabs(got[1] - 1.41421356) < 1e-5,
              "RMSNorm = %g %g, want -inf 1.41421", (double)got[0],
              (double)got[1]);
      shape[0] = 3;
      CHECK_OK(ctx, wgc_layer_norm(ctx, x2, s2, b2, y, shape, 1, 0, 0.0f));
      if (dev_read(ctx, got, y, 3))
        CHECK(got[0] == INFINITY && fabs(got[1] - 1.7247449) < 1e-4 &&
                  fabs(got[2] + 0.7247449) < 1e-4,
              "LayerNorm = %g %g %g, want inf 1.72474 -0.72474", (double)got[0],
              (double)got[1], (double)got[2]);
    }
    dev_free(ctx, x1);
    dev_free(ctx, s1);
    dev_free(ctx, x2);
    dev_free(ctx, s2);
    dev_free(ctx, b2);
    dev_free(ctx, y);
    case_end();
  }
}

/* An infinity in a row long enough for several statistics chunks: RMSNorm's
 * mean square is inf, so the finite elements are x/inf = 0 and the
 * infinity itself NaN, as a short row gives (the compensation term of an
 * infinite partial sum is NaN and must not reach the merged sum). */
TEST(norm_rms_inf_long_row) {
  size_t len = 5000;
  float *x = falloc(2 * len);
  fill_uniform(x, 2 * len, -1, 1, 11);
  x[17] = INFINITY;
  x[len + len - 3] = -INFINITY;
  norm_case c = {.k = RMS,
                 .rank = 2,
                 .axis = 1,
                 .shape = {2, len},
                 .scale = true,
                 .eps = 1e-5f};
  run_all(&c, x, "an infinity in each long row", 1.0);
  free(x);
}

/* LayerNorm of a constant row is exactly the bias; of 1e4 + noise in
 * [-1, 1) it is accurate where E[x^2] - E[x]^2 in float32 loses every
 * digit of the variance (E[x^2] = 1e8 has an ulp of 8). */
TEST(norm_layer_stable) {
  size_t len = 4099;
  float *x = falloc(3 * len);
  for (size_t i = 0; i < len; i++)
    x[i] = 3.25f;
  fill_uniform(x + len, len, -1, 1, 5);
  for (size_t i = 0; i < len; i++)
    x[len + i] += 1e4f;
  fill_uniform(x + 2 * len, len, -1, 1, 6);
  for (size_t i = 0; i < len; i++)
    x[2 * len + i] = x[2 * len + i] * 1e-3f - 7e5f;
  norm_case c = {.k = LAYER,
                 .rank = 2,
                 .axis = 1,
                 .shape = {3, len},
                 .scale = true,
                 .bias = true,
                 .eps = 1e-5f};
  run_all(&c, x, "constant, 1e4+noise, -7e5+tiny noise rows", 1.0);
  /* the constant row alone: exactly the bias, on every backend */
  norm_case e = {.k = LAYER,
                 .rank = 2,
                 .axis = 1,
                 .shape = {1, len},
                 .scale = true,
                 .bias = true,
                 .eps = 1e-5f};
  char desc[160];
  fmt_case(desc, sizeof desc, &e);
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "layer_norm %s constant row -> bias exactly",
                      desc))
      continue;
    run_case(ctx, bi, &e, x, desc, 0.0);
    case_end();
  }
  free(x);
}

/* Rejected calls name the parameter and leave the output as it was. */
TEST(norm_invalid) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "norm invalid arguments"))
      continue;
    float h[64];
    fill_ramp(h, 64, 1);
    wgc_ptr x = dev_from(ctx, h, 64), y = dev_from(ctx, h, 64);
    wgc_ptr s = dev_from(ctx, h, 64);
    size_t shape[] = {4, 8}, bigshape[] = {8, 16};
    if (x && y && s) {
      for (int k = SOFTMAX; k <= RMS; k++) {
        char fn[32];
        snprintf(fn, sizeof fn, "wgc_%s", kind_names[k]);
        CHECK_REJECTED(NULL,
                       call(NULL, (kind)k, x, 0, 0, y, shape, 2, 1, 1e-5f), fn,
                       "ctx");
        CHECK_REJECTED(ctx, call(ctx, (kind)k, x, 0, 0, y, NULL, 2, 1, 1e-5f),
                       fn, "shape");
        CHECK_REJECTED(ctx, call(ctx, (kind)k, x, 0, 0, y, shape, 0, 0, 1e-5f),
                       fn, "rank");
        CHECK_REJECTED(ctx, call(ctx, (kind)k, x, 0, 0, y, shape, 9, 0, 1e-5f),
                       fn, "rank");
        CHECK_REJECTED(ctx, call(ctx, (kind)k, x, 0, 0, y, shape, 2, 2, 1e-5f),
                       fn, "axis");
        CHECK_ERROR_VALUE(ctx, "2");
        CHECK_REJECTED(ctx,
                       call(ctx, (kind)k, x, 0, 0, y, bigshape, 2, 1, 1e-5f),
                       fn, "input|output");
        CHECK_REJECTED(ctx,
                       call(ctx, (kind)k, x + 2, 0, 0, y, shape, 2, 1, 1e-5f),
                       fn, "input");
        CHECK_REJECTED(
            ctx,
            call(ctx, (kind)k, x, 0, 0, wild_address(3), shape, 2, 1, 1e-5f),
            fn, "output");
        /* partial overlap with the input (exact is in place) */
        CHECK_REJECTED(
            ctx, call(ctx, (kind)k, x, 0, 0, at(x, 1), shape, 1, 0, 1e-5f), fn,
            "output|input");
        if (k >= LAYER) {
          CHECK_REJECTED(ctx, call(ctx, (kind)k, x, s, 0, y, shape, 2, 1, NAN),
                         fn, "epsilon");
          CHECK_REJECTED(ctx,
                         call(ctx, (kind)k, x, s, 0, y, shape, 2, 1, -1.0f), fn,
                         "epsilon");
          CHECK_REJECTED(ctx,
                         call(ctx, (kind)k, x, s, 0, y, shape, 2, 1, INFINITY),
                         fn, "epsilon");
          CHECK_REJECTED(
              ctx, call(ctx, (kind)k, x, at(s, 60), 0, y, shape, 2, 1, 1e-5f),
              fn, "scale");
          CHECK_REJECTED(ctx,
                         call(ctx, (kind)k, x, y, 0, y, shape, 2, 1, 1e-5f), fn,
                         "output|scale");
        }
        if (k == LAYER) {
          CHECK_REJECTED(
              ctx, call(ctx, (kind)k, x, s, at(s, 57), y, shape, 2, 1, 1e-5f),
              fn, "bias");
          CHECK_REJECTED(ctx,
                         call(ctx, (kind)k, x, s, y, y, shape, 2, 1, 1e-5f), fn,
                         "output|bias");
        }
        /* an empty tensor is a successful no-op */
        size_t empty[] = {4, 0, 3};
        CHECK_OK(ctx, call(ctx, (kind)k, x, 0, 0, y, empty, 3, 1, 1e-5f));
      }
      CHECK_DEVICE_EQUALS(ctx, y, h, 64, "output");
      CHECK_DEVICE_EQUALS(ctx, x, h, 64, "input");
    }
    dev_free(ctx, x);
    dev_free(ctx, y);
    dev_free(ctx, s);
    case_end();
  }
}

/* The pieces the browser build cuts the work into (cpu/split.h): outer
 * slabs, or chunks of rows with the statistics kept between pieces, must
 * give the whole call's result bit for bit, in place too. */
TEST(norm_cpu_split) {
  static const double budgets[] = {1e12, 1e4, 300, 1};
  static const struct {
    kind k;
    size_t outer, len, inner;
    bool in_place;
  } cases[] = {
      {SOFTMAX, 3, 700, 5, false},
      {LOG_SOFTMAX, 2, 1500, 1, true},
      {LAYER, 2, 3000, 1, false},
      {RMS, 1, 5000, 1, true},
  };
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    if (!case_begin("norm_split[cpu] %s [%zu,%zu,%zu]%s",
                    kind_names[cases[ci].k], cases[ci].outer, cases[ci].len,
                    cases[ci].inner, cases[ci].in_place ? " in-place" : ""))
      continue;
    size_t n = cases[ci].outer * cases[ci].len * cases[ci].inner;
    size_t len = cases[ci].len;
    float *x = falloc(n), *whole = falloc(n), *part = falloc(n);
    float *scale = falloc(len), *bias = falloc(len);
    fill_uniform(x, n, -5, 5, 17);
    fill_uniform(scale, len, -2, 2, 18);
    fill_uniform(bias, len, -1, 1, 19);
    cpu_work w = {.kind = CPU_WORK_NORM};
    w.u.norm = (wgc_norm_args){.kind = (wgc_norm_kind)cases[ci].k,
                               .outer = cases[ci].outer,
                               .len = len,
                               .inner = cases[ci].inner,
                               .epsilon = 1e-5f,
                               .has_scale = cases[ci].k >= LAYER,
                               .has_bias = cases[ci].k == LAYER,
                               .scale = {.mem = scale},
                               .bias = {.mem = bias},
                               .fn = "test"};
    memcpy(whole, x, n * sizeof *x);
    w.u.norm.input = (wgc_ref){.mem = cases[ci].in_place ? whole : x};
    w.u.norm.output = (wgc_ref){.mem = whole};
    CHECK_STATUS(cpu_work_run(ctx, &w), WGC_OK);
    size_t most = 0;
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
      memcpy(part, x, n * sizeof *x);
      w.u.norm.input = (wgc_ref){.mem = cases[ci].in_place ? part : x};
      w.u.norm.output = (wgc_ref){.mem = part};
      cpu_split s;
      CHECK_STATUS(cpu_split_plan(&w, budgets[b], &s), WGC_OK);
      for (size_t i = 0; i < s.pieces; i++)
        CHECK_STATUS(cpu_split_run(ctx, &w, &s, i), WGC_OK);
      most = s.pieces > most ? s.pieces : most;
      cpu_split_release(&s);
      size_t bad = 0;
      for (size_t i = 0; i < n; i++)
        bad += !same_bits(part[i], whole[i]);
      CHECK(!bad, "budget %g: %zu of %zu elements differ from the whole call",
            budgets[b], bad, n);
    }
    CHECK(most >= 8, "at most %zu pieces", most);
    free(x), free(whole), free(part), free(scale), free(bias);
    case_end();
  }
}
