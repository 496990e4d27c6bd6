/* GEMM and strided batched GEMM on WebGPU.
 *
 * The strided form of wgc_gemm_args is cut into launch regions: a range of
 * batches, rows and columns of C and a range of k. A region is one launch
 * (or two, with split-K) when its grid fits the device's dispatch limits and
 * every buffer's binding window (operands of one buffer share one window,
 * as the engine binds them) fits maxStorageBufferBindingSize; otherwise
 * it is halved (over batches when the grid is too large, else along the
 * dimension that spans the most memory; the later half of a k split
 * accumulates onto C with beta = 1), so large operands run in pieces rather
 * than failing. An input that shares its buffer with an operand too far away
 * to be bound together is first copied to scratch (staged). Every piece
 * emits into one wg_plan, recorded only once all of it is checked: a piece
 * that cannot run is reported before anything changes.
 *
 * Kernels (kernels/gemm*.wgsl), chosen per adapter and shape by
 * gemm_select.c:
 *   gemm        tiled: BM x BN block of C per workgroup, TM x TN (4x4) per
 *               invocation in registers, A and B staged through workgroup
 *               memory BK (16) at a time (GPUs).
 *   gemm_rv     register blocks of 4x4 to 16x16 per invocation read
 *               straight from memory, no workgroup memory (CPU adapters,
 *               where barriers are costly).
 *   gemm_small  one invocation per output element: tiny, thin or short-k
 *               products, where tile padding would dominate.
 *   gemm_mv     m = 1 on CPU adapters (decoding): one invocation per two
 *               columns of C, which share A's loads, with B's k contiguous
 *               read a vec4 (f32, and f16/bf16 where aligned) or a u32
 *               word (2 halves, 4 int8, 8 nibbles; a block's scale and
 *               each word once) at a time, its loops written out where
 *               SwiftShader pays more per turn than per body, and its
 *               decoding free of shifts, which SwiftShader runs lane by
 *               lane (1 x 4096 x 4096, each type's time over f32's,
 *               f16/bf16/Q8_0/Q4_0: SwiftShader 0.70/0.65/0.94/0.84,
 *               in Chromium 0.61-0.65/0.46-0.50/0.74-0.81/0.68-0.76,
 *               llvmpipe 0.83/0.73/0.79/0.67).
 *   gemm_reduce second pass of split-K: sums partial sums from scratch.
 *   gemm_scale  C := beta*C, for k == 0 or alpha == 0 (A, B not bound).
 *   gemm_final  C := act(alpha*T + beta*C + bias) from an f32 scratch T.
 * Split-K: when a region has few outputs but a long k, the k range is cut
 * into slices whose raw partial sums go to scratch ([slice][batch][i][j]);
 * gemm_reduce then applies alpha and beta.
 * Each kernel that writes C does so through gemm_out: gemm_out_c for the
 * plain GEMM, gemm_out_ep (with activation.wgsl) for one with an epilogue
 * (wgc_gemm_ex), so the plain kernels compile without it. The epilogue
 * goes where the whole sum is: the reduction of split-K, the scale kernel,
 * and of a region split along k only the last piece.
 *
 * Typed operands (f16, bf16, a Q8_0/Q4_0 B, an f16 bias) are read through
 * accessors that decode them (wg_operand.type), so every kernel serves
 * every type; only the vec4 reads of gemm_rv stay f32-only (gemm_mv
 * decodes whole words itself, and gemm_rv reads a typed B whose columns
 * run along k four k at a time, gemm_rv_bk, each word and block scale
 * once for the four). A 2-byte C is
 * stored with atomic half-word updates (see wg_operand): race-free in
 * every kernel as it is, where an f32 intermediate and a cast would cost
 * a second pass and C's strides. A block B's regions start and end k at
 * whole blocks. Only where the plan splits k across launches (a loop
 * longer than the adapter runs, or binding windows) would the later piece
 * add onto a C already rounded to 2 bytes: such a GEMM accumulates into
 * an f32 scratch T instead, and gemm_final rounds C once. */
#include "gemm.h"
#include "gemm_select.h"
#include "plan.h"

#include "dtype.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Matches struct Params of kernels/gemm_common.wgsl. */
typedef struct gemm_params {
  uint32_t off[4];
  uint32_t m, n, k, nb;
  uint32_t rs_a, cs_a, rs_b, cs_b;
  uint32_t rs_c, cs_c, ba, bb;
  uint32_t bc, kslice, nslices, total;
  float alpha, beta;
  uint32_t use_c; /* beta != 0, decided here: true for a NaN beta */
  uint32_t pad;
} gemm_params;

#define SMALL_GROUP 256u
/* Split-K targets: enough workgroups (tiled) or invocations (small) to fill
 * a GPU, and slices long enough to be worth a second pass. */
#define SPLIT_TARGET_GROUPS 64u
#define SPLIT_TARGET_THREADS 8192u
#define SPLIT_MIN_K_TILED 512u
#define SPLIT_MIN_K_SMALL 256u
#define SCRATCH_MAX_BYTES (64u << 20)
/* Largest input copied to scratch to escape a shared binding window. */
#define STAGE_MAX_BYTES (64u << 20)
/* Staged copies this small are made before splitting over batches. */
#define STAGE_CHEAP_BYTES (1u << 20)

