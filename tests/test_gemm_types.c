/* GEMM with typed operands (wgc_gemm_epilogue's a_type, b_type, c_type,
 * bias_type) on both backends: every combination of A, B, C and bias
 * types against a float64 reference computed from the exactly converted
 * inputs (dtype_ref.c's independent decoders), within the f32 bound plus
 * half an ulp of C's type; 2-byte operands at odd element offsets, block
 * B at 2-byte offsets with batch strides in blocks, C's neighbouring
 * halves and bytes around it untouched; every WebGPU kernel variant; and
 * the rejected calls, which write nothing. */
#include "dtype_ref.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD_BYTE 0x5A

static const wgc_dtype AC_TYPES[] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                     WGC_DTYPE_BF16};
static const wgc_dtype B_TYPES[] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                    WGC_DTYPE_BF16, WGC_DTYPE_Q8_0,
                                    WGC_DTYPE_Q4_0};
static const wgc_dtype BIAS_TYPES[] = {WGC_DTYPE_F32, WGC_DTYPE_F16};

static bool is_block(wgc_dtype t) { return wgc_dtype_block_size(t) > 1; }

/* A typed host matrix in a buffer with room around it, and its device
 * copy: elements span `elems` from byte `off` of `bytes`. */
typedef struct buf {
  wgc_dtype t;
  size_t off, bytes, elems;
  uint8_t *host;
  wgc_ptr dev;
} buf;

/* Fills elems elements of type t at byte off with values in [-1, 1]
 * (blocks quantized from them), the rest of the buffer GUARD_BYTE. */
static buf make_buf(wgc_dtype t, size_t elems, size_t off, unsigned seed) {
  buf b = {.t = t, .off = off, .elems = elems};
  size_t data = dref_bytes(t, elems);
  b.bytes = (off + data + 8) & ~(size_t)3;
  b.host = xmalloc(b.bytes);
  memset(b.host, GUARD_BYTE, b.bytes);
  float *x = falloc(elems);
  fill_uniform(x, elems, -1.0f, 1.0f, seed);
  CHECK_STATUS(wgc_quantize(x, b.host + off, t, elems), WGC_OK);
  free(x);
  return b;
}

static bool upload_buf(wgc_context *ctx, buf *b) {
  b->dev = dev_alloc(ctx, b->bytes);
  return b->dev && dev_write(ctx, b->dev, (const float *)b->host, b->bytes / 4);
}

static double val(const buf *b, size_t i) {
  return dref_load(b->host + b->off, b->t, i).v;
}

/* Half an ulp of C's type at |w|, with the f32 result's own rounding. */
static double half_ulp(wgc_dtype t, double w) {
  w = fabs(w);
  if (t == WGC_DTYPE_F16)
    return (w < 6.103515625e-05 ? 6.103515625e-05 : w) * 0x1p-11;
  if (t == WGC_DTYPE_BF16)
    return w * 0x1p-8;
  return 0.0;
}

typedef struct gemm_shape {
  size_t m, n, k, batch;
} gemm_shape;

typedef struct types {
  wgc_dtype a, b, c, bias;
  bool has_bias;
} types;

/* Set by the matrix-vector tests: B's offset, ldb and stride_b at
 * multiples of 4 elements (and a block B's rows an even count of words),
 * the layout WebGPU's gemm_mv reads; otherwise 2-byte operands start at
 * odd elements. */
static bool b_aligned;
/* Set by the register-tile tests: A's rows contiguous runs of vec4s from a
 * 16-byte offset (an f32 A), which gemm_rv reads four k at a time. */
static bool a_aligned;

/* Row-major C := alpha*A*B^T + beta*C + bias (B stored [n, k], a linear
 * layer's weights, so that block types run along k), or A*B with B [k, n]
 * (b_nt) for the scalar types; C's rows padded by one element so that its
 * 2-byte neighbours in each word are guards. Returns the worst error over
 * the bound. */
