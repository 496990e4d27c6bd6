/* The packed register-tile kernel of the CPU backend, shared by GEMM
 * (gemm.c) and attention (attention.c): operands packed into slivers of TILE_MR
 * rows of A and TILE_NR columns of B, and a kernel that sums at most TILE_KC
 * products per output in float and adds those depth blocks in double. */
#ifndef WGC_CPU_TILE_H
#define WGC_CPU_TILE_H

#include "dtype.h"

#include <stddef.h>
#include <string.h>

/* The register tile: 4 x 8 floats, 8 accumulators of 4 lanes, which beat
 * 6 x 8 both in wasm32 SIMD128 (1.6x at TILE_KC 64 in V8) and on x86-64
 * SSE2 (1.05x). A's lanes: see tile_kernel_add. */
#define TILE_MR 4
#define TILE_NR 8
#define TILE_KC 64 /* depth of one packed block, the terms summed in float */

#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define TILE_VECTOR 1
#endif
#endif

#ifdef TILE_VECTOR
typedef float v4f __attribute__((vector_size(16)));

static inline v4f load4(const float *p) {
  v4f v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void store4(float *p, v4f v) { memcpy(p, &v, sizeof v); }

/* c + a * b. In a module built with relaxed SIMD (web.mk) one relaxed_madd:
 * fused where the machine has FMA, each sum then rounded once instead of
 * twice, within GEMM's bound either way. */
static inline v4f madd4(v4f a, v4f b, v4f c) {
#ifdef __wasm_relaxed_simd__
  return __builtin_wasm_relaxed_madd_f32x4(a, b, c);
#else
  return c + a * b;
#endif
}

/* dst[q * ldd + r] = src[r * ld + q] for q < 4 and r < 4: a 4 x 4 block
 * turned with shuffles. */
static inline void transpose4(const float *src, size_t ld, float *dst,
                              size_t ldd) {
  v4f r0 = load4(src), r1 = load4(src + ld);
  v4f r2 = load4(src + 2 * ld), r3 = load4(src + 3 * ld);
  v4f t0 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5);
  v4f t1 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7);
  v4f t2 = __builtin_shufflevector(r2, r3, 0, 4, 1, 5);
  v4f t3 = __builtin_shufflevector(r2, r3, 2, 6, 3, 7);
  store4(dst, __builtin_shufflevector(t0, t2, 0, 1, 4, 5));
  store4(dst + ldd, __builtin_shufflevector(t0, t2, 2, 3, 6, 7));
  store4(dst + 2 * ldd, __builtin_shufflevector(t1, t3, 0, 1, 4, 5));
  store4(dst + 3 * ldd, __builtin_shufflevector(t1, t3, 2, 3, 6, 7));
}
#endif

/* Packs A[0 .. rows, 0 .. kc] (element (i, p) at a[i*rs_a + p*cs_a]) as
 * TILE_MR-row slivers, each stored column by column (TILE_MR consecutive floats
 * per p), zero-padding the last. Reads run along A's unit stride: rows of a
 * row-major A (the usual activations) are read whole, one after the other. */
static inline void tile_pack_a(const float *a, size_t rs_a, size_t cs_a,
                               size_t rows, size_t kc, float *dst) {
  for (size_t s = 0; s < rows; s += TILE_MR, dst += TILE_MR * kc) {
    size_t h = rows - s < TILE_MR ? rows - s : TILE_MR;
    const float *src = a + s * rs_a;
    if (cs_a == 1) {
      size_t p = 0;
#ifdef TILE_VECTOR
      if (h == TILE_MR) /* whole slivers: 4 x 4 blocks */
        for (; p + 4 <= kc; p += 4)
          transpose4(src + p, rs_a, dst + p * TILE_MR, TILE_MR);
#endif
      for (size_t ii = 0; ii < h; ii++)
        for (size_t q = p; q < kc; q++)
          dst[q * TILE_MR + ii] = src[ii * rs_a + q];
      for (size_t ii = h; ii < TILE_MR; ii++)
        for (size_t q = 0; q < kc; q++)
          dst[q * TILE_MR + ii] = 0.0f;
      continue;
    }
    for (size_t p = 0; p < kc; p++) {
      const float *col = src + p * cs_a;
      size_t ii = 0;
      for (; ii < h; ii++)
        dst[p * TILE_MR + ii] = col[ii * rs_a];
      for (; ii < TILE_MR; ii++)
        dst[p * TILE_MR + ii] = 0.0f;
    }
  }
}

