/* conv2d and pool2d with f16 and bf16 operands (the desc's type fields)
 * on both backends against float64 loops of the decoded inputs: the f32
 * bound plus half a unit in the last place of the output type; every
 * input x filter x output type of conv2d with f32 and f16 biases, direct
 * and implicit-GEMM forms, groups; every input x output type of MAX and
 * AVG pooling; NaN inputs, f16 overflow to inf, subnormal f16 inputs;
 * 2-byte operands 2 bytes into a word; sums split over 4 KiB bindings
 * (tap ranges and window chunks held in f32 scratch for a 2-byte output);
 * the CPU backend's pieces; and the rejected types, which write nothing. */
#include "ops_ref.h"
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

/* The decoded values of a typed operand, as floats (exact). */
static float *decoded(const tbuf *b) {
  float *x = falloc(b->n + 1);
  for (size_t i = 0; i < b->n; i++)
    x[i] = (float)tbuf_val(b, i);
  return x;
}

/* The largest finite |x[i]|. */
static double max_finite(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i]))
      m = fmax(m, fabs(x[i]));
  return m;
}

/* ---- conv2d ------------------------------------------------------------ */

/* One typed conv of d (types in it) on ctx: inputs uniform in [-1, 1]
 * times scale, a NaN and an f16 subnormal planted in the input; returns
 * the worst error against the bound. */
static double conv_case(wgc_context *ctx, wgc_conv2d_desc d, bool has_bias,
                        float scale, unsigned seed) {
  size_t p, q;
  CHECK(ref_conv2d_size(&d, &p, &q), "valid desc");
  size_t g = d.groups ? d.groups : 1, cg = d.c / g, K = cg * d.r * d.s;
  size_t in_n = d.n * d.c * d.h * d.w, f_n = d.k * K, out_n = d.n * d.k * p * q;
  float *x = falloc(in_n), *f = falloc(f_n), *b = falloc(d.k);
  fill_uniform(x, in_n, -scale, scale, seed);
  fill_uniform(f, f_n, -1, 1, seed + 1);
  fill_uniform(b, d.k, -1, 1, seed + 2);
  x[in_n / 2] = NAN;
  x[in_n / 3] = 3.5e-6f;
  tbuf tx = tbuf_make(ctx, d.input_type, x, in_n);
  tbuf tf = tbuf_make(ctx, d.filter_type, f, f_n);
  tbuf tb = tbuf_make(ctx, d.bias_type, b, d.k);
  tbuf ty = tbuf_make(ctx, d.output_type, NULL, out_n);
  float *xd = decoded(&tx), *fd = decoded(&tf), *bd = decoded(&tb);
  double *want = dalloc(out_n), worst = 0;
  ref_conv2d(&d, xd, fd, has_bias ? bd : NULL, want);
  double bound = 1e-5 * (double)K * max_finite(xd, in_n) * max_finite(fd, f_n) +
                 (has_bias ? 1e-6 * max_finite(bd, d.k) : 0);
  char what[160];
  snprintf(what, sizeof what,
           "conv2d in %s filter %s bias %s out %s [%zu,%zu,%zu,%zu] k=%zu "
           "groups=%zu",
           wgc_dtype_name(d.input_type), wgc_dtype_name(d.filter_type),
           has_bias ? wgc_dtype_name(d.bias_type) : "none",
           wgc_dtype_name(d.output_type), d.n, d.c, d.h, d.w, d.k, g);
  if (tx.dev && tf.dev && tb.dev && ty.dev) {
    CHECK_OK(ctx, wgc_conv2d(ctx, &d, tx.dev + tx.off, tf.dev + tf.off,
                             has_bias ? tb.dev + tb.off : 0, ty.dev + ty.off));
    worst = check_out(ctx, &ty, want, 0, bound, what);
  }
  tbuf_free(ctx, &tx);
  tbuf_free(ctx, &tf);
  tbuf_free(ctx, &tb);
  tbuf_free(ctx, &ty);
  free(x), free(f), free(b), free(xd), free(fd), free(bd), free(want);
  return worst;
}

