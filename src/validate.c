/* Address resolution, footprints and overlap checks. */
#include "validate.h"

#include "dtype.h"
#include "table.h"

#include <inttypes.h>

bool wgc_mul_ok(size_t x, size_t y, size_t *out) {
  return !__builtin_mul_overflow(x, y, out);
}

bool wgc_add_ok(size_t x, size_t y, size_t *out) {
  return !__builtin_add_overflow(x, y, out);
}

uint64_t wgc_sat_mul(uint64_t x, uint64_t y) {
  uint64_t r;
  return __builtin_mul_overflow(x, y, &r) ? UINT64_MAX : r;
}

uint64_t wgc_sat_add(uint64_t x, uint64_t y) {
  uint64_t r;
  return __builtin_add_overflow(x, y, &r) ? UINT64_MAX : r;
}

uint64_t wgc_matrix_span(size_t rows, size_t cols, size_t rs, size_t cs) {
  if (!rows || !cols)
    return 0;
  return wgc_sat_add(
      wgc_sat_add(wgc_sat_mul(rows - 1, rs), wgc_sat_mul(cols - 1, cs)), 1);
}

wgc_status wgc_check_operand(wgc_context *ctx, const char *fn,
                             wgc_operand *op) {
  if (!op->addr)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: %s is the null address",
                    fn, op->param);
  wgc_slot *s = wgc_table_lookup(&ctx->table, op->addr);
  if (!s)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s 0x%016" PRIx64
                    " is not a live allocation (freed or never allocated)",
                    fn, op->param, op->addr);
  uint64_t off = wgc_ptr_offset(op->addr);
  uint32_t align = op->align ? op->align : 4;
  if (off % align)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s 0x%016" PRIx64 " is not %u-byte aligned", fn,
                    op->param, op->addr, align);
  /* The last byte touched: off + first + (repeat-1)*stride + bytes. */
  uint64_t end = off, extra;
  bool ok = !__builtin_add_overflow(end, op->first, &end);
  /* An empty operand touches nothing, whatever its batch stride says. */
  if (op->repeat > 1 && op->bytes) {
    ok = ok && !__builtin_mul_overflow(op->repeat - 1, op->stride, &extra) &&
         !__builtin_add_overflow(end, extra, &end);
  }
  ok = ok && !__builtin_add_overflow(end, op->bytes, &end);
  if (!ok)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s: the footprint at offset %" PRIu64
                    " exceeds the address space",
                    fn, op->param, off);
  if (end > s->bytes)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s: %" PRIu64 " bytes at offset %" PRIu64
                    " overrun the %" PRIu64 "-byte allocation",
                    fn, op->param, end - off, off, s->bytes);
  op->slot = (uint32_t)(s - ctx->table.slots);
  op->ref.mem = s->mem;
  op->ref.offset = off;
  return WGC_OK;
}

/* Whether [a, a+la) and [b, b+lb) intersect. */
static bool spans_meet(uint64_t a, uint64_t la, uint64_t b, uint64_t lb) {
  return la && lb && a < b + lb && b < a + la;
}

/* Whether any repeat i of x meets repeat j of y. For each j, the repeats of x
 * that can meet it form one run of indices, found by division. */
static bool repeats_meet(uint64_t xa, uint64_t xl, uint64_t xs, uint64_t xn,
                         uint64_t ya, uint64_t yl, uint64_t ys, uint64_t yn) {
  if (!xl || !yl)
    return false;
  if (xn > 1 && xs == 0)
    xn = 1;
  if (yn > 1 && ys == 0)
    yn = 1;
  if (xn > yn) { /* iterate over the shorter list */
    uint64_t t;
    t = xa, xa = ya, ya = t;
    t = xl, xl = yl, yl = t;
    t = xs, xs = ys, ys = t;
    t = xn, xn = yn, yn = t;
  }
  for (uint64_t i = 0; i < xn; i++) {
    uint64_t lo = xa + i * xs, hi = lo + xl; /* [lo, hi) */
    if (yn == 1) {
      if (spans_meet(lo, xl, ya, yl))
        return true;
      continue;
    }
    /* y_j = ya + j*ys meets [lo, hi) iff y_j < hi and y_j + yl > lo. */
    if (ya >= hi)
      continue;
    uint64_t jmax = (hi - 1 - ya) / ys; /* largest j with y_j < hi */
    if (jmax >= yn)
      jmax = yn - 1;
    uint64_t yend = ya + jmax * ys + yl;
    if (yend > lo)
      return true;
  }
  return false;
}