/* Packs B[0 .. kc, 0 .. cols] (element (p, j) at b[p*rs_b + j*cs_b]) as
 * TILE_NR-column slivers, each stored row by row (TILE_NR consecutive floats
 * per p), zero-padding the last. Reads run along B's unit stride: a transposed
 * B (a linear layer's [out, in] weights) is read one weight row at a time. */
static inline void tile_pack_b(const float *b, size_t rs_b, size_t cs_b,
                               size_t kc, size_t cols, float *dst) {
  for (size_t s = 0; s < cols; s += TILE_NR, dst += TILE_NR * kc) {
    size_t w = cols - s < TILE_NR ? cols - s : TILE_NR;
    const float *src = b + s * cs_b;
    if (rs_b == 1 && cs_b != 1) {
      size_t p = 0;
#ifdef TILE_VECTOR
      if (w == TILE_NR) /* whole slivers: 4 x 4 blocks */
        for (; p + 4 <= kc; p += 4) {
          transpose4(src + p, cs_b, dst + p * TILE_NR, TILE_NR);
          transpose4(src + 4 * cs_b + p, cs_b, dst + p * TILE_NR + 4, TILE_NR);
        }
#endif
      for (size_t jj = 0; jj < w; jj++)
        for (size_t q = p; q < kc; q++)
          dst[q * TILE_NR + jj] = src[jj * cs_b + q];
      for (size_t jj = w; jj < TILE_NR; jj++)
        for (size_t q = 0; q < kc; q++)
          dst[q * TILE_NR + jj] = 0.0f;
      continue;
    }
    if (cs_b == 1 && w == TILE_NR) { /* rows of 8 contiguous floats */
      for (size_t p = 0; p < kc; p++)
        memcpy(dst + p * TILE_NR, src + p * rs_b, TILE_NR * sizeof(float));
      continue;
    }
    for (size_t p = 0; p < kc; p++) {
      const float *row = src + p * rs_b;
      size_t jj = 0;
      for (; jj < w; jj++)
        dst[p * TILE_NR + jj] = row[jj * cs_b];
      for (; jj < TILE_NR; jj++)
        dst[p * TILE_NR + jj] = 0.0f;
    }
  }
}

/* The packers above for a typed operand (GEMM's, attention's): element (x, p)
 * of a sliver (x a row of A or a column of B) is at base + x*xs + p*ps elements
 * of type t, read as runs along k where k is the unit stride (the only way a
 * block B is laid out) and one by one otherwise. mr is TILE_MR or TILE_NR:
 * slivers of mr lanes, p-major. A whole sliver's runs are converted
 * TILE_KC at a time and turned into place 4 x 4 at a time. */
static inline void tile_pack_typed(const void *src, wgc_dtype t, size_t base,
                                   size_t xs, size_t ps, size_t xn, size_t kc,
                                   size_t mr, float *dst) {
  float run[TILE_NR][TILE_KC];
  for (size_t s = 0; s < xn; s += mr, dst += mr * kc) {
    size_t h = xn - s < mr ? xn - s : mr;
#ifdef TILE_VECTOR
    if (ps == 1 && h == mr && mr % 4 == 0) {
      for (size_t p0 = 0; p0 < kc; p0 += TILE_KC) {
        size_t n = kc - p0 < TILE_KC ? kc - p0 : TILE_KC, p = 0;
        for (size_t x = 0; x < mr; x++)
          wgc_dtype_load_run(src, t, base + (s + x) * xs + p0, n, run[x]);
        for (; p + 4 <= n; p += 4)
          for (size_t x = 0; x < mr; x += 4)
            transpose4(&run[x][p], TILE_KC, dst + (p0 + p) * mr + x, mr);
        for (; p < n; p++)
          for (size_t x = 0; x < mr; x++)
            dst[(p0 + p) * mr + x] = run[x][p];
      }
      continue;
    }
#endif
    for (size_t x = 0; x < mr; x++) {
      size_t e = base + (s + x) * xs;
      if (x >= h)
        for (size_t p = 0; p < kc; p++)
          dst[p * mr + x] = 0.0f;
      else if (ps == 1)
        for (size_t p0 = 0; p0 < kc; p0 += TILE_KC) {
          size_t n = kc - p0 < TILE_KC ? kc - p0 : TILE_KC;
          wgc_dtype_load_run(src, t, e + p0, n, run[0]);
          for (size_t p = 0; p < n; p++)
            dst[(p0 + p) * mr + x] = run[0][p];
        }
      else
        for (size_t p = 0; p < kc; p++)
          dst[p * mr + x] = wgc_dtype_load(src, t, e + p * ps);
    }
  }
}

