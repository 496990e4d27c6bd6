/* softmax, log-softmax, LayerNorm and RMSNorm entry points: shape checks,
 * footprints, dispatch as one [outer, len, inner] form. */
#include "internal.h"

#include "dtype.h"
#include "validate.h"

#include <math.h>

/* Fills outer, len and inner: softmax normalises axis alone; the norms
 * normalise axes axis..rank-1 together (inner 1). */
static wgc_status norm_shape(wgc_context *ctx, wgc_norm_args *n,
                             const size_t *shape, size_t rank, size_t axis,
                             size_t *total) {
  const char *fn = n->fn;
  if (rank < 1 || rank > WGC_MAX_RANK)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: rank %zu is outside 1..%d", fn, rank, WGC_MAX_RANK);
  if (!shape)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: shape is NULL", fn);
  if (axis >= rank)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: axis %zu is not below rank %zu", fn, axis, rank);
  bool softmax = n->kind == WGC_NORM_SOFTMAX || n->kind == WGC_NORM_LOG_SOFTMAX;
  n->outer = n->len = n->inner = 1;
  bool ok = true;
  for (size_t i = 0; i < rank; i++) {
    size_t *into = i < axis                ? &n->outer
                   : i == axis || !softmax ? &n->len
                                           : &n->inner;
    ok = ok && wgc_mul_ok(*into, shape[i], into);
  }
  size_t part = 0;
  ok = ok && wgc_mul_ok(n->outer, n->len, &part) &&
       wgc_mul_ok(part, n->inner, total) && *total <= SIZE_MAX / 4;
  if (!ok)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: shape describes a tensor too large to address", fn);
  return WGC_OK;
}

/* The types' checks, before any operand's: input and output f32, f16 or
 * bf16, scale and bias f32 or f16. */
static wgc_status norm_types(wgc_context *ctx, const wgc_norm_args *n) {
  wgc_status s = wgc_check_float_type(ctx, n->fn, "input_type", n->input_type);
  if (s == WGC_OK)
    s = wgc_check_float_type(ctx, n->fn, "output_type", n->output_type);
  if (s == WGC_OK)
    s = wgc_check_affine_type(ctx, n->fn, "scale_type", n->scale_type);
  if (s == WGC_OK)
    s = wgc_check_affine_type(ctx, n->fn, "bias_type", n->bias_type);
  return s;
}

/* Checks the operands (scale and bias of len elements where given; a zero
 * address means absent) and calls the backend. */
static wgc_status norm_run(wgc_context *ctx, wgc_norm_args *n, wgc_ptr input,
                           wgc_ptr scale, wgc_ptr bias, wgc_ptr output,
                           size_t total) {
  if (total == 0)
    return WGC_OK;
  wgc_operand ops[4];
  wgc_dtype types[4];
  size_t count = 0;
  types[count] = n->input_type;
  ops[count++] = wgc_float_operand("input", input, n->input_type, total);
  if (scale) {
    types[count] = n->scale_type;
    ops[count++] = wgc_float_operand("scale", scale, n->scale_type, n->len);
  }
  if (bias) {
    types[count] = n->bias_type;
    ops[count++] = wgc_float_operand("bias", bias, n->bias_type, n->len);
  }
  types[count] = n->output_type;
  ops[count++] = wgc_float_operand("output", output, n->output_type, total);
  for (size_t i = 0; i < count; i++) {
    wgc_status s = wgc_check_float_operand(ctx, n->fn, &ops[i], types[i]);
    if (s != WGC_OK)
      return s;
  }
  /* in place on input is allowed (same type only: identical spans);
   * scale and bias must not be written */
  for (size_t i = 0; i + 1 < count; i++) {
    wgc_status s =
        wgc_check_no_overlap(ctx, n->fn, &ops[count - 1], &ops[i],
                             i == 0 && n->input_type == n->output_type);
    if (s != WGC_OK)
      return s;
  }
  size_t k = 1;
  n->input = ops[0].ref;
  n->has_scale = scale != 0;
  n->has_bias = bias != 0;
  if (scale)
    n->scale = ops[k++].ref;
  if (bias)
    n->bias = ops[k++].ref;
  n->output = ops[count - 1].ref;
  return ctx->be->norm(ctx, n);
}

static wgc_status softmax_common(wgc_context *ctx, wgc_norm_kind kind,
                                 const char *fn, wgc_ptr input,
                                 wgc_dtype input_type, wgc_ptr output,
                                 wgc_dtype output_type, const size_t *shape,
                                 size_t rank, size_t axis) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  wgc_norm_args n = {.kind = kind,
                     .fn = fn,
                     .input_type = input_type,
                     .output_type = output_type};
  size_t total = 0;
  wgc_status s = norm_types(ctx, &n);
  if (s == WGC_OK)
    s = norm_shape(ctx, &n, shape, rank, axis, &total);
  return s != WGC_OK ? s : norm_run(ctx, &n, input, 0, 0, output, total);
}

