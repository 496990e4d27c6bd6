/* RotaryEmbedding entry point: desc checks, footprints, dispatch. */
#include "internal.h"

#include "validate.h"

wgc_status wgc_rotary_embedding(wgc_context *ctx, const wgc_rotary_desc *d,
                                wgc_ptr input, wgc_ptr position_ids,
                                wgc_ptr cos_cache, wgc_ptr sin_cache,
                                wgc_ptr output) {
  const char *fn = "wgc_rotary_embedding";
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (!d)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: d is NULL", fn);
  if (d->layout != WGC_ROTARY_BSHD && d->layout != WGC_ROTARY_BHSD)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->layout %d is not a wgc_rotary_layout", fn,
                    (int)d->layout);
  wgc_status s = wgc_check_float_type(ctx, fn, "d->input_type", d->input_type);
  if (s == WGC_OK)
    s = wgc_check_float_type(ctx, fn, "d->output_type", d->output_type);
  if (s == WGC_OK)
    s = wgc_check_affine_type(ctx, fn, "d->cache_type", d->cache_type);
  if (s != WGC_OK)
    return s;
  wgc_rotary_args r = {.d = *d, .fn = fn};
  if (!r.d.rotary_dim)
    r.d.rotary_dim = d->head_dim;
  if (r.d.rotary_dim % 2 || r.d.rotary_dim > d->head_dim)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->rotary_dim %zu is not even and <= head_dim %zu", fn,
                    r.d.rotary_dim, d->head_dim);
  size_t rows = 0, total = 0, pairs = 0, half = r.d.rotary_dim / 2, cache = 0;
  bool ok = wgc_mul_ok(d->batch, d->seq, &pairs) &&
            wgc_mul_ok(pairs, d->heads, &rows) &&
            wgc_mul_ok(rows, d->head_dim, &total) && total <= 0x7fffffffu;
  r.has_position_ids = position_ids != 0;
  ok =
      ok &&
      wgc_mul_ok(r.has_position_ids ? d->max_positions : pairs, half, &cache) &&
      cache <= 0x7fffffffu &&
      (!r.has_position_ids || d->max_positions <= 0x7fffffffu);
  if (!ok)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d describes tensors beyond 2^31 elements", fn);
  if (total == 0)
    return WGC_OK;
  if (r.has_position_ids && d->max_positions == 0)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->max_positions is 0 with position_ids", fn);
  wgc_operand ops[5];
  wgc_dtype types[5];
  size_t count = 0;
  types[count] = d->input_type;
  ops[count++] = wgc_float_operand("input", input, d->input_type, total);
  if (r.has_position_ids) {
    types[count] = WGC_DTYPE_F32; /* int32 words */
    ops[count++] = wgc_flat_operand("position_ids", position_ids, pairs);
  }
  types[count] = d->cache_type;
  ops[count++] =
      wgc_float_operand("cos_cache", cos_cache, d->cache_type, cache);
  types[count] = d->cache_type;
  ops[count++] =
      wgc_float_operand("sin_cache", sin_cache, d->cache_type, cache);
  types[count] = d->output_type;
  ops[count++] = wgc_float_operand("output", output, d->output_type, total);
  for (size_t i = 0; i < count && s == WGC_OK; i++)
    s = wgc_check_float_operand(ctx, fn, &ops[i], types[i]);
  /* in place on input only, and only of one type (identical spans) */
  for (size_t i = 0; i + 1 < count && s == WGC_OK; i++)
    s = wgc_check_no_overlap(ctx, fn, &ops[count - 1], &ops[i],
                             i == 0 && d->input_type == d->output_type);
  if (s != WGC_OK)
    return s;
  size_t k = 0;
  r.input = ops[k++].ref;
  if (r.has_position_ids)
    r.position_ids = ops[k++].ref;
  r.cos_cache = ops[k++].ref;
  r.sin_cache = ops[k++].ref;
  r.output = ops[k].ref;
  return ctx->be->rotary(ctx, &r);
}
