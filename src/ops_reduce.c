/* reduce, reduce_axes, argmax, argmin entry points: shape checks,
 * footprints, the merged view of the reduced axes, dispatch. */
#include "internal.h"

#include "dtype.h"
#include "validate.h"

#include <stdint.h>

#define OP_NAME_(NAME, name) #NAME,
static const char *const op_names[] = {WGC_REDUCE_OPS(OP_NAME_)};
#undef OP_NAME_
_Static_assert(sizeof op_names / sizeof *op_names == WGC_REDUCE_OP_COUNT,
               "one name per reduce op");

/* ONNX gives these no value over an empty set. */
static bool empty_undefined(wgc_reduce_op op) {
  return op == WGC_REDUCE_MAX || op == WGC_REDUCE_MIN || op == WGC_REDUCE_MEAN;
}

/* The reduction as backends see it: dims of size 1 dropped (they change
 * nothing), adjacent dims alike in being reduced merged. One reduced run
 * is the [outer, len, inner] form; several fill nd, dims and red. */
static void merge_view(const size_t *shape, size_t rank, const bool *reduced,
                       wgc_reduce_args *r) {
  size_t dims[WGC_MAX_RANK], nd = 0;
  bool red[WGC_MAX_RANK];
  for (size_t i = 0; i < rank; i++) {
    if (shape[i] == 1)
      continue;
    if (nd > 0 && red[nd - 1] == reduced[i]) {
      dims[nd - 1] *= shape[i];
      continue;
    }
    dims[nd] = shape[i];
    red[nd++] = reduced[i];
  }
  size_t runs = 0, at = 0;
  for (size_t d = 0; d < nd; d++)
    if (red[d]) {
      runs++;
      at = d;
    }
  r->outer = r->len = r->inner = 1;
  if (runs <= 1) {
    for (size_t d = 0; d < nd; d++) {
      if (runs && d == at)
        r->len = dims[d];
      else if (runs && d > at)
        r->inner *= dims[d];
      else
        r->outer *= dims[d];
    }
    return;
  }
  r->nd = nd;
  for (size_t d = 0; d < nd; d++) {
    r->dims[d] = dims[d];
    r->red[d] = red[d];
    if (red[d])
      r->len *= dims[d];
    else
      r->outer *= dims[d];
  }
}

/* The input f32, f16 or bf16; the output f32 or the input's type. */
static wgc_status reduce_types(wgc_context *ctx, const char *fn, wgc_dtype it,
                               wgc_dtype ot) {
  wgc_status s = wgc_check_float_type(ctx, fn, "input_type", it);
  if (s != WGC_OK || ot == WGC_DTYPE_F32 || ot == it)
    return s;
  if (!wgc_dtype_valid(ot))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: output_type %d is not a wgc_dtype", fn, (int)ot);
  return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                  "%s: output_type %s is not a type this operand takes (f32 "
                  "or the input's type, %s)",
                  fn, wgc_dtype_name(ot), wgc_dtype_name(it));
}

static wgc_status reduce_common(wgc_context *ctx, const char *fn,
                                wgc_reduce_op op, wgc_reduce_arg arg,
                                wgc_ptr input, wgc_dtype input_type,
                                wgc_ptr output, wgc_dtype output_type,
                                const size_t *shape, size_t rank,
                                const size_t *axes, size_t naxes, bool multi) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (arg == WGC_ARG_NONE && (unsigned)op >= WGC_REDUCE_OP_COUNT)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: op %d is not a wgc_reduce_op", fn, (int)op);
  wgc_status ts = reduce_types(ctx, fn, input_type, output_type);
  if (ts != WGC_OK)
    return ts;
  if (rank < 1 || rank > WGC_MAX_RANK)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: rank %zu is outside 1..%d", fn, rank, WGC_MAX_RANK);
  if (!shape)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: shape is NULL", fn);
  bool reduced[WGC_MAX_RANK] = {false};
  for (size_t k = 0; k < naxes; k++) {
    size_t a = axes[k];
    if (a >= rank) {
      if (multi)
        return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                        "%s: axes[%zu] = %zu is not below rank %zu", fn, k, a,
                        rank);
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: axis %zu is not below rank %zu", fn, a, rank);
    }
    if (reduced[a])
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: axes[%zu] = %zu is listed twice", fn, k, a);
    reduced[a] = true;
  }
  wgc_reduce_args r = {.op = op,
                       .arg = arg,
                       .input_type = input_type,
                       .output_type = output_type,
                       .fn = fn};
  size_t in_n = 0, out_n = 1, red_n = 1;
  bool ok = wgc_product(shape, rank, &in_n) && in_n <= SIZE_MAX / 4;
  for (size_t i = 0; ok && i < rank; i++)
    ok = wgc_mul_ok(reduced[i] ? red_n : out_n, shape[i],
                    reduced[i] ? &red_n : &out_n);
  if (!ok)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: shape describes a tensor too large to address", fn);
  if (out_n == 0)
    return WGC_OK;
  if (red_n == 0) {
    size_t a = 0;
    while (!(reduced[a] && shape[a] == 0))
      a++;
    if (arg != WGC_ARG_NONE)
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: shape[axis %zu] is 0: no element has an index", fn,
                      a);
    if (empty_undefined(op))
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: shape[axis %zu] is 0: %s of an empty axis is "
                      "undefined",
                      fn, a, op_names[op]);
    /* every output is the identity: one flat [out_n, 0, 1] */
    r.outer = out_n;
    r.len = 0;
    r.inner = 1;
  } else {
    if (arg != WGC_ARG_NONE && red_n > INT32_MAX)
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: shape[axis %zu] = %zu is beyond the int32 indices "
                      "of output",
                      fn, axes[0], red_n);
    merge_view(shape, rank, reduced, &r);
  }
  wgc_operand in = wgc_float_operand("input", input, input_type, in_n);
  wgc_operand out = wgc_float_operand("output", output, output_type, out_n);
  wgc_status s = wgc_check_float_operand(ctx, fn, &in, input_type);
  if (s == WGC_OK)
    s = wgc_check_float_operand(ctx, fn, &out, output_type);
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, fn, &out, &in, false);
  if (s != WGC_OK)
    return s;
  r.input = in.ref;
  r.output = out.ref;
  return ctx->be->reduce(ctx, &r);
}

