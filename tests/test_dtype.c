/* Element types: the host helpers against an independent bit-level model
 * (f16 and bf16 decoded with ldexp and rounded by searching their ordered
 * patterns; Q8_0 and Q4_0 with ggml's reference formulas), and wgc_cast
 * between every pair of types on both backends, at 2-byte offsets and
 * awkward counts, through 4 KiB binding windows, with the bytes around
 * the destination checked untouched, and rejected calls. */
#include "dtype.h"
#include "dtype_ref.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT WGC_DTYPE_COUNT
#define GUARD_BYTE 0xA5

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

/* ---- host helpers --------------------------------------------------------
 */

TEST(dtype_sizes) {
  if (!case_begin("dtype: names, blocks, bytes, errors"))
    return;
  static const char *names[] = {"f32", "f16", "bf16", "i32", "q8_0", "q4_0"};
  static const size_t block[] = {1, 1, 1, 1, 32, 32},
                      bytes[] = {4, 2, 2, 4, 34, 18};
  for (int t = 0; t < NT; t++) {
    size_t b = 0;
    CHECK(strcmp(wgc_dtype_name((wgc_dtype)t), names[t]) == 0, "name %d", t);
    CHECK(wgc_dtype_block_size((wgc_dtype)t) == block[t], "block %d", t);
    CHECK_STATUS(wgc_dtype_bytes((wgc_dtype)t, 64, &b), WGC_OK);
    CHECK(b == 64 / block[t] * bytes[t], "bytes of 64 %s: %zu", names[t], b);
  }
  size_t b = 7;
  CHECK_REJECTED(NULL, wgc_dtype_bytes(WGC_DTYPE_Q4_0, 33, &b),
                 "wgc_dtype_bytes", "n");
  CHECK_REJECTED(NULL, wgc_dtype_bytes((wgc_dtype)6, 1, &b), "wgc_dtype_bytes",
                 "t");
  CHECK_REJECTED(NULL, wgc_dtype_bytes(WGC_DTYPE_F32, SIZE_MAX / 2, &b),
                 "wgc_dtype_bytes", "n");
  CHECK_REJECTED(NULL, wgc_dtype_bytes(WGC_DTYPE_F32, 1, NULL),
                 "wgc_dtype_bytes", "bytes");
  CHECK(b == 7, "a failed call wrote bytes");
  CHECK(strcmp(wgc_dtype_name((wgc_dtype)-1), "unknown dtype") == 0, "name");
  float f[32] = {0};
  uint8_t q[34];
  CHECK_REJECTED(NULL, wgc_quantize(f, q, WGC_DTYPE_Q8_0, 31), "wgc_quantize",
                 "n");
  CHECK_REJECTED(NULL, wgc_quantize(f, NULL, WGC_DTYPE_F16, 2), "wgc_quantize",
                 "dst");
  CHECK_REJECTED(NULL, wgc_dequantize(q, (wgc_dtype)9, f, 2), "wgc_dequantize",
                 "src_type");
  case_end();
}

TEST(dtype_f16_all_patterns) {
  if (!case_begin("dtype: every f16 and bf16 pattern to f32 and back"))
    return;
  for (int bf = 0; bf < 2; bf++) {
    wgc_dtype t = bf ? WGC_DTYPE_BF16 : WGC_DTYPE_F16;
    uint16_t *h = xmalloc(65536 * 2), *back = xmalloc(65536 * 2);
    float *f = falloc(65536);
    for (unsigned i = 0; i < 65536; i++)
      h[i] = (uint16_t)i;
    CHECK_STATUS(wgc_dequantize(h, t, f, 65536), WGC_OK);
    CHECK_STATUS(wgc_quantize(f, back, t, 65536), WGC_OK);
    for (unsigned i = 0; i < 65536; i++) {
      dref_val want = dref_dec16((uint16_t)i, bf);
      uint32_t wb = dref_enc_f32(want);
      CHECK(fbits(f[i]) == wb, "%s 0x%04x -> f32 0x%08x, want 0x%08x",
            wgc_dtype_name(t), i, fbits(f[i]), wb);
      CHECK(back[i] == i, "%s 0x%04x round-trips to 0x%04x", wgc_dtype_name(t),
            i, back[i]);
    }
    free(h);
    free(back);
    free(f);
  }
  case_end();
}

