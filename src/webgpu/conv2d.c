/* conv2d on WebGPU (kernels/conv2d.wgsl).
 *
 * Groups with many output channels run as an implicit GEMM per group:
 * workgroups compute 64x64 (channels x pixels) tiles, or 32x128 when a group
 * has few channels, staging filter and gathered input slices in workgroup
 * memory (zero padding, strides and dilation in the gather). Groups of fewer
 * than 8 channels (depthwise) run a direct kernel: each workgroup takes one
 * or more output planes, their filters staged in workgroup memory, each
 * invocation 4 pixels. c == 0 leaves an empty sum: the output is the
 * bias (or zeros). On CPU adapters (lavapipe, SwiftShader), where
 * workgroup memory is ordinary memory and barriers are costly, the implicit
 * GEMM runs as kernels/conv2d_blk.wgsl instead (MODE 2 here): no workgroup
 * memory, each invocation 16 channels x 8 pixels in registers, read
 * straight from memory (2-3x the 8 x 4 blocks it replaced on lavapipe and
 * SwiftShader, even for groups of 8-15 channels, where part of a block is
 * padding). A pointwise conv runs here too: it matched or beat the same
 * product through the GEMM planner.
 *
 * Splitting. A launch computes a piece of the output: a range of images,
 * of groups, of output channels within each group, of output rows and of
 * output columns, summing over a range of the flattened taps (ci, rr, ss)
 * of one output channel's filter. Its operands are the windows that piece
 * touches: the input rows and columns its receptive field needs (clipped to
 * the image), the filter slice, the bias slice, the output block. All
 * pieces of a plan have one shape (the last of each range may be shorter).
 * The plan starts with the whole conv in one launch (the common case), and
 * while some piece's operands do not bind within the device limit
 * (wg_plan_fits, exactly as the engine will bind them) it halves one
 * range (see shrink): images, groups, then by the largest window output
 * channels, tap channels, output rows, filter rows, output columns. A piece
 * of one tap, one output pixel and one channel always fits, so every valid
 * call runs. Tap ranges after the first add to the output (the first writes
 * it; the adding form is a separate pipeline); the last adds the bias. A
 * tiling with a piece that does not bind is dropped from the wg_plan and
 * retried smaller; the plan records nothing until all of it is checked.
 * Typed operands bind with their types' accessors; a 2-byte output whose
 * sum is split over tap ranges takes the ranges in f32 scratch and is
 * converted from it at the end, so it is rounded once. */
#include "plan.h"

#include <stdio.h>
#include <string.h>

typedef struct conv_params {
  uint32_t off[4];
  uint32_t kl, km, kgf, ngroups;
  uint32_t kdim, kn, klo, ci0;
  uint32_t r, s, rs, has_bias;
  uint32_t hwin, wwin, xw, xhw;
  uint32_t ximg, xg;
  int32_t ihb, iwb;
  uint32_t sh, sw, dh, dw;
  uint32_t qn, pqn, npix, nci;
  uint32_t yq, ych, yimg, slots;
  uint32_t tiles_n, tiles_m, dss, drr;
  uint32_t dcofs, ss0, rr0, nrr;
  uint32_t nss, pad0, pad1, pad2;
} conv_params;

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* v modulo 2^32 as an i32. The front end keeps padded sizes, dilated
 * filter spans and strides below 2^31 (wgc.h), so every input row a tap
 * reaches, y*stride_h - pad_h + i*dilation_h, lies in [-pad_h, h + pad_h),
 * and less the window's first row it lies in (-2^31, 2^31): the kernels'
 * sums of u32 products and this base, wrapping mod 2^32, give it exactly. */
static int32_t wrap32(uint64_t v) {
  uint32_t u = (uint32_t)v;
  int32_t i;
  memcpy(&i, &u, sizeof i);
  return i;
}

/* The extent of a piece along each range: images, groups, output channels
 * per group, output rows, output columns, taps. */
enum { D_IMG, D_GRP, D_CH, D_ROW, D_COL, D_TAP, D_COUNT };

