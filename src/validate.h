/* Argument checks shared by the entry points. Each check records a message
 * "FN: PARAM ..." on the context and returns a status. */
#ifndef WGC_VALIDATE_H
#define WGC_VALIDATE_H

#include "internal.h"

/* An operand as the entry point sees it: an address and a footprint. */
typedef struct wgc_operand {
  const char *param; /* parameter name, for messages */
  wgc_ptr addr;
  uint64_t first;  /* byte offset of the first element touched, from addr */
  uint64_t bytes;  /* span from first to last element touched, in bytes */
  uint64_t stride; /* bytes between repeats (batches); 0 = one repeat */
  uint64_t repeat; /* number of repeats, >= 1 */
  uint32_t align;  /* address alignment in bytes; 0 means 4 */
  wgc_ref ref;     /* filled by wgc_check_operand */
  uint32_t slot;   /* filled by wgc_check_operand */
} wgc_operand;

/* x*y with overflow detection. */
bool wgc_mul_ok(size_t x, size_t y, size_t *out);
bool wgc_add_ok(size_t x, size_t y, size_t *out);

/* Checks that addr is a live address aligned to op->align (4 by default) and
 * that the whole footprint (all repeats) lies inside its allocation; fills ref
 * and slot. */
wgc_status wgc_check_operand(wgc_context *ctx, const char *fn, wgc_operand *op);
/* Fails when any repeat of out overlaps any repeat of in (same allocation).
 * exact_ok: identical single spans are allowed (element-wise in place). */
wgc_status wgc_check_no_overlap(wgc_context *ctx, const char *fn,
                                const wgc_operand *out, const wgc_operand *in,
                                bool exact_ok);
/* Whether an operand's repeats overlap one another. */
bool wgc_repeats_overlap(const wgc_operand *op);

/* Saturating arithmetic: UINT64_MAX stands for "too large", which every
 * footprint check then rejects. */
uint64_t wgc_sat_mul(uint64_t x, uint64_t y);
uint64_t wgc_sat_add(uint64_t x, uint64_t y);

/* Element footprint of a strided matrix: last offset + 1, or 0 if empty
 * (saturating). */
uint64_t wgc_matrix_span(size_t rows, size_t cols, size_t rs, size_t cs);

/* Element count of a product of sizes; false on overflow. */
bool wgc_product(const size_t *dims, size_t count, size_t *out);

/* Checks every operand, then that the last (the output) overlaps none of the
 * others. */
wgc_status wgc_check_all(wgc_context *ctx, const char *fn, wgc_operand *ops,
                         size_t count);

/* The fields of a 2-D window desc (wgc_conv2d_desc, wgc_pool2d_desc) that
 * fix its output size; strides and dilations by address, so that their
 * defaults land in the desc. */
typedef struct wgc_window2d {
  size_t h, w, r, s, pad_h, pad_w;
  size_t *stride_h, *stride_w, *dilation_h, *dilation_w;
} wgc_window2d;

/* Sets strides and dilations of 0 to 1, checks r, s >= 1 and that the
 * dilated window fits the padded input, and gives the output size p x q.
 * Fails naming d when products overflow or, with limit nonzero, when a
 * padded size, dilated window or stride exceeds limit. */
wgc_status wgc_window2d_size(wgc_context *ctx, const char *fn,
                             const wgc_window2d *win, size_t limit, size_t *p,
                             size_t *q);

/* numpy broadcasting of n input shapes (n <= 4): input i is shapes[i] of
 * ranks[i] (0..8), named "shape_<names[i]>" and "rank_<names[i]>" in
 * messages. Fills the broadcast shape[*rank] (rank 0 gives shape {1}, rank
 * 1), each input's element strides (0 on its broadcast dimensions), each
 * input's element count and the output's. Fails naming the parameters that
 * do not broadcast, or when a tensor is too large to address. */
wgc_status wgc_broadcast(wgc_context *ctx, const char *fn, size_t n,
                         const char *const *names, const size_t *const *shapes,
                         const size_t *ranks, size_t *rank, size_t *shape,
                         size_t (*strides)[WGC_MAX_RANK], size_t *counts,
                         size_t *count);

/* A dense operand of elems floats. */
static inline wgc_operand wgc_flat_operand(const char *param, wgc_ptr addr,
                                           size_t elems) {
  return (wgc_operand){
      .param = param, .addr = addr, .bytes = 4 * (uint64_t)elems, .repeat = 1};
}

/* A dense operand of elems elements of t (F32, F16 or BF16): a 2-byte
 * type aligned to 2 bytes. */
static inline wgc_operand wgc_float_operand(const char *param, wgc_ptr addr,
                                            wgc_dtype t, size_t elems) {
  bool two = t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16;
  return (wgc_operand){.param = param,
                       .addr = addr,
                       .bytes = (two ? 2 : 4) * (uint64_t)elems,
                       .repeat = 1,
                       .align = two ? 2 : 4};
}

/* Fails naming param unless t is F32, F16 or BF16 (the element-wise and
 * normalization ops' storage types). */
wgc_status wgc_check_float_type(wgc_context *ctx, const char *fn,
                                const char *param, wgc_dtype t);
/* Fails naming param unless t is F32 or F16 (scales, biases, tables). */
wgc_status wgc_check_affine_type(wgc_context *ctx, const char *fn,
                                 const char *param, wgc_dtype t);
/* Checks every operand as wgc_check_operand does, a misaligned 2-byte one
 * failing with a message naming its type. */
wgc_status wgc_check_float_operand(wgc_context *ctx, const char *fn,
                                   wgc_operand *op, wgc_dtype t);

#endif
