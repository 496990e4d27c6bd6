/* The validation of every operation's arguments (API.md): a rejected call
 * returns WGC_ERR_INVALID_ARGUMENT, names the function, the parameter and
 * its value, and changes nothing. Each case runs on both backends
 * ("...[cpu]", "...[webgpu]"). */
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- validation of every operation --------------------------------------- */

/* The sanity call with the valid arguments: OK on every backend. */
static void check_valid_call(wgc_context *ctx, wgc_status s, const char *what) {
  CHECK(s == WGC_OK, "%s with valid arguments returned %s: %s", what,
        wgc_status_name(s), wgc_last_error(ctx));
}

#define REJECT(call, fn, params) CHECK_REJECTED(ctx, call, fn, params)

/* Device buffers holding a known pattern, checked unchanged at the end. */
typedef struct vbuf {
  wgc_ptr p;
  size_t n;
  float *h;
} vbuf;

static vbuf vbuf_make(wgc_context *ctx, size_t n, float base) {
  vbuf b = {0, n, falloc(n)};
  fill_ramp(b.h, n, base);
  b.p = dev_from(ctx, b.h, n);
  return b;
}

/* Frees b without a check: for outputs that valid calls have written. */
static void vbuf_drop(wgc_context *ctx, vbuf *b) {
  dev_free(ctx, b->p);
  free(b->h);
}

static void vbuf_check_free(wgc_context *ctx, vbuf *b, const char *what) {
  if (b->p)
    CHECK_DEVICE_EQUALS(ctx, b->p, b->h, b->n, what);
  vbuf_drop(ctx, b);
}

/* One operation with its device operands taken from ops (in argument order)
 * and its other arguments fixed; arg carries a desc or shape where needed. */
typedef wgc_status (*operand_call)(wgc_context *ctx, const void *arg,
                                   const wgc_ptr *ops);

typedef struct operand {
  const char *name; /* the parameter, as the error text must name it */
  bool optional;    /* 0 means "none" (conv2d's bias), so 0 is valid */
} operand;

#define MAX_OPERANDS 4

/* Each operand in turn, the others valid: one element past its exact
 * allocation, 0, an address no allocation has, and a base 2 bytes off
 * alignment are each rejected, naming that operand. */
static void check_bad_operands_at(const char *file, int line, wgc_context *ctx,
                                  const char *fn, operand_call call,
                                  const void *arg, const wgc_ptr *ops,
                                  const operand *names, size_t count,
                                  unsigned seed) {
  for (size_t i = 0; i < count; i++) {
    const struct {
      const char *what;
      wgc_ptr p;
    } bad[] = {{"one element in", at(ops[i], 1)},
               {"0", 0},
               {"a wild address", wild_address(seed + (unsigned)i)},
               {"an unaligned address", ops[i] + 2}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      if (bad[k].p == 0 && names[i].optional)
        continue;
      wgc_ptr with[MAX_OPERANDS];
      memcpy(with, ops, count * sizeof *ops);
      with[i] = bad[k].p;
      char what[96];
      snprintf(what, sizeof what, "%s with %s = %s", fn, names[i].name,
               bad[k].what);
      check_rejected_at(file, line, ctx, call(ctx, arg, with), what, fn,
                        names[i].name);
    }
  }
}
#define CHECK_BAD_OPERANDS(ctx, fn, call, arg, ops, names, seed)               \
  check_bad_operands_at(__FILE__, __LINE__, ctx, fn, call, arg, ops, names,    \
                        sizeof names / sizeof names[0], seed)

static wgc_status gemm_ops(wgc_context *ctx, const void *arg,
                           const wgc_ptr *p) {
  (void)arg; /* row-major NN, m=3 n=4 k=5, lda=6 ldb=5 ldc=6 */
  return wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 3, 4, 5, 1,
                  p[0], 6, p[1], 5, 0, p[2], 6);
}

static wgc_status conv2d_ops(wgc_context *ctx, const void *arg,
                             const wgc_ptr *p) {
  return wgc_conv2d(ctx, arg, p[0], p[1], p[2], p[3]);
}

static wgc_status attention_ops(wgc_context *ctx, const void *arg,
                                const wgc_ptr *p) {
  return wgc_attention(ctx, arg, p[0], p[1], p[2], p[3]);
}

static wgc_status reduce_ops(wgc_context *ctx, const void *arg,
                             const wgc_ptr *p) {
  return wgc_reduce(ctx, WGC_REDUCE_SUM, p[0], p[1], arg, 3, 1);
}

static wgc_status unary_ops(wgc_context *ctx, const void *arg,
                            const wgc_ptr *p) {
  (void)arg;
  return wgc_unary(ctx, WGC_UNARY_RELU, p[0], p[1], 10);
}

static wgc_status binary_ops(wgc_context *ctx, const void *arg,
                             const wgc_ptr *p) {
  (void)arg;
  return wgc_binary(ctx, WGC_BINARY_ADD, p[0], p[1], p[2], 10);
}

static wgc_status broadcast_ops(wgc_context *ctx, const void *arg,
                                const wgc_ptr *p) {
  (void)arg; /* a [3,4] + b [4] -> out [3,4] */
  static const size_t sa[2] = {3, 4}, sb[1] = {4};
  return wgc_binary_broadcast(ctx, WGC_BINARY_ADD, p[0], sa, 2, p[1], sb, 1,
                              p[2]);
}

