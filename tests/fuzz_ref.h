/* float64 references for the fuzzer with a bound per output element.
 *
 * The bounds are API.md's, taken over the elements each output actually
 * reads (a row of A and a column of B, a filter's taps, a query row and the
 * keys it sees), so one huge or infinite input does not relax every other
 * output. Where float32 intermediates may overflow although the float64
 * result does not (products and sums beyond 1e38), an element is "lenient":
 * only a NaN reference must be met by NaN there. */
#ifndef WGC_TEST_FUZZ_REF_H
#define WGC_TEST_FUZZ_REF_H

#include "fuzz.h"

typedef struct fz_want {
  double *v;          /* the value */
  double *tol;        /* its absolute bound */
  unsigned char *len; /* 0, FZ_LENIENT or FZ_NAN_OK */
} fz_want;
enum {
  FZ_LENIENT = 1, /* float32 may overflow: only a NaN want is checked */
  FZ_NAN_OK = 2   /* NaN is right too (an IEEE choice the API leaves open) */
};

/* Batch bi's C element (i, j) lands at want index (bi*m + i)*n + j. */
void fzr_gemm(const fz_step *s, size_t lda, size_t ldb, size_t ldc, size_t stra,
              size_t strb, size_t strc, const float *a, const float *b,
              const float *c, fz_want w);
void fzr_conv(const wgc_conv2d_desc *d, const float *x, const float *f,
              const float *bias, fz_want w);
/* Query row (b, h, i)'s output element e lands at want index
 * ((b*heads + h)*seq_q + i)*head_dim_v + e; mask NULL: none. */
void fzr_attn(const wgc_attention_desc *d, const float *q, const float *k,
              const float *v, const float *mask, fz_want w);
wgc_attention_strides fzr_attn_strides(wgc_attention_strides st, size_t heads,
                                       size_t seq, size_t dim);
void fzr_reduce(wgc_reduce_op op, const float *x, const fz_shape *sh,
                size_t axis, fz_want w);

/* Whether got meets want within tol (IEEE cases as API.md says). */
bool fz_close(float got, double want, double tol, int lenient);

#endif