/* One launch region, in coordinates of the whole problem. */
typedef struct region {
  size_t b0, nb, i0, mm, j0, nn, k0, kk;
  float beta;
  /* A, B or the bias (stage[OP_A], ...) is copied to scratch first: it
   * shares a buffer with another operand too far away to be bound
   * together. */
  bool stage[3];
} region;

/* The operand slots of a region; the inputs (that may be staged) first. */
enum { OP_A, OP_B, OP_BIAS, OP_C, OP_COUNT };

/* How a region runs. */
typedef enum { K_SCALE, K_SMALL, K_TILED } kind;

typedef struct form {
  kind kind;
  bool mv;          /* K_SMALL as gemm_mv */
  gemm_choice tile; /* K_TILED: gemm (GEMM_SHARED) or gemm_rv (GEMM_REGS) */
  uint64_t slices, kslice;
} form;

/* Elements spanned by nb batches of a rows x cols matrix. */
static uint64_t span(size_t nb, size_t bs, size_t rows, size_t rs, size_t cols,
                     size_t cs) {
  return (uint64_t)(nb - 1) * bs + (uint64_t)(rows - 1) * rs +
         (uint64_t)(cols - 1) * cs + 1;
}

/* Whether the present operands bind as the plan binds them; own[i]:
 * operand i will be in a buffer of its own (staged to scratch). */
static bool windows_fit(const wg_plan *wp, const wg_operand *ops,
                        const bool *present, const bool *own) {
  wg_operand shared[OP_COUNT];
  unsigned n = 0;
  for (unsigned i = 0; i < OP_COUNT; i++) {
    if (!present[i])
      continue;
    if (!own[i])
      shared[n++] = ops[i];
    else if (ops[i].bytes > wp->pol->window)
      return false;
  }
  return wg_plan_fits(wp, shared, n);
}

/* k steps at which a region may start or end: whole blocks of B. */
static uint64_t k_unit(const wgc_gemm_args *g) {
  return wgc_dtype_block(g->b_type);
}

static bool has_epilogue(const wgc_gemm_args *g) {
  return g->has_bias || g->act != WGC_ACTIVATION_NONE;
}

/* gemm_mv's k step: its slices start at multiples of it, so that every
 * column's start is as aligned as B's offset and strides. */
#define MV_STEP 8u

/* Whether gemm_mv can read the region's B: k contiguous, and every
 * column's (and batch's, and slice's) start at a vec4 (f32) or a word
 * (f16, bf16) of B's binding; block types start at whole blocks anyway. */
static bool mv_fits(const wgc_gemm_args *g, const region *r) {
  if (g->rs_b != 1 && r->kk > 1)
    return false;
  uint64_t el = r->nn > 1 ? g->cs_b : 0, eb = r->nb > 1 ? g->batch_b : 0;
  uint64_t off = (uint64_t)r->b0 * g->batch_b + (uint64_t)r->k0 +
                 (uint64_t)r->j0 * g->cs_b;
  switch (g->b_type) {
  case WGC_DTYPE_F32: /* b_ld4 counts vec4s from the operand's offset */
    return el % 4 == 0 && eb % 4 == 0;
  case WGC_DTYPE_F16:
  case WGC_DTYPE_BF16: /* bindings start at 4-byte multiples */
    return el % 2 == 0 && eb % 2 == 0 && (g->b.offset / 2 + off) % 2 == 0;
  default:
    return true;
  }
}

/* Chooses the kernel, tile and split-K for a region. */
static form make_form(const wg_plan *wp, const wgc_gemm_args *g,
                      const region *r) {
  form p = {.kind = K_SMALL, .slices = 1, .kslice = r->kk};
  if (g->k == 0 || g->alpha == 0.0f) {
    p.kind = K_SCALE;
    p.kslice = 0;
    return p;
  }
  p.mv = mv_fits(g, r) && wg_gemm_mv(wp->ctx, r->mm, g->b_type);
  p.tile = p.mv ? (gemm_choice){.kernel = GEMM_SMALL, .bk = 1}
                : wg_gemm_choose(wp->ctx, r->nb, r->mm, r->nn, r->kk);
  if (p.tile.kernel != GEMM_SMALL)
    p.kind = K_TILED;
  uint64_t outputs = (uint64_t)r->nb * r->mm * r->nn;
  if (p.kind == K_TILED) {
    /* the best block's tile, where a cheaper one stands in for it */
    uint64_t sbm = p.tile.split_bm ? p.tile.split_bm : p.tile.bm;
    uint64_t sbn = p.tile.split_bn ? p.tile.split_bn : p.tile.bn;
    uint64_t groups = wg_ceil_div(r->mm, sbm) * wg_ceil_div(r->nn, sbn) * r->nb;
    if (groups < SPLIT_TARGET_GROUPS && r->kk >= 2 * SPLIT_MIN_K_TILED) {
      uint64_t s = wg_ceil_div(SPLIT_TARGET_GROUPS, groups);
      uint64_t smax = r->kk / SPLIT_MIN_K_TILED;
      p.slices = s < smax ? s : smax;
    }
  } else if (outputs < SPLIT_TARGET_THREADS && r->kk >= 2 * SPLIT_MIN_K_SMALL) {
    uint64_t s = wg_ceil_div(SPLIT_TARGET_THREADS, outputs);
    uint64_t smax = r->kk / SPLIT_MIN_K_SMALL;
    p.slices = s < smax ? s : smax;
  }
  if (p.slices > 1) {
    uint64_t per = outputs * 4;
    if (p.slices * per > SCRATCH_MAX_BYTES)
      p.slices = SCRATCH_MAX_BYTES / per;
    if (p.slices < 2)
      p.slices = 1;
  }
  uint64_t unit = p.kind == K_TILED ? p.tile.bk : p.mv ? MV_STEP : 1;
  if (k_unit(g) > 1) /* 32: a multiple of every bk and of MV_STEP */
    unit = k_unit(g);
  p.kslice = wg_ceil_div(wg_ceil_div(r->kk, p.slices), unit) * unit;
  p.slices = wg_ceil_div(r->kk, p.kslice);
  return p;
}

