/* unary, binary and broadcast entry points. */
#include "internal.h"

#include "validate.h"

#include <math.h>
#include <string.h>

static wgc_status unary_run(wgc_context *ctx, const char *fn, wgc_unary_op op,
                            float alpha, float beta, wgc_ptr input,
                            wgc_ptr output, size_t n) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if ((unsigned)op >= WGC_UNARY_OP_COUNT)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: op %d is not a wgc_unary_op", fn, (int)op);
  if (n > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: n %zu is too large to address", fn, n);
  if (n == 0)
    return WGC_OK;
  wgc_operand in = wgc_flat_operand("input", input, n),
              out = wgc_flat_operand("output", output, n);
  wgc_status s = wgc_check_operand(ctx, fn, &in);
  if (s == WGC_OK)
    s = wgc_check_operand(ctx, fn, &out);
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, fn, &out, &in, true);
  if (s != WGC_OK)
    return s;
  wgc_unary_args u = {.op = op,
                      .alpha = alpha,
                      .beta = beta,
                      .n = n,
                      .input = in.ref,
                      .output = out.ref,
                      .fn = fn};
  return ctx->be->unary(ctx, &u);
}

wgc_status wgc_unary(wgc_context *ctx, wgc_unary_op op, wgc_ptr input,
                     wgc_ptr output, size_t n) {
  /* ONNX's attribute defaults */
  float alpha = 0.0f, beta = 0.0f;
  switch (op) {
  case WGC_UNARY_LEAKY_RELU:
    alpha = 0.01f;
    break;
  case WGC_UNARY_ELU:
    alpha = 1.0f;
    break;
  case WGC_UNARY_HARD_SIGMOID:
    alpha = 0.2f;
    beta = 0.5f;
    break;
  case WGC_UNARY_CLIP:
    alpha = -INFINITY;
    beta = INFINITY;
    break;
  default:
    break;
  }
  return unary_run(ctx, "wgc_unary", op, alpha, beta, input, output, n);
}

/* NaN or infinite parameters are data, not errors: they follow the
 * arithmetic of each op's formula (see wgc.h). */
wgc_status wgc_unary_params(wgc_context *ctx, wgc_unary_op op, float alpha,
                            float beta, wgc_ptr input, wgc_ptr output,
                            size_t n) {
  return unary_run(ctx, "wgc_unary_params", op, alpha, beta, input, output, n);
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
  args->fn = fn;
  wgc_operand A = wgc_flat_operand("a", a, a_n),
              B = wgc_flat_operand("b", b, b_n),
              O = wgc_flat_operand("out", out, args->count);
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
  if ((unsigned)op >= WGC_BINARY_OP_COUNT)
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
  if ((unsigned)op >= WGC_BINARY_OP_COUNT)
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
