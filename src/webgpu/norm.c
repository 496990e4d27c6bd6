/* softmax, log-softmax, LayerNorm and RMSNorm on WebGPU
 * (kernels/norm_stats.wgsl, norm_apply.wgsl, norm_pack.wgsl, norm_row.wgsl).
 * The tensor is [outer, len, inner]; every (outer, inner) column is one row
 * to normalise.
 *
 * On CPU adapters, where every row folds in one run and the tensor fits a
 * window, one launch does it all (norm_row.wgsl): an invocation per row
 * folds it, then writes it. Otherwise:
 *
 * Statistics first: one invocation per chunk of a row (up to CH_X rows of
 * the axis, strided by inner, so a softmax over any axis reads coalesced
 * over inner) leaves one record of four floats per chunk in scratch; while
 * a row has several, further passes fold chunks of CH_REC records, until
 * one record per row remains, in its final form (max and sum; mean and
 * 1/sqrt(var + eps); 1/sqrt(mean square + eps)). Then each invocation
 * writes a few consecutive elements of the output; every statistic is
 * complete before the first is written, so the output may be the input. A
 * launch binds at most four operands (x, records, scale, y): LayerNorm with
 * both scale and bias first packs them side by side in scratch (len pairs, far
 * less than the tensor).
 *
 * Every launch covers a box of outer indices, rows of the axis and columns
 * whose windows fit a quarter of the binding limit (records take four
 * floats per element): whole slabs where they fit, else runs of rows
 * (whole chunks), else blocks of columns; where not even two rows of the
 * axis fit (inner beyond a window), one launch per row merges it into the
 * records left by the previous one. Chunks keep each invocation's
 * loops far below the 65535 iterations CPU adapters allow. The kernels
 * read and write every operand through scalar accessors, so typed ones
 * (f16, bf16 x and y; f16 scale and bias) bind as wg_typed_operand. */
#include "plan.h"

#include <stdio.h>

#define CH_X_GPU 256u  /* rows per chunk, first pass */
#define CH_X_CPU 1024u /* ... on CPU adapters: fewer, longer invocations */
#define CH_REC 64u     /* records per chunk, later passes */
#define ITEMS_GPU 4u   /* output elements per invocation */
#define ITEMS_CPU 16u  /* ... on CPU adapters, where invocations cost more */
_Static_assert(ITEMS_GPU % 2 == 0 && ITEMS_CPU % 2 == 0,
               "a 2-byte y's words are an invocation's own");

typedef struct stats_params {
  uint32_t off[4];
  uint32_t n_o, n_c, n_i, rows, ch;
  uint32_t in_so, in_sr, out_so, out_sc;
  float len, eps;
  uint32_t zero, fin, acc, step;
} stats_params;

typedef struct apply_params {
  uint32_t off[4];
  uint32_t n_o, n_r, n_i, in_so, in_sr, st_so, items;
} apply_params;

typedef struct row_params {
  uint32_t off[4];
  uint32_t n_o, n_i, rows, in_so, in_sr;
  float len, eps;
  uint32_t zero;
} row_params;

typedef struct pack_params {
  uint32_t off[4];
  uint32_t n;
} pack_params;

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Elements one operand window of a launch may span: a quarter of the
 * binding limit (less the offset alignment slack), kept far from u32
 * overflow. */
static uint64_t window_elems(const wg_policy *pol) {
  uint64_t n = pol->window_elems / 4;
  return n > 0x10000000u ? 0x10000000u : n;
}

/* A box size for [outer, len, inner] within W elements: bo outer indices,
 * br rows (a multiple of ch unless the whole axis), bi columns; ch is
 * lowered to what one window holds. */
typedef struct tiling {
  uint64_t bo, br, bi, ch;
} tiling;

static tiling tile(uint64_t outer, uint64_t len, uint64_t inner, uint64_t ch,
                   uint64_t W) {
  tiling t;
  t.bi = min64(inner, W);
  uint64_t maxr = (W - t.bi) / inner + 1;
  t.ch = min64(min64(ch, len), maxr);
  t.br = maxr >= len ? len : maxr / t.ch * t.ch;
  t.bo = 1;
  if (t.br == len && t.bi == inner && W / (len * inner) > 1)
    t.bo = min64(outer, W / (len * inner));
  return t;
}

