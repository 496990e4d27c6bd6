/* What each kernel costs to compile, per adapter: one call of each op
 * family at a MiniLM-sized shape on a new context, in a process of its own
 * with the driver's shader cache off. Its pipelines are created ahead
 * (wgc_compile_begin/_end: "create", what the runtime does at creation:
 * WGSL translation and, on SwiftShader, the machine code), then the call
 * runs twice: lavapipe generates the machine code at the first dispatch,
 * so the first run's excess over the second counts too. */
#include "parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { ROWS = 128, HID = 384, SEQ = 128, HEADS = 12, DH = 32 };

typedef struct compile_bufs {
  wgc_ptr x, y, w, wh, bias, ids, img, out;
} compile_bufs;

typedef wgc_status (*compile_call)(wgc_context *ctx, const compile_bufs *b);

static wgc_status c_gemm(wgc_context *ctx, const compile_bufs *b) {
  wgc_gemm_epilogue ep = {.bias = b->bias, .activation = WGC_ACTIVATION_GELU};
  return wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, ROWS, HID,
                     HID, 1.0f, b->x, HID, b->w, HID, 0.0f, b->y, HID, &ep);
}
static wgc_status c_gemm_f16(wgc_context *ctx, const compile_bufs *b) {
  wgc_gemm_epilogue ep = {.b_type = WGC_DTYPE_F16};
  return wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, ROWS, HID,
                     HID, 1.0f, b->x, HID, b->wh, HID, 0.0f, b->y, HID, &ep);
}
static wgc_status c_attention(wgc_context *ctx, const compile_bufs *b) {
  wgc_attention_desc d = {.batch = 1,
                          .heads = HEADS,
                          .seq_q = SEQ,
                          .seq_kv = SEQ,
                          .head_dim = DH,
                          .scale = 0.17677669f,
                          .mask = b->bias,
                          .mask_stride = {0, 0, 0}};
  return wgc_attention(ctx, &d, b->x, b->w, b->w, b->y);
}
static wgc_status c_layer_norm(wgc_context *ctx, const compile_bufs *b) {
  size_t shape[2] = {ROWS, HID};
  return wgc_layer_norm(ctx, b->x, b->bias, b->bias, b->y, shape, 2, 1, 1e-12f);
}
static wgc_status c_softmax(wgc_context *ctx, const compile_bufs *b) {
  size_t shape[2] = {ROWS, HID};
  return wgc_softmax(ctx, b->x, b->y, shape, 2, 1);
}
static wgc_status c_gelu(wgc_context *ctx, const compile_bufs *b) {
  return wgc_unary(ctx, WGC_UNARY_GELU, b->x, b->y, ROWS * HID);
}
static wgc_status c_add(wgc_context *ctx, const compile_bufs *b) {
  return wgc_binary(ctx, WGC_BINARY_ADD, b->x, b->w, b->y, ROWS * HID);
}
static wgc_status c_reduce(wgc_context *ctx, const compile_bufs *b) {
  size_t shape[2] = {ROWS, HID};
  return wgc_reduce(ctx, WGC_REDUCE_L2, b->x, b->y, shape, 2, 1);
}
static wgc_status c_gather(wgc_context *ctx, const compile_bufs *b) {
  size_t shape[2] = {HID, HID};
  return wgc_gather(ctx, b->w, shape, 2, 0, b->ids, ROWS, b->y);
}
static wgc_status c_cast(wgc_context *ctx, const compile_bufs *b) {
  return wgc_cast(ctx, b->x, WGC_DTYPE_F32, b->out, WGC_DTYPE_F16, ROWS * HID);
}
static wgc_status c_conv2d(wgc_context *ctx, const compile_bufs *b) {
  wgc_conv2d_desc d = {.n = 1,
                       .c = 16,
                       .h = 32,
                       .w = 32,
                       .k = 16,
                       .r = 3,
                       .s = 3,
                       .pad_h = 1,
                       .pad_w = 1};
  return wgc_conv2d(ctx, &d, b->img, b->w, 0, b->out);
}
static wgc_status c_pool2d(wgc_context *ctx, const compile_bufs *b) {
  wgc_pool2d_desc d = {.n = 1,
                       .c = 16,
                       .h = 32,
                       .w = 32,
                       .r = 3,
                       .s = 3,
                       .pad_h = 1,
                       .pad_w = 1,
                       .mode = WGC_POOL_MAX};
  return wgc_pool2d(ctx, &d, b->img, b->out);
}