/* Whether the region's launches apply the epilogue: those that write the
 * whole sum (scale, or the region that ends k; the earlier pieces of a k
 * split write partial sums for the later to add onto). */
static bool region_ep(const wgc_gemm_args *g, const region *r, const form *p) {
  return has_epilogue(g) && (p->kind == K_SCALE || r->k0 + r->kk == g->k);
}

/* The launch operands of a region by slot, and which are present: a and b
 * unless the form is K_SCALE, the bias when the region applies it. */
static void region_ops(const wgc_gemm_args *g, const region *r, const form *p,
                       wg_operand *ops, bool *present) {
  bool scale = p->kind == K_SCALE;
  present[OP_A] = present[OP_B] = !scale;
  ops[OP_A] = wg_typed_operand(
      "a", g->a, g->a_type,
      (uint64_t)r->b0 * g->batch_a + (uint64_t)r->i0 * g->rs_a +
          (uint64_t)r->k0 * g->cs_a,
      scale ? 0 : span(r->nb, g->batch_a, r->mm, g->rs_a, r->kk, g->cs_a),
      false);
  ops[OP_B] = wg_typed_operand(
      "b", g->b, g->b_type,
      (uint64_t)r->b0 * g->batch_b + (uint64_t)r->k0 * g->rs_b +
          (uint64_t)r->j0 * g->cs_b,
      scale ? 0 : span(r->nb, g->batch_b, r->kk, g->rs_b, r->nn, g->cs_b),
      false);
  ops[OP_C] = wg_typed_operand(
      "c", g->c, g->c_type,
      (uint64_t)r->b0 * g->batch_c + (uint64_t)r->i0 * g->rs_c +
          (uint64_t)r->j0 * g->cs_c,
      span(r->nb, g->batch_c, r->mm, g->rs_c, r->nn, g->cs_c), true);
  present[OP_C] = true;
  bool per_row = g->bias_kind == WGC_BIAS_PER_ROW;
  present[OP_BIAS] = g->has_bias && region_ep(g, r, p);
  ops[OP_BIAS] = wg_typed_operand(
      "bias", g->bias, g->bias_type, per_row ? r->i0 : r->j0,
      present[OP_BIAS] ? (uint64_t)(per_row ? r->mm : r->nn) : 0, false);
}

/* Whether a planned region fits one launch. */
typedef enum { FIT_OK, FIT_GRID, FIT_WINDOW, FIT_LOOP } fit;

/* Loop iterations one invocation of the planned kernel runs, about: the
 * k loop of gemm_small takes two k a turn; gemm_mv eight (or a block) a
 * turn, and a typed B's column redone element by element (mv_exact) takes
 * one k a turn, for both columns; gemm_rv one; the tiled kernel spends
 * about 5 per k on its staging and inner loops. */
static uint64_t loop_cost(const wgc_gemm_args *g, const form *p) {
  switch (p->kind) {
  case K_SCALE:
    return 1;
  case K_SMALL:
    if (!p->mv)
      return p->kslice / 2 + 2;
    return p->kslice / 8 + 8 +
           (g->b_type == WGC_DTYPE_F32 || g->b_type == WGC_DTYPE_BF16
                ? 0
                : 2 * p->kslice);
  default:
    return p->tile.kernel == GEMM_REGS ? p->kslice + 2 : 5 * p->kslice + 2;
  }
}

