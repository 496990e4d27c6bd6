/* Strided copy, gather and where on WebGPU. A strided launch spans the
 * whole of each operand's strided footprint, which a transpose or a
 * broadcast makes large even for few elements, so launches are split
 * along their outermost dimension until every operand binds; gather splits
 * its output and, for a table beyond one binding, its rows. */
#include "plan.h"

#include "dtype.h"

#include <string.h>

#define ELEMS_PER_GROUP 1024u

/* ---- strided launches (copy, where) ---------------------------------------
 * Operands 0..nops-1 read or written at sum(idx[d] * stride[k][d]) over
 * shape[rank]; the last operand is the one written. */

typedef struct nd_launch {
  const char *kernel;
  /* the kernel for a 2-byte output, which is then contiguous (NULL: the
   * output's stores are atomic) */
  const char *words_kernel;
  const char *fn;
  const char *names[WG_MAX_OPERANDS];
  unsigned nops;
  size_t rank, count;
  size_t shape[WGC_MAX_RANK];
  size_t stride[WG_MAX_OPERANDS][WGC_MAX_RANK];
  wgc_ref ref[WG_MAX_OPERANDS];
  wgc_dtype type[WG_MAX_OPERANDS]; /* zeroed: f32 */
} nd_launch;

/* dim[d] is (extent, then the strides of the operands whose strides the
 * kernel reads), see kernels/unravel.wgsl. */
typedef struct nd_params {
  uint32_t off[4];
  uint32_t count, rank, pad[2];
  uint32_t dim[8][4];
} nd_params;

static uint64_t nd_span(const nd_launch *n, unsigned k) {
  uint64_t last = 0;
  for (size_t d = 0; d < n->rank; d++)
    last += (uint64_t)(n->shape[d] - 1) * n->stride[k][d];
  return last + 1;
}

