/* softmax, log-softmax, LayerNorm and RMSNorm with f16 and bf16 operands
 * (the _ex forms) on both backends against float64: the inputs decoded
 * exactly, the plain op's bound plus half a unit in the last place of the
 * output type; every input x output type pair of every kind, f16 and f32
 * scale and bias, f16 overflow to inf (log-softmax of -70000), subnormal
 * f16 inputs, NaN rows; 2-byte operands 2 bytes into a word with their
 * neighbouring halves untouched; in place; the CPU backend's split pieces
 * with typed operands; and the rejected types, which write nothing. */
#include "dtype_ref.h"
#include "tbuf.h"
#include "util.h"

#include "cpu/cpu.h"
#include "cpu/work.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const wgc_dtype TYPES[3] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                   WGC_DTYPE_BF16};

typedef enum kind { SOFTMAX, LOG_SOFTMAX, LAYER, RMS } kind;
static const char *const kind_names[] = {"softmax", "log_softmax", "layer_norm",
                                         "rms_norm"};
/* The plain ops' bounds (wgc.h): rel * |want| + abs. */
static const double bound_rel[] = {1e-5, 1e-5, 1e-5, 1e-5};
static const double bound_abs[] = {1e-6, 2e-6, 1e-5, 1e-6};

/* float64 reference over [outer, len, inner] of the decoded inputs. */
static void ref_norm(kind k, const double *x, size_t outer, size_t len,
                     size_t inner, const double *scale, const double *bias,
                     double eps, double *y) {
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      const double *xr = x + o * len * inner + i;
      double *yr = y + o * len * inner + i;
      if (k == SOFTMAX || k == LOG_SOFTMAX) {
        double m = -INFINITY;
        for (size_t r = 0; r < len; r++)
          m = isnan(m) || isnan(xr[r * inner]) ? NAN : fmax(m, xr[r * inner]);
        double s = 0;
        for (size_t r = 0; r < len; r++)
          s += exp(xr[r * inner] - m);
        for (size_t r = 0; r < len; r++)
          yr[r * inner] = k == SOFTMAX ? exp(xr[r * inner] - m) / s
                                       : (xr[r * inner] - m) - log(s);
        continue;
      }
      double mean = 0, var = 0;
      for (size_t r = 0; k == LAYER && r < len; r++)
        mean += xr[r * inner];
      mean /= (double)len;
      for (size_t r = 0; r < len; r++)
        var += (xr[r * inner] - mean) * (xr[r * inner] - mean);
      double rstd = 1.0 / sqrt(var / (double)len + eps);
      for (size_t r = 0; r < len; r++) {
        double v = (xr[r * inner] - mean) * rstd;
        if (scale)
          v *= scale[r];
        if (bias)
          v += bias[r];
        yr[r * inner] = v;
      }
    }
}

static wgc_status call(wgc_context *ctx, kind k, const tbuf *x,
                       const tbuf *scale, const tbuf *bias, const tbuf *y,
                       const size_t *shape, size_t rank, size_t axis) {
  wgc_ptr xp = x->dev + x->off, yp = y->dev + y->off;
  wgc_ptr sp = scale ? scale->dev + scale->off : 0;
  wgc_ptr bp = bias ? bias->dev + bias->off : 0;
  wgc_dtype st = scale ? scale->t : WGC_DTYPE_F32;
  wgc_dtype bt = bias ? bias->t : WGC_DTYPE_F32;
  switch (k) {
  case SOFTMAX:
    return wgc_softmax_ex(ctx, xp, x->t, yp, y->t, shape, rank, axis);
  case LOG_SOFTMAX:
    return wgc_log_softmax_ex(ctx, xp, x->t, yp, y->t, shape, rank, axis);
  case LAYER:
    return wgc_layer_norm_ex(ctx, xp, x->t, sp, st, bp, bt, yp, y->t, shape,
                             rank, axis, 1e-5f);
  case RMS:
    return wgc_rms_norm_ex(ctx, xp, x->t, sp, st, yp, y->t, shape, rank, axis,
                           1e-5f);
  }
  return WGC_ERR_INVALID_ARGUMENT;
}

/* One call of kind k on [3, 37, 5] (axis 1) or [4, 300] (axis 1), input
 * type it, output ot, scale and bias (norms) of type at; in place where
 * asked (it == ot). Outer index 0 holds a NaN, 1 a subnormal f16, 2 a
 * -70000 (-inf in f16, overflow for log-softmax into f16). */
