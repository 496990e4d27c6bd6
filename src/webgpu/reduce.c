/* reduce on WebGPU (kernels/reduce.wgsl). The tensor is [outer, len, inner].
 *
 * inner == 1 (rows): a team of tpr invocations reduces a chunk of up to
 * 4096 contiguous elements of a row (16 per invocation, coalesced, then a
 * tree in workgroup memory); short rows share a workgroup. A row longer
 * than one chunk leaves one partial per chunk in a temporary buffer and the
 * next pass reduces the partials the same way, until one value per row
 * remains (10^7 elements: two passes). On CPU adapters (lavapipe,
 * SwiftShader) workgroup memory is ordinary memory and every barrier is
 * costly (the tree's nine cost more than the reads: 4096 rows of 1024 took
 * 31 ms on lavapipe, 390 ms on SwiftShader), so rows take MODE 3 there:
 * one invocation per chunk of up to FLAT_ITEMS contiguous elements,
 * compensated in registers, no workgroup memory, partials as above.
 *
 * inner > 1 (columns): one invocation per output column (coalesced over
 * inner) combines up to 64 rows of the axis; longer axes leave partials
 * [outer, chunks, inner] for further passes of the same kernel.
 *
 * Sums are compensated (each addition's rounding error is kept in a second
 * float, and partials between passes are (sum, error) pairs), so they come
 * out as if accumulated in double, whatever the data's order or structure.
 * MEAN divides the final sum by len. MAX and MIN propagate NaN. The other
 * ops ride on the same passes with other pairs: SUM_SQUARE and L2 sum
 * (x * x, its rounding error by fma), L1 sums |x|, L2 takes the square
 * root at the very end; PROD keeps (product, error) pairs; LOG_SUM_EXP
 * keeps (max m, sum s of exp(x - m)), rescaling s when m grows, and
 * writes m + log(s); argmax and argmin keep (value, index bits) and write
 * the int32 index. Several axes (wgc_reduce_axes) are reduced one merged
 * dim at a time, innermost first, as stages whose partials in between
 * stay pairs, so the result is as good as one reduction's. Every
 * launch's operands fit the storage binding limit: rows or outer indices
 * are split across launches, and a single row or slab too long for one
 * binding is split by chunks (its partials are independent).
 *
 * inner beyond a quarter of a binding ("wide": a chunk of two rows of one
 * outer slab no longer fits): launches over blocks of inner columns and of
 * a few rows of the axis (as many as one binding spans at a stride of
 * inner), each folding its rows into an accumulator of the block's columns
 * (MODE 2): the output itself for MAX and MIN, a scratch row of (sum,
 * compensation) pairs for sums, which a last launch per block turns into
 * the output (MEAN divides the exact sum once there).
 *
 * Launches emit into a wg_plan, each checked as it is emitted (exact
 * binding checks, with wg_plan_fits: input and output may share an
 * allocation); a plan with a launch that does not bind is dropped and
 * retried with smaller windows, and as a last resort with launches that
 * stage operands lying too close together. The plan records nothing until
 * all of it is checked. A typed (f16, bf16) input or output binds through
 * wg_typed_operand where a launch reads the input or writes the output,
 * with the scalar accessors (no vec4 reads); scratch stays f32. */
#include "plan.h"

#include <inttypes.h>
#include <stdio.h>

#define ROW_ITEMS 16u    /* elements per invocation in row mode */
#define COL_ROWS 64u     /* rows per chunk in column mode */
#define FLAT_ITEMS 1024u /* elements per invocation, rows on CPU adapters */

typedef struct reduce_params {
  uint32_t off[4];
  uint32_t n_o, n_c, n_i, rlen;
  uint32_t in_so, in_sr, out_so, out_sc;
  uint32_t tpr, items;
  float div;
  uint32_t zero;  /* 0: hides identities from the shader compiler */
  uint32_t acc;   /* MODE 2: fold into the output's current value */
  uint32_t ibase; /* axis index of the launch's first element (arg) */
} reduce_params;

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
/* A run of the planner into plan. */
typedef struct planner {
  wg_plan *plan;
  const wgc_reduce_args *r; /* its input and output and their types */
  unsigned op, map, sqrt;   /* the kernel's OP, MAP and SQRT */
  bool pairs;               /* partials between passes are pairs */
} planner;

