/* GEMM entry points: CBLAS arguments to the one strided form. */
#include "internal.h"

#include "validate.h"

#include <math.h>

/* The browser build: wgc.js writes wgc_gemm_epilogue into wasm memory field by
 * field (4-byte fields, 8-byte device addresses, in declaration order). */
#if UINTPTR_MAX == UINT32_MAX
#include <stddef.h>
_Static_assert(offsetof(wgc_gemm_epilogue, bias) == 0 &&
                   offsetof(wgc_gemm_epilogue, bias_kind) == 8 &&
                   offsetof(wgc_gemm_epilogue, activation) == 12 &&
                   sizeof(wgc_gemm_epilogue) == 16,
               "wgc.js writes wgc_gemm_epilogue as an 8-byte address and 2 "
               "words");
#endif

static size_t max1(size_t x) { return x ? x : 1; }

/* A rows x cols strided matrix, repeated batch times stride elements
 * apart; byte sizes saturate so that huge ones fail the footprint check. */
static wgc_operand matrix_operand(const char *param, wgc_ptr addr, size_t rows,
                                  size_t cols, size_t rs, size_t cs,
                                  size_t stride, size_t batch) {
  return (wgc_operand){.param = param,
                       .addr = addr,
                       .bytes =
                           wgc_sat_mul(4, wgc_matrix_span(rows, cols, rs, cs)),
                       .stride = wgc_sat_mul(4, stride),
                       .repeat = batch};
}

static wgc_status
gemm_common(wgc_context *ctx, const char *fn, wgc_layout layout,
            wgc_transpose ta, wgc_transpose tb, size_t m, size_t n, size_t k,
            float alpha, wgc_ptr a, size_t lda, size_t stride_a, wgc_ptr b,
            size_t ldb, size_t stride_b, float beta, wgc_ptr c, size_t ldc,
            size_t stride_c, size_t batch, const wgc_gemm_epilogue *ep) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if ((unsigned)layout > WGC_ROW_MAJOR)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: layout %d is not a wgc_layout", fn, (int)layout);
  if ((unsigned)ta > WGC_CONJ_TRANS)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: ta %d is not a wgc_transpose", fn, (int)ta);
  if ((unsigned)tb > WGC_CONJ_TRANS)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: tb %d is not a wgc_transpose", fn, (int)tb);
  wgc_gemm_epilogue e = ep ? *ep : (wgc_gemm_epilogue){0};
  if ((unsigned)e.bias_kind > WGC_BIAS_PER_ROW)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: ep->bias_kind %d is not a wgc_bias_kind", fn,
                    (int)e.bias_kind);
  if ((unsigned)e.activation > WGC_ACTIVATION_SILU)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: ep->activation %d is not a wgc_activation", fn,
                    (int)e.activation);
  bool row = layout == WGC_ROW_MAJOR, tra = ta != WGC_NO_TRANS,
       trb = tb != WGC_NO_TRANS;
  /* Rows of each matrix as stored, in the layout's sense (what ld bounds). */
  size_t a_inner = row ? (tra ? m : k) : (tra ? k : m);
  size_t b_inner = row ? (trb ? k : n) : (trb ? n : k);
  size_t c_inner = row ? n : m;
  if (lda < max1(a_inner))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: lda %zu is less than max(1, %zu)", fn, lda, a_inner);
  if (ldb < max1(b_inner))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: ldb %zu is less than max(1, %zu)", fn, ldb, b_inner);
  if (ldc < max1(c_inner))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: ldc %zu is less than max(1, %zu)", fn, ldc, c_inner);
  if (m == 0 || n == 0 || batch == 0)
    return WGC_OK;

  wgc_gemm_args g = {.m = m,
                     .n = n,
                     .k = k,
                     .batch = batch,
                     .alpha = alpha,
                     .beta = beta,
                     .fn = fn,
                     .has_bias = e.bias != 0,
                     .bias_kind = e.bias_kind,
                     .act = e.activation};
  g.rs_a = row != tra ? lda : 1;
  g.cs_a = row != tra ? 1 : lda;
  g.rs_b = row != trb ? ldb : 1;
  g.cs_b = row != trb ? 1 : ldb;
  g.rs_c = row ? ldc : 1;
  g.cs_c = row ? 1 : ldc;
  g.batch_a = stride_a;
  g.batch_b = stride_b;
  g.batch_c = stride_c;

  wgc_operand A = matrix_operand("a", a, m, k, g.rs_a, g.cs_a, stride_a, batch);
  wgc_operand B = matrix_operand("b", b, k, n, g.rs_b, g.cs_b, stride_b, batch);
  wgc_operand C = matrix_operand("c", c, m, n, g.rs_c, g.cs_c, stride_c, batch);
  wgc_status s = wgc_check_operand(ctx, fn, &A);
  if (s == WGC_OK)
    s = wgc_check_operand(ctx, fn, &B);
  if (s == WGC_OK)
    s = wgc_check_operand(ctx, fn, &C);
  /* One bias for every batch, along the logical C whatever its storage. */
  wgc_operand Bias = wgc_flat_operand("ep->bias", e.bias,
                                      e.bias_kind == WGC_BIAS_PER_ROW ? m : n);
  if (s == WGC_OK && g.has_bias)
    s = wgc_check_operand(ctx, fn, &Bias);
  if (s != WGC_OK)
    return s;
  if (wgc_repeats_overlap(&C))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: stride_c %zu makes the %zu C batches overlap (each "
                    "spans %llu elements)",
                    fn, stride_c, batch, (unsigned long long)(C.bytes / 4));
  /* Inputs that are never read still may not overlap the output. */
  s = wgc_check_no_overlap(ctx, fn, &C, &A, false);
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, fn, &C, &B, false);
  if (s == WGC_OK && g.has_bias)
    s = wgc_check_no_overlap(ctx, fn, &C, &Bias, false);
  if (s != WGC_OK)
    return s;
  g.bias = Bias.ref;
  g.a = A.ref;
  g.b = B.ref;
  g.c = C.ref;
  return ctx->be->gemm(ctx, &g);
}