static double run_case(wgc_context *ctx, gemm_shape s, types ty, bool b_nt,
                       unsigned seed) {
  size_t m = s.m, n = s.n, k = s.k, nb = s.batch;
  size_t lda = k + 1, ldb = b_nt ? n + 3 : (is_block(ty.b) ? k + 32 : k + 2),
         ldc = n + 1;
  if (b_aligned && !b_nt)
    ldb = is_block(ty.b) ? k + 64 : (k + 3) / 4 * 4 + 4;
  size_t sa = m * lda + 1, sb = (b_nt ? k * ldb : n * ldb) + 32,
         sc = m * ldc + 3;
  if (is_block(ty.b)) /* whole blocks */
    sb = (sb + 31) / 32 * 32;
  /* 2-byte operands at odd element offsets, blocks at 2 mod 4 bytes */
  size_t oa = ty.a == WGC_DTYPE_F32 ? 8 : 6, ob = ty.b == WGC_DTYPE_F32 ? 4 : 2,
         oc = ty.c == WGC_DTYPE_F32 ? 12 : 10;
  if (b_aligned) {
    sb = (sb + 63) / 64 * 64;
    ob = is_block(ty.b) ? 2 : 16; /* blocks: 2 mod 4 bytes still */
  }
  if (a_aligned) {
    lda = (k + 3) / 4 * 4 + 4;
    sa = m * lda + 4;
    oa = 16;
  }
  buf A = make_buf(ty.a, (nb - 1) * sa + m * lda, oa, seed);
  buf B = make_buf(ty.b, (nb - 1) * sb + (b_nt ? k : n) * ldb, ob, seed + 1);
  buf C = make_buf(ty.c, (nb - 1) * sc + m * ldc, oc, seed + 2);
  buf X = make_buf(ty.bias, n, 2 * (ty.bias != WGC_DTYPE_F32), seed + 3);
  float alpha = 0.75f, beta = -0.5f;
  double worst = 0.0;
  uint8_t *want = xmalloc(C.bytes), *got = xmalloc(C.bytes);
  memcpy(want, C.host, C.bytes);
  double *w = dalloc(nb * m * n), *bound = dalloc(nb * m * n);
  for (size_t t = 0; t < nb; t++)
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        double sum = 0, mag = 0;
        for (size_t p = 0; p < k; p++) {
          double av = val(&A, t * sa + i * lda + p);
          double bv = val(&B, t * sb + (b_nt ? p * ldb + j : j * ldb + p));
          sum += av * bv;
          mag += fabs(av * bv);
        }
        double c0 = val(&C, t * sc + i * ldc + j);
        double x = ty.has_bias ? val(&X, j) : 0.0;
        double r = alpha * sum + beta * c0 + x;
        w[(t * m + i) * n + j] = r;
        /* the header's f32 bound (max|a|, max|b| <= 1), plus C's rounding */
        bound[(t * m + i) * n + j] =
            1e-5 * (double)k * fabs(alpha) + 1e-6 * fabs(beta) +
            1e-6 * fabs(x) + 2e-7 * fabs(alpha) * mag + half_ulp(ty.c, r);
      }
  bool ok = upload_buf(ctx, &A) && upload_buf(ctx, &B) && upload_buf(ctx, &C);
  if (ok && ty.has_bias)
    ok = upload_buf(ctx, &X);
  if (ok) {
    wgc_gemm_epilogue ep = {.bias = ty.has_bias ? X.dev + X.off : 0,
                            .a_type = ty.a,
                            .b_type = ty.b,
                            .c_type = ty.c,
                            .bias_type = ty.bias};
    CHECK_OK(ctx, wgc_gemm_batched_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS,
                                      b_nt ? WGC_NO_TRANS : WGC_TRANS, m, n, k,
                                      alpha, A.dev + A.off, lda, sa,
                                      B.dev + B.off, ldb, sb, beta,
                                      C.dev + C.off, ldc, sc, nb, &ep));
    if (dev_read(ctx, (float *)got, C.dev, C.bytes / 4)) {
      size_t eb = dref_bytes(ty.c, 1);
      /* every byte outside the matrices' elements keeps its value */
      for (size_t t = 0; t < nb; t++)
        for (size_t i = 0; i < m; i++)
          for (size_t j = 0; j < n; j++)
            memcpy(want + C.off + (t * sc + i * ldc + j) * eb,
                   got + C.off + (t * sc + i * ldc + j) * eb, eb);
      for (size_t i = 0; i < C.bytes; i++)
        if (got[i] != want[i]) {
          CHECK(false, "byte %zu outside C changed: 0x%02x, want 0x%02x", i,
                got[i], want[i]);
          break;
        }
      for (size_t e = 0; e < nb * m * n; e++) {
        size_t t = e / (m * n), i = e / n % m, j = e % n;
        dref_val v = dref_load(got + C.off, ty.c, t * sc + i * ldc + j);
        double err = v.nan ? INFINITY : fabs(v.v - w[e]);
        double r = err / bound[e];
        if (!(r <= 1.0)) {
          CHECK(false,
                "C[%zu][%zu][%zu] = %.9g, want %.9g (error %.3g, bound %.3g)",
                t, i, j, v.v, w[e], err, bound[e]);
          break;
        }
        worst = r > worst ? r : worst;
      }
    }
  }
  buf *all[] = {&A, &B, &C, &X};
  for (int i = 0; i < 4; i++) {
    dev_free(ctx, all[i]->dev);
    free(all[i]->host);
  }
  free(want);
  free(got);
  free(w);
  free(bound);
  return worst;
}

