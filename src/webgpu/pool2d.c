/* 2-D pooling on WebGPU (kernels/pool2d.wgsl). Launches cover runs of
 * output rows (a row: one output row of one plane, so a run may span
 * planes) whose input rows fit a binding window; a row whose input does
 * not fit is cut into runs of columns. A window too large for one launch
 * (its input span for one output beyond a binding, or its taps beyond the
 * loop budget of CPU adapters) is cut into chunks of window rows and
 * columns, launched in order over the whole output: the first writes, the
 * others fold in, the last of AVG divides. wg_plan_search retries smaller
 * binding windows, then staging, where input and output share a buffer.
 * A 2-byte output of several chunks takes them in f32 scratch and is
 * converted from it at the end, so it is rounded once. */
#include "plan.h"

#include <stdio.h>

/* Matches struct Params of kernels/pool2d.wgsl. */
typedef struct pool_params {
  uint32_t off[4];
  uint32_t g0, gn, ox0, qn;
  uint32_t tr0, trn, tc0, tcn;
  uint32_t h, w, p, q;
  uint32_t sh, sw, ph, pw;
  uint32_t dh, dw, r, s;
  uint32_t xstart, ystart, first, last;
} pool_params;

/* A chunk of window taps: rows [tr0, tr1), columns [tc0, tc1). */
typedef struct taps {
  uint64_t tr0, tr1, tc0, tc1;
  bool first, last;
} taps;

typedef struct pool_run {
  const wgc_pool2d_args *a;
  char consts[64];
  wgc_ref out; /* what the launches write: the output, or f32 scratch */
  wgc_dtype out_type;
} pool_run;

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* v clamped to [0, hi]. */
static uint64_t clamp_to(int64_t v, uint64_t hi) {
  return v < 0 ? 0 : (uint64_t)v > hi ? hi : (uint64_t)v;
}

/* Emits the launch for output rows [g0, g0 + gn) by columns [ox0, ox0 +
 * qn) (all columns when gn > 1) over the taps t, if its operands span at
 * most W floats and bind; WGC_ERR_UNSUPPORTED otherwise (nothing
 * emitted). */
static wgc_status emit(wg_plan *plan, const pool_run *run, const taps *t,
                       uint64_t W, uint64_t g0, uint64_t gn, uint64_t ox0,
                       uint64_t qn) {
  const wgc_pool2d_args *a = run->a;
  const wgc_pool2d_desc *d = &a->d;
  uint64_t h = d->h, w = d->w, p = a->p, q = a->q, hw = h * w;
  uint64_t g1 = g0 + gn - 1, ox1 = ox0 + qn - 1;
  int64_t ph = (int64_t)d->pad_h, pw = (int64_t)d->pad_w;
  /* The input elements those outputs may read: from the first tap row of
   * the first output row to the last tap row of the last; the columns
   * their taps reach when the launch is one row, else whole rows. */
  uint64_t xlo = 0, xhi = 0;
  if (hw) {
    uint64_t y_lo = clamp_to((int64_t)(g0 % p * d->stride_h) - ph +
                                 (int64_t)(t->tr0 * d->dilation_h),
                             h - 1);
    uint64_t y_hi = clamp_to((int64_t)(g1 % p * d->stride_h) - ph +
                                 (int64_t)((t->tr1 - 1) * d->dilation_h),
                             h - 1);
    uint64_t x_lo = 0, x_hi = w - 1;
    if (gn == 1) {
      x_lo = clamp_to((int64_t)(ox0 * d->stride_w) - pw +
                          (int64_t)(t->tc0 * d->dilation_w),
                      w - 1);
      x_hi = clamp_to((int64_t)(ox1 * d->stride_w) - pw +
                          (int64_t)((t->tc1 - 1) * d->dilation_w),
                      w - 1);
    }
    xlo = g0 / p * hw + y_lo * w + x_lo;
    xhi = g1 / p * hw + y_hi * w + x_hi;
    if (xhi < xlo)
      xhi = xlo;
  }
  uint64_t ylo = g0 * q + ox0, yn = gn == 1 ? qn : gn * q;
  if (xhi - xlo + 1 > W || yn > W)
    return WGC_ERR_UNSUPPORTED;
  pool_params pp = {.g0 = (uint32_t)g0,
                    .gn = (uint32_t)gn,
                    .ox0 = (uint32_t)ox0,
                    .qn = (uint32_t)(gn == 1 ? qn : q),
                    .tr0 = (uint32_t)t->tr0,
                    .trn = (uint32_t)(t->tr1 - t->tr0),
                    .tc0 = (uint32_t)t->tc0,
                    .tcn = (uint32_t)(t->tc1 - t->tc0),
                    .h = (uint32_t)h,
                    .w = (uint32_t)w,
                    .p = (uint32_t)p,
                    .q = (uint32_t)q,
                    .sh = (uint32_t)d->stride_h,
                    .sw = (uint32_t)d->stride_w,
                    .ph = (uint32_t)d->pad_h,
                    .pw = (uint32_t)d->pad_w,
                    .dh = (uint32_t)d->dilation_h,
                    .dw = (uint32_t)d->dilation_w,
                    .r = (uint32_t)d->r,
                    .s = (uint32_t)d->s,
                    .xstart = (uint32_t)xlo,
                    .ystart = (uint32_t)ylo,
                    .first = t->first,
                    .last = t->last};
  wg_launch l = {
      .kernel = "math+pool2d",
      .consts = run->consts,
      .ops = {wg_typed_operand("x", a->input, d->input_type, xlo,
                               hw ? xhi - xlo + 1 : 0, false),
              wg_typed_operand("y", run->out, run->out_type, ylo, yn, true)},
      .nops = 2,
      .params = &pp,
      .params_size = sizeof pp,
      .groups = wg_ceil_div(gn * pp.qn, 256)};
  if (!wg_plan_admits(plan, l.ops, l.nops))
    return WGC_ERR_UNSUPPORTED;
  return wg_plan_add(plan, &l);
}

