/* Element types: names and sizes, the host conversions, and the element
 * conversions the CPU backend's wgc_cast runs (dtype.h). Values pass
 * through double, which holds every f32, f16, bf16, i32 and dequantized
 * value exactly, so each conversion rounds once; NaNs travel as their f32
 * bits, since double arithmetic would not keep their payloads. */
#include "dtype.h"

#include "internal.h"

#include <math.h>
#include <string.h>

#define QK 32 /* elements per Q8_0 and Q4_0 block */

#define DTYPE_BLOCK_(NAME, name) WGC_DTYPE_BLOCK_##NAME,
static const size_t dtype_blocks[] = {WGC_DTYPES(DTYPE_BLOCK_)};
#define DTYPE_BYTES_(NAME, name) WGC_DTYPE_BLOCK_BYTES_##NAME,
static const size_t dtype_bytes[] = {WGC_DTYPES(DTYPE_BYTES_)};
#define DTYPE_NAME_(NAME, name) #name,
static const char *const dtype_names[] = {WGC_DTYPES(DTYPE_NAME_)};
_Static_assert(sizeof dtype_blocks / sizeof *dtype_blocks == WGC_DTYPE_COUNT &&
                   sizeof dtype_names / sizeof *dtype_names == WGC_DTYPE_COUNT,
               "one entry per dtype");
_Static_assert(WGC_DTYPE_F32 == 0, "a zeroed type field means f32");

bool wgc_dtype_valid(wgc_dtype t) { return (unsigned)t < WGC_DTYPE_COUNT; }
size_t wgc_dtype_block(wgc_dtype t) { return dtype_blocks[t]; }
size_t wgc_dtype_block_bytes(wgc_dtype t) { return dtype_bytes[t]; }

const char *wgc_dtype_name(wgc_dtype t) {
  return wgc_dtype_valid(t) ? dtype_names[t] : "unknown dtype";
}

size_t wgc_dtype_block_size(wgc_dtype t) {
  return wgc_dtype_valid(t) ? dtype_blocks[t] : 0;
}

wgc_status wgc_dtype_bytes(wgc_dtype t, size_t n, size_t *bytes) {
  const char *fn = "wgc_dtype_bytes";
  if (!bytes)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: bytes is NULL", fn);
  if (!wgc_dtype_valid(t))
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "%s: t %d is not a wgc_dtype", fn, (int)t);
  if (n % dtype_blocks[t])
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "%s: n %zu is not a whole number of %s blocks (%zu "
                    "elements)",
                    fn, n, dtype_names[t], dtype_blocks[t]);
  if (n / dtype_blocks[t] > SIZE_MAX / dtype_bytes[t])
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "%s: n %zu elements of %s overflow a size_t", fn, n,
                    dtype_names[t]);
  *bytes = n / dtype_blocks[t] * dtype_bytes[t];
  return WGC_OK;
}

/* ---- scalar conversions --------------------------------------------------
 */

typedef struct elem {
  double v;     /* the value, when nan is 0 */
  uint32_t nan; /* a NaN's f32 bits, else 0 */
} elem;

static uint32_t f32_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
static float f32_from(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}
static bool bits_nan(uint32_t b) { return (b & 0x7fffffffu) > 0x7f800000u; }

/* |x| (not NaN) rounded once, to nearest even, into a binary format of
 * mant fraction bits and exponents emin..emax (bias emax): its bits
 * without the sign. Overflow gives infinity; subnormals are kept. */
static uint32_t round_format(double a, int mant, int emin, int emax) {
  uint32_t inf = (uint32_t)(2 * emax + 1) << mant;
  if (isinf(a))
    return inf;
  if (a < ldexp(1.0, emin)) /* subnormal: m = 2^mant is the least normal */
    return (uint32_t)nearbyint(ldexp(a, mant - emin));
  int k;
  frexp(a, &k);
  int e = k - 1;
  double m = nearbyint(ldexp(a, mant - e)); /* in [2^mant, 2^(mant+1)] */
  if (m == ldexp(1.0, mant + 1)) {
    m /= 2;
    e++;
  }
  if (e > emax)
    return inf;
  return ((uint32_t)(e + emax) << mant) | ((uint32_t)m - (1u << mant));
}