static const gemm_shape SHAPES[] = {{5, 7, 64, 2}, {37, 45, 96, 1}};

TEST(gemm_types) {
  for (int bi = 0; bi < 2; bi++)
    for (size_t ia = 0; ia < 3; ia++)
      for (size_t ib = 0; ib < 5; ib++)
        for (size_t ic = 0; ic < 3; ic++) {
          types ty = {AC_TYPES[ia], B_TYPES[ib], AC_TYPES[ic],
                      BIAS_TYPES[(ia + ib + ic) % 2], (ia + ic) % 3 != 0};
          wgc_context *ctx;
          if (!backend_case(bi, &ctx, "gemm types a=%s b=%s c=%s bias=%s",
                            wgc_dtype_name(ty.a), wgc_dtype_name(ty.b),
                            wgc_dtype_name(ty.c),
                            ty.has_bias ? wgc_dtype_name(ty.bias) : "none"))
            continue;
          double worst = 0;
          for (size_t si = 0; si < 2; si++) {
            unsigned seed = (unsigned)(ia * 100 + ib * 10 + ic + si * 1000);
            double r = run_case(ctx, SHAPES[si], ty, false, seed);
            worst = r > worst ? r : worst;
            if (!is_block(ty.b)) { /* B [k, n] too */
              r = run_case(ctx, SHAPES[si], ty, true, seed + 7);
              worst = r > worst ? r : worst;
            }
          }
          case_note("worst %.3f of the bound", worst);
          case_end();
        }
}

/* Every WebGPU kernel form through the typed accessors. */
TEST(gemm_types_variants) {
  static const char *variants[] = {"small", "shared:64x64", "shared:16x64",
                                   "regs:4x8:8x4", "regs:16x8:4x1"};
  static const types tys[] = {
      {WGC_DTYPE_F16, WGC_DTYPE_Q4_0, WGC_DTYPE_F16, WGC_DTYPE_F16, true},
      {WGC_DTYPE_BF16, WGC_DTYPE_Q8_0, WGC_DTYPE_BF16, WGC_DTYPE_F32, true},
      {WGC_DTYPE_F32, WGC_DTYPE_F16, WGC_DTYPE_F16, WGC_DTYPE_F32, false}};
  for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
    wgc_context *ctx;
    int bi = test_backends[0] == WGC_BACKEND_WEBGPU ? 0 : 1;
    if (!backend_case(bi, &ctx, "gemm types variant %s", variants[v]))
      continue;
    setenv("WGC_GEMM_VARIANT", variants[v], 1);
    for (size_t i = 0; i < 3; i++) {
      run_case(ctx, (gemm_shape){19, 70, 128, 2}, tys[i], false,
               (unsigned)(v * 10 + i));
      run_case(ctx, (gemm_shape){3, 5, 32, 1}, tys[i], false,
               (unsigned)(v * 10 + i + 5));
    }
    unsetenv("WGC_GEMM_VARIANT");
    case_end();
  }
}