wgc_status wgc_softmax(wgc_context *ctx, wgc_ptr input, wgc_ptr output,
                       const size_t *shape, size_t rank, size_t axis) {
  return softmax_common(ctx, WGC_NORM_SOFTMAX, "wgc_softmax", input,
                        WGC_DTYPE_F32, output, WGC_DTYPE_F32, shape, rank,
                        axis);
}

wgc_status wgc_softmax_ex(wgc_context *ctx, wgc_ptr input, wgc_dtype input_type,
                          wgc_ptr output, wgc_dtype output_type,
                          const size_t *shape, size_t rank, size_t axis) {
  return softmax_common(ctx, WGC_NORM_SOFTMAX, "wgc_softmax_ex", input,
                        input_type, output, output_type, shape, rank, axis);
}

wgc_status wgc_log_softmax(wgc_context *ctx, wgc_ptr input, wgc_ptr output,
                           const size_t *shape, size_t rank, size_t axis) {
  return softmax_common(ctx, WGC_NORM_LOG_SOFTMAX, "wgc_log_softmax", input,
                        WGC_DTYPE_F32, output, WGC_DTYPE_F32, shape, rank,
                        axis);
}

wgc_status wgc_log_softmax_ex(wgc_context *ctx, wgc_ptr input,
                              wgc_dtype input_type, wgc_ptr output,
                              wgc_dtype output_type, const size_t *shape,
                              size_t rank, size_t axis) {
  return softmax_common(ctx, WGC_NORM_LOG_SOFTMAX, "wgc_log_softmax_ex", input,
                        input_type, output, output_type, shape, rank, axis);
}

static wgc_status norm_common(wgc_context *ctx, wgc_norm_args *n, wgc_ptr input,
                              wgc_ptr scale, wgc_ptr bias, wgc_ptr output,
                              const size_t *shape, size_t rank, size_t axis) {
  const char *fn = n->fn;
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  size_t total = 0;
  wgc_status s = norm_types(ctx, n);
  if (s == WGC_OK)
    s = norm_shape(ctx, n, shape, rank, axis, &total);
  if (s != WGC_OK)
    return s;
  if (!isfinite(n->epsilon) || n->epsilon < 0.0f)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: epsilon %g is not finite and >= 0", fn,
                    (double)n->epsilon);
  return norm_run(ctx, n, input, scale, bias, output, total);
}

wgc_status wgc_layer_norm(wgc_context *ctx, wgc_ptr input, wgc_ptr scale,
                          wgc_ptr bias, wgc_ptr output, const size_t *shape,
                          size_t rank, size_t axis, float epsilon) {
  wgc_norm_args n = {
      .kind = WGC_NORM_LAYER, .fn = "wgc_layer_norm", .epsilon = epsilon};
  return norm_common(ctx, &n, input, scale, bias, output, shape, rank, axis);
}

wgc_status wgc_layer_norm_ex(wgc_context *ctx, wgc_ptr input,
                             wgc_dtype input_type, wgc_ptr scale,
                             wgc_dtype scale_type, wgc_ptr bias,
                             wgc_dtype bias_type, wgc_ptr output,
                             wgc_dtype output_type, const size_t *shape,
                             size_t rank, size_t axis, float epsilon) {
  wgc_norm_args n = {.kind = WGC_NORM_LAYER,
                     .fn = "wgc_layer_norm_ex",
                     .epsilon = epsilon,
                     .input_type = input_type,
                     .output_type = output_type,
                     .scale_type = scale_type,
                     .bias_type = bias_type};
  return norm_common(ctx, &n, input, scale, bias, output, shape, rank, axis);
}

wgc_status wgc_rms_norm(wgc_context *ctx, wgc_ptr input, wgc_ptr scale,
                        wgc_ptr output, const size_t *shape, size_t rank,
                        size_t axis, float epsilon) {
  wgc_norm_args n = {
      .kind = WGC_NORM_RMS, .fn = "wgc_rms_norm", .epsilon = epsilon};
  return norm_common(ctx, &n, input, scale, 0, output, shape, rank, axis);
}

wgc_status wgc_rms_norm_ex(wgc_context *ctx, wgc_ptr input,
                           wgc_dtype input_type, wgc_ptr scale,
                           wgc_dtype scale_type, wgc_ptr output,
                           wgc_dtype output_type, const size_t *shape,
                           size_t rank, size_t axis, float epsilon) {
  wgc_norm_args n = {.kind = WGC_NORM_RMS,
                     .fn = "wgc_rms_norm_ex",
                     .epsilon = epsilon,
                     .input_type = input_type,
                     .output_type = output_type,
                     .scale_type = scale_type};
  return norm_common(ctx, &n, input, scale, 0, output, shape, rank, axis);
}