wgc_status wgc_reduce(wgc_context *ctx, wgc_reduce_op op, wgc_ptr input,
                      wgc_ptr output, const size_t *shape, size_t rank,
                      size_t axis) {
  return reduce_common(ctx, "wgc_reduce", op, WGC_ARG_NONE, input,
                       WGC_DTYPE_F32, output, WGC_DTYPE_F32, shape, rank, &axis,
                       1, false);
}

wgc_status wgc_reduce_ex(wgc_context *ctx, wgc_reduce_op op, wgc_ptr input,
                         wgc_dtype input_type, wgc_ptr output,
                         wgc_dtype output_type, const size_t *shape,
                         size_t rank, size_t axis) {
  return reduce_common(ctx, "wgc_reduce_ex", op, WGC_ARG_NONE, input,
                       input_type, output, output_type, shape, rank, &axis, 1,
                       false);
}

static wgc_status reduce_axes_common(wgc_context *ctx, const char *fn,
                                     wgc_reduce_op op, wgc_ptr input,
                                     wgc_dtype input_type, wgc_ptr output,
                                     wgc_dtype output_type, const size_t *shape,
                                     size_t rank, const size_t *axes,
                                     size_t naxes) {
  if (ctx && !axes)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: axes is NULL", fn);
  if (ctx && rank >= 1 && rank <= WGC_MAX_RANK && (naxes < 1 || naxes > rank))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: naxes %zu is outside 1..rank (%zu)", fn, naxes, rank);
  return reduce_common(ctx, fn, op, WGC_ARG_NONE, input, input_type, output,
                       output_type, shape, rank, axes, naxes, true);
}

wgc_status wgc_reduce_axes(wgc_context *ctx, wgc_reduce_op op, wgc_ptr input,
                           wgc_ptr output, const size_t *shape, size_t rank,
                           const size_t *axes, size_t naxes) {
  return reduce_axes_common(ctx, "wgc_reduce_axes", op, input, WGC_DTYPE_F32,
                            output, WGC_DTYPE_F32, shape, rank, axes, naxes);
}

wgc_status wgc_reduce_axes_ex(wgc_context *ctx, wgc_reduce_op op, wgc_ptr input,
                              wgc_dtype input_type, wgc_ptr output,
                              wgc_dtype output_type, const size_t *shape,
                              size_t rank, const size_t *axes, size_t naxes) {
  return reduce_axes_common(ctx, "wgc_reduce_axes_ex", op, input, input_type,
                            output, output_type, shape, rank, axes, naxes);
}

wgc_status wgc_argmax(wgc_context *ctx, wgc_ptr input, wgc_ptr output,
                      const size_t *shape, size_t rank, size_t axis) {
  return reduce_common(ctx, "wgc_argmax", WGC_REDUCE_MAX, WGC_ARG_MAX, input,
                       WGC_DTYPE_F32, output, WGC_DTYPE_F32, shape, rank, &axis,
                       1, false);
}

wgc_status wgc_argmin(wgc_context *ctx, wgc_ptr input, wgc_ptr output,
                      const size_t *shape, size_t rank, size_t axis) {
  return reduce_common(ctx, "wgc_argmin", WGC_REDUCE_MIN, WGC_ARG_MIN, input,
                       WGC_DTYPE_F32, output, WGC_DTYPE_F32, shape, rank, &axis,
                       1, false);
}