/* The register tile reading A four k at a time, with a typed B along k
 * read four k of a column at once (gemm_rv_bk), for every B type: blocks
 * starting in both halves of a word, 2-byte B at even and odd offsets
 * (the latter element by element), batches and (2-byte B) a tail of k
 * after the last four. */
TEST(gemm_types_rv_k4) {
  static const gemm_shape shapes[] = {{8, 37, 256, 2}, {5, 19, 166, 1}};
  wgc_context *ctx;
  int bi = test_backends[0] == WGC_BACKEND_WEBGPU ? 0 : 1;
  if (!backend_case(bi, &ctx, "gemm types register tile, four k at a time"))
    return;
  setenv("WGC_GEMM_VARIANT", "regs:4x8:4x2", 1);
  a_aligned = true;
  double worst = 0;
  for (size_t ib = 1; ib < 5; ib++)
    for (size_t si = 0; si < 2; si++)
      for (int al = 0; al < 2; al++) {
        types ty = {WGC_DTYPE_F32, B_TYPES[ib], AC_TYPES[(ib + si) % 3],
                    BIAS_TYPES[ib % 2], si == 0};
        gemm_shape sh = shapes[si];
        if (is_block(ty.b)) /* whole blocks: no tail of k */
          sh.k = sh.k / 32 * 32;
        b_aligned = al;
        double r = run_case(ctx, sh, ty, false,
                            (unsigned)(ib * 10 + si * 2 + (unsigned)al));
        worst = r > worst ? r : worst;
      }
  b_aligned = false;
  a_aligned = false;
  unsetenv("WGC_GEMM_VARIANT");
  case_note("worst %.3f of the bound", worst);
  case_end();
}

/* Matrix-vector products (m = 1, decoding: WebGPU's gemm_mv on CPU
 * adapters) for every B type, at k = 4096 and at awkward k and n (a
 * tail of k beyond whole words, odd block counts, so that blocks start
 * in both halves of a word), B where gemm_mv reads it and where it does
 * not; then gemm_mv forced for every m. */
TEST(gemm_types_mv) {
  static const gemm_shape shapes[] = {
      {1, 64, 4096, 1}, {1, 37, 4064, 2}, {1, 3, 96, 1}, {1, 130, 1000, 1}};
  for (int bi = 0; bi < 2; bi++)
    for (size_t ib = 0; ib < 5; ib++) {
      wgc_context *ctx;
      if (!backend_case(bi, &ctx, "gemm matrix-vector b=%s",
                        wgc_dtype_name(B_TYPES[ib])))
        continue;
      double worst = 0;
      for (size_t si = 0; si < 4; si++) {
        gemm_shape sh = shapes[si];
        if (is_block(B_TYPES[ib]) && sh.k % 32)
          sh.k = sh.k / 32 * 32;
        else if (!is_block(B_TYPES[ib]) && si == 1)
          sh.k = 4093; /* a tail of k after the last whole step */
        types ty = {AC_TYPES[si % 3], B_TYPES[ib], AC_TYPES[(si + 1) % 3],
                    BIAS_TYPES[si % 2], si % 2 == 0};
        for (int al = 0; al < 2; al++) {
          b_aligned = al;
          double r = run_case(ctx, sh, ty, false, (unsigned)(ib * 10 + si));
          worst = r > worst ? r : worst;
        }
        b_aligned = false;
      }
      case_note("worst %.3f of the bound", worst);
      case_end();
    }
  wgc_context *ctx;
  int bi = test_backends[0] == WGC_BACKEND_WEBGPU ? 0 : 1;
  if (backend_case(bi, &ctx, "gemm matrix-vector forced for m > 1")) {
    setenv("WGC_GEMM_VARIANT", "mv", 1);
    b_aligned = true;
    for (size_t ib = 0; ib < 5; ib++) {
      types ty = {WGC_DTYPE_F32, B_TYPES[ib], AC_TYPES[ib % 3], WGC_DTYPE_F16,
                  ib % 2 == 0};
      run_case(ctx, (gemm_shape){5, 19, 320, 2}, ty, false, (unsigned)ib);
    }
    b_aligned = false;
    unsetenv("WGC_GEMM_VARIANT");
    case_end();
  }
}