static wgc_status scratch(planner *pl, uint64_t bytes, wgc_ref *out) {
  return wg_plan_scratch(pl->plan, bytes, out);
}

/* One pass: how it reads and writes (pairs between passes of every op
 * but MAX and MIN, plain floats otherwise), where, and the final divisor. */
typedef struct pass {
  unsigned in2, out2; /* input / output hold pairs */
  wgc_ref in, out;
  float div;
} pass;

/* One reduction over the middle axis of [outer, len, inner] from in to
 * out: the whole op, or one axis of several (wgc_reduce_axes), whose
 * partials in between are pairs (in2, out2) but for MAX and MIN. */
typedef struct stage {
  uint64_t outer, len, inner;
  wgc_ref in, out;
  unsigned in2, out2;
  float div;
} stage;

/* Whether a pass's operand is the call's own (not scratch). */
static bool same_ref(wgc_ref a, wgc_ref b) {
  return a.mem == b.mem && a.offset == b.offset;
}

/* One launch: in_n elements from element in_at, out_n from out_at. */
static wgc_status run(planner *pl, unsigned mode, const pass *ps,
                      uint64_t in_at, uint64_t in_n, uint64_t out_at,
                      uint64_t out_n, reduce_params *p, uint64_t groups) {
  /* Plain floats read along contiguous runs (MODE 3: a chunk of a row;
   * MODE 1: four adjacent columns per invocation) that start on whole
   * vec4s are read as vec4s: a quarter of the loads and bounds checks,
   * the same elements merged in the same order. */
  wgc_ref in = wg_advance(ps->in, in_at << ps->in2);
  const wgc_reduce_args *r = pl->r;
  bool in_typed =
      r->input_type != WGC_DTYPE_F32 && !ps->in2 && same_ref(ps->in, r->input);
  bool out_typed = r->output_type != WGC_DTYPE_F32 && !ps->out2 &&
                   same_ref(ps->out, r->output);
  bool vec = !in_typed && !ps->in2 && in_n && in.offset % 16 == 0 &&
             p->in_so % 4 == 0 &&
             ((mode == 3 && p->items % 4 == 0) ||
              (mode == 1 && p->n_i % 4 == 0 && p->in_sr % 4 == 0));
  if (vec && mode == 1)
    groups = wg_ceil_div((uint64_t)p->n_o * p->n_c * (p->n_i / 4), 256);
  char consts[320];
  snprintf(consts, sizeof consts,
           "const MODE: u32 = %uu; const OP: u32 = %uu; const IN2: u32 = %uu; "
           "const OUT2: u32 = %uu; const MAP: u32 = %uu; const SQRT: u32 = "
           "%uu; const VEC: bool = %s;%s",
           mode, pl->op, ps->in2, ps->out2, pl->map, pl->sqrt,
           vec ? "true" : "false",
           /* the VEC branches must compile without the accessor */
           vec ? "" : " fn x_ld4(i: u32) -> vec4<f32> { return vec4<f32>(); }");
  p->div = ps->div;
  wg_launch l = {
      .kernel = "reduce",
      .consts = consts,
      .ops = {in_typed ? wg_typed_operand("x", ps->in, r->input_type, in_at,
                                          in_n, false)
                       : (wg_operand){.name = "x",
                                      .ref = in,
                                      .bytes = 4 * in_n << ps->in2,
                                      .write = false},
              out_typed
                  ? wg_typed_operand("y", ps->out, r->output_type, out_at,
                                     out_n, true)
                  : (wg_operand){.name = "y",
                                 .ref = wg_advance(ps->out, out_at << ps->out2),
                                 .bytes = 4 * out_n << ps->out2,
                                 .write = true}},
      .nops = 2,
      .vec4 = vec ? 1u : 0u,
      .params = p,
      .params_size = sizeof *p,
      .groups = groups};
  if (!wg_plan_admits(pl->plan, l.ops, l.nops))
    return WGC_ERR_UNSUPPORTED;
  return wg_plan_add(pl->plan, &l);
}

