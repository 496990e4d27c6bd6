/* The element-wise ops with f16 and bf16 operands (wgc_unary_ex,
 * wgc_unary_params_ex, wgc_binary_ex, wgc_binary_broadcast_ex,
 * wgc_where_ex) on both backends against float64: the inputs decoded
 * exactly by dtype_ref.c, the op's f32 bound plus half a unit in the last
 * place of the output type; f16 overflow to inf, f16 subnormal inputs and
 * NaN; 2-byte operands 2 bytes into a word with their neighbouring halves
 * untouched; where's chosen values bit for bit; and the rejected types,
 * which write nothing. */
#include "dtype_ref.h"
#include "ops_ref.h"
#include "tbuf.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const wgc_dtype TYPES[3] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                   WGC_DTYPE_BF16};

/* n values in [lo, hi] with the special values in front: an f16
 * subnormal, a NaN, and (where big) a value beyond f16's range. */
static float *inputs(size_t n, float lo, float hi, unsigned seed, bool big) {
  float *x = falloc(n);
  fill_uniform(x, n, lo, hi, seed);
  if (n > 3) {
    x[0] = lo >= 0 ? 3.5e-6f : -3.5e-6f; /* f16 subnormal */
    x[1] = NAN;
    if (big)
      x[2] = hi > 0 ? 70000.0f : -70000.0f;
  }
  return x;
}

/* Ops exact (or monotone and cheap) at |x| = 70000 in float32. */
static bool big_ok(wgc_unary_op op) {
  switch (op) {
  case WGC_UNARY_RELU:
  case WGC_UNARY_ABS:
  case WGC_UNARY_NEG:
  case WGC_UNARY_FLOOR:
  case WGC_UNARY_CEIL:
  case WGC_UNARY_ROUND:
  case WGC_UNARY_LEAKY_RELU:
  case WGC_UNARY_CLIP:
  case WGC_UNARY_SQRT:
    return true;
  default:
    return false;
  }
}

static void unary_case(wgc_context *ctx, wgc_unary_op op, bool params,
                       float alpha, float beta, wgc_dtype it, wgc_dtype ot,
                       size_t n, unsigned seed) {
  float lo, hi;
  ref_unary_range(op, &lo, &hi);
  float *x = inputs(n, lo, hi, seed, big_ok(op) && hi > 0);
  tbuf in = tbuf_make(ctx, it, x, n), out = tbuf_make(ctx, ot, NULL, n);
  double *want = dalloc(n), rel, abs_tol;
  ref_unary_bound(op, &rel, &abs_tol);
  if (!params)
    ref_unary_defaults(op, &alpha, &beta);
  for (size_t i = 0; i < n; i++)
    want[i] = ref_unary_params(op, tbuf_val(&in, i), alpha, beta);
  char what[96];
  snprintf(what, sizeof what, "%s %s->%s n=%zu", ref_unary_name(op),
           wgc_dtype_name(it), wgc_dtype_name(ot), n);
  if (in.dev && out.dev) {
    if (params)
      CHECK_OK(ctx, wgc_unary_params_ex(ctx, op, alpha, beta, in.dev + in.off,
                                        it, out.dev + out.off, ot, n));
    else
      CHECK_OK(ctx, wgc_unary_ex(ctx, op, in.dev + in.off, it,
                                 out.dev + out.off, ot, n));
    check_out(ctx, &out, want, rel, abs_tol, what);
  }
  tbuf_free(ctx, &in);
  tbuf_free(ctx, &out);
  free(x);
  free(want);
}

TEST(types_unary) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types unary"))
      continue;
    /* each op with three of the nine type pairs, every pair across ops */
    for (int op = 0; op < WGC_UNARY_OP_COUNT; op++)
      for (int k = 0; k < 3; k++) {
        int c = (op * 3 + k) % 9;
        unary_case(ctx, (wgc_unary_op)op, false, 0, 0, TYPES[c / 3],
                   TYPES[c % 3], k == 0 ? 1000 : 37, (unsigned)(op * 7 + k));
      }
    case_end();
  }
}

TEST(types_unary_params) {
  static const struct {
    wgc_unary_op op;
    float alpha, beta;
  } cases[] = {{WGC_UNARY_LEAKY_RELU, 0.3f, 0},
               {WGC_UNARY_ELU, 0.7f, 0},
               {WGC_UNARY_HARD_SIGMOID, 0.25f, 0.4f},
               {WGC_UNARY_CLIP, -0.5f, 2.5f}};
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types unary params"))
      continue;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
      for (int c = 0; c < 9; c++)
        unary_case(ctx, cases[i].op, true, cases[i].alpha, cases[i].beta,
                   TYPES[c / 3], TYPES[c % 3], c == 4 ? 300 : 29,
                   (unsigned)(i * 9 + (size_t)c));
    case_end();
  }
}

