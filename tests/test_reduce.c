/* wgc_reduce_axes, the later reduce ops (PROD, SUM_SQUARE, L1, L2,
 * LOG_SUM_EXP) with special values and empty axes, and wgc_argmax /
 * wgc_argmin, on both backends against float64 references (ops_ref.c).
 * The whole-op tests over every axis of ranks 1..8 are in test_ops.c. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 8
#define GUARD_BITS 0x7fa5a5a5u /* a NaN no op produces */

static float guard_value(void) {
  float f;
  uint32_t b = GUARD_BITS;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* The output buffer of n values with GUARD sentinels either side. */
static wgc_ptr guarded(wgc_context *ctx, size_t n) {
  size_t total = n + 2 * GUARD;
  float *h = falloc(total);
  for (size_t i = 0; i < total; i++)
    h[i] = guard_value();
  wgc_ptr p = dev_from(ctx, h, total);
  free(h);
  return p;
}

/* Reads the n outputs of a guarded buffer into got and CHECKs the guards. */
static bool read_guarded(wgc_context *ctx, wgc_ptr p, float *got, size_t n,
                         const char *label) {
  size_t total = n + 2 * GUARD;
  float *h = falloc(total);
  bool ok = dev_read(ctx, h, p, total);
  for (size_t i = 0; ok && i < total; i++)
    if ((i < GUARD || i >= GUARD + n) && !same_bits(h[i], guard_value())) {
      CHECK(false, "%s: the call wrote float %zu outside its output", label, i);
      ok = false;
    }
  if (ok)
    memcpy(got, h + GUARD, n * sizeof *got);
  free(h);
  return ok;
}

/* CHECKs that all n + 2 * GUARD floats of a guarded buffer are unchanged. */
static void check_untouched(wgc_context *ctx, wgc_ptr p, size_t n,
                            const char *what) {
  size_t total = n + 2 * GUARD;
  float *h = falloc(total);
  if (dev_read(ctx, h, p, total))
    for (size_t i = 0; i < total; i++)
      if (!same_bits(h[i], guard_value())) {
        CHECK(false, "%s: float %zu of the output buffer changed", what, i);
        break;
      }
  free(h);
}

static void reduced_of(const size_t *axes, size_t naxes, bool *reduced) {
  for (size_t d = 0; d < 8; d++)
    reduced[d] = false;
  for (size_t k = 0; k < naxes; k++)
    reduced[axes[k]] = true;
}

/* op over axes of x (shape[rank]) on ctx, checked against float64;
 * through wgc_reduce where naxes is 1 and single is set, else through
 * wgc_reduce_axes. */
static void axes_call(wgc_context *ctx, int bi, wgc_reduce_op op,
                      const float *x, const size_t *shape, size_t rank,
                      const size_t *axes, size_t naxes, bool single,
                      const char *label) {
  bool reduced[8];
  reduced_of(axes, naxes, reduced);
  size_t n = ref_count(shape, rank), ny = 1, len = 1;
  for (size_t d = 0; d < rank; d++)
    if (reduced[d])
      len *= shape[d];
    else
      ny *= shape[d];
  wgc_ptr dx = dev_from(ctx, x, n ? n : 1), dy = guarded(ctx, ny);
  float *got = falloc(ny ? ny : 1);
  double *want = dalloc(ny ? ny : 1), *mag = dalloc(ny ? ny : 1),
         *tol = dalloc(ny ? ny : 1);
  if (dx && dy) {
    wgc_status s =
        naxes == 1 && single
            ? wgc_reduce(ctx, op, dx, at(dy, GUARD), shape, rank, axes[0])
            : wgc_reduce_axes(ctx, op, dx, at(dy, GUARD), shape, rank, axes,
                              naxes);
    CHECK(s == WGC_OK, "%s(%s, %s) returned %s: %s",
          naxes == 1 && single ? "wgc_reduce" : "wgc_reduce_axes",
          ref_reduce_name(op), label, wgc_status_name(s), wgc_last_error(ctx));
    if (s == WGC_OK && read_guarded(ctx, dy, got, ny, label)) {
      ref_reduce_axes(op, x, shape, rank, reduced, want, mag);
      for (size_t i = 0; i < ny; i++)
        tol[i] = ref_reduce_tol(op, len, want[i], mag[i]);
      char key[64];
      snprintf(key, sizeof key, "reduce_axes_%s[%s]", ref_reduce_name(op),
               backend_label(test_backends[bi]));
      check_close_at(__FILE__, __LINE__, key, label, got, want, ny, 0, 0, tol);
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dy);
  free(got), free(want), free(mag), free(tol);
}

static void axes_one(wgc_context *ctx, int bi, wgc_reduce_op op, const float *x,
                     const size_t *shape, size_t rank, const size_t *axes,
                     size_t naxes, const char *label) {
  axes_call(ctx, bi, op, x, shape, rank, axes, naxes, true, label);
}

/* Inputs where op is well conditioned: products of factors near 1. */
static void fill_for(wgc_reduce_op op, float *x, size_t n, unsigned seed) {
  if (op == WGC_REDUCE_PROD)
    fill_uniform(x, n, 0.8f, 1.25f, seed);
  else
    fill_uniform(x, n, -1, 1, seed);
  if (op == WGC_REDUCE_PROD)
    for (size_t i = 0; i < n; i += 7)
      x[i] = -x[i];
}

TEST(reduce_axes_every_subset) {
  /* Every non-empty axis subset of rank-4 tensors, listed forwards and
   * (two or more) backwards; the second shape has 1s that merge away. */
  static const size_t shapes[][4] = {{3, 5, 4, 7}, {1, 6, 1, 9}};
  for (size_t si = 0; si < 2; si++) {
    const size_t *shape = shapes[si];
    size_t n = ref_count(shape, 4);
    float *x = falloc(n);
    for (int op = 0; op < WGC_REDUCE_OP_COUNT; op++) {
      fill_for((wgc_reduce_op)op, x, n, 300u + (unsigned)op);
      for (int bi = 0; bi < 2; bi++) {
        wgc_context *ctx;
        if (!backend_case(bi, &ctx,
                          "reduce_axes %s shape=[%zu,%zu,%zu,%zu] every "
                          "axis subset",
                          ref_reduce_name((wgc_reduce_op)op), shape[0],
                          shape[1], shape[2], shape[3]))
          continue;
        for (unsigned mask = 1; mask < 16; mask++) {
          size_t axes[4], naxes = 0;
          for (size_t d = 0; d < 4; d++)
            if (mask >> d & 1)
              axes[naxes++] = d;
          char label[48];
          snprintf(label, sizeof label, "axes mask 0x%x", mask);
          axes_call(ctx, bi, (wgc_reduce_op)op, x, shape, 4, axes, naxes, false,
                    label);
          if (naxes == 1)
            continue; /* wgc_reduce_axes of one axis is enough */
          for (size_t k = 0; k < naxes / 2; k++) {
            size_t t = axes[k];
            axes[k] = axes[naxes - 1 - k];
            axes[naxes - 1 - k] = t;
          }
          snprintf(label, sizeof label, "axes mask 0x%x reversed", mask);
          axes_one(ctx, bi, (wgc_reduce_op)op, x, shape, 4, axes, naxes, label);
        }
        case_end();
      }
    }
    free(x);
  }
}

TEST(reduce_axes_long) {
  /* Axes apart, each long enough for several passes on WebGPU, and the
   * whole tensor at once: the partials between axes carry pairs. */
  static const size_t shape[4] = {2, 1500, 3, 200};
  static const size_t apart[2] = {1, 3}, all[4] = {0, 1, 2, 3};
  size_t n = ref_count(shape, 4);
  float *x = falloc(n);
  static const wgc_reduce_op ops[] = {WGC_REDUCE_MEAN, WGC_REDUCE_L2,
                                      WGC_REDUCE_LOG_SUM_EXP, WGC_REDUCE_MAX};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
    fill_for(ops[k], x, n, 400u + (unsigned)k);
    for (int bi = 0; bi < 2; bi++) {
      wgc_context *ctx;
      if (!backend_case(bi, &ctx,
                        "reduce_axes %s shape=[2,1500,3,200] axes {1,3} "
                        "and all",
                        ref_reduce_name(ops[k])))
        continue;
      axes_one(ctx, bi, ops[k], x, shape, 4, apart, 2, "axes {1,3}");
      axes_one(ctx, bi, ops[k], x, shape, 4, all, 4, "all axes");
      case_end();
    }
  }
  free(x);
}

/* ---- special values ------------------------------------------------------
 * Rows of 6 along the last axis and columns of 6 along the first. */
#define SROW 6
static const float special_rows[][SROW] = {
    {0.5f, -1.25f, 2.0f, 0.75f, -0.5f, 1.5f},
    {0.5f, NAN, 2.0f, 0.75f, -0.5f, 1.5f},
    {0.5f, INFINITY, 2.0f, 0.75f, -0.5f, 1.5f},
    {0.5f, -INFINITY, 2.0f, 0.75f, -0.5f, 1.5f},
    {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY},
    {INFINITY, 1.0f, -INFINITY, 2.0f, 3.0f, 4.0f},
    {0.0f, 2.0f, INFINITY, 3.0f, 1.0f, 1.0f},
    {-0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f},
    {INFINITY, NAN, 1.0f, 1.0f, 1.0f, 1.0f},
    {-1e30f, 1e2f, 88.0f, 89.0f, 100.0f, 1e30f}, /* exp overflows */
    {1e2f, 1e10f, 1e20f, 1e25f, 1e30f, 3e38f},
    {-1e30f, -1e30f, -3e38f, -1e20f, -1e30f, -1e25f},
};
#define NSPECIAL (sizeof special_rows / sizeof special_rows[0])

/* Whether row r is within op's float32 range on WebGPU (the header). */
static bool in_range(wgc_reduce_op op, size_t r, int bi) {
  bool big = r >= 9;
  if (op == WGC_REDUCE_PROD)
    return !big; /* float32 products of 1e30 overflow as they must */
  if (op == WGC_REDUCE_L2 && test_backends[bi] == WGC_BACKEND_WEBGPU)
    return !big; /* squares overflow float32 there */
  return true;
}

TEST(reduce_special_values) {
  for (int op = 0; op < WGC_REDUCE_OP_COUNT; op++)
    for (int bi = 0; bi < 2; bi++) {
      wgc_context *ctx;
      if (!backend_case(bi, &ctx, "reduce %s special values, rows and columns",
                        ref_reduce_name((wgc_reduce_op)op)))
        continue;
      float rows[NSPECIAL * SROW], cols[SROW * NSPECIAL];
      size_t nr = 0;
      for (size_t r = 0; r < NSPECIAL; r++) {
        if (!in_range((wgc_reduce_op)op, r, bi))
          continue;
        for (size_t j = 0; j < SROW; j++) {
          rows[nr * SROW + j] = special_rows[r][j];
          cols[j * NSPECIAL + nr] = special_rows[r][j];
        }
        nr++;
      }
      /* pack the columns at stride nr */
      float packed[SROW * NSPECIAL];
      for (size_t j = 0; j < SROW; j++)
        for (size_t r = 0; r < nr; r++)
          packed[j * nr + r] = cols[j * NSPECIAL + r];
      size_t rs[2] = {nr, SROW}, cs[2] = {SROW, nr}, last = 1, first = 0;
      axes_one(ctx, bi, (wgc_reduce_op)op, rows, rs, 2, &last, 1, "rows");
      axes_one(ctx, bi, (wgc_reduce_op)op, packed, cs, 2, &first, 1, "columns");
      case_end();
    }
  /* The CPU keeps L2's squares in double: no overflow or underflow where
   * the result is a float. */
  if (case_begin("reduce[cpu] l2 beyond float32 squares")) {
    wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
    const float x[4] = {3e20f, 4e20f, 3e-30f, 4e-30f};
    size_t shape[2] = {2, 2}, axis = 1;
    int bi = test_backends[0] == WGC_BACKEND_CPU ? 0 : 1;
    if (ctx)
      axes_one(ctx, bi, WGC_REDUCE_L2, x, shape, 2, &axis, 1, "l2");
    case_end();
  }
}

TEST(reduce_empty_axis) {
  /* The identity of each op, or invalid; over one axis and over several. */
  static const size_t shape[3] = {3, 0, 4}, both[2] = {0, 1};
  float dummy[1] = {0};
  for (int op = 0; op < WGC_REDUCE_OP_COUNT; op++)
    for (int bi = 0; bi < 2; bi++) {
      wgc_context *ctx;
      if (!backend_case(bi, &ctx, "reduce %s over an empty axis",
                        ref_reduce_name((wgc_reduce_op)op)))
        continue;
      bool invalid =
          op == WGC_REDUCE_MAX || op == WGC_REDUCE_MIN || op == WGC_REDUCE_MEAN;
      if (invalid) {
        wgc_ptr dx = dev_from(ctx, dummy, 1), dy = guarded(ctx, 12);
        size_t axis = 1;
        CHECK_REJECTED(ctx,
                       wgc_reduce(ctx, (wgc_reduce_op)op, dx, at(dy, GUARD),
                                  shape, 3, axis),
                       "wgc_reduce", "axis|shape");
        CHECK_REJECTED(ctx,
                       wgc_reduce_axes(ctx, (wgc_reduce_op)op, dx,
                                       at(dy, GUARD), shape, 3, both, 2),
                       "wgc_reduce_axes", "axis|shape");
        check_untouched(ctx, dy, 12, "rejected calls");
        dev_free(ctx, dx);
        dev_free(ctx, dy);
      } else {
        size_t axis = 1;
        axes_one(ctx, bi, (wgc_reduce_op)op, dummy, shape, 3, &axis, 1,
                 "axis 1");
        axes_one(ctx, bi, (wgc_reduce_op)op, dummy, shape, 3, both, 2,
                 "axes {0,1}");
      }
      case_end();
    }
}

/* ---- argmax / argmin ----------------------------------------------------- */

static void arg_one(wgc_context *ctx, int bi, bool largest, const float *x,
                    const size_t *shape, size_t rank, size_t axis,
                    const char *label) {
  (void)bi;
  size_t n = ref_count(shape, rank), ny = n / shape[axis];
  wgc_ptr dx = dev_from(ctx, x, n), dy = guarded(ctx, ny);
  float *got = falloc(ny);
  int32_t *want = xmalloc(ny * sizeof *want), *gi = xmalloc(ny * sizeof *gi);
  if (dx && dy) {
    wgc_status s = largest
                       ? wgc_argmax(ctx, dx, at(dy, GUARD), shape, rank, axis)
                       : wgc_argmin(ctx, dx, at(dy, GUARD), shape, rank, axis);
    CHECK(s == WGC_OK, "%s(%s) returned %s: %s",
          largest ? "wgc_argmax" : "wgc_argmin", label, wgc_status_name(s),
          wgc_last_error(ctx));
    if (s == WGC_OK && read_guarded(ctx, dy, got, ny, label)) {
      memcpy(gi, got, ny * sizeof *gi);
      ref_arg(largest, x, shape, rank, axis, want);
      for (size_t i = 0; i < ny; i++)
        if (gi[i] != want[i]) {
          CHECK(false, "%s: output %zu is index %d, want %d", label, i,
                (int)gi[i], (int)want[i]);
          break;
        }
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dy);
  free(got), free(want), free(gi);
}

TEST(argmax_argmin) {
  static const struct {
    size_t rank, shape[4];
  } shapes[] = {
      {1, {1}},          {1, {1000}},    {2, {17, 33}},
      {4, {3, 4, 5, 6}}, {3, {5, 1, 7}}, {2, {2, 100003}}, /* long rows */
      {2, {5000, 3}},                                      /* long columns */
  };
  for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
    size_t rank = shapes[si].rank, n = ref_count(shapes[si].shape, rank);
    char sh[64];
    int len = snprintf(sh, sizeof sh, "[%zu", shapes[si].shape[0]);
    for (size_t d = 1; d < rank; d++)
      len += snprintf(sh + len, sizeof sh - (size_t)len, ",%zu",
                      shapes[si].shape[d]);
    snprintf(sh + len, sizeof sh - (size_t)len, "]");
    float *x = falloc(n);
    /* few distinct values: ties everywhere, first index wins; the odd
     * shapes also get NaN, infinities and signed zeros */
    fill_uniform(x, n, 0, 4, 500u + (unsigned)si);
    for (size_t i = 0; i < n; i++)
      x[i] = floorf(x[i]);
    if (si % 2)
      for (size_t i = 3; i < n; i += 37)
        x[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -INFINITY;
    if (si == 4)
      for (size_t i = 0; i < n; i++)
        x[i] = i % 2 ? -0.0f : 0.0f;
    for (int largest = 0; largest < 2; largest++)
      for (int bi = 0; bi < 2; bi++) {
        wgc_context *ctx;
        if (!backend_case(bi, &ctx, "%s shape=%s every axis",
                          largest ? "argmax" : "argmin", sh))
          continue;
        for (size_t axis = 0; axis < rank; axis++) {
          char label[32];
          snprintf(label, sizeof label, "axis %zu", axis);
          arg_one(ctx, bi, largest, x, shapes[si].shape, rank, axis, label);
        }
        case_end();
      }
    free(x);
  }
  /* Distinct random values, and the winner placed late in long rows (its
   * partial has to travel through every pass). */
  size_t shape[2] = {3, 70001};
  size_t n = 3 * 70001;
  float *x = falloc(n);
  fill_uniform(x, n, -1, 1, 77);
  x[70000] = 5.0f;            /* row 0: the last element */
  x[70001 + 65536] = -5.0f;   /* row 1 */
  x[2 * 70001 + 40000] = NAN; /* row 2: NaN beats both */
  x[2 * 70001 + 50000] = NAN;
  for (int largest = 0; largest < 2; largest++)
    for (int bi = 0; bi < 2; bi++) {
      wgc_context *ctx;
      if (!backend_case(bi, &ctx, "%s rows of 70001, winners late",
                        largest ? "argmax" : "argmin"))
        continue;
      arg_one(ctx, bi, largest, x, shape, 2, 1, "rows");
      case_end();
    }
  free(x);
}

/* ---- bad input ----------------------------------------------------------- */

TEST(reduce_validation) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_reduce_axes argmax argmin"))
      continue;
    const size_t shape[3] = {3, 4, 5};
    float h[60];
    fill_ramp(h, 60, 1);
    wgc_ptr x = dev_from(ctx, h, 60), y = guarded(ctx, 20);
    wgc_ptr yo = at(y, GUARD);
    const wgc_reduce_op L2 = WGC_REDUCE_L2;
    const char *F = "wgc_reduce_axes";
    const size_t ax01[2] = {0, 1}, dup[2] = {1, 1}, far[2] = {0, 7};
    CHECK_REJECTED(ctx, wgc_reduce_axes(ctx, L2, x, yo, shape, 3, NULL, 1), F,
                   "axes");
    CHECK_REJECTED(ctx, wgc_reduce_axes(ctx, L2, x, yo, shape, 3, ax01, 0), F,
                   "naxes");
    CHECK_REJECTED(ctx, wgc_reduce_axes(ctx, L2, x, yo, shape, 2, ax01, 3), F,
                   "naxes");
    CHECK_REJECTED(ctx, wgc_reduce_axes(ctx, L2, x, yo, shape, 3, dup, 2), F,
                   "axes");
    CHECK_REJECTED(ctx, wgc_reduce_axes(ctx, L2, x, yo, shape, 3, far, 2), F,
                   "axes");
    CHECK_ERROR_VALUE(ctx, "7");
    CHECK_REJECTED(ctx,
                   wgc_reduce_axes(ctx, (wgc_reduce_op)WGC_REDUCE_OP_COUNT, x,
                                   yo, shape, 3, ax01, 2),
                   F, "op");
    CHECK_REJECTED(ctx, wgc_reduce_axes(ctx, L2, x, yo, NULL, 3, ax01, 2), F,
                   "shape");
    CHECK_REJECTED(ctx, wgc_reduce_axes(ctx, L2, x, yo, shape, 0, ax01, 1), F,
                   "rank");
    wgc_ptr small = dev_alloc(ctx, 8);
    CHECK_REJECTED(ctx, wgc_reduce_axes(ctx, L2, x, small, shape, 3, ax01, 2),
                   F, "output");
    dev_free(ctx, small);
    CHECK_REJECTED(ctx, wgc_reduce_axes(ctx, L2, x, yo + 1, shape, 3, ax01, 2),
                   F, "output");
    CHECK_REJECTED(ctx, wgc_reduce_axes(ctx, L2, yo, yo, shape, 3, ax01, 2), F,
                   "input|output");
    CHECK_REJECTED(NULL, wgc_reduce_axes(NULL, L2, x, yo, shape, 3, ax01, 2), F,
                   "ctx");
    for (int largest = 0; largest < 2; largest++) {
      const char *G = largest ? "wgc_argmax" : "wgc_argmin";
      wgc_status (*f)(wgc_context *, wgc_ptr, wgc_ptr, const size_t *, size_t,
                      size_t) = largest ? wgc_argmax : wgc_argmin;
      const size_t empty[3] = {3, 0, 5};
      CHECK_REJECTED(ctx, f(ctx, x, yo, shape, 3, 3), G, "axis");
      CHECK_REJECTED(ctx, f(ctx, x, yo, shape, 0, 0), G, "rank");
      CHECK_REJECTED(ctx, f(ctx, x, yo, NULL, 3, 0), G, "shape");
      CHECK_REJECTED(ctx, f(ctx, x, yo, empty, 3, 1), G, "axis|shape");
      CHECK_REJECTED(ctx, f(ctx, x, yo + 2, shape, 3, 1), G, "output");
      CHECK_REJECTED(ctx, f(ctx, x, x, shape, 3, 1), G, "output|input");
      CHECK_REJECTED(ctx, f(ctx, wild_address(3), yo, shape, 3, 1), G, "input");
      CHECK_REJECTED(NULL, f(NULL, x, yo, shape, 3, 1), G, "ctx");
    }
    check_untouched(ctx, y, 20, "every rejected call");
    CHECK_DEVICE_EQUALS(ctx, x, h, 60, "the input");
    dev_free(ctx, x);
    dev_free(ctx, y);
    case_end();
  }
}

