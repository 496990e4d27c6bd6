/* An independent model of wgc's element types (dtype_ref.h). */
#include "dtype_ref.h"

#include <math.h>
#include <string.h>

/* ---- the model ----------------------------------------------------------
 */

static uint32_t fbits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
static float bitsf(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}

/* Decodes a 16-bit pattern of f16 (bf16 false) or bf16. */
dref_val dref_dec16(uint16_t h, bool bf) {
  if (bf) {
    uint32_t b = (uint32_t)h << 16;
    if ((b & 0x7fffffffu) > 0x7f800000u)
      return (dref_val){0, b};
    return (dref_val){bitsf(b), 0};
  }
  int e = (h >> 10) & 31, m = h & 1023;
  double s = (h >> 15) ? -1 : 1;
  if (e == 31)
    return m ? (dref_val){0, ((uint32_t)(h >> 15) << 31) | 0x7f800000u |
                                 ((uint32_t)m << 13)}
             : (dref_val){s * INFINITY, 0};
  return (dref_val){e ? s * ldexp(1024 + m, e - 25) : s * ldexp(m, -24), 0};
}

/* |a| rounded to the nearest f16/bf16 by binary search over the ordered
 * positive patterns, ties to the even pattern, beyond the largest finite
 * by half its ulp to infinity. */
static uint16_t dref_round16(double a, bool bf) {
  uint16_t maxf = bf ? 0x7f7f : 0x7bff, inf = bf ? 0x7f80 : 0x7c00;
  if (isinf(a))
    return inf;
  double top = dref_dec16(maxf, bf).v, ulp = top - dref_dec16(maxf - 1, bf).v;
  if (a >= top + ulp / 2)
    return inf;
  unsigned lo = 0, hi = maxf;
  while (lo < hi) { /* largest pattern <= a */
    unsigned mid = (lo + hi + 1) / 2;
    if (dref_dec16((uint16_t)mid, bf).v <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == maxf)
    return (uint16_t)lo;
  double dl = a - dref_dec16((uint16_t)lo, bf).v,
         dh = dref_dec16((uint16_t)(lo + 1), bf).v - a;
  if (dl < dh || (dl == dh && lo % 2 == 0))
    return (uint16_t)lo;
  return (uint16_t)(lo + 1);
}

uint16_t dref_enc16(dref_val x, bool bf) {
  int mant = bf ? 7 : 10;
  if (x.nan) {
    uint32_t frac = (x.nan & 0x7fffffu) >> (23 - mant);
    if (!frac)
      frac = 1u << (mant - 1);
    return (uint16_t)(((x.nan >> 31) << 15) | (bf ? 0x7f80u : 0x7c00u) | frac);
  }
  return (uint16_t)((signbit(x.v) ? 0x8000 : 0) | dref_round16(fabs(x.v), bf));
}

uint32_t dref_enc_f32(dref_val x) { return x.nan ? x.nan : fbits((float)x.v); }

static int32_t dref_enc_i32(dref_val x) {
  if (x.nan)
    return 0;
  if (x.v >= 2147483647.0)
    return INT32_MAX;
  if (x.v <= -2147483648.0)
    return INT32_MIN;
  return (int32_t)x.v; /* C truncates */
}

/* ggml's quantize_row_q8_0_ref / q4_0_ref for one block of finite values,
 * with the documented rule for a block holding NaN or inf. */
void dref_quant(const float *x, wgc_dtype t, uint8_t *out) {
  bool finite = true;
  for (int j = 0; j < 32; j++)
    finite = finite && isfinite(x[j]);
  uint16_t d16;
  if (!finite) {
    d16 = 0x7e00;
    memcpy(out, &d16, 2);
    memset(out + 2, t == WGC_DTYPE_Q8_0 ? 0 : 0x88,
           t == WGC_DTYPE_Q8_0 ? 32 : 16);
    return;
  }
  if (t == WGC_DTYPE_Q8_0) {
    float amax = 0;
    for (int j = 0; j < 32; j++)
      amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]);
    float d = amax / ((1 << 7) - 1), id = d ? 1.0f / d : 0.0f;
    d16 = dref_enc16((dref_val){d, 0}, false);
    memcpy(out, &d16, 2);
    for (int j = 0; j < 32; j++)
      out[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
  } else {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
      if (amax < fabsf(x[j])) {
        amax = fabsf(x[j]);
        max = x[j];
      }
    float d = max / -8, id = d ? 1.0f / d : 0.0f;
    d16 = dref_enc16((dref_val){d, 0}, false);
    memcpy(out, &d16, 2);
    for (int j = 0; j < 16; j++) {
      int a = (int8_t)(x[j] * id + 8.5f), b = (int8_t)(x[16 + j] * id + 8.5f);
      out[2 + j] = (uint8_t)((a < 15 ? a : 15) | (b < 15 ? b : 15) << 4);
    }
  }
}

size_t dref_bytes(wgc_dtype t, size_t n) {
  size_t b = 0;
  wgc_dtype_bytes(t, n, &b);
  return b;
}

dref_val dref_load(const uint8_t *p, wgc_dtype t, size_t i) {
  uint32_t w;
  uint16_t h;
  switch (t) {
  case WGC_DTYPE_F32:
    memcpy(&w, p + 4 * i, 4);
    return (w & 0x7fffffffu) > 0x7f800000u ? (dref_val){0, w}
                                           : (dref_val){bitsf(w), 0};
  case WGC_DTYPE_I32:
    memcpy(&w, p + 4 * i, 4);
    return (dref_val){(double)(int32_t)w, 0};
  case WGC_DTYPE_F16:
  case WGC_DTYPE_BF16:
    memcpy(&h, p + 2 * i, 2);
    return dref_dec16(h, t == WGC_DTYPE_BF16);
  default: {
    const uint8_t *blk = p + i / 32 * (t == WGC_DTYPE_Q8_0 ? 34 : 18);
    size_t j = i % 32;
    memcpy(&h, blk, 2);
    dref_val d = dref_dec16(h, false);
    int q = t == WGC_DTYPE_Q8_0
                ? (int8_t)blk[2 + j]
                : (j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4) - 8;
    if (d.nan)
      return d;
    if (isinf(d.v) && q == 0)
      return (dref_val){0, 0x7fc00000u};
    return (dref_val){d.v * q, 0};
  }
  }
}

/* The model of wgc_cast: element by element, blocks through f32. */
void dref_cast(const uint8_t *src, wgc_dtype st, uint8_t *dst, wgc_dtype dt,
               size_t n) {
  if (st == dt) {
    memcpy(dst, src, dref_bytes(st, n));
    return;
  }
  for (size_t i = 0; i < n; i++) {
    dref_val x = dref_load(src, st, i);
    if (dt == WGC_DTYPE_F32) {
      uint32_t w = dref_enc_f32(x);
      memcpy(dst + 4 * i, &w, 4);
    } else if (dt == WGC_DTYPE_I32) {
      int32_t w = dref_enc_i32(x);
      memcpy(dst + 4 * i, &w, 4);
    } else if (dt == WGC_DTYPE_F16 || dt == WGC_DTYPE_BF16) {
      uint16_t h = dref_enc16(x, dt == WGC_DTYPE_BF16);
      memcpy(dst + 2 * i, &h, 2);
    } else if (i % 32 == 31) {
      float f[32];
      for (size_t j = 0; j < 32; j++)
        f[j] = bitsf(dref_enc_f32(dref_load(src, st, i - 31 + j)));
      dref_quant(f, dt, dst + i / 32 * (dt == WGC_DTYPE_Q8_0 ? 34 : 18));
    }
  }
}