/* Adds the rows x cols corner of a kernel tile acc to sums at (i0, j0)
 * (row stride ld), or sets them (first: the first depth block). */
static inline void tile_add(double *sums, size_t ld, size_t i0, size_t j0,
                            size_t rows, size_t cols, const float *acc,
                            int first) {
  for (size_t i = 0; i < rows; i++) {
    double *si = sums + (i0 + i) * ld + j0;
    const float *ai = acc + i * TILE_NR;
    if (first)
      for (size_t j = 0; j < cols; j++)
        si[j] = ai[j];
    else
      for (size_t j = 0; j < cols; j++)
        si[j] += ai[j];
  }
}

#ifdef TILE_VECTOR
typedef double v2d __attribute__((vector_size(16)));

/* One row of a whole tile, two 4-float vectors, into 8 doubles at s. */
static inline void tile_add_row(double *s, v4f lo, v4f hi, int first) {
  v2d d[4] = {
      __builtin_convertvector(__builtin_shufflevector(lo, lo, 0, 1), v2d),
      __builtin_convertvector(__builtin_shufflevector(lo, lo, 2, 3), v2d),
      __builtin_convertvector(__builtin_shufflevector(hi, hi, 0, 1), v2d),
      __builtin_convertvector(__builtin_shufflevector(hi, hi, 2, 3), v2d)};
  if (!first) {
    v2d old[4];
    memcpy(old, s, sizeof old);
    for (int q = 0; q < 4; q++)
      d[q] += old[q];
  }
  memcpy(s, d, sizeof d);
}

/* One depth block of tile_kernel_add, n <= TILE_KC terms in float. GCC
 * keeps a plain float array in memory, so on GNU compilers the kernel
 * names its 8 accumulators as 4-float vectors (plain scalar code where the
 * target has no SIMD, e.g. wasm32 without simd128). wasm32 broadcasts A's
 * lanes from memory (load32_splat: 1.05x in V8); SSE2, with no broadcast
 * load, shuffles them out of one 4-float load (1.05x there). A whole tile
 * goes from the registers to the doubles. */
static inline __attribute__((always_inline)) void
tile_block_add(size_t n, const float *a, const float *b, double *sums,
               size_t ld, size_t i0, size_t j0, size_t rows, size_t cols,
               int first) {
  if (rows == 1) { /* a matrix-vector product: one row, the same sums */
    v4f c0 = {0}, c1 = {0};
    for (size_t p = 0; p < n; p++) {
      v4f a0 = {a[0], a[0], a[0], a[0]};
      c0 = madd4(a0, load4(b), c0);
      c1 = madd4(a0, load4(b + 4), c1);
      a += TILE_MR;
      b += TILE_NR;
    }
    if (cols == TILE_NR) {
      tile_add_row(sums + i0 * ld + j0, c0, c1, first);
      return;
    }
    v4f out[2] = {c0, c1};
    float acc[TILE_NR];
    memcpy(acc, out, sizeof out);
    tile_add(sums, ld, i0, j0, 1, cols, acc, first);
    return;
  }
  v4f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0};
  v4f c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
  for (size_t p = 0; p < n; p++) {
    v4f b0 = load4(b), b1 = load4(b + 4);
#ifdef __wasm_simd128__
    v4f a0 = {a[0], a[0], a[0], a[0]};
    v4f a1 = {a[1], a[1], a[1], a[1]};
    v4f a2 = {a[2], a[2], a[2], a[2]};
    v4f a3 = {a[3], a[3], a[3], a[3]};
#else
    v4f av = load4(a);
    v4f a0 = __builtin_shufflevector(av, av, 0, 0, 0, 0);
    v4f a1 = __builtin_shufflevector(av, av, 1, 1, 1, 1);
    v4f a2 = __builtin_shufflevector(av, av, 2, 2, 2, 2);
    v4f a3 = __builtin_shufflevector(av, av, 3, 3, 3, 3);
#endif
    c00 = madd4(a0, b0, c00);
    c01 = madd4(a0, b1, c01);
    c10 = madd4(a1, b0, c10);
    c11 = madd4(a1, b1, c11);
    c20 = madd4(a2, b0, c20);
    c21 = madd4(a2, b1, c21);
    c30 = madd4(a3, b0, c30);
    c31 = madd4(a3, b1, c31);
    a += TILE_MR;
    b += TILE_NR;
  }
  if (rows == TILE_MR && cols == TILE_NR) {
    double *s = sums + i0 * ld + j0;
    tile_add_row(s, c00, c01, first);
    tile_add_row(s + ld, c10, c11, first);
    tile_add_row(s + 2 * ld, c20, c21, first);
    tile_add_row(s + 3 * ld, c30, c31, first);
    return;
  }
  v4f out[2 * TILE_MR] = {c00, c01, c10, c11, c20, c21, c30, c31};
  float acc[TILE_MR * TILE_NR];
  memcpy(acc, out, sizeof out);
  tile_add(sums, ld, i0, j0, rows, cols, acc, first);
}

