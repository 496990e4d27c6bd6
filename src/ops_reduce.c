/* reduce entry point: shape checks, footprints, dispatch. */
#include "internal.h"

#include "validate.h"

#define OP_NAME_(NAME, name) #NAME,
static const char *const op_names[] = {WGC_REDUCE_OPS(OP_NAME_)};
#undef OP_NAME_
_Static_assert(sizeof op_names / sizeof *op_names == WGC_REDUCE_OP_COUNT,
               "one name per reduce op");

wgc_status wgc_reduce(wgc_context *ctx, wgc_reduce_op op, wgc_ptr input,
                      wgc_ptr output, const size_t *shape, size_t rank,
                      size_t axis) {
  const char *fn = "wgc_reduce";
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if ((unsigned)op >= WGC_REDUCE_OP_COUNT)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: op %d is not a wgc_reduce_op", fn, (int)op);
  if (rank < 1 || rank > WGC_MAX_RANK)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: rank %zu is outside 1..%d", fn, rank, WGC_MAX_RANK);
  if (!shape)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: shape is NULL", fn);
  if (axis >= rank)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: axis %zu is not below rank %zu", fn, axis, rank);
  wgc_reduce_args r = {
      .op = op, .outer = 1, .len = shape[axis], .inner = 1, .fn = fn};
  bool ok = true;
  for (size_t i = 0; i < rank; i++) {
    if (i < axis)
      ok = ok && wgc_mul_ok(r.outer, shape[i], &r.outer);
    else if (i > axis)
      ok = ok && wgc_mul_ok(r.inner, shape[i], &r.inner);
  }
  size_t out_n = 0, in_n = 0;
  ok = ok && wgc_mul_ok(r.outer, r.inner, &out_n) &&
       wgc_mul_ok(out_n, r.len, &in_n) && in_n <= SIZE_MAX / 4;
  if (!ok)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: shape describes a tensor too large to address", fn);
  if (out_n == 0)
    return WGC_OK;
  if (r.len == 0 && op != WGC_REDUCE_SUM)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: shape[axis %zu] is 0: %s of an empty axis is "
                    "undefined",
                    fn, axis, op_names[op]);
  wgc_operand in = wgc_flat_operand("input", input, in_n);
  wgc_operand out = wgc_flat_operand("output", output, out_n);
  wgc_status s = wgc_check_operand(ctx, fn, &in);
  if (s == WGC_OK)
    s = wgc_check_operand(ctx, fn, &out);
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, fn, &out, &in, false);
  if (s != WGC_OK)
    return s;
  r.input = in.ref;
  r.output = out.ref;
  return ctx->be->reduce(ctx, &r);
}
