/* conv2d on WebGPU (kernels/conv2d.wgsl).
 *
 * Groups with many output channels run as an implicit GEMM per group:
 * workgroups compute 64x64 (channels x pixels) tiles, or 32x128 when a group
 * has few channels, staging filter and gathered input slices in workgroup
 * memory (zero padding, strides and dilation in the gather). Groups of fewer
 * than 8 channels (depthwise) run a direct kernel: each workgroup takes one
 * or more output planes, their filters staged in workgroup memory, each
 * invocation 4 pixels. c == 0 leaves an empty sum: the output is the
 * bias (or zeros). Launches cover as many images as one storage binding
 * holds. */
#include "webgpu.h"

#include <stdio.h>

typedef struct conv_params {
  uint32_t off[4];
  uint32_t c, h, w, k;
  uint32_t r, s, p, q;
  uint32_t sh, sw, ph, pw;
  uint32_t dh, dw, cg, kg;
  uint32_t kdim, rs, pq, npix;
  uint32_t tiles_n, tiles_m, ngroups, has_bias;
  uint32_t px, slots, dss, drr;
  uint32_t dcofs, pad[3];
} conv_params;

static const char *FN = "wgc_conv2d";

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static wgc_ref advance(wgc_ref r, uint64_t elems) {
  r.offset += 4 * elems;
  return r;
}

#define SMALL (1u << 30) /* keeps the kernel's i32 coordinates exact */

wgc_status wg_conv2d(wgc_context *ctx, const wgc_conv2d_args *a) {
  const wgc_conv2d_desc *d = &a->d;
  const gpu_limits *lim = wg_limits(ctx);
  uint64_t E = (lim->max_storage_binding_size - 256) / 4;
  if (E > SMALL)
    E = SMALL;
  uint64_t cg = d->c / d->groups, kg = d->k / d->groups;
  uint64_t in_img = (uint64_t)d->c * d->h * d->w;
  uint64_t out_img = (uint64_t)d->k * a->p * a->q;
  uint64_t kdim = cg * d->r * d->s;
  uint64_t per = E / out_img;
  if (in_img && E / in_img < per)
    per = E / in_img;
  if (per == 0 || (uint64_t)d->k * kdim > E)
    return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                    "%s: one image (%llu input, %llu output elements) or the "
                    "filter (%llu elements) exceeds the device's storage "
                    "binding limit (%llu elements)",
                    FN, (unsigned long long)in_img, (unsigned long long)out_img,
                    (unsigned long long)(d->k * kdim), (unsigned long long)E);
  if (d->c > 0 && (d->pad_h >= SMALL || d->pad_w >= SMALL ||
                   (uint64_t)(a->p - 1) * d->stride_h >= SMALL ||
                   (uint64_t)(a->q - 1) * d->stride_w >= SMALL ||
                   (uint64_t)(d->r - 1) * d->dilation_h >= SMALL ||
                   (uint64_t)(d->s - 1) * d->dilation_w >= SMALL))
    return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                    "%s: padding, stride or dilation too large for the "
                    "WebGPU kernel (coordinates beyond 2^30)",
                    FN);

  conv_params base = {.c = (uint32_t)d->c,
                      .h = (uint32_t)d->h,
                      .w = (uint32_t)d->w,
                      .k = (uint32_t)d->k,
                      .r = (uint32_t)d->r,
                      .s = (uint32_t)d->s,
                      .p = (uint32_t)a->p,
                      .q = (uint32_t)a->q,
                      .sh = (uint32_t)d->stride_h,
                      .sw = (uint32_t)d->stride_w,
                      .ph = (uint32_t)d->pad_h,
                      .pw = (uint32_t)d->pad_w,
                      .dh = (uint32_t)d->dilation_h,
                      .dw = (uint32_t)d->dilation_w,
                      .cg = (uint32_t)cg,
                      .kg = (uint32_t)kg,
                      .kdim = (uint32_t)kdim,
                      .rs = (uint32_t)(d->r * d->s),
                      .pq = (uint32_t)(a->p * a->q),
                      .has_bias = a->has_bias ? 1u : 0u};
  if (d->c == 0) { /* nothing is gathered: keep the unused fields tame */
    base.h = base.w = base.r = base.s = base.rs = 1;
    base.sh = base.sw = base.dh = base.dw = 1;
    base.ph = base.pw = 0;
  }

  unsigned mode, bm = 64, bn = 64, bk = 16;
  if (kg < 8)
    mode = 1;
  else if (kg < 48)
    mode = 0, bm = 32, bn = 128, bk = 8;
  else
    mode = 0;
  if (mode == 0 && d->c > 0) { /* a slice of bk rows as filter steps */
    base.dss = (uint32_t)(bk % d->s);
    base.drr = (uint32_t)(bk / d->s % d->r);
    base.dcofs = (uint32_t)(bk / (d->r * d->s) * d->h * d->w);
  }
  char consts[96];
  snprintf(consts, sizeof consts,
           "const MODE: u32 = %uu; const BM: u32 = %uu; const BN: u32 = %uu; "
           "const BK: u32 = %uu;",
           mode, bm, bn, bk);

  uint64_t pq = (uint64_t)a->p * a->q;
  for (uint64_t i0 = 0; i0 < d->n; i0 += per) {
    uint64_t ni = d->n - i0 < per ? d->n - i0 : per;
    conv_params p = base;
    p.npix = (uint32_t)(ni * pq);
    uint64_t groups;
    if (mode == 0) {
      p.tiles_n = (uint32_t)ceil_div(ni * pq, bn);
      p.tiles_m = (uint32_t)ceil_div(kg, bm);
      p.ngroups = (uint32_t)d->groups;
      groups = (uint64_t)p.tiles_n * p.tiles_m * d->groups;
    } else {
      uint64_t planes = ni * d->k;
      /* 16..256 invocations per plane, 4 pixels each */
      uint64_t per_plane = 16;
      while (per_plane < 256 && per_plane * 4 < pq)
        per_plane *= 2;
      p.slots = (uint32_t)(256 / per_plane);
      p.tiles_n = (uint32_t)ceil_div(pq, per_plane * 4);
      p.ngroups = (uint32_t)planes;
      groups = ceil_div(planes, p.slots) * p.tiles_n;
    }
    wg_launch l = {
        .kernel = "conv2d",
        .consts = consts,
        .ops = {{"x", advance(a->input, i0 * in_img), 4 * ni * in_img, false},
                {"f", a->filter, 4 * d->k * kdim, false},
                {"b", a->has_bias ? a->bias : a->filter,
                 a->has_bias ? 4 * (uint64_t)d->k : 0, false},
                {"y", advance(a->output, i0 * out_img), 4 * ni * out_img,
                 true}},
        .nops = 4,
        .params = &p,
        .params_size = sizeof p,
        .groups = groups};
    wgc_status s = wg_launch_run(ctx, FN, &l);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}