static unsigned kind_of(const wgc_norm_args *n) { return (unsigned)n->kind; }

static unsigned affine_of(const wgc_norm_args *n) {
  return n->has_scale && n->has_bias ? 3
         : n->has_scale              ? 1
         : n->has_bias               ? 2
                                     : 0;
}

/* One statistics pass: input [outer, len, inner] (floats, or records when
 * !from_x) to records [outer, nch, inner] at out. */
static wgc_status stats_pass(wg_plan *plan, const wgc_norm_args *n, wgc_ref in,
                             bool from_x, uint64_t len, const tiling *t,
                             wgc_ref out) {
  uint64_t outer = n->outer, inner = n->inner, e = from_x ? 1 : 4;
  uint64_t nch = wg_ceil_div(len, t->ch);
  /* an axis too widely strided for two rows in a window: one launch per
   * row, each merging into the records */
  bool wide = t->ch == 1 && len > 1;
  if (wide)
    nch = 1;
  /* rows on GPUs: interleaved chunks read coalesced; CPU adapters cache a
   * contiguous run per invocation better */
  bool interleave = inner == 1 && !plan->pol->cpu_kernels;
  char consts[96];
  snprintf(consts, sizeof consts,
           "const KIND: u32 = %uu; const FROM_X: u32 = %uu;", kind_of(n),
           from_x);
  for (uint64_t o0 = 0; o0 < outer; o0 += t->bo)
    for (uint64_t r0 = 0; r0 < len; r0 += t->br)
      for (uint64_t i0 = 0; i0 < inner; i0 += t->bi) {
        uint64_t no = min64(t->bo, outer - o0), nr = min64(t->br, len - r0);
        uint64_t ni = min64(t->bi, inner - i0), ncl = wg_ceil_div(nr, t->ch);
        uint64_t in_at = (o0 * len + r0) * inner + i0;
        uint64_t in_n = (no - 1) * len * inner + (nr - 1) * inner + ni;
        uint64_t out_at = (o0 * nch + (wide ? 0 : r0 / t->ch)) * inner + i0;
        uint64_t out_n = (no - 1) * nch * inner + (ncl - 1) * inner + ni;
        stats_params p = {.n_o = (uint32_t)no,
                          .n_c = (uint32_t)ncl,
                          .n_i = (uint32_t)ni,
                          .rows = (uint32_t)nr,
                          .ch = (uint32_t)t->ch,
                          .in_so = no > 1 ? (uint32_t)(len * inner) : 0,
                          .in_sr = nr > 1 ? (uint32_t)inner : 0,
                          .out_so = no > 1 ? (uint32_t)(nch * inner) : 0,
                          .out_sc = ncl > 1 ? (uint32_t)inner : 0,
                          .len = (float)n->len,
                          .eps = n->epsilon,
                          .fin = nch == 1 && r0 + nr == len,
                          .acc = wide && r0 > 0,
                          .step = interleave && ncl > 1 ? (uint32_t)ncl : 1};
        wg_launch l = {
            .kernel = "math+norm_fold+norm_stats",
            .consts = consts,
            .ops = {from_x ? wg_typed_operand("x", in, n->input_type, in_at,
                                              in_n, false)
                           : (wg_operand){.name = "x",
                                          .ref = wg_advance(in, in_at * e),
                                          .bytes = 4 * in_n * e,
                                          .write = false},
                    {.name = "y",
                     .ref = wg_advance(out, 4 * out_at),
                     .bytes = 16 * out_n,
                     .write = true}},
            .nops = 2,
            .params = &p,
            .params_size = sizeof p,
            .groups = wg_ceil_div(no * ncl * ni, 256)};
        wgc_status s = wg_plan_add(plan, &l);
        if (s != WGC_OK)
          return s;
      }
  return WGC_OK;
}