static wgc_status nd_split(wg_plan *plan, const nd_launch *n, unsigned strided,
                           uint64_t most) {
  wg_launch l = {.kernel = n->kernel, .nops = n->nops};
  for (unsigned k = 0; k < n->nops; k++)
    l.ops[k] = wg_typed_operand(n->names[k], n->ref[k], n->type[k], 0,
                                nd_span(n, k), k + 1 == n->nops);
  bool whole = n->count <= most && wg_plan_fits(plan, l.ops, l.nops);
  if (!whole && n->shape[0] == 1 && n->rank > 1) {
    nd_launch part = *n;
    part.rank--;
    memmove(part.shape, n->shape + 1, part.rank * sizeof *part.shape);
    for (unsigned k = 0; k < n->nops; k++)
      memmove(part.stride[k], n->stride[k] + 1, part.rank * sizeof(size_t));
    return nd_split(plan, &part, strided, most);
  }
  /* One element whose operands still do not bind apart: the plan stages
   * them. */
  if (whole || n->count == 1) {
    nd_params p = {.count = (uint32_t)n->count, .rank = (uint32_t)n->rank};
    for (size_t d = 0; d < n->rank; d++) {
      p.dim[d][0] = (uint32_t)n->shape[d];
      for (unsigned k = 0; k < strided; k++)
        p.dim[d][1 + k] = (uint32_t)n->stride[k][d];
    }
    l.params = &p;
    l.params_size = sizeof p;
    l.groups = wg_ceil_div(n->count, ELEMS_PER_GROUP);
    /* a contiguous 2-byte output is stored by whole words */
    unsigned last = n->nops - 1;
    if (n->words_kernel && wg_half_type(n->type[last])) {
      l.kernel = n->words_kernel;
      l.ops[last].name = "out";
      l.word_stores = 1u << last;
      l.groups = wg_word_groups(&l.ops[last], n->count);
    }
    return wg_plan_add(plan, &l);
  }
  nd_launch part = *n;
  size_t rows = n->shape[0], half = rows / 2, row_elems = n->count / rows;
  for (int i = 0; i < 2; i++) {
    size_t first = i ? half : 0;
    part.shape[0] = i ? rows - half : half;
    part.count = part.shape[0] * row_elems;
    for (unsigned k = 0; k < n->nops; k++)
      part.ref[k] =
          wg_advance_typed(n->ref[k], n->type[k], first * n->stride[k][0]);
    wgc_status s = nd_split(plan, &part, strided, most);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

static wgc_status nd_run(wgc_context *ctx, const nd_launch *n,
                         unsigned strided) {
  wg_plan plan;
  wg_plan_init(&plan, ctx, n->fn);
  return wg_plan_finish(
      &plan,
      nd_split(&plan, n, strided, wg_grid_elems(plan.pol, ELEMS_PER_GROUP)));
}

wgc_status wg_copy_strided(wgc_context *ctx, const wgc_copy_strided_args *c) {
  nd_launch n = {.kernel = "unravel+copy_strided",
                 .fn = c->fn,
                 .names = {"src", "dst"},
                 .nops = 2,
                 .rank = c->rank,
                 .count = c->count,
                 .ref = {c->src, c->dst},
                 .type = {c->src_type, c->dst_type}};
  memcpy(n.shape, c->shape, sizeof n.shape);
  memcpy(n.stride[0], c->stride_src, sizeof n.stride[0]);
  memcpy(n.stride[1], c->stride_dst, sizeof n.stride[1]);
  /* a row-major dst (the usual transpose or gather into place) is written
   * at the flat index, by words where its type is 2 bytes */
  bool contiguous = true;
  for (size_t d = c->rank, s = 1; d-- > 0; s *= c->shape[d])
    contiguous = contiguous && (c->shape[d] == 1 || c->stride_dst[d] == s);
  if (contiguous)
    n.words_kernel = "unravel+copy_strided_words+words";
  return nd_run(ctx, &n, 2);
}

wgc_status wg_where(wgc_context *ctx, const wgc_where_args *w) {
  nd_launch n = {.kernel = "unravel+where",
                 .words_kernel = "unravel+where_words+words",
                 .fn = w->fn,
                 .names = {"cond", "a", "b", "out"},
                 .nops = 4,
                 .rank = w->rank,
                 .count = w->count,
                 .ref = {w->cond, w->a, w->b, w->out},
                 .type = {w->cond_type, w->a_type, w->b_type, w->out_type}};
  memcpy(n.shape, w->shape, sizeof n.shape);
  memcpy(n.stride[0], w->stride_cond, sizeof n.stride[0]);
  memcpy(n.stride[1], w->stride_a, sizeof n.stride[1]);
  memcpy(n.stride[2], w->stride_b, sizeof n.stride[2]);
  /* the output is contiguous; its strides only size and place pieces */
  for (size_t d = w->rank, s = 1; d-- > 0; s *= w->shape[d])
    n.stride[3][d] = s;
  return nd_run(ctx, &n, 3);
}

/* ---- gather -----------------------------------------------------------------
 */

/* Outputs [o0, +on) x [j0, +jn) x [c0, +cn) reading axis rows [k0, +kn). */
typedef struct gather_piece {
  size_t o0, on, j0, jn, k0, kn, c0, cn;
} gather_piece;

typedef struct gather_params {
  uint32_t off[4];
  uint32_t count, cn, jn, len, inner, nidx, k0, k1, zero_oob, dc, pad[2];
} gather_params;

/* Halves dimension which (0 o, 1 j, 2 k, 3 c) of p into a and b. */
static void halve(const gather_piece *p, int which, gather_piece *a,
                  gather_piece *b) {
  *a = *b = *p;
  size_t *first[4] = {&b->o0, &b->j0, &b->k0, &b->c0};
  size_t *na[4] = {&a->on, &a->jn, &a->kn, &a->cn};
  size_t *nb[4] = {&b->on, &b->jn, &b->kn, &b->cn};
  size_t n = *na[which];
  *na[which] = n / 2;
  *nb[which] = n - n / 2;
  *first[which] += n / 2;
}

static wgc_status gather_split(wg_plan *plan, const wgc_gather_args *g,
                               const gather_piece *p, uint64_t most) {
  uint64_t inner = g->inner, count = (uint64_t)p->on * p->jn * p->cn;
  /* data, when the piece reads rows, is the last operand of the launch, so
   * a table without rows leaves its accessor to the constant below */
  wg_launch l = {.kernel = "gather+gather_main", .nops = p->kn ? 3 : 2};
  l.ops[0] = (wg_operand){.name = "indices",
                          .ref = wg_advance(g->indices, p->j0),
                          .bytes = 4 * p->jn,
                          .write = false};
  l.ops[1] =
      wg_typed_operand("output", g->output, g->output_type,
                       ((uint64_t)p->o0 * g->n_indices + p->j0) * inner + p->c0,
                       ((uint64_t)p->on - 1) * g->n_indices * inner +
                           ((uint64_t)p->jn - 1) * inner + p->cn,
                       true);
  /* a block table is bound from the block holding column c0 (its rows are
   * whole blocks), the kernel stepping dc elements into it */
  uint64_t dc = p->c0 % wgc_dtype_block(g->data_type);
  if (p->kn)
    l.ops[2] = wg_typed_operand("data", g->data, g->data_type,
                                ((uint64_t)p->o0 * g->len + p->k0) * inner +
                                    p->c0 - dc,
                                ((uint64_t)p->on - 1) * g->len * inner +
                                    ((uint64_t)p->kn - 1) * inner + dc + p->cn,
                                false);
  else
    l.consts = "fn data_ld(i: u32) -> f32 { return 0.0; }";
  int which = -1;
  if (count > most || !wg_plan_fits(plan, l.ops, l.nops)) {
    if (p->on > 1)
      which = 0;
    else if (p->kn > 1 && !wg_plan_fits(plan, l.ops + 2, 1))
      which = 2;
    else if (p->jn > 1)
      which = 1;
    else if (p->cn > 1)
      which = 3;
    else if (p->kn > 1)
      which = 2;
  }
  if (which >= 0) {
    gather_piece a, b;
    halve(p, which, &a, &b);
    wgc_status s = gather_split(plan, g, &a, most);
    return s == WGC_OK ? gather_split(plan, g, &b, most) : s;
  }
  gather_params prm = {.count = (uint32_t)count,
                       .cn = (uint32_t)p->cn,
                       .jn = (uint32_t)p->jn,
                       .len = (uint32_t)g->len,
                       .inner = (uint32_t)g->inner,
                       .nidx = (uint32_t)g->n_indices,
                       .k0 = (uint32_t)p->k0,
                       .k1 = (uint32_t)(p->k0 + p->kn),
                       .zero_oob = p->k0 == 0,
                       .dc = (uint32_t)dc};
  l.params = &prm;
  l.params_size = sizeof prm;
  l.groups = wg_ceil_div(count, ELEMS_PER_GROUP);
  /* outputs contiguous in a 2-byte output (whole rows of inner, and all
   * the indices or one outer index) are stored by whole words */
  if (wg_half_type(g->output_type) && p->cn == inner &&
      (p->on == 1 || p->jn == g->n_indices)) {
    l.kernel = "gather+gather_words";
    l.word_stores = 2;
    l.groups = wg_word_groups(&l.ops[1], count);
  }
  return wg_plan_add(plan, &l);
}

wgc_status wg_gather(wgc_context *ctx, const wgc_gather_args *g) {
  /* Indices are int32: no valid one reaches past 2^31 rows, but the length
   * itself must fit the kernel's u32 arithmetic. */
  if (g->len > 0xFFFFFFFFu)
    return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                    "%s: shape[axis] %zu is above the 2^32 - 1 rows WebGPU "
                    "indexes",
                    g->fn, g->len);
  gather_piece p = {
      .on = g->outer, .jn = g->n_indices, .kn = g->len, .cn = g->inner};
  wg_plan plan;
  wg_plan_init(&plan, ctx, g->fn);
  return wg_plan_finish(
      &plan,
      gather_split(&plan, g, &p, wg_grid_elems(plan.pol, ELEMS_PER_GROUP)));
}
