/* Reductions over the middle axis of [outer, len, inner]. Sums accumulate in
 * double (far better than pairwise float summation); MAX and MIN propagate
 * NaN as numpy does. The work is cut into lines: one output (inner == 1,
 * a contiguous run of len) or up to CHUNK adjacent outputs (inner > 1,
 * accumulated row by row so the reads stay contiguous). SUM, MEAN, MAX and
 * MIN have their own loops; the other ops and the arg reductions go through
 * reduce_acc.h's state. Several separate axes (nd > 0) are reduced output
 * by output, walking the reduced dims as an odometer. Typed operands (f16,
 * bf16) go through float copies (reduce_typed), so the f32 loops stay as
 * they are. */
#include "cpu.h"
#include "dtype.h"
#include "reduce_acc.h"

#include <stdlib.h>

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

/* The ops with loops of their own. */
static bool plain_op(const wgc_reduce_args *r) {
  return r->arg == WGC_ARG_NONE &&
         (r->op == WGC_REDUCE_SUM || r->op == WGC_REDUCE_MEAN ||
          r->op == WGC_REDUCE_MAX || r->op == WGC_REDUCE_MIN);
}

/* One output from len contiguous floats. */
static float reduce_run(const wgc_reduce_args *r, const float *x, size_t len) {
  wgc_reduce_op op = r->op;
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
static void reduce_cols(const wgc_reduce_args *ra, const float *x, size_t len,
                        size_t inner, size_t w, float *out) {
  wgc_reduce_op op = ra->op;
  if (!plain_op(ra)) {
    racc s[CHUNK];
    for (size_t j = 0; j < w; j++)
      s[j] = racc_init(ra);
    for (size_t k = 0; k < len; k++) {
      const float *row = x + k * inner;
      for (size_t j = 0; j < w; j++)
        racc_add(ra, &s[j], row[j], k);
    }
    for (size_t j = 0; j < w; j++)
      racc_store(ra, &s[j], len, &out[j]);
    return;
  }
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

void cpu_reduce_span(const wgc_reduce_args *r, size_t k, size_t r0, size_t r1,
                     racc *s) {
  /* output k's offset, from the kept dims (innermost first) */
  size_t base = 0, step = 1, rest = k;
  size_t stride[WGC_MAX_RANK];
  for (size_t d = r->nd; d-- > 0;) {
    stride[d] = step;
    if (!r->red[d]) {
      base += rest % r->dims[d] * step;
      rest /= r->dims[d];
    }
    step *= r->dims[d];
  }
  /* element r0 of the span, and the odometer of the reduced dims */
  size_t idx[WGC_MAX_RANK] = {0}, off = base;
  rest = r0;
  for (size_t d = r->nd; d-- > 0;)
    if (r->red[d]) {
      idx[d] = rest % r->dims[d];
      rest /= r->dims[d];
      off += idx[d] * stride[d];
    }
  size_t last = r->nd - 1;
  while (!r->red[last])
    last--;
  const float *in = cpu_ptr(r->input);
  bool f32 = r->input_type == WGC_DTYPE_F32;
  for (size_t e = r0; e < r1;) {
    /* a run along the innermost reduced dim */
    size_t run = r->dims[last] - idx[last];
    if (run > r1 - e)
      run = r1 - e;
    size_t st = stride[last];
    if (f32)
      for (size_t j = 0; j < run; j++)
        racc_add(r, s, in[off + j * st], e + j);
    else /* the split pieces' typed input (cpu_reduce converts first) */
      for (size_t j = 0; j < run; j++)
        racc_add(r, s, wgc_dtype_load(in, r->input_type, off + j * st), e + j);
    e += run;
    idx[last] += run;
    off += run * st;
    /* carry into the next reduced dim out (there is one: e < r1) */
    for (size_t d = last; e < r1 && idx[d] == r->dims[d];) {
      off -= idx[d] * stride[d];
      idx[d] = 0;
      do
        d--;
      while (!r->red[d]);
      idx[d]++;
      off += stride[d];
    }
  }
}

static void multi_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const reduce_job *job = arg;
  const wgc_reduce_args *r = job->r;
  size_t k0 = task * job->lines_per_task;
  size_t end =
      k0 + job->lines_per_task < r->outer ? k0 + job->lines_per_task : r->outer;
  for (size_t k = k0; k < end; k++) {
    racc s = racc_init(r);
    cpu_reduce_span(r, k, 0, r->len, &s);
    racc_store(r, &s, r->len, &job->out[k]);
  }
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
    if (r->inner == 1 && !plain_op(r)) {
      racc s = racc_init(r);
      for (size_t k = 0; k < r->len; k++)
        racc_add(r, &s, in[k], k);
      racc_store(r, &s, r->len, out);
    } else if (r->inner == 1)
      *out = reduce_run(r, in, r->len);
    else
      reduce_cols(r, in, r->len, r->inner,
                  r->inner - i0 < CHUNK ? r->inner - i0 : CHUNK, out);
  }
}

/* A typed input converted into a float copy, the f32 reduction run into a
 * float result where the output is typed, then rounded into it. */
static wgc_status reduce_typed(wgc_context *ctx, const wgc_reduce_args *r) {
  size_t in_n = r->len == 0 ? 0 : r->outer * r->len * (r->nd ? 1 : r->inner);
  size_t out_n = r->outer * r->inner;
  wgc_reduce_args a = *r;
  float *x = NULL, *y = NULL;
  if (r->input_type != WGC_DTYPE_F32) {
    x = malloc(in_n ? in_n * sizeof *x : 1);
    if (x)
      wgc_dtype_load_run(cpu_ptr(r->input), r->input_type, 0, in_n, x);
    a.input = (wgc_ref){.mem = x};
    a.input_type = WGC_DTYPE_F32;
  }
  if (r->output_type != WGC_DTYPE_F32) {
    y = malloc(out_n * sizeof *y);
    a.output = (wgc_ref){.mem = y};
    a.output_type = WGC_DTYPE_F32;
  }
  wgc_status s =
      (r->input_type != WGC_DTYPE_F32 && !x) ||
              (r->output_type != WGC_DTYPE_F32 && !y)
          ? wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                     "%s: no host memory for the converted operands", r->fn)
          : cpu_reduce(ctx, &a);
  if (s == WGC_OK && y)
    wgc_dtype_store_run(cpu_ptr(r->output), r->output_type, 0, y, out_n);
  free(x);
  free(y);
  return s;
}

wgc_status cpu_reduce(wgc_context *ctx, const wgc_reduce_args *r) {
  if (r->input_type != WGC_DTYPE_F32 || r->output_type != WGC_DTYPE_F32)
    return reduce_typed(ctx, r);
  reduce_job job = {.r = r, .in = cpu_ptr(r->input), .out = cpu_ptr(r->output)};
  if (r->len == 0) { /* the identity (the front end rejects the rest) */
    racc s = racc_init(r);
    for (size_t i = 0; i < r->outer * r->inner; i++)
      racc_store(r, &s, 0, &job.out[i]);
    return WGC_OK;
  }
  if (r->nd) {
    job.lines_per_task = TASK_WORK / r->len ? TASK_WORK / r->len : 1;
    size_t tasks = (r->outer + job.lines_per_task - 1) / job.lines_per_task;
    cpu_parallel(ctx, tasks, (double)r->outer * r->len, multi_task, &job);
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