/* A NaN's f32 bits narrowed to a format of mant fraction bits: the sign
 * and the top payload bits; the quiet bit where none of those is set. */
static uint32_t narrow_nan(uint32_t b, int mant, int exp_bits) {
  uint32_t frac = (b & 0x7fffffu) >> (23 - mant);
  if (!frac)
    frac = 1u << (mant - 1);
  uint32_t sign = (b >> 31) << (mant + exp_bits);
  return sign | (((1u << exp_bits) - 1) << mant) | frac;
}

/* round_format for |x| in the format's normal range below its overflow
 * threshold, on the double's bits: add half an output ulp less one plus
 * the kept lowest bit (ties to even), drop the extra fraction bits and
 * rebias the exponent; a carry into the exponent is the right result.
 * Some 20 times faster than round_format, whose frexp, ldexp and
 * nearbyint every 2-byte output of the CPU backend paid. */
static uint32_t round_normal(double a, int mant, int emax) {
  uint64_t b;
  memcpy(&b, &a, 8);
  int drop = 52 - mant;
  uint64_t r = (b + (1ull << (drop - 1)) - 1 + (b >> drop & 1)) >> drop;
  return (uint32_t)(r - ((uint64_t)(1023 - emax) << mant));
}

/* A 2-byte format: fraction bits, exponents emin..emax (bias emax), its
 * exponent bits, the least normal value and the midpoint between the
 * largest finite value and 2^(emax + 1), from which values round to
 * infinity. */
typedef struct format {
  int mant, emin, emax, exp_bits;
  double least, limit;
} format;
static const format F16 = {10, -14, 15, 5, 0x1p-14, 65520.0};
static const format BF16 = {7, -126, 127, 8, 0x1p-126, 0x1.ffp127};

/* v rounded into f at *h where |v| lies in f's normal range; false
 * elsewhere (NaN included), *h untouched. */
static inline bool narrow_normal(double v, const format *f, uint16_t *h) {
  double a = fabs(v);
  if (!(a >= f->least && a < f->limit))
    return false;
  *h = (uint16_t)((signbit(v) ? 1u << (f->mant + f->exp_bits) : 0) |
                  round_normal(a, f->mant, f->emax));
  return true;
}

static uint16_t narrow(elem x, const format *f) {
  if (x.nan)
    return (uint16_t)narrow_nan(x.nan, f->mant, f->exp_bits);
  uint16_t h;
  if (narrow_normal(x.v, f, &h))
    return h;
  uint32_t sign = signbit(x.v) ? 1u << (f->mant + f->exp_bits) : 0;
  return (uint16_t)(sign | round_format(fabs(x.v), f->mant, f->emin, f->emax));
}

static elem elem_f32(uint32_t b) {
  return bits_nan(b) ? (elem){0, b} : (elem){(double)f32_from(b), 0};
}

/* f32 bits to f16 or bf16 bits as narrow() rounds them (the same bits),
 * in 32-bit integer arithmetic, as kernels/dtype.wgsl does on the GPU. */
uint16_t wgc_f32_to_f16(uint32_t b) {
  uint32_t sign = b >> 16 & 0x8000u, a = b & 0x7fffffffu;
  if (a > 0x7f800000u) {
    uint32_t frac = (a & 0x7fffffu) >> 13;
    return (uint16_t)(sign | 0x7c00u | (frac ? frac : 0x200u));
  }
  if (a >= 0x477ff000u) /* 65520 and up: infinity */
    return (uint16_t)(sign | 0x7c00u);
  if (a >= 0x38800000u) /* normal: rebias 127 -> 15 */
    return (uint16_t)(sign | (((a + 0xfffu + (a >> 13 & 1)) >> 13) - 0x1c000u));
  if (a <= 0x33000000u) /* up to 2^-25: zero */
    return (uint16_t)sign;
  uint32_t m = (a & 0x7fffffu) | 0x800000u, sh = 126 - (a >> 23); /* 14..24 */
  return (uint16_t)(sign | ((m + (1u << (sh - 1)) - 1 + (m >> sh & 1)) >> sh));
}
uint16_t wgc_f32_to_bf16(uint32_t b) {
  uint32_t sign = b >> 16 & 0x8000u, a = b & 0x7fffffffu;
  if (a > 0x7f800000u) {
    uint32_t frac = (a & 0x7fffffu) >> 16;
    return (uint16_t)(sign | 0x7f80u | (frac ? frac : 0x40u));
  }
  return (uint16_t)(sign | (a + 0x7fffu + (a >> 16 & 1)) >> 16);
}