static void binary_ranges(wgc_binary_op op, float *alo, float *ahi, float *blo,
                          float *bhi) {
  *alo = -4, *ahi = 4, *blo = -4, *bhi = 4;
  if (op == WGC_BINARY_POW)
    *alo = 0.25f, *blo = -3, *bhi = 3;
  if (op == WGC_BINARY_DIV)
    *blo = 0.5f;
}

/* a of shape sa op b of shape sb into out (the broadcast shape); rank_a
 * == 0 with sa NULL: wgc_binary_ex of n elements. */
static void binary_case(wgc_context *ctx, wgc_binary_op op,
                        const wgc_dtype t[3], const size_t *sa, size_t ra,
                        const size_t *sb, size_t rb, size_t n, unsigned seed) {
  size_t so[8], ro = 1, na = n, nb = n, no = n;
  if (sa) {
    CHECK(ref_broadcast_shape(sa, ra, sb, rb, so, &ro), "shapes broadcast");
    na = ref_count(sa, ra), nb = ref_count(sb, rb), no = ref_count(so, ro);
  }
  float alo, ahi, blo, bhi;
  binary_ranges(op, &alo, &ahi, &blo, &bhi);
  float *x = inputs(na, alo, ahi, seed, false),
        *y = inputs(nb, blo, bhi, seed + 99, false);
  if (na > 3 && nb > 3 && op == WGC_BINARY_MUL)
    x[3] = y[3] = 300.0f; /* 90000: f16 infinity */
  tbuf A = tbuf_make(ctx, t[0], x, na), B = tbuf_make(ctx, t[1], y, nb),
       O = tbuf_make(ctx, t[2], NULL, no);
  /* the exactly converted inputs, broadcast in float64 */
  float *xa = falloc(na), *yb = falloc(nb);
  for (size_t i = 0; i < na; i++)
    xa[i] = (float)tbuf_val(&A, i);
  for (size_t i = 0; i < nb; i++)
    yb[i] = (float)tbuf_val(&B, i);
  double *want = dalloc(no), rel, abs_tol;
  ref_binary_bound(op, &rel, &abs_tol);
  if (sa)
    ref_broadcast(op, xa, sa, ra, yb, sb, rb, want);
  else
    for (size_t i = 0; i < n; i++)
      want[i] = ref_binary(op, xa[i], yb[i]);
  char what[96];
  snprintf(what, sizeof what, "%s %s,%s->%s n=%zu%s", ref_binary_name(op),
           wgc_dtype_name(t[0]), wgc_dtype_name(t[1]), wgc_dtype_name(t[2]), no,
           sa ? " broadcast" : "");
  if (A.dev && B.dev && O.dev) {
    if (sa)
      CHECK_OK(ctx, wgc_binary_broadcast_ex(ctx, op, A.dev + A.off, t[0], sa,
                                            ra, B.dev + B.off, t[1], sb, rb,
                                            O.dev + O.off, t[2]));
    else
      CHECK_OK(ctx, wgc_binary_ex(ctx, op, A.dev + A.off, t[0], B.dev + B.off,
                                  t[1], O.dev + O.off, t[2], n));
    check_out(ctx, &O, want, rel, abs_tol, what);
  }
  tbuf_free(ctx, &A);
  tbuf_free(ctx, &B);
  tbuf_free(ctx, &O);
  free(x);
  free(y);
  free(xa);
  free(yb);
  free(want);
}

TEST(types_binary) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types binary"))
      continue;
    /* ADD with all 27 type triples, the others with four each */
    for (int op = 0; op < WGC_BINARY_OP_COUNT; op++)
      for (int k = 0; k < (op == 0 ? 27 : 4); k++) {
        int c = op == 0 ? k : (op * 4 + k * 7) % 27;
        wgc_dtype t[3] = {TYPES[c / 9], TYPES[c / 3 % 3], TYPES[c % 3]};
        binary_case(ctx, (wgc_binary_op)op, t, NULL, 0, NULL, 0,
                    k == 1 ? 1500 : 41, (unsigned)(op * 31 + k));
      }
    case_end();
  }
}