static fit region_fits(const wg_plan *wp, const wgc_gemm_args *g,
                       const region *r, const form *p) {
  uint64_t maxd = wp->pol->max_groups;
  uint64_t outputs = (uint64_t)r->nb * r->mm * r->nn;
  if (p->kind == K_TILED) {
    if (wg_ceil_div(r->mm, p->tile.bm) > maxd ||
        wg_ceil_div(r->nn, p->tile.bn) > maxd || r->nb * p->slices > maxd)
      return FIT_GRID;
  } else {
    uint64_t threads = outputs * (p->kind == K_SMALL ? p->slices : 1);
    if (threads > 0x7FFFFFFFu ||
        wg_ceil_div(threads, SMALL_GROUP) > maxd * maxd)
      return FIT_GRID;
  }
  if (p->slices > 1 &&
      (outputs > 0x7FFFFFFFu || outputs * p->slices * 4 > wp->pol->window))
    return FIT_GRID;
  /* Longer k loops than the adapter runs would lose terms: split k. */
  uint32_t budget = wp->pol->loop_budget;
  if (budget && loop_cost(g, p) > budget)
    return FIT_LOOP;
  wg_operand ops[OP_COUNT];
  bool present[OP_COUNT];
  region_ops(g, r, p, ops, present);
  bool own[OP_COUNT] = {r->stage[OP_A], r->stage[OP_B], r->stage[OP_BIAS],
                        false};
  return windows_fit(wp, ops, present, own) ? FIT_OK : FIT_WINDOW;
}

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t m = a > b ? a : b;
  return m > c ? m : c;
}

/* Halves a region along dimension dim (0 batches, 1 rows, 2 columns, 3 k);
 * rows and columns at multiples of 64 while they are longer, k at
 * multiples of kunit. */
static void halve(const region *r, int dim, uint64_t kunit, region *lo,
                  region *hi) {
  *lo = *r;
  *hi = *r;
  size_t *start[2][4] = {{&lo->b0, &lo->i0, &lo->j0, &lo->k0},
                         {&hi->b0, &hi->i0, &hi->j0, &hi->k0}};
  size_t *len[2][4] = {{&lo->nb, &lo->mm, &lo->nn, &lo->kk},
                       {&hi->nb, &hi->mm, &hi->nn, &hi->kk}};
  size_t n = *len[0][dim], half = n / 2;
  if ((dim == 1 || dim == 2) && n > 64)
    half = wg_ceil_div(half, 64) * 64;
  if (dim == 3 && kunit > 1) /* split_dim leaves n at least 2 units */
    half = wg_ceil_div(half, kunit) * kunit;
  *len[0][dim] = half;
  *start[1][dim] += half;
  *len[1][dim] = n - half;
  if (dim == 3) /* the second half accumulates onto what the first wrote */
    hi->beta = 1.0f;
}

/* The dimension to split a region that does not fit along: for the grid,
 * batches first, then the dimension of too many tiles; for the binding
 * windows, the dimension that spans the most memory; for a k loop longer
 * than the adapter runs, k. -1: none helps. */
static int split_dim(const wg_plan *wp, const wgc_gemm_args *g, const region *r,
                     const form *p, fit f) {
  if (f == FIT_LOOP)
    return 3;
  if (f == FIT_GRID) {
    if (r->nb > 1)
      return 0;
    if (p->kind == K_TILED)
      return wg_ceil_div(r->mm, p->tile.bm) > wp->pol->max_groups ? 1 : 2;
    return r->mm > 1 ? 1 : 2;
  }
  bool scale = p->kind == K_SCALE;
  uint64_t t[4] = {
      (uint64_t)(r->nb - 1) *
          max3(scale ? 0 : g->batch_a, scale ? 0 : g->batch_b, g->batch_c),
      (uint64_t)(r->mm - 1) * max3(scale ? 0 : g->rs_a, 0, g->rs_c),
      (uint64_t)(r->nn - 1) * max3(scale ? 0 : g->cs_b, 0, g->cs_c),
      scale || r->kk < 2 * k_unit(g)
          ? 0
          : (uint64_t)(r->kk - 1) * max3(g->cs_a, g->rs_b, 0)};
  /* Lengths of 1 span nothing but may still be split (when only the
   * merged window of far-apart operands is too large, nothing helps). */
  int best = -1;
  for (int d = 0; d < 4; d++)
    if (t[d] > 0 && (best < 0 || t[d] > t[best]))
      best = d;
  return best;
}

static uint32_t u32_of(uint64_t v) { return (uint32_t)v; }

/* Whether gemm_rv reads B a vec4 per column group: every group is 4
 * contiguous floats of B starting at a multiple of 4 from B's offset (so
 * none straddles the edge of C), and B's offset is 16-byte aligned so that
 * its binding can be declared as vec4s. Otherwise B is read float by float
 * as before. */
static bool rv_b4(const wgc_gemm_args *g, const region *r,
                  const wg_operand *b) {
  return g->b_type == WGC_DTYPE_F32 && r->nn % 4 == 0 && g->cs_b == 1 &&
         (r->kk == 1 || g->rs_b % 4 == 0) &&
         (r->nb == 1 || g->batch_b % 4 == 0) && b->ref.offset % 16 == 0;
}

/* Whether gemm_rv may read a typed B four k of a column at a time
 * (gemm_rv_bk.wgsl, where A is read so too): B's columns run along k, and
 * for a 2-byte B every column's, batch's and k slice's start falls on a
 * word (a block B's are whole blocks, and the four k never leave one). */
