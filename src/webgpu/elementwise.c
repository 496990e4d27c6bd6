/* Unary, binary (with broadcasting) and same-buffer copies on WebGPU. */
#include "wg.h"

#include <stdio.h>
#include <string.h>

#define ELEMS_PER_GROUP 1024u
/* Runs this short use map_small.wgsl (64 invocations, one element each). */
#define SMALL_ELEMS 256u

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
  /* Whole workgroups where a binding holds several; a binding of 4 KiB
   * holds fewer than one (960 floats). */
  return n >= ELEMS_PER_GROUP ? n & ~(uint64_t)(ELEMS_PER_GROUP - 1) : n;
}

/* Matches struct Params of kernels/map.wgsl. */
typedef struct map_params {
  uint32_t off[4];
  uint32_t n;
  float alpha, beta; /* wgc_unary_params' */
  uint32_t pad;
} map_params;

/* y[i] = f(x[i]) by kernel (ending in map.wgsl), in launches of at most
 * chunk elements, each halved until its operands bind (x and y in one
 * buffer may share a binding window). */
static wgc_status map_run(wgc_context *ctx, const char *fn, const char *kernel,
                          const char *consts, const map_params *params,
                          wgc_ref x, wgc_ref y, uint64_t total,
                          uint64_t chunk) {
  for (uint64_t at = 0, n; at < total; at += n) {
    n = total - at < chunk ? total - at : chunk;
    wg_launch l = {.kernel = kernel, .consts = consts, .nops = 2};
    for (;; n = (n + 1) / 2) {
      l.ops[0] = (wg_operand){"x", wg_advance(x, at), 4 * n, false};
      l.ops[1] = (wg_operand){"y", wg_advance(y, at), 4 * n, true};
      if (n == 1 || wg_operands_fit(ctx, l.ops, 2))
        break;
    }
    map_params p = *params;
    p.n = (uint32_t)n;
    l.params = &p;
    l.params_size = sizeof p;
    l.groups = (n + ELEMS_PER_GROUP - 1) / ELEMS_PER_GROUP;
    char small[128]; /* kernel with its last file, map, as map_small */
    size_t len = strlen(kernel);
    if (n <= SMALL_ELEMS && len < sizeof small - 6) {
      memcpy(small, kernel, len);
      memcpy(small + len, "_small", 7);
      l.kernel = small;
      l.groups = (n + 63) / 64;
    }
    wgc_status s = wg_launch_run(ctx, fn, &l);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

wgc_status wg_unary(wgc_context *ctx, const wgc_unary_args *u) {
  char consts[32];
  snprintf(consts, sizeof consts, "const OP: u32 = %uu;", (unsigned)u->op);
  map_params p = {.alpha = u->alpha, .beta = u->beta};
  return map_run(ctx, u->fn, "math+unary_ops+unary+unary_map+map", consts, &p,
                 u->input, u->output, u->n, chunk_elems(ctx));
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

/* The launch of b; p receives its parameters. */
static wg_launch binary_plan(const wgc_binary_args *b, binary_params *p,
                             char *consts, size_t cap) {
  snprintf(consts, cap, "const OP: u32 = %uu; const RANK: u32 = %uu;",
           (unsigned)b->op, b->rank == 1 ? 1u : 0u);
  *p = (binary_params){.count = (uint32_t)b->count, .rank = (uint32_t)b->rank};
  for (size_t d = 0; d < b->rank; d++) {
    p->shape[d] = (uint32_t)b->shape[d];
    p->sa[d] = (uint32_t)b->stride_a[d];
    p->sb[d] = (uint32_t)b->stride_b[d];
  }
  return (wg_launch){
      .kernel = "math+binary_ops+binary",
      .consts = consts,
      .ops = {{"a", b->a, 4 * strided_span(b, b->stride_a), false},
              {"b", b->b, 4 * strided_span(b, b->stride_b), false},
              {"out", b->out, 4 * (uint64_t)b->count, true}},
      .nops = 3,
      .params = p,
      .params_size = sizeof *p,
      .groups = (b->count + ELEMS_PER_GROUP - 1) / ELEMS_PER_GROUP};
}

/* Launches b, split along its outermost dimension until one launch can
 * cover it: operands bind (planned as the engine binds them) and the grid
 * fits. A leading dimension of 1 is dropped. */
static wgc_status binary_split(wgc_context *ctx, const wgc_binary_args *b,
                               uint64_t max_count) {
  binary_params p;
  char consts[64];
  wg_launch l = binary_plan(b, &p, consts, sizeof consts);
  if (b->count <= max_count && wg_operands_fit(ctx, l.ops, l.nops))
    return wg_launch_run(ctx, b->fn, &l);
  wgc_binary_args part = *b;
  if (b->shape[0] == 1) {
    if (b->rank == 1) /* one element: operands a few bytes apart, staged */
      return wg_launch_run(ctx, b->fn, &l);
    part.rank--;
    memmove(part.shape, b->shape + 1, part.rank * sizeof *part.shape);
    memmove(part.stride_a, b->stride_a + 1, part.rank * sizeof(size_t));
    memmove(part.stride_b, b->stride_b + 1, part.rank * sizeof(size_t));
    return binary_split(ctx, &part, max_count);
  }
  size_t rows = b->shape[0], half = rows / 2, row_elems = b->count / rows;
  for (int i = 0; i < 2; i++) {
    size_t first = i ? half : 0, n = i ? rows - half : half;
    part.shape[0] = n;
    part.count = n * row_elems;
    part.a = wg_advance(b->a, first * b->stride_a[0]);
    part.b = wg_advance(b->b, first * b->stride_b[0]);
    part.out = wg_advance(b->out, first * row_elems);
    wgc_status s = binary_split(ctx, &part, max_count);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

wgc_status wg_binary(wgc_context *ctx, const wgc_binary_args *b) {
  return binary_split(ctx, b, chunk_elems(ctx));
}

wgc_status wg_copy_kernel(wgc_context *ctx, wgc_ref dst, wgc_ref src,
                          size_t bytes) {
  map_params p = {0};
  return map_run(ctx, "wgc_copy", "copy+map", NULL, &p, src, dst, bytes / 4,
                 chunk_elems(ctx));
}
