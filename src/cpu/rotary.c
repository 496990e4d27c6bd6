/* RotaryEmbedding (ONNX, opset 23) over rows of head_dim: pairs of the
 * first rotary_dim elements are rotated by the cos/sin cache row of the
 * row's position, in double; the rest is copied. A position outside the
 * cache rotates by cos = sin = 0. */
#include "cpu.h"
#include "split.h"

#include <string.h>

#define TASK_ROWS 256

/* Rows [r0, r1) of the tensor, rows numbered in its layout. */
static void rotary_rows(const wgc_rotary_args *r, size_t r0, size_t r1) {
  const wgc_rotary_desc *d = &r->d;
  size_t half = d->rotary_dim / 2, hd = d->head_dim;
  const float *x = cpu_ptr(r->input);
  float *y = cpu_ptr(r->output);
  const float *cosc = cpu_ptr(r->cos_cache), *sinc = cpu_ptr(r->sin_cache);
  const int32_t *pos =
      r->has_position_ids ? (const int32_t *)cpu_ptr(r->position_ids) : NULL;
  for (size_t row = r0; row < r1; row++) {
    size_t b, s;
    if (d->layout == WGC_ROTARY_BSHD) {
      b = row / (d->seq * d->heads);
      s = row / d->heads % d->seq;
    } else {
      b = row / (d->heads * d->seq);
      s = row % d->seq;
    }
    const float *c = NULL, *sn = NULL;
    if (pos) {
      int32_t p = pos[b * d->seq + s];
      if (p >= 0 && (size_t)p < d->max_positions) {
        c = cosc + (size_t)p * half;
        sn = sinc + (size_t)p * half;
      }
    } else {
      c = cosc + (b * d->seq + s) * half;
      sn = sinc + (b * d->seq + s) * half;
    }
    const float *xr = x + row * hd;
    float *yr = y + row * hd;
    for (size_t k = 0; k < half; k++) {
      size_t i1 = d->interleaved ? 2 * k : k;
      size_t i2 = d->interleaved ? 2 * k + 1 : k + half;
      double cv = c ? c[k] : 0.0, sv = sn ? sn[k] : 0.0;
      double x1 = xr[i1], x2 = xr[i2];
      yr[i1] = (float)(cv * x1 - sv * x2);
      yr[i2] = (float)(sv * x1 + cv * x2);
    }
    if (yr != xr)
      memcpy(yr + d->rotary_dim, xr + d->rotary_dim,
             (hd - d->rotary_dim) * sizeof *yr);
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
