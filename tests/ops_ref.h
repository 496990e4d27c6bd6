/* float64 reference loops for every operation, written from the contract
 * (not from the library), and the comparison that applies the accuracy
 * bounds of API.md. */
#ifndef WGC_TEST_OPS_REF_H
#define WGC_TEST_OPS_REF_H

#include "wgc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- GEMM ---------------------------------------------------------------
 * A stored matrix (as cblas sees it): element (r, c) of a rows x cols
 * matrix with leading dimension ld in the given layout. */
size_t ref_index(wgc_layout layout, size_t ld, size_t r, size_t c);
/* Rows and columns of A as stored for op(A) of size rows x cols. */
void ref_stored_dims(wgc_transpose t, size_t rows, size_t cols, size_t *srows,
                     size_t *scols);
/* The smallest legal leading dimension of a stored srows x scols matrix. */
size_t ref_min_ld(wgc_layout layout, size_t srows, size_t scols);
/* Elements from the first to the last element of a stored matrix (0 if it
 * is empty). */
size_t ref_span(wgc_layout layout, size_t ld, size_t srows, size_t scols);
/* out[i*n + j] = alpha*sum op(A)[i,p] op(B)[p,j] + beta*C[i,j] in float64,
 * with BLAS's rules: A and B are not read when k == 0 or alpha == 0, C not
 * when beta == 0. Also returns max|op(A)|, max|op(B)|, max|C| read. */
typedef struct ref_gemm_max {
  double a, b, c;
} ref_gemm_max;
ref_gemm_max ref_gemm(wgc_layout layout, wgc_transpose ta, wgc_transpose tb,
                      size_t m, size_t n, size_t k, double alpha,
                      const float *a, size_t lda, const float *b, size_t ldb,
                      double beta, const float *c, size_t ldc, double *out);

/* ---- conv2d -------------------------------------------------------------
 * Output size with the desc's defaults (0 stride/dilation/groups = 1);
 * false when the desc is invalid. */
bool ref_conv2d_size(const wgc_conv2d_desc *d, size_t *p, size_t *q);
/* out [n, k, p, q]; bias NULL = none. */
void ref_conv2d(const wgc_conv2d_desc *d, const float *x, const float *w,
                const float *bias, double *out);

/* ---- pool2d -------------------------------------------------------------
 * Output size of a valid desc with its defaults (0 stride/dilation = 1). */
void ref_pool2d_size(const wgc_pool2d_desc *d, size_t *p, size_t *q);
/* ONNX's MaxPool / AveragePool (ceil_mode 0) over x [n, c, h, w] into
 * y [n, c, p, q], with each element's bound in tol: 0 for MAX (exact), for
 * AVG the header's (r*s + 1) * 2^-24 * mean(|x|) plus a rounding of y.
 * Infinite inputs are left out of the mean: they make y an infinity or NaN,
 * which must match exactly. mag (NULL: not wanted): for AVG the sum of the
 * window's finite |x|, which float32 partial sums may overflow where the
 * float64 sum does not; 0 for MAX. */
void ref_pool2d(const wgc_pool2d_desc *d, const float *x, double *y,
                double *tol, double *mag);

/* ---- rotary -------------------------------------------------------------
 * ONNX RotaryEmbedding of the (decoded) input x, cos and sin caches (pos
 * NULL: none), and each element's bound in tol: 4e-7 * (|x1| + |x2|) *
 * (|cos| + |sin|) for the rotated ones, 0 for those copied. */
void ref_rotary(const wgc_rotary_desc *d, const double *x, const int32_t *pos,
                const double *cosc, const double *sinc, double *y, double *tol);

/* ---- attention ---------------------------------------------------------- */
/* Follows d's strides, softcap and head_dim_v; d->mask, when set, is a
 * host pointer (cast to wgc_ptr) to the mask in d->mask_stride's layout. */
void ref_attention(const wgc_attention_desc *d, const float *q, const float *k,
                   const float *v, double *out);