/* The CPU backend's run loader (its packers' conversion, without
 * branches) against the one-element loader, bit for bit: every f16 and
 * bf16 pattern, and Q8_0/Q4_0 blocks with every kind of scale (NaN with
 * payloads, +-inf with zero and non-zero quants, subnormal, zero) read
 * from every offset within a block. */
TEST(dtype_load_run_matches) {
  if (!case_begin("dtype: wgc_dtype_load_run matches wgc_dtype_load"))
    return;
  uint16_t *h = xmalloc(65536 * 2);
  float *f = falloc(65536);
  for (unsigned i = 0; i < 65536; i++)
    h[i] = (uint16_t)i;
  for (int bf = 0; bf < 2; bf++) {
    wgc_dtype t = bf ? WGC_DTYPE_BF16 : WGC_DTYPE_F16;
    wgc_dtype_load_run(h, t, 0, 65536, f);
    for (unsigned i = 0; i < 65536; i++)
      CHECK(fbits(f[i]) == fbits(wgc_dtype_load(h, t, i)),
            "%s 0x%04x: run 0x%08x, one 0x%08x", wgc_dtype_name(t), i,
            fbits(f[i]), fbits(wgc_dtype_load(h, t, i)));
  }
  const uint16_t scales[] = {0x3c00, 0x0001, 0x03ff, 0x0000, 0x8000, 0x7c00,
                             0xfc00, 0x7e00, 0x7d01, 0xfe3f, 0x4b12, 0x9234};
  enum { NB = sizeof scales / sizeof *scales };
  for (int q4 = 0; q4 < 2; q4++) {
    wgc_dtype t = q4 ? WGC_DTYPE_Q4_0 : WGC_DTYPE_Q8_0;
    size_t bb = q4 ? 18 : 34;
    uint8_t *blk = xmalloc(NB * bb);
    for (size_t b = 0; b < NB; b++) {
      memcpy(blk + b * bb, &scales[b], 2);
      for (size_t j = 2; j < bb; j++) /* every quant, zeros included */
        blk[b * bb + j] = (uint8_t)(j * 37 + b * 11 + (j % 5 == 0 ? 128 : 0));
    }
    for (size_t at = 0; at < 32; at++) {
      size_t n = NB * 32 - at;
      wgc_dtype_load_run(blk, t, at, n, f);
      for (size_t i = 0; i < n; i++)
        CHECK(fbits(f[i]) == fbits(wgc_dtype_load(blk, t, at + i)),
              "%s element %zu: run 0x%08x, one 0x%08x", wgc_dtype_name(t),
              at + i, fbits(f[i]), fbits(wgc_dtype_load(blk, t, at + i)));
    }
    free(blk);
  }
  free(h);
  free(f);
  case_end();
}

/* f32 values near f16/bf16 rounding points into x (room for ROUNDING_MAX):
 * midpoints (ties), one f32 ulp either side, the overflow threshold,
 * subnormals, NaN payloads; their count. */
enum { ROUNDING_MAX = 8 * 4096 };
static size_t specials(float *x) {
  static const float special[] = {
      65504,        65519.99f, 65520,     -65520,        1e10f,       INFINITY,
      -INFINITY,    0x1p-24f,  0x1p-25f,  0x1.0001p-25f, 0x1.8p-24f,  0x1p-14f,
      0x1.ff8p-15f, -0.0f,     0x1p-149f, 3.4028235e38f, 0x1.fffp127f};
  static const uint32_t nans[] = {0x7f800001u, 0xff800001u, 0x7fa00000u,
                                  0x7fc00000u, 0xffffffffu, 0x7f802000u,
                                  0x7f810000u};
  size_t n = 0;
  for (size_t i = 0; i < sizeof special / sizeof *special; i++)
    x[n++] = special[i];
  for (size_t i = 0; i < sizeof nans / sizeof *nans; i++)
    x[n++] = bitsf(nans[i]);
  return n;
}