TEST(types_binary_broadcast) {
  static const size_t s1[3] = {3, 1, 5}, s2[2] = {4, 1}, s3[1] = {5},
                      s4[3] = {2, 70, 9};
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types binary broadcast"))
      continue;
    for (int c = 0; c < 27; c++) {
      wgc_dtype t[3] = {TYPES[c / 9], TYPES[c / 3 % 3], TYPES[c % 3]};
      wgc_binary_op op = (wgc_binary_op)(c % WGC_BINARY_OP_COUNT);
      binary_case(ctx, op, t, s1, 3, s2, 2, 0, (unsigned)c);
      if (c % 4 == 0) /* a bias row, and a scalar */
        binary_case(ctx, WGC_BINARY_ADD, t, s4, 3, s3 + 0, 0, 0,
                    (unsigned)c + 50);
    }
    case_end();
  }
}

/* where with every type of each operand across the cases: the chosen
 * value converted exactly (bit for bit against dtype_ref's encoders). */
static void where_cases(wgc_context *ctx) {
  static const size_t sc[2] = {4, 1}, sa[3] = {3, 1, 6}, sb[1] = {6};
  const size_t n = 72, nc = 4, na = 18, nb = 6;
  for (int c = 0; c < 27; c++) {
    wgc_dtype t[4] = {TYPES[c % 3], TYPES[c / 3 % 3], TYPES[c / 9],
                      TYPES[(c + c / 3) % 3]};
    float cv[4] = {0.0f, 6e-7f /* f16 subnormal */, -0.0f, NAN};
    float *x = inputs(na, -70000.0f, 70000.0f, (unsigned)c, false),
          *y = inputs(nb, -1.0f, 1.0f, (unsigned)c + 7, true);
    tbuf C = tbuf_make(ctx, t[0], cv, nc), A = tbuf_make(ctx, t[1], x, na),
         B = tbuf_make(ctx, t[2], y, nb), O = tbuf_make(ctx, t[3], NULL, n);
    uint8_t *want = xmalloc(O.bytes), *got = xmalloc(O.bytes);
    memcpy(want, O.host, O.bytes);
    for (size_t i = 0; i < n; i++) {
      size_t i0 = i / 24, i1 = i / 6 % 4, i2 = i % 6;
      dref_val cd = dref_load(C.host + C.off, t[0], i1);
      bool cond = cd.nan || cd.v != 0.0;
      dref_val v = cond ? dref_load(A.host + A.off, t[1], i0 * 6 + i2)
                        : dref_load(B.host + B.off, t[2], i2);
      if (t[3] == WGC_DTYPE_F32) {
        uint32_t w = dref_enc_f32(v);
        memcpy(want + O.off + 4 * i, &w, 4);
      } else {
        uint16_t h = dref_enc16(v, t[3] == WGC_DTYPE_BF16);
        memcpy(want + O.off + 2 * i, &h, 2);
      }
    }
    /* shapes: cond [4,1] -> rows, a [3,1,6], b [6]: out [3,4,6] */
    if (C.dev && A.dev && B.dev && O.dev) {
      CHECK_OK(ctx, wgc_where_ex(ctx, C.dev + C.off, t[0], sc, 2, A.dev + A.off,
                                 t[1], sa, 3, B.dev + B.off, t[2], sb, 1,
                                 O.dev + O.off, t[3]));
      if (dev_read(ctx, (float *)(void *)got, O.dev, O.bytes / 4))
        for (size_t i = 0; i < O.bytes; i++)
          if (got[i] != want[i]) {
            CHECK(false, "where %s,%s,%s->%s: byte %zu is 0x%02x, want 0x%02x",
                  wgc_dtype_name(t[0]), wgc_dtype_name(t[1]),
                  wgc_dtype_name(t[2]), wgc_dtype_name(t[3]), i, got[i],
                  want[i]);
            break;
          }
    }
    tbuf_free(ctx, &C);
    tbuf_free(ctx, &A);
    tbuf_free(ctx, &B);
    tbuf_free(ctx, &O);
    free(x);
    free(y);
    free(want);
    free(got);
  }
}

TEST(types_where) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types where"))
      continue;
    where_cases(ctx);
    case_end();
  }
}

/* In place with the same 2-byte type on both sides, counts n: 333 and 334
 * in the tests. */