static bool rv_bk(const wgc_gemm_args *g, const region *r, const form *p,
                  const wg_operand *b) {
  if (g->b_type == WGC_DTYPE_F32 || (r->kk > 1 && g->rs_b != 1))
    return false;
  if (g->b_type != WGC_DTYPE_F16 && g->b_type != WGC_DTYPE_BF16)
    return true;
  return (r->nn == 1 || g->cs_b % 2 == 0) &&
         (r->nb == 1 || g->batch_b % 2 == 0) &&
         (p->slices == 1 || p->kslice % 2 == 0) &&
         (b->ref.offset + b->lead) % 4 == 0;
}

/* Whether gemm_mv's 2-byte B may be bound as vec4s (wg_launch.words4):
 * every column's start (and every batch's and k slice's: MV_STEP is 8) 8
 * elements, 16 bytes, into an aligned vec4. */
static bool mv_words4(const wgc_gemm_args *g, const region *r,
                      const wg_operand *b) {
  return wg_half_type(g->b_type) && (r->nn == 1 || g->cs_b % 8 == 0) &&
         (r->nb == 1 || g->batch_b % 8 == 0) &&
         (b->ref.offset + b->lead) % 16 == 0;
}

/* Whether gemm_rv reads A four k at a time, a vec4 per row: where it pays
 * on the adapter (gemm_choice.k4), or to read a typed B four k at a time
 * (typed_b: rv_bk; its decoding pays on every adapter), and A's rows run
 * contiguously along k from multiples of 4 floats (offset, row and batch
 * strides, and the start of every k slice), with at least one whole run. */
static bool rv_a4(const wgc_gemm_args *g, const region *r, const form *p,
                  const wg_operand *a, bool typed_b) {
  return g->a_type == WGC_DTYPE_F32 && (p->tile.k4 || typed_b) && r->kk >= 4 &&
         g->cs_a == 1 && (r->mm == 1 || g->rs_a % 4 == 0) &&
         (r->nb == 1 || g->batch_a % 4 == 0) &&
         (p->slices == 1 || p->kslice % 4 == 0) && a->ref.offset % 16 == 0;
}