/* The conv's sizes (64-bit) and the kernel form of a plan. */
typedef struct conv_geo {
  uint64_t n, c, h, w, k, p, q, r, s, sh, sw, ph, pw, dh, dw;
  uint64_t groups, cg, kg, kdim;
  uint64_t total[D_COUNT];
  wgc_ref out; /* what the launches write: the output, or f32 scratch */
  wgc_dtype out_type;
} conv_geo;

/* One piece: its first index and extent along each range. */
typedef struct piece {
  uint64_t at[D_COUNT], len[D_COUNT];
} piece;

/* The input positions [*lo, *hi) along one axis that outputs [o0, o0+on)
 * with taps [t0, t1] need, clipped to [0, len). */
static void needed(uint64_t o0, uint64_t on, uint64_t st, uint64_t pad,
                   uint64_t t0, uint64_t t1, uint64_t dil, uint64_t len,
                   uint64_t *lo, uint64_t *hi) {
  int64_t a = (int64_t)(o0 * st) - (int64_t)pad + (int64_t)(t0 * dil);
  int64_t b =
      (int64_t)((o0 + on - 1) * st) - (int64_t)pad + (int64_t)(t1 * dil) + 1;
  if (a < 0)
    a = 0;
  if (b > (int64_t)len)
    b = (int64_t)len;
  if (b < a)
    b = a;
  *lo = (uint64_t)a;
  *hi = (uint64_t)b;
}

/* Kernel form for pieces of km channels per group; consts[1] adds to the
 * output (tap ranges after the first). */
typedef struct conv_form {
  const char *kernel;
  unsigned mode, bm, bn, bk;
  char consts[2][112];
} conv_form;

#define REGS_WG 64 /* invocations per workgroup of conv2d_blk */
#define REGS_TM 16 /* its output channels per invocation */
#define REGS_TN 8  /* its output pixels per invocation */

static void form_for(conv_form *f, uint64_t km, bool cpu) {
  f->kernel = "conv2d";
  f->bm = 64, f->bn = 64, f->bk = 16;
  if (km < 8)
    f->mode = 1;
  else if (cpu)
    f->mode = 2, f->kernel = "conv2d_blk";
  else if (km < 48)
    f->mode = 0, f->bm = 32, f->bn = 128, f->bk = 8;
  else
    f->mode = 0;
  for (int acc = 0; acc < 2; acc++)
    if (f->mode == 2)
      snprintf(f->consts[acc], sizeof f->consts[acc],
               "const WG: u32 = %uu; const ACC = %s;", REGS_WG,
               acc ? "true" : "false");
    else
      snprintf(f->consts[acc], sizeof f->consts[acc],
               "const MODE: u32 = %uu; const BM: u32 = %uu; const BN: u32 = "
               "%uu; const BK: u32 = %uu; const ACC = %s;",
               f->mode, f->bm, f->bn, f->bk, acc ? "true" : "false");
}

