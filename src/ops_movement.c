/* Data movement entry points: strided copy, gather and where. */
#include "internal.h"

#include "dtype.h"

#include "layout.h"
#include "table.h"
#include "validate.h"

#include <inttypes.h>
#include <string.h>

/* Drops dimensions of size 1 and merges a dimension into the one before it
 * where every operand's strides (nstr arrays) continue contiguously across
 * them, so that transposes of blocks and plain copies reach the backend at
 * the lowest rank. A single element becomes rank 1. */
static void merge_dims(size_t *rank, size_t *shape,
                       size_t (*strides)[WGC_MAX_RANK], size_t nstr) {
  size_t r = 0;
  for (size_t i = 0; i < *rank; i++) {
    if (shape[i] == 1)
      continue;
    bool merge = r > 0;
    for (size_t k = 0; k < nstr && merge; k++)
      merge = strides[k][r - 1] == strides[k][i] * shape[i];
    if (merge) {
      shape[r - 1] *= shape[i];
      for (size_t k = 0; k < nstr; k++)
        strides[k][r - 1] = strides[k][i];
      continue;
    }
    shape[r] = shape[i];
    for (size_t k = 0; k < nstr; k++)
      strides[k][r] = strides[k][i];
    r++;
  }
  if (r == 0) {
    shape[0] = 1;
    for (size_t k = 0; k < nstr; k++)
      strides[k][0] = 0;
    r = 1;
  }
  *rank = r;
}

/* Elements from the first to the last one an operand touches: 1 + the sum
 * of (shape-1)*stride (saturating); count > 0. */
static uint64_t strided_span(const size_t *shape, const size_t *stride,
                             size_t rank) {
  uint64_t last = 0;
  for (size_t d = 0; d < rank; d++)
    last = wgc_sat_add(last, wgc_sat_mul(shape[d] - 1, stride[d]));
  return wgc_sat_add(last, 1);
}

/* The span of elems elements of t (F32, F16 or BF16), saturating. */
static wgc_operand span_operand(const char *param, wgc_ptr addr, wgc_dtype t,
                                uint64_t elems) {
  wgc_operand op = wgc_float_operand(param, addr, t, 0);
  op.bytes = wgc_sat_mul(elems, t == WGC_DTYPE_F32 ? 4 : 2);
  return op;
}