static wgc_status launch_region(wg_plan *wp, const wgc_gemm_args *g,
                                const region *r, const form *p) {
  wg_operand ops[OP_COUNT];
  bool present[OP_COUNT];
  region_ops(g, r, p, ops, present);
  bool split = p->slices > 1;
  for (unsigned i = OP_A; i <= OP_BIAS; i++) {
    if (!present[i] || !r->stage[i])
      continue;
    wgc_ref copy;
    wgc_status s = wg_plan_scratch(wp, ops[i].bytes, &copy);
    if (s == WGC_OK)
      s = wg_plan_copy(wp, copy, ops[i].ref, ops[i].bytes);
    if (s != WGC_OK)
      return s;
    ops[i].ref = copy;
  }
  uint64_t outputs = (uint64_t)r->nb * r->mm * r->nn;
  /* Strides of dimensions of length 1 are never used: 0 keeps them (and
   * the indices) within u32. */
  gemm_params prm = {
      .m = u32_of(r->mm),
      .n = u32_of(r->nn),
      .k = u32_of(r->kk),
      .nb = u32_of(r->nb),
      .rs_a = u32_of(r->mm > 1 ? g->rs_a : 0),
      .cs_a = u32_of(r->kk > 1 ? g->cs_a : 0),
      .rs_b = u32_of(r->kk > 1 ? g->rs_b : 0),
      .cs_b = u32_of(r->nn > 1 ? g->cs_b : 0),
      .rs_c = u32_of(r->mm > 1 ? g->rs_c : 0),
      .cs_c = u32_of(r->nn > 1 ? g->cs_c : 0),
      .ba = u32_of(r->nb > 1 ? g->batch_a : 0),
      .bb = u32_of(r->nb > 1 ? g->batch_b : 0),
      .bc = u32_of(r->nb > 1 ? g->batch_c : 0),
      .kslice = u32_of(p->kslice),
      .nslices = u32_of(p->slices),
      .alpha = p->kind == K_SCALE ? 0.0f : g->alpha,
      .beta = r->beta,
      .use_c = r->beta != 0.0f,
  };

  /* The epilogue's constants; without a bias its accessor still has to
   * exist: an empty operand at C (never read, BIAS is 0). */
  bool ep = region_ep(g, r, p);
  char ep_consts[64] = "";
  if (ep) {
    snprintf(ep_consts, sizeof ep_consts,
             "const ACT: u32 = %uu; const BIAS: u32 = %uu;", (unsigned)g->act,
             !g->has_bias                       ? 0u
             : g->bias_kind == WGC_BIAS_PER_ROW ? 2u
                                                : 1u);
    if (!g->has_bias)
      ops[OP_BIAS] = (wg_operand){
          .name = "bias", .ref = ops[OP_C].ref, .bytes = 0, .write = false};
  }

  if (p->kind == K_SCALE) {
    prm.total = u32_of(outputs);
    prm.nslices = 0;
    wg_launch l = {.kernel =
                       ep ? "math+activation+gemm_common+gemm_scale+gemm_out_ep"
                          : "gemm_common+gemm_scale+gemm_out_c",
                   .consts = ep ? ep_consts : NULL,
                   .ops = {ops[OP_C], ops[OP_BIAS]},
                   .nops = ep ? 2 : 1,
                   .params = &prm,
                   .params_size = sizeof prm,
                   .groups = wg_ceil_div(outputs, SMALL_GROUP)};
    return wg_plan_add(wp, &l);
  }

  wgc_ref part = {0};
  if (split) {
    wgc_status s = wg_plan_scratch(wp, outputs * p->slices * 4, &part);
    if (s != WGC_OK)
      return s;
  }
  /* The epilogue is in the pass that writes C: here unless split. */
  bool ep_here = ep && !split;
  wg_launch l = {.ops = {ops[OP_A], ops[OP_B],
                         split ? (wg_operand){.name = "part",
                                              .ref = part,
                                              .bytes = outputs * p->slices * 4,
                                              .write = true}
                               : ops[OP_C],
                         ops[OP_BIAS]},
                 .nops = ep_here ? 4 : 3,
                 .consts = ep_here ? ep_consts : NULL,
                 .params = &prm,
                 .params_size = sizeof prm};
  char consts[320], kernel[96];
  if (p->mv) {
    static const char *const dot[] = {[WGC_DTYPE_F32] = "gemm_mv_f32",
                                      [WGC_DTYPE_F16] = "gemm_mv_h",
                                      [WGC_DTYPE_BF16] = "gemm_mv_h",
                                      [WGC_DTYPE_Q8_0] = "gemm_mv_q+gemm_mv_q8",
                                      [WGC_DTYPE_Q4_0] =
                                          "gemm_mv_q+gemm_mv_q4"};
    snprintf(kernel, sizeof kernel, "%sgemm_common+gemm_mv+%s+gemm_out_%s",
             ep_here ? "math+activation+" : "", dot[g->b_type],
             split     ? "part"
             : ep_here ? "ep"
                       : "c");
    snprintf(consts, sizeof consts, "const MV_BF16 = %s;%s",
             g->b_type == WGC_DTYPE_BF16 ? "true" : "false",
             ep_here ? ep_consts : "");
    l.kernel = kernel;
    l.consts = consts;
    l.vec4 = g->b_type == WGC_DTYPE_F32 ? 1u << OP_B : 0;
    l.words4 = mv_words4(g, r, &ops[OP_B]) ? 1u << OP_B : 0;
    uint64_t inv = (uint64_t)r->nb * r->mm * ((r->nn + 1) / 2) * p->slices;
    prm.total = u32_of(inv);
    l.groups = wg_ceil_div(inv, SMALL_GROUP);
  } else if (p->kind == K_SMALL) {
    l.kernel = split ? "gemm_common+gemm_small+gemm_small_dot+gemm_out_part"
               : ep_here
                   ? "math+activation+gemm_common+gemm_small+gemm_small_dot+"
                     "gemm_out_ep"
                   : "gemm_common+gemm_small+gemm_small_dot+gemm_out_c";
    prm.total = u32_of(outputs * p->slices);
    l.groups = wg_ceil_div(outputs * p->slices, SMALL_GROUP);
  } else {
    const gemm_choice *t = &p->tile;
    if (t->kernel == GEMM_REGS) {
      snprintf(consts, sizeof consts,
               "const BM: u32 = %uu; const BN: u32 = %uu; const TM: u32 = %uu; "
               "const TV: u32 = %uu;%s",
               t->bm, t->bn, t->tm, t->tn / 4, ep_here ? ep_consts : "");
      bool bk = rv_bk(g, r, p, &ops[OP_B]);
      bool a4 = rv_a4(g, r, p, &ops[OP_A], bk), b4 = rv_b4(g, r, &ops[OP_B]);
      bk = bk && a4;
      l.vec4 = (a4 ? 1u << OP_A : 0) | (b4 ? 1u << OP_B : 0);
      if (bk) {
        size_t used = strlen(consts);
        snprintf(consts + used, sizeof consts - used, "const BK_TYPE = %uu;",
                 (unsigned)g->b_type);
      }
      snprintf(kernel, sizeof kernel,
               "%sgemm_common+gemm_rv_a%c+gemm_rv_b%c+gemm_rv+gemm_out_%s",
               ep_here ? "math+activation+" : "", a4 ? '4' : '1',
               b4   ? '4'
               : bk ? 'k'
                    : '1',
               split     ? "part"
               : ep_here ? "ep"
                         : "c");
      l.kernel = kernel;
    } else {
      snprintf(consts, sizeof consts,
               "const BM: u32 = %uu; const BN: u32 = %uu; const BK: u32 = %uu; "
               "const TM: u32 = %uu; const TN: u32 = %uu; const A_KC = %s; "
               "const B_NC = %s;%s",
               t->bm, t->bn, t->bk, t->tm, t->tn,
               g->cs_a == 1 ? "true" : "false", g->cs_b == 1 ? "true" : "false",
               ep_here ? ep_consts : "");
      l.kernel = split     ? "gemm_common+gemm+gemm_out_part"
                 : ep_here ? "math+activation+gemm_common+gemm+gemm_out_ep"
                           : "gemm_common+gemm+gemm_out_c";
    }
    l.consts = consts;
    prm.total = u32_of(outputs);
    l.x = u32_of(wg_ceil_div(r->nn, t->bn));
    l.y = u32_of(wg_ceil_div(r->mm, t->bm));
    l.z = u32_of(r->nb * p->slices);
  }
  wgc_status s = wg_plan_add(wp, &l);
  if (s == WGC_OK && p->kind == K_TILED && !wp->ctx->compiling)
    wg_gemm_charge(wp->ctx, &p->tile);
  if (s != WGC_OK || !split)
    return s;

  prm.total = u32_of(outputs);
  wg_launch red = {
      .kernel = ep ? "math+activation+gemm_common+gemm_reduce+gemm_out_ep"
                   : "gemm_common+gemm_reduce+gemm_out_c",
      .consts = ep ? ep_consts : NULL,
      .ops = {{.name = "part",
               .ref = part,
               .bytes = outputs * p->slices * 4,
               .write = false},
              ops[OP_C],
              ops[OP_BIAS]},
      .nops = ep ? 3 : 2,
      .params = &prm,
      .params_size = sizeof prm,
      .groups = wg_ceil_div(outputs, SMALL_GROUP)};
  return wg_plan_add(wp, &red);
}

