/* Unary, binary (with broadcasting) and same-buffer copies on WebGPU. */
#include "webgpu.h"

#include <stdio.h>
#include <string.h>

#define ELEMS_PER_GROUP 1024u

/* Elements per launch: what one binding window and the grid can hold.
 * Launches of a long contiguous range are split into such chunks. */
static uint64_t chunk_elems(const wgc_context *ctx) {
  const gpu_limits *lim = wg_limits(ctx);
  uint64_t by_binding = (lim->max_storage_binding_size - 256) / 4;
  uint64_t by_grid = (uint64_t)lim->max_workgroups_per_dimension *
                     lim->max_workgroups_per_dimension * ELEMS_PER_GROUP;
  uint64_t n = by_binding < by_grid ? by_binding : by_grid;
  if (n > 0x40000000u) /* indices stay far from u32 overflow */
    n = 0x40000000u;
  return n & ~(uint64_t)(ELEMS_PER_GROUP - 1);
}

static wgc_ref advance(wgc_ref r, uint64_t elems) {
  r.offset += 4 * elems;
  return r;
}

typedef struct map_params {
  uint32_t off[4];
  uint32_t n, pad[3];
} map_params;

/* Elements per launch of each of k operands that may share one binding:
 * operands of one buffer whose windows come within the offset alignment
 * (< 256 bytes) of each other are bound as one window. */
static uint64_t shared_chunk(uint64_t chunk, unsigned k) {
  return (chunk - 64 * k) / k;
}

/* y[i] = f(x[i]) by kernel (ending in map.wgsl), in launches of at most
 * chunk elements. */
static wgc_status map_run(wgc_context *ctx, const char *fn, const char *kernel,
                          const char *consts, wgc_ref x, wgc_ref y,
                          uint64_t total, uint64_t chunk) {
  for (uint64_t at = 0; at < total; at += chunk) {
    uint64_t n = total - at < chunk ? total - at : chunk;
    map_params p = {.n = (uint32_t)n};
    wg_launch l = {.kernel = kernel,
                   .consts = consts,
                   .ops = {{"x", advance(x, at), 4 * n, false},
                           {"y", advance(y, at), 4 * n, true}},
                   .nops = 2,
                   .params = &p,
                   .params_size = sizeof p,
                   .groups = (n + ELEMS_PER_GROUP - 1) / ELEMS_PER_GROUP};
    wgc_status s = wg_launch_run(ctx, fn, &l);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

static bool same_buffer(wgc_ref a, wgc_ref b) {
  return ((const wg_mem *)a.mem)->buffer == ((const wg_mem *)b.mem)->buffer;
}

wgc_status wg_unary(wgc_context *ctx, const wgc_unary_args *u) {
  char consts[32];
  snprintf(consts, sizeof consts, "const OP: u32 = %uu;", (unsigned)u->op);
  uint64_t chunk = chunk_elems(ctx);
  if (same_buffer(u->input, u->output) && u->input.offset != u->output.offset)
    chunk = shared_chunk(chunk, 2);
  return map_run(ctx, "wgc_unary", "math+unary+map", consts, u->input,
                 u->output, u->n, chunk);
}

typedef struct binary_params {
  uint32_t off[4];
  uint32_t count, rank, pad[2];
  uint32_t shape[8], sa[8], sb[8];
} binary_params;

/* Span in elements of an operand read with strides over shape. */
static uint64_t strided_span(const wgc_binary_args *b, const size_t *stride) {
  uint64_t last = 0;
  for (size_t d = 0; d < b->rank; d++)
    last += (uint64_t)(b->shape[d] - 1) * stride[d];
  return last + 1;
}

static wgc_status binary_launch(wgc_context *ctx, const wgc_binary_args *b) {
  char consts[64];
  bool flat = b->rank == 1;
  snprintf(consts, sizeof consts, "const OP: u32 = %uu; const RANK: u32 = %uu;",
           (unsigned)b->op, flat ? 1u : 0u);
  binary_params p = {.count = (uint32_t)b->count, .rank = (uint32_t)b->rank};
  for (size_t d = 0; d < b->rank; d++) {
    p.shape[d] = (uint32_t)b->shape[d];
    p.sa[d] = (uint32_t)b->stride_a[d];
    p.sb[d] = (uint32_t)b->stride_b[d];
  }
  wg_launch l = {.kernel = "math+binary",
                 .consts = consts,
                 .ops = {{"a", b->a, 4 * strided_span(b, b->stride_a), false},
                         {"b", b->b, 4 * strided_span(b, b->stride_b), false},
                         {"out", b->out, 4 * (uint64_t)b->count, true}},
                 .nops = 3,
                 .params = &p,
                 .params_size = sizeof p,
                 .groups = (b->count + ELEMS_PER_GROUP - 1) / ELEMS_PER_GROUP};
  return wg_launch_run(ctx, "wgc_binary", &l);
}

/* Launches b, split along its outermost dimension until every operand's
 * window fits one binding (a leading dimension of 1 is dropped). */
static wgc_status binary_split(wgc_context *ctx, const wgc_binary_args *b,
                               uint64_t limit) {
  if (b->count <= limit && strided_span(b, b->stride_a) <= limit &&
      strided_span(b, b->stride_b) <= limit)
    return binary_launch(ctx, b);
  wgc_binary_args part = *b;
  if (b->shape[0] == 1) {
    if (b->rank == 1) /* one element that does not fit cannot happen */
      return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                      "wgc_binary: an operand exceeds the binding limit");
    part.rank--;
    memmove(part.shape, b->shape + 1, part.rank * sizeof *part.shape);
    memmove(part.stride_a, b->stride_a + 1, part.rank * sizeof(size_t));
    memmove(part.stride_b, b->stride_b + 1, part.rank * sizeof(size_t));
    return binary_split(ctx, &part, limit);
  }
  size_t rows = b->shape[0], half = rows / 2, row_elems = b->count / rows;
  for (int i = 0; i < 2; i++) {
    size_t first = i ? half : 0, n = i ? rows - half : half;
    part.shape[0] = n;
    part.count = n * row_elems;
    part.a = advance(b->a, first * b->stride_a[0]);
    part.b = advance(b->b, first * b->stride_b[0]);
    part.out = advance(b->out, first * row_elems);
    wgc_status s = binary_split(ctx, &part, limit);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

wgc_status wg_binary(wgc_context *ctx, const wgc_binary_args *b) {
  /* Inputs in the output's buffer (other than in place) may share its
   * binding window. */
  unsigned k = 1;
  k += same_buffer(b->a, b->out) && b->a.offset != b->out.offset;
  k += same_buffer(b->b, b->out) && b->b.offset != b->out.offset;
  uint64_t chunk = chunk_elems(ctx);
  return binary_split(ctx, b, k > 1 ? shared_chunk(chunk, k) : chunk);
}

wgc_status wg_copy_kernel(wgc_context *ctx, wgc_ref dst, wgc_ref src,
                          size_t bytes) {
  return map_run(ctx, "wgc_copy", "copy+map", NULL, src, dst, bytes / 4,
                 shared_chunk(chunk_elems(ctx), 2));
}