/* Special values in B, C = A*B^T in f32 with B [n, k] typed: f16 and bf16
 * infinities, NaNs (payloads, both signs), -0, the largest finite values
 * and subnormals; Q8_0 and Q4_0 blocks whose scale is inf, -inf, NaN,
 * subnormal or 65504, with quants all nonzero, some zero and of both
 * signs, so that the elements' own products (d*q, then times A) give inf,
 * NaN (0*inf, inf-inf) or exact values. Each row of B holds one block or
 * one special element (with a 1.0 beside the non-finite ones); A's
 * elements are small integers, zero in places, or those times 2^102.
 * The float64 sum of the exactly decoded products is the exact f32
 * answer; a subnormal 2-byte element may count as a zero of its sign
 * (SPECIAL VALUES). m = 1 is WebGPU's matrix-vector kernel on CPU
 * adapters, m = 3 the general ones (and the register tile reading B four
 * k at a time); rows 16 bytes apart and not. */
enum { SP_K = 64, SP_COLS = 14 };

static const uint16_t SP_F16[SP_COLS] = {0x0001, 0x03ff, 0x8200, 0x0400, 0x7bff,
                                         0xfbff, 0x7c00, 0xfc00, 0x7c00, 0x7e00,
                                         0xfe01, 0x8000, 0x3c00, 0x7d55};
static const uint16_t SP_BF16[SP_COLS] = {
    0x0001, 0x807f, 0x0080, 0x7f7f, 0xff7f, 0x7f80, 0xff80,
    0x7f80, 0x7fc1, 0xffa0, 0x8000, 0x3f80, 0xc2f7, 0x7f81};
/* Q blocks: scale bits and quant pattern (0: all +1, 1: some zero, 2: both
 * signs, 3: all -1) */
static const uint16_t SP_QD[SP_COLS] = {0x7c00, 0x7c00, 0x7c00, 0xfc00, 0xfc00,
                                        0x7e00, 0x0001, 0x83ff, 0x7bff, 0xfbff,
                                        0x3c00, 0x7c00, 0x0000, 0x8000};
static const int SP_QPAT[SP_COLS] = {0, 1, 2, 3, 1, 0, 2, 3, 2, 0, 1, 3, 0, 2};

static int sp_quant(int pat, size_t e) {
  switch (pat) {
  case 0:
    return 1;
  case 1:
    return e % 5 == 3 ? 0 : 2;
  case 2:
    return e % 2 ? -3 : 4;
  default:
    return -1;
  }
}

/* Row j of B (ldb elements, or ldb/32 blocks) written at p. */
static void sp_row(wgc_dtype t, size_t j, size_t ldb, uint8_t *p) {
  if (t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16) {
    uint16_t *h = (uint16_t *)p, s = (t == WGC_DTYPE_F16 ? SP_F16 : SP_BF16)[j];
    memset(h, 0, ldb * 2);
    size_t at = (7 * j + 3) % SP_K;
    if (j == 8) /* where row 0 of A is 0: 0 * inf */
      at = 1;
    h[at] = s;
    bool finite =
        t == WGC_DTYPE_F16 ? (s & 0x7c00) != 0x7c00 : (s & 0x7f80) != 0x7f80;
    if (!finite) /* a finite neighbour in the same word or vec4 */
      h[at ^ 1] = t == WGC_DTYPE_F16 ? 0x3c00 : 0x3f80;
    return;
  }
  bool q8 = t == WGC_DTYPE_Q8_0;
  size_t bb = q8 ? 34 : 18;
  memset(p, 0, ldb / 32 * bb);
  for (size_t blk = 0; blk < ldb / 32; blk++) {
    uint8_t *b = p + blk * bb;
    /* block 0 holds the case; the others d = 1, quants 0 (or the pad) */
    uint16_t d = blk == 0 ? SP_QD[j] : 0x3c00;
    b[0] = (uint8_t)(d & 0xff);
    b[1] = (uint8_t)(d >> 8);
    for (size_t e = 0; e < 32; e++) {
      int q = blk == 0 ? sp_quant(SP_QPAT[j], e) : 0;
      if (q8)
        b[2 + e] = (uint8_t)(int8_t)q;
      else if (e < 16)
        b[2 + e] = (uint8_t)((b[2 + e] & 0xf0) | (q + 8));
      else
        b[2 + e - 16] = (uint8_t)((b[2 + e - 16] & 0x0f) | (q + 8) << 4);
    }
  }
}