/* scale and bias of LayerNorm side by side in scratch (2 * len floats). */
static wgc_status pack_affine(wg_plan *plan, const wgc_norm_args *n, uint64_t W,
                              wgc_ref *sb) {
  wgc_status s = wg_plan_scratch(plan, 8 * (uint64_t)n->len, sb);
  for (uint64_t r0 = 0; s == WGC_OK && r0 < n->len; r0 += W) {
    uint64_t nr = min64(W, n->len - r0);
    pack_params p = {.n = (uint32_t)nr};
    wg_launch l = {
        .kernel = "norm_pack",
        .ops = {wg_typed_operand("s", n->scale, n->scale_type, r0, nr, false),
                wg_typed_operand("b", n->bias, n->bias_type, r0, nr, false),
                {.name = "sb",
                 .ref = wg_advance(*sb, 2 * r0),
                 .bytes = 8 * nr,
                 .write = true}},
        .nops = 3,
        .params = &p,
        .params_size = sizeof p,
        .groups = wg_ceil_div(nr, 256)};
    s = wg_plan_add(plan, &l);
  }
  return s;
}

/* The output from the final records st ([outer, inner]). */
static wgc_status apply_pass(wg_plan *plan, const wgc_norm_args *n, wgc_ref st,
                             uint64_t W) {
  uint64_t outer = n->outer, len = n->len, inner = n->inner;
  tiling t = tile(outer, len, inner, 1, W);
  unsigned affine = affine_of(n);
  wgc_ref pr = affine == 1 ? n->scale : n->bias;
  wgc_dtype pt = affine == 1   ? n->scale_type
                 : affine == 2 ? n->bias_type
                               : WGC_DTYPE_F32; /* packed in f32 */
  if (affine == 3) {
    wgc_status s = pack_affine(plan, n, W, &pr);
    if (s != WGC_OK)
      return s;
  }
  uint64_t pw = affine == 3 ? 2 : 1; /* floats of p per row */
  uint32_t items = plan->pol->cpu_kernels ? ITEMS_CPU : ITEMS_GPU;
  char consts[64];
  snprintf(consts, sizeof consts,
           "const KIND: u32 = %uu; const AFFINE: u32 = %uu;", kind_of(n),
           affine);
  for (uint64_t o0 = 0; o0 < outer; o0 += t.bo)
    for (uint64_t r0 = 0; r0 < len; r0 += t.br)
      for (uint64_t i0 = 0; i0 < inner; i0 += t.bi) {
        uint64_t no = min64(t.bo, outer - o0), nr = min64(t.br, len - r0);
        uint64_t ni = min64(t.bi, inner - i0);
        uint64_t at = (o0 * len + r0) * inner + i0;
        uint64_t cnt = (no - 1) * len * inner + (nr - 1) * inner + ni;
        uint64_t st_at = o0 * inner + i0, st_n = (no - 1) * inner + ni;
        apply_params p = {.n_o = (uint32_t)no,
                          .n_r = (uint32_t)nr,
                          .n_i = (uint32_t)ni,
                          .in_so = no > 1 ? (uint32_t)(len * inner) : 0,
                          .in_sr = nr > 1 ? (uint32_t)inner : 0,
                          .st_so = no > 1 ? (uint32_t)inner : 0,
                          .items = items};
        /* without scale or bias, p is a stand-in the kernel never reads */
        wg_launch l = {
            .kernel = "math+norm_value+norm_apply_st+norm_apply",
            .consts = consts,
            .ops = {wg_typed_operand("x", n->input, n->input_type, at, cnt,
                                     false),
                    {.name = "st",
                     .ref = wg_advance(st, 4 * st_at),
                     .bytes = 16 * st_n,
                     .write = false},
                    affine
                        ? wg_typed_operand("p", pr, pt, pw * r0, pw * nr, false)
                        : (wg_operand){.name = "p",
                                       .ref = st,
                                       .bytes = 4,
                                       .write = false},
                    wg_typed_operand("y", n->output, n->output_type, at, cnt,
                                     true)},
            .nops = 4,
            .params = &p,
            .params_size = sizeof p,
            .groups = wg_ceil_div(wg_ceil_div(no * nr * ni, items), 256)};
        /* a box contiguous in a 2-byte y from a word's start is written by
         * whole words (items is even) */
        if (wg_half_type(n->output_type) && ni == inner &&
            (no == 1 || nr == len) && l.ops[3].lead == 0) {
          l.kernel = "math+norm_value+norm_apply_words+norm_apply";
          l.word_stores = 8;
        }
        wgc_status s = wg_plan_add(plan, &l);
        if (s != WGC_OK)
          return s;
      }
  return WGC_OK;
}

