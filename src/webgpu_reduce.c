/* reduce on WebGPU (kernels/reduce.wgsl). The tensor is [outer, len, inner].
 *
 * inner == 1 (rows): a team of tpr invocations reduces a chunk of up to
 * 4096 contiguous elements of a row (16 per invocation, coalesced, then a
 * tree in workgroup memory); short rows share a workgroup. A row longer
 * than one chunk leaves one partial per chunk in a temporary buffer and the
 * next pass reduces the partials the same way, until one value per row
 * remains (10^7 elements: two passes).
 *
 * inner > 1 (columns): one invocation per output column (coalesced over
 * inner) combines up to 64 rows of the axis; longer axes leave partials
 * [outer, chunks, inner] for further passes of the same kernel.
 *
 * Sums are compensated (each addition's rounding error is kept in a second
 * float, and partials between passes are (sum, error) pairs), so they come
 * out as if accumulated in double, whatever the data's order or structure.
 * MEAN divides the final sum by len. MAX and MIN propagate NaN. Every
 * launch's operands fit the storage binding limit: rows or outer indices
 * are split across launches, and a single row or slab too long for one
 * binding is split by chunks (its partials are independent). */
#include "webgpu.h"

#include <stdio.h>

#define ROW_ITEMS 16u /* elements per invocation in row mode */
#define COL_ROWS 64u  /* rows per chunk in column mode */

typedef struct reduce_params {
  uint32_t off[4];
  uint32_t n_o, n_c, n_i, rlen;
  uint32_t in_so, in_sr, out_so, out_sc;
  uint32_t tpr, items;
  float div;
  uint32_t zero; /* 0: hides identities from the shader compiler */
} reduce_params;

static const char *FN = "wgc_reduce";

/* Elements one launch may span in one operand: the binding limit less the
 * offset alignment slack, kept far from u32 overflow. */
static uint64_t window_elems(const wgc_context *ctx) {
  const gpu_limits *lim = wg_limits(ctx);
  uint64_t n = (lim->max_storage_binding_size - 256) / 4;
  return n > 0x40000000u ? 0x40000000u : n;
}

static wgc_ref advance(wgc_ref r, uint64_t elems) {
  r.offset += 4 * elems;
  return r;
}

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* One pass: how it reads and writes (pairs (sum, compensation) between
 * sum passes, plain floats otherwise), where, and the final divisor. */
typedef struct pass {
  unsigned op;        /* 0 sum, 1 max, 2 min */
  unsigned in2, out2; /* input / output hold pairs */
  wgc_ref in, out;
  float div;
} pass;

/* One launch: in_n elements from element in_at, out_n from out_at. */
static wgc_status run(wgc_context *ctx, unsigned mode, const pass *ps,
                      uint64_t in_at, uint64_t in_n, uint64_t out_at,
                      uint64_t out_n, reduce_params *p, uint64_t groups) {
  char consts[128];
  snprintf(consts, sizeof consts,
           "const MODE: u32 = %uu; const OP: u32 = %uu; const IN2: u32 = %uu; "
           "const OUT2: u32 = %uu;",
           mode, ps->op, ps->in2, ps->out2);
  p->div = ps->div;
  wg_launch l = {.kernel = "reduce",
                 .consts = consts,
                 .ops = {{"x", advance(ps->in, in_at << ps->in2),
                          4 * in_n << ps->in2, false},
                         {"y", advance(ps->out, out_at << ps->out2),
                          4 * out_n << ps->out2, true}},
                 .nops = 2,
                 .params = p,
                 .params_size = sizeof *p,
                 .groups = groups};
  return wg_launch_run(ctx, FN, &l);
}

/* Row-mode team shape for rows of len: tpr members (a power of two) of
 * items elements each; short rows take at most 4 per member (wide coalesced
 * reads), long ones 256 members of up to ROW_ITEMS. Returns the chunks per
 * row. */
static uint64_t rows_shape(uint64_t len, uint32_t *tpr, uint32_t *items) {
  if (len > 1024) {
    *tpr = 256;
    *items = (uint32_t)min64(ROW_ITEMS, ceil_div(len, 256));
  } else {
    *tpr = 1;
    while (*tpr * 4u < len)
      *tpr *= 2;
    *items = (uint32_t)ceil_div(len, *tpr);
  }
  return ceil_div(len, (uint64_t)*tpr * *items);
}

/* One row-mode pass: [rows, len] -> [rows, chunks] (rows_shape). W bounds
 * the floats of one launch's operand (a pair takes two). */