static void special_b(wgc_context *ctx, wgc_dtype t, size_t m, bool pad,
                      float ascale) {
  size_t n = SP_COLS, k = SP_K;
  bool block = is_block(t);
  size_t ldb = block ? (pad ? k + 32 : k) : (pad ? k + 2 : k);
  size_t row = dref_bytes(t, ldb), off = 16;
  size_t bytes = (off + n * row + 15) / 16 * 16;
  uint8_t *host = xmalloc(bytes);
  memset(host, 0, bytes);
  for (size_t j = 0; j < n; j++)
    sp_row(t, j, ldb, host + off + j * row);
  float *a = falloc(m * k), *got = falloc(m * n);
  for (size_t i = 0; i < m; i++)
    for (size_t p = 0; p < k; p++)
      a[i * k + p] = (float)((p + i) % 4 + 1) * (p % 9 == 4 ? -ascale : ascale);
  a[1] = 0.0f; /* row 0 */
  wgc_ptr B = dev_alloc(ctx, bytes), A = dev_alloc(ctx, 4 * m * k),
          C = dev_alloc(ctx, 4 * m * n);
  if (B && A && C && dev_write(ctx, B, (const float *)host, bytes / 4) &&
      dev_write(ctx, A, a, m * k)) {
    wgc_gemm_epilogue ep = {.b_type = t};
    CHECK_OK(ctx, wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, m, n,
                              k, 1.0f, A, k, B + off, ldb, 0.0f, C, n, &ep));
    if (dev_read(ctx, got, C, m * n))
      for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
          double sum = 0.0;
          bool sub = false;
          for (size_t p = 0; p < k; p++) {
            dref_val v = dref_load(host + off + j * row, t, p);
            double bv = v.nan ? NAN : v.v;
            sub = sub || (!block && bv != 0.0 && fabs(bv) < 0x1p-126) ||
                  (t == WGC_DTYPE_F16 && bv != 0.0 && fabs(bv) < 0x1p-14);
            sum += (double)a[i * k + p] * bv;
          }
          float want = (float)sum, g = got[i * n + j];
          bool ok = isnan(want) ? isnan(g) : g == want || (sub && g == 0.0f);
          if (!ok) {
            CHECK(false, "%s m=%zu%s A*%g: C[%zu][%zu] = %.9g, want %.9g",
                  wgc_dtype_name(t), m, pad ? " padded" : "", (double)ascale, i,
                  j, g, want);
            break;
          }
        }
  }
  wgc_free(ctx, A);
  wgc_free(ctx, B);
  wgc_free(ctx, C);
  free(host);
  free(a);
  free(got);
}

TEST(gemm_types_special_b) {
  static const wgc_dtype ts[] = {WGC_DTYPE_F16, WGC_DTYPE_BF16, WGC_DTYPE_Q8_0,
                                 WGC_DTYPE_Q4_0};
  for (int bi = 0; bi < 2; bi++)
    for (size_t ti = 0; ti < 4; ti++) {
      wgc_context *ctx;
      if (!backend_case(bi, &ctx, "gemm special values in b=%s",
                        wgc_dtype_name(ts[ti])))
        continue;
      for (size_t m = 1; m <= 3; m += 2)
        for (int pad = 0; pad < 2; pad++) {
          special_b(ctx, ts[ti], m, pad, 1.0f);
          /* products near f32's top (no sum overflows, but a kernel's
           * products scaled by 2^24 or 2^28 would) */
          special_b(ctx, ts[ti], m, pad, 0x1p102f);
        }
      /* the register tile, four k of B at a time */
      if (test_backends[bi] == WGC_BACKEND_WEBGPU) {
        setenv("WGC_GEMM_VARIANT", "regs:4x8:4x2", 1);
        for (int pad = 0; pad < 2; pad++)
          special_b(ctx, ts[ti], 3, pad, 1.0f);
        unsetenv("WGC_GEMM_VARIANT");
      }
      case_end();
    }
}

