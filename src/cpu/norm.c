/* softmax, log-softmax, LayerNorm and RMSNorm over the middle axis of
 * [outer, len, inner], in double. Each line (one outer index and a block of
 * up to CHUNK adjacent columns) is read twice: the statistics are gathered
 * in one sweep (softmax: running max and sum of exp(x - max), rescaled when
 * the max grows; LayerNorm: mean and sum of squared deviations, merged
 * block by block;
 * RMSNorm: the sum of squares), then a second sweep writes the output, so
 * the output may be the input. The split form (split.h) runs the same two
 * sweeps in chunks of rows, the statistics kept between pieces. Typed
 * operands (f16, bf16; f16 scale and bias) are converted as they are read
 * and the double result rounded once as it is stored; the f32 loops stay
 * as they are. */
#include "cpu.h"
#include "dtype.h"
#include "split.h"

#include <math.h>
#include <stdlib.h>

#define CHUNK 256       /* columns side by side */
#define TASK_WORK 65536 /* input elements per task, roughly */

/* Per column: softmax (max, sum), LayerNorm (count, mean, M2), RMSNorm
 * (sum of squares). A NaN max marks a softmax row that is NaN. stat_finish
 * then puts the factor the output needs in place. */
typedef struct norm_stat {
  double a, b, c;
} norm_stat;

static void stat_init(const wgc_norm_args *n, norm_stat *st, size_t w) {
  for (size_t j = 0; j < w; j++)
    st[j] = (norm_stat){n->kind <= WGC_NORM_LOG_SOFTMAX ? -INFINITY : 0.0, 0.0,
                        0.0};
}

/* LayerNorm's statistics: blocks of up to LAYER_BLOCK rows per column get
 * their own mean and sum of squared deviations (two passes over the block,
 * no dependency from one element to the next), merged into the running
 * ones by Chan et al.'s formula: one division per block where Welford's
 * update has one per element on the chain that sets the pace. */
#define LAYER_BLOCK 8

static void layer_add(const float *x, size_t stride, size_t r0, size_t r1,
                      size_t w, norm_stat *st) {
  for (size_t r = r0; r < r1; r += LAYER_BLOCK) {
    size_t rows = r1 - r < LAYER_BLOCK ? r1 - r : LAYER_BLOCK;
    const float *block = x + r * stride;
    for (size_t j = 0; j < w; j++) {
      double sum = 0.0, m2 = 0.0;
      for (size_t q = 0; q < rows; q++)
        sum += block[q * stride + j];
      double mean = sum / (double)rows;
      for (size_t q = 0; q < rows; q++) {
        double d = block[q * stride + j] - mean;
        m2 += d * d;
      }
      norm_stat *s = &st[j];
      double count = s->a + (double)rows, delta = mean - s->b;
      double share = (double)rows / count;
      s->b += delta * share;
      s->c += m2 + delta * delta * s->a * share;
      s->a = count;
    }
  }
}

/* Folds rows [r0, r1) of the w columns at x (row stride stride) in. */
static void stat_add_f32(const wgc_norm_args *n, const float *x, size_t stride,
                         size_t r0, size_t r1, size_t w, norm_stat *st) {
  if (n->kind == WGC_NORM_LAYER) {
    layer_add(x, stride, r0, r1, w, st);
    return;
  }
  for (size_t r = r0; r < r1; r++) {
    const float *row = x + r * stride;
    for (size_t j = 0; j < w; j++) {
      double v = row[j];
      norm_stat *s = &st[j];
      switch (n->kind) {
      case WGC_NORM_SOFTMAX:
      case WGC_NORM_LOG_SOFTMAX:
        /* exp(+inf - +inf) is NaN in the formula: a +inf makes the row NaN */
        if (isnan(v) || v == INFINITY)
          s->a = NAN;
        else if (isnan(s->a) || v == -INFINITY)
          ;
        else if (v > s->a) {
          s->b = s->b * exp(s->a - v) + 1.0;
          s->a = v;
        } else {
          s->b += exp(v - s->a);
        }
        break;
      case WGC_NORM_LAYER: /* layer_add */
        break;
      case WGC_NORM_RMS:
        s->a += v * v;
        break;
      }
    }
  }
}

/* Folds rows [r0, r1) of the w columns from element at of the input in
 * (row stride inner): f32 in place, other types through a buffer of
 * LAYER_BLOCK rows of CHUNK columns, so LayerNorm's blocks stay those of
 * the f32 path. */
