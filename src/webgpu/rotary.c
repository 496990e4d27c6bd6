/* RotaryEmbedding on WebGPU (kernels/rotary.wgsl, rotary_gather.wgsl).
 * With position ids, the cos and sin rows they select are gathered first
 * into scratch as [batch * seq, rotary_dim / 2] (an out-of-range id gives
 * zeros), the layout of the caches without position ids, so one rotation
 * kernel serves both and binds four operands (x, cos, sin, y). Launches
 * cover runs of rows whose operand windows, including the cache rows they
 * read, fit the binding limit; the gather covers windows of the caches, as
 * any id may select any row. */
#include "plan.h"

#include <inttypes.h>
#include <stdio.h>

typedef struct rotary_params {
  uint32_t off[4];
  uint32_t rows, row0, seq, heads, hd, half, per, crow0;
} rotary_params;

typedef struct gather_params {
  uint32_t off[4];
  uint32_t n, half, p0, np, maxpos, zeros;
} gather_params;

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* cache rows of ids into out ([pairs, half]), by windows of W floats. */
static wgc_status gather(wg_plan *plan, const wgc_rotary_args *r, wgc_ref cache,
                         wgc_ref out, uint64_t W) {
  const wgc_rotary_desc *d = &r->d;
  uint64_t half = d->rotary_dim / 2, pairs = (uint64_t)d->batch * d->seq;
  uint64_t per = W / half; /* ids, or cache rows, per window */
  for (uint64_t j0 = 0; j0 < pairs; j0 += per)
    for (uint64_t p0 = 0; p0 < d->max_positions; p0 += per) {
      uint64_t nj = min64(per, pairs - j0),
               np = min64(per, d->max_positions - p0);
      gather_params p = {.n = (uint32_t)(nj * half),
                         .half = (uint32_t)half,
                         .p0 = (uint32_t)p0,
                         .np = (uint32_t)np,
                         .maxpos = (uint32_t)d->max_positions,
                         .zeros = p0 == 0};
      wg_launch l = {
          .kernel = "rotary_gather",
          .ops = {{"pos", wg_advance(r->position_ids, j0), 4 * nj, false},
                  {"cache", wg_advance(cache, p0 * half), 4 * np * half, false},
                  {"out", wg_advance(out, j0 * half), 4 * nj * half, true}},
          .nops = 3,
          .params = &p,
          .params_size = sizeof p,
          .groups = wg_ceil_div(nj * half, 256)};
      wgc_status s = wg_plan_add(plan, &l);
      if (s != WGC_OK)
        return s;
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
  wgc_context *ctx = plan->ctx;
  const wgc_rotary_desc *d = &r->d;
  uint64_t W = min64(plan->pol->window_elems, 0x40000000u),
           half = d->rotary_dim / 2, hd = d->head_dim;
  if (hd > W)
    return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                    "%s: a row of head_dim %zu floats exceeds the device's "
                    "storage binding limit (%" PRIu64 " bytes)",
                    r->fn, d->head_dim, plan->pol->window);
  wgc_ref cosr = r->cos_cache, sinr = r->sin_cache;
  if (r->has_position_ids) {
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
  }
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
        .ops = {{"x", wg_advance(r->input, r0 * hd), 4 * n * hd, false},
                {"c", wg_advance(cosr, lo * half), 4 * cn, false},
                {"s", wg_advance(sinr, lo * half), 4 * cn, false},
                {"y", wg_advance(r->output, r0 * hd), 4 * n * hd, true}},
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