/* Emits a region, halving it until each piece fits one launch. With
 * ksplit, only plans: sets *ksplit where k would be split, emits nothing. */
static wgc_status run_region(wg_plan *wp, const wgc_gemm_args *g, region r,
                             bool *ksplit) {
  form p = make_form(wp, g, &r);
  fit f = region_fits(wp, g, &r, &p);
  if (f == FIT_OK)
    return ksplit ? WGC_OK : launch_region(wp, g, &r, &p);
  if (f == FIT_WINDOW) {
    /* Inputs that share a buffer with another operand bind separately once
     * copied to scratch: done when the copy is cheap, or when splitting
     * over batches is no longer possible. */
    region st = r;
    wg_operand ops[OP_COUNT];
    bool present[OP_COUNT];
    uint64_t staged = 0;
    region_ops(g, &r, &p, ops, present);
    for (unsigned i = OP_A; i <= OP_BIAS; i++) {
      if (!present[i])
        continue;
      const wg_mem *mi = ops[i].ref.mem;
      for (unsigned j = 0; j < OP_COUNT; j++)
        if (j != i && present[j] && ops[j].ref.mem == mi &&
            ops[i].bytes <= STAGE_MAX_BYTES)
          st.stage[i] = true;
      staged += st.stage[i] ? ops[i].bytes : 0;
    }
    if (staged && (r.nb == 1 || staged <= STAGE_CHEAP_BYTES) &&
        region_fits(wp, g, &st, &p) == FIT_OK)
      return ksplit ? WGC_OK : launch_region(wp, g, &st, &p);
  }
  int dim = split_dim(wp, g, &r, &p, f);
  if (dim < 0)
    return wgc_fail(wp->ctx, WGC_ERR_UNSUPPORTED,
                    "%s: the operands lie too far apart in one allocation "
                    "for the device's storage binding limit (%" PRIu64
                    " bytes)",
                    wp->fn, wp->pol->window);
  region lo, hi;
  if (dim == 3 && ksplit)
    *ksplit = true;
  halve(&r, dim, k_unit(g), &lo, &hi);
  wgc_status s = run_region(wp, g, lo, ksplit);
  if (s == WGC_OK)
    s = run_region(wp, g, hi, ksplit);
  return s;
}

/* The final pass over region r of C from T (dense [batch][m][n] f32),
 * halved along the dimension spanning the most memory until its windows
 * and grid fit. */