/* The operands, parameters and workgroups of one piece. */
static void piece_launch(const wgc_conv2d_args *a, const conv_geo *G,
                         const conv_form *F, const piece *pc, wg_operand *ops,
                         conv_params *p, uint64_t *groups) {
  const uint64_t *at = pc->at, *len = pc->len;
  uint64_t i0 = at[D_IMG], ni = len[D_IMG];
  uint64_t oc0 = at[D_GRP] * G->kg + at[D_CH];
  uint64_t oc1 = (at[D_GRP] + len[D_GRP] - 1) * G->kg + at[D_CH] + len[D_CH] -
                 1; /* last channel */
  uint64_t p0 = at[D_ROW], pn = len[D_ROW], q0 = at[D_COL], qn = len[D_COL];
  /* c == 0 still walks one tap range, an empty one: no tap may be read */
  uint64_t k0 = at[D_TAP], kn = G->kdim ? len[D_TAP] : 0;
  uint64_t rs = G->r * G->s;
  /* The bias goes in after the whole sum: with the taps split over several
   * launches, only the last adds it, so a large bias cannot swallow small
   * partial sums before they are combined. */
  bool last_taps = at[D_TAP] + len[D_TAP] == G->total[D_TAP];

  /* Taps [k0, k0 + kn): channels ci_a..ci_b; rows and columns of the
   * filter they reach. */
  uint64_t ci_a = 0, rr_a = 0, rr_b = G->r - 1, ss_a = 0, ss_b = G->s - 1;
  uint64_t hlo = 0, hhi = 0, wlo = 0, whi = 0;
  if (kn > 0) {
    uint64_t k1 = k0 + kn - 1;
    ci_a = k0 / rs;
    if (k1 / rs == ci_a) {
      rr_a = k0 % rs / G->s;
      rr_b = k1 % rs / G->s;
      if (rr_a == rr_b)
        ss_a = k0 % G->s, ss_b = k1 % G->s;
      else
        ss_a = 0, ss_b = G->s - 1;
    }
    needed(p0, pn, G->sh, G->ph, rr_a, rr_b, G->dh, G->h, &hlo, &hhi);
    needed(q0, qn, G->sw, G->pw, ss_a, ss_b, G->dw, G->w, &wlo, &whi);
  }
  uint64_t hw = G->h * G->w;
  if (kn > 0 && hhi > hlo && whi > wlo) {
    uint64_t ci_b = (k0 + kn - 1) / rs;
    uint64_t c_a = at[D_GRP] * G->cg + ci_a;
    uint64_t c_b = (at[D_GRP] + len[D_GRP] - 1) * G->cg + ci_b;
    uint64_t first = ((i0 * G->c + c_a) * G->h + hlo) * G->w + wlo;
    uint64_t last =
        (((i0 + ni - 1) * G->c + c_b) * G->h + hhi - 1) * G->w + whi - 1;
    ops[0] = wg_typed_operand("x", a->input, a->d.input_type, first,
                              last - first + 1, false);
  } else { /* nothing of the input is read */
    ops[0] = wg_typed_operand("x", a->input, a->d.input_type, 0, 0, false);
  }
  ops[1] =
      wg_typed_operand("f", a->filter, a->d.filter_type, oc0 * G->kdim + k0,
                       kn ? (oc1 - oc0) * G->kdim + kn : 0, false);
  ops[2] = a->has_bias
               ? wg_typed_operand("b", a->bias, a->d.bias_type, oc0,
                                  oc1 - oc0 + 1, false)
               : wg_typed_operand("b", a->filter, WGC_DTYPE_F32, 0, 0, false);
  if (!a->has_bias) /* unread: bound at a word of the filter */
    ops[2].ref.offset &= ~(uint64_t)3;
  uint64_t pq = G->p * G->q;
  uint64_t yfirst = ((i0 * G->k + oc0) * G->p + p0) * G->q + q0;
  uint64_t ylast =
      (((i0 + ni - 1) * G->k + oc1) * G->p + p0 + pn - 1) * G->q + q0 + qn - 1;
  ops[3] = wg_typed_operand("y", G->out, G->out_type, yfirst,
                            ylast - yfirst + 1, true);

  /* Strides are used only across what the windows hold (< 2^30 elements
   * each); beyond that their u32 truncation multiplies 0. */
  *p = (conv_params){
      .kl = (uint32_t)(len[D_GRP] * len[D_CH]),
      .km = (uint32_t)len[D_CH],
      .kgf = (uint32_t)G->kg,
      .kdim = (uint32_t)G->kdim,
      .kn = (uint32_t)kn,
      .klo = (uint32_t)k0,
      .ci0 = (uint32_t)ci_a,
      .r = (uint32_t)G->r,
      .s = (uint32_t)G->s,
      .rs = (uint32_t)rs,
      .has_bias = a->has_bias && last_taps ? 1u : 0u,
      .hwin = (uint32_t)(hhi - hlo),
      .wwin = (uint32_t)(whi - wlo),
      .xw = (uint32_t)G->w,
      .xhw = (uint32_t)hw,
      .ximg = (uint32_t)(G->c * hw),
      .xg = (uint32_t)(G->cg * hw),
      .ihb = wrap32(p0 * G->sh - G->ph - hlo),
      .iwb = wrap32(q0 * G->sw - G->pw - wlo),
      .sh = (uint32_t)G->sh,
      .sw = (uint32_t)G->sw,
      .dh = (uint32_t)G->dh,
      .dw = (uint32_t)G->dw,
      .qn = (uint32_t)qn,
      .pqn = (uint32_t)(pn * qn),
      .npix = (uint32_t)(ni * pn * qn),
      .yq = (uint32_t)G->q,
      .ych = (uint32_t)pq,
      .yimg = (uint32_t)(G->k * pq),
      .ss0 = (uint32_t)(k0 % G->s),
      .rr0 = (uint32_t)(k0 / G->s % G->r),
  };
  if (F->mode == 0 && kn > 0) { /* a slice of bk taps as filter steps */
    p->dss = (uint32_t)(F->bk % G->s);
    p->drr = (uint32_t)(F->bk / G->s % G->r);
    p->dcofs = (uint32_t)(F->bk / rs * hw);
  }
  uint64_t npq = pn * qn;
  if (F->mode == 2) {
    /* The taps as a box (see walk): whole channels, whole rows of one
     * channel, or columns of one row. */
    if (G->kdim == 0)
      p->nci = 0; /* c == 0: an empty sum */
    else if (k0 % rs == 0 && kn % rs == 0)
      p->nci = (uint32_t)(kn / rs), p->nrr = p->r, p->nss = p->s;
    else if (k0 % G->s == 0 && kn % G->s == 0)
      p->nci = 1, p->nrr = (uint32_t)(kn / G->s), p->nss = p->s;
    else
      p->nci = 1, p->nrr = 1, p->nss = (uint32_t)kn;
    p->tiles_n = (uint32_t)wg_ceil_div(ni * npq, REGS_TN);
    p->tiles_m = (uint32_t)wg_ceil_div(len[D_CH], REGS_TM);
    p->ngroups = (uint32_t)len[D_GRP];
    *groups =
        wg_ceil_div((uint64_t)p->tiles_n * p->tiles_m * len[D_GRP], REGS_WG);
  } else if (F->mode == 0) {
    p->tiles_n = (uint32_t)wg_ceil_div(ni * npq, F->bn);
    p->tiles_m = (uint32_t)wg_ceil_div(len[D_CH], F->bm);
    p->ngroups = (uint32_t)len[D_GRP];
    *groups = (uint64_t)p->tiles_n * p->tiles_m * len[D_GRP];
  } else {
    uint64_t planes = ni * len[D_GRP] * len[D_CH];
    /* 16..256 invocations per plane, 4 pixels each */
    uint64_t per_plane = 16;
    while (per_plane < 256 && per_plane * 4 < npq)
      per_plane *= 2;
    p->slots = (uint32_t)(256 / per_plane);
    p->tiles_n = (uint32_t)wg_ceil_div(npq, per_plane * 4);
    p->ngroups = (uint32_t)planes;
    *groups = wg_ceil_div(planes, p->slots) * p->tiles_n;
  }
}