/* The specials first and last (the conversions take runs of 8 and a
 * scalar tail), between them midpoints below even and odd neighbours. */
static size_t rounding_values(float *x) {
  enum { N = 4096 };
  size_t n = specials(x);
  for (int bf = 0; bf < 2; bf++)
    for (unsigned i = 0; i < N / 4; i++) {
      uint16_t h = (uint16_t)((i * 2654435761u) >> 16) & 0x7fff;
      dref_val a = dref_dec16(h, bf), b = dref_dec16(h + 1, bf);
      if (a.nan || b.nan || isinf(b.v))
        continue;
      float mid = (float)((a.v + b.v) / 2);
      x[n++] = mid;
      x[n++] = -nextafterf(mid, INFINITY);
      x[n++] = nextafterf(mid, 0);
    }
  return n + specials(x + n);
}

/* The f16 or bf16 bits of x[i] as the independent model rounds them. */
static uint16_t rounded16(const float *x, size_t i, int bf) {
  uint32_t b = fbits(x[i]);
  dref_val v =
      (b & 0x7fffffffu) > 0x7f800000u ? (dref_val){0, b} : (dref_val){x[i], 0};
  return dref_enc16(v, bf);
}

TEST(dtype_f32_rounding) {
  if (!case_begin("dtype: f32 to f16 and bf16, ties, overflow, subnormals"))
    return;
  float *x = falloc(ROUNDING_MAX);
  size_t n = rounding_values(x);
  for (int bf = 0; bf < 2; bf++) {
    uint16_t *h = xmalloc(2 * n);
    CHECK_STATUS(wgc_quantize(x, h, bf ? WGC_DTYPE_BF16 : WGC_DTYPE_F16, n),
                 WGC_OK);
    for (size_t i = 0; i < n; i++) {
      uint16_t want = rounded16(x, i, bf);
      CHECK(h[i] == want, "%s(0x%08x) = 0x%04x, want 0x%04x",
            bf ? "bf16" : "f16", fbits(x[i]), h[i], want);
      /* the integer form the CPU backend's float runs take */
      uint16_t g =
          bf ? wgc_f32_to_bf16(fbits(x[i])) : wgc_f32_to_f16(fbits(x[i]));
      CHECK(g == want, "wgc_f32_to_%s(0x%08x) = 0x%04x, want 0x%04x",
            bf ? "bf16" : "f16", fbits(x[i]), g, want);
    }
    free(h);
  }
  /* spot values stated in wgc.h */
  uint16_t h[4];
  float y[4] = {65520, 65519.99f, bitsf(0x7f800001u), bitsf(0xffa00000u)};
  wgc_quantize(y, h, WGC_DTYPE_F16, 4);
  CHECK(h[0] == 0x7c00 && h[1] == 0x7bff && h[2] == 0x7e00 && h[3] == 0xfd00,
        "f16 of 65520, 65519.99, NaN 1, -NaN 0x200000: %04x %04x %04x %04x",
        h[0], h[1], h[2], h[3]);
  free(x);
  case_end();
}

/* Doubles (the CPU backend's norms and reductions store them) rounded
 * once into f16 and bf16: the midpoints between neighbouring values, one
 * double ulp either side, and values spread over each format's range. */