TEST(val_gemm) {
  const wgc_layout R = WGC_ROW_MAJOR, Cm = WGC_COL_MAJOR;
  const wgc_transpose N = WGC_NO_TRANS, T = WGC_TRANS;
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_gemm arguments"))
      continue;
    /* row-major NN, m=3 n=4 k=5, lda=6 ldb=5 ldc=6, exact footprints:
     * A (3-1)*6+5 = 17, B (5-1)*5+4 = 24, C (3-1)*6+4 = 16. */
    vbuf A = vbuf_make(ctx, 17, 1), B = vbuf_make(ctx, 24, 2),
         C = vbuf_make(ctx, 16, 3);
    wgc_ptr a = A.p, b = B.p, c = C.p, g = wild_address(11);
    const char *F = "wgc_gemm";
    REJECT(wgc_gemm(ctx, (wgc_layout)7, N, N, 3, 4, 5, 1, a, 6, b, 5, 0, c, 6),
           F, "layout");
    REJECT(
        wgc_gemm(ctx, R, (wgc_transpose)3, N, 3, 4, 5, 1, a, 6, b, 5, 0, c, 6),
        F, "ta");
    REJECT(
        wgc_gemm(ctx, R, N, (wgc_transpose)99, 3, 4, 5, 1, a, 6, b, 5, 0, c, 6),
        F, "tb");
    CHECK_ERROR_VALUE(ctx, "99");
    /* Leading dimensions, row-major: lda >= k (NN), >= m (T A). */
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, 4, b, 5, 0, c, 6), F, "lda");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, 6, b, 3, 0, c, 6), F, "ldb");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, 6, b, 5, 0, c, 3), F, "ldc");
    REJECT(wgc_gemm(ctx, R, T, N, 3, 4, 5, 1, a, 2, b, 5, 0, c, 6), F, "lda");
    REJECT(wgc_gemm(ctx, R, N, T, 3, 4, 5, 1, a, 6, b, 4, 0, c, 6), F, "ldb");
    /* column-major: lda >= m (N A), ldb >= k (N B), ldc >= m. */
    REJECT(wgc_gemm(ctx, Cm, N, N, 3, 4, 5, 1, a, 2, b, 5, 0, c, 3), F, "lda");
    REJECT(wgc_gemm(ctx, Cm, N, N, 3, 4, 5, 1, a, 3, b, 4, 0, c, 3), F, "ldb");
    REJECT(wgc_gemm(ctx, Cm, N, N, 3, 4, 5, 1, a, 3, b, 5, 0, c, 2), F, "ldc");
    REJECT(wgc_gemm(ctx, Cm, T, N, 3, 4, 5, 1, a, 4, b, 5, 0, c, 3), F, "lda");
    static const operand gemm_operands[] = {
        {"a", false}, {"b", false}, {"c", false}};
    const wgc_ptr ops[] = {a, b, c};
    if (a && b && c)
      CHECK_BAD_OPERANDS(ctx, F, gemm_ops, NULL, ops, gemm_operands, 100);
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, 7, b, 5, 0, c, 6), F, "a|lda");
    /* Operands not read are validated all the same. */
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 0, 0, 6, b, 5, 1, c, 6), F, "a");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 0, a, 6, g, 5, 1, c, 6), F, "b");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 0, a, 6, b, 5, 0, at(c, 1), 6), F,
           "c");
    /* Leading dimensions and sizes whose footprints overflow 64 bits (the
     * span must not wrap around to something that fits). C sits inside a
     * larger allocation so that a wrapped write stays in bounds. */
    const size_t half = SIZE_MAX / 2, top = (size_t)1 << 63;
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, half, b, 5, 0, c, 6), F,
           "a|lda");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, top, b, 5, 0, c, 6), F,
           "a|lda");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, 6, b, top >> 1, 0, c, 6), F,
           "b|ldb");
    vbuf Big = vbuf_make(ctx, 64, 9);
    if (Big.p)
      REJECT(
          wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, 6, b, 5, 0, at(Big.p, 8), half),
          F, "c|ldc");
    vbuf_check_free(ctx, &Big, "the allocation around C");
    REJECT(wgc_gemm(ctx, R, N, N, SIZE_MAX / 4, 4, 5, 1, a, 6, b, 5, 0, c, 6),
           F, NULL);
    REJECT(wgc_gemm(ctx, Cm, N, N, 3, SIZE_MAX / 8, 5, 1, a, 3, b, 5, 0, c, 3),
           F, NULL);
    /* C is checked before the valid call writes it. */
    if (C.p)
      CHECK_DEVICE_EQUALS(ctx, C.p, C.h, C.n, "C after rejected calls");
    check_valid_call(ctx,
                     wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, 6, b, 5, 0, c, 6),
                     "wgc_gemm");
    CHECK_OK(ctx, wgc_synchronize(ctx));
    vbuf_drop(ctx, &C);
    vbuf_check_free(ctx, &A, "A");
    vbuf_check_free(ctx, &B, "B");
    case_end();
  }
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_gemm no partial writes"))
      continue;
    /* Every rejected call leaves C exactly as it was. */
    vbuf A = vbuf_make(ctx, 17, 1), B = vbuf_make(ctx, 24, 2),
         C = vbuf_make(ctx, 16, 3);
    wgc_ptr a = A.p, b = B.p, c = C.p;
    const char *F = "wgc_gemm";
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, 6, b, 5, 0, c, 3), F, "ldc");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, at(a, 1), 6, b, 5, 0, c, 6), F,
           "a");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, a, 6, at(b, 1), 5, 1, c, 6), F,
           "b");
    REJECT(wgc_gemm(ctx, (wgc_layout)7, N, N, 3, 4, 5, 1, a, 6, b, 5, 0, c, 6),
           F, "layout");
    vbuf_check_free(ctx, &A, "A");
    vbuf_check_free(ctx, &B, "B");
    vbuf_check_free(ctx, &C, "C");
    case_end();
  }
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_gemm zero sizes"))
      continue;
    wgc_ptr g = wild_address(12);
    const char *F = "wgc_gemm";
    /* Empty C: a no-op whatever the addresses, */
    CHECK_OK(ctx, wgc_gemm(ctx, R, N, N, 0, 4, 5, 1, g, 5, g, 4, 0, g, 4));
    CHECK_OK(ctx, wgc_gemm(ctx, R, N, N, 3, 0, 5, 1, 0, 5, 0, 1, 0, 0, 1));
    CHECK_OK(ctx, wgc_gemm(ctx, Cm, T, T, 0, 0, 0, 1, g + 2, 1, 0, 1, 0, g, 1));
    /* but leading dimensions and enums are still checked, as in BLAS:
     * ld >= max(1, rows as stored). */
    REJECT(wgc_gemm(ctx, Cm, N, N, 0, 4, 5, 1, g, 0, g, 5, 0, g, 1), F, "lda");
    REJECT(wgc_gemm(ctx, Cm, N, N, 0, 4, 5, 1, g, 1, g, 5, 0, g, 0), F, "ldc");
    REJECT(wgc_gemm(ctx, R, N, N, 0, 4, 5, 1, g, 4, g, 4, 0, g, 4), F, "lda");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 0, 5, 1, g, 5, g, 0, 0, g, 1), F, "ldb");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 0, 5, 1, g, 5, g, 1, 0, g, 0), F, "ldc");
    REJECT(wgc_gemm(ctx, R, N, N, 0, 4, 0, 1, g, 0, g, 4, 0, g, 4), F, "lda");
    REJECT(wgc_gemm(ctx, (wgc_layout)7, N, N, 0, 4, 5, 1, g, 5, g, 5, 0, g, 5),
           F, "layout");
    REJECT(
        wgc_gemm(ctx, R, (wgc_transpose)5, N, 0, 4, 5, 1, g, 5, g, 5, 0, g, 5),
        F, "ta");
    case_end();
  }
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_gemm overlap"))
      continue;
    /* One allocation: A at 0 (17 elements), C placed around its end. */
    vbuf M = vbuf_make(ctx, 64, 1), B = vbuf_make(ctx, 30, 2);
    wgc_ptr m = M.p, b = B.p;
    const char *F = "wgc_gemm";
    /* C starting on A's last element overlaps it. */
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, m, 6, b, 5, 0, at(m, 16), 6), F,
           "c|a");
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, at(m, 10), 6, b, 5, 0, m, 6), F,
           "c|a");
    /* C exactly over A (same shape): GEMM is never in place. */
    REJECT(wgc_gemm(ctx, R, N, N, 3, 5, 5, 1, m, 6, b, 5, 0, m, 6), F, "c|a");
    /* C over B. */
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, m, 6, b, 5, 0, at(b, 2), 6), F,
           "c|b");
    /* Spans that interleave (lda > cols) still count as overlapping. */
    REJECT(wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, m, 12, b, 5, 0, at(m, 6), 12), F,
           "c|a");
    vbuf_check_free(ctx, &M, "the shared allocation");
    vbuf_check_free(ctx, &B, "B");
    /* C right after A's last element touches but does not overlap. */
    vbuf M2 = vbuf_make(ctx, 64, 1), B2 = vbuf_make(ctx, 24, 2);
    if (M2.p && B2.p)
      check_valid_call(ctx,
                       wgc_gemm(ctx, R, N, N, 3, 4, 5, 1, M2.p, 6, B2.p, 5, 0,
                                at(M2.p, 17), 6),
                       "wgc_gemm with C adjacent to A");
    vbuf_drop(ctx, &M2);
    vbuf_drop(ctx, &B2);
    case_end();
  }
}

