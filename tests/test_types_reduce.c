/* wgc_reduce_ex and wgc_reduce_axes_ex with f16 and bf16 operands on both
 * backends against float64 (ops_ref.c's reductions of the exactly decoded
 * input, the f32 bound plus half a unit in the last place of the output
 * type): every op with f32, f16 and bf16 input into f32 or the input's
 * type, rows, columns and several axes; a NaN, a subnormal f16, a row
 * whose sum overflows f16; the CPU backend's split pieces with typed
 * operands; and the rejected types, which write nothing. */
#include "dtype_ref.h"
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

/* (input, output) type pairs: f32 or the input's type out. */
static const wgc_dtype PAIRS[5][2] = {
    {WGC_DTYPE_F32, WGC_DTYPE_F32},   {WGC_DTYPE_F16, WGC_DTYPE_F32},
    {WGC_DTYPE_F16, WGC_DTYPE_F16},   {WGC_DTYPE_BF16, WGC_DTYPE_F32},
    {WGC_DTYPE_BF16, WGC_DTYPE_BF16},
};

/* shape 0: [3, 50, 7] over axis 1 (columns); 1: [4, 300] over axis 1
 * (rows; row 3 all 1000, whose sum overflows f16); 2: [3, 4, 5] over axes
 * 0 and 2. */
static void reduce_case(wgc_context *ctx, wgc_reduce_op op, wgc_dtype it,
                        wgc_dtype ot, int form) {
  static const size_t shapes[3][3] = {{3, 50, 7}, {4, 300, 1}, {3, 4, 5}};
  const size_t *sh = shapes[form];
  size_t rank = form == 1 ? 2 : 3, n = sh[0] * sh[1] * sh[2];
  float lo = op == WGC_REDUCE_PROD ? 0.8f : -4.0f,
        hi = op == WGC_REDUCE_PROD ? 1.25f : 4.0f;
  float *x = falloc(n);
  fill_uniform(x, n, lo, hi, 71 + (unsigned)op);
  x[5] = NAN;
  x[9] = 3.5e-6f; /* f16 subnormal */
  if (form == 1)
    for (size_t i = 900; i < 1200; i++)
      x[i] = 1000.0f;
  tbuf in = tbuf_make(ctx, it, x, n);
  /* the decoded input is exact in float */
  float *xd = falloc(n);
  for (size_t i = 0; i < n; i++)
    xd[i] = (float)tbuf_val(&in, i);
  bool red[3] = {form == 2, form != 2, form == 2};
  size_t out_n = form == 2 ? sh[1] : sh[0] * sh[2], len = n / out_n;
  double *want = dalloc(out_n), *mag = dalloc(out_n), *tol = dalloc(out_n);
  ref_reduce_axes(op, xd, sh, rank, red, want, mag);
  for (size_t i = 0; i < out_n; i++)
    tol[i] = ref_reduce_tol(op, len, want[i], mag[i]);
  tbuf out = tbuf_make(ctx, ot, NULL, out_n);
  char what[96];
  snprintf(what, sizeof what, "reduce %s %s->%s form %d", ref_reduce_name(op),
           wgc_dtype_name(it), wgc_dtype_name(ot), form);
  if (in.dev && out.dev) {
    static const size_t axes[2] = {2, 0};
    wgc_ptr ip = in.dev + in.off, op_ = out.dev + out.off;
    if (form == 2)
      CHECK_OK(ctx,
               wgc_reduce_axes_ex(ctx, op, ip, it, op_, ot, sh, rank, axes, 2));
    else
      CHECK_OK(ctx, wgc_reduce_ex(ctx, op, ip, it, op_, ot, sh, rank, 1));
    check_out_tol(ctx, &out, want, tol, what);
  }
  tbuf_free(ctx, &in);
  tbuf_free(ctx, &out);
  free(x), free(xd), free(want), free(mag), free(tol);
}

TEST(types_reduce) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types reduce"))
      continue;
    /* every op with every type pair; the forms by turns */
    for (int op = 0; op < WGC_REDUCE_OP_COUNT; op++)
      for (int c = 0; c < 5; c++)
        reduce_case(ctx, (wgc_reduce_op)op, PAIRS[c][0], PAIRS[c][1],
                    (op + c) % 3);
    case_end();
  }
}

/* The CPU backend's pieces of a typed reduction compute exactly what the
 * whole call does: f16 input 2 bytes into a word, f16 output 2 bytes in. */