uint32_t wgc_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31u,
           m = h & 0x3ffu;
  if (e == 31)
    return sign | 0x7f800000u | (m << 13);
  if (e == 0) /* zero or subnormal: m * 2^-24, exact in f32 */
    return sign | f32_bits((float)m * 0x1p-24f);
  return sign | ((e + 112) << 23) | (m << 13);
}

static uint32_t elem_to_f32(elem x) {
  return x.nan ? x.nan : f32_bits((float)x.v);
}

static int32_t elem_to_i32(elem x) {
  if (x.nan)
    return 0;
  double t = trunc(x.v);
  if (t >= 2147483647.0)
    return INT32_MAX;
  if (t <= -2147483648.0)
    return INT32_MIN;
  return (int32_t)t;
}

/* ---- blocks ---------------------------------------------------------------
 */

/* ggml's quant of t = x*id, with what ggml leaves undefined (1/d
 * overflowing for tiny blocks) given IEEE infinities: NaN (0*inf) counts
 * as 0, beyond the range saturates. */
static int8_t quant8(float t) {
  if (isnan(t))
    t = 0;
  float r = roundf(t);
  return (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
}
static uint8_t quant4(float t) {
  if (isnan(t))
    t = 0;
  float u = t + 8.5f;
  if (!(u >= 0))
    u = 0;
  if (u > 15)
    u = 15;
  return (uint8_t)u;
}

/* One block of 32 f32 values quantized into out (34 or 18 bytes). */
static void quantize_block(const float *x, wgc_dtype t, uint8_t *out) {
  bool finite = true;
  float amax = 0, max = 0;
  for (int j = 0; j < QK; j++) {
    float v = x[j], av = fabsf(v);
    finite = finite && isfinite(v);
    if (t == WGC_DTYPE_Q8_0) {
      amax = amax > av ? amax : av; /* ggml's MAX */
    } else if (amax < av) {
      amax = av;
      max = v;
    }
  }
  uint16_t d16;
  float id = 0;
  if (!finite) {
    d16 = 0x7e00;
  } else {
    float d = t == WGC_DTYPE_Q8_0 ? amax / 127 : max / -8;
    id = d != 0 ? 1.0f / d : 0.0f;
    d16 = wgc_f32_to_f16(f32_bits(d));
  }
  memcpy(out, &d16, 2);
  if (t == WGC_DTYPE_Q8_0) {
    for (int j = 0; j < QK; j++)
      out[2 + j] = (uint8_t)(finite ? quant8(x[j] * id) : 0);
  } else {
    for (int j = 0; j < QK / 2; j++)
      out[2 + j] =
          finite
              ? (uint8_t)(quant4(x[j] * id) | quant4(x[j + QK / 2] * id) << 4)
              : 0x88;
  }
}

static void dequantize_block(const uint8_t *in, wgc_dtype t, elem *y) {
  uint16_t d16;
  memcpy(&d16, in, 2);
  uint32_t db = wgc_f16_to_f32(d16);
  double d = (double)f32_from(db);
  for (int j = 0; j < QK; j++) {
    int q = t == WGC_DTYPE_Q8_0
                ? (int8_t)in[2 + j]
                : (j < QK / 2 ? in[2 + j] & 15 : in[2 + j - QK / 2] >> 4) - 8;
    if (bits_nan(db))
      y[j] = (elem){0, db};
    else if (isinf(d) && q == 0)
      y[j] = (elem){0, 0x7fc00000u};
    else
      y[j] = (elem){d * q, 0}; /* exact: 11 bits times 8 */
  }
}

/* ---- buffers --------------------------------------------------------------
 */

/* Elements [i, i + n) of src, n <= QK and whole blocks of st. */
static void load(const uint8_t *src, wgc_dtype st, size_t i, size_t n,
                 elem *x) {
  switch (st) {
  case WGC_DTYPE_F32:
  case WGC_DTYPE_I32:
    for (size_t j = 0; j < n; j++) {
      uint32_t b;
      memcpy(&b, src + 4 * (i + j), 4);
      x[j] = st == WGC_DTYPE_I32 ? (elem){(double)(int32_t)b, 0} : elem_f32(b);
    }
    return;
  case WGC_DTYPE_F16:
  case WGC_DTYPE_BF16:
    for (size_t j = 0; j < n; j++) {
      uint16_t h;
      memcpy(&h, src + 2 * (i + j), 2);
      x[j] =
          elem_f32(st == WGC_DTYPE_F16 ? wgc_f16_to_f32(h) : (uint32_t)h << 16);
    }
    return;
  case WGC_DTYPE_Q8_0:
  case WGC_DTYPE_Q4_0:
    dequantize_block(src + i / QK * dtype_bytes[st], st, x);
    return;
  }
}

static void store(uint8_t *dst, wgc_dtype dt, size_t i, size_t n,
                  const elem *x) {
  switch (dt) {
  case WGC_DTYPE_F32:
  case WGC_DTYPE_I32:
    for (size_t j = 0; j < n; j++) {
      uint32_t b =
          dt == WGC_DTYPE_F32 ? elem_to_f32(x[j]) : (uint32_t)elem_to_i32(x[j]);
      memcpy(dst + 4 * (i + j), &b, 4);
    }
    return;
  case WGC_DTYPE_F16:
  case WGC_DTYPE_BF16:
    for (size_t j = 0; j < n; j++) {
      uint16_t h = narrow(x[j], dt == WGC_DTYPE_F16 ? &F16 : &BF16);
      memcpy(dst + 2 * (i + j), &h, 2);
    }
    return;
  case WGC_DTYPE_Q8_0:
  case WGC_DTYPE_Q4_0: {
    float f[QK]; /* ggml quantizes f32 values */
    for (size_t j = 0; j < QK; j++)
      f[j] = f32_from(elem_to_f32(x[j]));
    quantize_block(f, dt, dst + i / QK * dtype_bytes[dt]);
    return;
  }
  }
}

/* F32, F16 and BF16: converted through float runs (exact for the loads;
 * the integer rounding of wgc_f32_to_f16 for the stores), much faster
 * than element by element through doubles. */
static bool float_type(wgc_dtype t) {
  return t == WGC_DTYPE_F32 || t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16;
}

static void convert_floats(const void *src, wgc_dtype st, size_t si, void *dst,
                           wgc_dtype dt, size_t di, size_t n) {
  float buf[256];
  for (size_t done = 0, m; done < n; done += m) {
    m = n - done < 256 ? n - done : 256;
    wgc_dtype_load_run(src, st, si + done, m, buf);
    wgc_dtype_store_run(dst, dt, di + done, buf, m);
  }
}

void wgc_dtype_convert(const void *src, wgc_dtype st, void *dst, wgc_dtype dt,
                       size_t i0, size_t n) {
  if (st == dt) { /* an exact copy, whole blocks */
    size_t b = dtype_bytes[st], k = dtype_blocks[st];
    memcpy((uint8_t *)dst + i0 / k * b, (const uint8_t *)src + i0 / k * b,
           n / k * b);
    return;
  }
  if (float_type(st) && float_type(dt)) {
    convert_floats(src, st, i0, dst, dt, i0, n);
    return;
  }
  elem x[QK];
  for (size_t i = i0; i < i0 + n; i += QK) {
    size_t m = i0 + n - i < QK ? i0 + n - i : QK;
    load(src, st, i, m, x);
    store(dst, dt, i, m, x);
  }
}

/* Elements [si, si + n) of src into elements [di, di + n) of a scalar dst
 * (Gather's rows: neither run need start on a block). */
void wgc_dtype_convert_run(const void *src, wgc_dtype st, size_t si, void *dst,
                           wgc_dtype dt, size_t di, size_t n) {
  if (float_type(st) && float_type(dt)) {
    if (st == dt) /* the bits as they are */
      memmove((uint8_t *)dst + di * dtype_bytes[dt],
              (const uint8_t *)src + si * dtype_bytes[st], n * dtype_bytes[st]);
    else
      convert_floats(src, st, si, dst, dt, di, n);
    return;
  }
  const uint8_t *s = src;
  elem x[QK];
  for (size_t done = 0; done < n;) {
    size_t i = si + done, off = 0, m = n - done < QK ? n - done : QK;
    if (dtype_blocks[st] > 1) { /* the block holding element i */
      dequantize_block(s + i / QK * dtype_bytes[st], st, x);
      off = i % QK;
      m = QK - off < n - done ? QK - off : n - done;
    } else {
      load(s, st, i, m, x);
    }
    store(dst, dt, di + done, m, x + off);
    done += m;
  }
}

/* ---- single elements (GEMM's typed operands) ----------------------------
 */

static float elem_float(elem x) { return f32_from(elem_to_f32(x)); }

float wgc_dtype_load(const void *src, wgc_dtype t, size_t i) {
  const uint8_t *s = src;
  if (t == WGC_DTYPE_F32) {
    float f;
    memcpy(&f, s + 4 * i, 4);
    return f;
  }
  if (t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16) { /* as load(), directly */
    uint16_t h;
    memcpy(&h, s + 2 * i, 2);
    return f32_from(t == WGC_DTYPE_F16 ? wgc_f16_to_f32(h) : (uint32_t)h << 16);
  }
  elem x[QK];
  if (wgc_dtype_block(t) > 1) {
    dequantize_block(s + i / QK * dtype_bytes[t], t, x);
    return elem_float(x[i % QK]);
  }
  load(s, t, i, 1, x);
  return elem_float(x[0]);
}

/* wgc_f16_to_f32 without branches, so that a run's loop vectorises (the
 * CPU backend's packers convert every typed B element through here): an
 * exponent and significand shifted into place, rebiased by 112 (or 224
 * for inf and NaN, the payload kept), or m * 2^-24 for zero and
 * subnormals. The same bits. */
static inline float f16_float(uint16_t h) {
  uint32_t m = h & 0x7fffu;
  uint32_t nrm = (m << 13) + (m >= 0x7c00u ? 0x70000000u : 0x38000000u);
  uint32_t sub = f32_bits((float)m * 0x1p-24f);
  return f32_from((m < 0x400u ? sub : nrm) | (uint32_t)(h & 0x8000u) << 16);
}

#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector) &&                                  \
    __has_builtin(__builtin_convertvector)
#define DTYPE_VECTOR 1
#endif
#endif

#ifdef DTYPE_VECTOR
typedef uint8_t v16b __attribute__((vector_size(16)));
typedef int8_t v16sb __attribute__((vector_size(16)));
typedef uint16_t v8h __attribute__((vector_size(16)));
typedef uint32_t v4u __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef float v4f __attribute__((vector_size(16)));

/* Four f16 bit patterns (each in a lane's low 16 bits) as f16_float gives
 * them. */
static inline v4u f16_lanes(v4u x) {
  v4u m = x & 0x7fffu;
  v4u nrm = (m << 13) + 0x38000000u + ((v4u)(m >= 0x7c00u) & 0x38000000u);
  v4f subf = __builtin_convertvector((v4i)m, v4f) * 0x1p-24f;
  v4u sub, small = (v4u)(m < 0x400u);
  memcpy(&sub, &subf, sizeof sub);
  return (sub & small) | (nrm & ~small) | (x & 0x8000u) << 16;
}

/* Eight f16 (or bf16) at p into dst, as the scalar loop gives them: the
 * CPU backend's packers convert a typed B's every element here, and the
 * scalar form does not vectorise at -O2. A bf16 lands in a lane's high
 * half, an f16 in its low half. */
static inline void halves8(const uint8_t *p, bool f16, float *dst) {
  v8h v, z = {0};
  memcpy(&v, p, sizeof v);
  v4u lo, hi;
  if (f16) {
    lo =
        f16_lanes((v4u)__builtin_shufflevector(v, z, 0, 8, 1, 9, 2, 10, 3, 11));
    hi = f16_lanes(
        (v4u)__builtin_shufflevector(v, z, 4, 12, 5, 13, 6, 14, 7, 15));
  } else {
    lo = (v4u)__builtin_shufflevector(z, v, 0, 8, 1, 9, 2, 10, 3, 11);
    hi = (v4u)__builtin_shufflevector(z, v, 4, 12, 5, 13, 6, 14, 7, 15);
  }
  memcpy(dst, &lo, sizeof lo);
  memcpy(dst + 4, &hi, sizeof hi);
}

/* The 16 signed bytes of b as ints, four at a time into q: each placed in
 * its lane's top byte by interleaving with zeros (SSE2's unpacks; a
 * general byte shuffle would go element by element), then shifted down
 * with its sign. */
static inline void bytes16(v16b b, v4i q[4]) {
  v16b z = {0};
  v8h zh = {0};
  v8h lo = (v8h)__builtin_shufflevector(z, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20,
                                        5, 21, 6, 22, 7, 23);
  v8h hi = (v8h)__builtin_shufflevector(z, b, 8, 24, 9, 25, 10, 26, 11, 27, 12,
                                        28, 13, 29, 14, 30, 15, 31);
  q[0] = (v4i)__builtin_shufflevector(zh, lo, 0, 8, 1, 9, 2, 10, 3, 11) >> 24;
  q[1] = (v4i)__builtin_shufflevector(zh, lo, 4, 12, 5, 13, 6, 14, 7, 15) >> 24;
  q[2] = (v4i)__builtin_shufflevector(zh, hi, 0, 8, 1, 9, 2, 10, 3, 11) >> 24;
  q[3] = (v4i)__builtin_shufflevector(zh, hi, 4, 12, 5, 13, 6, 14, 7, 15) >> 24;
}

/* The 32 quants of a Q8_0 or Q4_0 block (after its scale) times d. */
static inline void quants32(const uint8_t *in, bool q8, float d, float *y) {
  v16b b[2];
  if (q8) {
    memcpy(b, in, 32);
  } else { /* element j < 16: the low nibble of byte j, else the high one of
              byte j - 16; minus 8 */
    v16b x;
    memcpy(&x, in, 16);
    b[0] = (v16b)((v16sb)(x & 15) - 8);
    b[1] = (v16b)((v16sb)(x >> 4) - 8);
  }
  for (int h = 0; h < 2; h++) {
    v4i q[4];
    bytes16(b[h], q);
    for (int r = 0; r < 4; r++) {
      v4f f = __builtin_convertvector(q[r], v4f) * d;
      memcpy(y + 16 * h + 4 * r, &f, sizeof f);
    }
  }
}
#endif

/* Block b of a Q8_0 or Q4_0 operand into 32 floats, as dequantize_block
 * gives them: d * q is exact in float (11 significant bits times 8). */
static void block_floats(const uint8_t *in, wgc_dtype t, float *y) {
  uint16_t d16;
  memcpy(&d16, in, 2);
  uint32_t db = wgc_f16_to_f32(d16);
  float d = f32_from(db);
#ifdef DTYPE_VECTOR
  quants32(in + 2, t == WGC_DTYPE_Q8_0, d, y);
#else
  for (int j = 0; j < QK; j++) {
    int q = t == WGC_DTYPE_Q8_0
                ? (int8_t)in[2 + j]
                : (j < QK / 2 ? in[2 + j] & 15 : in[2 + j - QK / 2] >> 4) - 8;
    y[j] = d * (float)q;
  }
#endif
  if (bits_nan(db) || isinf(d))
    for (int j = 0; j < QK; j++)
      if (bits_nan(db) || isnan(y[j])) /* a NaN scale, or inf * 0 */
        y[j] = f32_from(bits_nan(db) ? db : 0x7fc00000u);
}

#ifdef DTYPE_VECTOR
/* Four floats' bits rounded to bf16 (in each lane's low 16 bits) as
 * wgc_f32_to_bf16 does, without branches: to nearest even (the largest
 * finite values round to inf), a NaN keeping its payload's top bits (0x40
 * when those are 0). */
static inline v4u bf16_lanes(v4u b) {
  v4u a = b & 0x7fffffffu, frac = (a & 0x7fffffu) >> 16;
  v4u round = (b + 0x7fffu + (b >> 16 & 1u)) >> 16;
  v4u empty = (v4u)(frac == 0u), nan = (v4u)(a > 0x7f800000u);
  v4u quiet = (b >> 16 & 0x8000u) | 0x7f80u | (0x40u & empty) | (frac & ~empty);
  return (quiet & nan) | (round & ~nan);
}

/* Eight floats at src rounded to bf16 at h. */
static inline void bf16_8(const float *src, uint16_t *h) {
  v4u lo, hi;
  memcpy(&lo, src, sizeof lo);
  memcpy(&hi, src + 4, sizeof hi);
  v8h r = __builtin_shufflevector((v8h)bf16_lanes(lo), (v8h)bf16_lanes(hi), 0,
                                  2, 4, 6, 8, 10, 12, 14);
  memcpy(h, &r, sizeof r);
}
#endif

#if defined(__x86_64__) && defined(__GNUC__) && defined(DTYPE_VECTOR)
#include <immintrin.h>
#define DTYPE_F16C 1
/* Eight f16 at p into dst with F16C's vcvtph2ps (x86-64 since 2012, asked
 * of the CPU at run time), exact as f16_lanes, unless one is inf or NaN
 * (vcvtph2ps quiets a signalling NaN): then nothing is written and false
 * returned, for halves8. Natively an f16 GEMM's time went mostly to the
 * decode. */
__attribute__((target("f16c"))) static bool halves8_f16c(const uint8_t *p,
                                                         float *dst) {
  __m128i h = _mm_loadu_si128((const __m128i *)p);
  __m128i e = _mm_and_si128(h, _mm_set1_epi16(0x7c00));
  if (_mm_movemask_epi8(_mm_cmpeq_epi16(e, _mm_set1_epi16(0x7c00))))
    return false;
  _mm256_storeu_ps(dst, _mm256_cvtph_ps(h));
  return true;
}

/* Eight floats at src rounded to f16 at h with vcvtps2ph (to nearest even,
 * the bits of wgc_f32_to_f16), unless one is NaN (vcvtps2ph quiets a
 * signalling one): then nothing is written and false returned. */
__attribute__((target("f16c,avx"))) static bool floats8_f16c(const float *src,
                                                             uint16_t *h) {
  __m256 x = _mm256_loadu_ps(src);
  if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)))
    return false;
  _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT |
                                                        _MM_FROUND_NO_EXC));
  return true;
}
#endif