TEST(val_gemm_batched) {
  const wgc_layout R = WGC_ROW_MAJOR;
  const wgc_transpose N = WGC_NO_TRANS;
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_gemm_batched"))
      continue;
    /* row NN m=3 n=4 k=5 tight: spans A 15, B 20, C 12; 3 batches with
     * strides 15, 20, 12: exact allocations 45, 60, 36. */
    vbuf A = vbuf_make(ctx, 45, 1), B = vbuf_make(ctx, 60, 2),
         C = vbuf_make(ctx, 36, 3);
    wgc_ptr a = A.p, b = B.p, c = C.p, g = wild_address(13);
    const char *F = "wgc_gemm_batched";
#define GB(a_, lda_, sa_, b_, ldb_, sb_, c_, ldc_, sc_, cnt_)                  \
  wgc_gemm_batched(ctx, R, N, N, 3, 4, 5, 1, a_, lda_, sa_, b_, ldb_, sb_, 0,  \
                   c_, ldc_, sc_, cnt_)
    REJECT(GB(a, 5, 15, b, 4, 20, c, 4, 0, 3), F, "stride_c");
    REJECT(GB(a, 5, 15, b, 4, 20, c, 4, 11, 3), F, "stride_c");
    REJECT(GB(a, 5, 16, b, 4, 20, c, 4, 12, 3), F, "a|stride_a|batch_count");
    REJECT(GB(a, 5, 15, b, 4, 21, c, 4, 12, 3), F, "b|stride_b|batch_count");
    REJECT(GB(a, 5, 15, b, 4, 20, c, 4, 13, 3), F, "c|stride_c|batch_count");
    REJECT(GB(a, 5, 15, b, 4, 20, c, 4, 12, 4), F,
           "a|b|c|batch_count|stride_a|stride_b|stride_c");
    REJECT(GB(a, 5, SIZE_MAX / 2, b, 4, 20, c, 4, 12, 3), F,
           "a|stride_a|batch_count");
    REJECT(GB(a, 4, 15, b, 4, 20, c, 4, 12, 3), F, "lda");
    REJECT(GB(a, 5, 15, b, 4, 20, c, 3, 12, 3), F, "ldc");
    REJECT(GB(g, 5, 15, b, 4, 20, c, 4, 12, 3), F, "a");
    REJECT(GB(a, 5, 15, b, 4, 20, 0, 4, 12, 3), F, "c");
    /* C batches over an input. */
    REJECT(GB(a, 5, 15, b, 4, 20, at(a, 20), 4, 12, 2), F, "c|a");
    REJECT(GB(a, 5, 15, b, 4, 0, at(b, 8), 4, 12, 1), F, "c|b");
    vbuf_check_free(ctx, &C, "C after rejected calls");
    C = vbuf_make(ctx, 36, 3);
    c = C.p;
    /* Zero batches: a no-op; leading dimensions still checked. */
    CHECK_OK(ctx, GB(g, 5, 15, 0, 4, 20, g, 4, 0, 0));
    REJECT(GB(g, 4, 15, 0, 4, 20, g, 4, 0, 0), F, "lda");
    /* Shared operands and a single batch with stride_c 0 are fine. */
    check_valid_call(ctx, GB(a, 5, 0, b, 4, 0, c, 4, 12, 3), "shared A and B");
    check_valid_call(ctx, GB(a, 5, 15, b, 4, 20, c, 4, 0, 1),
                     "one batch with stride_c 0");
    check_valid_call(ctx, GB(a, 5, 15, b, 4, 20, c, 4, 12, 3), "valid");
#undef GB
    CHECK_OK(ctx, wgc_synchronize(ctx));
    vbuf_drop(ctx, &C);
    vbuf_check_free(ctx, &A, "A");
    vbuf_check_free(ctx, &B, "B");
    case_end();
  }
}