static wgc_status copy_strided_run(wgc_context *ctx, const char *fn,
                                   wgc_ptr dst, wgc_dtype dst_type,
                                   const size_t *dst_strides, wgc_ptr src,
                                   wgc_dtype src_type,
                                   const size_t *src_strides,
                                   const size_t *shape, size_t rank) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  wgc_status s = wgc_check_float_type(ctx, fn, "dst_type", dst_type);
  if (s == WGC_OK)
    s = wgc_check_float_type(ctx, fn, "src_type", src_type);
  if (s != WGC_OK)
    return s;
  if (rank > WGC_MAX_RANK)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: rank %zu is above %d",
                    fn, rank, WGC_MAX_RANK);
  if (rank && !shape)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: shape is NULL with rank %zu", fn, rank);
  if (rank && !dst_strides)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: dst_strides is NULL with rank %zu", fn, rank);
  if (rank && !src_strides)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: src_strides is NULL with rank %zu", fn, rank);
  size_t count;
  if (!wgc_product(shape, rank, &count) || count > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: shape describes a tensor too large to address", fn);
  if (count == 0)
    return WGC_OK;
  wgc_copy_strided_args c = {.rank = 0,
                             .count = count,
                             .dst_type = dst_type,
                             .src_type = src_type,
                             .fn = fn};
  /* The dimensions that matter (size > 1), ordered by destination stride,
   * largest first (insertion sort; a stable order keeps ties as given). */
  for (size_t d = 0; d < rank; d++) {
    if (shape[d] == 1)
      continue;
    size_t at = c.rank++;
    while (at > 0 && c.stride_dst[at - 1] < dst_strides[d]) {
      c.shape[at] = c.shape[at - 1];
      c.stride_dst[at] = c.stride_dst[at - 1];
      c.stride_src[at] = c.stride_src[at - 1];
      at--;
    }
    c.shape[at] = shape[d];
    c.stride_dst[at] = dst_strides[d];
    c.stride_src[at] = src_strides[d];
  }
  size_t i;
  uint64_t span;
  wgc_layout_verdict v =
      wgc_layout_check(c.shape, c.stride_dst, c.rank, &i, &span);
  if (v != WGC_LAYOUT_DISTINCT) {
    size_t d = 0; /* the caller's index of this dimension, for the message */
    while (d < rank && (shape[d] == 1 || dst_strides[d] != c.stride_dst[i]))
      d++;
    if (v == WGC_LAYOUT_NO_MEMORY)
      return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                      "%s: no host memory to check the destination layout", fn);
    if (v == WGC_LAYOUT_UNPROVEN)
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: dst_strides[%zu] = %zu interleaves with the smaller "
                      "destination strides over %" PRIu64 " elements, more "
                      "than the %" PRIu64 " checked element by element: the "
                      "layout is not provably free of overlap",
                      fn, d, c.stride_dst[i], span, WGC_LAYOUT_EXACT_SPAN);
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: dst_strides[%zu] = %zu makes distinct indices "
                    "write one element of dst (with the smaller destination "
                    "strides it reaches %" PRIu64 " elements)",
                    fn, d, c.stride_dst[i], span);
  }
  wgc_operand ops[2] = {
      span_operand("src", src, src_type,
                   strided_span(c.shape, c.stride_src, c.rank)),
      span_operand("dst", dst, dst_type,
                   strided_span(c.shape, c.stride_dst, c.rank))};
  s = wgc_check_float_operand(ctx, fn, &ops[0], src_type);
  if (s == WGC_OK)
    s = wgc_check_float_operand(ctx, fn, &ops[1], dst_type);
  /* Spans, not elements: interleaved source and destination are rejected
   * too, which keeps the rule simple to state and to check. */
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, fn, &ops[1], &ops[0], false);
  if (s != WGC_OK)
    return s;
  c.src = ops[0].ref;
  c.dst = ops[1].ref;
  size_t both[2][WGC_MAX_RANK];
  memcpy(both[0], c.stride_dst, sizeof both[0]);
  memcpy(both[1], c.stride_src, sizeof both[1]);
  merge_dims(&c.rank, c.shape, both, 2);
  memcpy(c.stride_dst, both[0], sizeof both[0]);
  memcpy(c.stride_src, both[1], sizeof both[1]);
  return ctx->be->copy_strided(ctx, &c);
}

wgc_status wgc_copy_strided(wgc_context *ctx, wgc_ptr dst,
                            const size_t *dst_strides, wgc_ptr src,
                            const size_t *src_strides, const size_t *shape,
                            size_t rank) {
  return copy_strided_run(ctx, "wgc_copy_strided", dst, WGC_DTYPE_F32,
                          dst_strides, src, WGC_DTYPE_F32, src_strides, shape,
                          rank);
}

wgc_status wgc_copy_strided_ex(wgc_context *ctx, wgc_ptr dst,
                               wgc_dtype dst_type, const size_t *dst_strides,
                               wgc_ptr src, wgc_dtype src_type,
                               const size_t *src_strides, const size_t *shape,
                               size_t rank) {
  return copy_strided_run(ctx, "wgc_copy_strided_ex", dst, dst_type,
                          dst_strides, src, src_type, src_strides, shape, rank);
}

/* The table takes every type but I32, the output the float types. */
static wgc_status check_gather_type(wgc_context *ctx, const char *fn,
                                    const char *param, wgc_dtype t,
                                    bool output) {
  if (!wgc_dtype_valid(t))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s %d is not a wgc_dtype", fn, param, (int)t);
  bool ok =
      output ? t == WGC_DTYPE_F32 || t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16
             : t != WGC_DTYPE_I32;
  if (!ok)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s %s is not a type this operand takes (%s)", fn,
                    param, wgc_dtype_name(t),
                    output ? "f32, f16 or bf16"
                           : "f32, f16, bf16, q8_0 or q4_0");
  return WGC_OK;
}