TEST(dtype_store_double) {
  if (!case_begin("dtype: doubles to f16 and bf16, ties, one rounding"))
    return;
  uint64_t r = 0x2545F4914F6CDD1Dull;
  /* the values also go through wgc_dtype_store_doubles as one run, with
   * the specials after them */
  enum { N = 60000, SPECIALS = 8 };
  double *vs = xmalloc((N + SPECIALS + 1) * sizeof *vs);
  uint16_t *wants = xmalloc((N + SPECIALS) * sizeof *wants),
           *run = xmalloc((N + SPECIALS + 2) * sizeof *run);
  size_t filled = 0; /* values in vs, the last of them the NaN */
  for (int bf = 0; bf < 2; bf++) {
    wgc_dtype t = bf ? WGC_DTYPE_BF16 : WGC_DTYPE_F16;
    int bad = 0;
    size_t nv = 0;
    for (unsigned i = 0; i < N && bad < 3; i++) {
      r ^= r << 13, r ^= r >> 7, r ^= r << 17;
      uint16_t h = (uint16_t)(r >> 20) & 0x7ffe;
      dref_val a = dref_dec16(h, bf), b = dref_dec16(h + 1, bf);
      if (a.nan || b.nan || isinf(b.v))
        continue;
      double mid = (a.v + b.v) / 2, v;
      switch (i % 4) {
      case 0:
        v = mid;
        break;
      case 1:
        v = nextafter(mid, INFINITY);
        break;
      case 2:
        v = -nextafter(mid, 0);
        break;
      default:
        v = ldexp((double)(r >> 11) * 0x1p-53, (int)(r % 60) - 30);
      }
      uint16_t got;
      wgc_dtype_store(&got, t, 0, v);
      uint16_t want = dref_enc16((dref_val){v, 0}, bf);
      if (got != want) {
        bad++;
        CHECK(false, "%s(%a) = 0x%04x, want 0x%04x", wgc_dtype_name(t), v, got,
              want);
      }
      vs[nv] = v;
      wants[nv++] = want;
    }
    const double specials[SPECIALS] = {0.0,   -0.0,    INFINITY, -INFINITY,
                                       1e300, -1e-300, 0x1p-25,  -0x1.8p-25};
    for (int k = 0; k < SPECIALS; k++) {
      vs[nv] = specials[k];
      wants[nv++] = dref_enc16((dref_val){specials[k], 0}, bf);
    }
    vs[nv] = NAN; /* any NaN of the type */
    filled = nv + 1;
    wgc_dtype_store_doubles(run, t, 1, vs, nv + 1);
    for (size_t i = 0; i < nv && bad < 3; i++)
      if (run[i + 1] != wants[i]) {
        bad++;
        CHECK(false, "run of %s: element %zu (%a) = 0x%04x, want 0x%04x",
              wgc_dtype_name(t), i, vs[i], run[i + 1], wants[i]);
      }
    uint16_t nan_bits = run[nv + 1], exp_mask = bf ? 0x7f80 : 0x7c00;
    CHECK((nan_bits & exp_mask) == exp_mask &&
              (nan_bits & ~(exp_mask | 0x8000)),
          "run of %s: NaN stored as 0x%04x", wgc_dtype_name(t), nan_bits);
  }
  /* f32: as wgc_dtype_store, bit for bit (the last run's last values,
   * the specials and the NaN among them) */
  float *f = xmalloc(64 * sizeof *f);
  const double *last = vs + filled - 64;
  wgc_dtype_store_doubles(f, WGC_DTYPE_F32, 0, last, 64);
  for (int i = 0; i < 64; i++) {
    float one;
    wgc_dtype_store(&one, WGC_DTYPE_F32, 0, last[i]);
    CHECK(!memcmp(&one, &f[i], 4), "run of f32: %a stored as %a, alone %a",
          last[i], (double)f[i], (double)one);
  }
  free(f), free(vs), free(wants), free(run);
  case_end();
}

TEST(dtype_i32_host) {
  if (!case_begin("dtype: f32 to i32 truncates and saturates, NaN 0"))
    return;
  float x[] = {1.9f,           -1.9f, -0.5f,    2147483520.0f, 2147483648.0f,
               -2147483648.0f, -3e9f, INFINITY, -INFINITY,     NAN,
               16777217.0f};
  int32_t want[] = {1,         -1,        0,         2147483520,
                    INT32_MAX, INT32_MIN, INT32_MIN, INT32_MAX,
                    INT32_MIN, 0,         16777216};
  int32_t got[11];
  CHECK_STATUS(wgc_quantize(x, got, WGC_DTYPE_I32, 11), WGC_OK);
  for (int i = 0; i < 11; i++)
    CHECK(got[i] == want[i], "i32(%g) = %d, want %d", x[i], got[i], want[i]);
  int32_t in[] = {16777217, 16777219, -2147483647 - 1, 2147483647};
  float f[4];
  CHECK_STATUS(wgc_dequantize(in, WGC_DTYPE_I32, f, 4), WGC_OK);
  CHECK(f[0] == 16777216.0f && f[1] == 16777220.0f && f[2] == -2147483648.0f &&
            f[3] == 2147483648.0f,
        "i32 to f32 rounds to nearest even: %.1f %.1f %.1f %.1f", f[0], f[1],
        f[2], f[3]);
  case_end();
}