/* Row-mode team shape for rows of len: tpr members (a power of two) of
 * items elements each; short rows take at most 4 per member (wide coalesced
 * reads), long ones 256 members of up to ROW_ITEMS (fewer where a binding
 * of cap elements is smaller than a chunk). flat (CPU adapters, MODE 3):
 * one invocation per chunk of up to FLAT_ITEMS. Returns the chunks per
 * row. */
static uint64_t rows_shape(uint64_t len, uint64_t cap, bool flat, uint32_t *tpr,
                           uint32_t *items) {
  if (flat) {
    *tpr = 1;
    *items = (uint32_t)min64(min64(FLAT_ITEMS, cap), len);
  } else if (len > 1024 ||
             len > cap) { /* a short row wider than a binding too */
    *tpr = 256;
    uint64_t fit = cap / 256 ? cap / 256 : 1;
    *items = (uint32_t)min64(min64(ROW_ITEMS, fit), wg_ceil_div(len, 256));
  } else {
    *tpr = 1;
    while (*tpr * 4u < len)
      *tpr *= 2;
    *items = (uint32_t)wg_ceil_div(len, *tpr);
  }
  return wg_ceil_div(len, (uint64_t)*tpr * *items);
}

/* One row-mode pass: [rows, len] -> [rows, chunks] (rows_shape). W bounds
 * the floats of one launch's operand (a pair takes two). */
static wgc_status rows_pass(planner *pl, const pass *ps, uint64_t rows,
                            uint64_t len, uint64_t W) {
  bool flat = pl->plan->pol->cpu_kernels;
  unsigned mode = flat ? 3 : 0;
  uint32_t tpr, items;
  uint64_t nch = rows_shape(len, W >> ps->in2, flat, &tpr, &items);
  uint64_t chunk = (uint64_t)tpr * items;
  uint32_t rpw = 256u / tpr;
  uint64_t Win = W >> ps->in2, Wout = W >> ps->out2;
  if (len <= Win && nch <= Wout) {
    uint64_t per = min64(Win / len, Wout / nch);
    for (uint64_t r0 = 0; r0 < rows; r0 += per) {
      uint64_t nr = min64(per, rows - r0);
      reduce_params p = {.n_o = (uint32_t)nr,
                         .n_c = (uint32_t)nch,
                         .rlen = (uint32_t)len,
                         .in_so = (uint32_t)len,
                         .out_so = (uint32_t)nch,
                         .out_sc = 1,
                         .tpr = tpr,
                         .items = items};
      uint64_t groups =
          flat ? wg_ceil_div(nr * nch, 256) : wg_ceil_div(nr, rpw) * nch;
      wgc_status s =
          run(pl, mode, ps, r0 * len, nr * len, r0 * nch, nr * nch, &p, groups);
      if (s != WGC_OK)
        return s;
    }
    return WGC_OK;
  }
  /* A row longer than a binding: launches over ranges of its chunks. */
  uint64_t per = min64(Win / chunk, Wout);
  if (per == 0) /* bindings of under 256 floats: no real device */
    return WGC_ERR_UNSUPPORTED;
  for (uint64_t r = 0; r < rows; r++)
    for (uint64_t c0 = 0; c0 < nch; c0 += per) {
      uint64_t nc = min64(per, nch - c0);
      uint64_t rlen = min64(len - c0 * chunk, nc * chunk);
      reduce_params p = {.n_o = 1,
                         .n_c = (uint32_t)nc,
                         .rlen = (uint32_t)rlen,
                         .out_sc = 1,
                         .tpr = tpr,
                         .items = items,
                         .ibase = (uint32_t)(c0 * chunk)};
      wgc_status s = run(pl, mode, ps, r * len + c0 * chunk, rlen, r * nch + c0,
                         nc, &p, flat ? wg_ceil_div(nc, 256) : nc);
      if (s != WGC_OK)
        return s;
    }
  return WGC_OK;
}

/* One column-mode pass: [outer, len, inner] -> [outer, chunks, inner] with
 * rch rows per chunk (2 * rch * inner <= W where a slab exceeds W). */