static void stat_add(const wgc_norm_args *n, size_t at, size_t r0, size_t r1,
                     size_t w, norm_stat *st) {
  const void *x = cpu_ptr(n->input);
  if (n->input_type == WGC_DTYPE_F32) {
    stat_add_f32(n, (const float *)x + at, n->inner, r0, r1, w, st);
    return;
  }
  float buf[LAYER_BLOCK * CHUNK];
  for (size_t j0 = 0; j0 < w; j0 += CHUNK) {
    size_t cw = cpu_min(CHUNK, w - j0);
    for (size_t r = r0; r < r1; r += LAYER_BLOCK) {
      size_t rows = cpu_min(LAYER_BLOCK, r1 - r);
      for (size_t q = 0; q < rows; q++)
        wgc_dtype_load_run(x, n->input_type, at + (r + q) * n->inner + j0, cw,
                           buf + q * CHUNK);
      stat_add_f32(n, buf, CHUNK, 0, rows, cw, st + j0);
    }
  }
}

/* Turns the statistics into what the output needs per column: log(sum)
 * for log-softmax, 1/sqrt(var + eps) or 1/sqrt(mean square + eps) for the
 * norms (into a), so that the second sweep has no square root or log. */
static void stat_finish(const wgc_norm_args *n, norm_stat *st, size_t w) {
  double len = (double)n->len, eps = (double)n->epsilon;
  for (size_t j = 0; j < w; j++) {
    norm_stat *s = &st[j];
    if (n->kind == WGC_NORM_LOG_SOFTMAX)
      s->c = log(s->b);
    else if (n->kind == WGC_NORM_LAYER)
      s->a = 1.0 / sqrt(s->c / len + eps);
    else if (n->kind == WGC_NORM_RMS)
      s->a = 1.0 / sqrt(s->a / len + eps);
  }
}

/* The output of one element of value v from its column's statistics. */
static inline double stat_out(const wgc_norm_args *n, const norm_stat *s,
                              double v) {
  switch (n->kind) {
  case WGC_NORM_SOFTMAX:
    return exp(v - s->a) / s->b;
  case WGC_NORM_LOG_SOFTMAX:
    return (v - s->a) - s->c;
  case WGC_NORM_LAYER:
    return (v - s->b) * s->a;
  case WGC_NORM_RMS:
    return v * s->a;
  }
  return 0.0;
}

/* stat_apply for one column (inner 1: the rows are contiguous) of typed
 * operands, in runs along the rows. */
static void stat_apply_rows(const wgc_norm_args *n, size_t at, size_t r0,
                            size_t r1, const norm_stat *st) {
  const void *scale = n->has_scale ? cpu_ptr(n->scale) : NULL;
  const void *bias = n->has_bias ? cpu_ptr(n->bias) : NULL;
  float in[CHUNK];
  double out[CHUNK];
  for (size_t r = r0; r < r1; r += CHUNK) {
    size_t m = cpu_min(CHUNK, r1 - r);
    wgc_dtype_load_run(cpu_ptr(n->input), n->input_type, at + r, m, in);
    for (size_t q = 0; q < m; q++) {
      out[q] = stat_out(n, st, in[q]);
      if (scale)
        out[q] *= cpu_load(scale, n->scale_type, r + q);
      if (bias)
        out[q] += cpu_load(bias, n->bias_type, r + q);
    }
    wgc_dtype_store_doubles(cpu_ptr(n->output), n->output_type, at + r, out, m);
  }
}

/* Writes rows [r0, r1) of the w columns from element at of the input to
 * the output (after stat_finish). */
static void stat_apply(const wgc_norm_args *n, size_t at, size_t r0, size_t r1,
                       size_t w, const norm_stat *st) {
  const void *scale = n->has_scale ? cpu_ptr(n->scale) : NULL;
  const void *bias = n->has_bias ? cpu_ptr(n->bias) : NULL;
  const void *x = cpu_ptr(n->input);
  void *y = cpu_ptr(n->output);
  bool f32 = n->input_type == WGC_DTYPE_F32 && n->output_type == WGC_DTYPE_F32;
  if (!f32 && n->inner == 1) {
    stat_apply_rows(n, at, r0, r1, st);
    return;
  }
  for (size_t r = r0; r < r1; r++) {
    /* one conversion per row for scale and bias; an f32 one read in place
     * (cpu_load): over the last axis a LayerNorm's rows are single
     * elements, and a call per element cost wasm32 half the op's time */
    double sc = scale ? cpu_load(scale, n->scale_type, r) : 1.0;
    double bi = bias ? cpu_load(bias, n->bias_type, r) : 0.0;
    size_t e = at + r * n->inner;
    if (f32) {
      const float *xr = (const float *)x + e;
      float *yr = (float *)y + e;
      for (size_t j = 0; j < w; j++) {
        double out = stat_out(n, &st[j], xr[j]);
        if (scale)
          out *= sc;
        if (bias)
          out += bi;
        yr[j] = (float)out;
      }
      continue;
    }
    float in[CHUNK];
    double out[CHUNK];
    wgc_dtype_load_run(x, n->input_type, e, w, in);
    for (size_t j = 0; j < w; j++) {
      out[j] = stat_out(n, &st[j], in[j]);
      if (scale)
        out[j] *= sc;
      if (bias)
        out[j] += bi;
    }
    wgc_dtype_store_doubles(y, n->output_type, e, out, w);
  }
}