static void in_place_cases(wgc_context *ctx, size_t n) {
  for (int k = 1; k < 3; k++) {
    float *x = inputs(n, -3, 3, (unsigned)k, false);
    tbuf b = tbuf_make(ctx, TYPES[k], x, n);
    double *want = dalloc(n);
    for (size_t i = 0; i < n; i++) {
      double v = tbuf_val(&b, i);
      want[i] = ref_binary(WGC_BINARY_MUL, -v, -v);
    }
    double rel, abs_tol;
    ref_binary_bound(WGC_BINARY_MUL, &rel, &abs_tol);
    wgc_ptr p = b.dev + b.off;
    CHECK_OK(ctx,
             wgc_unary_ex(ctx, WGC_UNARY_NEG, p, TYPES[k], p, TYPES[k], n));
    /* -x is exact; (-x) * (-x) rounds once */
    CHECK_OK(ctx, wgc_binary_ex(ctx, WGC_BINARY_MUL, p, TYPES[k], p, TYPES[k],
                                p, TYPES[k], n));
    check_out(ctx, &b, want, rel, abs_tol, "in place");
    free(x);
    free(want);
    tbuf_free(ctx, &b);
  }
}

TEST(types_elementwise_in_place) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types elementwise in place"))
      continue;
    in_place_cases(ctx, 333);
    case_end();
  }
}

/* 2-byte operands from a word's start (the tests above put them 2 bytes
 * in): a 2-byte output's first word is then whole, and its last one too
 * for an even count. */
TEST(types_elementwise_word_start) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types elementwise from a word's start"))
      continue;
    size_t was = tbuf_half_offset(8);
    for (int op = 0; op < WGC_UNARY_OP_COUNT; op += 3)
      for (int c = 0; c < 9; c++)
        unary_case(ctx, (wgc_unary_op)op, false, 0, 0, TYPES[c / 3],
                   TYPES[c % 3], (size_t[]){1, 2, 37, 1000}[c % 4],
                   (unsigned)(op * 9 + c));
    for (int c = 0; c < 27; c++) {
      wgc_dtype t[3] = {TYPES[c / 9], TYPES[c / 3 % 3], TYPES[c % 3]};
      binary_case(ctx, (wgc_binary_op)(c % WGC_BINARY_OP_COUNT), t, NULL, 0,
                  NULL, 0, c % 2 ? 1500 : 40, (unsigned)c + 90);
    }
    static const size_t s1[3] = {3, 1, 5}, s2[2] = {4, 1};
    for (int c = 0; c < 27; c += 4) {
      wgc_dtype t[3] = {TYPES[c / 9], TYPES[c / 3 % 3], TYPES[c % 3]};
      binary_case(ctx, WGC_BINARY_SUB, t, s1, 3, s2, 2, 0, (unsigned)c + 200);
    }
    where_cases(ctx);
    in_place_cases(ctx, 333);
    in_place_cases(ctx, 334);
    tbuf_half_offset(was);
    case_end();
  }
}