/* sum of a[p] * b[p] over p < n (at most TILE_KC terms), in float: 8
 * lanes of partial sums, then the tail. */
static inline float tile_dot(const float *a, const float *b, size_t n) {
  v4f s0 = {0}, s1 = {0};
  size_t p = 0;
  for (; p + 8 <= n; p += 8) {
    s0 = madd4(load4(a + p), load4(b + p), s0);
    s1 = madd4(load4(a + p + 4), load4(b + p + 4), s1);
  }
  v4f s = s0 + s1;
  float r = (s[0] + s[1]) + (s[2] + s[3]);
  for (; p < n; p++)
    r += a[p] * b[p];
  return r;
}
#else
/* sum of a[p] * b[p] over p < n, in float. */
static inline float tile_dot(const float *a, const float *b, size_t n) {
  float r = 0.0f;
  for (size_t p = 0; p < n; p++)
    r += a[p] * b[p];
  return r;
}

/* One depth block of tile_kernel_add, n <= TILE_KC terms in float. */
static inline __attribute__((always_inline)) void
tile_block_add(size_t n, const float *a, const float *b, double *sums,
               size_t ld, size_t i0, size_t j0, size_t rows, size_t cols,
               int first) {
  float t[TILE_MR * TILE_NR] = {0};
  for (size_t p = 0; p < n; p++) {
    for (size_t i = 0; i < TILE_MR; i++)
      for (size_t j = 0; j < TILE_NR; j++)
        t[i * TILE_NR + j] += a[i] * b[j];
    a += TILE_MR;
    b += TILE_NR;
  }
  tile_add(sums, ld, i0, j0, rows, cols, t, first);
}
#endif

/* The TILE_MR x TILE_NR tile of sums over p < kc of a[p*TILE_MR + i] *
 * b[p*TILE_NR + j] (slivers packed kc deep), each block of TILE_KC terms
 * in float, added to the rows x cols of sums at (i0, j0), row stride ld
 * (first: the first block sets them). One call walks the whole packed
 * depth: a call and the tile through memory per block of TILE_KC cost
 * wasm32 a tenth of a linear layer's time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    defined(__linux__) && !defined(__SANITIZE_THREAD__)
/* Natively on x86-64 (GCC, glibc's ifunc), also in an FMA form that the
 * loader picks where the CPU has it: the Makefile builds the files that
 * use the tile with -ffp-contract=fast, so there each multiply-add is one
 * instruction, rounded once, within GEMM's bound either way (the default
 * form has no FMA to contract into). Not under ThreadSanitizer, whose
 * runtime is not up yet when the loader runs an ifunc's resolver. */
#define TILE_CLONES __attribute__((target_clones("fma", "default")))
#else
#define TILE_CLONES
#endif
static TILE_CLONES void tile_kernel_add(size_t kc, const float *a,
                                        const float *b, double *sums, size_t ld,
                                        size_t i0, size_t j0, size_t rows,
                                        size_t cols, int first) {
  for (size_t p0 = 0; p0 < kc; p0 += TILE_KC, first = 0)
    tile_block_add(kc - p0 < TILE_KC ? kc - p0 : TILE_KC, a + p0 * TILE_MR,
                   b + p0 * TILE_NR, sums, ld, i0, j0, rows, cols, first);
}

#endif /* WGC_CPU_TILE_H */