TEST(val_conv2d_output_size) {
  if (!case_begin("val_conv2d_output_size"))
    return;
  const char *F = "wgc_conv2d_output_size";
  size_t p = 0, q = 0;
  wgc_conv2d_desc d = {.n = 1,
                       .c = 2,
                       .h = 5,
                       .w = 7,
                       .k = 3,
                       .r = 3,
                       .s = 3,
                       .pad_h = 1,
                       .pad_w = 1};
  CHECK_OK(NULL, wgc_conv2d_output_size(&d, &p, &q));
  CHECK(p == 5 && q == 7, "p=%zu q=%zu, want 5 7", p, q);
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(NULL, &p, &q), F, "d");
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(&d, NULL, &q), F, "p");
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(&d, &p, NULL), F, "q");
  char saved[512];
  snprintf(saved, sizeof saved, "%s", wgc_last_error(NULL));
  /* Values: strides, dilations, asymmetric padding; 0 means 1. */
  static const struct {
    wgc_conv2d_desc d;
    size_t p, q;
  } cases[] = {
      {{1, 3, 10, 10, 5, 3, 3, 2, 2, 0, 0, 1, 1, 1, 0, 0, 0, 0}, 4, 4},
      {{1, 3, 13, 17, 4, 3, 2, 2, 3, 1, 0, 1, 2, 1, 0, 0, 0, 0}, 7, 5},
      {{1, 2, 12, 12, 3, 3, 3, 1, 1, 2, 2, 2, 2, 1, 0, 0, 0, 0}, 12, 12},
      {{1, 3, 6, 7, 2, 3, 3, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0}, 6, 7},
      {{1, 2, 2, 2, 3, 4, 4, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, 1, 1},
      {{1, 1, 1, 1, 1, 1, 1, 5, 5, 0, 0, 9, 9, 1, 0, 0, 0, 0}, 1, 1},
      {{1, 4, 9, 8, 6, 3, 3, 4, 3, 1, 2, 1, 1, 2, 0, 0, 0, 0}, 3, 4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    p = q = 12345;
    CHECK_OK(NULL, wgc_conv2d_output_size(&cases[i].d, &p, &q));
    CHECK(p == cases[i].p && q == cases[i].q,
          "desc %zu: p=%zu q=%zu, want %zu %zu", i, p, q, cases[i].p,
          cases[i].q);
  }
  CHECK(strcmp(saved, wgc_last_error(NULL)) == 0,
        "a successful wgc_conv2d_output_size changed the error to \"%s\"",
        wgc_last_error(NULL));
  /* Invalid descs. */
  wgc_conv2d_desc bad = d;
  bad.r = 0;
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(&bad, &p, &q), F, "r");
  bad = d;
  bad.s = 0;
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(&bad, &p, &q), F, "s");
  bad = d;
  bad.groups = 3; /* divides k = 3, not c = 2 */
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(&bad, &p, &q), F, "groups|c");
  CHECK_ERROR_VALUE(NULL, "3");
  bad = d;
  bad.groups = 2; /* divides c = 2, not k = 3 */
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(&bad, &p, &q), F, "groups|k");
  bad = d;
  bad.pad_h = 0;
  bad.r = 6; /* 5 < 6 */
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(&bad, &p, &q), F,
                 "r|h|pad_h|dilation_h");
  bad = d;
  bad.pad_w = 0;
  bad.dilation_w = 4; /* 4*2+1 = 9 > 7 */
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(&bad, &p, &q), F,
                 "s|w|pad_w|dilation_w");
  bad = d;
  bad.h = SIZE_MAX / 2;
  bad.pad_h = SIZE_MAX / 2;
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(&bad, &p, &q), F, NULL);
  bad = d;
  bad.r = SIZE_MAX / 2 + 2;
  bad.dilation_h = 4;
  CHECK_REJECTED(NULL, wgc_conv2d_output_size(&bad, &p, &q), F, NULL);
  case_end();
}

