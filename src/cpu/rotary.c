/* RotaryEmbedding (ONNX, opset 23) over rows of head_dim: pairs of the
 * first rotary_dim elements are rotated by the cos/sin cache row of the
 * row's position, in double, each result rounded once to the output's
 * type; the rest is copied. A position outside the cache rotates by
 * cos = sin = 0. */
#include "cpu.h"
#include "dtype.h"
#include "split.h"

#include <string.h>

#define TASK_ROWS 256
#define RUN 64 /* pairs converted and rotated at a time */

/* Rows [r0, r1) of the tensor, rows numbered in its layout. */
static void rotary_rows(const wgc_rotary_args *r, size_t r0, size_t r1) {
  const wgc_rotary_desc *d = &r->d;
  size_t half = d->rotary_dim / 2, hd = d->head_dim;
  wgc_dtype it = d->input_type, ot = d->output_type, ct = d->cache_type;
  const void *x = cpu_ptr(r->input), *cosc = cpu_ptr(r->cos_cache),
             *sinc = cpu_ptr(r->sin_cache);
  void *y = cpu_ptr(r->output);
  const int32_t *pos =
      r->has_position_ids ? (const int32_t *)cpu_ptr(r->position_ids) : NULL;
  size_t ib = it == WGC_DTYPE_F32 ? 4 : 2;
  for (size_t row = r0; row < r1; row++) {
    size_t b, s;
    if (d->layout == WGC_ROTARY_BSHD) {
      b = row / (d->seq * d->heads);
      s = row / d->heads % d->seq;
    } else {
      b = row / (d->heads * d->seq);
      s = row % d->seq;
    }
    size_t c = SIZE_MAX; /* the cache element of the row's pair 0 */
    if (pos) {
      int32_t p = pos[b * d->seq + s];
      if (p >= 0 && (size_t)p < d->max_positions)
        c = (size_t)p * half;
    } else {
      c = (b * d->seq + s) * half;
    }
    size_t xr = row * hd;
    /* pairs k0 .. k0 + m at a time: the inputs, cos and sin loaded as
     * runs, the results stored as runs (interleaved: one of 2m elements;
     * else one in each half of the rotated part) */
    float x1[RUN], x2[RUN], cv[RUN], sv[RUN];
    double y1[RUN], y2[RUN], yi[2 * RUN];
    for (size_t k0 = 0; k0 < half; k0 += RUN) {
      size_t m = cpu_min(RUN, half - k0);
      if (c != SIZE_MAX) {
        wgc_dtype_load_run(cosc, ct, c + k0, m, cv);
        wgc_dtype_load_run(sinc, ct, c + k0, m, sv);
      } else {
        memset(cv, 0, sizeof cv);
        memset(sv, 0, sizeof sv);
      }
      if (d->interleaved) {
        float xi[2 * RUN];
        wgc_dtype_load_run(x, it, xr + 2 * k0, 2 * m, xi);
        for (size_t k = 0; k < m; k++) {
          double xa = xi[2 * k], xb = xi[2 * k + 1];
          yi[2 * k] = (double)cv[k] * xa - (double)sv[k] * xb;
          yi[2 * k + 1] = (double)sv[k] * xa + (double)cv[k] * xb;
        }
        wgc_dtype_store_doubles(y, ot, xr + 2 * k0, yi, 2 * m);
        continue;
      }
      wgc_dtype_load_run(x, it, xr + k0, m, x1);
      wgc_dtype_load_run(x, it, xr + half + k0, m, x2);
      for (size_t k = 0; k < m; k++) {
        y1[k] = (double)cv[k] * x1[k] - (double)sv[k] * x2[k];
        y2[k] = (double)sv[k] * x1[k] + (double)cv[k] * x2[k];
      }
      wgc_dtype_store_doubles(y, ot, xr + k0, y1, m);
      wgc_dtype_store_doubles(y, ot, xr + half + k0, y2, m);
    }
    /* the rest as wgc_copy_strided_ex: bits, or converted on the bits */
    size_t at = xr + d->rotary_dim, rest = hd - d->rotary_dim;
    if (it != ot)
      wgc_dtype_convert_run(x, it, at, y, ot, at, rest);
    else if (y != x)
      memcpy((char *)y + ib * at, (const char *)x + ib * at, ib * rest);
  }
}

typedef struct rotary_job {
  const wgc_rotary_args *r;
  size_t rows;
} rotary_job;

static void rotary_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const rotary_job *job = arg;
  size_t r0 = task * TASK_ROWS;
  rotary_rows(job->r, r0, cpu_min(job->rows, r0 + TASK_ROWS));
}

wgc_status cpu_rotary(wgc_context *ctx, const wgc_rotary_args *r) {
  const wgc_rotary_desc *d = &r->d;
  rotary_job job = {.r = r, .rows = d->batch * d->seq * d->heads};
  cpu_parallel(ctx, cpu_div_up(job.rows, TASK_ROWS),
               4.0 * (double)job.rows * d->head_dim, rotary_task, &job);
  return WGC_OK;
}

/* ---- pieces for the wasm32 queue (split.h): runs of rows ------------------
 */
static size_t rotary_row_count(const wgc_rotary_args *r) {
  return r->d.batch * r->d.seq * r->d.heads;
}

wgc_status cpu_split_rotary_plan(const wgc_rotary_args *r, cpu_split *s) {
  size_t rows = rotary_row_count(r);
  s->work = 4.0 * (double)rows * (double)r->d.head_dim;
  s->group = cpu_fit(s, 4.0 * (double)r->d.head_dim, rows);
  s->pieces = cpu_div_up(rows, s->group);
  return WGC_OK;
}

wgc_status cpu_split_rotary_run(wgc_context *ctx, const wgc_rotary_args *r,
                                cpu_split *s, size_t i) {
  (void)ctx;
  rotary_rows(r, i * s->group,
              cpu_min(rotary_row_count(r), (i + 1) * s->group));
  return WGC_OK;
}
