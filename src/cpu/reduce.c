/* Reductions over the middle axis of [outer, len, inner]. Sums accumulate in
 * double (far better than pairwise float summation); MAX and MIN propagate
 * NaN as numpy does. The work is cut into lines: one output (inner == 1,
 * a contiguous run of len) or up to CHUNK adjacent outputs (inner > 1,
 * accumulated row by row so the reads stay contiguous). */
#include "cpu.h"

#define CHUNK 256       /* outputs accumulated side by side */
#define TASK_WORK 65536 /* input elements per task, roughly */

typedef struct reduce_job {
  const wgc_reduce_args *r;
  const float *in;
  float *out;
  size_t chunks; /* lines per outer index */
  size_t lines_per_task;
  size_t lines;
} reduce_job;

/* NaN wins: once m is NaN, no comparison replaces it. */
static float max_nan(float m, float x) { return x > m || x != x ? x : m; }
static float min_nan(float m, float x) { return x < m || x != x ? x : m; }

/* One output from len contiguous floats. */
static float reduce_run(wgc_reduce_op op, const float *x, size_t len) {
  if (op == WGC_REDUCE_MAX || op == WGC_REDUCE_MIN) {
    float m = x[0];
    if (op == WGC_REDUCE_MAX)
      for (size_t i = 1; i < len; i++)
        m = max_nan(m, x[i]);
    else
      for (size_t i = 1; i < len; i++)
        m = min_nan(m, x[i]);
    return m;
  }
  /* four partial sums break the add latency chain */
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  size_t i = 0;
  for (; i + 4 <= len; i += 4) {
    s0 += x[i];
    s1 += x[i + 1];
    s2 += x[i + 2];
    s3 += x[i + 3];
  }
  for (; i < len; i++)
    s0 += x[i];
  double s = (s0 + s1) + (s2 + s3);
  return (float)(op == WGC_REDUCE_MEAN ? s / (double)len : s);
}

/* w adjacent outputs, reading len rows of stride inner. */
static void reduce_cols(wgc_reduce_op op, const float *x, size_t len,
                        size_t inner, size_t w, float *out) {
  if (op == WGC_REDUCE_MAX || op == WGC_REDUCE_MIN) {
    float m[CHUNK];
    for (size_t j = 0; j < w; j++)
      m[j] = x[j];
    for (size_t r = 1; r < len; r++) {
      const float *row = x + r * inner;
      if (op == WGC_REDUCE_MAX)
        for (size_t j = 0; j < w; j++)
          m[j] = max_nan(m[j], row[j]);
      else
        for (size_t j = 0; j < w; j++)
          m[j] = min_nan(m[j], row[j]);
    }
    for (size_t j = 0; j < w; j++)
      out[j] = m[j];
    return;
  }
  double s[CHUNK];
  for (size_t j = 0; j < w; j++)
    s[j] = 0.0;
  for (size_t r = 0; r < len; r++) {
    const float *row = x + r * inner;
    for (size_t j = 0; j < w; j++)
      s[j] += row[j];
  }
  for (size_t j = 0; j < w; j++)
    out[j] = (float)(op == WGC_REDUCE_MEAN ? s[j] / (double)len : s[j]);
}

static void reduce_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const reduce_job *job = arg;
  const wgc_reduce_args *r = job->r;
  size_t first = task * job->lines_per_task;
  size_t end = first + job->lines_per_task < job->lines
                   ? first + job->lines_per_task
                   : job->lines;
  for (size_t line = first; line < end; line++) {
    size_t o = line / job->chunks, i0 = line % job->chunks * CHUNK;
    float *out = job->out + o * r->inner + i0;
    const float *in = job->in + o * r->len * r->inner + i0;
    if (r->inner == 1)
      *out = reduce_run(r->op, in, r->len);
    else
      reduce_cols(r->op, in, r->len, r->inner,
                  r->inner - i0 < CHUNK ? r->inner - i0 : CHUNK, out);
  }
}

wgc_status cpu_reduce(wgc_context *ctx, const wgc_reduce_args *r) {
  reduce_job job = {.r = r, .in = cpu_ptr(r->input), .out = cpu_ptr(r->output)};
  if (r->len == 0) { /* SUM over nothing (the front end rejects the rest) */
    for (size_t i = 0; i < r->outer * r->inner; i++)
      job.out[i] = 0.0f;
    return WGC_OK;
  }
  job.chunks = (r->inner + CHUNK - 1) / CHUNK;
  job.lines = r->outer * job.chunks;
  size_t line_work = (r->len + 1) * (r->inner < CHUNK ? r->inner : CHUNK);
  job.lines_per_task = TASK_WORK / line_work ? TASK_WORK / line_work : 1;
  size_t tasks = (job.lines + job.lines_per_task - 1) / job.lines_per_task;
  cpu_parallel(ctx, tasks, (double)r->outer * (r->len + 1) * r->inner,
               reduce_task, &job);
  return WGC_OK;
}
