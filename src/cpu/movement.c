/* Strided copy, gather and where on the CPU. Each op is a function of a
 * range of its flattened output index space, which the thread pool (tasks)
 * and the wasm32 queue (pieces, split.c) cut alike. Values move as words
 * of their type, so NaN payloads and subnormals arrive unchanged; between
 * types they convert on the bits, as wgc_cast. */
#include "cpu.h"
#include "dtype.h"
#include "split.h"

#include <string.h>

#define TASK_ELEMS 32768 /* elements per task */

/* Multi-index of flat position pos in shape[rank] (row-major), and the
 * offsets it maps to through nstr stride arrays. */
static void index_of(size_t pos, const size_t *shape, size_t rank,
                     const size_t *const *strides, size_t nstr, size_t *idx,
                     size_t *off) {
  for (size_t k = 0; k < nstr; k++)
    off[k] = 0;
  for (size_t d = rank; d-- > 0;) {
    idx[d] = pos % shape[d];
    pos /= shape[d];
    for (size_t k = 0; k < nstr; k++)
      off[k] += idx[d] * strides[k][d];
  }
}

/* Steps idx past a run of run elements along the last dimension, carrying
 * into outer dimensions, and updates the offsets. */
static void index_step(size_t run, const size_t *shape, size_t rank,
                       const size_t *const *strides, size_t nstr, size_t *idx,
                       size_t *off) {
  size_t last = rank - 1;
  idx[last] += run;
  for (size_t k = 0; k < nstr; k++)
    off[k] += run * strides[k][last];
  for (size_t d = last; d > 0 && idx[d] == shape[d]; d--) {
    for (size_t k = 0; k < nstr; k++)
      off[k] += strides[k][d - 1] - idx[d] * strides[k][d];
    idx[d] = 0;
    idx[d - 1]++;
  }
}

/* ---- strided copy -------------------------------------------------------- */

/* cpu_copy_strided_range with a 2-byte operand: the same type moves as
 * 16-bit words, another converts as wgc_cast does (on the bits). */
static void copy_typed(const wgc_copy_strided_args *c, size_t pos, size_t end) {
  void *dst = cpu_ptr(c->dst);
  const void *src = cpu_ptr(c->src);
  const size_t *strides[2] = {c->stride_dst, c->stride_src};
  size_t idx[WGC_MAX_RANK], off[2], last = c->rank - 1;
  size_t sd = c->stride_dst[last], ss = c->stride_src[last];
  bool same = c->dst_type == c->src_type;
  index_of(pos, c->shape, c->rank, strides, 2, idx, off);
  while (pos < end) {
    size_t run = cpu_min(c->shape[last] - idx[last], end - pos);
    if (same)
      for (size_t i = 0; i < run; i++)
        ((uint16_t *)dst)[off[0] + i * sd] =
            ((const uint16_t *)src)[off[1] + i * ss];
    else if (sd == 1 && ss == 1)
      wgc_dtype_convert_run(src, c->src_type, off[1], dst, c->dst_type, off[0],
                            run);
    else /* through floats (exact), stored as wgc_dtype_convert_run does */
      for (size_t i0 = 0, m; i0 < run; i0 += m) {
        float buf[256];
        m = cpu_min(run - i0, 256);
        for (size_t i = 0; i < m; i++)
          buf[i] = wgc_dtype_load(src, c->src_type, off[1] + (i0 + i) * ss);
        if (sd == 1)
          wgc_dtype_store_run(dst, c->dst_type, off[0] + i0, buf, m);
        else /* as runs of one: a float's NaN payload is kept */
          for (size_t i = 0; i < m; i++)
            wgc_dtype_store_run(dst, c->dst_type, off[0] + (i0 + i) * sd,
                                buf + i, 1);
      }
    pos += run;
    index_step(run, c->shape, c->rank, strides, 2, idx, off);
  }
}