void wgc_dtype_load_run(const void *src, wgc_dtype t, size_t i0, size_t n,
                        float *dst) {
  const uint8_t *s = src;
  if (t == WGC_DTYPE_F32) {
    memcpy(dst, s + 4 * i0, 4 * n);
    return;
  }
  if (t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16) {
    size_t j = 0;
#ifdef DTYPE_F16C
    if (t == WGC_DTYPE_F16 && __builtin_cpu_supports("f16c"))
      for (; j + 8 <= n; j += 8)
        if (!halves8_f16c(s + 2 * (i0 + j), dst + j))
          halves8(s + 2 * (i0 + j), true, dst + j);
#endif
#ifdef DTYPE_VECTOR
    for (; j + 8 <= n; j += 8)
      halves8(s + 2 * (i0 + j), t == WGC_DTYPE_F16, dst + j);
#endif
    for (; j < n; j++) {
      uint16_t h;
      memcpy(&h, s + 2 * (i0 + j), 2);
      dst[j] = t == WGC_DTYPE_F16 ? f16_float(h) : f32_from((uint32_t)h << 16);
    }
    return;
  }
  float x[QK];
  for (size_t i = i0; i < i0 + n;) {
    size_t at = i % QK, m = QK - at < i0 + n - i ? QK - at : i0 + n - i;
    if (m == QK) { /* a whole block straight into place */
      block_floats(s + i / QK * dtype_bytes[t], t, dst + (i - i0));
    } else {
      block_floats(s + i / QK * dtype_bytes[t], t, x);
      memcpy(dst + (i - i0), x + at, m * sizeof *x);
    }
    i += m;
  }
}

