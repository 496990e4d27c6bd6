/* pool2d entry points: desc defaults and checks, footprints, dispatch. */
#include "internal.h"

#include "validate.h"

/* The browser build: wgc.js writes wgc_pool2d_desc into wasm memory field by
 * field (4-byte fields, 8-byte device addresses, in declaration order). */
#if UINTPTR_MAX == UINT32_MAX
#include <stddef.h>
_Static_assert(offsetof(wgc_pool2d_desc, n) == 0 &&
                   offsetof(wgc_pool2d_desc, r) == 16 &&
                   offsetof(wgc_pool2d_desc, stride_h) == 24 &&
                   offsetof(wgc_pool2d_desc, pad_h) == 32 &&
                   offsetof(wgc_pool2d_desc, dilation_h) == 40 &&
                   offsetof(wgc_pool2d_desc, mode) == 48 &&
                   offsetof(wgc_pool2d_desc, count_include_pad) == 52 &&
                   offsetof(wgc_pool2d_desc, input_type) == 56 &&
                   offsetof(wgc_pool2d_desc, output_type) == 60 &&
                   sizeof(wgc_pool2d_desc) == 64,
               "wgc.js writes wgc_pool2d_desc as 16 words");
_Static_assert(WGC_POOL_MAX == 0 && WGC_POOL_AVG == 1,
               "wgc.js exports POOL_MAX = 0 and POOL_AVG = 1");
#endif

#define INDEX_LIMIT 0x7fffffffu /* kernels form indices below 2^31 */

/* Applies defaults and checks d; ctx may be NULL (errors go to the thread
 * slot). On success fills the defaulted desc and the output size. */
static wgc_status pool_desc(wgc_context *ctx, const char *fn,
                            const wgc_pool2d_desc *in, wgc_pool2d_desc *d,
                            size_t *p, size_t *q) {
  if (!in)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: d is NULL", fn);
  *d = *in;
  if (d->mode != WGC_POOL_MAX && d->mode != WGC_POOL_AVG)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->mode %d is not a wgc_pool_mode", fn, (int)d->mode);
  wgc_window2d win = {.h = d->h,
                      .w = d->w,
                      .r = d->r,
                      .s = d->s,
                      .pad_h = d->pad_h,
                      .pad_w = d->pad_w,
                      .stride_h = &d->stride_h,
                      .stride_w = &d->stride_w,
                      .dilation_h = &d->dilation_h,
                      .dilation_w = &d->dilation_w};
  return wgc_window2d_size(ctx, fn, &win, INDEX_LIMIT, p, q);
}

wgc_status wgc_pool2d_output_size(const wgc_pool2d_desc *d, size_t *p,
                                  size_t *q) {
  if (!p || !q)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_pool2d_output_size: %s is NULL", p ? "q" : "p");
  wgc_pool2d_desc full;
  return pool_desc(NULL, "wgc_pool2d_output_size", d, &full, p, q);
}

wgc_status wgc_pool2d(wgc_context *ctx, const wgc_pool2d_desc *d, wgc_ptr input,
                      wgc_ptr output) {
  const char *fn = "wgc_pool2d";
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  wgc_pool2d_args a = {.fn = fn};
  wgc_status s = pool_desc(ctx, fn, d, &a.d, &a.p, &a.q);
  if (s != WGC_OK)
    return s;
  const wgc_pool2d_desc *c = &a.d;
  size_t in_n, out_n;
  size_t in_dims[] = {c->n, c->c, c->h, c->w};
  size_t out_dims[] = {c->n, c->c, a.p, a.q};
  if (!wgc_product(in_dims, 4, &in_n) || !wgc_product(out_dims, 4, &out_n) ||
      in_n > INDEX_LIMIT || out_n > INDEX_LIMIT)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d describes tensors of 2^31 elements or more", fn);
  s = wgc_check_float_type(ctx, fn, "d->input_type", c->input_type);
  if (s == WGC_OK)
    s = wgc_check_float_type(ctx, fn, "d->output_type", c->output_type);
  if (s != WGC_OK || out_n == 0)
    return s;
  wgc_operand ops[2] = {
      wgc_float_operand("input", input, c->input_type, in_n),
      wgc_float_operand("output", output, c->output_type, out_n)};
  s = wgc_check_float_operand(ctx, fn, &ops[0], c->input_type);
  if (s == WGC_OK)
    s = wgc_check_float_operand(ctx, fn, &ops[1], c->output_type);
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, fn, &ops[1], &ops[0], false);
  if (s != WGC_OK)
    return s;
  a.input = ops[0].ref;
  a.output = ops[1].ref;
  return ctx->be->pool2d(ctx, &a);
}