/* A contiguous operand of elems elements of type t (whole blocks). */
static wgc_operand typed_flat(const char *param, wgc_ptr addr, wgc_dtype t,
                              size_t elems) {
  size_t bb = wgc_dtype_block_bytes(t);
  return (wgc_operand){.param = param,
                       .addr = addr,
                       .bytes = (uint64_t)(elems / wgc_dtype_block(t)) * bb,
                       .repeat = 1,
                       .align = bb % 4 ? 2 : 4};
}

static wgc_status gather_common(wgc_context *ctx, const char *fn, wgc_ptr data,
                                wgc_dtype data_type, const size_t *shape,
                                size_t rank, size_t axis, wgc_ptr indices,
                                size_t n_indices, wgc_ptr output,
                                wgc_dtype output_type) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  wgc_status s = check_gather_type(ctx, fn, "data_type", data_type, false);
  if (s == WGC_OK)
    s = check_gather_type(ctx, fn, "output_type", output_type, true);
  if (s != WGC_OK)
    return s;
  if (rank == 0 || rank > WGC_MAX_RANK)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: rank %zu is outside 1..%d", fn, rank, WGC_MAX_RANK);
  if (!shape)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: shape is NULL with rank %zu", fn, rank);
  if (axis >= rank)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: axis %zu is not below rank %zu", fn, axis, rank);
  wgc_gather_args g = {.len = shape[axis],
                       .n_indices = n_indices,
                       .data_type = data_type,
                       .output_type = output_type,
                       .fn = fn};
  size_t data_n, out_n;
  if (!wgc_product(shape, axis, &g.outer) ||
      !wgc_product(shape + axis + 1, rank - axis - 1, &g.inner) ||
      !wgc_product(shape, rank, &data_n) || data_n > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: shape describes a tensor too large to address", fn);
  if (n_indices > SIZE_MAX / 4 || !wgc_mul_ok(g.outer, n_indices, &out_n) ||
      !wgc_mul_ok(out_n, g.inner, &out_n) || out_n > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: n_indices %zu makes an output too large to address",
                    fn, n_indices);
  /* a gathered row is whole blocks, so rows never share one */
  size_t blk = wgc_dtype_block(data_type);
  if (blk > 1 && (axis == rank - 1 || g.inner % blk))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: data of type %s gathers rows of %zu elements along "
                    "axis %zu of rank %zu, not whole %zu-element blocks along "
                    "its contiguous dimension",
                    fn, wgc_dtype_name(data_type),
                    axis == rank - 1 ? (size_t)1 : g.inner, axis, rank, blk);
  if (out_n == 0)
    return WGC_OK;
  wgc_operand ops[3] = {typed_flat("data", data, data_type, data_n),
                        wgc_flat_operand("indices", indices, n_indices),
                        typed_flat("output", output, output_type, out_n)};
  const wgc_dtype types[3] = {data_type, WGC_DTYPE_I32, output_type};
  /* the f32 operands keep wgc_gather's messages (wgc_check_all) */
  for (int i = 0; i < 3; i += 2)
    if (types[i] != WGC_DTYPE_F32 && wgc_ptr_offset(ops[i].addr) % ops[i].align)
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: %s 0x%016" PRIx64
                      " is not %u-byte aligned, as a %s operand must be",
                      fn, ops[i].param, ops[i].addr, ops[i].align,
                      wgc_dtype_name(types[i]));
  s = wgc_check_all(ctx, fn, ops, 3);
  if (s != WGC_OK)
    return s;
  g.data = ops[0].ref;
  g.indices = ops[1].ref;
  g.output = ops[2].ref;
  return ctx->be->gather(ctx, &g);
}

wgc_status wgc_gather(wgc_context *ctx, wgc_ptr data, const size_t *shape,
                      size_t rank, size_t axis, wgc_ptr indices,
                      size_t n_indices, wgc_ptr output) {
  return gather_common(ctx, "wgc_gather", data, WGC_DTYPE_F32, shape, rank,
                       axis, indices, n_indices, output, WGC_DTYPE_F32);
}

wgc_status wgc_gather_ex(wgc_context *ctx, wgc_ptr data, wgc_dtype data_type,
                         const size_t *shape, size_t rank, size_t axis,
                         wgc_ptr indices, size_t n_indices, wgc_ptr output,
                         wgc_dtype output_type) {
  return gather_common(ctx, "wgc_gather_ex", data, data_type, shape, rank, axis,
                       indices, n_indices, output, output_type);
}

