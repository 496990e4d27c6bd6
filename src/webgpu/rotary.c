/* RotaryEmbedding on WebGPU (kernels/rotary.wgsl, rotary_part.wgsl,
 * rotary_gather.wgsl). With position ids, the cos and sin rows they select
 * are gathered first into scratch as [batch * seq, rotary_dim / 2] (an
 * out-of-range id gives zeros), the layout of the caches without position
 * ids, so one rotation kernel serves both and binds four operands (x, cos,
 * sin, y). Launches cover runs of rows whose operand windows, including the
 * cache rows they read, fit the binding limit; the gather covers windows of
 * the caches, as any id may select any row. A row longer than a window is
 * rotated by runs of pairs, its two halves bound apart (rotary_part), and
 * its dimensions past rotary_dim copied. */
#include "plan.h"

#include <inttypes.h>
#include <stdio.h>

typedef struct rotary_params {
  uint32_t off[4];
  uint32_t rows, row0, seq, heads, hd, half, per, crow0;
} rotary_params;

typedef struct gather_params {
  uint32_t off[4];
  uint32_t n, half, p0, np, maxpos, zeros, nc;
} gather_params;

typedef struct part_params {
  uint32_t off[8];
  uint32_t n, step;
} part_params;

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* cache rows of ids into out ([pairs, half]), by windows of W floats: runs
 * of whole rows, or of one row's columns when a row exceeds W. */
static wgc_status gather(wg_plan *plan, const wgc_rotary_args *r, wgc_ref cache,
                         wgc_ref out, uint64_t W) {
  const wgc_rotary_desc *d = &r->d;
  uint64_t half = d->rotary_dim / 2, pairs = (uint64_t)d->batch * d->seq;
  uint64_t cols = min64(half, W);
  uint64_t per = half <= W ? W / half : 1; /* ids, or cache rows, per window */
  for (uint64_t k0 = 0; k0 < half; k0 += cols)
    for (uint64_t j0 = 0; j0 < pairs; j0 += per)
      for (uint64_t p0 = 0; p0 < d->max_positions; p0 += per) {
        uint64_t nj = min64(per, pairs - j0),
                 np = min64(per, d->max_positions - p0),
                 nc = min64(cols, half - k0);
        gather_params p = {.n = (uint32_t)(nj * nc),
                           .half = (uint32_t)half,
                           .p0 = (uint32_t)p0,
                           .np = (uint32_t)np,
                           .maxpos = (uint32_t)d->max_positions,
                           .zeros = p0 == 0,
                           .nc = (uint32_t)nc};
        wg_launch l = {.kernel = "rotary_gather",
                       .ops = {{.name = "pos",
                                .ref = wg_advance(r->position_ids, j0),
                                .bytes = 4 * nj,
                                .write = false},
                               wg_typed_operand("cache", cache, d->cache_type,
                                                p0 * half + k0,
                                                (np - 1) * half + nc, false),
                               {.name = "out",
                                .ref = wg_advance(out, j0 * half + k0),
                                .bytes = 4 * ((nj - 1) * half + nc),
                                .write = true}},
                       .nops = 3,
                       .params = &p,
                       .params_size = sizeof p,
                       .groups = wg_ceil_div(nj * nc, 256)};
        wgc_status s = wg_plan_add(plan, &l);
        if (s != WGC_OK)
          return s;
      }
  return WGC_OK;
}

/* The (batch, seq) cache row of row. */
static uint64_t cache_row(const wgc_rotary_desc *d, uint64_t row) {
  if (d->layout == WGC_ROTARY_BSHD)
    return row / d->heads;
  return row / ((uint64_t)d->heads * d->seq) * d->seq + row % d->seq;
}

/* Rows of head_dim beyond W floats: each launch rotates a run of one row's
 * pairs, the first and second element of each pair as operands of their
 * own (x1, x2; y1, y2), so that a row's halves bind apart. */
static wgc_status rotary_long_rows(wg_plan *plan, const wgc_rotary_args *r,
                                   wgc_ref cosr, wgc_ref sinr, wgc_dtype ct,
                                   uint64_t W) {
  const wgc_rotary_desc *d = &r->d;
  wgc_dtype it = d->input_type, ot = d->output_type;
  uint64_t hd = d->head_dim, half = d->rotary_dim / 2;
  uint64_t rows = (uint64_t)d->batch * d->seq * d->heads;
  uint64_t step = d->interleaved ? 2 : 1, gap = d->interleaved ? 1 : half;
  bool in_place =
      r->input.mem == r->output.mem && r->input.offset == r->output.offset;
  for (uint64_t row = 0; row < rows; row++) {
    uint64_t cr = cache_row(d, row);
    for (uint64_t k0 = 0, n; k0 < half; k0 += n) {
      n = min64(W / step, half - k0);
      for (;; n = (n + 1) / 2) {
        uint64_t span = (n - 1) * step + 1, at = row * hd + step * k0;
        part_params p = {.n = (uint32_t)n, .step = (uint32_t)step};
        wg_launch l = {
            .kernel = "rotary_part",
            .ops = {wg_typed_operand("x1", r->input, it, at, span, false),
                    wg_typed_operand("x2", r->input, it, at + gap, span, false),
                    wg_typed_operand("c", cosr, ct, cr * half + k0, n, false),
                    wg_typed_operand("s", sinr, ct, cr * half + k0, n, false),
                    wg_typed_operand("y1", r->output, ot, at, span, true),
                    wg_typed_operand("y2", r->output, ot, at + gap, span,
                                     true)},
            .nops = 6,
            .params = &p,
            .params_size = sizeof p,
            .groups = wg_ceil_div(n, 256)};
        /* a run of one pair is emitted regardless: its operands stage */
        if (n > 1 && !wg_plan_fits(plan, l.ops, l.nops))
          continue;
        wgc_status s = wg_plan_add(plan, &l);
        if (s != WGC_OK)
          return s;
        break;
      }
    }
    uint64_t rest = hd - 2 * half;
    if (rest && !in_place) {
      uint64_t at = row * hd + 2 * half;
      wgc_status s =
          wg_plan_convert(plan, wg_advance_typed(r->output, ot, at), ot,
                          wg_advance_typed(r->input, it, at), it, rest);
      if (s != WGC_OK)
        return s;
    }
  }
  return WGC_OK;
}

