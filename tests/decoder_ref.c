#include "decoder_ref.h"

#include <math.h>
#include <stdlib.h>

/* Layer norm of one row: two passes, biased variance, epsilon 1e-5. */
static void norm_row(const double *x, size_t d, const float *g, const float *b,
                     double *y) {
  double mean = 0, var = 0;
  for (size_t i = 0; i < d; i++)
    mean += x[i];
  mean /= (double)d;
  for (size_t i = 0; i < d; i++)
    var += (x[i] - mean) * (x[i] - mean);
  var /= (double)d;
  double r = 1.0 / sqrt(var + (double)1e-5f);
  for (size_t i = 0; i < d; i++)
    y[i] = (x[i] - mean) * r * g[i] + b[i];
}

/* y[rows, out] = x[rows, in] * w[in, out] + b (+ y when accumulate). */
static void dense(const double *x, size_t rows, size_t in, size_t out,
                  const float *w, const float *b, int accumulate, double *y) {
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < out; j++) {
      double s = b[j];
      for (size_t p = 0; p < in; p++)
        s += x[r * in + p] * w[p * out + j];
      y[r * out + j] = accumulate ? y[r * out + j] + s : s;
    }
}

static double gelu_tanh(double x) {
  const double k = sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

void ref_decoder_logits(const gpt_config *c, const float *w, const int32_t *ids,
                        size_t n, double *logits) {
  gpt_offsets o = gpt_layout(c);
  size_t d = c->d_model, f = c->d_ff, hd = d / c->heads;
  double *x = calloc(n * d, sizeof *x), *h = calloc(n * d, sizeof *h);
  double *qkv = calloc(n * 3 * d, sizeof *qkv);
  double *att = calloc(n * d, sizeof *att), *u = calloc(n * f, sizeof *u);
  double *p = calloc(n, sizeof *p);
  for (size_t t = 0; t < n; t++)
    for (size_t i = 0; i < d; i++)
      x[t * d + i] =
          (double)w[o.wte + (size_t)ids[t] * d + i] + w[o.wpe + t * d + i];
  for (size_t l = 0; l < c->layers; l++) {
    const gpt_layer_offsets *L = &o.layer[l];
    for (size_t t = 0; t < n; t++)
      norm_row(x + t * d, d, w + L->ln1_g, w + L->ln1_b, h + t * d);
    dense(h, n, d, 3 * d, w + L->w_qkv, w + L->b_qkv, 0, qkv);
    /* Head a of query t attends to keys 0..t. */
    for (size_t a = 0; a < c->heads; a++)
      for (size_t t = 0; t < n; t++) {
        const double *q = qkv + t * 3 * d + a * hd;
        double mx = -INFINITY, sum = 0;
        for (size_t j = 0; j <= t; j++) {
          const double *k = qkv + j * 3 * d + d + a * hd;
          double s = 0;
          for (size_t i = 0; i < hd; i++)
            s += q[i] * k[i];
          p[j] = s / sqrt((double)hd);
          mx = fmax(mx, p[j]);
        }
        for (size_t j = 0; j <= t; j++)
          sum += (p[j] = exp(p[j] - mx));
        for (size_t i = 0; i < hd; i++) {
          double s = 0;
          for (size_t j = 0; j <= t; j++)
            s += p[j] * qkv[j * 3 * d + 2 * d + a * hd + i];
          att[t * d + a * hd + i] = s / sum;
        }
      }
    dense(att, n, d, d, w + L->w_o, w + L->b_o, 1, x);
    for (size_t t = 0; t < n; t++)
      norm_row(x + t * d, d, w + L->ln2_g, w + L->ln2_b, h + t * d);
    dense(h, n, d, f, w + L->w_fc, w + L->b_fc, 0, u);
    for (size_t i = 0; i < n * f; i++)
      u[i] = gelu_tanh(u[i]);
    dense(u, n, f, d, w + L->w_proj, w + L->b_proj, 1, x);
  }
  norm_row(x + (n - 1) * d, d, w + o.lnf_g, w + o.lnf_b, h);
  dense(h, 1, d, c->vocab, w + o.w_head, w + o.b_head, 0, logits);
  free(x);
  free(h);
  free(qkv);
  free(att);
  free(u);
  free(p);
}