bool wgc_repeats_overlap(const wgc_operand *op) {
  return op->repeat > 1 && op->bytes && op->stride < op->bytes;
}

wgc_status wgc_check_no_overlap(wgc_context *ctx, const char *fn,
                                const wgc_operand *out, const wgc_operand *in,
                                bool exact_ok) {
  if (out->slot != in->slot)
    return WGC_OK;
  uint64_t oa = out->ref.offset + out->first, ia = in->ref.offset + in->first;
  if (exact_ok && oa == ia && out->bytes == in->bytes && out->repeat <= 1 &&
      in->repeat <= 1)
    return WGC_OK;
  if (repeats_meet(oa, out->bytes, out->stride, out->repeat, ia, in->bytes,
                   in->stride, in->repeat))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: output %s overlaps input %s in the same allocation",
                    fn, out->param, in->param);
  return WGC_OK;
}

bool wgc_product(const size_t *dims, size_t count, size_t *out) {
  size_t acc = 1;
  for (size_t i = 0; i < count; i++)
    if (!wgc_mul_ok(acc, dims[i], &acc))
      return false;
  *out = acc;
  return true;
}

wgc_status wgc_check_all(wgc_context *ctx, const char *fn, wgc_operand *ops,
                         size_t count) {
  for (size_t i = 0; i < count; i++) {
    wgc_status s = wgc_check_operand(ctx, fn, &ops[i]);
    if (s != WGC_OK)
      return s;
  }
  for (size_t i = 0; i + 1 < count; i++) {
    wgc_status s =
        wgc_check_no_overlap(ctx, fn, &ops[count - 1], &ops[i], false);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

wgc_status wgc_broadcast(wgc_context *ctx, const char *fn, size_t n,
                         const char *const *names, const size_t *const *shapes,
                         const size_t *ranks, size_t *rank, size_t *shape,
                         size_t (*strides)[WGC_MAX_RANK], size_t *counts,
                         size_t *count) {
  size_t r = 0;
  for (size_t k = 0; k < n; k++) {
    if (ranks[k] > WGC_MAX_RANK)
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: rank_%s %zu is above %d", fn, names[k], ranks[k],
                      WGC_MAX_RANK);
    if (ranks[k] && !shapes[k])
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: shape_%s is NULL with rank_%s %zu", fn, names[k],
                      names[k], ranks[k]);
    if (ranks[k] > r)
      r = ranks[k];
  }
  bool ok = true;
  *count = 1;
  for (size_t k = 0; k < n; k++)
    counts[k] = 1;
  /* Right-aligned dimensions; strides built from the right. */
  for (size_t i = r; i-- > 0;) {
    size_t d = 1, from = 0;
    for (size_t k = 0; k < n; k++) {
      size_t ik = i + ranks[k]; /* index + r - rank_k, when >= r */
      size_t dk = ik >= r ? shapes[k][ik - r] : 1;
      if (dk == 1)
        continue;
      if (d != 1 && dk != d)
        return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                        "%s: shape_%s[%zu] = %zu and shape_%s[%zu] = %zu do "
                        "not broadcast",
                        fn, names[from], i + ranks[from] - r, d, names[k],
                        ik - r, dk);
      d = dk;
      from = k;
    }
    shape[i] = d;
    for (size_t k = 0; k < n; k++) {
      size_t ik = i + ranks[k];
      size_t dk = ik >= r ? shapes[k][ik - r] : 1;
      strides[k][i] = dk == 1 ? 0 : counts[k];
      ok = ok && wgc_mul_ok(counts[k], dk, &counts[k]);
    }
    ok = ok && wgc_mul_ok(*count, d, count);
  }
  if (!ok || *count > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: the shapes describe tensors too large to address", fn);
  if (r == 0) {
    shape[0] = 1;
    for (size_t k = 0; k < n; k++)
      strides[k][0] = 0;
    r = 1;
  }
  *rank = r;
  return WGC_OK;
}

