/* A reduction whose one output line is too long for a piece: pieces are
 * (outer index, block of block_size[0] adjacent outputs, chunk of
 * block_size[1] rows of the axis), chunks innermost. The partials stay in
 * double between chunks, as the whole call keeps them, and are rounded to
 * float once, after the last chunk; MAX and MIN are exact and propagate
 * NaN as numpy does. */
#include "split.h"

#include "cpu.h"

#include <stdlib.h>

#define COLUMNS 1024 /* adjacent outputs per block when the axis is long */

/* NaN wins: once m is NaN, no comparison replaces it. */
static double max_nan(double m, double x) { return x > m || x != x ? x : m; }
static double min_nan(double m, double x) { return x < m || x != x ? x : m; }

wgc_status cpu_split_reduce_plan(const wgc_reduce_args *r, cpu_split *s) {
  size_t cols = cpu_fit(s, (double)r->len, r->inner);
  if (cols < COLUMNS)
    cols = cpu_min(r->inner, COLUMNS);
  s->group = 0;
  s->block_size[0] = cols;
  s->block_size[1] = cpu_fit(s, (double)cols, r->len);
  s->blocks[0] = cpu_div_up(r->inner, cols);
  s->blocks[1] = cpu_div_up(r->len, s->block_size[1]);
  s->pieces = r->outer * s->blocks[0] * s->blocks[1];
  s->acc = malloc(cols * sizeof *s->acc);
  return s->acc ? WGC_OK : WGC_ERR_OUT_OF_MEMORY;
}

void cpu_split_reduce_run(const wgc_reduce_args *r, cpu_split *s, size_t i) {
  size_t chunk = i % s->blocks[1];
  i /= s->blocks[1];
  size_t j0 = i % s->blocks[0] * s->block_size[0], o = i / s->blocks[0];
  size_t w = cpu_min(s->block_size[0], r->inner - j0);
  size_t r0 = chunk * s->block_size[1];
  size_t r1 = cpu_min(r->len, r0 + s->block_size[1]);
  const float *in = cpu_ptr(r->input) + o * r->len * r->inner + j0;
  double *acc = s->acc;
  bool extreme = r->op == WGC_REDUCE_MAX || r->op == WGC_REDUCE_MIN;
  if (chunk == 0) {
    for (size_t j = 0; j < w; j++)
      acc[j] = extreme ? in[j] : 0.0;
    if (extreme)
      r0 = 1;
  }
  for (size_t row = r0; row < r1; row++) {
    const float *x = in + row * r->inner;
    if (r->op == WGC_REDUCE_MAX)
      for (size_t j = 0; j < w; j++)
        acc[j] = max_nan(acc[j], x[j]);
    else if (r->op == WGC_REDUCE_MIN)
      for (size_t j = 0; j < w; j++)
        acc[j] = min_nan(acc[j], x[j]);
    else
      for (size_t j = 0; j < w; j++)
        acc[j] += x[j];
  }
  if (chunk + 1 < s->blocks[1])
    return;
  float *out = cpu_ptr(r->output) + o * r->inner + j0;
  for (size_t j = 0; j < w; j++)
    out[j] =
        (float)(r->op == WGC_REDUCE_MEAN ? acc[j] / (double)r->len : acc[j]);
}