TEST(types_elementwise_rejected) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types elementwise rejected"))
      continue;
    float init[256];
    for (int i = 0; i < 256; i++)
      init[i] = sentinel();
    wgc_ptr x = dev_from(ctx, init, 256), o = dev_from(ctx, init, 256);
    const wgc_dtype F32 = WGC_DTYPE_F32, F16 = WGC_DTYPE_F16,
                    BF16 = WGC_DTYPE_BF16;
    size_t sh[2] = {4, 8}, s1[1] = {8};
    CHECK_REJECTED(
        ctx, wgc_unary_ex(ctx, WGC_UNARY_EXP, x, WGC_DTYPE_I32, o, F32, 8),
        "wgc_unary_ex", "input_type");
    CHECK(strstr(wgc_last_error(ctx), "i32"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(
        ctx, wgc_unary_ex(ctx, WGC_UNARY_EXP, x, F16, o, WGC_DTYPE_Q8_0, 32),
        "wgc_unary_ex", "output_type");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_unary_params_ex(ctx, WGC_UNARY_CLIP, 0, 1, x,
                                       (wgc_dtype)17, o, F32, 8),
                   "wgc_unary_params_ex", "input_type");
    /* misaligned 2-byte operands, and a footprint in 2-byte units */
    CHECK_REJECTED(ctx, wgc_unary_ex(ctx, WGC_UNARY_NEG, x + 1, F16, o, F16, 8),
                   "wgc_unary_ex", "input");
    CHECK(strstr(wgc_last_error(ctx), "f16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_unary_ex(ctx, WGC_UNARY_NEG, x, F16, o + 1020, BF16, 3),
                   "wgc_unary_ex", "output");
    /* in place across types: the spans differ */
    CHECK_REJECTED(ctx, wgc_unary_ex(ctx, WGC_UNARY_NEG, x, F16, x, F32, 8),
                   "wgc_unary_ex", "output|input");
    CHECK_REJECTED(ctx,
                   wgc_binary_ex(ctx, WGC_BINARY_ADD, x, WGC_DTYPE_Q4_0, x, F32,
                                 o, F32, 32),
                   "wgc_binary_ex", "a_type");
    CHECK_REJECTED(
        ctx,
        wgc_binary_ex(ctx, WGC_BINARY_ADD, x, F32, x, WGC_DTYPE_I32, o, F32, 8),
        "wgc_binary_ex", "b_type");
    CHECK_REJECTED(
        ctx, wgc_binary_ex(ctx, WGC_BINARY_ADD, x, F32, x, F32, o + 2, F32, 8),
        "wgc_binary_ex", "out");
    CHECK_REJECTED(ctx,
                   wgc_binary_broadcast_ex(ctx, WGC_BINARY_MUL, x, F16, sh, 2,
                                           x, F16, s1, 1, o, WGC_DTYPE_Q8_0),
                   "wgc_binary_broadcast_ex", "out_type");
    CHECK_REJECTED(ctx,
                   wgc_binary_broadcast_ex(ctx, WGC_BINARY_MUL, x + 3, BF16, sh,
                                           2, x, F16, s1, 1, o, F16),
                   "wgc_binary_broadcast_ex", "a");
    CHECK_REJECTED(ctx,
                   wgc_where_ex(ctx, x, WGC_DTYPE_I32, s1, 1, x, F32, s1, 1, x,
                                F32, s1, 1, o, F32),
                   "wgc_where_ex", "cond_type");
    CHECK(strstr(wgc_last_error(ctx), "i32"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_where_ex(ctx, x, F16, s1, 1, x, F32, s1, 1, x, F32, s1,
                                1, o + 1, BF16),
                   "wgc_where_ex", "out");
    CHECK_DEVICE_EQUALS(ctx, o, init, 256, "output");
    CHECK_DEVICE_EQUALS(ctx, x, init, 256, "input");
    dev_free(ctx, x);
    dev_free(ctx, o);
    case_end();
  }
}

/* A signalling NaN chosen by wgc_where_ex keeps its bits, as wgc_cast
 * keeps them: bf16 to bf16 unchanged, and bf16 to f16 as wgc_cast gives
 * it (no float in between to quiet it). */
TEST(types_where_signalling_nan) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types where signalling NaN"))
      continue;
    const uint16_t in[4] = {0x7F89, 0xFF91, 0x3F80, 0x7FC1};
    const float one[2] = {1.0f, 1.0f};
    wgc_ptr c = dev_from(ctx, one, 2), x = dev_alloc(ctx, 8),
            o = dev_alloc(ctx, 8), k = dev_alloc(ctx, 8);
    size_t s4[1] = {4}, s1[1] = {1};
    if (c && x && o && k) {
      dev_write(ctx, x, (const float *)(const void *)in, 2);
      CHECK_OK(ctx,
               wgc_where_ex(ctx, c, WGC_DTYPE_F32, s1, 1, x, WGC_DTYPE_BF16, s4,
                            1, x, WGC_DTYPE_BF16, s4, 1, o, WGC_DTYPE_BF16));
      uint16_t got[4];
      if (dev_read(ctx, (float *)(void *)got, o, 2))
        CHECK(!memcmp(got, in, sizeof in), "bf16 bits %04x %04x %04x %04x",
              got[0], got[1], got[2], got[3]);
      CHECK_OK(ctx,
               wgc_where_ex(ctx, c, WGC_DTYPE_F32, s1, 1, x, WGC_DTYPE_BF16, s4,
                            1, x, WGC_DTYPE_BF16, s4, 1, o, WGC_DTYPE_F16));
      CHECK_OK(ctx, wgc_cast(ctx, x, WGC_DTYPE_BF16, k, WGC_DTYPE_F16, 4));
      uint16_t want[4];
      if (dev_read(ctx, (float *)(void *)got, o, 2) &&
          dev_read(ctx, (float *)(void *)want, k, 2))
        CHECK(!memcmp(got, want, sizeof want),
              "f16 bits %04x %04x, wgc_cast's %04x %04x", got[0], got[1],
              want[0], want[1]);
    }
    dev_free(ctx, c);
    dev_free(ctx, x);
    dev_free(ctx, o);
    dev_free(ctx, k);
    case_end();
  }
}