static wgc_conv2d_desc conv_desc(int shape, int types) {
  static const wgc_conv2d_desc shapes[] = {
      /* direct (few channels per group) */
      {.n = 2,
       .c = 3,
       .h = 9,
       .w = 11,
       .k = 4,
       .r = 3,
       .s = 3,
       .pad_h = 1,
       .pad_w = 1},
      /* implicit GEMM, strided and dilated */
      {.n = 1,
       .c = 8,
       .h = 10,
       .w = 9,
       .k = 16,
       .r = 3,
       .s = 2,
       .stride_h = 2,
       .pad_h = 1,
       .pad_w = 2,
       .dilation_w = 2},
      /* groups */
      {.n = 1,
       .c = 8,
       .h = 7,
       .w = 7,
       .k = 16,
       .r = 3,
       .s = 3,
       .pad_h = 1,
       .pad_w = 1,
       .groups = 2},
  };
  wgc_conv2d_desc d = shapes[shape % 3];
  d.input_type = TYPES[types / 9];
  d.filter_type = TYPES[types / 3 % 3];
  d.output_type = TYPES[types % 3];
  d.bias_type = TYPES[types % 2];
  return d;
}

TEST(types_conv2d) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types conv2d"))
      continue;
    double worst[3] = {0};
    for (int t = 0; t < 27; t++) {
      wgc_conv2d_desc d = conv_desc(t, t);
      double e = conv_case(ctx, d, t % 4 != 3, 1.0f, (unsigned)t + 3);
      worst[t % 3] = fmax(worst[t % 3], e);
    }
    /* sums beyond 65520: an f16 output overflows to inf */
    for (int o = 0; o < 3; o++) {
      wgc_conv2d_desc d = conv_desc(1, 9 + o);
      conv_case(ctx, d, true, 2000.0f, 77);
    }
    case_note(" worst/bound f32 %.2f f16 %.2f bf16 %.2f", worst[0], worst[1],
              worst[2]);
    case_end();
  }
}

/* Operand windows beyond 4 KiB bindings: pieces of the output and tap
 * ranges that add up (in f32 scratch for a 2-byte output). */
TEST(types_conv2d_split) {
  if (!case_begin("types conv2d split[webgpu] 4 KiB bindings"))
    return;
  wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 4096);
  if (ctx) {
    wgc_conv2d_desc d = {.n = 2,
                         .c = 16,
                         .h = 12,
                         .w = 12,
                         .k = 16,
                         .r = 3,
                         .s = 3,
                         .pad_h = 1,
                         .pad_w = 1};
    for (int t = 1; t < 9; t++) {
      d.input_type = TYPES[t / 3];
      d.filter_type = TYPES[(t + 1) % 3];
      d.output_type = TYPES[t % 3];
      d.bias_type = TYPES[t % 2];
      conv_case(ctx, d, true, 1.0f, (unsigned)t + 40);
    }
    wgc_destroy(ctx);
  }
  case_end();
}

/* The CPU backend's pieces (runs of channels; rows of a plane gathered
 * from a typed input) give the whole call's bits. */
