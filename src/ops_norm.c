/* softmax, log-softmax, LayerNorm and RMSNorm entry points: shape checks,
 * footprints, dispatch as one [outer, len, inner] form. */
#include "internal.h"

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

/* Checks the operands (scale and bias of len floats where given; a zero
 * address means absent) and calls the backend. */
static wgc_status norm_run(wgc_context *ctx, wgc_norm_args *n, wgc_ptr input,
                           wgc_ptr scale, wgc_ptr bias, wgc_ptr output,
                           size_t total) {
  if (total == 0)
    return WGC_OK;
  wgc_operand ops[4];
  size_t count = 0;
  ops[count++] = wgc_flat_operand("input", input, total);
  if (scale)
    ops[count++] = wgc_flat_operand("scale", scale, n->len);
  if (bias)
    ops[count++] = wgc_flat_operand("bias", bias, n->len);
  ops[count++] = wgc_flat_operand("output", output, total);
  for (size_t i = 0; i < count; i++) {
    wgc_status s = wgc_check_operand(ctx, n->fn, &ops[i]);
    if (s != WGC_OK)
      return s;
  }
  /* in place on input is allowed; scale and bias must not be written */
  for (size_t i = 0; i + 1 < count; i++) {
    wgc_status s =
        wgc_check_no_overlap(ctx, n->fn, &ops[count - 1], &ops[i], i == 0);
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
                                 const char *fn, wgc_ptr input, wgc_ptr output,
                                 const size_t *shape, size_t rank,
                                 size_t axis) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  wgc_norm_args n = {.kind = kind, .fn = fn};
  size_t total = 0;
  wgc_status s = norm_shape(ctx, &n, shape, rank, axis, &total);
  return s != WGC_OK ? s : norm_run(ctx, &n, input, 0, 0, output, total);
}

wgc_status wgc_softmax(wgc_context *ctx, wgc_ptr input, wgc_ptr output,
                       const size_t *shape, size_t rank, size_t axis) {
  return softmax_common(ctx, WGC_NORM_SOFTMAX, "wgc_softmax", input, output,
                        shape, rank, axis);
}

wgc_status wgc_log_softmax(wgc_context *ctx, wgc_ptr input, wgc_ptr output,
                           const size_t *shape, size_t rank, size_t axis) {
  return softmax_common(ctx, WGC_NORM_LOG_SOFTMAX, "wgc_log_softmax", input,
                        output, shape, rank, axis);
}

static wgc_status norm_common(wgc_context *ctx, wgc_norm_kind kind,
                              const char *fn, wgc_ptr input, wgc_ptr scale,
                              wgc_ptr bias, wgc_ptr output, const size_t *shape,
                              size_t rank, size_t axis, float epsilon) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  wgc_norm_args n = {.kind = kind, .fn = fn, .epsilon = epsilon};
  size_t total = 0;
  wgc_status s = norm_shape(ctx, &n, shape, rank, axis, &total);
  if (s != WGC_OK)
    return s;
  if (!isfinite(epsilon) || epsilon < 0.0f)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: epsilon %g is not finite and >= 0", fn,
                    (double)epsilon);
  return norm_run(ctx, &n, input, scale, bias, output, total);
}

wgc_status wgc_layer_norm(wgc_context *ctx, wgc_ptr input, wgc_ptr scale,
                          wgc_ptr bias, wgc_ptr output, const size_t *shape,
                          size_t rank, size_t axis, float epsilon) {
  return norm_common(ctx, WGC_NORM_LAYER, "wgc_layer_norm", input, scale, bias,
                     output, shape, rank, axis, epsilon);
}

wgc_status wgc_rms_norm(wgc_context *ctx, wgc_ptr input, wgc_ptr scale,
                        wgc_ptr output, const size_t *shape, size_t rank,
                        size_t axis, float epsilon) {
  return norm_common(ctx, WGC_NORM_RMS, "wgc_rms_norm", input, scale, 0, output,
                     shape, rank, axis, epsilon);
}