static void norm_case(wgc_context *ctx, kind k, wgc_dtype it, wgc_dtype ot,
                      wgc_dtype at, bool wide, bool in_place) {
  size_t shape[2][3] = {{3, 37, 5}, {4, 300, 1}}, rank = wide ? 2 : 3;
  const size_t *sh = shape[wide];
  size_t outer = sh[0], len = k <= LOG_SOFTMAX ? sh[1] : sh[1] * sh[2];
  size_t inner = k <= LOG_SOFTMAX ? sh[2] : 1, n = sh[0] * sh[1] * sh[2];
  float *x = falloc(n), *sc = falloc(len), *bi = falloc(len);
  fill_uniform(x, n, -4, 4, 31 + (unsigned)k);
  fill_uniform(sc, len, -2, 2, 41);
  fill_uniform(bi, len, -1, 1, 43);
  x[3] = NAN;
  x[len * inner + 2] = 3.5e-6f;
  x[2 * len * inner + 4] = -70000.0f;
  tbuf in = tbuf_make(ctx, it, x, n);
  tbuf out = in_place ? in : tbuf_make(ctx, ot, NULL, n);
  bool has_s = k >= LAYER, has_b = k == LAYER;
  tbuf s = {0}, b = {0};
  if (has_s)
    s = tbuf_make(ctx, at, sc, len);
  if (has_b)
    b = tbuf_make(ctx, at, bi, len);
  double *xd = dalloc(n), *sd = dalloc(len), *bd = dalloc(len),
         *want = dalloc(n);
  for (size_t i = 0; i < n; i++)
    xd[i] = tbuf_val(&in, i);
  for (size_t i = 0; i < len; i++) {
    sd[i] = has_s ? tbuf_val(&s, i) : 1.0;
    bd[i] = has_b ? tbuf_val(&b, i) : 0.0;
  }
  ref_norm(k, xd, outer, len, inner, has_s ? sd : NULL, has_b ? bd : NULL,
           (double)1e-5f, want);
  char what[128];
  snprintf(what, sizeof what, "%s %s->%s affine %s [%zu,%zu,%zu]%s",
           kind_names[k], wgc_dtype_name(it), wgc_dtype_name(ot),
           wgc_dtype_name(at), outer, len, inner, in_place ? " in place" : "");
  if (in.dev && out.dev && (!has_s || s.dev) && (!has_b || b.dev)) {
    CHECK_OK(ctx, call(ctx, k, &in, has_s ? &s : NULL, has_b ? &b : NULL, &out,
                       sh, rank, 1));
    check_out(ctx, &out, want, bound_rel[k], bound_abs[k], what);
  }
  tbuf_free(ctx, &in);
  if (!in_place)
    tbuf_free(ctx, &out);
  if (has_s)
    tbuf_free(ctx, &s);
  if (has_b)
    tbuf_free(ctx, &b);
  free(x), free(sc), free(bi), free(xd), free(sd), free(bd), free(want);
}

TEST(types_norm) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types norm"))
      continue;
    /* every kind with every type pair; scale and bias f32 and f16 by turns */
    for (int k = 0; k < 4; k++)
      for (int c = 0; c < 9; c++)
        norm_case(ctx, (kind)k, TYPES[c / 3], TYPES[c % 3], TYPES[(c + k) % 2],
                  (c + k) % 3 == 0, false);
    case_end();
  }
}

TEST(types_norm_in_place) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types norm in place"))
      continue;
    for (int k = 0; k < 4; k++)
      for (int t = 1; t < 3; t++)
        norm_case(ctx, (kind)k, TYPES[t], TYPES[t], WGC_DTYPE_F16, k % 2, true);
    case_end();
  }
}

/* 2-byte operands from a word's start: where a row of a 2-byte output is
 * whole words (an even length along the last axis), CPU adapters write it
 * by words; [4, 300] is such, [3, 37, 5] is not. The general form (GPUs)
 * writes a contiguous output from a word's start by words: [3, 37, 5]
 * ends half-way through its last word, whose other half is a guard. */
TEST(types_norm_word_start) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types norm from a word's start"))
      continue;
    size_t was = tbuf_half_offset(8);
    for (int k = 0; k < 4; k++)
      for (int c = 0; c < 9; c++)
        norm_case(ctx, (kind)k, TYPES[c / 3], TYPES[c % 3], TYPES[(c + k) % 2],
                  c % 3 != 0 || k == 0, false);
    for (int k = 0; k < 4; k++)
      norm_case(ctx, (kind)k, TYPES[k % 3], TYPES[1 + k % 2], TYPES[k % 2],
                false, false);
    for (int k = 0; k < 4; k++)
      for (int t = 1; t < 3; t++)
        norm_case(ctx, (kind)k, TYPES[t], TYPES[t], WGC_DTYPE_F16, true, true);
    tbuf_half_offset(was);
    case_end();
  }
}

/* The CPU backend's pieces of a typed call compute exactly what the whole
 * call does: f16 input 2 bytes into a word, bf16 output, f16 scale. */
