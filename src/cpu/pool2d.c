/* 2-D pooling over output rows (a row: one output row of one plane): MAX
 * in float with NaN winning, AVG summed in double, each output rounded
 * once to its type. Padding takes no part; see wgc.h for the empty
 * window. */
#include "cpu.h"
#include "dtype.h"
#include "split.h"

#include <math.h>

#define TASK_ROWS 64
#define RUN 256 /* outputs of a 2-byte type stored at a time */

/* The window taps i < n with 0 <= base + i*step < limit: [*lo, *hi). */
static void taps_inside(long long base, size_t n, size_t step, size_t limit,
                        size_t *lo, size_t *hi) {
  long long st = (long long)step, first = 0;
  if (base < 0)
    first = (-base + st - 1) / st;
  long long last = (long long)limit - 1 - base; /* i*step <= last */
  long long end = last < 0 ? 0 : last / st + 1;
  if (end > (long long)n)
    end = (long long)n;
  *lo = (size_t)first;
  *hi = first < end ? (size_t)end : (size_t)first;
}

static void pool2d_rows(const wgc_pool2d_args *a, size_t g0, size_t g1) {
  const wgc_pool2d_desc *d = &a->d;
  const void *x = cpu_ptr(a->input);
  void *y = cpu_ptr(a->output);
  wgc_dtype it = d->input_type;
  for (size_t g = g0; g < g1; g++) {
    size_t plane = g / a->p, oy = g % a->p;
    size_t xp = plane * d->h * d->w;
    long long by = (long long)(oy * d->stride_h) - (long long)d->pad_h;
    size_t i0, i1;
    taps_inside(by, d->r, d->dilation_h, d->h, &i0, &i1);
    /* a 2-byte output is stored in runs of up to RUN outputs */
    double run[RUN];
    size_t run_at = g * a->q, run_n = 0;
    for (size_t ox = 0; ox < a->q; ox++) {
      long long bx = (long long)(ox * d->stride_w) - (long long)d->pad_w;
      size_t j0, j1;
      taps_inside(bx, d->s, d->dilation_w, d->w, &j0, &j1);
      double out;
      if (d->mode == WGC_POOL_MAX) {
        float m = -INFINITY;
        for (size_t i = i0; i < i1; i++) {
          size_t row =
              xp + (size_t)(by + (long long)(i * d->dilation_h)) * d->w;
          for (size_t j = j0; j < j1; j++) {
            float v = cpu_load(
                x, it, row + (size_t)(bx + (long long)(j * d->dilation_w)));
            if (isnan(v) || isnan(m))
              m = isnan(m) ? m : v;
            else if (v > m)
              m = v;
          }
        }
        out = m;
      } else {
        double sum = 0;
        for (size_t i = i0; i < i1; i++) {
          size_t row =
              xp + (size_t)(by + (long long)(i * d->dilation_h)) * d->w;
          for (size_t j = j0; j < j1; j++)
            sum += cpu_load(
                x, it, row + (size_t)(bx + (long long)(j * d->dilation_w)));
        }
        /* in double: r*s may exceed a 32-bit size_t */
        double count = d->count_include_pad
                           ? (double)d->r * (double)d->s
                           : (double)(i1 - i0) * (double)(j1 - j0);
        out = count > 0 ? sum / count : 0.0;
      }
      if (d->output_type == WGC_DTYPE_F32) {
        ((float *)y)[g * a->q + ox] = (float)out;
        continue;
      }
      run[run_n++] = out;
      if (run_n == RUN || ox + 1 == a->q) {
        wgc_dtype_store_doubles(y, d->output_type, run_at, run, run_n);
        run_at += run_n;
        run_n = 0;
      }
    }
  }
}

typedef struct pool_job {
  const wgc_pool2d_args *a;
  size_t rows;
} pool_job;

static void pool_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const pool_job *job = arg;
  size_t g0 = task * TASK_ROWS;
  pool2d_rows(job->a, g0, cpu_min(job->rows, g0 + TASK_ROWS));
}

static double pool2d_row_work(const wgc_pool2d_args *a) {
  return (double)a->q * (double)a->d.r * (double)a->d.s + (double)a->q;
}

wgc_status cpu_pool2d(wgc_context *ctx, const wgc_pool2d_args *a) {
  pool_job job = {.a = a, .rows = a->d.n * a->d.c * a->p};
  cpu_parallel(ctx, cpu_div_up(job.rows, TASK_ROWS),
               (double)job.rows * pool2d_row_work(a), pool_task, &job);
  return WGC_OK;
}

/* ---- pieces for the wasm32 queue (split.h): runs of output rows ----------
 */
wgc_status cpu_split_pool2d_plan(const wgc_pool2d_args *a, cpu_split *s) {
  size_t rows = a->d.n * a->d.c * a->p;
  double row = pool2d_row_work(a);
  s->work = (double)rows * row;
  s->group = cpu_fit(s, row, rows);
  s->pieces = cpu_div_up(rows, s->group);
  return WGC_OK;
}

wgc_status cpu_split_pool2d_run(wgc_context *ctx, const wgc_pool2d_args *a,
                                cpu_split *s, size_t i) {
  (void)ctx;
  size_t rows = a->d.n * a->d.c * a->p;
  pool2d_rows(a, i * s->group, cpu_min(rows, (i + 1) * s->group));
  return WGC_OK;
}
