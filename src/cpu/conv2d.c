/* Direct 2-D cross-correlation, NCHW, as cuDNN and PyTorch compute it. One
 * task per output plane (image, output channel); each filter tap adds a
 * shifted, strided copy of one input plane to the plane, over the output
 * columns that the tap keeps inside the input (computed up front, so the
 * inner loop has no bounds tests). Planes are summed in tiles of TILE
 * doubles. Typed operands (f16, bf16; an f16 bias) are converted to
 * float up front and each output rounded once, from the double sum. */
#include "cpu.h"
#include "dtype.h"
#include "split.h"

#include <stdlib.h>
#include <string.h>

typedef struct conv_job {
  const wgc_conv2d_args *c;
  const float *in, *filter, *bias; /* f32, converted where typed */
  void *out;                       /* of c->d.output_type */
} conv_job;

/* The outputs o in [lo, hi) that read index o*stride - pad + tap*dil inside
 * [0, size): the usable output range of one filter tap. */
static void tap_range(size_t outs, size_t size, size_t stride, size_t pad,
                      size_t tap_off, size_t *lo, size_t *hi) {
  /* need o*stride + tap_off >= pad and o*stride + tap_off < pad + size */
  size_t first = tap_off >= pad ? 0 : (pad - tap_off + stride - 1) / stride;
  size_t end =
      pad + size > tap_off ? (pad + size - tap_off - 1) / stride + 1 : 0;
  *lo = first < outs ? first : outs;
  *hi = end < outs ? end : outs;
  if (*hi < *lo)
    *hi = *lo;
}

/* Output pixels summed at a time in a double tile (on the stack). */
#define TILE 1024

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* Adds every tap into the tile of output rows [p0, p1) and columns
 * [q0, q1) of one plane, acc holding (p1-p0) x (q1-q0) doubles. */
static void conv_tile(const conv_job *job, size_t img, size_t oc, size_t p0,
                      size_t p1, size_t q0, size_t q1, double *acc) {
  const wgc_conv2d_desc *d = &job->c->d;
  size_t P = job->c->p, Q = job->c->q, tq = q1 - q0;
  size_t cg = d->c / d->groups, kg = d->k / d->groups;
  size_t c0 = oc / kg * cg; /* first input channel of this group */
  for (size_t ci = 0; ci < cg; ci++) {
    const float *plane = job->in + (img * d->c + c0 + ci) * d->h * d->w;
    const float *f = job->filter + (oc * cg + ci) * d->r * d->s;
    for (size_t r = 0; r < d->r; r++) {
      size_t p_lo, p_hi;
      tap_range(P, d->h, d->stride_h, d->pad_h, r * d->dilation_h, &p_lo,
                &p_hi);
      p_lo = p_lo > p0 ? p_lo : p0;
      p_hi = min_sz(p_hi, p1);
      for (size_t s = 0; s < d->s && p_lo < p_hi; s++) {
        double wt = f[r * d->s + s];
        size_t q_lo, q_hi;
        tap_range(Q, d->w, d->stride_w, d->pad_w, s * d->dilation_w, &q_lo,
                  &q_hi);
        q_lo = q_lo > q0 ? q_lo : q0;
        q_hi = min_sz(q_hi, q1);
        if (q_lo >= q_hi)
          continue;
        for (size_t p = p_lo; p < p_hi; p++) {
          size_t ih = p * d->stride_h + r * d->dilation_h - d->pad_h;
          /* the column of output q_lo; later ones step by stride_w */
          const float *src =
              plane + ih * d->w +
              (q_lo * d->stride_w + s * d->dilation_w - d->pad_w);
          double *dst = acc + (p - p0) * tq + (q_lo - q0);
          size_t nq = q_hi - q_lo;
          if (d->stride_w == 1) {
            for (size_t q = 0; q < nq; q++)
              dst[q] += wt * src[q];
          } else {
            for (size_t q = 0; q < nq; q++)
              dst[q] += wt * src[q * d->stride_w];
          }
        }
      }
    }
  }
}