TEST(val_conv2d) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_conv2d"))
      continue;
    /* n=1 c=2 h=w=5 k=3 3x3 pad 1: input 50, filter 54, bias 3, out 75. */
    const wgc_conv2d_desc d = {.n = 1,
                               .c = 2,
                               .h = 5,
                               .w = 5,
                               .k = 3,
                               .r = 3,
                               .s = 3,
                               .pad_h = 1,
                               .pad_w = 1};
    vbuf X = vbuf_make(ctx, 50, 1), W = vbuf_make(ctx, 54, 2),
         Bs = vbuf_make(ctx, 3, 3), Y = vbuf_make(ctx, 75, 4);
    wgc_ptr x = X.p, w = W.p, bs = Bs.p, y = Y.p, g = wild_address(14);
    const char *F = "wgc_conv2d";
    wgc_conv2d_desc bad = d;
    bad.r = 0;
    REJECT(wgc_conv2d(ctx, &bad, x, w, bs, y), F, "r");
    bad = d;
    bad.s = 0;
    REJECT(wgc_conv2d(ctx, &bad, x, w, bs, y), F, "s");
    bad = d;
    bad.groups = 3;
    REJECT(wgc_conv2d(ctx, &bad, x, w, bs, y), F, "groups|c");
    bad = d;
    bad.groups = 2;
    REJECT(wgc_conv2d(ctx, &bad, x, w, bs, y), F, "groups|k");
    bad = d;
    bad.pad_h = 0;
    bad.r = 6;
    REJECT(wgc_conv2d(ctx, &bad, x, w, bs, y), F, "r|h|pad_h|dilation_h");
    bad = d;
    bad.pad_w = 0;
    bad.dilation_w = 3; /* 3*2+1 = 7 > 5 */
    REJECT(wgc_conv2d(ctx, &bad, x, w, bs, y), F, "s|w|pad_w|dilation_w");
    static const operand conv_operands[] = {
        {"input", false}, {"filter", false}, {"bias", true}, {"output", false}};
    const wgc_ptr ops[] = {x, w, bs, y};
    if (x && w && bs && y)
      CHECK_BAD_OPERANDS(ctx, F, conv2d_ops, &d, ops, conv_operands, 110);
    /* A desc whose footprint overflows. */
    bad = d;
    bad.h = SIZE_MAX / 4;
    REJECT(wgc_conv2d(ctx, &bad, x, w, bs, y), F, NULL);
    /* Empty output: no-op whatever the addresses, desc still checked. */
    bad = d;
    bad.n = 0;
    CHECK_OK(ctx, wgc_conv2d(ctx, &bad, g, 0, g, g));
    bad.r = 0;
    REJECT(wgc_conv2d(ctx, &bad, g, 0, g, g), F, "r");
    bad = d;
    bad.k = 0;
    CHECK_OK(ctx, wgc_conv2d(ctx, &bad, g, g, 0, 0));
    bad.n = 0;
    bad.h = 1;
    bad.pad_h = 0; /* 1 < 3: invalid even with nothing to compute */
    REJECT(wgc_conv2d(ctx, &bad, g, g, 0, 0), F, "r|h|pad_h|dilation_h");
    /* The output is checked before the valid calls write it. */
    if (Y.p)
      CHECK_DEVICE_EQUALS(ctx, Y.p, Y.h, Y.n, "output after rejected calls");
    check_valid_call(ctx, wgc_conv2d(ctx, &d, x, w, 0, y), "no bias");
    check_valid_call(ctx, wgc_conv2d(ctx, &d, x, w, bs, y), "valid");
    CHECK_OK(ctx, wgc_synchronize(ctx));
    vbuf_drop(ctx, &Y);
    vbuf_check_free(ctx, &X, "input");
    vbuf_check_free(ctx, &W, "filter");
    vbuf_check_free(ctx, &Bs, "bias");
    case_end();
  }
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_conv2d overlap and no partial writes"))
      continue;
    const wgc_conv2d_desc d = {.n = 1,
                               .c = 2,
                               .h = 5,
                               .w = 5,
                               .k = 3,
                               .r = 3,
                               .s = 3,
                               .pad_h = 1,
                               .pad_w = 1};
    vbuf M = vbuf_make(ctx, 200, 1), Y = vbuf_make(ctx, 75, 4);
    wgc_ptr m = M.p, y = Y.p;
    const char *F = "wgc_conv2d";
    /* input [0,50) filter [60,114) bias [120,123) in one allocation. */
    REJECT(wgc_conv2d(ctx, &d, m, at(m, 60), at(m, 120), at(m, 40)), F,
           "output|input|filter");
    REJECT(wgc_conv2d(ctx, &d, m, at(m, 60), at(m, 120), at(m, 100)), F,
           "output|filter|bias");
    REJECT(wgc_conv2d(ctx, &d, m, at(m, 60), at(m, 120), at(m, 48)), F,
           "output|input|filter|bias");
    /* output [114,189) holds only the bias [125,128). */
    REJECT(wgc_conv2d(ctx, &d, m, at(m, 60), at(m, 125), at(m, 114)), F,
           "output|bias");
    /* Rejections that would have written y. */
    wgc_conv2d_desc bad = d;
    bad.groups = 2;
    REJECT(wgc_conv2d(ctx, &bad, m, at(m, 60), 0, y), F, "groups|k");
    REJECT(wgc_conv2d(ctx, &d, m, at(m, 60), at(m, 198), y), F, "bias");
    vbuf_check_free(ctx, &M, "the shared allocation");
    vbuf_check_free(ctx, &Y, "output");
    case_end();
  }
}