/* ---- reduce -------------------------------------------------------------
 * out has the shape without axis; also returns sum|x| per output element in
 * abs_sum (may be NULL) for the summation bound. */
void ref_reduce(wgc_reduce_op op, const float *x, const size_t *shape,
                size_t rank, size_t axis, double *out, double *abs_sum);
/* As ref_reduce over the dims with reduced[d] set (an empty set gives the
 * op's identity); mag as ref_reduce's abs_sum (may be NULL). */
void ref_reduce_axes(wgc_reduce_op op, const float *x, const size_t *shape,
                     size_t rank, const bool *reduced, double *out,
                     double *mag);
/* The header's accuracy bound for op over len elements, absolute: want is
 * the exact result, mag what ref_reduce returned in abs_sum (sum|x| for
 * sums, sum x^2 for SUM_SQUARE and L2, |want| for PROD). */
double ref_reduce_tol(wgc_reduce_op op, size_t len, double want, double mag);
/* argmax (largest) or argmin along axis: the first index on ties, the
 * first NaN wins. */
void ref_arg(bool largest, const float *x, const size_t *shape, size_t rank,
             size_t axis, int32_t *out);

/* ---- element-wise ------------------------------------------------------- */
/* ref_unary runs the parameterised ops with wgc_unary's defaults
 * (ref_unary_defaults); ref_unary_params with alpha and beta as
 * wgc_unary_params. */
double ref_unary(wgc_unary_op op, double x);
double ref_unary_params(wgc_unary_op op, double x, double alpha, double beta);
void ref_unary_defaults(wgc_unary_op op, float *alpha, float *beta);
double ref_binary(wgc_binary_op op, double a, double b);
/* numpy broadcasting: fills out_shape/out_rank, false if incompatible. */
bool ref_broadcast_shape(const size_t *sa, size_t ra, const size_t *sb,
                         size_t rb, size_t *out_shape, size_t *out_rank);
void ref_broadcast(wgc_binary_op op, const float *a, const size_t *sa,
                   size_t ra, const float *b, const size_t *sb, size_t rb,
                   double *out);
size_t ref_count(const size_t *shape, size_t rank);

/* Per-op accuracy bounds of API.md: rel*|want| + abs. */
void ref_unary_bound(wgc_unary_op op, double *rel, double *abs_tol);
/* An input range where op is well conditioned in float32 (no default case:
 * a new op must choose one). */
void ref_unary_range(wgc_unary_op op, float *lo, float *hi);
void ref_binary_bound(wgc_binary_op op, double *rel, double *abs_tol);
const char *ref_unary_name(wgc_unary_op op);
const char *ref_binary_name(wgc_binary_op op);
const char *ref_reduce_name(wgc_reduce_op op);

/* ---- comparison ---------------------------------------------------------
 * CHECKs every got[i] against want[i] within rel*|want[i]| + abs_tol
 * (abs_tol may be per element: pass tol_each, else NULL). NaN must meet
 * NaN, an infinity the same infinity, and a want beyond float range the
 * infinity it rounds to. A failure names the worst element (index, got,
 * want, bound). Returns the worst error/bound ratio (infinity for a
 * mismatched NaN or infinity) and records it under key (e.g.
 * "gemm[cpu]") for the accuracy summary. */
double check_close_at(const char *file, int line, const char *key,
                      const char *label, const float *got, const double *want,
                      size_t n, double rel, double abs_tol,
                      const double *tol_each);
/* label (e.g. "axis 2") is added to a failure message; NULL for none. */
#define CHECK_CLOSE(key, label, got, want, n, rel, abs_tol)                    \
  check_close_at(__FILE__, __LINE__, key, label, got, want, n, rel, abs_tol,   \
                 NULL)

/* Keeps the worst error/bound ratio seen for key (a NaN counts as worst). */
void accuracy_record(const char *key, double ratio);
/* Prints the worst error/bound ratio seen per key, for the keys that begin
 * with prefix (with) or those that do not. */
void accuracy_summary(const char *prefix, bool with);

#endif