/* The reference backend sums in double and adds the bias last, each output
 * rounded once: a large bias cannot swallow small taps (bias 1e6 plus 256
 * taps of 0.03 is 1000007.68, not 1e6). */
static void conv_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const conv_job *job = arg;
  const wgc_conv2d_desc *d = &job->c->d;
  size_t P = job->c->p, Q = job->c->q;
  size_t img = task / d->k, oc = task % d->k;
  size_t out = (img * d->k + oc) * P * Q;
  double b = job->bias ? job->bias[oc] : 0.0;
  double acc[TILE];
  size_t tq = min_sz(Q, TILE), tp = TILE / tq;
  for (size_t p0 = 0; p0 < P; p0 += tp) {
    size_t p1 = min_sz(P, p0 + tp);
    for (size_t q0 = 0; q0 < Q; q0 += tq) {
      size_t q1 = min_sz(Q, q0 + tq), w = q1 - q0;
      for (size_t i = 0; i < (p1 - p0) * w; i++)
        acc[i] = 0.0;
      conv_tile(job, img, oc, p0, p1, q0, q1, acc);
      for (size_t p = p0; p < p1; p++)
        for (size_t q = q0; q < q1; q++)
          cpu_store(job->out, d->output_type, out + p * Q + q,
                    acc[(p - p0) * w + q - q0] + b);
    }
  }
}

/* n elements of src (type t) as floats: src itself for f32, else a
 * converted copy in *copy (NULL: no memory). */
static const float *as_f32(const void *src, wgc_dtype t, size_t n,
                           float **copy) {
  if (t == WGC_DTYPE_F32 || !src)
    return src;
  *copy = malloc((n ? n : 1) * sizeof **copy);
  if (*copy)
    wgc_dtype_load_run(src, t, 0, n, *copy);
  return *copy;
}

wgc_status cpu_conv2d(wgc_context *ctx, const wgc_conv2d_args *c) {
  const wgc_conv2d_desc *d = &c->d;
  /* typed inputs are converted once, up front: the sums stay those of
   * the f32 call */
  float *copies[3] = {NULL, NULL, NULL};
  size_t f_n = d->k * (d->c / d->groups) * d->r * d->s;
  conv_job job = {
      .c = c,
      .in = as_f32(cpu_ptr(c->input), d->input_type, d->n * d->c * d->h * d->w,
                   &copies[0]),
      .filter = as_f32(cpu_ptr(c->filter), d->filter_type, f_n, &copies[1]),
      .bias = c->has_bias
                  ? as_f32(cpu_ptr(c->bias), d->bias_type, d->k, &copies[2])
                  : NULL,
      .out = cpu_ptr(c->output),
  };
  bool ok =
      (job.in || !c->input.mem) && job.filter && (job.bias || !c->has_bias);
  if (ok) {
    size_t tasks = d->n * d->k;
    double work = 2.0 * tasks * c->p * c->q * (d->c / d->groups) * d->r * d->s;
    cpu_parallel(ctx, tasks, work + (double)tasks * c->p * c->q, conv_task,
                 &job);
  }
  for (int i = 0; i < 3; i++)
    free(copies[i]);
  if (!ok)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory to convert the typed operands",
                    c->fn);
  return WGC_OK;
}

/* ---- pieces for the wasm32 queue (split.h) -------------------------------
 * group > 0: pieces are runs of group output channels of one image and one
 * channel group. Otherwise one plane is too big: pieces are block_size[0]
 * output rows of one plane, and the input rows they read (all of the
 * group's channels) are gathered into a buffer first, since a window of
 * rows is not a tensor the conv call can address in place. Padding rows
 * stay virtual (pad_h, and a shorter h below), so every tap is the same. */
static double conv_row_cost(const wgc_conv2d_args *c) {
  const wgc_conv2d_desc *d = &c->d;
  return (2.0 * (double)(d->c / d->groups) * (double)(d->r * d->s) + 1.0) *
         (double)c->q;
}