static void quant_blocks(wgc_dtype t, const float *x, size_t blocks,
                         const char *what) {
  size_t bb = t == WGC_DTYPE_Q8_0 ? 34 : 18;
  uint8_t *got = xmalloc(blocks * bb), *want = xmalloc(blocks * bb);
  CHECK_STATUS(wgc_quantize(x, got, t, 32 * blocks), WGC_OK);
  for (size_t b = 0; b < blocks; b++) {
    dref_quant(x + 32 * b, t, want + b * bb);
    CHECK(memcmp(got + b * bb, want + b * bb, bb) == 0,
          "%s %s block %zu differs from ggml's formulas", wgc_dtype_name(t),
          what, b);
  }
  float *back = falloc(32 * blocks);
  CHECK_STATUS(wgc_dequantize(got, t, back, 32 * blocks), WGC_OK);
  for (size_t i = 0; i < 32 * blocks; i++) {
    uint32_t w = dref_enc_f32(dref_load(got, t, i));
    CHECK(fbits(back[i]) == w, "%s %s dequantized %zu: 0x%08x, want 0x%08x",
          wgc_dtype_name(t), what, i, fbits(back[i]), w);
  }
  free(got);
  free(want);
  free(back);
}

TEST(dtype_quantize_host) {
  if (!case_begin("dtype: Q8_0 and Q4_0 as ggml's reference"))
    return;
  enum { B = 64 };
  float *x = falloc(32 * B);
  fill_uniform(x, 32 * B, -3, 3, 7);
  /* an all-zero block, one with a single large element (either sign),
   * ties in magnitude of both signs, a huge block (f16 d overflows) */
  memset(x, 0, 32 * sizeof *x);
  x[32 + 5] = 1000;
  x[64 + 31] = -1000;
  x[96 + 3] = -2;
  x[96 + 9] = 2;
  for (int j = 0; j < 32; j++)
    x[128 + j] = 1e9f * (j % 3 - 1);
  for (int t = WGC_DTYPE_Q8_0; t <= WGC_DTYPE_Q4_0; t++)
    quant_blocks((wgc_dtype)t, x, B, "random");
  for (size_t i = 0; i < 32 * B; i++) /* values on quant boundaries */
    x[i] = (float)((int)(x[i] * 8)) / 8 + 1.0f / 16;
  for (int t = WGC_DTYPE_Q8_0; t <= WGC_DTYPE_Q4_0; t++)
    quant_blocks((wgc_dtype)t, x, B, "ties");
  uint8_t q[34];
  uint16_t d;
  memset(x, 0, 32 * sizeof *x);
  wgc_quantize(x, q, WGC_DTYPE_Q4_0, 32);
  memcpy(&d, q, 2);
  CHECK(d == 0x8000 && q[2] == 0x88, "Q4_0 zero block: d 0x%04x q 0x%02x", d,
        q[2]);
  x[7] = NAN;
  for (int t = WGC_DTYPE_Q8_0; t <= WGC_DTYPE_Q4_0; t++) {
    float back[32];
    wgc_quantize(x, q, (wgc_dtype)t, 32);
    memcpy(&d, q, 2);
    wgc_dequantize(q, (wgc_dtype)t, back, 32);
    CHECK(d == 0x7e00 && isnan(back[0]) && isnan(back[31]),
          "%s NaN block: d 0x%04x", wgc_dtype_name((wgc_dtype)t), d);
  }
  free(x);
  case_end();
}

/* ---- wgc_cast -------------------------------------------------------------
 */