void wgc_dtype_store_run(void *dst, wgc_dtype t, size_t i0, const float *src,
                         size_t n) {
  uint16_t *h = (uint16_t *)dst + i0;
  switch (t) {
  case WGC_DTYPE_F32:
    memcpy((float *)dst + i0, src, 4 * n);
    return;
  case WGC_DTYPE_F16: {
    size_t i = 0;
#ifdef DTYPE_F16C
    if (__builtin_cpu_supports("f16c"))
      for (; i + 8 <= n; i += 8)
        if (!floats8_f16c(src + i, h + i))
          for (size_t j = i; j < i + 8; j++)
            h[j] = wgc_f32_to_f16(f32_bits(src[j]));
#endif
    for (; i < n; i++)
      h[i] = wgc_f32_to_f16(f32_bits(src[i]));
    return;
  }
  case WGC_DTYPE_BF16: {
    size_t i = 0;
#ifdef DTYPE_VECTOR
    for (; i + 8 <= n; i += 8)
      bf16_8(src + i, h + i);
#endif
    for (; i < n; i++)
      h[i] = wgc_f32_to_bf16(f32_bits(src[i]));
    return;
  }
  default:
    for (size_t i = 0; i < n; i++)
      wgc_dtype_store(dst, t, i0 + i, src[i]);
  }
}