/* Emits the pieces of shape ext in order (tap ranges of one output block
 * in ascending order, so that later ones add to the first). Stops at the
 * first piece that does not bind, with WGC_ERR_UNSUPPORTED and its
 * operands in bad (the caller rewinds the plan and shrinks the shape). */
static wgc_status walk(wg_plan *plan, const wgc_conv2d_args *a,
                       const conv_geo *G, const uint64_t *ext,
                       wg_operand *bad) {
  conv_form F;
  form_for(&F, ext[D_CH], plan->pol->cpu_kernels);
  /* Tap ranges of less than a channel (a filter row) stay inside one, so
   * every range is a box of whole channels, whole rows of one channel or
   * columns of one row (halve keeps ext a multiple of r*s or of s above
   * them), as conv2d_blk.wgsl relies on. */
  uint64_t rs = G->r * G->s, unit = ext[D_TAP] >= rs     ? G->total[D_TAP]
                                    : ext[D_TAP] >= G->s ? rs
                                                         : G->s;
  piece pc;
  for (int i = 0; i < D_COUNT; i++)
    pc.at[i] = 0;
  for (;;) {
    for (int i = 0; i < D_COUNT; i++)
      pc.len[i] = min_u64(ext[i], G->total[i] - pc.at[i]);
    pc.len[D_TAP] = min_u64(pc.len[D_TAP], unit - pc.at[D_TAP] % unit);
    wg_operand ops[4];
    conv_params p;
    uint64_t groups;
    piece_launch(a, G, &F, &pc, ops, &p, &groups);
    if (!wg_plan_fits(plan, ops, 4)) {
      for (int i = 0; i < 4; i++)
        bad[i] = ops[i];
      return WGC_ERR_UNSUPPORTED;
    }
    wg_launch l = {.kernel = F.kernel,
                   .consts = F.consts[pc.at[D_TAP] > 0],
                   .ops = {ops[0], ops[1], ops[2], ops[3]},
                   .nops = 4,
                   .params = &p,
                   .params_size = sizeof p,
                   .groups = groups};
    wgc_status s = wg_plan_add(plan, &l);
    if (s != WGC_OK)
      return s;
    /* next piece: the tap range varies fastest */
    int i = D_COUNT - 1;
    for (; i >= 0; i--) {
      pc.at[i] += pc.len[i];
      if (pc.at[i] < G->total[i])
        break;
      pc.at[i] = 0;
    }
    if (i < 0)
      return WGC_OK;
  }
}