/* A row of 368,641 floats (361 first-pass chunks of 1024) under a 4160-byte
 * binding window with the kernels made for GPUs: the planner's retry at
 * half the window gave the second pass a short-row chunk of 768 pairs, more
 * than its 260-pair window, and the call failed UNSUPPORTED where every
 * length must split. */
TEST(reduce_long_row_small_window_gpu_kernels) {
  if (!case_begin("reduce[webgpu] sum of 368641 under 4160-byte bindings, "
                  "gpu kernels"))
    return;
  wgc_context *ctx = new_ctx_kernels(WGC_BACKEND_WEBGPU, 4160, KERNELS_GPU);
  if (ctx) {
    size_t n = 368641;
    float *x = falloc(n);
    fill_uniform(x, n, -1, 1, 77);
    double want, mag;
    ref_reduce(WGC_REDUCE_SUM, x, &n, 1, 0, &want, &mag);
    wgc_ptr in = dev_from(ctx, x, n), out = dev_alloc(ctx, 4);
    float got = NAN;
    CHECK_STATUS(wgc_reduce(ctx, WGC_REDUCE_SUM, in, out, &n, 1, 0), WGC_OK);
    if (dev_read(ctx, &got, out, 1))
      CHECK(fabs(got - want) <= ref_reduce_tol(WGC_REDUCE_SUM, n, want, mag),
            "sum %.9g, want %.9g", got, want);
    dev_free(ctx, in);
    dev_free(ctx, out);
    free(x);
    wgc_destroy(ctx);
  }
  case_end();
}
