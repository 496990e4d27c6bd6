/* unary, binary and broadcast entry points. */
#include "internal.h"

#include "validate.h"

#include <math.h>
#include <string.h>

static wgc_status unary_run(wgc_context *ctx, const char *fn, wgc_unary_op op,
                            float alpha, float beta, wgc_ptr input,
                            wgc_dtype input_type, wgc_ptr output,
                            wgc_dtype output_type, size_t n) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if ((unsigned)op >= WGC_UNARY_OP_COUNT)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: op %d is not a wgc_unary_op", fn, (int)op);
  wgc_status s = wgc_check_float_type(ctx, fn, "input_type", input_type);
  if (s == WGC_OK)
    s = wgc_check_float_type(ctx, fn, "output_type", output_type);
  if (s != WGC_OK)
    return s;
  if (n > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: n %zu is too large to address", fn, n);
  if (n == 0)
    return WGC_OK;
  wgc_operand in = wgc_float_operand("input", input, input_type, n),
              out = wgc_float_operand("output", output, output_type, n);
  s = wgc_check_float_operand(ctx, fn, &in, input_type);
  if (s == WGC_OK)
    s = wgc_check_float_operand(ctx, fn, &out, output_type);
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, fn, &out, &in, input_type == output_type);
  if (s != WGC_OK)
    return s;
  wgc_unary_args u = {.op = op,
                      .alpha = alpha,
                      .beta = beta,
                      .n = n,
                      .input = in.ref,
                      .output = out.ref,
                      .input_type = input_type,
                      .output_type = output_type,
                      .fn = fn};
  return ctx->be->unary(ctx, &u);
}

/* ONNX's attribute defaults of the ops that take parameters. */
static void unary_defaults(wgc_unary_op op, float *alpha, float *beta) {
  *alpha = *beta = 0.0f;
  switch (op) {
  case WGC_UNARY_LEAKY_RELU:
    *alpha = 0.01f;
    break;
  case WGC_UNARY_ELU:
    *alpha = 1.0f;
    break;
  case WGC_UNARY_HARD_SIGMOID:
    *alpha = 0.2f;
    *beta = 0.5f;
    break;
  case WGC_UNARY_CLIP:
    *alpha = -INFINITY;
    *beta = INFINITY;
    break;
  default:
    break;
  }
}

wgc_status wgc_unary(wgc_context *ctx, wgc_unary_op op, wgc_ptr input,
                     wgc_ptr output, size_t n) {
  float alpha, beta;
  unary_defaults(op, &alpha, &beta);
  return unary_run(ctx, "wgc_unary", op, alpha, beta, input, WGC_DTYPE_F32,
                   output, WGC_DTYPE_F32, n);
}

wgc_status wgc_unary_ex(wgc_context *ctx, wgc_unary_op op, wgc_ptr input,
                        wgc_dtype input_type, wgc_ptr output,
                        wgc_dtype output_type, size_t n) {
  float alpha, beta;
  unary_defaults(op, &alpha, &beta);
  return unary_run(ctx, "wgc_unary_ex", op, alpha, beta, input, input_type,
                   output, output_type, n);
}

/* NaN or infinite parameters are data, not errors: they follow the
 * arithmetic of each op's formula (see wgc.h). */
wgc_status wgc_unary_params(wgc_context *ctx, wgc_unary_op op, float alpha,
                            float beta, wgc_ptr input, wgc_ptr output,
                            size_t n) {
  return unary_run(ctx, "wgc_unary_params", op, alpha, beta, input,
                   WGC_DTYPE_F32, output, WGC_DTYPE_F32, n);
}

wgc_status wgc_unary_params_ex(wgc_context *ctx, wgc_unary_op op, float alpha,
                               float beta, wgc_ptr input, wgc_dtype input_type,
                               wgc_ptr output, wgc_dtype output_type,
                               size_t n) {
  return unary_run(ctx, "wgc_unary_params_ex", op, alpha, beta, input,
                   input_type, output, output_type, n);
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
  wgc_operand A = wgc_float_operand("a", a, args->a_type, a_n),
              B = wgc_float_operand("b", b, args->b_type, b_n),
              O = wgc_float_operand("out", out, args->out_type, args->count);
  wgc_status s = wgc_check_float_operand(ctx, fn, &A, args->a_type);
  if (s == WGC_OK)
    s = wgc_check_float_operand(ctx, fn, &B, args->b_type);
  if (s == WGC_OK)
    s = wgc_check_float_operand(ctx, fn, &O, args->out_type);
  /* In place is only exact: an input with the output's shape and type. */
  if (s == WGC_OK)
    s = wgc_check_no_overlap(
        ctx, fn, &O, &A, a_n == args->count && args->a_type == args->out_type);
  if (s == WGC_OK)
    s = wgc_check_no_overlap(
        ctx, fn, &O, &B, b_n == args->count && args->b_type == args->out_type);
  if (s != WGC_OK)
    return s;
  args->a = A.ref;
  args->b = B.ref;
  args->out = O.ref;
  merge_dims(args);
  return ctx->be->binary(ctx, args);
}