TEST(val_attention) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_attention"))
      continue;
    /* batch 1, heads 4, heads_kv 2, seq_q 3, seq_kv 5, head_dim 4:
     * q and o 48 elements, k and v 40. */
    const wgc_attention_desc d = {.batch = 1,
                                  .heads = 4,
                                  .heads_kv = 2,
                                  .seq_q = 3,
                                  .seq_kv = 5,
                                  .head_dim = 4,
                                  .scale = 0.5f};
    vbuf Q = vbuf_make(ctx, 48, 1), K = vbuf_make(ctx, 40, 2),
         V = vbuf_make(ctx, 40, 3), O = vbuf_make(ctx, 48, 4);
    wgc_ptr q = Q.p, k = K.p, v = V.p, o = O.p, g = wild_address(15);
    const char *F = "wgc_attention";
    wgc_attention_desc bad = d;
    bad.heads_kv = 3;
    REJECT(wgc_attention(ctx, &bad, q, k, v, o), F, "heads_kv|heads");
    bad.heads_kv = 8;
    REJECT(wgc_attention(ctx, &bad, q, k, v, o), F, "heads_kv|heads");
    const float scales[] = {0.0f, -0.0f, -1.0f, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) {
      bad = d;
      bad.scale = scales[i];
      REJECT(wgc_attention(ctx, &bad, q, k, v, o), F, "scale");
    }
    bad = d;
    bad.causal = (wgc_causal)3;
    REJECT(wgc_attention(ctx, &bad, q, k, v, o), F, "causal");
    bad.causal = (wgc_causal)99;
    REJECT(wgc_attention(ctx, &bad, q, k, v, o), F, "causal");
    CHECK_ERROR_VALUE(ctx, "99");
    static const operand attention_operands[] = {
        {"q", false}, {"k", false}, {"v", false}, {"o", false}};
    const wgc_ptr ops[] = {q, k, v, o};
    if (q && k && v && o)
      CHECK_BAD_OPERANDS(ctx, F, attention_ops, &d, ops, attention_operands,
                         120);
    /* K and V of 2 heads are too small when heads_kv means heads (4). */
    bad = d;
    bad.heads_kv = 0;
    REJECT(wgc_attention(ctx, &bad, q, k, v, o), F, "k|v");
    bad = d;
    bad.seq_q = SIZE_MAX / 8;
    REJECT(wgc_attention(ctx, &bad, q, k, v, o), F, NULL);
    /* Output over an input: never in place. */
    REJECT(wgc_attention(ctx, &d, q, k, v, q), F, "o|q");
    /* Empty output: a no-op whatever the addresses; the desc is checked. */
    bad = d;
    bad.batch = 0;
    CHECK_OK(ctx, wgc_attention(ctx, &bad, g, 0, g, 0));
    bad.scale = NAN;
    REJECT(wgc_attention(ctx, &bad, g, 0, g, 0), F, "scale");
    bad = d;
    bad.seq_q = 0;
    CHECK_OK(ctx, wgc_attention(ctx, &bad, 0, 0, 0, 0));
    bad.heads_kv = 3;
    REJECT(wgc_attention(ctx, &bad, 0, 0, 0, 0), F, "heads_kv|heads");
    bad = d;
    bad.head_dim = 0;
    CHECK_OK(ctx, wgc_attention(ctx, &bad, g, g, g, g));
    bad = d;
    bad.heads = 0; /* 0 % 2 == 0 */
    CHECK_OK(ctx, wgc_attention(ctx, &bad, g, g, g, g));
    bad.heads_kv = 0; /* 0 % 0: must not crash */
    wgc_status s = wgc_attention(ctx, &bad, g, g, g, g);
    CHECK(s == WGC_OK || s == WGC_ERR_INVALID_ARGUMENT,
          "heads = heads_kv = 0 returned %s", wgc_status_name(s));
    vbuf_check_free(ctx, &O, "o after rejected calls");
    O = vbuf_make(ctx, 48, 4);
    check_valid_call(ctx, wgc_attention(ctx, &d, q, k, v, O.p), "valid");
    bad = d;
    bad.seq_kv = 0; /* zeros; k and v hold nothing */
    check_valid_call(ctx, wgc_attention(ctx, &bad, q, k, v, O.p), "seq_kv = 0");
    CHECK_OK(ctx, wgc_synchronize(ctx));
    vbuf_drop(ctx, &O);
    vbuf_check_free(ctx, &Q, "q");
    vbuf_check_free(ctx, &K, "k");
    vbuf_check_free(ctx, &V, "v");
    case_end();
  }
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_attention overlap"))
      continue;
    const wgc_attention_desc d = {.batch = 1,
                                  .heads = 4,
                                  .heads_kv = 2,
                                  .seq_q = 3,
                                  .seq_kv = 5,
                                  .head_dim = 4,
                                  .scale = 0.5f};
    /* q [0,48) k [50,90) v [90,130) in one allocation. */
    vbuf M = vbuf_make(ctx, 200, 1);
    wgc_ptr m = M.p;
    const char *F = "wgc_attention";
    REJECT(wgc_attention(ctx, &d, m, at(m, 50), at(m, 90), at(m, 40)), F,
           "o|q|k");
    REJECT(wgc_attention(ctx, &d, m, at(m, 50), at(m, 90), at(m, 89)), F,
           "o|k|v");
    REJECT(wgc_attention(ctx, &d, m, at(m, 50), at(m, 90), at(m, 129)), F,
           "o|v");
    vbuf_check_free(ctx, &M, "the shared allocation");
    case_end();
  }
}