static void cpu_copy_strided_range(const wgc_copy_strided_args *c, size_t pos,
                                   size_t end) {
  if (c->dst_type != WGC_DTYPE_F32 || c->src_type != WGC_DTYPE_F32) {
    copy_typed(c, pos, end);
    return;
  }
  uint32_t *dst = (uint32_t *)(void *)cpu_ptr(c->dst);
  const uint32_t *src = (const uint32_t *)(const void *)cpu_ptr(c->src);
  const size_t *strides[2] = {c->stride_dst, c->stride_src};
  size_t idx[WGC_MAX_RANK], off[2], last = c->rank - 1;
  size_t sd = c->stride_dst[last], ss = c->stride_src[last];
  index_of(pos, c->shape, c->rank, strides, 2, idx, off);
  while (pos < end) {
    size_t run = c->shape[last] - idx[last];
    if (run > end - pos)
      run = end - pos;
    uint32_t *d = dst + off[0];
    const uint32_t *s = src + off[1];
    if (sd == 1 && ss == 1)
      memcpy(d, s, 4 * run);
    else
      for (size_t i = 0; i < run; i++)
        d[i * sd] = s[i * ss];
    pos += run;
    index_step(run, c->shape, c->rank, strides, 2, idx, off);
  }
}

static void copy_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const wgc_copy_strided_args *c = arg;
  size_t pos = task * TASK_ELEMS;
  cpu_copy_strided_range(c, pos, cpu_min(c->count, pos + TASK_ELEMS));
}

wgc_status cpu_copy_strided(wgc_context *ctx, const wgc_copy_strided_args *c) {
  cpu_parallel(ctx, cpu_div_up(c->count, TASK_ELEMS), (double)c->count,
               copy_task, (void *)c);
  return WGC_OK;
}

/* ---- gather ---------------------------------------------------------------
 */

/* Output elements [dst, dst + n) := data elements [src, src + n): the
 * same type copied bit for bit, another converted as wgc_cast does (on
 * the bits, so a NaN keeps its payload). */
static void gather_run(const wgc_gather_args *g, const uint8_t *data,
                       size_t src, uint8_t *out, size_t dst, size_t n) {
  wgc_dtype dt = g->data_type, ot = g->output_type;
  size_t eb = wgc_dtype_block_bytes(ot);
  if (dt == ot)
    memcpy(out + eb * dst, data + eb * src, eb * n);
  else
    wgc_dtype_convert_run(data, dt, src, out, ot, dst, n);
}

static void cpu_gather_range(const wgc_gather_args *g, size_t pos, size_t end) {
  const uint8_t *data = (const uint8_t *)cpu_ptr(g->data);
  const int32_t *ind = (const int32_t *)(const void *)cpu_ptr(g->indices);
  uint8_t *out = (uint8_t *)cpu_ptr(g->output);
  size_t eb = wgc_dtype_block_bytes(g->output_type);
  while (pos < end) {
    size_t row = pos / g->inner, c = pos % g->inner;
    size_t run = cpu_min(g->inner - c, end - pos);
    size_t o = row / g->n_indices, j = row % g->n_indices;
    int32_t k = ind[j];
    /* ONNX counts a negative index from the end; anything still outside
     * the axis reads nothing and gives zeros. */
    size_t at = k < 0 ? g->len - (size_t)(-(int64_t)k) : (size_t)k;
    bool inside = k < 0 ? (size_t)(-(int64_t)k) <= g->len : at < g->len;
    if (inside)
      gather_run(g, data, (o * g->len + at) * g->inner + c, out, pos, run);
    else
      memset(out + eb * pos, 0, eb * run);
    pos += run;
  }
}

static void gather_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const wgc_gather_args *g = arg;
  size_t total = g->outer * g->n_indices * g->inner, pos = task * TASK_ELEMS;
  cpu_gather_range(g, pos, cpu_min(total, pos + TASK_ELEMS));
}

wgc_status cpu_gather(wgc_context *ctx, const wgc_gather_args *g) {
  size_t total = g->outer * g->n_indices * g->inner;
  cpu_parallel(ctx, cpu_div_up(total, TASK_ELEMS), (double)total, gather_task,
               (void *)g);
  return WGC_OK;
}

/* ---- where ------------------------------------------------------------------
 */

/* An f16 or bf16 cond is tested on its bits too: true unless +-0. */
static bool where_cond(const void *c, wgc_dtype t, size_t i) {
  if (t == WGC_DTYPE_F32)
    return ((const uint32_t *)c)[i] << 1 != 0;
  return (((const uint16_t *)c)[i] & 0x7fffu) != 0;
}

/* cpu_where_range with an operand not F32: the chosen value converted as
 * wgc_cast does (exact to a type that holds it, NaN payloads included). */
