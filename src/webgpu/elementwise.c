/* Unary and binary (with broadcasting) ops on WebGPU. */
#include "plan.h"

#include <stdio.h>
#include <string.h>

#define ELEMS_PER_GROUP 1024u
/* map4 and binary4: 256 invocations of 4 vec4s. */
#define VEC4S_PER_GROUP 1024u
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
  wgc_dtype xt, yt;
  char small[128]; /* kernel with map_small, for short windows */
  char words[128]; /* kernel with map_words, for a 2-byte y */
} map_job;

static void map_window(void *user, uint64_t at, uint64_t n, wg_launch *l,
                       void *params) {
  const map_job *j = user;
  map_params *p = params;
  *p = *j->params;
  p->n = (uint32_t)n;
  *l = (wg_launch){.kernel = j->kernel,
                   .consts = j->consts,
                   .ops = {wg_typed_operand("x", j->x, j->xt, at, n, false),
                           wg_typed_operand("y", j->y, j->yt, at, n, true)},
                   .nops = 2,
                   .params_size = sizeof *p,
                   .groups = wg_ceil_div(n, ELEMS_PER_GROUP)};
  if (wg_half_type(j->yt)) {
    l->kernel = j->words;
    l->ops[1].name = "out";
    l->word_stores = 2;
    l->groups = wg_word_groups(&l->ops[1], n);
  } else if (n <= SMALL_ELEMS && j->small[0]) {
    l->kernel = j->small;
    l->groups = wg_ceil_div(n, 64);
  }
}

/* map_window over vec4s: at and n count vec4s, the kernel ends in
 * map4.wgsl. */
static void map4_window(void *user, uint64_t at, uint64_t n, wg_launch *l,
                        void *params) {
  const map_job *j = user;
  map_params *p = params;
  *p = *j->params;
  p->n = (uint32_t)n;
  *l = (wg_launch){.kernel = j->kernel,
                   .consts = j->consts,
                   .ops = {{.name = "x",
                            .ref = wg_advance(j->x, 4 * at),
                            .bytes = 16 * n,
                            .write = false},
                           {.name = "y",
                            .ref = wg_advance(j->y, 4 * at),
                            .bytes = 16 * n,
                            .write = true}},
                   .nops = 2,
                   .vec4 = 3,
                   .params_size = sizeof *p,
                   .groups = wg_ceil_div(n, VEC4S_PER_GROUP)};
}

/* dst = a, b and c in a row, cut to fit cap (kernel names and preludes
 * are short). */
static void join(char *dst, size_t cap, const char *a, const char *b,
                 const char *c) {
  wg_str s = {dst, cap, 0};
  wg_str_put(&s, a);
  wg_str_put(&s, b);
  wg_str_put(&s, c);
  wg_str_end(&s);
}

/* y[i] = f(x[i]) over total elements, in windows that bind (x and y in one
 * buffer may share a binding window): by kernel + "map4" over the vec4s
 * when x and y are f32 and start 16-byte aligned (one access per four
 * floats, which halves the time of a software adapter's loads and bounds
 * checks), and by kernel + "map" over the rest and over typed operands
 * (x of type xt, y of yt). */