/* Halves range d of the shape if it is longer than 1. Tap ranges halve
 * as whole channels, then whole filter rows, then columns of one row. */
static bool halve(const conv_geo *G, uint64_t *ext, int d) {
  uint64_t e = ext[d], rs = G->r * G->s;
  if (e <= 1)
    return false;
  if (d == D_TAP && e > rs)
    ext[d] = wg_ceil_div(e / rs, 2) * rs;
  else if (d == D_TAP && e > G->s)
    ext[d] = wg_ceil_div(e / G->s, 2) * G->s;
  else
    ext[d] = wg_ceil_div(e, 2);
  return true;
}

/* Shrinks the shape after a piece whose operands bad did not bind: halves
 * the range of the largest window that shrinks it most. A window spans its
 * operand's outer dimensions first (an output block spans whole planes of
 * each channel it holds, an input window whole planes of each tap channel),
 * so those go first: images; then groups; then output channels for the
 * filter, bias and output; tap channels for the input; then output rows,
 * filter rows, output columns, filter columns. */
static bool shrink(const conv_geo *G, uint64_t *ext, const wg_operand *bad) {
  if (halve(G, ext, D_IMG) || halve(G, ext, D_GRP))
    return true;
  int big = 0;
  for (int i = 1; i < 4; i++)
    if (bad[i].bytes > bad[big].bytes)
      big = i;
  uint64_t rs = G->r * G->s, e = ext[D_TAP];
  switch (big) {
  case 0: /* input */
    if ((e > rs && halve(G, ext, D_TAP)) || halve(G, ext, D_ROW) ||
        (e > G->s && halve(G, ext, D_TAP)) || halve(G, ext, D_COL) ||
        halve(G, ext, D_TAP))
      return true;
    break;
  case 1: /* filter */
    if (halve(G, ext, D_CH) || halve(G, ext, D_TAP))
      return true;
    break;
  case 2: /* bias */
    if (halve(G, ext, D_CH))
      return true;
    break;
  default: /* output */
    if (halve(G, ext, D_CH) || halve(G, ext, D_ROW) || halve(G, ext, D_COL))
      return true;
  }
  for (int d = 0; d < D_COUNT; d++)
    if (halve(G, ext, d))
      return true;
  return false;
}