/* k == 0, alpha == 0: C := beta*C + bias in C's type; the split forms of
 * long k (several k slices into scratch) too. */
TEST(gemm_types_edges) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "gemm types k=0 and long k"))
      continue;
    types ty = {WGC_DTYPE_BF16, WGC_DTYPE_Q8_0, WGC_DTYPE_F16, WGC_DTYPE_F16,
                true};
    run_case(ctx, (gemm_shape){3, 9, 0, 2}, ty, false, 1);
    run_case(ctx, (gemm_shape){2, 3, 4096, 1}, ty, false, 2);
    ty.b = WGC_DTYPE_Q4_0;
    run_case(ctx, (gemm_shape){4, 33, 2048, 1}, ty, false, 3);
    /* matrix-vector, k longer than llvmpipe's loop budget allows one
     * launch (the column redone element by element counted in) */
    ty.b = WGC_DTYPE_F16;
    run_case(ctx, (gemm_shape){1, 7, 40000, 1}, ty, false, 4);
    case_end();
  }
}

/* A 2-byte C is rounded once also where WebGPU splits k across launches
 * (here small binding windows; a loop longer than a software adapter runs
 * takes the same path, src/webgpu/gemm.c):
 * the pieces' terms p1 = 1 + 2^-11 + 2^-13 and p2 = -2^-12 sum to
 * 1 + 3*2^-13, which f16 rounds to 1; rounding p1 first (to 1 + 2^-10)
 * and then the sum gives 1 + 2^-10. bf16 likewise, 3 bits higher. */
static void rounded_once(wgc_context *ctx, wgc_dtype ct, size_t k, size_t lda) {
  double u = ct == WGC_DTYPE_F16 ? 0x1p-11 : 0x1p-8; /* half an ulp at 1 */
  float p1 = (float)(1 + u + u / 4), p2 = (float)(-u / 2);
  /* A: 1 x k, column-major with lda (k far apart); B: k x 2 row-major,
   * column 1 holds the terms reversed */
  size_t na = (k - 1) * lda + 1;
  float *a = falloc(na), *b = falloc(2 * k);
  for (size_t i = 0; i < na; i++)
    a[i] = 0.0f;
  for (size_t p = 0; p < k; p++) {
    a[p * lda] = 1.0f;
    b[2 * p] = b[2 * p + 1] = 0.0f;
  }
  b[0] = p1, b[2 * (k - 1)] = p2;
  b[1] = p2, b[2 * (k - 1) + 1] = p1;
  wgc_ptr da = dev_from(ctx, a, na), db = dev_from(ctx, b, 2 * k),
          dc = dev_from(ctx, a, 2);
  wgc_gemm_epilogue ep = {.c_type = ct};
  CHECK_OK(ctx, wgc_gemm_ex(ctx, WGC_COL_MAJOR, WGC_NO_TRANS, WGC_TRANS, 1, 2,
                            k, 1.0f, da, lda, db, 2, 0.0f, dc, 1, &ep));
  uint16_t got[4];
  float words[2];
  dev_read(ctx, words, dc, 2);
  memcpy(got, words, sizeof words);
  /* the float64 sum, rounded once: 1 */
  for (int j = 0; j < 2; j++) {
    dref_val v = dref_dec16(got[j], ct == WGC_DTYPE_BF16);
    CHECK(v.v == 1.0, "C[0,%d] = %.9g (0x%04x), want 1 (rounded once)", j, v.v,
          got[j]);
  }
  dev_free(ctx, da);
  dev_free(ctx, db);
  dev_free(ctx, dc);
  free(a);
  free(b);
}

TEST(gemm_types_split_k_rounded_once) {
  for (int bi = 0; bi < 2; bi++)
    for (int ci = 0; ci < 2; ci++) {
      wgc_dtype ct = ci ? WGC_DTYPE_BF16 : WGC_DTYPE_F16;
      if (!case_begin("gemm types split k rounded once[%s] c=%s",
                      bi ? "cpu" : "webgpu", wgc_dtype_name(ct)))
        continue;
      wgc_backend be = bi ? WGC_BACKEND_CPU : WGC_BACKEND_WEBGPU;
      /* A's two k 4 KiB apart: windows of 4 KiB split k in two */
      wgc_context *ctx = new_ctx(be, 4096);
      if (ctx) {
        rounded_once(ctx, ct, 2, 1024);
        wgc_destroy(ctx);
      }
      case_end();
    }
}