/* The one-launch form: on CPU adapters its invocation per row costs less
 * than the statistics and output launches (and LayerNorm's packing) of
 * the general one, whose records and output elements spread the work over
 * more invocations, a gain only GPUs see. LayerNorm with scale and bias
 * on SwiftShader: 35 us against 113 over [1, 128], 958 against 1559 over
 * [127, 384]; softmax 1027 against 2060; lavapipe 1.3-2x faster from
 * [17, 384] on (alternated processes). The folds are the general form's
 * first pass, so a row's statistics are the same. */
static bool row_form(const wg_plan *plan, const wgc_norm_args *n, uint64_t W) {
  return plan->pol->cpu_kernels && n->len >= 1 && n->len <= CH_X_CPU &&
         (uint64_t)n->outer * n->len * n->inner <= W;
}

static wgc_status row_pass(wg_plan *plan, const wgc_norm_args *n) {
  unsigned affine = affine_of(n);
  uint64_t count = (uint64_t)n->outer * n->len * n->inner;
  row_params p = {.n_o = (uint32_t)n->outer,
                  .n_i = (uint32_t)n->inner,
                  .rows = (uint32_t)n->len,
                  .in_so = (uint32_t)(n->len * n->inner),
                  .in_sr = (uint32_t)n->inner,
                  .len = (float)n->len,
                  .eps = n->epsilon};
  char consts[96];
  snprintf(consts, sizeof consts,
           "const KIND: u32 = %uu; const FROM_X: u32 = 1u; "
           "const AFFINE: u32 = %uu;",
           kind_of(n), affine);
  /* an absent scale or bias binds a stand-in the kernel never reads */
  wg_operand stand_in =
      wg_typed_operand("", n->input, n->input_type, 0, 1, false);
  wg_operand s = n->has_scale ? wg_typed_operand("s", n->scale, n->scale_type,
                                                 0, n->len, false)
                              : stand_in;
  wg_operand b = n->has_bias ? wg_typed_operand("b", n->bias, n->bias_type, 0,
                                                n->len, false)
                             : stand_in;
  s.name = "s";
  b.name = "b";
  wg_launch l = {
      .kernel = "math+norm_fold+norm_value+norm_row_st+norm_row",
      .consts = consts,
      .ops = {wg_typed_operand("x", n->input, n->input_type, 0, count, false),
              s, b,
              wg_typed_operand("y", n->output, n->output_type, 0, count, true)},
      .nops = 4,
      .params = &p,
      .params_size = sizeof p,
      .groups = wg_ceil_div((uint64_t)n->outer * n->inner, 16)};
  /* rows that are whole words of a 2-byte y are written by words */
  if (wg_half_type(n->output_type) && n->inner == 1 && n->len % 2 == 0 &&
      l.ops[3].lead == 0) {
    l.kernel = "math+norm_fold+norm_value+norm_row_words+norm_row";
    l.word_stores = 8;
  }
  return wg_plan_add(plan, &l);
}

static wgc_status norm_plan(wg_plan *plan, const wgc_norm_args *n) {
  uint64_t W = window_elems(plan->pol);
  if (row_form(plan, n, W))
    return row_pass(plan, n);
  bool cpu = plan->pol->cpu_kernels;
  uint64_t len = n->len, outer = n->outer, inner = n->inner;
  wgc_ref in = n->input;
  bool from_x = true;
  /* Scratch lives until the op has returned. */
  for (;;) {
    tiling t = tile(outer, len, inner,
                    from_x ? (cpu ? CH_X_CPU : CH_X_GPU) : CH_REC, W);
    uint64_t nch = t.ch == 1 ? 1 : wg_ceil_div(len, t.ch);
    wgc_ref out;
    wgc_status s = wg_plan_scratch(plan, 16 * outer * nch * inner, &out);
    if (s == WGC_OK)
      s = stats_pass(plan, n, in, from_x, len, &t, out);
    if (s != WGC_OK)
      return s;
    in = out;
    if (nch == 1)
      break;
    from_x = false;
    len = nch;
  }
  return apply_pass(plan, n, in, W);
}

wgc_status wg_norm(wgc_context *ctx, const wgc_norm_args *n) {
  wg_plan plan;
  wg_plan_init(&plan, ctx, n->fn);
  return wg_plan_finish(&plan, norm_plan(&plan, n));
}