/* The checks every binary form starts with: ctx, op and the types. */
static wgc_status binary_check(wgc_context *ctx, const char *fn,
                               wgc_binary_op op, const wgc_dtype types[3]) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if ((unsigned)op >= WGC_BINARY_OP_COUNT)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: op %d is not a wgc_binary_op", fn, (int)op);
  static const char *const names[3] = {"a_type", "b_type", "out_type"};
  wgc_status s = WGC_OK;
  for (int k = 0; k < 3 && s == WGC_OK; k++)
    s = wgc_check_float_type(ctx, fn, names[k], types[k]);
  return s;
}

static wgc_status binary_flat(wgc_context *ctx, const char *fn,
                              wgc_binary_op op, wgc_ptr a, wgc_dtype a_type,
                              wgc_ptr b, wgc_dtype b_type, wgc_ptr out,
                              wgc_dtype out_type, size_t n) {
  const wgc_dtype types[3] = {a_type, b_type, out_type};
  wgc_status s = binary_check(ctx, fn, op, types);
  if (s != WGC_OK)
    return s;
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
                          .stride_b = {1},
                          .a_type = a_type,
                          .b_type = b_type,
                          .out_type = out_type};
  return binary_run(ctx, fn, &args, a, n, b, n, out);
}

wgc_status wgc_binary(wgc_context *ctx, wgc_binary_op op, wgc_ptr a, wgc_ptr b,
                      wgc_ptr out, size_t n) {
  return binary_flat(ctx, "wgc_binary", op, a, WGC_DTYPE_F32, b, WGC_DTYPE_F32,
                     out, WGC_DTYPE_F32, n);
}

wgc_status wgc_binary_ex(wgc_context *ctx, wgc_binary_op op, wgc_ptr a,
                         wgc_dtype a_type, wgc_ptr b, wgc_dtype b_type,
                         wgc_ptr out, wgc_dtype out_type, size_t n) {
  return binary_flat(ctx, "wgc_binary_ex", op, a, a_type, b, b_type, out,
                     out_type, n);
}

static wgc_status broadcast_run(wgc_context *ctx, const char *fn,
                                wgc_binary_op op, wgc_ptr a, wgc_dtype a_type,
                                const size_t *shape_a, size_t rank_a, wgc_ptr b,
                                wgc_dtype b_type, const size_t *shape_b,
                                size_t rank_b, wgc_ptr out,
                                wgc_dtype out_type) {
  const wgc_dtype types[3] = {a_type, b_type, out_type};
  wgc_status s = binary_check(ctx, fn, op, types);
  if (s != WGC_OK)
    return s;
  static const char *const names[2] = {"a", "b"};
  const size_t *shapes[2] = {shape_a, shape_b};
  size_t ranks[2] = {rank_a, rank_b}, counts[2];
  size_t strides[2][WGC_MAX_RANK];
  wgc_binary_args args = {
      .op = op, .a_type = a_type, .b_type = b_type, .out_type = out_type};
  s = wgc_broadcast(ctx, fn, 2, names, shapes, ranks, &args.rank, args.shape,
                    strides, counts, &args.count);
  if (s != WGC_OK)
    return s;
  if (args.count == 0)
    return WGC_OK;
  memcpy(args.stride_a, strides[0], sizeof strides[0]);
  memcpy(args.stride_b, strides[1], sizeof strides[1]);
  return binary_run(ctx, fn, &args, a, counts[0], b, counts[1], out);
}

wgc_status wgc_binary_broadcast(wgc_context *ctx, wgc_binary_op op, wgc_ptr a,
                                const size_t *shape_a, size_t rank_a, wgc_ptr b,
                                const size_t *shape_b, size_t rank_b,
                                wgc_ptr out) {
  return broadcast_run(ctx, "wgc_binary_broadcast", op, a, WGC_DTYPE_F32,
                       shape_a, rank_a, b, WGC_DTYPE_F32, shape_b, rank_b, out,
                       WGC_DTYPE_F32);
}

wgc_status wgc_binary_broadcast_ex(wgc_context *ctx, wgc_binary_op op,
                                   wgc_ptr a, wgc_dtype a_type,
                                   const size_t *shape_a, size_t rank_a,
                                   wgc_ptr b, wgc_dtype b_type,
                                   const size_t *shape_b, size_t rank_b,
                                   wgc_ptr out, wgc_dtype out_type) {
  return broadcast_run(ctx, "wgc_binary_broadcast_ex", op, a, a_type, shape_a,
                       rank_a, b, b_type, shape_b, rank_b, out, out_type);
}