TEST(types_conv2d_cpu_split) {
  if (!case_begin("types conv2d split[cpu] pieces"))
    return;
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  wgc_conv2d_desc d = {.n = 2,
                       .c = 4,
                       .h = 20,
                       .w = 20,
                       .k = 6,
                       .r = 3,
                       .s = 3,
                       .stride_h = 1,
                       .stride_w = 1,
                       .pad_h = 1,
                       .pad_w = 1,
                       .dilation_h = 1,
                       .dilation_w = 1,
                       .groups = 2,
                       .input_type = WGC_DTYPE_F16,
                       .filter_type = WGC_DTYPE_BF16,
                       .bias_type = WGC_DTYPE_F16,
                       .output_type = WGC_DTYPE_F16};
  size_t in_n = 2 * 4 * 400, f_n = 6 * 2 * 9, out_n = 2 * 6 * 400;
  float *x = falloc(in_n), *f = falloc(f_n), *b = falloc(6);
  fill_uniform(x, in_n, -1, 1, 1);
  fill_uniform(f, f_n, -1, 1, 2);
  fill_uniform(b, 6, -1, 1, 3);
  uint16_t *xh = xmalloc(2 * in_n + 2), *fh = xmalloc(2 * f_n + 2),
           *bh = xmalloc(14), *whole = xmalloc(2 * out_n + 2),
           *part = xmalloc(2 * out_n + 2);
  CHECK_STATUS(wgc_quantize(x, xh + 1, WGC_DTYPE_F16, in_n), WGC_OK);
  CHECK_STATUS(wgc_quantize(f, fh + 1, WGC_DTYPE_BF16, f_n), WGC_OK);
  CHECK_STATUS(wgc_quantize(b, bh + 1, WGC_DTYPE_F16, 6), WGC_OK);
  cpu_work w = {.kind = CPU_WORK_CONV2D};
  w.u.conv2d = (wgc_conv2d_args){.d = d,
                                 .p = 20,
                                 .q = 20,
                                 .input = {.mem = xh, .offset = 2},
                                 .filter = {.mem = fh, .offset = 2},
                                 .bias = {.mem = bh, .offset = 2},
                                 .output = {.mem = whole, .offset = 2},
                                 .has_bias = true,
                                 .fn = "test"};
  CHECK_STATUS(cpu_work_run(ctx, &w), WGC_OK);
  size_t most = check_pieces(ctx, &w, &w.u.conv2d.output, part, whole, out_n);
  CHECK(most >= 2, "at most %zu pieces", most);
  free(x), free(f), free(b), free(xh), free(fh), free(bh), free(whole),
      free(part);
  case_end();
}

/* ---- pool2d ------------------------------------------------------------ */

static double pool_case(wgc_context *ctx, wgc_pool2d_desc d, float scale,
                        unsigned seed) {
  size_t p, q;
  ref_pool2d_size(&d, &p, &q);
  size_t in_n = d.n * d.c * d.h * d.w, out_n = d.n * d.c * p * q;
  float *x = falloc(in_n);
  fill_uniform(x, in_n, -scale, scale, seed);
  x[in_n / 2] = NAN;
  x[in_n / 3] = 3.5e-6f;
  tbuf tx = tbuf_make(ctx, d.input_type, x, in_n);
  tbuf ty = tbuf_make(ctx, d.output_type, NULL, out_n);
  float *xd = decoded(&tx);
  double *want = dalloc(out_n), *tol = dalloc(out_n), worst = 0;
  ref_pool2d(&d, xd, want, tol, NULL);
  char what[160];
  snprintf(what, sizeof what, "pool2d %s %s->%s [%zu,%zu,%zu,%zu] r=%zu s=%zu",
           d.mode == WGC_POOL_MAX ? "max" : "avg", wgc_dtype_name(d.input_type),
           wgc_dtype_name(d.output_type), d.n, d.c, d.h, d.w, d.r, d.s);
  if (tx.dev && ty.dev) {
    CHECK_OK(ctx, wgc_pool2d(ctx, &d, tx.dev + tx.off, ty.dev + ty.off));
    worst = check_out_tol(ctx, &ty, want, tol, what);
  }
  tbuf_free(ctx, &tx);
  tbuf_free(ctx, &ty);
  free(x), free(xd), free(want), free(tol);
  return worst;
}

TEST(types_pool2d) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types pool2d"))
      continue;
    double worst[3] = {0};
    for (int t = 0; t < 18; t++) {
      wgc_pool2d_desc d = {.n = 2,
                           .c = 3,
                           .h = 9,
                           .w = 11,
                           .r = 3,
                           .s = 2,
                           .stride_h = 2,
                           .pad_h = 1,
                           .pad_w = 1,
                           .dilation_w = t % 4 == 1 ? 2 : 1,
                           .mode = t % 2 ? WGC_POOL_AVG : WGC_POOL_MAX,
                           .count_include_pad = t % 4 == 3,
                           .input_type = TYPES[t / 6],
                           .output_type = TYPES[t / 2 % 3]};
      double e = pool_case(ctx, d, 4.0f, (unsigned)t + 5);
      worst[t / 2 % 3] = fmax(worst[t / 2 % 3], e);
      /* values beyond 65520: an f16 output (or input) is inf */
      pool_case(ctx, d, 90000.0f, (unsigned)t + 50);
    }
    case_note(" worst/bound f32 %.2f f16 %.2f bf16 %.2f", worst[0], worst[1],
              worst[2]);
    case_end();
  }
}