TEST(val_reduce) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_reduce"))
      continue;
    const size_t shape[9] = {3, 4, 5, 1, 1, 1, 1, 1, 1};
    vbuf X = vbuf_make(ctx, 60, 1), Y = vbuf_make(ctx, 15, 2);
    wgc_ptr x = X.p, y = Y.p, g = wild_address(16);
    const wgc_reduce_op SUM = WGC_REDUCE_SUM;
    const char *F = "wgc_reduce";
    REJECT(wgc_reduce(ctx, SUM, x, y, shape, 0, 0), F, "rank");
    REJECT(wgc_reduce(ctx, SUM, x, y, shape, 9, 1), F, "rank");
    CHECK_ERROR_VALUE(ctx, "9");
    REJECT(wgc_reduce(ctx, SUM, x, y, shape, 3, 3), F, "axis");
    REJECT(wgc_reduce(ctx, SUM, x, y, shape, 3, 99), F, "axis");
    CHECK_ERROR_VALUE(ctx, "99");
    REJECT(
        wgc_reduce(ctx, (wgc_reduce_op)WGC_REDUCE_OP_COUNT, x, y, shape, 3, 1),
        F, "op");
    REJECT(wgc_reduce(ctx, (wgc_reduce_op)99, x, y, shape, 3, 1), F, "op");
    CHECK_ERROR_VALUE(ctx, "99");
    static const operand reduce_operands[] = {{"input", false},
                                              {"output", false}};
    const wgc_ptr ops[] = {x, y};
    if (x && y)
      CHECK_BAD_OPERANDS(ctx, F, reduce_ops, shape, ops, reduce_operands, 130);
    REJECT(wgc_reduce(ctx, SUM, x, y + 1, shape, 3, 1), F, "output");
    /* MEAN, MAX, MIN over an empty axis have no answer. */
    const size_t empty_axis[3] = {3, 0, 5};
    REJECT(wgc_reduce(ctx, WGC_REDUCE_MEAN, x, y, empty_axis, 3, 1), F,
           "axis|shape|op");
    REJECT(wgc_reduce(ctx, WGC_REDUCE_MAX, x, y, empty_axis, 3, 1), F,
           "axis|shape|op");
    REJECT(wgc_reduce(ctx, WGC_REDUCE_MIN, x, y, empty_axis, 3, 1), F,
           "axis|shape|op");
    const size_t huge[2] = {SIZE_MAX / 2, 4};
    REJECT(wgc_reduce(ctx, SUM, x, y, huge, 2, 1), F, NULL);
    vbuf_check_free(ctx, &Y, "output after rejected calls");
    Y = vbuf_make(ctx, 15, 2);
    /* Empty output: a no-op whatever the addresses (MAX over an empty axis
     * too: the zero-size rule comes first); rank and axis still checked. */
    const size_t empty_out[9] = {0, 4, 5, 1, 1, 1, 1, 1, 1},
                 both[3] = {3, 0, 0};
    CHECK_OK(ctx, wgc_reduce(ctx, SUM, g, 0, empty_out, 3, 1));
    CHECK_OK(ctx, wgc_reduce(ctx, WGC_REDUCE_MAX, g, g, both, 3, 1));
    REJECT(wgc_reduce(ctx, SUM, g, 0, empty_out, 3, 3), F, "axis");
    REJECT(wgc_reduce(ctx, SUM, g, 0, empty_out, 9, 1), F, "rank");
    /* SUM over an empty axis is zeros. */
    check_valid_call(ctx, wgc_reduce(ctx, SUM, x, Y.p, empty_axis, 3, 1),
                     "SUM over an empty axis");
    check_valid_call(ctx, wgc_reduce(ctx, SUM, x, Y.p, shape, 3, 1), "valid");
    check_valid_call(ctx, wgc_reduce(ctx, SUM, x, Y.p, shape, 8, 2), "rank 8");
    CHECK_OK(ctx, wgc_synchronize(ctx));
    vbuf_drop(ctx, &Y);
    vbuf_check_free(ctx, &X, "input");
    case_end();
  }
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_reduce overlap"))
      continue;
    vbuf M = vbuf_make(ctx, 100, 1);
    wgc_ptr m = M.p;
    const char *F = "wgc_reduce";
    const size_t shape[3] = {3, 4, 5}, ones[3] = {3, 1, 5};
    REJECT(wgc_reduce(ctx, WGC_REDUCE_SUM, m, at(m, 50), shape, 3, 1), F,
           "output|input");
    REJECT(wgc_reduce(ctx, WGC_REDUCE_SUM, at(m, 10), m, shape, 3, 1), F,
           "output|input");
    /* Not element-wise: even a length-1 axis may not reduce in place. */
    REJECT(wgc_reduce(ctx, WGC_REDUCE_MAX, m, m, ones, 3, 1), F,
           "output|input");
    vbuf_check_free(ctx, &M, "the shared allocation");
    case_end();
  }
}

TEST(val_unary) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_unary"))
      continue;
    vbuf X = vbuf_make(ctx, 10, 1), Y = vbuf_make(ctx, 10, 2),
         M = vbuf_make(ctx, 20, 3);
    wgc_ptr x = X.p, y = Y.p, m = M.p, g = wild_address(17);
    const wgc_unary_op OP = WGC_UNARY_RELU;
    const char *F = "wgc_unary";
    REJECT(wgc_unary(ctx, (wgc_unary_op)WGC_UNARY_OP_COUNT, x, y, 10), F, "op");
    REJECT(wgc_unary(ctx, (wgc_unary_op)99, x, y, 10), F, "op");
    CHECK_ERROR_VALUE(ctx, "99");
    static const operand unary_operands[] = {{"input", false},
                                             {"output", false}};
    const wgc_ptr ops[] = {x, y};
    if (x && y)
      CHECK_BAD_OPERANDS(ctx, F, unary_ops, NULL, ops, unary_operands, 140);
    REJECT(wgc_unary(ctx, OP, x, y, 11), F, "input|output|n");
    REJECT(wgc_unary(ctx, OP, x + 2, y, 4), F, "input");
    REJECT(wgc_unary(ctx, OP, x, y, SIZE_MAX / 2), F, NULL);
    /* Partial overlap either way. */
    REJECT(wgc_unary(ctx, OP, m, at(m, 5), 10), F, "output|input");
    REJECT(wgc_unary(ctx, OP, at(m, 5), m, 10), F, "output|input");
    REJECT(wgc_unary(ctx, OP, m, at(m, 9), 10), F, "output|input");
    /* n == 0: a no-op whatever the addresses. */
    CHECK_OK(ctx, wgc_unary(ctx, OP, g, 0, 0));
    vbuf_check_free(ctx, &Y, "output");
    vbuf_check_free(ctx, &M, "the shared allocation");
    /* Exactly in place, and adjacent ranges, are fine. */
    M = vbuf_make(ctx, 20, -3);
    check_valid_call(ctx, wgc_unary(ctx, OP, M.p, M.p, 20), "in place");
    check_valid_call(ctx, wgc_unary(ctx, OP, M.p, at(M.p, 10), 10), "adjacent");
    CHECK_OK(ctx, wgc_synchronize(ctx));
    vbuf_drop(ctx, &M);
    vbuf_check_free(ctx, &X, "input");
    case_end();
  }
}