wgc_status cpu_split_conv2d_plan(const wgc_conv2d_args *c, cpu_split *s) {
  const wgc_conv2d_desc *d = &c->d;
  double plane = conv_row_cost(c) * (double)c->p;
  size_t kg = d->k / d->groups;
  s->work = plane * (double)(d->n * d->k);
  if (plane <= s->piece_work) {
    s->group = cpu_fit(s, plane, kg);
    s->blocks[0] = cpu_div_up(kg, s->group);
    s->pieces = d->n * d->groups * s->blocks[0];
  } else {
    s->block_size[0] = cpu_fit(s, conv_row_cost(c), c->p);
    s->blocks[0] = cpu_div_up(c->p, s->block_size[0]);
    s->pieces = d->n * d->k * s->blocks[0];
  }
  return WGC_OK;
}

/* The parts of a piece shared by both forms: image img, channel group gi,
 * out_count output channels from oc (absolute). */
static wgc_conv2d_args conv_piece(const wgc_conv2d_args *c, size_t img,
                                  size_t oc, size_t out_count) {
  const wgc_conv2d_desc *d = &c->d;
  size_t cg = d->c / d->groups, gi = oc / (d->k / d->groups);
  wgc_conv2d_args a = *c;
  a.d.n = 1;
  a.d.c = cg;
  a.d.groups = 1;
  a.d.k = out_count;
  a.input = cpu_ref_typed(c->input, d->input_type,
                          (img * d->c + gi * cg) * d->h * d->w);
  a.filter = cpu_ref_typed(c->filter, d->filter_type, oc * cg * d->r * d->s);
  if (c->has_bias)
    a.bias = cpu_ref_typed(c->bias, d->bias_type, oc);
  a.output =
      cpu_ref_typed(c->output, d->output_type, (img * d->k + oc) * c->p * c->q);
  return a;
}

wgc_status cpu_split_conv2d_run(wgc_context *ctx, const wgc_conv2d_args *c,
                                cpu_split *s, size_t i) {
  const wgc_conv2d_desc *d = &c->d;
  size_t kg = d->k / d->groups, cg = d->c / d->groups;
  if (s->group) {
    size_t per_image = d->groups * s->blocks[0];
    size_t img = i / per_image, rem = i % per_image;
    size_t oc0 = rem % s->blocks[0] * s->group;
    size_t oc = rem / s->blocks[0] * kg + oc0;
    wgc_conv2d_args a = conv_piece(c, img, oc, cpu_min(s->group, kg - oc0));
    return cpu_conv2d(ctx, &a);
  }
  size_t plane = i / s->blocks[0], rows = s->block_size[0];
  size_t img = plane / d->k, oc = plane % d->k;
  size_t p0 = i % s->blocks[0] * rows, pn = cpu_min(rows, c->p - p0);
  /* input rows [lo, hi) are read; [real_lo, real_hi) of them exist */
  long long lo = (long long)(p0 * d->stride_h) - (long long)d->pad_h;
  long long hi =
      lo + (long long)((pn - 1) * d->stride_h + (d->r - 1) * d->dilation_h + 1);
  long long real_lo = lo > 0 ? lo : 0;
  long long real_hi = hi < (long long)d->h ? hi : (long long)d->h;
  size_t hr = real_hi > real_lo ? (size_t)(real_hi - real_lo) : 0;
  size_t floats = cg * hr * d->w;
  float *rows_in = malloc((floats ? floats : 1) * sizeof *rows_in);
  if (!rows_in)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory for %zu input rows", c->fn,
                    cg * hr);
  wgc_conv2d_args a = conv_piece(c, img, oc, 1);
  for (size_t ci = 0; ci < cg; ci++)
    wgc_dtype_load_run(cpu_ptr(a.input), d->input_type,
                       ci * d->h * d->w + (size_t)real_lo * d->w, hr * d->w,
                       rows_in + ci * hr * d->w);
  a.input = (wgc_ref){.mem = rows_in};
  a.d.input_type = WGC_DTYPE_F32;
  a.d.h = hr;
  a.d.pad_h = (size_t)(real_lo - lo);
  a.p = pn;
  a.output = cpu_ref_typed(a.output, d->output_type, p0 * c->q);
  wgc_status st = cpu_conv2d(ctx, &a);
  free(rows_in);
  return st;
}
