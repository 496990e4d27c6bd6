/* Unary and binary (with broadcasting) ops on WebGPU. */
#include "plan.h"

#include <stdio.h>
#include <string.h>

#define ELEMS_PER_GROUP 1024u
/* Runs this short use map_small.wgsl (64 invocations, one element each). */
#define SMALL_ELEMS 256u

/* Matches struct Params of kernels/map.wgsl. */
typedef struct map_params {
  uint32_t off[4];
  uint32_t n;
  float alpha, beta; /* wgc_unary_params' */
  uint32_t pad;
} map_params;

/* One launch of map_plan: y[i] = f(x[i]) over a window. */
typedef struct map_job {
  const char *kernel, *consts;
  const map_params *params;
  wgc_ref x, y;
  char small[128]; /* kernel with its last file, map, as map_small */
} map_job;

static void map_window(void *user, uint64_t at, uint64_t n, wg_launch *l,
                       void *params) {
  const map_job *j = user;
  map_params *p = params;
  *p = *j->params;
  p->n = (uint32_t)n;
  *l = (wg_launch){.kernel = j->kernel,
                   .consts = j->consts,
                   .ops = {{"x", wg_advance(j->x, at), 4 * n, false},
                           {"y", wg_advance(j->y, at), 4 * n, true}},
                   .nops = 2,
                   .params_size = sizeof *p,
                   .groups = wg_ceil_div(n, ELEMS_PER_GROUP)};
  if (n <= SMALL_ELEMS && j->small[0]) {
    l->kernel = j->small;
    l->groups = wg_ceil_div(n, 64);
  }
}

/* y[i] = f(x[i]) by kernel (ending in map.wgsl) over total elements, in
 * windows that bind (x and y in one buffer may share a binding window). */
static wgc_status map_run(wgc_context *ctx, const char *fn, const char *kernel,
                          const char *consts, const map_params *params,
                          wgc_ref x, wgc_ref y, uint64_t total) {
  wg_plan plan;
  wg_plan_init(&plan, ctx, fn);
  map_job j = {kernel, consts, params, x, y, ""};
  size_t len = strlen(kernel);
  if (len < sizeof j.small - 6) {
    memcpy(j.small, kernel, len);
    memcpy(j.small + len, "_small", 7);
  }
  return wg_plan_finish(
      &plan,
      wg_plan_windows(&plan, total, wg_chunk_elems(plan.pol, ELEMS_PER_GROUP),
                      map_window, &j));
}

wgc_status wg_unary(wgc_context *ctx, const wgc_unary_args *u) {
  char consts[32];
  snprintf(consts, sizeof consts, "const OP: u32 = %uu;", (unsigned)u->op);
  map_params p = {.alpha = u->alpha, .beta = u->beta};
  return map_run(ctx, u->fn, "math+unary_ops+unary+unary_map+map", consts, &p,
                 u->input, u->output, u->n);
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
static wgc_status binary_split(wg_plan *plan, const wgc_binary_args *b,
                               uint64_t max_count) {
  binary_params p;
  char consts[64];
  wg_launch l = binary_plan(b, &p, consts, sizeof consts);
  if (b->count <= max_count && wg_plan_fits(plan, l.ops, l.nops))
    return wg_plan_add(plan, &l);
  wgc_binary_args part = *b;
  if (b->shape[0] == 1) {
    if (b->rank == 1) /* one element: operands a few bytes apart, staged */
      return wg_plan_add(plan, &l);
    part.rank--;
    memmove(part.shape, b->shape + 1, part.rank * sizeof *part.shape);
    memmove(part.stride_a, b->stride_a + 1, part.rank * sizeof(size_t));
    memmove(part.stride_b, b->stride_b + 1, part.rank * sizeof(size_t));
    return binary_split(plan, &part, max_count);
  }
  size_t rows = b->shape[0], half = rows / 2, row_elems = b->count / rows;
  for (int i = 0; i < 2; i++) {
    size_t first = i ? half : 0, n = i ? rows - half : half;
    part.shape[0] = n;
    part.count = n * row_elems;
    part.a = wg_advance(b->a, first * b->stride_a[0]);
    part.b = wg_advance(b->b, first * b->stride_b[0]);
    part.out = wg_advance(b->out, first * row_elems);
    wgc_status s = binary_split(plan, &part, max_count);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

wgc_status wg_binary(wgc_context *ctx, const wgc_binary_args *b) {
  wg_plan plan;
  wg_plan_init(&plan, ctx, b->fn);
  return wg_plan_finish(
      &plan, binary_split(&plan, b, wg_chunk_elems(plan.pol, ELEMS_PER_GROUP)));
}
