/* e^u in float, VEXP_LANES lanes at a time (SIMD where the target has it,
 * the same float operations lane by lane where not, so every target gives
 * the same bits), for u in [-87.5, 0.5]: u = n ln2 + r, n = u/ln2 rounded
 * by the 1.5 * 2^23 shift, |r| <= ln2/2, e^r by its Taylor series to r^6
 * (remainder under 1.5e-7), 2^n in the exponent bits; within 3e-7
 * relative. libm's exp, one element at a time, cost wasm32 a third of the
 * CPU backend's attention (GELU in gelu.h uses it too). V8 builds a
 * constant vector anew at each use, with several instructions on x86-64,
 * so callers read the constants once (vexp_constants) and pass them. */
#ifndef WGC_CPU_VEXP_H
#define WGC_CPU_VEXP_H

#include "tile.h"

#include <stdint.h>
#include <string.h>

#ifdef TILE_VECTOR
typedef v4f vexp_f;
typedef uint32_t vexp_u __attribute__((vector_size(16)));
#define VEXP_LANES 4
#else
typedef float vexp_f;
typedef uint32_t vexp_u;
#define VEXP_LANES 1
#endif

/* e^r from r^6 down, then 1.5 * 2^23, 1/ln2 and ln2 in two parts */
enum { VEXP_K = 11 };
static const float vexp_table[VEXP_K] = {
    1.0f / 720, 1.0f / 120, 1.0f / 24,   1.0f / 6,     0.5f,           1.0f,
    1.0f,       0x1.8p23f,  1.44269504f, 0.693359375f, -2.12194440e-4f};

/* n constants of table into k, read through a volatile pointer: registers
 * then, not literals (vexp_constants: vexp's own). */
static inline void vexp_read(float *k, const float *table, int n) {
  const volatile float *src = table;
  for (int i = 0; i < n; i++)
    k[i] = src[i];
}
static inline void vexp_constants(float k[VEXP_K]) {
  vexp_read(k, vexp_table, VEXP_K);
}

static inline vexp_f vexp(vexp_f u, const float *k) {
  vexp_f nm = u * k[8] + k[7], n = nm - k[7];
  vexp_f r = (u - n * k[9]) - n * k[10];
  vexp_f e = r * k[0] + k[1];
  for (int i = 2; i < 7; i++)
    e = e * r + k[i];
  vexp_u two_n;
  memcpy(&two_n, &nm, sizeof two_n);
  two_n = (two_n << 23) + (127u << 23);
  vexp_f scale;
  memcpy(&scale, &two_n, sizeof scale);
  return e * scale;
}

#endif /* WGC_CPU_VEXP_H */