static wgc_status map_run(wgc_context *ctx, const char *fn, const char *kernel,
                          const char *consts, const map_params *params,
                          wgc_ref x, wgc_dtype xt, wgc_ref y, wgc_dtype yt,
                          uint64_t total) {
  wg_plan plan;
  wg_plan_init(&plan, ctx, fn);
  map_job j = {"", consts, params, x, y, xt, yt, "", ""};
  char scalar[128], vec[128];
  join(scalar, sizeof scalar, kernel, "+map", "");
  join(j.small, sizeof j.small, kernel, "+map_small", "");
  join(j.words, sizeof j.words, kernel, "+map_words+words", "");
  join(vec, sizeof vec, kernel, "+map4", "");
  uint64_t chunk = wg_chunk_elems(plan.pol, ELEMS_PER_GROUP);
  uint64_t body = 0;
  wgc_status s = WGC_OK;
  if (xt == WGC_DTYPE_F32 && yt == WGC_DTYPE_F32 && x.offset % 16 == 0 &&
      y.offset % 16 == 0 && total > SMALL_ELEMS) {
    body = total / 4;
    map_job v = {vec, consts, params, x, y, xt, yt, "", ""};
    s = wg_plan_windows(&plan, body, chunk / 4, map4_window, &v);
    body *= 4;
  }
  j.kernel = scalar;
  j.x = wg_advance(x, body);
  j.y = wg_advance(y, body);
  if (s == WGC_OK && body < total)
    s = wg_plan_windows(&plan, total - body, chunk, map_window, &j);
  return wg_plan_finish(&plan, s);
}

/* The op's function in kernels/unary.wgsl. */
#define UNARY_FN_(NAME, name) "unary_" #name,
static const char *const unary_fns[] = {WGC_UNARY_OPS(UNARY_FN_)};
_Static_assert(sizeof unary_fns / sizeof *unary_fns == WGC_UNARY_OP_COUNT,
               "one function per unary op");

wgc_status wg_unary(wgc_context *ctx, const wgc_unary_args *u) {
  /* The prelude names the op's function, so that the kernel holds only
   * that op's code (see kernels/unary.wgsl). */
  char consts[160];
  join(consts, sizeof consts,
       "fn unary_op(x: f32, a: f32, b: f32, z: u32) -> f32 { return ",
       unary_fns[u->op], "(x, a, b, z); }");
  map_params p = {.alpha = u->alpha, .beta = u->beta};
  return map_run(ctx, u->fn, "math+unary+unary_map", consts, &p, u->input,
                 u->input_type, u->output, u->output_type, u->n);
}

/* Matches struct Params of kernels/binary.wgsl and binary4.wgsl: dim[d] is
 * (extent, stride of a, stride of b, 0), see kernels/unravel.wgsl. */
typedef struct binary_params {
  uint32_t off[4];
  uint32_t count, rank, pad[2];
  uint32_t dim[8][4];
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
    p->dim[d][0] = (uint32_t)b->shape[d];
    p->dim[d][1] = (uint32_t)b->stride_a[d];
    p->dim[d][2] = (uint32_t)b->stride_b[d];
  }
  return (wg_launch){
      .kernel = "math+binary_ops+binary_apply+unravel+binary",
      .consts = consts,
      .ops = {wg_typed_operand("a", b->a, b->a_type, 0,
                               strided_span(b, b->stride_a), false),
              wg_typed_operand("b", b->b, b->b_type, 0,
                               strided_span(b, b->stride_b), false),
              wg_typed_operand("out", b->out, b->out_type, 0, b->count, true)},
      .nops = 3,
      .params = p,
      .params_size = sizeof *p,
      .groups = (b->count + ELEMS_PER_GROUP - 1) / ELEMS_PER_GROUP};
}

/* Whether operand r, with row stride s0 and inner stride s1, reads in
 * binary4: as vec4s (s1 == 1, 16-byte aligned rows) or as one float per
 * row (s1 == 0). */
static bool vec4_operand(wgc_ref r, size_t s0, size_t s1) {
  return s1 == 0 || (s1 == 1 && r.offset % 16 == 0 && s0 % 4 == 0);
}

/* binary4.wgsl over b's first body elements, rows of cols (cols a
 * multiple of 4; rank 1: one row). */
