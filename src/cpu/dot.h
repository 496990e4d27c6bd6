/* Dot products of float rows for the CPU backend's inner loops: products
 * summed in float over blocks of DOT_BLOCK, in eight lanes (element x in
 * lane x % 8, then the lanes pairwise, then the tail), and the blocks in
 * double. The float blocks let the compiler use SIMD (wasm32 SIMD128, SSE)
 * where a double chain waits on every add; a block of 64 float products is
 * as many as GEMM's reference sums in float (gemm.c), so the result stays
 * far more accurate than the WebGPU kernels' whole-row float sums. The lane
 * order is fixed, so every target gives the same bits. */
#ifndef WGC_CPU_DOT_H
#define WGC_CPU_DOT_H

#include "tile.h"

#include <stddef.h>
#include <string.h>

#define DOT_BLOCK 64

/* sum over x < n of a[x] * b[x], n <= DOT_BLOCK, in float (lane order
 * above). */
static inline float dot_block(const float *a, const float *b, size_t n) {
  size_t n8 = n / 8 * 8, x = 0;
  float l[8];
#ifdef TILE_VECTOR
  v4f s0 = {0}, s1 = {0};
  for (; x < n8; x += 8) {
    s0 += load4(a + x) * load4(b + x);
    s1 += load4(a + x + 4) * load4(b + x + 4);
  }
  memcpy(l, &s0, sizeof s0);
  memcpy(l + 4, &s1, sizeof s1);
#else
  for (int q = 0; q < 8; q++)
    l[q] = 0.0f;
  for (; x < n8; x += 8)
    for (int q = 0; q < 8; q++)
      l[q] += a[x + q] * b[x + q];
#endif
  float s = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
  for (; x < n; x++)
    s += a[x] * b[x];
  return s;
}

/* sum over x < n of a[x] * b[x]: float blocks of DOT_BLOCK, in double. */
static inline double dot_rows(const float *a, const float *b, size_t n) {
  double s = 0.0;
  for (size_t x = 0; x < n; x += DOT_BLOCK)
    s += dot_block(a + x, b + x, n - x < DOT_BLOCK ? n - x : DOT_BLOCK);
  return s;
}

/* y[x] += a * b[x] for x < n, in float (element by element: the compiler
 * vectorises it without changing a bit). */
static inline void axpy(float *restrict y, float a, const float *restrict b,
                        size_t n) {
  for (size_t x = 0; x < n; x++)
    y[x] += a * b[x];
}

#endif /* WGC_CPU_DOT_H */
