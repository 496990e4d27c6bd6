/* GEMM entry points: CBLAS arguments to the one strided form. */
#include "internal.h"

#include "dtype.h"
#include "table.h"
#include "validate.h"

#include <inttypes.h>
#include <math.h>

/* The browser build: wgc.js writes wgc_gemm_epilogue into wasm memory field by
 * field (4-byte fields, 8-byte device addresses, in declaration order). */
#if UINTPTR_MAX == UINT32_MAX
#include <stddef.h>
_Static_assert(offsetof(wgc_gemm_epilogue, bias) == 0 &&
                   offsetof(wgc_gemm_epilogue, bias_kind) == 8 &&
                   offsetof(wgc_gemm_epilogue, activation) == 12 &&
                   offsetof(wgc_gemm_epilogue, a_type) == 16 &&
                   offsetof(wgc_gemm_epilogue, bias_type) == 28 &&
                   sizeof(wgc_gemm_epilogue) == 32,
               "wgc.js writes wgc_gemm_epilogue as an 8-byte address and 6 "
               "words");
#endif

static size_t max1(size_t x) { return x ? x : 1; }

/* A rows x cols strided matrix of type t, repeated batch times stride
 * elements apart; byte sizes saturate so that huge ones fail the footprint
 * check. Block types count whole blocks (checked before). */
static wgc_operand matrix_operand(const char *param, wgc_ptr addr, wgc_dtype t,
                                  size_t rows, size_t cols, size_t rs,
                                  size_t cs, size_t stride, size_t batch) {
  uint64_t span = wgc_matrix_span(rows, cols, rs, cs);
  size_t blk = wgc_dtype_block(t), bb = wgc_dtype_block_bytes(t);
  return (wgc_operand){.param = param,
                       .addr = addr,
                       .bytes = wgc_sat_mul(bb, (span + blk - 1) / blk),
                       .stride = wgc_sat_mul(bb, stride / blk),
                       .repeat = batch,
                       .align = bb % 4 ? 2 : 4};
}

/* Which types each operand takes: A and C f32/f16/bf16, B also the block
 * types, the bias f32/f16. */
static bool type_ok(char operand, wgc_dtype t) {
  switch (t) {
  case WGC_DTYPE_F32:
  case WGC_DTYPE_F16:
    return true;
  case WGC_DTYPE_BF16:
    return operand != 'x';
  case WGC_DTYPE_Q8_0:
  case WGC_DTYPE_Q4_0:
    return operand == 'b';
  default:
    return false;
  }
}

static wgc_status check_type(wgc_context *ctx, const char *fn,
                             const char *param, char operand, wgc_dtype t) {
  if (!wgc_dtype_valid(t))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s %d is not a wgc_dtype", fn, param, (int)t);
  if (!type_ok(operand, t))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s %s is not a type this operand takes (%s)", fn,
                    param, wgc_dtype_name(t),
                    operand == 'b'   ? "f32, f16, bf16, q8_0 or q4_0"
                    : operand == 'x' ? "f32 or f16"
                                     : "f32, f16 or bf16");
  return WGC_OK;
}

/* A block B: k along its contiguous dimension, whole blocks. */
static wgc_status check_block_b(wgc_context *ctx, const char *fn,
                                const wgc_gemm_args *g, size_t ldb) {
  const char *tn = wgc_dtype_name(g->b_type);
  if (g->rs_b != 1 && g->k > 1)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: b of type %s needs k along its contiguous dimension "
                    "(row-major with tb = WGC_TRANS, or column-major with "
                    "WGC_NO_TRANS)",
                    fn, tn);
  if (g->k % 32)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: k %zu is not a whole number of b's %s blocks (32)", fn,
                    g->k, tn);
  if (ldb % 32)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: ldb %zu is not a whole number of b's %s blocks (32)",
                    fn, ldb, tn);
  if (g->batch_b % 32)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: stride_b %zu is not a whole number of b's %s blocks "
                    "(32)",
                    fn, g->batch_b, tn);
  return WGC_OK;
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
  wgc_status s = check_type(ctx, fn, "ep->a_type", 'a', e.a_type);
  if (s == WGC_OK)
    s = check_type(ctx, fn, "ep->b_type", 'b', e.b_type);
  if (s == WGC_OK)
    s = check_type(ctx, fn, "ep->c_type", 'c', e.c_type);
  if (s == WGC_OK)
    s = check_type(ctx, fn, "ep->bias_type", 'x', e.bias_type);
  if (s != WGC_OK)
    return s;
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
                     .act = e.activation,
                     .a_type = e.a_type,
                     .b_type = e.b_type,
                     .c_type = e.c_type,
                     .bias_type = e.bias_type};
  g.rs_a = row != tra ? lda : 1;
  g.cs_a = row != tra ? 1 : lda;
  g.rs_b = row != trb ? ldb : 1;
  g.cs_b = row != trb ? 1 : ldb;
  g.rs_c = row ? ldc : 1;
  g.cs_c = row ? 1 : ldc;
  g.batch_a = stride_a;
  g.batch_b = stride_b;
  g.batch_c = stride_c;
  if (wgc_dtype_block(g.b_type) > 1) {
    /* k of 1 has no direction: the blocks' rule holds for either */
    if (k <= 1 && g.rs_b != 1) {
      g.cs_b = g.rs_b;
      g.rs_b = 1;
    }
    s = check_block_b(ctx, fn, &g, ldb);
    if (s != WGC_OK)
      return s;
  }

  wgc_operand A =
      matrix_operand("a", a, g.a_type, m, k, g.rs_a, g.cs_a, stride_a, batch);
  wgc_operand B =
      matrix_operand("b", b, g.b_type, k, n, g.rs_b, g.cs_b, stride_b, batch);
  wgc_operand C =
      matrix_operand("c", c, g.c_type, m, n, g.rs_c, g.cs_c, stride_c, batch);
  /* One bias for every batch, along the logical C whatever its storage. */
  wgc_operand Bias =
      matrix_operand("ep->bias", e.bias, g.bias_type, 1,
                     e.bias_kind == WGC_BIAS_PER_ROW ? m : n, 1, 1, 0, 1);
  const wgc_operand *typed[4] = {&A, &B, &C, g.has_bias ? &Bias : NULL};
  const wgc_dtype types[4] = {g.a_type, g.b_type, g.c_type, g.bias_type};
  for (int i = 0; i < 4; i++)
    if (typed[i] && types[i] != WGC_DTYPE_F32 &&
        wgc_ptr_offset(typed[i]->addr) % typed[i]->align)
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "%s: %s 0x%016" PRIx64
                      " is not %u-byte aligned, as a %s operand must be",
                      fn, typed[i]->param, typed[i]->addr, typed[i]->align,
                      wgc_dtype_name(types[i]));
  s = wgc_check_operand(ctx, fn, &A);
  if (s == WGC_OK)
    s = wgc_check_operand(ctx, fn, &B);
  if (s == WGC_OK)
    s = wgc_check_operand(ctx, fn, &C);
  if (s == WGC_OK && g.has_bias)
    s = wgc_check_operand(ctx, fn, &Bias);
  if (s != WGC_OK)
    return s;
  if (wgc_repeats_overlap(&C))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: stride_c %zu makes the %zu C batches overlap (each "
                    "spans %llu elements)",
                    fn, stride_c, batch,
                    (unsigned long long)wgc_matrix_span(m, n, g.rs_c, g.cs_c));
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