static wgc_status final_region(wg_plan *wp, const wgc_gemm_args *g, wgc_ref t,
                               region r) {
  uint64_t mn = (uint64_t)g->m * g->n;
  uint64_t outputs = (uint64_t)r.nb * r.mm * r.nn;
  wg_operand ops[OP_COUNT];
  bool present[OP_COUNT] = {true, false, g->has_bias, true},
       own[OP_COUNT] = {false};
  ops[OP_A] = (wg_operand){
      .name = "part",
      .ref = wg_advance(t, r.b0 * mn + (uint64_t)r.i0 * g->n + r.j0),
      .bytes = 4 * span(r.nb, mn, r.mm, g->n, r.nn, 1)};
  ops[OP_C] = wg_typed_operand(
      "c", g->c, g->c_type,
      (uint64_t)r.b0 * g->batch_c + (uint64_t)r.i0 * g->rs_c +
          (uint64_t)r.j0 * g->cs_c,
      span(r.nb, g->batch_c, r.mm, g->rs_c, r.nn, g->cs_c), true);
  bool per_row = g->bias_kind == WGC_BIAS_PER_ROW;
  ops[OP_BIAS] =
      g->has_bias
          ? wg_typed_operand("bias", g->bias, g->bias_type,
                             per_row ? r.i0 : r.j0, per_row ? r.mm : r.nn,
                             false)
          : (wg_operand){.name = "bias", .ref = ops[OP_C].ref, .bytes = 0};
  uint64_t maxd = wp->pol->max_groups;
  if (!windows_fit(wp, ops, present, own) ||
      wg_ceil_div(outputs, SMALL_GROUP) > maxd * maxd) {
    uint64_t sp[3] = {(uint64_t)(r.nb - 1) * max3(g->batch_c, mn, 0),
                      (uint64_t)(r.mm - 1) * max3(g->rs_c, g->n, 0),
                      (uint64_t)(r.nn - 1) * max3(g->cs_c, 1, 0)};
    int dim = -1;
    for (int d = 0; d < 3; d++)
      if (sp[d] > 0 && (dim < 0 || sp[d] > sp[dim]))
        dim = d;
    if (dim < 0)
      return wgc_fail(wp->ctx, WGC_ERR_UNSUPPORTED,
                      "%s: the operands lie too far apart in one allocation "
                      "for the device's storage binding limit (%" PRIu64
                      " bytes)",
                      wp->fn, wp->pol->window);
    region lo, hi;
    halve(&r, dim, 1, &lo, &hi);
    wgc_status s = final_region(wp, g, t, lo);
    return s == WGC_OK ? final_region(wp, g, t, hi) : s;
  }
  gemm_params prm = {
      .m = u32_of(r.mm),
      .n = u32_of(r.nn),
      .nb = u32_of(r.nb),
      .rs_a = u32_of(r.mm > 1 ? g->n : 0),
      .cs_a = u32_of(r.nn > 1 ? 1 : 0),
      .ba = u32_of(r.nb > 1 ? mn : 0),
      .rs_c = u32_of(r.mm > 1 ? g->rs_c : 0),
      .cs_c = u32_of(r.nn > 1 ? g->cs_c : 0),
      .bc = u32_of(r.nb > 1 ? g->batch_c : 0),
      .total = u32_of(outputs),
      .alpha = 1.0f,
      .beta = g->beta,
      .use_c = g->beta != 0.0f,
  };
  bool ep = has_epilogue(g);
  char ep_consts[64] = "";
  if (ep)
    snprintf(ep_consts, sizeof ep_consts,
             "const ACT: u32 = %uu; const BIAS: u32 = %uu;", (unsigned)g->act,
             !g->has_bias ? 0u
             : per_row    ? 2u
                          : 1u);
  wg_launch l = {.kernel =
                     ep ? "math+activation+gemm_common+gemm_final+gemm_out_ep"
                        : "gemm_common+gemm_final+gemm_out_c",
                 .consts = ep ? ep_consts : NULL,
                 .ops = {ops[OP_A], ops[OP_C], ops[OP_BIAS]},
                 .nops = ep ? 3 : 2,
                 .params = &prm,
                 .params_size = sizeof prm,
                 .groups = wg_ceil_div(outputs, SMALL_GROUP)};
  return wg_plan_add(wp, &l);
}

/* A 2-byte C whose k range the plan splits: the sum of every piece goes
 * to an f32 scratch T (alpha applied, beta 0, no epilogue), then
 * gemm_final adds beta*C, the bias and the activation, and rounds C once. */
static wgc_status plan_f32_acc(wg_plan *wp, const wgc_gemm_args *g, region r) {
  wgc_ref t;
  wgc_status s = wg_plan_scratch(wp, 4 * (uint64_t)g->batch * g->m * g->n, &t);
  if (s != WGC_OK)
    return s;
  wgc_gemm_args acc = *g;
  acc.c = t;
  acc.c_type = WGC_DTYPE_F32;
  acc.rs_c = g->n;
  acc.cs_c = 1;
  acc.batch_c = g->m * g->n;
  acc.beta = 0.0f;
  acc.has_bias = false;
  acc.act = WGC_ACTIVATION_NONE;
  region ra = r;
  ra.beta = 0.0f;
  s = run_region(wp, &acc, ra, NULL);
  return s == WGC_OK ? final_region(wp, g, t, r) : s;
}

wgc_status wg_gemm_plan(wg_plan *wp, const wgc_gemm_args *g) {
  bool scale = g->k == 0 || g->alpha == 0.0f;
  region r = {.b0 = 0,
              .nb = g->batch,
              .i0 = 0,
              .mm = g->m,
              .j0 = 0,
              .nn = g->n,
              .k0 = 0,
              .kk = scale ? 0 : g->k,
              .beta = g->beta};
  if (!scale && wg_half_type(g->c_type)) {
    bool ksplit = false;
    wgc_status s = run_region(wp, g, r, &ksplit);
    if (s != WGC_OK || ksplit)
      return s != WGC_OK ? s : plan_f32_acc(wp, g, r);
  }
  return run_region(wp, g, r, NULL);
}

wgc_status wg_gemm(wgc_context *ctx, const wgc_gemm_args *g) {
  wg_plan wp;
  wg_plan_init(&wp, ctx, g->fn);
  return wg_plan_finish(&wp, wg_gemm_plan(&wp, g));
}