wgc_status wgc_window2d_size(wgc_context *ctx, const char *fn,
                             const wgc_window2d *win, size_t limit, size_t *p,
                             size_t *q) {
  size_t *one[] = {win->stride_h, win->stride_w, win->dilation_h,
                   win->dilation_w};
  for (size_t i = 0; i < 4; i++)
    if (!*one[i])
      *one[i] = 1;
  size_t r = win->r, s = win->s, dh = *win->dilation_h, dw = *win->dilation_w;
  if (!r || !s)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->r %zu and d->s %zu must be at least 1", fn, r, s);
  size_t eff_h, eff_w, pad_h2, pad_w2, in_h, in_w;
  if (!wgc_mul_ok(dh, r - 1, &eff_h) || !wgc_mul_ok(dw, s - 1, &eff_w) ||
      !wgc_mul_ok(win->pad_h, 2, &pad_h2) ||
      !wgc_mul_ok(win->pad_w, 2, &pad_w2) ||
      !wgc_add_ok(win->h, pad_h2, &in_h) ||
      !wgc_add_ok(win->w, pad_w2, &in_w) || eff_h == SIZE_MAX ||
      eff_w == SIZE_MAX)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d has sizes whose products overflow", fn);
  if (limit &&
      (in_h > limit || in_w > limit || eff_h > limit || eff_w > limit ||
       *win->stride_h > limit || *win->stride_w > limit))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d's padded sizes, windows or strides exceed %zu", fn,
                    limit);
  if (in_h < eff_h + 1)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->r %zu with dilation_h %zu spans %zu rows, more "
                    "than the padded input height %zu",
                    fn, r, dh, eff_h + 1, in_h);
  if (in_w < eff_w + 1)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->s %zu with dilation_w %zu spans %zu columns, more "
                    "than the padded input width %zu",
                    fn, s, dw, eff_w + 1, in_w);
  *p = (in_h - eff_h - 1) / *win->stride_h + 1;
  *q = (in_w - eff_w - 1) / *win->stride_w + 1;
  return WGC_OK;
}

wgc_status wgc_check_float_type(wgc_context *ctx, const char *fn,
                                const char *param, wgc_dtype t) {
  if (t == WGC_DTYPE_F32 || t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16)
    return WGC_OK;
  if (!wgc_dtype_valid(t))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s %d is not a wgc_dtype", fn, param, (int)t);
  return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                  "%s: %s %s is not a type this operand takes (f32, f16 or "
                  "bf16)",
                  fn, param, wgc_dtype_name(t));
}

wgc_status wgc_check_affine_type(wgc_context *ctx, const char *fn,
                                 const char *param, wgc_dtype t) {
  if (t == WGC_DTYPE_F32 || t == WGC_DTYPE_F16)
    return WGC_OK;
  if (!wgc_dtype_valid(t))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s %d is not a wgc_dtype", fn, param, (int)t);
  return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                  "%s: %s %s is not a type this operand takes (f32 or f16)", fn,
                  param, wgc_dtype_name(t));
}

wgc_status wgc_check_float_operand(wgc_context *ctx, const char *fn,
                                   wgc_operand *op, wgc_dtype t) {
  /* f32 operands keep the plain forms' messages */
  if (t != WGC_DTYPE_F32 && wgc_ptr_offset(op->addr) % op->align)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s 0x%016" PRIx64
                    " is not %u-byte aligned, as a %s operand must be",
                    fn, op->param, op->addr, op->align, wgc_dtype_name(t));
  return wgc_check_operand(ctx, fn, op);
}