/* v as an element: a computed NaN has no payload to keep, so its float's
 * will do. */
static elem elem_of_double(double v) {
  return isnan(v) ? elem_f32(f32_bits((float)v)) : (elem){v, 0};
}

/* narrow() of each of n doubles, its normal range inline (f constant
 * where this is inlined). */
static inline void narrow_run(uint16_t *h, const double *src, size_t n,
                              const format *f) {
  for (size_t i = 0; i < n; i++)
    if (!narrow_normal(src[i], f, &h[i]))
      h[i] = narrow(elem_of_double(src[i]), f);
}

void wgc_dtype_store(void *dst, wgc_dtype t, size_t i, double v) {
  if (t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16) { /* as store(), directly */
    uint16_t h;
    narrow_run(&h, &v, 1, t == WGC_DTYPE_F16 ? &F16 : &BF16);
    memcpy((uint8_t *)dst + 2 * i, &h, 2);
    return;
  }
  elem x = elem_of_double(v);
  store(dst, t, i, 1, &x);
}

void wgc_dtype_store_doubles(void *dst, wgc_dtype t, size_t i0,
                             const double *src, size_t n) {
  if (t == WGC_DTYPE_F32) { /* a NaN keeps its float's bits, as store() */
    float *f = (float *)dst + i0;
    for (size_t i = 0; i < n; i++)
      f[i] = (float)src[i];
    return;
  }
  if (t == WGC_DTYPE_F16) {
    narrow_run((uint16_t *)dst + i0, src, n, &F16);
    return;
  }
  if (t == WGC_DTYPE_BF16) {
    narrow_run((uint16_t *)dst + i0, src, n, &BF16);
    return;
  }
  for (size_t i = 0; i < n; i++)
    wgc_dtype_store(dst, t, i0 + i, src[i]);
}

