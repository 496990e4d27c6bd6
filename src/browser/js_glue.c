/* Glue for web/wgc.js (wasm32 only): the _async entry points with C
 * callbacks that hand a JavaScript token back through the imports of module
 * "wgc_js", and compile-time checks of the sizes wgc.js assumes. Each op
 * family checks the layout of its own desc, as wgc.js writes it into wasm
 * memory, beside its entry point (src/ops_<family>.c). */
#include "internal.h"
#include "wgc.h"

#include <stddef.h>
#include <stdint.h>

#define JS(name) __attribute__((import_module("wgc_js"), import_name(#name)))
#define EXPORT __attribute__((visibility("default")))

JS(created) void js_created(uint32_t token, int status, wgc_context *ctx);
JS(done) void js_done(uint32_t token, int status);

_Static_assert(sizeof(size_t) == 4 && sizeof(float) == 4 &&
                   sizeof(wgc_backend) == 4 && sizeof(wgc_causal) == 4 &&
                   sizeof(wgc_pool_mode) == 4,
               "wgc.js assumes wasm32 sizes");
_Static_assert(offsetof(wgc_options, backend) == 0 &&
                   offsetof(wgc_options, power) == 4 &&
                   offsetof(wgc_options, cpu_threads) == 8 &&
                   offsetof(wgc_options, max_binding_bytes) == 12 &&
                   offsetof(wgc_options, profile) == 16 &&
                   offsetof(wgc_options, pipeline_cache) == 20 &&
                   sizeof(wgc_options) == 24,
               "wgc.js writes wgc_options as 5 words (pipeline_cache, a "
               "native option, stays NULL)");

static void created(wgc_status s, wgc_context *ctx, void *user) {
  js_created((uint32_t)(uintptr_t)user, (int)s, ctx);
}

static void done(wgc_status s, void *user) {
  js_done((uint32_t)(uintptr_t)user, (int)s);
}

EXPORT wgc_status wgc_js_create_async(const wgc_options *opt, uint32_t token) {
  return wgc_create_async(opt, created, (void *)(uintptr_t)token);
}

EXPORT wgc_status wgc_js_download_async(wgc_context *ctx, void *dst,
                                        wgc_ptr src, size_t bytes,
                                        uint32_t token) {
  return wgc_download_async(ctx, dst, src, bytes, done,
                            (void *)(uintptr_t)token);
}

/* How many errors ctx has recorded (wgc.js's async calls compare it before
 * and after). */
EXPORT uint32_t wgc_js_error_count(const wgc_context *ctx) {
  return ctx ? ctx->error_count : 0;
}

EXPORT wgc_status wgc_js_synchronize_async(wgc_context *ctx, uint32_t token) {
  return wgc_synchronize_async(ctx, done, (void *)(uintptr_t)token);
}

EXPORT wgc_status wgc_js_compile_end_async(wgc_context *ctx, uint32_t token) {
  return wgc_compile_end_async(ctx, done, (void *)(uintptr_t)token);
}

/* wgc.h's op lists by name ("UNARY_RELU") and value, for the browser test
 * that checks wgc.js's constants against them. */
typedef struct op_constant {
  const char *name;
  int value;
} op_constant;

static const op_constant op_constants[] = {
#define OP_REDUCE_(NAME, name) {"REDUCE_" #NAME, WGC_REDUCE_##NAME},
#define OP_UNARY_(NAME, name) {"UNARY_" #NAME, WGC_UNARY_##NAME},
#define OP_BINARY_(NAME, name) {"BINARY_" #NAME, WGC_BINARY_##NAME},
#define OP_DTYPE_(NAME, name) {"DTYPE_" #NAME, WGC_DTYPE_##NAME},
    WGC_REDUCE_OPS(OP_REDUCE_) WGC_UNARY_OPS(OP_UNARY_)
        WGC_BINARY_OPS(OP_BINARY_) WGC_DTYPES(OP_DTYPE_)
#undef OP_REDUCE_
#undef OP_UNARY_
#undef OP_BINARY_
#undef OP_DTYPE_
};
_Static_assert(sizeof op_constants / sizeof *op_constants ==
                   WGC_REDUCE_OP_COUNT + WGC_UNARY_OP_COUNT +
                       WGC_BINARY_OP_COUNT + WGC_DTYPE_COUNT,
               "one constant per op");

/* The name of constant i, or NULL past the last. */
EXPORT const char *wgc_js_op_name(uint32_t i) {
  return i < sizeof op_constants / sizeof *op_constants ? op_constants[i].name
                                                        : NULL;
}

/* The value of constant i, or -1 past the last. */
EXPORT int wgc_js_op_value(uint32_t i) {
  return i < sizeof op_constants / sizeof *op_constants ? op_constants[i].value
                                                        : -1;
}