static wgc_status conv2d_plan(wg_plan *plan, const wgc_conv2d_args *a) {
  wgc_context *ctx = plan->ctx;
  const wgc_conv2d_desc *d = &a->d;
  conv_geo G = {.n = d->n,
                .c = d->c,
                .h = d->h,
                .w = d->w,
                .k = d->k,
                .p = a->p,
                .q = a->q,
                .r = d->r,
                .s = d->s,
                .sh = d->stride_h,
                .sw = d->stride_w,
                .ph = d->pad_h,
                .pw = d->pad_w,
                .dh = d->dilation_h,
                .dw = d->dilation_w,
                .groups = d->groups};
  G.cg = G.c / G.groups;
  G.kg = G.k / G.groups;
  G.kdim = G.cg * G.r * G.s;
  if (G.c == 0) { /* nothing is gathered: keep the unused fields tame */
    G.h = G.w = G.r = G.s = 1;
    G.sh = G.sw = G.dh = G.dw = 1;
    G.ph = G.pw = 0;
  }
  G.total[D_IMG] = G.n;
  G.total[D_GRP] = G.groups;
  G.total[D_CH] = G.kg;
  G.total[D_ROW] = G.p;
  G.total[D_COL] = G.q;
  G.total[D_TAP] = G.kdim ? G.kdim : 1; /* c == 0: one empty range */

  uint64_t ext[D_COUNT];
  for (int i = 0; i < D_COUNT; i++)
    ext[i] = G.total[i];
  /* As many images per launch as fit by element count, refined below. */
  uint64_t E = plan->pol->window_elems;
  uint64_t in_img = G.c * d->h * d->w, out_img = G.k * G.p * G.q;
  uint64_t per = E / out_img;
  if (in_img && E / in_img < per)
    per = E / in_img;
  if (per >= 1 && per < G.n)
    ext[D_IMG] = per;

  /* A tap range loops once per tap in the direct and register kernels
   * and about five times per tap in the staged one: within the adapter's
   * loop budget (gpu.h), or later taps would be lost. */
  uint32_t budget = plan->pol->loop_budget;
  if (budget) {
    uint64_t max_taps = budget / (plan->pol->cpu_kernels ? 2 : 5);
    while (ext[D_TAP] > max_taps && halve(&G, ext, D_TAP))
      ;
  }

  /* A sum split over tap ranges adds them up in the output; a 2-byte
   * output holds them in f32 scratch and is written once, from it. */
  wg_operand bad[4];
  bool scratch = false;
  G.out = a->output;
  G.out_type = d->output_type;
  for (;;) {
    if (ext[D_TAP] < G.total[D_TAP] && d->output_type != WGC_DTYPE_F32 &&
        !scratch) {
      wgc_status s = wg_plan_scratch(plan, 4 * G.n * G.k * G.p * G.q, &G.out);
      if (s != WGC_OK)
        return s;
      G.out_type = WGC_DTYPE_F32;
      scratch = true;
    }
    wgc_status s = walk(plan, a, &G, ext, bad);
    if (s == WGC_OK && scratch)
      s = wg_plan_convert(plan, a->output, d->output_type, G.out, WGC_DTYPE_F32,
                          G.n * G.k * G.p * G.q);
    if (s != WGC_ERR_UNSUPPORTED || plan->status != WGC_OK)
      return s;
    wg_plan_rewind(plan, 0);
    if (!shrink(&G, ext, bad)) /* a piece of one tap and one pixel binds */
      return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                      "%s: operand windows of %llu, %llu and %llu bytes "
                      "exceed the device's storage binding limit",
                      a->fn, (unsigned long long)bad[0].bytes,
                      (unsigned long long)bad[1].bytes,
                      (unsigned long long)bad[3].bytes);
  }
}

wgc_status wg_conv2d(wgc_context *ctx, const wgc_conv2d_args *a) {
  wg_plan plan;
  wg_plan_init(&plan, ctx, a->fn);
  return wg_plan_finish(&plan, conv2d_plan(&plan, a));
}