static wgc_status cols_pass(planner *pl, const pass *ps, uint64_t outer,
                            uint64_t len, uint64_t inner, uint64_t rch,
                            uint64_t W) {
  uint64_t nch = wg_ceil_div(len, rch);
  uint64_t Win = W >> ps->in2, Wout = W >> ps->out2;
  if (len * inner <= Win && nch * inner <= Wout) {
    uint64_t per = min64(Win / (len * inner), Wout / (nch * inner));
    for (uint64_t o0 = 0; o0 < outer; o0 += per) {
      uint64_t no = min64(per, outer - o0);
      reduce_params p = {.n_o = (uint32_t)no,
                         .n_c = (uint32_t)nch,
                         .n_i = (uint32_t)inner,
                         .rlen = (uint32_t)len,
                         .in_so = no > 1 ? (uint32_t)(len * inner) : 0,
                         .in_sr = (uint32_t)inner,
                         .out_so = no > 1 ? (uint32_t)(nch * inner) : 0,
                         .out_sc = (uint32_t)inner,
                         .items = (uint32_t)rch};
      wgc_status s =
          run(pl, 1, ps, o0 * len * inner, no * len * inner, o0 * nch * inner,
              no * nch * inner, &p, wg_ceil_div(no * nch * inner, 256));
      if (s != WGC_OK)
        return s;
    }
    return WGC_OK;
  }
  /* One outer slab exceeds a binding: launches over ranges of chunks. */
  uint64_t per = min64(Win / (rch * inner), Wout / inner);
  if (per == 0)
    return WGC_ERR_UNSUPPORTED;
  for (uint64_t o = 0; o < outer; o++)
    for (uint64_t c0 = 0; c0 < nch; c0 += per) {
      uint64_t nc = min64(per, nch - c0);
      uint64_t rlen = min64(len - c0 * rch, nc * rch);
      reduce_params p = {.n_o = 1,
                         .n_c = (uint32_t)nc,
                         .n_i = (uint32_t)inner,
                         .rlen = (uint32_t)rlen,
                         .in_sr = (uint32_t)inner,
                         .out_sc = (uint32_t)inner,
                         .items = (uint32_t)rch,
                         .ibase = (uint32_t)(c0 * rch)};
      wgc_status s = run(pl, 1, ps, (o * len + c0 * rch) * inner, rlen * inner,
                         (o * nch + c0) * inner, nc * inner, &p,
                         wg_ceil_div(nc * inner, 256));
      if (s != WGC_OK)
        return s;
    }
  return WGC_OK;
}

