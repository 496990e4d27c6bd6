/* reduce, unary, binary and broadcast entry points. */
#include "internal.h"

#include "validate.h"

#include <string.h>

static wgc_operand operand(const char *param, wgc_ptr addr, size_t elems) {
  return (wgc_operand){
      .param = param, .addr = addr, .bytes = 4 * (uint64_t)elems, .repeat = 1};
}

wgc_status wgc_reduce(wgc_context *ctx, wgc_reduce_op op, wgc_ptr input,
                      wgc_ptr output, const size_t *shape, size_t rank,
                      size_t axis) {
  const char *fn = "wgc_reduce";
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if ((unsigned)op > WGC_REDUCE_MEAN)
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
  wgc_reduce_args r = {.op = op, .outer = 1, .len = shape[axis], .inner = 1};
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
                    fn, axis,
                    op == WGC_REDUCE_MEAN  ? "MEAN"
                    : op == WGC_REDUCE_MAX ? "MAX"
                                           : "MIN");
  wgc_operand in = operand("input", input, in_n);
  wgc_operand out = operand("output", output, out_n);
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

wgc_status wgc_unary(wgc_context *ctx, wgc_unary_op op, wgc_ptr input,
                     wgc_ptr output, size_t n) {
  const char *fn = "wgc_unary";
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if ((unsigned)op > WGC_UNARY_SILU)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: op %d is not a wgc_unary_op", fn, (int)op);
  if (n > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: n %zu is too large to address", fn, n);
  if (n == 0)
    return WGC_OK;
  wgc_operand in = operand("input", input, n),
              out = operand("output", output, n);
  wgc_status s = wgc_check_operand(ctx, fn, &in);
  if (s == WGC_OK)
    s = wgc_check_operand(ctx, fn, &out);
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, fn, &out, &in, true);
  if (s != WGC_OK)
    return s;
  wgc_unary_args u = {.op = op, .n = n, .input = in.ref, .output = out.ref};
  return ctx->be->unary(ctx, &u);
}

/* Merges dimensions that a, b and out all traverse contiguously, and drops
 * dimensions of size 1, so common cases reach the backend as rank 1 or 2. */
static void merge_dims(wgc_binary_args *b) {
  size_t r = 0;
  for (size_t i = 0; i < b->rank; i++) {
    if (b->shape[i] == 1)
      continue;
    if (r > 0 && b->stride_a[r - 1] == b->stride_a[i] * b->shape[i] &&
        b->stride_b[r - 1] == b->stride_b[i] * b->shape[i]) {
      b->shape[r - 1] *= b->shape[i];
      b->stride_a[r - 1] = b->stride_a[i];
      b->stride_b[r - 1] = b->stride_b[i];
      continue;
    }
    b->shape[r] = b->shape[i];
    b->stride_a[r] = b->stride_a[i];
    b->stride_b[r] = b->stride_b[i];
    r++;
  }
  if (r == 0) { /* a single element */
    b->shape[0] = 1;
    b->stride_a[0] = b->stride_b[0] = 0;
    r = 1;
  }
  b->rank = r;
}

static wgc_status binary_run(wgc_context *ctx, const char *fn,
                             wgc_binary_args *args, wgc_ptr a, size_t a_n,
                             wgc_ptr b, size_t b_n, wgc_ptr out) {
  wgc_operand A = operand("a", a, a_n), B = operand("b", b, b_n),
              O = operand("out", out, args->count);
  wgc_status s = wgc_check_operand(ctx, fn, &A);
  if (s == WGC_OK)
    s = wgc_check_operand(ctx, fn, &B);
  if (s == WGC_OK)
    s = wgc_check_operand(ctx, fn, &O);
  /* In place is only exact: an input with the output's shape. */
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, fn, &O, &A, a_n == args->count);
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, fn, &O, &B, b_n == args->count);
  if (s != WGC_OK)
    return s;
  args->a = A.ref;
  args->b = B.ref;
  args->out = O.ref;
  merge_dims(args);
  return ctx->be->binary(ctx, args);
}

wgc_status wgc_binary(wgc_context *ctx, wgc_binary_op op, wgc_ptr a, wgc_ptr b,
                      wgc_ptr out, size_t n) {
  const char *fn = "wgc_binary";
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if ((unsigned)op > WGC_BINARY_POW)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: op %d is not a wgc_binary_op", fn, (int)op);
  if (n > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: n %zu is too large to address", fn, n);
  if (n == 0)
    return WGC_OK;
  wgc_binary_args args = {.op = op,
                          .rank = 1,
                          .count = n,
                          .shape = {n},
                          .stride_a = {1},
                          .stride_b = {1}};
  return binary_run(ctx, fn, &args, a, n, b, n, out);
}

wgc_status wgc_binary_broadcast(wgc_context *ctx, wgc_binary_op op, wgc_ptr a,
                                const size_t *shape_a, size_t rank_a, wgc_ptr b,
                                const size_t *shape_b, size_t rank_b,
                                wgc_ptr out) {
  const char *fn = "wgc_binary_broadcast";
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if ((unsigned)op > WGC_BINARY_POW)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: op %d is not a wgc_binary_op", fn, (int)op);
  if (rank_a > WGC_MAX_RANK)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: rank_a %zu is above %d",
                    fn, rank_a, WGC_MAX_RANK);
  if (rank_b > WGC_MAX_RANK)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: rank_b %zu is above %d",
                    fn, rank_b, WGC_MAX_RANK);
  if (rank_a && !shape_a)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: shape_a is NULL with rank_a %zu", fn, rank_a);
  if (rank_b && !shape_b)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: shape_b is NULL with rank_b %zu", fn, rank_b);
  size_t rank = rank_a > rank_b ? rank_a : rank_b;
  wgc_binary_args args = {.op = op, .rank = rank, .count = 1};
  size_t a_n = 1, b_n = 1;
  bool ok = true;
  /* Right-aligned dimensions, numpy style; strides built from the right. */
  size_t sa = 1, sb = 1;
  for (size_t i = rank; i-- > 0;) {
    size_t ia = i + rank_a, ib = i + rank_b; /* index + rank - rank_x */
    size_t da = ia >= rank ? shape_a[ia - rank] : 1;
    size_t db = ib >= rank ? shape_b[ib - rank] : 1;
    if (da != db && da != 1 && db != 1)
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: shape_a[%zu] = %zu and shape_b[%zu] = %zu do not "
                      "broadcast",
                      fn, ia - rank, da, ib - rank, db);
    size_t d = da == 1 ? db : da;
    args.shape[i] = d;
    args.stride_a[i] = da == 1 ? 0 : sa;
    args.stride_b[i] = db == 1 ? 0 : sb;
    ok = ok && wgc_mul_ok(sa, da, &sa) && wgc_mul_ok(sb, db, &sb) &&
         wgc_mul_ok(args.count, d, &args.count);
  }
  a_n = sa;
  b_n = sb;
  if (!ok || args.count > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: the shapes describe tensors too large to address", fn);
  if (args.count == 0)
    return WGC_OK;
  if (rank == 0)
    args.shape[0] = 1;
  return binary_run(ctx, fn, &args, a, a_n, b, b_n, out);
}