TEST(gemm_types_rejected) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "gemm types rejected"))
      continue;
    float init[1024];
    for (int i = 0; i < 1024; i++)
      init[i] = sentinel();
    wgc_ptr a = dev_from(ctx, init, 1024), b = dev_from(ctx, init, 1024),
            c = dev_from(ctx, init, 1024), x = dev_from(ctx, init, 1024);
    const char *fn = "wgc_gemm_ex";
    wgc_gemm_epilogue ep = {.a_type = WGC_DTYPE_F16,
                            .b_type = WGC_DTYPE_Q8_0,
                            .c_type = WGC_DTYPE_F16};
#define GEMM_T(M, N, K, A, LDA, TB, B, LDB, C, LDC)                            \
  wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, TB, M, N, K, 1.0f, A, LDA, B,  \
              LDB, 0.5f, C, LDC, &ep)
    /* the well-formed call, then one fault at a time */
    CHECK_OK(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b, 64, c, 4));
    CHECK_OK(ctx, wgc_synchronize(ctx));
    dev_write(ctx, c, init, 1024);
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 48, a, 64, WGC_TRANS, b, 64, c, 4), fn,
                   "k");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b, 40, c, 4), fn,
                   "ldb");
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_NO_TRANS, b, 64, c, 4), fn,
                   "b");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_gemm_batched_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS,
                                       WGC_TRANS, 2, 2, 32, 1.0f, a, 32, 64, b,
                                       32, 40, 0.0f, c, 2, 4, 2, &ep),
                   "wgc_gemm_batched_ex", "stride_b");
    /* misaligned: f16 A and block B at odd bytes, f16 C likewise */
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a + 1, 64, WGC_TRANS, b, 64, c, 4), fn,
                   "a");
    CHECK(strstr(wgc_last_error(ctx), "f16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b + 3, 64, c, 4), fn,
                   "b");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b, 64, c + 1, 4), fn,
                   "c");
    /* the footprint counts blocks: 4 rows of 2 blocks (272 bytes) */
    CHECK_REJECTED(ctx,
                   GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b + 4096 - 270, 64, c, 4),
                   fn, "b");
    /* types the operands do not take */
    wgc_gemm_epilogue good = ep;
    ep.a_type = WGC_DTYPE_I32;
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b, 64, c, 4), fn,
                   "a_type");
    CHECK(strstr(wgc_last_error(ctx), "i32"), "names the type: %s",
          wgc_last_error(ctx));
    ep = good;
    ep.a_type = WGC_DTYPE_Q4_0;
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b, 64, c, 4), fn,
                   "a_type");
    ep = good;
    ep.c_type = WGC_DTYPE_Q8_0;
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b, 64, c, 4), fn,
                   "c_type");
    ep = good;
    ep.b_type = WGC_DTYPE_I32;
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b, 64, c, 4), fn,
                   "b_type");
    ep = good;
    ep.bias = x + 1;
    ep.bias_type = WGC_DTYPE_BF16;
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b, 64, c, 4), fn,
                   "bias_type");
    CHECK(strstr(wgc_last_error(ctx), "bf16"), "names the type: %s",
          wgc_last_error(ctx));
    ep.bias_type = (wgc_dtype)17;
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b, 64, c, 4), fn,
                   "bias_type");
    ep.bias_type = WGC_DTYPE_F16;
    CHECK_REJECTED(ctx, GEMM_T(4, 4, 64, a, 64, WGC_TRANS, b, 64, c, 4), fn,
                   "bias"); /* an f16 bias at an odd byte */
#undef GEMM_T
    CHECK_DEVICE_EQUALS(ctx, c, init, 1024, "c");
    CHECK_DEVICE_EQUALS(ctx, x, init, 1024, "bias");
    dev_free(ctx, a);
    dev_free(ctx, b);
    dev_free(ctx, c);
    dev_free(ctx, x);
    case_end();
  }
}
