/* GELU, 0.5 x erfc(-x/sqrt2), over a row of doubles for GEMM's epilogue
 * (gemm.c), in float SIMD: libm's erfc one element at a time was a third
 * of a BERT up-projection's time in wasm32 (20 ns an element in V8; this
 * takes 6). For 1e-30 < |x| < GELU_FAST_MAX: erfc(|z|), z = x/sqrt2, by
 * Numerical Recipes' Chebyshev fit t exp(-z^2 + P(t)), t = 1/(1 + |z|/2)
 * (fractional error under 1.2e-7), e^u as 2^n e^r (n = u/ln2 rounded, r's
 * Taylor series to r^6), then gelu(x) = x - h for x >= 0 and -h below,
 * h = 0.5 |x| erfc(|z|): within 1.9e-6 relative of the double formula
 * (a sweep of 4 million points; the header allows 1e-5), float rounding
 * of z^2 setting most of it. Beyond that range, for NaN, infinities and
 * zeros, libm in double. Every lane computes the same float operations
 * whether the target has SIMD or not, so every target, and every cut of C
 * into tiles, gives the same bits. */
#ifndef WGC_CPU_GELU_H
#define WGC_CPU_GELU_H

#include "tile.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GELU_FAST_MAX 4.0
#define GELU_FAST_MIN 1e-30
#define GELU_WAYS 2 /* vectors side by side: two chains of dependent steps */

#ifdef TILE_VECTOR
typedef v4f gelu_f;
typedef uint32_t gelu_u __attribute__((vector_size(16)));
#define GELU_LANES 4
#else
typedef float gelu_f;
typedef uint32_t gelu_u;
#define GELU_LANES 1
#endif

/* P(t) from t^9 down, e^r from r^6 down, then 1/sqrt2, 1.5 * 2^23 (the
 * shift that rounds to an integer), 1/ln2, ln2 in two parts and 0.5. V8
 * builds a constant vector anew at each use, with several instructions on
 * x86-64, so gelu_row reads these once through a volatile pointer and the
 * kernel splats them from registers. */
enum { GELU_P = 10, GELU_E = 7, GELU_K = GELU_P + GELU_E + 6 };
static const float gelu_constants[GELU_K] = {
    0.17087277f,  -0.82215223f,    1.48851587f, -1.13520398f,
    0.27886807f,  -0.18628806f,    0.09678418f, 0.37409196f,
    1.00002368f,  -1.26551223f,    1.0f / 720,  1.0f / 120,
    1.0f / 24,    1.0f / 6,        0.5f,        1.0f,
    1.0f,         0.70710678f,     0x1.8p23f,   1.44269504f,
    0.693359375f, -2.12194440e-4f, 0.5f};

/* x[w] := gelu(x[w]) for GELU_WAYS vectors, each step across all of them. */
static inline void gelu_lanes(gelu_f *x, const float *k) {
  const float *cp = k, *ce = k + GELU_P, *cm = k + GELU_P + GELU_E;
  gelu_f ax[GELU_WAYS], t[GELU_WAYS], z2[GELU_WAYS], p[GELU_WAYS];
  for (int w = 0; w < GELU_WAYS; w++) {
    gelu_u bits;
    memcpy(&bits, &x[w], sizeof bits);
    bits &= 0x7fffffffu;
    memcpy(&ax[w], &bits, sizeof ax[w]);
    gelu_f z = ax[w] * cm[0];
    t[w] = 1.0f / (1.0f + cm[5] * z);
    z2[w] = z * z;
    p[w] = cp[0] * t[w] + cp[1];
  }
  for (int i = 2; i < GELU_P; i++)
    for (int w = 0; w < GELU_WAYS; w++)
      p[w] = p[w] * t[w] + cp[i];
  /* e^u, u = P - z^2: n = u/ln2 rounded by the shift (its low bits are
   * n), r = u - n ln2 */
  gelu_f nm[GELU_WAYS], r[GELU_WAYS], e[GELU_WAYS];
  for (int w = 0; w < GELU_WAYS; w++) {
    gelu_f u = p[w] - z2[w];
    nm[w] = u * cm[2] + cm[1];
    gelu_f n = nm[w] - cm[1];
    r[w] = (u - n * cm[3]) - n * cm[4];
    e[w] = r[w] * ce[0] + ce[1];
  }
  for (int i = 2; i < GELU_E; i++)
    for (int w = 0; w < GELU_WAYS; w++)
      e[w] = e[w] * r[w] + ce[i];
  for (int w = 0; w < GELU_WAYS; w++) {
    gelu_u two_n, pos, neg, m;
    memcpy(&two_n, &nm[w], sizeof two_n);
    two_n = (two_n << 23) + (127u << 23);
    gelu_f scale, hp, hn;
    memcpy(&scale, &two_n, sizeof scale);
    gelu_f h = cm[5] * ax[w] * t[w] * (e[w] * scale);
    hp = x[w] - h;
    hn = -h;
    memcpy(&pos, &hp, sizeof pos);
    memcpy(&neg, &hn, sizeof neg);
#ifdef TILE_VECTOR
    m = (gelu_u)(x[w] >= 0.0f); /* -0 takes x - h: -0 - 0 is -0 */
#else
    m = x[w] >= 0.0f ? 0xffffffffu : 0u;
#endif
    pos = (pos & m) | (neg & ~m);
    memcpy(&x[w], &pos, sizeof pos);
  }
}

/* v[j] := gelu(v[j]) for j < cols, in groups of GELU_WAYS * GELU_LANES
 * (the last padded with zeros). */
static inline void gelu_row(double *v, size_t cols) {
  enum { GROUP = GELU_WAYS * GELU_LANES };
  float k[GELU_K];
  const volatile float *src = gelu_constants;
  for (int i = 0; i < GELU_K; i++)
    k[i] = src[i];
  for (size_t j = 0; j < cols; j += GROUP) {
    size_t n = cols - j < GROUP ? cols - j : GROUP;
    float in[GROUP] = {0};
    for (size_t q = 0; q < n; q++)
      in[q] = (float)v[j + q];
    gelu_f lanes[GELU_WAYS];
    memcpy(lanes, in, sizeof lanes);
    gelu_lanes(lanes, k);
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