typedef struct norm_job {
  const wgc_norm_args *n;
  size_t chunks; /* lines per outer index */
  size_t lines_per_task, lines;
} norm_job;

static void norm_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const norm_job *job = arg;
  const wgc_norm_args *n = job->n;
  norm_stat st[CHUNK];
  size_t first = task * job->lines_per_task;
  size_t end = cpu_min(first + job->lines_per_task, job->lines);
  for (size_t line = first; line < end; line++) {
    size_t o = line / job->chunks, i0 = line % job->chunks * CHUNK;
    size_t w = cpu_min(CHUNK, n->inner - i0), at = o * n->len * n->inner + i0;
    stat_init(n, st, w);
    stat_add(n, at, 0, n->len, w, st);
    stat_finish(n, st, w);
    stat_apply(n, at, 0, n->len, w, st);
  }
}

wgc_status cpu_norm(wgc_context *ctx, const wgc_norm_args *n) {
  norm_job job = {.n = n};
  job.chunks = cpu_div_up(n->inner, CHUNK);
  job.lines = n->outer * job.chunks;
  size_t line_work = 2 * n->len * cpu_min(n->inner, CHUNK);
  job.lines_per_task = TASK_WORK / line_work ? TASK_WORK / line_work : 1;
  size_t tasks = cpu_div_up(job.lines, job.lines_per_task);
  cpu_parallel(ctx, tasks, 2.0 * (double)n->outer * n->len * n->inner,
               norm_task, &job);
  return WGC_OK;
}

/* ---- pieces for the deferred queue -----------------------------------------
 * A slab too long for a piece: pieces are (outer index, block of
 * block_size[0] columns, step), steps being blocks[1] chunks of
 * block_size[1] rows gathering statistics, then as many writing the
 * output; the statistics wait in s->acc between pieces. */
#define NORM_COLUMNS 1024

static double norm_cost(const wgc_norm_args *n) {
  /* two visits; softmax calls exp in each (a libm call is some 100 units) */
  return n->kind <= WGC_NORM_LOG_SOFTMAX ? 200.0 : 8.0;
}

wgc_status cpu_split_norm_plan(const wgc_norm_args *n, cpu_split *s) {
  double slab = norm_cost(n) * (double)n->len * (double)n->inner;
  s->work = slab * (double)n->outer;
  if (slab <= s->piece_work) {
    s->group = cpu_fit(s, slab, n->outer);
    s->pieces = cpu_div_up(n->outer, s->group);
    return WGC_OK;
  }
  size_t cols = cpu_fit(s, norm_cost(n) * (double)n->len, n->inner);
  if (cols < NORM_COLUMNS)
    cols = cpu_min(n->inner, NORM_COLUMNS);
  s->group = 0;
  s->block_size[0] = cols;
  s->block_size[1] = cpu_fit(s, norm_cost(n) * (double)cols, n->len);
  s->blocks[0] = cpu_div_up(n->inner, cols);
  s->blocks[1] = cpu_div_up(n->len, s->block_size[1]);
  s->pieces = n->outer * s->blocks[0] * 2 * s->blocks[1];
  s->acc = malloc(cols * sizeof(norm_stat));
  return s->acc ? WGC_OK : WGC_ERR_OUT_OF_MEMORY;
}

wgc_status cpu_split_norm_run(wgc_context *ctx, const wgc_norm_args *n,
                              cpu_split *s, size_t i) {
  if (s->group) {
    wgc_norm_args a = *n;
    size_t o0 = i * s->group;
    a.outer = cpu_min(s->group, n->outer - o0);
    a.input = cpu_ref_typed(n->input, n->input_type, o0 * n->len * n->inner);
    a.output = cpu_ref_typed(n->output, n->output_type, o0 * n->len * n->inner);
    return cpu_norm(ctx, &a);
  }
  size_t step = i % (2 * s->blocks[1]);
  i /= 2 * s->blocks[1];
  size_t i0 = i % s->blocks[0] * s->block_size[0], o = i / s->blocks[0];
  size_t w = cpu_min(s->block_size[0], n->inner - i0);
  size_t chunk = step % s->blocks[1];
  size_t r0 = chunk * s->block_size[1];
  size_t r1 = cpu_min(n->len, r0 + s->block_size[1]);
  size_t at = o * n->len * n->inner + i0;
  norm_stat *st = (norm_stat *)s->acc;
  if (step < s->blocks[1]) {
    if (step == 0)
      stat_init(n, st, w);
    stat_add(n, at, r0, r1, w, st);
  } else {
    if (step == s->blocks[1])
      stat_finish(n, st, w);
    stat_apply(n, at, r0, r1, w, st);
  }
  return WGC_OK;
}