/* Source data of type t for n elements: patterns that reach every rule. */
static void fill_src(uint8_t *p, wgc_dtype t, size_t n, unsigned seed) {
  uint64_t s = 0x9E3779B97F4A7C15ull ^ seed;
  size_t bytes = dref_bytes(t, n);
  for (size_t i = 0; i < bytes; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    p[i] = (uint8_t)(s >> 24);
  }
  if (t == WGC_DTYPE_F32) { /* mostly ordinary values, some specials */
    float *f = xmalloc(4 * n);
    fill_uniform(f, n, -70000, 70000, seed);
    static const uint32_t sp[] = {0x7f800001u, 0xffc00000u, 0x7f800000u,
                                  0x80000000u, 0x33000001u, 0x477ff000u,
                                  0x4f000000u, 0x3f800000u};
    for (size_t i = 0; i < n; i++) {
      if (i % 7 == 3)
        f[i] = bitsf(sp[i / 7 % 8]);
      else if (i % 5 == 1)
        f[i] *= 1e-6f;
    }
    memcpy(p, f, 4 * n);
    free(f);
  } else if (t == WGC_DTYPE_Q8_0 || t == WGC_DTYPE_Q4_0) {
    size_t bb = t == WGC_DTYPE_Q8_0 ? 34 : 18;
    for (size_t b = 0; b < n / 32; b++) { /* finite scales mostly */
      uint16_t d = (uint16_t)(0x2000 + (b * 977) % 0x3000);
      if (b % 5 == 4)
        d = b % 10 == 4 ? 0x7e01 : 0xfc00; /* a NaN, -inf */
      memcpy(p + b * bb, &d, 2);
    }
  }
}

typedef struct layout {
  size_t soff, doff; /* bytes into their allocations */
} layout;

static void cast_case(wgc_context *ctx, wgc_dtype st, wgc_dtype dt, size_t n,
                      layout lay) {
  size_t sb = dref_bytes(st, n), db = dref_bytes(dt, n);
  size_t salloc = (lay.soff + sb + 8) & ~(size_t)3,
         dalloc = (lay.doff + db + 8) & ~(size_t)3;
  uint8_t *src = xmalloc(salloc), *dst = xmalloc(dalloc),
          *got = xmalloc(dalloc), *want = xmalloc(dalloc);
  memset(src, 0, salloc);
  fill_src(src + lay.soff, st, n, (unsigned)(n * 7 + st * 3 + dt));
  memset(dst, GUARD_BYTE, dalloc);
  memcpy(want, dst, dalloc);
  dref_cast(src + lay.soff, st, want + lay.doff, dt, n);
  wgc_ptr ds = dev_alloc(ctx, salloc), dd = dev_alloc(ctx, dalloc);
  if (ds && dd && dev_write(ctx, ds, (float *)src, salloc / 4) &&
      dev_write(ctx, dd, (float *)dst, dalloc / 4)) {
    CHECK_OK(ctx, wgc_cast(ctx, ds + lay.soff, st, dd + lay.doff, dt, n));
    if (dev_read(ctx, (float *)got, dd, dalloc / 4))
      for (size_t i = 0; i < dalloc; i++)
        if (got[i] != want[i]) {
          bool in = i >= lay.doff && i < lay.doff + db;
          CHECK(false, "%s byte %zu (element %zu): 0x%02x, want 0x%02x",
                in ? "dst" : "guard", i,
                in ? (i - lay.doff) * wgc_dtype_block_size(dt) /
                         dref_bytes(dt, wgc_dtype_block_size(dt))
                   : 0,
                got[i], want[i]);
          break;
        }
  }
  dev_free(ctx, ds);
  dev_free(ctx, dd);
  free(src);
  free(dst);
  free(got);
  free(want);
}

static size_t offset_for(wgc_dtype t, int k) {
  size_t align = dref_bytes(t, wgc_dtype_block_size(t)) % 4 ? 2 : 4;
  return (size_t)k * align * 3; /* 0, 6 / 12, ... */
}