/* ---- host helpers ---------------------------------------------------------
 */

static wgc_status host_check(const char *fn, const void *src, const void *dst,
                             const char *tparam, wgc_dtype t, size_t n) {
  if (!wgc_dtype_valid(t))
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s %d is not a wgc_dtype", fn, tparam, (int)t);
  if (n % dtype_blocks[t])
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "%s: n %zu is not a whole number of %s %s blocks (%zu "
                    "elements)",
                    fn, n, tparam, dtype_names[t], dtype_blocks[t]);
  if (n && (!src || !dst))
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                    src ? "dst" : "src");
  return WGC_OK;
}

wgc_status wgc_quantize(const float *src, void *dst, wgc_dtype dst_type,
                        size_t n) {
  wgc_status s = host_check("wgc_quantize", src, dst, "dst_type", dst_type, n);
  if (s == WGC_OK && n)
    wgc_dtype_convert(src, WGC_DTYPE_F32, dst, dst_type, 0, n);
  return s;
}

wgc_status wgc_dequantize(const void *src, wgc_dtype src_type, float *dst,
                          size_t n) {
  wgc_status s =
      host_check("wgc_dequantize", src, dst, "src_type", src_type, n);
  if (s == WGC_OK && n)
    wgc_dtype_convert(src, src_type, dst, WGC_DTYPE_F32, 0, n);
  return s;
}