/* 2-byte outputs from a word's start: odd and even counts, and rows split
 * over launches by 4 KiB bindings so that a launch's first and last words
 * are half its own. */
TEST(types_pool2d_word_start) {
  for (int bi = 0; bi < 3; bi++) {
    wgc_context *ctx;
    if (bi < 2 ? !backend_case(bi, &ctx, "types pool2d from a word's start")
               : !case_begin("types pool2d from a word's start[webgpu] 4 KiB "
                             "bindings"))
      continue;
    if (bi == 2 && !(ctx = new_ctx(WGC_BACKEND_WEBGPU, 4096))) {
      case_end();
      continue;
    }
    size_t was = tbuf_half_offset(8);
    for (int t = 0; t < 8; t++) {
      wgc_pool2d_desc d = {.n = 1,
                           .c = bi == 2 ? 2 : 3,
                           .h = bi == 2 ? 40 : 9,
                           .w = bi == 2 ? 43 : 11, /* 4 KiB: 11 rows of 41 */
                           .r = 3,
                           .s = 3,
                           .pad_h = 1,
                           .dilation_w = bi < 2 && t % 4 < 2 ? 2 : 1,
                           .mode = t % 2 ? WGC_POOL_AVG : WGC_POOL_MAX,
                           .input_type = TYPES[t % 3],
                           .output_type = TYPES[1 + t / 4]};
      pool_case(ctx, d, 4.0f, (unsigned)t + 70);
    }
    tbuf_half_offset(was);
    if (bi == 2)
      wgc_destroy(ctx);
    case_end();
  }
}

/* A window whose input span passes a 4 KiB binding: chunks of window rows
 * that fold into the output (in f32 scratch for a 2-byte output). */
TEST(types_pool2d_split) {
  if (!case_begin("types pool2d split[webgpu] 4 KiB bindings"))
    return;
  wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 4096);
  if (ctx) {
    for (int t = 0; t < 12; t++) {
      wgc_pool2d_desc d = {.n = 1,
                           .c = 2,
                           .h = 40,
                           .w = 40,
                           .r = 30,
                           .s = 30,
                           .stride_h = 5,
                           .stride_w = 5,
                           .mode = t % 2 ? WGC_POOL_AVG : WGC_POOL_MAX,
                           .input_type = TYPES[t / 2 % 3],
                           .output_type = TYPES[(t / 2 + t / 6) % 3]};
      pool_case(ctx, d, 4.0f, (unsigned)t + 90);
    }
    wgc_destroy(ctx);
  }
  case_end();
}

TEST(types_pool2d_cpu_split) {
  if (!case_begin("types pool2d split[cpu] pieces"))
    return;
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  size_t in_n = 3 * 30 * 30, out_n = 3 * 28 * 28;
  float *x = falloc(in_n);
  fill_uniform(x, in_n, -3, 3, 8);
  uint16_t *xh = xmalloc(2 * in_n + 2), *whole = xmalloc(2 * out_n + 2),
           *part = xmalloc(2 * out_n + 2);
  CHECK_STATUS(wgc_quantize(x, xh + 1, WGC_DTYPE_BF16, in_n), WGC_OK);
  for (int mode = 0; mode < 2; mode++) {
    cpu_work w = {.kind = CPU_WORK_POOL2D};
    w.u.pool2d = (wgc_pool2d_args){.d = {.n = 1,
                                         .c = 3,
                                         .h = 30,
                                         .w = 30,
                                         .r = 3,
                                         .s = 3,
                                         .stride_h = 1,
                                         .stride_w = 1,
                                         .dilation_h = 1,
                                         .dilation_w = 1,
                                         .mode = (wgc_pool_mode)mode,
                                         .input_type = WGC_DTYPE_BF16,
                                         .output_type = WGC_DTYPE_F16},
                                   .p = 28,
                                   .q = 28,
                                   .input = {.mem = xh, .offset = 2},
                                   .output = {.mem = whole, .offset = 2},
                                   .fn = "test"};
    CHECK_STATUS(cpu_work_run(ctx, &w), WGC_OK);
    size_t most = check_pieces(ctx, &w, &w.u.pool2d.output, part, whole, out_n);
    CHECK(most >= 2, "at most %zu pieces", most);
  }
  free(x), free(xh), free(whole), free(part);
  case_end();
}

