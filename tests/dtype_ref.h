/* An independent model of wgc's element types, for tests/test_dtype.c
 * and the fuzzer: f16 and bf16 decoded with ldexp and rounded by binary
 * search over their ordered patterns (ties to the even pattern), Q8_0 and
 * Q4_0 with ggml's reference formulas, and the NaN, i32 and non-finite
 * block rules wgc.h states. */
#ifndef WGC_TEST_DTYPE_REF_H
#define WGC_TEST_DTYPE_REF_H

#include "wgc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A value in double, or a NaN as its f32 bits. */
typedef struct dref_val {
  double v;
  uint32_t nan;
} dref_val;

dref_val dref_dec16(uint16_t h, bool bf);
uint16_t dref_enc16(dref_val x, bool bf);
uint32_t dref_enc_f32(dref_val x);
/* One block of 32 f32 values quantized to t (Q8_0 or Q4_0). */
void dref_quant(const float *x, wgc_dtype t, uint8_t *out);
/* Element i of a buffer of type t. */
dref_val dref_load(const uint8_t *p, wgc_dtype t, size_t i);
/* wgc_cast's result: n elements (whole blocks) of src into dst. */
void dref_cast(const uint8_t *src, wgc_dtype st, uint8_t *dst, wgc_dtype dt,
               size_t n);
/* Bytes of n elements of t (0 when n is not whole blocks). */
size_t dref_bytes(wgc_dtype t, size_t n);

#endif