TEST(types_reduce_cpu_split) {
  static const struct {
    wgc_reduce_op op;
    size_t shape[3];
    bool multi;
  } cases[] = {
      {WGC_REDUCE_SUM, {3, 700, 5}, false},
      {WGC_REDUCE_MAX, {2, 5000, 1}, false},
      {WGC_REDUCE_L2, {6, 40, 3}, false},
      {WGC_REDUCE_MEAN, {30, 7, 40}, true},
  };
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const size_t *sh = cases[ci].shape;
    if (!case_begin("types reduce_split[cpu] %s [%zu,%zu,%zu]%s",
                    ref_reduce_name(cases[ci].op), sh[0], sh[1], sh[2],
                    cases[ci].multi ? " axes 0, 2" : ""))
      continue;
    size_t n = sh[0] * sh[1] * sh[2];
    wgc_reduce_args r = {.op = cases[ci].op,
                         .input_type = WGC_DTYPE_F16,
                         .output_type = WGC_DTYPE_F16,
                         .fn = "test"};
    if (cases[ci].multi) {
      r.nd = 3;
      for (int d = 0; d < 3; d++)
        r.dims[d] = sh[d];
      r.red[0] = r.red[2] = true;
      r.outer = sh[1];
      r.len = sh[0] * sh[2];
      r.inner = 1;
    } else {
      r.outer = sh[0];
      r.len = sh[1];
      r.inner = sh[2];
    }
    size_t out_n = r.outer * r.inner;
    float *x = falloc(n);
    fill_uniform(x, n, -5, 5, 23);
    uint16_t *xh = xmalloc(2 * n + 2), *whole = xmalloc(2 * out_n + 2),
             *part = xmalloc(2 * out_n + 2);
    CHECK_STATUS(wgc_quantize(x, xh + 1, WGC_DTYPE_F16, n), WGC_OK);
    cpu_work w = {.kind = CPU_WORK_REDUCE};
    r.input = (wgc_ref){.mem = xh, .offset = 2};
    r.output = (wgc_ref){.mem = whole, .offset = 2};
    w.u.reduce = r;
    CHECK_STATUS(cpu_work_run(ctx, &w), WGC_OK);
    size_t most = check_pieces(ctx, &w, &w.u.reduce.output, part, whole, out_n);
    CHECK(most >= 2, "at most %zu pieces", most);
    free(x), free(xh), free(whole), free(part);
    case_end();
  }
}

TEST(types_reduce_rejected) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types reduce rejected"))
      continue;
    float init[64];
    for (int i = 0; i < 64; i++)
      init[i] = sentinel();
    wgc_ptr x = dev_from(ctx, init, 64), o = dev_from(ctx, init, 64);
    const wgc_dtype F32 = WGC_DTYPE_F32, F16 = WGC_DTYPE_F16,
                    BF16 = WGC_DTYPE_BF16;
    size_t sh[2] = {4, 8}, axes[1] = {1};
    CHECK_REJECTED(
        ctx,
        wgc_reduce_ex(ctx, WGC_REDUCE_SUM, x, WGC_DTYPE_Q8_0, o, F32, sh, 2, 1),
        "wgc_reduce_ex", "input_type");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(
        ctx, wgc_reduce_ex(ctx, WGC_REDUCE_SUM, x, F16, o, BF16, sh, 2, 1),
        "wgc_reduce_ex", "output_type");
    CHECK(strstr(wgc_last_error(ctx), "bf16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_reduce_ex(ctx, WGC_REDUCE_SUM, x, F32, o, F16, sh, 2, 1),
                   "wgc_reduce_ex", "output_type");
    CHECK_REJECTED(ctx,
                   wgc_reduce_axes_ex(ctx, WGC_REDUCE_MAX, x, WGC_DTYPE_I32, o,
                                      F32, sh, 2, axes, 1),
                   "wgc_reduce_axes_ex", "input_type");
    CHECK_REJECTED(
        ctx, wgc_reduce_ex(ctx, WGC_REDUCE_MAX, x + 1, BF16, o, F32, sh, 2, 1),
        "wgc_reduce_ex", "input");
    CHECK(strstr(wgc_last_error(ctx), "bf16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_reduce_axes_ex(ctx, WGC_REDUCE_MAX, x, F16, o + 3, F16,
                                      sh, 2, axes, 1),
                   "wgc_reduce_axes_ex", "output");
    CHECK_DEVICE_EQUALS(ctx, o, init, 64, "output");
    CHECK_DEVICE_EQUALS(ctx, x, init, 64, "input");
    dev_free(ctx, x);
    dev_free(ctx, o);
    case_end();
  }
}

/* Registered after every typed test (constructors run in file order, and
 * this file sorts last of them): each typed op's worst error over its
 * bound per output type, as check_out recorded it. */
TEST(types_accuracy_summary) { accuracy_summary("types ", true); }
