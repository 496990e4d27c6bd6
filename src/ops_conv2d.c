/* conv2d entry points: desc defaults and checks, footprints, dispatch. */
#include "internal.h"

#include "validate.h"

/* The browser build: wgc.js writes wgc_conv2d_desc into wasm memory field by
 * field (4-byte fields, 8-byte device addresses, in declaration order). */
#if UINTPTR_MAX == UINT32_MAX
#include <stddef.h>
_Static_assert(offsetof(wgc_conv2d_desc, n) == 0 &&
                   offsetof(wgc_conv2d_desc, k) == 16 &&
                   offsetof(wgc_conv2d_desc, stride_h) == 28 &&
                   offsetof(wgc_conv2d_desc, pad_h) == 36 &&
                   offsetof(wgc_conv2d_desc, dilation_h) == 44 &&
                   offsetof(wgc_conv2d_desc, groups) == 52 &&
                   offsetof(wgc_conv2d_desc, input_type) == 56 &&
                   offsetof(wgc_conv2d_desc, output_type) == 68 &&
                   sizeof(wgc_conv2d_desc) == 72,
               "wgc.js writes wgc_conv2d_desc as 18 words");
#endif

/* Padded sizes, dilated filter spans and strides below 2^31, as for
 * pool2d: every input coordinate a window reaches then lies in
 * (-2^30, 2^31), exact in the kernels' 32-bit arithmetic. */
#define WINDOW_LIMIT 0x7fffffffu

/* Applies defaults and checks d; ctx may be NULL (errors go to the thread
 * slot). On success fills the defaulted desc and the output size. */
static wgc_status conv_desc(wgc_context *ctx, const char *fn,
                            const wgc_conv2d_desc *in, wgc_conv2d_desc *d,
                            size_t *p, size_t *q) {
  if (!in)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: d is NULL", fn);
  *d = *in;
  if (!d->groups)
    d->groups = 1;
  if (d->c % d->groups || d->k % d->groups)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->groups %zu does not divide d->c %zu and d->k %zu",
                    fn, d->groups, d->c, d->k);
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
  return wgc_window2d_size(ctx, fn, &win, WINDOW_LIMIT, p, q);
}

wgc_status wgc_conv2d_output_size(const wgc_conv2d_desc *d, size_t *p,
                                  size_t *q) {
  if (!p || !q)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_conv2d_output_size: %s is NULL", p ? "q" : "p");
  wgc_conv2d_desc full;
  return conv_desc(NULL, "wgc_conv2d_output_size", d, &full, p, q);
}

wgc_status wgc_conv2d(wgc_context *ctx, const wgc_conv2d_desc *d, wgc_ptr input,
                      wgc_ptr filter, wgc_ptr bias, wgc_ptr output) {
  const char *fn = "wgc_conv2d";
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  wgc_conv2d_args a = {.fn = fn};
  wgc_status s = conv_desc(ctx, fn, d, &a.d, &a.p, &a.q);
  if (s != WGC_OK)
    return s;
  const wgc_conv2d_desc *c = &a.d;
  size_t in_n, f_n, out_n;
  size_t in_dims[] = {c->n, c->c, c->h, c->w};
  size_t f_dims[] = {c->k, c->c / c->groups, c->r, c->s};
  size_t out_dims[] = {c->n, c->k, a.p, a.q};
  if (!wgc_product(in_dims, 4, &in_n) || !wgc_product(f_dims, 4, &f_n) ||
      !wgc_product(out_dims, 4, &out_n) || in_n > SIZE_MAX / 4 ||
      f_n > SIZE_MAX / 4 || out_n > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d describes tensors too large to address", fn);
  s = wgc_check_float_type(ctx, fn, "d->input_type", c->input_type);
  if (s == WGC_OK)
    s = wgc_check_float_type(ctx, fn, "d->filter_type", c->filter_type);
  if (s == WGC_OK)
    s = wgc_check_affine_type(ctx, fn, "d->bias_type", c->bias_type);
  if (s == WGC_OK)
    s = wgc_check_float_type(ctx, fn, "d->output_type", c->output_type);
  if (s != WGC_OK || out_n == 0)
    return s;
  wgc_operand ops[4];
  wgc_dtype types[4];
  size_t count = 0;
  types[count] = c->input_type;
  ops[count++] = wgc_float_operand("input", input, c->input_type, in_n);
  types[count] = c->filter_type;
  ops[count++] = wgc_float_operand("filter", filter, c->filter_type, f_n);
  if (bias) {
    types[count] = c->bias_type;
    ops[count++] = wgc_float_operand("bias", bias, c->bias_type, c->k);
  }
  types[count] = c->output_type;
  ops[count++] = wgc_float_operand("output", output, c->output_type, out_n);
  for (size_t i = 0; i < count && s == WGC_OK; i++)
    s = wgc_check_float_operand(ctx, fn, &ops[i], types[i]);
  for (size_t i = 0; i + 1 < count && s == WGC_OK; i++)
    s = wgc_check_no_overlap(ctx, fn, &ops[count - 1], &ops[i], false);
  if (s != WGC_OK)
    return s;
  a.input = ops[0].ref;
  a.filter = ops[1].ref;
  a.has_bias = bias != 0;
  if (bias)
    a.bias = ops[2].ref;
  a.output = ops[count - 1].ref;
  return ctx->be->conv2d(ctx, &a);
}
