/* Pieces of a reduction for the wasm32 queue (split.h): runs of whole
 * outer slices, or, for a reduction whose one output line is too long for
 * a piece: pieces are
 * (outer index, block of block_size[0] adjacent outputs, chunk of
 * block_size[1] rows of the axis), chunks innermost. The partials stay in
 * double between chunks (reduce_acc.h's state, as the whole call keeps
 * it) and are rounded to float once, after the last chunk.
 *
 * Several separate axes (nd > 0): pieces are runs of block_size[0]
 * outputs, or, where one output's span is too long, (output, chunk of
 * block_size[1] elements of its span) with the state carried from chunk to
 * chunk. */
#include "split.h"

#include "cpu.h"
#include "dtype.h"
#include "reduce_acc.h"

#include <stdlib.h>

#define COLUMNS 1024 /* adjacent outputs per block when the axis is long */

/* Output k from its finished state, rounded into the output's type. */
static void store_out(const wgc_reduce_args *r, const racc *acc, size_t k) {
  if (r->output_type == WGC_DTYPE_F32) {
    racc_store(r, acc, r->len, cpu_ptr(r->output) + k);
    return;
  }
  float v;
  racc_store(r, acc, r->len, &v);
  wgc_dtype_store(cpu_ptr(r->output), r->output_type, k, v);
}

static wgc_status plan_multi(const wgc_reduce_args *r, cpu_split *s) {
  s->group = 0;
  s->work = (double)r->outer * (double)r->len;
  if ((double)r->len <= s->piece_work) {
    s->block_size[0] = cpu_fit(s, (double)r->len, r->outer);
    s->blocks[0] = cpu_div_up(r->outer, s->block_size[0]);
    s->block_size[1] = r->len;
    s->blocks[1] = 1;
  } else {
    s->block_size[0] = 1;
    s->blocks[0] = r->outer;
    s->block_size[1] = cpu_fit(s, 1.0, r->len);
    s->blocks[1] = cpu_div_up(r->len, s->block_size[1]);
  }
  s->pieces = s->blocks[0] * s->blocks[1];
  s->acc = malloc(sizeof(racc));
  return s->acc ? WGC_OK : WGC_ERR_OUT_OF_MEMORY;
}

static void run_multi(const wgc_reduce_args *r, cpu_split *s, size_t i) {
  size_t chunk = i % s->blocks[1], b = i / s->blocks[1];
  size_t k0 = b * s->block_size[0];
  size_t k1 = cpu_min(r->outer, k0 + s->block_size[0]);
  size_t e0 = chunk * s->block_size[1];
  size_t e1 = cpu_min(r->len, e0 + s->block_size[1]);
  racc *acc = (racc *)s->acc;
  for (size_t k = k0; k < k1; k++) {
    if (chunk == 0)
      *acc = racc_init(r);
    cpu_reduce_span(r, k, e0, e1, acc);
    if (chunk + 1 == s->blocks[1])
      store_out(r, acc, k);
  }
}

static wgc_status plan_line(const wgc_reduce_args *r, cpu_split *s) {
  if (r->nd)
    return plan_multi(r, s);
  size_t cols = cpu_fit(s, (double)r->len, r->inner);
  if (cols < COLUMNS)
    cols = cpu_min(r->inner, COLUMNS);
  s->group = 0;
  s->block_size[0] = cols;
  s->block_size[1] = cpu_fit(s, (double)cols, r->len);
  s->blocks[0] = cpu_div_up(r->inner, cols);
  s->blocks[1] = cpu_div_up(r->len, s->block_size[1]);
  s->pieces = r->outer * s->blocks[0] * s->blocks[1];
  s->acc = malloc(cols * sizeof(racc));
  return s->acc ? WGC_OK : WGC_ERR_OUT_OF_MEMORY;
}

static void run_line(const wgc_reduce_args *r, cpu_split *s, size_t i) {
  if (r->nd) {
    run_multi(r, s, i);
    return;
  }
  size_t chunk = i % s->blocks[1];
  i /= s->blocks[1];
  size_t j0 = i % s->blocks[0] * s->block_size[0], o = i / s->blocks[0];
  size_t w = cpu_min(s->block_size[0], r->inner - j0);
  size_t r0 = chunk * s->block_size[1];
  size_t r1 = cpu_min(r->len, r0 + s->block_size[1]);
  size_t at = o * r->len * r->inner + j0; /* in the input's elements */
  const float *in = cpu_ptr(r->input);
  racc *acc = (racc *)s->acc;
  if (chunk == 0)
    for (size_t j = 0; j < w; j++)
      acc[j] = racc_init(r);
  for (size_t row = r0; row < r1; row++) {
    size_t e = at + row * r->inner;
    if (r->input_type == WGC_DTYPE_F32)
      for (size_t j = 0; j < w; j++)
        racc_add(r, &acc[j], in[e + j], row);
    else
      for (size_t j = 0; j < w; j++)
        racc_add(r, &acc[j], wgc_dtype_load(in, r->input_type, e + j), row);
  }
  if (chunk + 1 < s->blocks[1])
    return;
  for (size_t j = 0; j < w; j++)
    store_out(r, &acc[j], o * r->inner + j0 + j);
}

/* Runs of whole outer slices, or one long line in chunks (above). */
wgc_status cpu_split_reduce_plan(const wgc_reduce_args *r, cpu_split *s) {
  double slab = (double)(r->len ? r->len : 1) * (double)r->inner;
  s->work = slab * (double)r->outer;
  if (r->nd || (slab > s->piece_work && r->len > 1))
    return plan_line(r, s);
  s->group = cpu_fit(s, slab, r->outer);
  s->pieces = cpu_div_up(r->outer, s->group);
  return WGC_OK;
}

wgc_status cpu_split_reduce_run(wgc_context *ctx, const wgc_reduce_args *r,
                                cpu_split *s, size_t i) {
  if (!s->group) {
    run_line(r, s, i);
    return WGC_OK;
  }
  wgc_reduce_args a = *r;
  size_t o0 = i * s->group;
  a.outer = cpu_min(s->group, r->outer - o0);
  a.input = cpu_ref_typed(r->input, r->input_type, o0 * r->len * r->inner);
  a.output = cpu_ref_typed(r->output, r->output_type, o0 * r->inner);
  return cpu_reduce(ctx, &a);
}