static wgc_status binary4_add(wg_plan *plan, const wgc_binary_args *b,
                              size_t body, size_t cols) {
  binary_params p;
  char consts[64], consts4[192];
  wg_launch l = binary_plan(b, &p, consts, sizeof consts);
  size_t last = b->rank - 1;
  bool va = b->stride_a[last] == 1, vb = b->stride_b[last] == 1;
  bool rows = b->rank == 2;
  snprintf(consts4, sizeof consts4,
           "%s const A_VEC: bool = %s; const B_VEC: bool = %s; "
           "const ROWS: bool = %s;",
           consts, va ? "true" : "false", vb ? "true" : "false",
           rows ? "true" : "false");
  p.count = (uint32_t)(body / 4);
  p.rank = (uint32_t)(cols / 4);
  /* row strides in the units the kernel reads the operand in */
  p.dim[0][1] = rows ? (uint32_t)(va ? b->stride_a[0] / 4 : b->stride_a[0]) : 0;
  p.dim[0][2] = rows ? (uint32_t)(vb ? b->stride_b[0] / 4 : b->stride_b[0]) : 0;
  l.kernel = "math+binary_ops+binary_apply+binary4";
  l.consts = consts4;
  if (!rows) {
    l.ops[0].bytes = va ? 4 * (uint64_t)body : 4;
    l.ops[1].bytes = vb ? 4 * (uint64_t)body : 4;
    l.ops[2].bytes = 4 * (uint64_t)body;
  }
  l.vec4 = 7; /* a broadcast operand's ld4 is never called */
  l.groups = wg_ceil_div(body / 4, VEC4S_PER_GROUP);
  return wg_plan_add(plan, &l);
}

/* Adds the launches of b, which binds and fits the grid. binary4.wgsl (a
 * quarter of the accesses and bounds checks of binary.wgsl) takes a
 * rank-1 b over its whole vec4s, binary.wgsl the 1-3 floats after them,
 * and a rank-2 b whose rows are whole vec4s entirely (bias rows, per-row
 * scalars), where every operand is read as 16-byte aligned vec4s or is
 * broadcast along the inner dimension; binary.wgsl everything else. */
static wgc_status binary_add(wg_plan *plan, const wgc_binary_args *b) {
  binary_params p;
  char consts[64];
  wgc_binary_args tail = *b;
  size_t last = b->rank - 1;
  bool typed = b->a_type != WGC_DTYPE_F32 || b->b_type != WGC_DTYPE_F32 ||
               b->out_type != WGC_DTYPE_F32;
  bool vec = !typed && b->rank <= 2 && b->count > SMALL_ELEMS &&
             b->out.offset % 16 == 0 &&
             vec4_operand(b->a, b->rank == 2 ? b->stride_a[0] : 0,
                          b->stride_a[last]) &&
             vec4_operand(b->b, b->rank == 2 ? b->stride_b[0] : 0,
                          b->stride_b[last]) &&
             (b->rank == 1 || b->shape[1] % 4 == 0);
  if (vec && b->rank == 2)
    return binary4_add(plan, b, b->count, b->shape[1]);
  if (vec) {
    size_t body = b->count / 4 * 4;
    wgc_status s = binary4_add(plan, b, body, body);
    if (s != WGC_OK || body == b->count)
      return s;
    tail.shape[0] = tail.count = b->count - body;
    tail.a = wg_advance(b->a, body * b->stride_a[0]);
    tail.b = wg_advance(b->b, body * b->stride_b[0]);
    tail.out = wg_advance(b->out, body);
  }
  wg_launch l = binary_plan(&tail, &p, consts, sizeof consts);
  if (wg_half_type(tail.out_type)) {
    l.kernel = "math+binary_ops+binary_apply+unravel+binary_words+words";
    l.word_stores = 4;
    l.groups = wg_word_groups(&l.ops[2], tail.count);
  }
  return wg_plan_add(plan, &l);
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
    return binary_add(plan, b);
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
    part.a = wg_advance_typed(b->a, b->a_type, first * b->stride_a[0]);
    part.b = wg_advance_typed(b->b, b->b_type, first * b->stride_b[0]);
    part.out = wg_advance_typed(b->out, b->out_type, first * row_elems);
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