/* The (batch, seq) cache rows [lo, hi] that rows [r0, r0 + n) read. */
static void cache_rows(const wgc_rotary_desc *d, uint64_t r0, uint64_t n,
                       uint64_t *lo, uint64_t *hi) {
  uint64_t r1 = r0 + n - 1;
  if (d->layout == WGC_ROTARY_BSHD) {
    *lo = r0 / d->heads;
    *hi = r1 / d->heads;
    return;
  }
  uint64_t q0 = r0 / d->seq, q1 = r1 / d->seq; /* batch * heads + head */
  if (q0 == q1) {
    *lo = q0 / d->heads * d->seq + r0 % d->seq;
    *hi = q0 / d->heads * d->seq + r1 % d->seq;
  } else {
    *lo = q0 / d->heads * d->seq;
    *hi = q1 / d->heads * d->seq + d->seq - 1;
  }
}

static wgc_status rotary_plan(wg_plan *plan, const wgc_rotary_args *r) {
  const wgc_rotary_desc *d = &r->d;
  uint64_t W = min64(plan->pol->window_elems, 0x40000000u),
           half = d->rotary_dim / 2, hd = d->head_dim;
  wgc_ref cosr = r->cos_cache, sinr = r->sin_cache;
  wgc_dtype ct = d->cache_type, it = d->input_type, ot = d->output_type;
  if (r->has_position_ids) { /* gathered into f32 scratch */
    uint64_t n = (uint64_t)d->batch * d->seq * half;
    wgc_ref tmp;
    wgc_status s = wg_plan_scratch(plan, 8 * n, &tmp);
    if (s == WGC_OK)
      s = gather(plan, r, cosr, tmp, W);
    if (s == WGC_OK)
      s = gather(plan, r, sinr, wg_advance(tmp, n), W);
    if (s != WGC_OK)
      return s;
    cosr = tmp;
    sinr = wg_advance(tmp, n);
    ct = WGC_DTYPE_F32;
  }
  if (hd > W)
    return rotary_long_rows(plan, r, cosr, sinr, ct, W);
  char consts[80];
  snprintf(consts, sizeof consts,
           "const INTERLEAVED: u32 = %uu; const BHSD: u32 = %uu;",
           d->interleaved != 0, d->layout == WGC_ROTARY_BHSD);
  uint64_t rows = (uint64_t)d->batch * d->seq * d->heads;
  for (uint64_t r0 = 0, n; r0 < rows; r0 += n) {
    n = min64(W / hd, rows - r0);
    uint64_t lo, hi;
    for (;;) {
      cache_rows(d, r0, n, &lo, &hi);
      if ((hi - lo + 1) * half <= W || n == 1)
        break;
      n = (n + 1) / 2;
    }
    uint64_t cn = (hi - lo + 1) * half;
    rotary_params p = {.rows = (uint32_t)n,
                       .row0 = (uint32_t)r0,
                       .seq = (uint32_t)d->seq,
                       .heads = (uint32_t)d->heads,
                       .hd = (uint32_t)hd,
                       .half = (uint32_t)half,
                       .per = (uint32_t)(hd - half),
                       .crow0 = (uint32_t)lo};
    wg_launch l = {
        .kernel = "rotary",
        .consts = consts,
        .ops = {wg_typed_operand("x", r->input, it, r0 * hd, n * hd, false),
                wg_typed_operand("c", cosr, ct, lo * half, cn, false),
                wg_typed_operand("s", sinr, ct, lo * half, cn, false),
                wg_typed_operand("y", r->output, ot, r0 * hd, n * hd, true)},
        .nops = 4,
        .params = &p,
        .params_size = sizeof p,
        .groups = wg_ceil_div(n * (hd - half), 256)};
    wgc_status s = wg_plan_add(plan, &l);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

wgc_status wg_rotary(wgc_context *ctx, const wgc_rotary_args *r) {
  wg_plan plan;
  wg_plan_init(&plan, ctx, r->fn);
  return wg_plan_finish(&plan, rotary_plan(&plan, r));
}