static wgc_status where_run(wgc_context *ctx, const char *fn, wgc_ptr cond,
                            const size_t *shape_cond, size_t rank_cond,
                            wgc_ptr a, const size_t *shape_a, size_t rank_a,
                            wgc_ptr b, const size_t *shape_b, size_t rank_b,
                            wgc_ptr out, const wgc_dtype types[4]) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  static const char *const tnames[4] = {"cond_type", "a_type", "b_type",
                                        "out_type"};
  wgc_status s = WGC_OK;
  for (int k = 0; k < 4 && s == WGC_OK; k++)
    s = wgc_check_float_type(ctx, fn, tnames[k], types[k]);
  if (s != WGC_OK)
    return s;
  static const char *const names[3] = {"cond", "a", "b"};
  const size_t *shapes[3] = {shape_cond, shape_a, shape_b};
  size_t ranks[3] = {rank_cond, rank_a, rank_b}, counts[3];
  size_t strides[3][WGC_MAX_RANK];
  wgc_where_args w = {.cond_type = types[0],
                      .a_type = types[1],
                      .b_type = types[2],
                      .out_type = types[3],
                      .fn = fn};
  s = wgc_broadcast(ctx, fn, 3, names, shapes, ranks, &w.rank, w.shape, strides,
                    counts, &w.count);
  if (s != WGC_OK)
    return s;
  if (w.count == 0)
    return WGC_OK;
  wgc_operand ops[4] = {wgc_float_operand("cond", cond, types[0], counts[0]),
                        wgc_float_operand("a", a, types[1], counts[1]),
                        wgc_float_operand("b", b, types[2], counts[2]),
                        wgc_float_operand("out", out, types[3], w.count)};
  for (int k = 0; k < 4 && s == WGC_OK; k++)
    s = wgc_check_float_operand(ctx, fn, &ops[k], types[k]);
  /* In place is only exact: an input with the output's shape and type. */
  for (int k = 0; k < 3 && s == WGC_OK; k++)
    s = wgc_check_no_overlap(ctx, fn, &ops[3], &ops[k],
                             counts[k] == w.count && types[k] == types[3]);
  if (s != WGC_OK)
    return s;
  merge_dims(&w.rank, w.shape, strides, 3);
  memcpy(w.stride_cond, strides[0], sizeof strides[0]);
  memcpy(w.stride_a, strides[1], sizeof strides[1]);
  memcpy(w.stride_b, strides[2], sizeof strides[2]);
  w.cond = ops[0].ref;
  w.a = ops[1].ref;
  w.b = ops[2].ref;
  w.out = ops[3].ref;
  return ctx->be->where(ctx, &w);
}

wgc_status wgc_where(wgc_context *ctx, wgc_ptr cond, const size_t *shape_cond,
                     size_t rank_cond, wgc_ptr a, const size_t *shape_a,
                     size_t rank_a, wgc_ptr b, const size_t *shape_b,
                     size_t rank_b, wgc_ptr out) {
  static const wgc_dtype f32[4] = {WGC_DTYPE_F32, WGC_DTYPE_F32, WGC_DTYPE_F32,
                                   WGC_DTYPE_F32};
  return where_run(ctx, "wgc_where", cond, shape_cond, rank_cond, a, shape_a,
                   rank_a, b, shape_b, rank_b, out, f32);
}

wgc_status wgc_where_ex(wgc_context *ctx, wgc_ptr cond, wgc_dtype cond_type,
                        const size_t *shape_cond, size_t rank_cond, wgc_ptr a,
                        wgc_dtype a_type, const size_t *shape_a, size_t rank_a,
                        wgc_ptr b, wgc_dtype b_type, const size_t *shape_b,
                        size_t rank_b, wgc_ptr out, wgc_dtype out_type) {
  const wgc_dtype types[4] = {cond_type, a_type, b_type, out_type};
  return where_run(ctx, "wgc_where_ex", cond, shape_cond, rank_cond, a, shape_a,
                   rank_a, b, shape_b, rank_b, out, types);
}