/* ---- rejected types ------------------------------------------------------
 */

TEST(types_conv_pool_rejected) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types conv2d pool2d rejected"))
      continue;
    float init[512];
    for (int i = 0; i < 512; i++)
      init[i] = sentinel();
    wgc_ptr x = dev_from(ctx, init, 512), f = dev_from(ctx, init, 512),
            o = dev_from(ctx, init, 512);
    const char *cf = "wgc_conv2d", *pf = "wgc_pool2d";
    wgc_conv2d_desc c = {.n = 1,
                         .c = 2,
                         .h = 6,
                         .w = 6,
                         .k = 4,
                         .r = 3,
                         .s = 3,
                         .input_type = WGC_DTYPE_F16,
                         .filter_type = WGC_DTYPE_BF16,
                         .bias_type = WGC_DTYPE_F16,
                         .output_type = WGC_DTYPE_BF16};
    wgc_pool2d_desc p = {.n = 1,
                         .c = 2,
                         .h = 6,
                         .w = 6,
                         .r = 2,
                         .s = 2,
                         .input_type = WGC_DTYPE_BF16,
                         .output_type = WGC_DTYPE_F16};
    CHECK_OK(ctx, wgc_conv2d(ctx, &c, x + 2, f + 2, f + 202, o + 2));
    CHECK_OK(ctx, wgc_pool2d(ctx, &p, x + 2, o + 2));
    CHECK_OK(ctx, wgc_synchronize(ctx));
    dev_write(ctx, o, init, 512);
    wgc_conv2d_desc e = c;
    e.input_type = WGC_DTYPE_I32;
    CHECK_REJECTED(ctx, wgc_conv2d(ctx, &e, x, f, 0, o), cf, "d->input_type");
    CHECK(strstr(wgc_last_error(ctx), "i32"), "names the type: %s",
          wgc_last_error(ctx));
    e = c, e.filter_type = WGC_DTYPE_Q8_0;
    CHECK_REJECTED(ctx, wgc_conv2d(ctx, &e, x, f, 0, o), cf, "d->filter_type");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    e = c, e.bias_type = WGC_DTYPE_BF16; /* checked without a bias too */
    CHECK_REJECTED(ctx, wgc_conv2d(ctx, &e, x, f, 0, o), cf, "d->bias_type");
    CHECK(strstr(wgc_last_error(ctx), "bf16"), "names the type: %s",
          wgc_last_error(ctx));
    e = c, e.output_type = (wgc_dtype)17;
    CHECK_REJECTED(ctx, wgc_conv2d(ctx, &e, x, f, 0, o), cf, "d->output_type");
    CHECK_REJECTED(ctx, wgc_conv2d(ctx, &c, x + 1, f, 0, o), cf, "input");
    CHECK(strstr(wgc_last_error(ctx), "f16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, wgc_conv2d(ctx, &c, x, f, f + 1, o), cf, "bias");
    CHECK_REJECTED(ctx, wgc_conv2d(ctx, &c, x, f, 0, o + 3), cf, "output");
    wgc_pool2d_desc e2 = p;
    e2.input_type = WGC_DTYPE_Q4_0;
    CHECK_REJECTED(ctx, wgc_pool2d(ctx, &e2, x, o), pf, "d->input_type");
    CHECK(strstr(wgc_last_error(ctx), "q4_0"), "names the type: %s",
          wgc_last_error(ctx));
    e2 = p, e2.output_type = WGC_DTYPE_I32;
    CHECK_REJECTED(ctx, wgc_pool2d(ctx, &e2, x, o), pf, "d->output_type");
    CHECK(strstr(wgc_last_error(ctx), "i32"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, wgc_pool2d(ctx, &p, x + 1, o), pf, "input");
    CHECK_REJECTED(ctx, wgc_pool2d(ctx, &p, x, x + 8), pf, "output|input");
    CHECK_DEVICE_EQUALS(ctx, o, init, 512, "output");
    CHECK_DEVICE_EQUALS(ctx, x, init, 512, "input");
    dev_free(ctx, x);
    dev_free(ctx, f);
    dev_free(ctx, o);
    case_end();
  }
}