/* An empty axis: the identity, in launches of at most W outputs. */
static wgc_status fill_identity(planner *pl, const wgc_reduce_args *r,
                                uint64_t W) {
  uint64_t total = (uint64_t)r->outer * r->inner;
  pass ps = {.in = r->input, .out = r->output, .div = 1.0f};
  for (uint64_t at = 0; at < total; at += W) {
    uint64_t n = min64(W, total - at);
    reduce_params p = {.n_o = 1, .n_c = 1, .n_i = (uint32_t)n, .items = 1};
    wgc_status s = run(pl, 1, &ps, 0, 0, at, n, &p, wg_ceil_div(n, 256));
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

/* inner too wide for a chunk of two rows of a slab (see the top). For each
 * outer index and block of ib columns, launches over blocks of rb rows
 * fold into an accumulator: the output (MAX, MIN, or any op when one block
 * of rows covers the axis) or a scratch row of ib pairs, reused by every
 * block (launches run in order), which a final MODE 1 launch turns into
 * the output. */
static wgc_status wide(planner *pl, const stage *sg, uint64_t W) {
  uint64_t outer = sg->outer, len = sg->len, inner = sg->inner;
  uint64_t Win = W >> sg->in2;
  /* ib columns by rb rows per launch: the input window (rb - 1) * inner +
   * ib and a pair accumulator (2 * ib) fit W; the most elements win. */
  uint64_t rb = 0, ib = 0;
  for (uint64_t n = 1; n <= len && (n - 1) * inner < Win; n++) {
    uint64_t cols = min64(min64(inner, Win - (n - 1) * inner), W / 2);
    if (n * cols > rb * ib) {
      rb = n;
      ib = cols;
    }
  }
  if (ib == 0)
    return WGC_ERR_UNSUPPORTED;
  uint64_t nrb = wg_ceil_div(len, rb);
  bool pairs = pl->pairs && nrb > 1;
  wgc_ref acc = sg->out;
  if (pairs) {
    wgc_status s = scratch(pl, 8 * ib, &acc);
    if (s != WGC_OK)
      return s;
  }
  for (uint64_t o = 0; o < outer; o++)
    for (uint64_t i0 = 0; i0 < inner; i0 += ib) {
      uint64_t ni = min64(ib, inner - i0);
      /* the accumulator of columns [i0, i0 + ni) of outer index o */
      uint64_t out_at = pairs ? 0 : o * inner + i0;
      pass ps = {.in2 = sg->in2,
                 .out2 = pairs ? 1 : sg->out2,
                 .in = sg->in,
                 .out = acc,
                 .div = pairs ? 1.0f : sg->div};
      for (uint64_t r0 = 0; r0 < len; r0 += rb) {
        uint64_t nr = min64(rb, len - r0);
        reduce_params p = {.n_o = 1,
                           .n_c = 1,
                           .n_i = (uint32_t)ni,
                           .rlen = (uint32_t)nr,
                           .in_sr = (uint32_t)inner,
                           .items = (uint32_t)nr,
                           .acc = r0 > 0,
                           .ibase = (uint32_t)r0};
        wgc_status s =
            run(pl, 2, &ps, (o * len + r0) * inner + i0, (nr - 1) * inner + ni,
                out_at, ni, &p, wg_ceil_div(ni, 256));
        if (s != WGC_OK)
          return s;
      }
      if (pairs) {
        pass fin = {.in2 = 1,
                    .out2 = sg->out2,
                    .in = acc,
                    .out = sg->out,
                    .div = sg->div};
        reduce_params p = {
            .n_o = 1, .n_c = 1, .n_i = (uint32_t)ni, .rlen = 1, .items = 1};
        wgc_status s = run(pl, 1, &fin, 0, ni, o * inner + i0, ni, &p,
                           wg_ceil_div(ni, 256));
        if (s != WGC_OK)
          return s;
      }
    }
  return WGC_OK;
}

/* Every launch of one stage with operand windows of at most W floats. */
static wgc_status stage_plan(planner *pl, const stage *sg, uint64_t W) {
  pass ps = {.in = sg->in, .in2 = sg->in2};
  uint64_t outer = sg->outer, len = sg->len, inner = sg->inner;

  /* Columns: chunks of up to COL_ROWS rows. Where one outer slab exceeds
   * a binding, passes split it by chunks, and a chunk of full rows (pairs,
   * after the first pass) must fit: fewer rows then; where not even two
   * rows do, the wide launches take over. Slabs that fit keep fitting
   * (partials are no larger than their input). */
  uint64_t rch = COL_ROWS;
  if (inner > 1 && len * inner > W >> sg->in2) {
    rch = min64(rch, W / (2 * inner));
    if (rch < 2)
      return wide(pl, sg, W);
  }
  /* Partials go to scratch, which lives until the op has returned. */
  for (;;) {
    uint32_t tpr, items;
    uint64_t nch = inner == 1
                       ? rows_shape(len, W >> ps.in2,
                                    pl->plan->pol->cpu_kernels, &tpr, &items)
                       : wg_ceil_div(len, rch);
    bool last = nch == 1;
    ps.out = sg->out;
    ps.out2 = last ? sg->out2 : pl->pairs;
    ps.div = last ? sg->div : 1.0f;
    if (!last) {
      wgc_status s = scratch(pl, (4 * outer * nch * inner) << ps.out2, &ps.out);
      if (s != WGC_OK)
        return s;
    }
    wgc_status s = inner == 1 ? rows_pass(pl, &ps, outer, len, W)
                              : cols_pass(pl, &ps, outer, len, inner, rch, W);
    if (s != WGC_OK || last)
      return s;
    ps.in = ps.out;
    ps.in2 = ps.out2;
    len = nch;
  }
}

/* Every launch of the reduction with operand windows of at most W floats:
 * one stage, or (several axes) one per reduced dim, innermost first, the
 * partials in between in scratch. */
static wgc_status reduce_plan(planner *pl, const wgc_reduce_args *r,
                              uint64_t W) {
  if (r->len == 0)
    return fill_identity(pl, r, W);
  float div = r->op == WGC_REDUCE_MEAN && !r->arg ? (float)r->len : 1.0f;
  if (!r->nd) {
    stage sg = {.outer = r->outer,
                .len = r->len,
                .inner = r->inner,
                .in = r->input,
                .out = r->output,
                .div = div};
    return stage_plan(pl, &sg, W);
  }
  uint64_t dims[WGC_MAX_RANK];
  size_t first = r->nd;
  for (size_t d = 0; d < r->nd; d++) {
    dims[d] = r->dims[d];
    if (r->red[d] && first == r->nd)
      first = d;
  }
  stage sg = {.in = r->input};
  for (size_t d = r->nd; d-- > first;) {
    if (!r->red[d])
      continue;
    sg.outer = sg.inner = 1;
    for (size_t e = 0; e < r->nd; e++)
      if (e < d)
        sg.outer *= dims[e];
      else if (e > d)
        sg.inner *= dims[e];
    sg.len = dims[d];
    bool last = d == first;
    sg.out2 = last ? 0 : pl->pairs;
    sg.div = last ? div : 1.0f;
    sg.out = r->output;
    if (!last) {
      wgc_status s = scratch(pl, (4 * sg.outer * sg.inner) << sg.out2, &sg.out);
      if (s != WGC_OK)
        return s;
    }
    wgc_status s = stage_plan(pl, &sg, W);
    if (s != WGC_OK)
      return s;
    dims[d] = 1;
    sg.in = sg.out;
    sg.in2 = sg.out2;
  }
  return WGC_OK;
}

/* The kernel's OP, MAP and SQRT for r (see kernels/reduce.wgsl). */
static void kernel_op(const wgc_reduce_args *r, planner *pl) {
  pl->pairs = true;
  if (r->arg != WGC_ARG_NONE) {
    pl->op = r->arg == WGC_ARG_MAX ? 5 : 6;
    return;
  }
  switch (r->op) {
  case WGC_REDUCE_SUM:
  case WGC_REDUCE_MEAN:
    pl->op = 0;
    return;
  case WGC_REDUCE_MAX:
  case WGC_REDUCE_MIN:
    pl->op = r->op == WGC_REDUCE_MAX ? 1 : 2;
    pl->pairs = false;
    return;
  case WGC_REDUCE_PROD:
    pl->op = 3;
    return;
  case WGC_REDUCE_SUM_SQUARE:
  case WGC_REDUCE_L2:
    pl->op = 0;
    pl->map = 1;
    pl->sqrt = r->op == WGC_REDUCE_L2;
    return;
  case WGC_REDUCE_L1:
    pl->op = 0;
    pl->map = 2;
    return;
  case WGC_REDUCE_LOG_SUM_EXP:
    pl->op = 4;
    return;
  }
}

/* What wg_plan_search hands the planner. */
typedef struct reduce_job {
  planner pl;
  const wgc_reduce_args *r;
} reduce_job;

static wgc_status plan_window(wg_plan *p, void *user, uint64_t window) {
  reduce_job *j = user;
  j->pl.plan = p;
  return reduce_plan(&j->pl, j->r, window);
}

wgc_status wg_reduce(wgc_context *ctx, const wgc_reduce_args *r) {
  /* A window that does not bind (operands sharing an allocation bind
   * together) is retried at half the size, down to 256 elements. */
  reduce_job j = {.r = r};
  j.pl.r = r;
  kernel_op(r, &j.pl);
  const wg_policy *pol = wg_policy_of(ctx);
  uint64_t top = min64(pol->window_elems, 0x40000000u);
  wgc_status s =
      wg_plan_search(ctx, r->fn, top, min64(top, 256), plan_window, &j);
  if (s != WGC_ERR_UNSUPPORTED)
    return s;
  return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                  "%s: the operands of a reduction of [%zu, %zu, %zu] (outer, "
                  "axis, inner) do not fit the device's storage binding "
                  "limit (%" PRIu64 " bytes)",
                  r->fn, r->outer, r->len, r->inner, pol->window);
}
