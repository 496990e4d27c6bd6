/* The public function is named once, in the front end: a backend that fails
 * reports with the name the front end hands it, so an error of
 * wgc_binary_broadcast reads "wgc_binary_broadcast: ..." and one of
 * wgc_gemm_batched with a single batch "wgc_gemm_batched: ...". A spy
 * backend (the CPU backend with its ops replaced) fails every op with the
 * name it received. */
#include "harness.h"
#include "util.h"

#include "internal.h"

#include <stdio.h>
#include <string.h>

static wgc_status spy_gemm(wgc_context *ctx, const wgc_gemm_args *a) {
  return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: spy", a->fn);
}
static wgc_status spy_conv2d(wgc_context *ctx, const wgc_conv2d_args *a) {
  return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: spy", a->fn);
}
static wgc_status spy_attention(wgc_context *ctx, const wgc_attention_args *a) {
  return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: spy", a->fn);
}
static wgc_status spy_reduce(wgc_context *ctx, const wgc_reduce_args *a) {
  return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: spy", a->fn);
}
static wgc_status spy_unary(wgc_context *ctx, const wgc_unary_args *a) {
  return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: spy", a->fn);
}
static wgc_status spy_binary(wgc_context *ctx, const wgc_binary_args *a) {
  return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: spy", a->fn);
}

static void expect(wgc_context *ctx, wgc_status s, const char *fn) {
  CHECK(s == WGC_ERR_DEVICE, "%s returned %s: %s", fn, wgc_status_name(s),
        wgc_last_error(ctx));
  char want[64];
  snprintf(want, sizeof want, "%s: spy", fn);
  CHECK(!strcmp(wgc_last_error(ctx), want), "%s reported \"%s\", want \"%s\"",
        fn, wgc_last_error(ctx), want);
}

TEST(fn_names_backend_errors) {
  if (!case_begin("fn_names: a backend's error names the function called"))
    return;
  wgc_options opt = {.backend = WGC_BACKEND_CPU};
  wgc_context *ctx = NULL;
  CHECK_STATUS(wgc_create(&opt, &ctx), WGC_OK);
  wgc_ptr x = ctx ? dev_alloc(ctx, 4096) : 0;
  wgc_ptr y = ctx ? dev_alloc(ctx, 4096) : 0;
  wgc_ptr z = ctx ? dev_alloc(ctx, 4096) : 0;
  if (x && y && z) {
    const wgc_backend_ops *real = ctx->be;
    wgc_backend_ops spy = *real;
    spy.gemm = spy_gemm;
    spy.conv2d = spy_conv2d;
    spy.attention = spy_attention;
    spy.reduce = spy_reduce;
    spy.unary = spy_unary;
    spy.binary = spy_binary;
    ctx->be = &spy;

    expect(ctx,
           wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 4, 4, 4,
                    1.0f, x, 4, y, 4, 0.0f, z, 4),
           "wgc_gemm");
    /* one batch, strides 0: only the name tells it from wgc_gemm */
    expect(ctx,
           wgc_gemm_batched(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 4,
                            4, 4, 1.0f, x, 4, 0, y, 4, 0, 0.0f, z, 4, 0, 1),
           "wgc_gemm_batched");
    wgc_conv2d_desc cd = {
        .n = 1, .c = 1, .h = 4, .w = 4, .k = 1, .r = 3, .s = 3};
    expect(ctx, wgc_conv2d(ctx, &cd, x, y, 0, z), "wgc_conv2d");
    wgc_attention_desc ad = {.batch = 1,
                             .heads = 1,
                             .seq_q = 4,
                             .seq_kv = 4,
                             .head_dim = 4,
                             .scale = 0.5f};
    expect(ctx, wgc_attention(ctx, &ad, x, y, y, z), "wgc_attention");
    size_t shape[2] = {4, 4};
    expect(ctx, wgc_reduce(ctx, WGC_REDUCE_SUM, x, z, shape, 2, 1),
           "wgc_reduce");
    const size_t both[2] = {0, 1};
    expect(ctx, wgc_reduce_axes(ctx, WGC_REDUCE_SUM, x, z, shape, 2, both, 2),
           "wgc_reduce_axes");
    expect(ctx, wgc_argmax(ctx, x, z, shape, 2, 1), "wgc_argmax");
    expect(ctx, wgc_argmin(ctx, x, z, shape, 2, 1), "wgc_argmin");
    expect(ctx, wgc_unary(ctx, WGC_UNARY_NEG, x, z, 16), "wgc_unary");
    expect(ctx, wgc_unary_params(ctx, WGC_UNARY_CLIP, 0, 1, x, z, 16),
           "wgc_unary_params");
    expect(ctx, wgc_binary(ctx, WGC_BINARY_ADD, x, y, z, 16), "wgc_binary");
    expect(ctx,
           wgc_binary_broadcast(ctx, WGC_BINARY_ADD, x, shape, 2, y, shape + 1,
                                1, z),
           "wgc_binary_broadcast");
    ctx->be = real;
  }
  wgc_destroy(ctx);
  case_end();
}
