/* The cases every system runs, so that each figure has its baselines in
 * the same case. Which ones run depends on the adapter (the slow software
 * ones skip the largest) and on WGC_BENCH_LARGE. */
#ifndef BENCH_SHAPES_H
#define BENCH_SHAPES_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gemm_shape {
  const char *name;
  size_t m, n, k, batch;
  int ta, tb;    /* transposed A, B (row-major storage) */
  int baselines; /* the slow raw kernels run it too */
} gemm_shape;

typedef struct conv_shape {
  const char *name;
  size_t c, h, w, k, r, stride, pad;
} conv_shape;

/* seq keys (and query rows, but decoding: one row a head) */
typedef struct attn_shape {
  size_t seq, dim;
  int causal;
  bool decode;
} attn_shape;

/* Query rows of an attention shape. */
static inline size_t attn_rows(const attn_shape *s) {
  return s->decode ? 1 : s->seq;
}

/* Where a part runs: "lavapipe", "swiftshader" or "cpu". */
typedef enum where { ON_LAVAPIPE, ON_SWIFTSHADER, ON_CPU } where;
where where_from(const char *adapter);

/* NULL-terminated lists for one place. */
const gemm_shape *gemm_shapes(where w, size_t *count);
/* GEMM with typed weights: B [n, k] (tb), every shape the same n, k. */
const gemm_shape *weight_shapes(where w, size_t *count);
const conv_shape *conv_shapes(size_t *count);
const attn_shape *attn_shapes(where w, size_t *count);
char *attn_name(const attn_shape *s, char *buf, size_t len);

double gemm_flops(const gemm_shape *g);
double conv_flops(const conv_shape *c);
double attn_flops(const attn_shape *a);

#define ATTN_HEADS 8u
#define ELEMENTWISE_N ((size_t)16 << 20)
#define REDUCE_N 4096u
#define TINY_N 16u
#define TINY_OPS 1000
#define SEQ_LIMIT 1024 /* longer on lavapipe only, but for WGC_BENCH_LARGE */

#endif
