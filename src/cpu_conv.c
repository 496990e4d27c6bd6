/* Direct 2-D cross-correlation, NCHW, as cuDNN and PyTorch compute it. One
 * task per output plane (image, output channel); each filter tap adds a
 * shifted, strided copy of one input plane to the plane, over the output
 * columns that the tap keeps inside the input (computed up front, so the
 * inner loop has no bounds tests). */
#include "cpu_ops.h"

typedef struct conv_job {
  const wgc_conv2d_args *c;
  const float *in, *filter, *bias;
  float *out;
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

static void conv_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const conv_job *job = arg;
  const wgc_conv2d_desc *d = &job->c->d;
  size_t P = job->c->p, Q = job->c->q;
  size_t img = task / d->k, oc = task % d->k;
  size_t cg = d->c / d->groups, kg = d->k / d->groups;
  size_t c0 = oc / kg * cg; /* first input channel of this group */
  float *out = job->out + (img * d->k + oc) * P * Q;
  float b = job->bias ? job->bias[oc] : 0.0f;
  for (size_t i = 0; i < P * Q; i++)
    out[i] = b;

  for (size_t ci = 0; ci < cg; ci++) {
    const float *plane = job->in + (img * d->c + c0 + ci) * d->h * d->w;
    const float *f = job->filter + (oc * cg + ci) * d->r * d->s;
    for (size_t r = 0; r < d->r; r++) {
      size_t p_lo, p_hi;
      tap_range(P, d->h, d->stride_h, d->pad_h, r * d->dilation_h, &p_lo,
                &p_hi);
      for (size_t s = 0; s < d->s; s++) {
        float wt = f[r * d->s + s];
        size_t q_lo, q_hi;
        tap_range(Q, d->w, d->stride_w, d->pad_w, s * d->dilation_w, &q_lo,
                  &q_hi);
        if (q_lo == q_hi)
          continue;
        for (size_t p = p_lo; p < p_hi; p++) {
          size_t ih = p * d->stride_h + r * d->dilation_h - d->pad_h;
          /* the column of output q_lo; later ones step by stride_w */
          const float *src =
              plane + ih * d->w +
              (q_lo * d->stride_w + s * d->dilation_w - d->pad_w);
          float *dst = out + p * Q;
          if (d->stride_w == 1) {
            for (size_t q = q_lo; q < q_hi; q++)
              dst[q] += wt * src[q - q_lo];
          } else {
            for (size_t q = q_lo; q < q_hi; q++)
              dst[q] += wt * src[(q - q_lo) * d->stride_w];
          }
        }
      }
    }
  }
}

wgc_status cpu_conv2d(wgc_context *ctx, const wgc_conv2d_args *c) {
  const wgc_conv2d_desc *d = &c->d;
  conv_job job = {
      .c = c,
      .in = cpu_ptr(c->input),
      .filter = cpu_ptr(c->filter),
      .bias = c->has_bias ? cpu_ptr(c->bias) : NULL,
      .out = cpu_ptr(c->output),
  };
  size_t tasks = d->n * d->k;
  double work = 2.0 * tasks * c->p * c->q * (d->c / d->groups) * d->r * d->s;
  cpu_parallel(ctx, tasks, work + (double)tasks * c->p * c->q, conv_task, &job);
  return WGC_OK;
}