static void where_typed(const wgc_where_args *w, size_t pos, size_t end) {
  const void *cond = cpu_ptr(w->cond), *a = cpu_ptr(w->a), *b = cpu_ptr(w->b);
  void *out = cpu_ptr(w->out);
  const size_t *strides[3] = {w->stride_cond, w->stride_a, w->stride_b};
  size_t idx[WGC_MAX_RANK], off[3], last = w->rank - 1;
  index_of(pos, w->shape, w->rank, strides, 3, idx, off);
  while (pos < end) {
    size_t run = cpu_min(w->shape[last] - idx[last], end - pos);
    for (size_t i = 0; i < run; i++) {
      bool t =
          where_cond(cond, w->cond_type, off[0] + i * w->stride_cond[last]);
      /* on the bits, as wgc_cast: a float in between would quiet a
       * signalling NaN */
      if (t)
        wgc_dtype_convert_run(a, w->a_type, off[1] + i * w->stride_a[last], out,
                              w->out_type, pos + i, 1);
      else
        wgc_dtype_convert_run(b, w->b_type, off[2] + i * w->stride_b[last], out,
                              w->out_type, pos + i, 1);
    }
    pos += run;
    index_step(run, w->shape, w->rank, strides, 3, idx, off);
  }
}

static void cpu_where_range(const wgc_where_args *w, size_t pos, size_t end) {
  if (w->cond_type != WGC_DTYPE_F32 || w->a_type != WGC_DTYPE_F32 ||
      w->b_type != WGC_DTYPE_F32 || w->out_type != WGC_DTYPE_F32) {
    where_typed(w, pos, end);
    return;
  }
  const uint32_t *cond = (const uint32_t *)(const void *)cpu_ptr(w->cond);
  const uint32_t *a = (const uint32_t *)(const void *)cpu_ptr(w->a);
  const uint32_t *b = (const uint32_t *)(const void *)cpu_ptr(w->b);
  uint32_t *out = (uint32_t *)(void *)cpu_ptr(w->out);
  const size_t *strides[3] = {w->stride_cond, w->stride_a, w->stride_b};
  size_t idx[WGC_MAX_RANK], off[3], last = w->rank - 1;
  size_t sc = w->stride_cond[last], sa = w->stride_a[last],
         sb = w->stride_b[last];
  index_of(pos, w->shape, w->rank, strides, 3, idx, off);
  while (pos < end) {
    size_t run = cpu_min(w->shape[last] - idx[last], end - pos);
    const uint32_t *c = cond + off[0], *x = a + off[1], *y = b + off[2];
    /* true unless +0 or -0: by bits, so NaN is true and no flushing of
     * subnormals can make one false */
    for (size_t i = 0; i < run; i++)
      out[pos + i] = c[i * sc] << 1 ? x[i * sa] : y[i * sb];
    pos += run;
    index_step(run, w->shape, w->rank, strides, 3, idx, off);
  }
}

static void where_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const wgc_where_args *w = arg;
  size_t pos = task * TASK_ELEMS;
  cpu_where_range(w, pos, cpu_min(w->count, pos + TASK_ELEMS));
}

wgc_status cpu_where(wgc_context *ctx, const wgc_where_args *w) {
  cpu_parallel(ctx, cpu_div_up(w->count, TASK_ELEMS), (double)w->count,
               where_task, (void *)w);
  return WGC_OK;
}

/* ---- pieces for the wasm32 queue ------------------------------------------
 */

/* Ranges of output elements. */
static void plan_range(size_t n, cpu_split *s) {
  s->work = (double)n;
  s->group = cpu_fit(s, 1.0, n);
  s->pieces = cpu_div_up(n, s->group);
}

#define MOVEMENT_PIECES(name, count)                                           \
  wgc_status cpu_split_##name##_plan(const wgc_##name##_args *a,               \
                                     cpu_split *s) {                           \
    plan_range(count, s);                                                      \
    return WGC_OK;                                                             \
  }                                                                            \
  wgc_status cpu_split_##name##_run(                                           \
      wgc_context *ctx, const wgc_##name##_args *a, cpu_split *s, size_t i) {  \
    (void)ctx;                                                                 \
    size_t pos = i * s->group;                                                 \
    cpu_##name##_range(a, pos, cpu_min(count, pos + s->group));                \
    return WGC_OK;                                                             \
  }
MOVEMENT_PIECES(copy_strided, a->count)
MOVEMENT_PIECES(gather, a->outer * a->n_indices * a->inner)
MOVEMENT_PIECES(where, a->count)
#undef MOVEMENT_PIECES