TEST(val_binary) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_binary"))
      continue;
    vbuf A = vbuf_make(ctx, 10, 1), B = vbuf_make(ctx, 10, 2),
         Y = vbuf_make(ctx, 10, 3), M = vbuf_make(ctx, 30, 4);
    wgc_ptr a = A.p, b = B.p, y = Y.p, m = M.p, g = wild_address(18);
    const wgc_binary_op OP = WGC_BINARY_ADD;
    const char *F = "wgc_binary";
    REJECT(wgc_binary(ctx, (wgc_binary_op)7, a, b, y, 10), F, "op");
    REJECT(wgc_binary(ctx, (wgc_binary_op)99, a, b, y, 10), F, "op");
    CHECK_ERROR_VALUE(ctx, "99");
    static const operand binary_operands[] = {
        {"a", false}, {"b", false}, {"out", false}};
    const wgc_ptr ops[] = {a, b, y};
    if (a && b && y)
      CHECK_BAD_OPERANDS(ctx, F, binary_ops, NULL, ops, binary_operands, 150);
    REJECT(wgc_binary(ctx, OP, a, b, y + 2, 4), F, "out");
    REJECT(wgc_binary(ctx, OP, a, b, y, SIZE_MAX / 2), F, NULL);
    /* Partial overlap of out with a or with b. */
    REJECT(wgc_binary(ctx, OP, m, at(m, 20), at(m, 5), 10), F, "out|a");
    REJECT(wgc_binary(ctx, OP, at(m, 20), m, at(m, 5), 10), F, "out|b");
    REJECT(wgc_binary(ctx, OP, m, at(m, 10), at(m, 19), 10), F, "out|b");
    CHECK_OK(ctx, wgc_binary(ctx, OP, g, 0, g, 0));
    vbuf_check_free(ctx, &Y, "out");
    vbuf_check_free(ctx, &M, "the shared allocation");
    M = vbuf_make(ctx, 30, 4);
    /* Exactly in place over a or b; a and b may be the same. */
    check_valid_call(ctx, wgc_binary(ctx, OP, M.p, at(M.p, 10), M.p, 10),
                     "out == a");
    check_valid_call(ctx,
                     wgc_binary(ctx, OP, M.p, at(M.p, 10), at(M.p, 10), 10),
                     "out == b");
    check_valid_call(ctx, wgc_binary(ctx, OP, M.p, M.p, at(M.p, 20), 10),
                     "a == b");
    CHECK_OK(ctx, wgc_synchronize(ctx));
    vbuf_drop(ctx, &M);
    vbuf_check_free(ctx, &A, "a");
    vbuf_check_free(ctx, &B, "b");
    case_end();
  }
}

TEST(val_broadcast) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "val_binary_broadcast"))
      continue;
    /* a [3,4] + b [4] -> out [3,4]. */
    vbuf A = vbuf_make(ctx, 12, 1), B = vbuf_make(ctx, 4, 2),
         Y = vbuf_make(ctx, 12, 3), M = vbuf_make(ctx, 40, 4);
    wgc_ptr a = A.p, b = B.p, y = Y.p, m = M.p, g = wild_address(19);
    const size_t sa[9] = {3, 4, 1, 1, 1, 1, 1, 1, 1},
                 sb[9] = {4, 1, 1, 1, 1, 1, 1, 1, 1};
    const size_t sb8[8] = {1, 4, 1, 1, 1, 1, 1, 1};
    const size_t s5[1] = {5}, s24[2] = {2, 4}, s14[2] = {1, 4}, s31[2] = {3, 1},
                 s04[2] = {0, 4}, s0[1] = {0}, s1[1] = {1};
    const wgc_binary_op OP = WGC_BINARY_ADD;
    const char *F = "wgc_binary_broadcast";
#define BB(op_, a_, sa_, ra_, b_, sb_, rb_, out_)                              \
  wgc_binary_broadcast(ctx, op_, a_, sa_, ra_, b_, sb_, rb_, out_)
    REJECT(BB((wgc_binary_op)99, a, sa, 2, b, sb, 1, y), F, "op");
    REJECT(BB(OP, a, sa, 9, b, sb, 1, y), F, "rank_a");
    CHECK_ERROR_VALUE(ctx, "9");
    REJECT(BB(OP, a, sa, 2, b, sb, 9, y), F, "rank_b");
    REJECT(BB(OP, a, sa, 2, b, s5, 1, y), F, "shape_b|shape_a");
    REJECT(BB(OP, a, sa, 2, b, s24, 2, y), F, "shape_b|shape_a");
    static const operand broadcast_operands[] = {
        {"a", false}, {"b", false}, {"out", false}};
    const wgc_ptr ops[] = {a, b, y};
    if (a && b && y)
      CHECK_BAD_OPERANDS(ctx, F, broadcast_ops, NULL, ops, broadcast_operands,
                         160);
    /* Overlap: in place only over an input of the output's shape. */
    REJECT(BB(OP, m, sa, 2, at(m, 20), sb, 1, at(m, 6)), F, "out|a");
    REJECT(BB(OP, m, sa, 2, at(m, 20), sb, 1, at(m, 18)), F, "out|b");
    REJECT(BB(OP, m, sa, 2, at(m, 20), sb, 1, at(m, 20)), F, "out|b");
    REJECT(BB(OP, m, s14, 2, at(m, 20), s31, 2, m), F, "out|a");
    /* Empty output: a no-op whatever the addresses; shapes still checked. */
    CHECK_OK(ctx, BB(OP, g, s04, 2, 0, sb, 1, g));
    CHECK_OK(ctx, BB(OP, g, s0, 1, g, s1, 1, 0));
    REJECT(BB(OP, g, s04, 2, g, sa, 2, g), F, "shape_b|shape_a");
    vbuf_check_free(ctx, &Y, "out");
    vbuf_check_free(ctx, &M, "the shared allocation");
    M = vbuf_make(ctx, 40, 4);
    check_valid_call(ctx, BB(OP, M.p, sa, 2, at(M.p, 20), sb, 1, M.p),
                     "out == a of the output's shape");
    /* Rank 0 (a scalar) with a NULL shape: a zero-size host array. */
    check_valid_call(ctx, BB(OP, a, NULL, 0, b, sb, 1, at(M.p, 30)),
                     "scalar a with shape_a NULL");
    check_valid_call(ctx, BB(OP, a, sa, 8, b, sb8, 8, at(M.p, 24)), "rank 8");
#undef BB
    CHECK_OK(ctx, wgc_synchronize(ctx));
    vbuf_drop(ctx, &M);
    vbuf_check_free(ctx, &A, "a");
    vbuf_check_free(ctx, &B, "b");
    case_end();
  }
}
