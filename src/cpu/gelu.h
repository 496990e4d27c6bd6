/* GELU, 0.5 x erfc(-x/sqrt2), over a row of doubles for GEMM's epilogue
 * (gemm.c), in float SIMD: libm's erfc one element at a time was a third
 * of a BERT up-projection's time in wasm32 (20 ns an element in V8; this
 * takes 6). For 1e-30 < |x| < GELU_FAST_MAX: erfc(|z|), z = x/sqrt2, by
 * Numerical Recipes' Chebyshev fit t exp(-z^2 + P(t)), t = 1/(1 + |z|/2)
 * (fractional error under 1.2e-7), e^u by vexp.h, then gelu(x) = x - h
 * for x >= 0 and -h below,
 * h = 0.5 |x| erfc(|z|): within 1.9e-6 relative of the double formula
 * (a sweep of 4 million points; the header allows 1e-5), float rounding
 * of z^2 setting most of it. Beyond that range, for NaN, infinities and
 * zeros, libm in double. Every lane computes the same float operations
 * whether the target has SIMD or not, so every target, and every cut of C
 * into tiles, gives the same bits. */
#ifndef WGC_CPU_GELU_H
#define WGC_CPU_GELU_H

#include "vexp.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GELU_FAST_MAX 4.0
#define GELU_FAST_MIN 1e-30
#define GELU_WAYS 2 /* vectors side by side: two chains of dependent steps */

/* P(t) from t^9 down, then 1/sqrt2 and 0.5; read once per row as
 * vexp's constants are. */
enum { GELU_P = 10, GELU_K = GELU_P + 2 };
static const float gelu_table[GELU_K] = {
    0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f,
    0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
    1.00002368f, -1.26551223f, 0.70710678f, 0.5f};

/* x[w] := gelu(x[w]) for GELU_WAYS vectors, each step across all of them;
 * k: gelu_table, ke: vexp_table. */
static inline void gelu_lanes(vexp_f *x, const float *k, const float *ke) {
  vexp_f ax[GELU_WAYS], t[GELU_WAYS], z2[GELU_WAYS], p[GELU_WAYS];
  for (int w = 0; w < GELU_WAYS; w++) {
    vexp_u bits;
    memcpy(&bits, &x[w], sizeof bits);
    bits &= 0x7fffffffu;
    memcpy(&ax[w], &bits, sizeof ax[w]);
    vexp_f z = ax[w] * k[GELU_P];
    t[w] = 1.0f / (1.0f + k[GELU_P + 1] * z);
    z2[w] = z * z;
    p[w] = k[0] * t[w] + k[1];
  }
  for (int i = 2; i < GELU_P; i++)
    for (int w = 0; w < GELU_WAYS; w++)
      p[w] = p[w] * t[w] + k[i];
  for (int w = 0; w < GELU_WAYS; w++) {
    vexp_f h = k[GELU_P + 1] * ax[w] * t[w] * vexp(p[w] - z2[w], ke);
    vexp_f hp = x[w] - h, hn = -h;
    vexp_u pos, neg, m;
    memcpy(&pos, &hp, sizeof pos);
    memcpy(&neg, &hn, sizeof neg);
#ifdef TILE_VECTOR
    m = (vexp_u)(x[w] >= 0.0f); /* -0 takes x - h: -0 - 0 is -0 */
#else
    m = x[w] >= 0.0f ? 0xffffffffu : 0u;
#endif
    pos = (pos & m) | (neg & ~m);
    memcpy(&x[w], &pos, sizeof pos);
  }
}

/* v[j] := gelu(v[j]) for j < cols, in groups of GELU_WAYS * VEXP_LANES
 * (the last padded with zeros). */
static inline void gelu_row(double *v, size_t cols) {
  enum { GROUP = GELU_WAYS * VEXP_LANES };
  float k[GELU_K], ke[VEXP_K];
  vexp_read(k, gelu_table, GELU_K);
  vexp_constants(ke);
  for (size_t j = 0; j < cols; j += GROUP) {
    size_t n = cols - j < GROUP ? cols - j : GROUP;
    float in[GROUP] = {0};
    for (size_t q = 0; q < n; q++)
      in[q] = (float)v[j + q];
    vexp_f lanes[GELU_WAYS];
    memcpy(lanes, in, sizeof lanes);
    gelu_lanes(lanes, k, ke);
    float out[GROUP];
    memcpy(out, lanes, sizeof out);
    for (size_t q = 0; q < n; q++) {
      double x = v[j + q], a = fabs(x);
      v[j + q] = a < GELU_FAST_MAX && a > GELU_FAST_MIN
                     ? out[q]
                     : 0.5 * x * erfc(-x * 0.70710678118654752440);
    }
  }
}

#endif /* WGC_CPU_GELU_H */