TEST(cast_pairs) {
  for (int bi = 0; bi < 2; bi++)
    for (int st = 0; st < NT; st++)
      for (int dt = 0; dt < NT; dt++) {
        wgc_context *ctx;
        if (!backend_case(bi, &ctx, "cast %s->%s",
                          wgc_dtype_name((wgc_dtype)st),
                          wgc_dtype_name((wgc_dtype)dt)))
          continue;
        bool blocks = wgc_dtype_block_size((wgc_dtype)st) > 1 ||
                      wgc_dtype_block_size((wgc_dtype)dt) > 1;
        size_t ns[] = {blocks ? 32 : 1, blocks ? 96 : 3, blocks ? 32 * 37 : 37,
                       blocks ? 32 * 70 : 2053};
        for (size_t k = 0; k < 4; k++)
          for (int o = 0; o < 3; o++)
            cast_case(ctx, (wgc_dtype)st, (wgc_dtype)dt, ns[k],
                      (layout){offset_for((wgc_dtype)st, o % 2),
                               offset_for((wgc_dtype)dt, o / 2 + (o == 0))});
        case_end();
      }
}

/* The kernels' rounding (kernels/dtype.wgsl, shared by every 2-byte
 * output) on the values of dtype_f32_rounding, through wgc_cast and
 * through an element-wise op's whole-word stores (x + -0, which is x
 * exactly), at both halves of a word. */
TEST(cast_f32_rounding) {
  float *x = falloc(ROUNDING_MAX);
  size_t n = rounding_values(x);
  float *zero = falloc(n);
  for (size_t i = 0; i < n; i++)
    zero[i] = -0.0f;
  uint16_t *got = xmalloc(2 * n + 8);
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "cast: f32 to f16 and bf16 rounding"))
      continue;
    wgc_ptr dx = dev_alloc(ctx, 4 * n), dz = dev_alloc(ctx, 4 * n),
            dh = dev_alloc(ctx, 2 * n + 8);
    if (dx && dz && dh && dev_write(ctx, dx, x, n) &&
        dev_write(ctx, dz, zero, n))
      for (int k = 0; k < 4; k++) {
        int bf = k & 1, lead = k >> 1;
        wgc_dtype t = bf ? WGC_DTYPE_BF16 : WGC_DTYPE_F16;
        for (int op = 0; op < 2; op++) {
          if (op == 0)
            CHECK_OK(ctx,
                     wgc_cast(ctx, dx, WGC_DTYPE_F32, dh + 2 * lead, t, n));
          else
            CHECK_OK(ctx,
                     wgc_binary_ex(ctx, WGC_BINARY_ADD, dx, WGC_DTYPE_F32, dz,
                                   WGC_DTYPE_F32, dh + 2 * lead, t, n));
          if (!dev_read(ctx, (float *)got, dh, (2 * n + 8) / 4))
            break;
          for (size_t i = 0; i < n; i++) {
            uint16_t want = rounded16(x, i, bf);
            /* NaN + -0: any NaN of the type (WGSL keeps no payload); an
             * f32 subnormal may be flushed to its signed zero */
            uint32_t b = fbits(x[i]), a = b & 0x7fffffffu;
            uint16_t mask = bf ? 0x7f80 : 0x7c00, g = got[lead + i];
            bool ok = g == want;
            if (op && a > 0x7f800000u)
              ok = (g & mask) == mask && (g & ~(0x8000 | mask));
            else if (op && a && a < 0x800000u)
              ok = ok || g == (b >> 16 & 0x8000);
            if (!ok) {
              CHECK(false, "%s %s(0x%08x) at half %d = 0x%04x, want 0x%04x",
                    op ? "x + -0 to" : "cast to", bf ? "bf16" : "f16", b, lead,
                    g, want);
              break;
            }
          }
        }
      }
    dev_free(ctx, dx);
    dev_free(ctx, dz);
    dev_free(ctx, dh);
    case_end();
  }
  free(got);
  free(zero);
  free(x);
}