static wgc_status rows_pass(wgc_context *ctx, const pass *ps, uint64_t rows,
                            uint64_t len, uint64_t W) {
  uint32_t tpr, items;
  uint64_t nch = rows_shape(len, &tpr, &items);
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
      wgc_status s = run(ctx, 0, ps, r0 * len, nr * len, r0 * nch, nr * nch, &p,
                         ceil_div(nr, rpw) * nch);
      if (s != WGC_OK)
        return s;
    }
    return WGC_OK;
  }
  /* A row longer than a binding: launches over ranges of its chunks. */
  uint64_t per = min64(Win / chunk, Wout);
  if (per == 0) /* bindings of under 4096 floats: no real device */
    return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                    "%s: the storage binding limit is too small", FN);
  for (uint64_t r = 0; r < rows; r++)
    for (uint64_t c0 = 0; c0 < nch; c0 += per) {
      uint64_t nc = min64(per, nch - c0);
      uint64_t rlen = min64(len - c0 * chunk, nc * chunk);
      reduce_params p = {.n_o = 1,
                         .n_c = (uint32_t)nc,
                         .rlen = (uint32_t)rlen,
                         .out_sc = 1,
                         .tpr = tpr,
                         .items = items};
      wgc_status s =
          run(ctx, 0, ps, r * len + c0 * chunk, rlen, r * nch + c0, nc, &p, nc);
      if (s != WGC_OK)
        return s;
    }
  return WGC_OK;
}

/* One column-mode pass: [outer, len, inner] -> [outer, chunks, inner] with
 * rch rows per chunk (2 * rch * inner <= W where a slab exceeds W). */
static wgc_status cols_pass(wgc_context *ctx, const pass *ps, uint64_t outer,
                            uint64_t len, uint64_t inner, uint64_t rch,
                            uint64_t W) {
  uint64_t nch = ceil_div(len, rch);
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
          run(ctx, 1, ps, o0 * len * inner, no * len * inner, o0 * nch * inner,
              no * nch * inner, &p, ceil_div(no * nch * inner, 256));
      if (s != WGC_OK)
        return s;
    }
    return WGC_OK;
  }
  /* One outer slab exceeds a binding: launches over ranges of chunks. */
  uint64_t per = min64(Win / (rch * inner), Wout / inner);
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
                         .items = (uint32_t)rch};
      wgc_status s = run(ctx, 1, ps, (o * len + c0 * rch) * inner, rlen * inner,
                         (o * nch + c0) * inner, nc * inner, &p,
                         ceil_div(nc * inner, 256));
      if (s != WGC_OK)
        return s;
    }
  return WGC_OK;
}

/* SUM over an empty axis: zeros, in launches of at most W outputs. */
static wgc_status fill_zeros(wgc_context *ctx, const wgc_reduce_args *r,
                             uint64_t W) {
  uint64_t total = (uint64_t)r->outer * r->inner;
  pass ps = {.op = 0, .in = r->input, .out = r->output, .div = 1.0f};
  for (uint64_t at = 0; at < total; at += W) {
    uint64_t n = min64(W, total - at);
    reduce_params p = {.n_o = 1, .n_c = 1, .n_i = (uint32_t)n, .items = 1};
    wgc_status s = run(ctx, 1, &ps, 0, 0, at, n, &p, ceil_div(n, 256));
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

wgc_status wg_reduce(wgc_context *ctx, const wgc_reduce_args *r) {
  uint64_t W = window_elems(ctx);
  if (r->len == 0)
    return fill_zeros(ctx, r, W);
  pass ps = {.op = r->op == WGC_REDUCE_MAX   ? 1
                   : r->op == WGC_REDUCE_MIN ? 2
                                             : 0,
             .in = r->input};
  float mean_div = r->op == WGC_REDUCE_MEAN ? (float)r->len : 1.0f;
  uint64_t outer = r->outer, len = r->len, inner = r->inner;

  /* Columns: chunks of up to COL_ROWS rows. Where one outer slab exceeds
   * a binding, passes split it by chunks, and a chunk of full rows (pairs,
   * after the first pass) must fit: fewer rows then. Slabs that fit keep
   * fitting (partials are smaller than their input). */
  uint64_t rch = COL_ROWS;
  if (inner > 1 && len * inner > W) {
    rch = min64(rch, W / (2 * inner));
    if (rch < 2)
      return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                      "%s: reducing a slab of %zu x %zu elements (axis "
                      "length x the product of the dimensions after axis) "
                      "needs a storage binding of at least %llu elements; "
                      "the device's holds %llu",
                      FN, r->len, r->inner, (unsigned long long)(4 * inner),
                      (unsigned long long)W);
  }
  /* Partials go to scratch, which lives until the op has returned. */
  for (;;) {
    uint32_t tpr, items;
    uint64_t nch =
        inner == 1 ? rows_shape(len, &tpr, &items) : ceil_div(len, rch);
    bool last = nch == 1;
    ps.out = r->output;
    ps.out2 = !last && ps.op == 0;
    ps.div = last ? mean_div : 1.0f;
    if (!last) {
      wgc_status s =
          wg_scratch(ctx, FN, (4 * outer * nch * inner) << ps.out2, &ps.out);
      if (s != WGC_OK)
        return s;
    }
    wgc_status s = inner == 1 ? rows_pass(ctx, &ps, outer, len, W)
                              : cols_pass(ctx, &ps, outer, len, inner, rch, W);
    if (s != WGC_OK || last)
      return s;
    ps.in = ps.out;
    ps.in2 = ps.out2;
    len = nch;
  }
}