wgc_status wgc_gemm(wgc_context *ctx, wgc_layout layout, wgc_transpose ta,
                    wgc_transpose tb, size_t m, size_t n, size_t k, float alpha,
                    wgc_ptr a, size_t lda, wgc_ptr b, size_t ldb, float beta,
                    wgc_ptr c, size_t ldc) {
  return gemm_common(ctx, "wgc_gemm", layout, ta, tb, m, n, k, alpha, a, lda, 0,
                     b, ldb, 0, beta, c, ldc, 0, 1, NULL);
}

wgc_status wgc_gemm_batched(wgc_context *ctx, wgc_layout layout,
                            wgc_transpose ta, wgc_transpose tb, size_t m,
                            size_t n, size_t k, float alpha, wgc_ptr a,
                            size_t lda, size_t stride_a, wgc_ptr b, size_t ldb,
                            size_t stride_b, float beta, wgc_ptr c, size_t ldc,
                            size_t stride_c, size_t batch_count) {
  return gemm_common(ctx, "wgc_gemm_batched", layout, ta, tb, m, n, k, alpha, a,
                     lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                     batch_count, NULL);
}

wgc_status wgc_gemm_ex(wgc_context *ctx, wgc_layout layout, wgc_transpose ta,
                       wgc_transpose tb, size_t m, size_t n, size_t k,
                       float alpha, wgc_ptr a, size_t lda, wgc_ptr b,
                       size_t ldb, float beta, wgc_ptr c, size_t ldc,
                       const wgc_gemm_epilogue *ep) {
  return gemm_common(ctx, "wgc_gemm_ex", layout, ta, tb, m, n, k, alpha, a, lda,
                     0, b, ldb, 0, beta, c, ldc, 0, 1, ep);
}

wgc_status wgc_gemm_batched_ex(wgc_context *ctx, wgc_layout layout,
                               wgc_transpose ta, wgc_transpose tb, size_t m,
                               size_t n, size_t k, float alpha, wgc_ptr a,
                               size_t lda, size_t stride_a, wgc_ptr b,
                               size_t ldb, size_t stride_b, float beta,
                               wgc_ptr c, size_t ldc, size_t stride_c,
                               size_t batch_count,
                               const wgc_gemm_epilogue *ep) {
  return gemm_common(ctx, "wgc_gemm_batched_ex", layout, ta, tb, m, n, k, alpha,
                     a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                     batch_count, ep);
}