/* Through 4 KiB binding windows: many launches, boundary words shared. */
TEST(cast_windows) {
  static const wgc_dtype pairs[][2] = {{WGC_DTYPE_F32, WGC_DTYPE_Q8_0},
                                       {WGC_DTYPE_F16, WGC_DTYPE_Q4_0},
                                       {WGC_DTYPE_Q4_0, WGC_DTYPE_BF16},
                                       {WGC_DTYPE_I32, WGC_DTYPE_F16}};
  for (int bi = 0; bi < 2; bi++) {
    if (!case_begin("cast 4 KiB windows[%s]", backend_label(test_backends[bi])))
      continue;
    wgc_context *ctx = new_ctx(test_backends[bi], 4096);
    for (size_t i = 0; ctx && i < 4; i++)
      cast_case(
          ctx, pairs[i][0], pairs[i][1], 32 * 301,
          (layout){offset_for(pairs[i][0], 1), offset_for(pairs[i][1], 1)});
    wgc_destroy(ctx);
    case_end();
  }
}

TEST(cast_rejected) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "cast rejected"))
      continue;
    float init[64];
    for (int i = 0; i < 64; i++)
      init[i] = sentinel();
    wgc_ptr a = dev_from(ctx, init, 64), b = dev_from(ctx, init, 64);
    CHECK_REJECTED(ctx,
                   wgc_cast(ctx, a + 1, WGC_DTYPE_F16, b, WGC_DTYPE_F32, 2),
                   "wgc_cast", "src");
    CHECK(strstr(wgc_last_error(ctx), "f16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_cast(ctx, a, WGC_DTYPE_F16, b + 2, WGC_DTYPE_F32, 2),
                   "wgc_cast", "dst");
    CHECK(strstr(wgc_last_error(ctx), "f32"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, wgc_cast(ctx, a, WGC_DTYPE_F32, b, WGC_DTYPE_Q8_0, 33),
                   "wgc_cast", "dst|n");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, wgc_cast(ctx, a, WGC_DTYPE_Q4_0, b, WGC_DTYPE_F32, 16),
                   "wgc_cast", "src|n");
    CHECK_REJECTED(ctx, wgc_cast(ctx, a, (wgc_dtype)6, b, WGC_DTYPE_F32, 2),
                   "wgc_cast", "src_type");
    CHECK_REJECTED(ctx, wgc_cast(ctx, a, WGC_DTYPE_F32, b, (wgc_dtype)-1, 2),
                   "wgc_cast", "dst_type");
    CHECK_REJECTED(ctx, wgc_cast(ctx, a, WGC_DTYPE_F32, b, WGC_DTYPE_F16, 65),
                   "wgc_cast", "src");
    CHECK_REJECTED(ctx,
                   wgc_cast(ctx, a, WGC_DTYPE_F32, b + 250, WGC_DTYPE_Q4_0, 32),
                   "wgc_cast", "dst");
    /* overlap: dst's bytes within src's span, 2-byte types in place too */
    CHECK_REJECTED(ctx,
                   wgc_cast(ctx, a, WGC_DTYPE_F32, a + 6, WGC_DTYPE_F16, 8),
                   "wgc_cast", "dst|src");
    CHECK_REJECTED(ctx, wgc_cast(ctx, a, WGC_DTYPE_F16, a, WGC_DTYPE_BF16, 8),
                   "wgc_cast", "dst|src");
    CHECK_REJECTED(NULL, wgc_cast(NULL, a, WGC_DTYPE_F16, b, WGC_DTYPE_BF16, 8),
                   "wgc_cast", "ctx");
    CHECK_OK(ctx, wgc_cast(ctx, 0, WGC_DTYPE_F16, 0, WGC_DTYPE_Q8_0, 0));
    CHECK_DEVICE_EQUALS(ctx, a, init, 64, "src");
    CHECK_DEVICE_EQUALS(ctx, b, init, 64, "dst");
    /* adjacent 2-byte operands sharing a word are not an overlap */
    CHECK_OK(ctx, wgc_cast(ctx, a, WGC_DTYPE_F16, a + 2, WGC_DTYPE_BF16, 1));
    dev_free(ctx, a);
    dev_free(ctx, b);
    case_end();
  }
}