static const struct {
  const char *name;
  compile_call call;
} CALLS[] = {
    {"gemm 128x384x384 +bias GELU", c_gemm},
    {"gemm 128x384x384, f16 weights", c_gemm_f16},
    {"attention 12 heads, seq 128, d 32, mask", c_attention},
    {"layer_norm 128x384", c_layer_norm},
    {"softmax 128x384", c_softmax},
    {"unary GELU 49152", c_gelu},
    {"binary ADD 49152", c_add},
    {"reduce L2 rows 128x384", c_reduce},
    {"gather 128 rows of 384", c_gather},
    {"cast f32 -> f16 49152", c_cast},
    {"conv2d 16x32x32, 16 filters 3x3", c_conv2d},
    {"pool2d max 3x3 16x32x32", c_pool2d},
};

static void ok(wgc_context *ctx, wgc_status s, const char *what) {
  if (s != WGC_OK)
    bench_die("%s failed: %s", what, wgc_last_error(ctx));
}

static wgc_ptr zeros(wgc_context *ctx, size_t bytes) {
  wgc_ptr p;
  ok(ctx, wgc_alloc(ctx, bytes, &p), "wgc_alloc");
  return p;
}

static double run_synced(wgc_context *ctx, compile_call call,
                         const compile_bufs *b) {
  double t0 = bench_now();
  ok(ctx, call(ctx, b), "the call");
  ok(ctx, wgc_synchronize(ctx), "wgc_synchronize");
  return bench_now() - t0;
}

void part_compile_costs(void) {
  for (size_t i = 0; i < sizeof CALLS / sizeof *CALLS; i++) {
    wgc_options o = {.backend = WGC_BACKEND_WEBGPU};
    wgc_context *ctx;
    if (wgc_create(&o, &ctx) != WGC_OK)
      bench_die("wgc_create failed: %s", wgc_last_error(NULL));
    size_t big = 4 * (size_t)SEQ * HEADS * DH * 3;
    compile_bufs b = {.x = zeros(ctx, big),
                      .y = zeros(ctx, big),
                      .w = zeros(ctx, big),
                      .wh = zeros(ctx, 2 * (size_t)HID * HID),
                      .bias = zeros(ctx, 4 * (size_t)HID),
                      .ids = zeros(ctx, 4 * (size_t)ROWS),
                      .img = zeros(ctx, 4 * 16 * 34 * 34),
                      .out = zeros(ctx, big)};
    ok(ctx, wgc_synchronize(ctx), "wgc_synchronize");
    double t0 = bench_now();
    ok(ctx, wgc_compile_begin(ctx), "wgc_compile_begin");
    ok(ctx, CALLS[i].call(ctx, &b), CALLS[i].name);
    ok(ctx, wgc_compile_end(ctx), "wgc_compile_end");
    double create = bench_now() - t0;
    double first = run_synced(ctx, CALLS[i].call, &b);
    double again = run_synced(ctx, CALLS[i].call, &b);
    printf("%zu\t%.6f\t%.6f\t%.6f\t%zu\n", i, create, first, again,
           wgc_pipelines_compiled(ctx));
    wgc_destroy(ctx);
  }
}

void compile_cases(void) {
  FILE *f =
      bench_popen_self("MESA_SHADER_CACHE_DISABLE=true", "--compile-costs");
  size_t i, pipes;
  double create, first, again;
  while (fscanf(f, "%zu %lf %lf %lf %zu", &i, &create, &first, &again,
                &pipes) == 5 &&
         i < sizeof CALLS / sizeof *CALLS) {
    double jit = first > again ? first - again : 0.0;
    char name[128];
    snprintf(name, sizeof name, "%s (%zu kernel%s)", CALLS[i].name, pipes,
             pipes == 1 ? "" : "s");
    record("compile", name, "wgc", create + jit, 1, 1, "ms", 0);
    record("compile", name, "wgc:at-creation", create, 1, 1, "ms", 0);
    record("compile", name, "wgc:steady-run", again, 1, 1, "ms", 0);
  }
  if (pclose(f) != 0)
    bench_die("bench_wgc --compile-costs failed");
}