TEST(types_norm_cpu_split) {
  static const struct {
    kind k;
    size_t outer, len, inner;
  } cases[] = {
      {SOFTMAX, 3, 700, 5}, {LOG_SOFTMAX, 2, 1500, 1}, {LAYER, 2, 3000, 1},
      {RMS, 1, 5000, 1},    {LAYER, 5, 40, 1},
  };
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    kind k = cases[ci].k;
    if (!case_begin("types norm_split[cpu] %s [%zu,%zu,%zu]", kind_names[k],
                    cases[ci].outer, cases[ci].len, cases[ci].inner))
      continue;
    size_t n = cases[ci].outer * cases[ci].len * cases[ci].inner;
    size_t len = cases[ci].len;
    float *x = falloc(n), *scale = falloc(len), *bias = falloc(len);
    fill_uniform(x, n, -5, 5, 17);
    fill_uniform(scale, len, -2, 2, 18);
    fill_uniform(bias, len, -1, 1, 19);
    /* 2 bytes of padding in front of each 2-byte operand */
    uint16_t *xh = xmalloc(2 * n + 2), *sh = xmalloc(2 * len + 2),
             *bh = xmalloc(2 * len + 2);
    uint16_t *whole = xmalloc(2 * n + 2), *part = xmalloc(2 * n + 2);
    CHECK_STATUS(wgc_quantize(x, xh + 1, WGC_DTYPE_F16, n), WGC_OK);
    CHECK_STATUS(wgc_quantize(scale, sh + 1, WGC_DTYPE_F16, len), WGC_OK);
    CHECK_STATUS(wgc_quantize(bias, bh + 1, WGC_DTYPE_F16, len), WGC_OK);
    cpu_work w = {.kind = CPU_WORK_NORM};
    w.u.norm = (wgc_norm_args){.kind = (wgc_norm_kind)k,
                               .outer = cases[ci].outer,
                               .len = len,
                               .inner = cases[ci].inner,
                               .epsilon = 1e-5f,
                               .has_scale = k >= LAYER,
                               .has_bias = k == LAYER,
                               .input = {.mem = xh, .offset = 2},
                               .scale = {.mem = sh, .offset = 2},
                               .bias = {.mem = bh, .offset = 2},
                               .output = {.mem = whole, .offset = 2},
                               .input_type = WGC_DTYPE_F16,
                               .output_type = WGC_DTYPE_BF16,
                               .scale_type = WGC_DTYPE_F16,
                               .bias_type = WGC_DTYPE_F16,
                               .fn = "test"};
    CHECK_STATUS(cpu_work_run(ctx, &w), WGC_OK);
    size_t most = check_pieces(ctx, &w, &w.u.norm.output, part, whole, n);
    CHECK(most >= 2, "at most %zu pieces", most);
    free(x), free(scale), free(bias), free(xh), free(sh), free(bh);
    free(whole), free(part);
    case_end();
  }
}

TEST(types_norm_rejected) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types norm rejected"))
      continue;
    float init[256];
    for (int i = 0; i < 256; i++)
      init[i] = sentinel();
    wgc_ptr x = dev_from(ctx, init, 256), o = dev_from(ctx, init, 256),
            p = dev_from(ctx, init, 256);
    const wgc_dtype F32 = WGC_DTYPE_F32, F16 = WGC_DTYPE_F16,
                    BF16 = WGC_DTYPE_BF16;
    size_t sh[2] = {4, 8};
    CHECK_REJECTED(ctx, wgc_softmax_ex(ctx, x, WGC_DTYPE_I32, o, F32, sh, 2, 1),
                   "wgc_softmax_ex", "input_type");
    CHECK(strstr(wgc_last_error(ctx), "i32"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_log_softmax_ex(ctx, x, F16, o, WGC_DTYPE_Q8_0, sh, 2, 1),
                   "wgc_log_softmax_ex", "output_type");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_layer_norm_ex(ctx, x, F16, p, BF16, p, F16, o, F16, sh,
                                     2, 1, 1e-5f),
                   "wgc_layer_norm_ex", "scale_type");
    CHECK(strstr(wgc_last_error(ctx), "bf16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_layer_norm_ex(ctx, x, F16, p, F16, p, (wgc_dtype)17, o,
                                     F16, sh, 2, 1, 1e-5f),
                   "wgc_layer_norm_ex", "bias_type");
    CHECK_REJECTED(ctx,
                   wgc_rms_norm_ex(ctx, x, F32, 0, WGC_DTYPE_Q4_0, o, F32, sh,
                                   2, 1, 1e-5f),
                   "wgc_rms_norm_ex", "scale_type");
    /* misaligned 2-byte operands; in place across types */
    CHECK_REJECTED(ctx, wgc_softmax_ex(ctx, x + 1, F16, o, F16, sh, 2, 1),
                   "wgc_softmax_ex", "input");
    CHECK(strstr(wgc_last_error(ctx), "f16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(
        ctx,
        wgc_rms_norm_ex(ctx, x, BF16, p + 3, F16, o, BF16, sh, 2, 1, 1e-5f),
        "wgc_rms_norm_ex", "scale");
    CHECK_REJECTED(ctx,
                   wgc_log_softmax_ex(ctx, x, F16, o + 1020, BF16, sh, 2, 1),
                   "wgc_log_softmax_ex", "output");
    CHECK_REJECTED(ctx, wgc_softmax_ex(ctx, x, F16, x, F32, sh, 2, 1),
                   "wgc_softmax_ex", "output|input");
    CHECK_DEVICE_EQUALS(ctx, o, init, 256, "output");
    CHECK_DEVICE_EQUALS(ctx, x, init, 256, "input");
    CHECK_DEVICE_EQUALS(ctx, p, init, 256, "scale");
    dev_free(ctx, x);
    dev_free(ctx, o);
    dev_free(ctx, p);
    case_end();
  }
}