/* Output row g in runs of columns, halved until each binds. */
static wgc_status emit_columns(wg_plan *plan, const pool_run *run,
                               const taps *t, uint64_t W, uint64_t g) {
  uint64_t q = run->a->q;
  for (uint64_t ox = 0, n; ox < q; ox += n) {
    for (n = min64(q - ox, W);; n = (n + 1) / 2) {
      wgc_status s = emit(plan, run, t, W, g, 1, ox, n);
      if (s == WGC_OK)
        break;
      if (s != WGC_ERR_UNSUPPORTED || n == 1)
        return s;
    }
  }
  return WGC_OK;
}

/* Every output over the taps t: runs of rows, halved until each binds. */
static wgc_status emit_chunk(wg_plan *plan, const pool_run *run, const taps *t,
                             uint64_t W) {
  const wgc_pool2d_args *a = run->a;
  uint64_t rows = (uint64_t)a->d.n * a->d.c * a->p;
  for (uint64_t g = 0, n; g < rows; g += n) {
    n = min64(rows - g, W / a->q);
    wgc_status s = WGC_ERR_UNSUPPORTED;
    for (; n > 1; n /= 2)
      if ((s = emit(plan, run, t, W, g, n, 0, a->q)) != WGC_ERR_UNSUPPORTED)
        break;
    if (s == WGC_ERR_UNSUPPORTED) {
      n = 1;
      s = emit_columns(plan, run, t, W, g);
    }
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

static wgc_status pool_window(wg_plan *plan, void *user, uint64_t W) {
  pool_run *run = user;
  const wgc_pool2d_args *a = run->a;
  const wgc_pool2d_desc *d = &a->d;
  /* Chunks of taps whose input span for one output fits W, and whose
   * loop iterations (rows * (columns + 1)) fit the loop budget. */
  uint64_t budget = plan->pol->loop_budget;
  uint64_t tcn = min64(d->s, (W - 1) / d->dilation_w + 1);
  if (budget)
    tcn = min64(tcn, budget / 2);
  uint64_t row_step = (uint64_t)d->dilation_h * (d->w ? d->w : 1);
  uint64_t trn =
      min64(d->r, (W - 1 - (tcn - 1) * d->dilation_w) / row_step + 1);
  if (budget)
    trn = min64(trn, budget / (tcn + 1));
  /* Chunks after the first fold into the output; a 2-byte output holds
   * them in f32 scratch and is written once, from it. */
  uint64_t out_n = (uint64_t)d->n * d->c * a->p * a->q;
  bool scratch = (trn < d->r || tcn < d->s) && d->output_type != WGC_DTYPE_F32;
  run->out = a->output;
  run->out_type = d->output_type;
  if (scratch) {
    wgc_status s = wg_plan_scratch(plan, 4 * out_n, &run->out);
    if (s != WGC_OK)
      return s;
    run->out_type = WGC_DTYPE_F32;
  }
  for (uint64_t tr0 = 0; tr0 < d->r; tr0 += trn)
    for (uint64_t tc0 = 0; tc0 < d->s; tc0 += tcn) {
      taps t = {tr0,
                min64(d->r, tr0 + trn),
                tc0,
                min64(d->s, tc0 + tcn),
                tr0 == 0 && tc0 == 0,
                false};
      t.last = t.tr1 == d->r && t.tc1 == d->s;
      wgc_status s = emit_chunk(plan, run, &t, W);
      if (s != WGC_OK)
        return s;
    }
  return scratch ? wg_plan_convert(plan, a->output, d->output_type, run->out,
                                   WGC_DTYPE_F32, out_n)
                 : WGC_OK;
}

wgc_status wg_pool2d(wgc_context *ctx, const wgc_pool2d_args *a) {
  pool_run run = {.a = a};
  snprintf(run.consts, sizeof run.consts,
           "const MODE: u32 = %uu; const INCLUDE_PAD: u32 = %uu;",
           a->d.mode == WGC_POOL_AVG, a->d.count_include_pad != 0);
  const wg_policy *pol = wg_policy_of(ctx);
  uint64_t top = min64(pol->window_elems, 0x40000000u);
  wgc_status s = wg_plan_search(ctx, a->fn, top, 1, pool_window, &run);
  if (s != WGC_ERR_UNSUPPORTED)
    return s;
  return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                  "%s: no launch of the pooling binds within the device's "
                  "storage binding limit (%llu bytes)",
                  a->fn, (unsigned long long)pol->window);
}
