/* float64 reference loops, written straight from API.md, and the
 * comparison that applies its accuracy bounds. */
#include "ops_ref.h"

#include "harness.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- GEMM --------------------------------------------------------------- */

size_t ref_index(wgc_layout layout, size_t ld, size_t r, size_t c) {
  return layout == WGC_ROW_MAJOR ? r * ld + c : r + c * ld;
}

void ref_stored_dims(wgc_transpose t, size_t rows, size_t cols, size_t *srows,
                     size_t *scols) {
  *srows = t == WGC_NO_TRANS ? rows : cols;
  *scols = t == WGC_NO_TRANS ? cols : rows;
}

size_t ref_min_ld(wgc_layout layout, size_t srows, size_t scols) {
  size_t need = layout == WGC_ROW_MAJOR ? scols : srows;
  return need > 1 ? need : 1;
}

size_t ref_span(wgc_layout layout, size_t ld, size_t srows, size_t scols) {
  if (!srows || !scols)
    return 0;
  return layout == WGC_ROW_MAJOR ? (srows - 1) * ld + scols
                                 : (scols - 1) * ld + srows;
}

/* Element (i, j) of op(X) for a stored X. */
static double op_elem(wgc_layout layout, wgc_transpose t, const float *x,
                      size_t ld, size_t i, size_t j) {
  return t == WGC_NO_TRANS ? x[ref_index(layout, ld, i, j)]
                           : x[ref_index(layout, ld, j, i)];
}

ref_gemm_max ref_gemm(wgc_layout layout, wgc_transpose ta, wgc_transpose tb,
                      size_t m, size_t n, size_t k, double alpha,
                      const float *a, size_t lda, const float *b, size_t ldb,
                      double beta, const float *c, size_t ldc, double *out) {
  ref_gemm_max mx = {0, 0, 0};
  bool read_ab = k > 0 && alpha != 0;
  if (read_ab) {
    for (size_t i = 0; i < m; i++)
      for (size_t p = 0; p < k; p++)
        mx.a = fmax(mx.a, fabs(op_elem(layout, ta, a, lda, i, p)));
    for (size_t p = 0; p < k; p++)
      for (size_t j = 0; j < n; j++)
        mx.b = fmax(mx.b, fabs(op_elem(layout, tb, b, ldb, p, j)));
  }
  for (size_t i = 0; i < m; i++) {
    for (size_t j = 0; j < n; j++) {
      double acc = 0;
      if (read_ab)
        for (size_t p = 0; p < k; p++)
          acc += op_elem(layout, ta, a, lda, i, p) *
                 op_elem(layout, tb, b, ldb, p, j);
      double r = alpha * acc;
      if (beta != 0) {
        double cij = c[ref_index(layout, ldc, i, j)];
        mx.c = fmax(mx.c, fabs(cij));
        r += beta * cij;
      }
      out[i * n + j] = r;
    }
  }
  return mx;
}

/* ---- conv2d -------------------------------------------------------------- */

static size_t or_one(size_t v) { return v ? v : 1; }

bool ref_conv2d_size(const wgc_conv2d_desc *d, size_t *p, size_t *q) {
  size_t sh = or_one(d->stride_h), sw = or_one(d->stride_w);
  size_t dh = or_one(d->dilation_h), dw = or_one(d->dilation_w);
  size_t g = or_one(d->groups);
  if (!d->r || !d->s || d->c % g || d->k % g)
    return false;
  size_t eh = dh * (d->r - 1) + 1, ew = dw * (d->s - 1) + 1;
  if (d->h + 2 * d->pad_h < eh || d->w + 2 * d->pad_w < ew)
    return false;
  *p = (d->h + 2 * d->pad_h - eh) / sh + 1;
  *q = (d->w + 2 * d->pad_w - ew) / sw + 1;
  return true;
}

void ref_conv2d(const wgc_conv2d_desc *d, const float *x, const float *w,
                const float *bias, double *out) {
  size_t P, Q;
  if (!ref_conv2d_size(d, &P, &Q))
    return;
  long long sh = (long long)or_one(d->stride_h);
  long long sw = (long long)or_one(d->stride_w);
  long long dh = (long long)or_one(d->dilation_h);
  long long dw = (long long)or_one(d->dilation_w);
  size_t g = or_one(d->groups), cpg = d->c / g, kpg = d->k / g;
  long long H = (long long)d->h, W = (long long)d->w;
  for (size_t in = 0; in < d->n; in++)
    for (size_t ok = 0; ok < d->k; ok++) {
      size_t grp = ok / kpg;
      for (size_t op = 0; op < P; op++)
        for (size_t oq = 0; oq < Q; oq++) {
          double acc = bias ? bias[ok] : 0.0;
          for (size_t cc = 0; cc < cpg; cc++)
            for (size_t r = 0; r < d->r; r++)
              for (size_t s = 0; s < d->s; s++) {
                long long ih = (long long)op * sh - (long long)d->pad_h +
                               (long long)r * dh;
                long long iw = (long long)oq * sw - (long long)d->pad_w +
                               (long long)s * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                  continue;
                size_t ic = grp * cpg + cc;
                double xv = x[((in * d->c + ic) * d->h + (size_t)ih) * d->w +
                              (size_t)iw];
                double wv = w[((ok * cpg + cc) * d->r + r) * d->s + s];
                acc += xv * wv;
              }
          out[((in * d->k + ok) * P + op) * Q + oq] = acc;
        }
    }
}

/* ---- pool2d -------------------------------------------------------------- */

void ref_pool2d_size(const wgc_pool2d_desc *d, size_t *p, size_t *q) {
  size_t eh = or_one(d->dilation_h) * (d->r - 1) + 1;
  size_t ew = or_one(d->dilation_w) * (d->s - 1) + 1;
  *p = (d->h + 2 * d->pad_h - eh) / or_one(d->stride_h) + 1;
  *q = (d->w + 2 * d->pad_w - ew) / or_one(d->stride_w) + 1;
}

void ref_pool2d(const wgc_pool2d_desc *d, const float *x, double *y,
                double *tol, double *mag) {
  size_t p, q;
  ref_pool2d_size(d, &p, &q);
  size_t sh = or_one(d->stride_h), sw = or_one(d->stride_w);
  size_t dh = or_one(d->dilation_h), dw = or_one(d->dilation_w);
  for (size_t plane = 0; plane < d->n * d->c; plane++)
    for (size_t oy = 0; oy < p; oy++)
      for (size_t ox = 0; ox < q; ox++) {
        double m = -INFINITY, sum = 0, sabs = 0;
        size_t inside = 0;
        bool nan = false;
        for (size_t i = 0; i < d->r; i++)
          for (size_t j = 0; j < d->s; j++) {
            long long iy = (long long)(oy * sh + i * dh) - (long long)d->pad_h;
            long long ix = (long long)(ox * sw + j * dw) - (long long)d->pad_w;
            if (iy < 0 || ix < 0 || iy >= (long long)d->h ||
                ix >= (long long)d->w)
              continue;
            double v = x[(plane * d->h + (size_t)iy) * d->w + (size_t)ix];
            inside++;
            nan |= isnan(v);
            if (v > m)
              m = v;
            sum += v;
            sabs += isfinite(v) ? fabs(v) : 0;
          }
        size_t k = (plane * p + oy) * q + ox;
        if (d->mode == WGC_POOL_MAX) {
          y[k] = nan ? NAN : m;
          tol[k] = 0;
          if (mag)
            mag[k] = 0;
          continue;
        }
        double count =
            d->count_include_pad ? (double)d->r * d->s : (double)inside;
        y[k] = count > 0 ? sum / count : 0;
        tol[k] = count > 0
                     ? ((double)d->r * d->s + 1) * 0x1p-24 * sabs / count +
                           0x1p-24 * (isfinite(y[k]) ? fabs(y[k]) : 0)
                     : 0;
        if (mag)
          mag[k] = sabs;
      }
}

/* ---- attention ----------------------------------------------------------- */

/* The unfused formula in double on the (possibly strided) operands:
 * s = softcap(scale * q.k) + mask over the keys the causal mask shows,
 * then softmax and the weighted mean of V. out is contiguous
 * [batch, heads, seq_q, head_dim_v]. Non-finite scores as the header says:
 * NaN or +inf makes the row NaN, -inf weighs 0, all -inf is NaN; a score
 * more than 87 below the max weighs 0 too. */
void ref_attention(const wgc_attention_desc *d, const float *q, const float *k,
                   const float *v, double *out) {
  size_t hkv = d->heads_kv ? d->heads_kv : d->heads;
  size_t group = d->heads / hkv, D = d->head_dim;
  size_t DV = d->head_dim_v ? d->head_dim_v : D;
  size_t H = d->heads, SQ = d->seq_q, SK = d->seq_kv;
  wgc_attention_strides qs = d->q_stride, ks = d->k_stride, vs = d->v_stride;
  if (!qs.batch && !qs.head && !qs.seq)
    qs = (wgc_attention_strides){H * SQ * D, SQ * D, D};
  if (!ks.batch && !ks.head && !ks.seq)
    ks = (wgc_attention_strides){hkv * SK * D, SK * D, D};
  if (!vs.batch && !vs.head && !vs.seq)
    vs = (wgc_attention_strides){hkv * SK * DV, SK * DV, DV};
  const float *mask = (const float *)(uintptr_t)d->mask;
  double *s = dalloc(SK ? SK : 1);
  for (size_t b = 0; b < d->batch; b++)
    for (size_t h = 0; h < H; h++) {
      size_t kh = h / group;
      const float *kb = k + b * ks.batch + kh * ks.head;
      const float *vb = v + b * vs.batch + kh * vs.head;
      for (size_t i = 0; i < SQ; i++) {
        const float *qi = q + b * qs.batch + h * qs.head + i * qs.seq;
        const float *mi = mask ? mask + b * d->mask_stride.batch +
                                     h * d->mask_stride.head +
                                     i * d->mask_stride.seq
                               : NULL;
        double *oi = out + ((b * H + h) * SQ + i) * DV;
        /* Keys j < visible are seen; unsigned arithmetic kept non-negative. */
        size_t visible = SK;
        if (d->causal == WGC_CAUSAL_TOP_LEFT)
          visible = i + 1 < SK ? i + 1 : SK;
        else if (d->causal == WGC_CAUSAL_BOTTOM_RIGHT)
          visible = i + 1 + SK <= SQ
                        ? 0
                        : (i + 1 + SK - SQ < SK ? i + 1 + SK - SQ : SK);
        for (size_t e = 0; e < DV; e++)
          oi[e] = 0;
        if (!visible)
          continue;
        double mx = -INFINITY;
        int bad = 0;
        for (size_t j = 0; j < visible; j++) {
          double dot = 0;
          for (size_t e = 0; e < D; e++)
            dot += (double)qi[e] * kb[j * ks.seq + e];
          s[j] = (double)d->scale * dot;
          if (d->softcap > 0)
            s[j] = d->softcap * tanh(s[j] / d->softcap);
          if (mi)
            s[j] += mi[j];
          bad |= isnan(s[j]) || s[j] == INFINITY;
          mx = fmax(mx, s[j]);
        }
        if (bad || mx == -INFINITY) {
          for (size_t e = 0; e < DV; e++)
            oi[e] = NAN;
          continue;
        }
        double l = 0;
        /* a weight below e^-87 (float32's normal range) is 0: its key
         * does not reach the row, whatever its V holds */
        for (size_t j = 0; j < visible; j++) {
          s[j] = s[j] - mx >= -87.0 ? exp(s[j] - mx) : 0.0;
          l += s[j];
        }
        for (size_t j = 0; j < visible; j++)
          if (s[j] > 0)
            for (size_t e = 0; e < DV; e++)
              oi[e] += s[j] / l * vb[j * vs.seq + e];
      }
    }
  free(s);
}

/* ---- reduce -------------------------------------------------------------- */

size_t ref_count(const size_t *shape, size_t rank) {
  size_t n = 1;
  for (size_t i = 0; i < rank; i++)
    n *= shape[i];
  return n;
}

/* One output of op over n elements x[0], x[step], ...; mag gets the
 * magnitude its error bound scales with (ref_reduce_tol). */
static double reduce_span(wgc_reduce_op op, const float *x, size_t n,
                          size_t step, double *mag) {
  double acc = op == WGC_REDUCE_MAX || op == WGC_REDUCE_LOG_SUM_EXP ? -INFINITY
               : op == WGC_REDUCE_MIN                               ? INFINITY
               : op == WGC_REDUCE_PROD                              ? 1.0
                                                                    : 0.0;
  double m = 0;
  bool nan = false;
  for (size_t r = 0; r < n; r++) {
    double v = x[r * step];
    if (isnan(v))
      nan = true;
    else if (op == WGC_REDUCE_MAX || op == WGC_REDUCE_LOG_SUM_EXP)
      acc = fmax(acc, v);
    else if (op == WGC_REDUCE_MIN)
      acc = fmin(acc, v);
    else if (op == WGC_REDUCE_PROD)
      acc *= v;
    else if (op == WGC_REDUCE_SUM_SQUARE || op == WGC_REDUCE_L2)
      acc += v * v;
    else if (op == WGC_REDUCE_L1)
      acc += fabs(v);
    else
      acc += v;
    m += op == WGC_REDUCE_SUM_SQUARE || op == WGC_REDUCE_L2 ? v * v : fabs(v);
  }
  if (op == WGC_REDUCE_LOG_SUM_EXP && isfinite(acc)) {
    /* the max first, then the sum of exp(x - max): no overflow */
    double s = 0;
    for (size_t r = 0; r < n; r++)
      s += exp((double)x[r * step] - acc);
    acc += log(s);
  }
  if (op == WGC_REDUCE_MEAN)
    acc /= (double)n;
  if (op == WGC_REDUCE_L2)
    acc = sqrt(acc);
  if (op == WGC_REDUCE_PROD)
    m = fabs(acc);
  if (mag)
    *mag = m;
  /* numpy: a NaN anywhere in the reduced span wins (sums get it too). */
  return nan ? NAN : acc;
}

void ref_reduce(wgc_reduce_op op, const float *x, const size_t *shape,
                size_t rank, size_t axis, double *out, double *abs_sum) {
  size_t outer = ref_count(shape, axis), len = shape[axis];
  size_t inner = ref_count(shape + axis + 1, rank - axis - 1);
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++)
      out[o * inner + i] =
          reduce_span(op, x + o * len * inner + i, len, inner,
                      abs_sum ? &abs_sum[o * inner + i] : NULL);
}

/* The summation bound of pairwise summation with a factor 2 of slack:
 * (ceil(log2 len) + 2) * 2^-23 (both backends do better). */
static double sum_gamma(size_t len) {
  double levels = len > 1 ? ceil(log2((double)len)) : 0;
  return (levels + 2) * ldexp(1.0, -23);
}

double ref_reduce_tol(wgc_reduce_op op, size_t len, double want, double mag) {
  double u = ldexp(1.0, -24), w = fabs(want);
  switch (op) {
  case WGC_REDUCE_SUM:
  case WGC_REDUCE_SUM_SQUARE:
  case WGC_REDUCE_L1:
    return sum_gamma(len) * mag;
  case WGC_REDUCE_MEAN:
    return sum_gamma(len) * mag / (double)(len ? len : 1) + 4 * u * w;
  case WGC_REDUCE_L2:
    /* sqrt halves the sum's relative error, then rounds */
    return w > 0 ? (sum_gamma(len) / 2) * mag / w + 2 * u * w : 0.0;
  case WGC_REDUCE_PROD: {
    /* compensated: a few roundings plus a term quadratic in len * u (a
     * plain float product would be off by about sqrt(len) roundings);
     * underflow as flushed subnormals */
    double g = 2.0 * (double)len * u;
    return (4 * u + g * g) * w + ldexp(1.0, -125);
  }
  case WGC_REDUCE_LOG_SUM_EXP:
    /* the float sum of exponentials (<= len roundings, relative) and the
     * final rounding of the result */
    return (double)(len + 2) * u + 8 * u * (w + 1);
  case WGC_REDUCE_MAX:
  case WGC_REDUCE_MIN:
    break;
  }
  return 0.0;
}

void ref_reduce_axes(wgc_reduce_op op, const float *x, const size_t *shape,
                     size_t rank, const bool *reduced, double *out,
                     double *mag) {
  /* gathers each output's span into a buffer, in index order */
  size_t red = 1, nout = 1;
  for (size_t d = 0; d < rank; d++)
    if (reduced[d])
      red *= shape[d];
    else
      nout *= shape[d];
  float *span = malloc((red ? red : 1) * sizeof *span);
  for (size_t k = 0; k < nout; k++) {
    size_t idx[8] = {0}, rest = k;
    for (size_t d = rank; d-- > 0;)
      if (!reduced[d]) {
        idx[d] = rest % shape[d];
        rest /= shape[d];
      }
    for (size_t e = 0; e < red; e++) {
      rest = e;
      for (size_t d = rank; d-- > 0;)
        if (reduced[d]) {
          idx[d] = rest % shape[d];
          rest /= shape[d];
        }
      size_t off = 0;
      for (size_t d = 0; d < rank; d++)
        off = off * shape[d] + idx[d];
      span[e] = x[off];
    }
    out[k] = reduce_span(op, span, red, 1, mag ? &mag[k] : NULL);
  }
  free(span);
}

void ref_arg(bool largest, const float *x, const size_t *shape, size_t rank,
             size_t axis, int32_t *out) {
  size_t outer = ref_count(shape, axis), len = shape[axis];
  size_t inner = ref_count(shape + axis + 1, rank - axis - 1);
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      const float *p = x + o * len * inner + i;
      size_t best = 0;
      for (size_t r = 1; r < len && !isnan(p[best * inner]); r++) {
        double v = p[r * inner], b = p[best * inner];
        if (isnan(v) || (largest ? v > b : v < b))
          best = r;
      }
      out[o * inner + i] = (int32_t)best;
    }
}

/* ---- element-wise -------------------------------------------------------- */

/* Ties to even, built from floor alone (the CPU backend uses nearbyintf);
 * a zero result keeps the sign of x, as IEEE roundToIntegralTiesToEven. */
static double round_half_even(double x) {
  if (isnan(x) || isinf(x))
    return x;
  double f = floor(x), d = x - f, r;
  if (d < 0.5)
    r = f;
  else if (d > 0.5)
    r = f + 1;
  else
    r = fmod(f, 2.0) == 0 ? f : f + 1;
  return r == 0 ? copysign(0.0, x) : r;
}

void ref_unary_defaults(wgc_unary_op op, float *alpha, float *beta) {
  *alpha = *beta = 0;
  if (op == WGC_UNARY_LEAKY_RELU)
    *alpha = 0.01f;
  else if (op == WGC_UNARY_ELU)
    *alpha = 1;
  else if (op == WGC_UNARY_HARD_SIGMOID)
    *alpha = 0.2f, *beta = 0.5f;
  else if (op == WGC_UNARY_CLIP)
    *alpha = -INFINITY, *beta = INFINITY;
}

double ref_unary(wgc_unary_op op, double x) {
  float alpha, beta;
  ref_unary_defaults(op, &alpha, &beta);
  return ref_unary_params(op, x, alpha, beta);
}

double ref_unary_params(wgc_unary_op op, double x, double alpha, double beta) {
  switch (op) {
  case WGC_UNARY_RELU:
    return isnan(x) ? x : (x > 0 ? x : 0.0);
  case WGC_UNARY_SIGMOID:
    return 1.0 / (1.0 + exp(-x));
  case WGC_UNARY_TANH:
    return tanh(x);
  case WGC_UNARY_EXP:
    return exp(x);
  case WGC_UNARY_LOG:
    return log(x);
  case WGC_UNARY_SQRT:
    return sqrt(x);
  case WGC_UNARY_ABS:
    return fabs(x);
  case WGC_UNARY_NEG:
    return -x;
  case WGC_UNARY_GELU:
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  case WGC_UNARY_SILU:
    return x / (1.0 + exp(-x));
  case WGC_UNARY_GELU_TANH: {
    /* 0.5(1 + tanh(u)) = 1/(1 + e^-2u), which does not round to 0 first */
    double u = sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
  }
  case WGC_UNARY_ERF:
    return erf(x);
  case WGC_UNARY_RECIPROCAL:
    return 1.0 / x;
  case WGC_UNARY_FLOOR:
    return floor(x);
  case WGC_UNARY_CEIL:
    return ceil(x);
  case WGC_UNARY_ROUND:
    return round_half_even(x);
  case WGC_UNARY_SIN:
    return sin(x);
  case WGC_UNARY_COS:
    return cos(x);
  case WGC_UNARY_SOFTPLUS:
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
  case WGC_UNARY_LEAKY_RELU:
    return x < 0 ? alpha * x : x;
  case WGC_UNARY_ELU:
    return x < 0 ? alpha * expm1(x) : x;
  case WGC_UNARY_HARD_SIGMOID: {
    double y = alpha * x + beta;
    return isnan(y) ? y : y < 0 ? 0.0 : y > 1 ? 1.0 : y;
  }
  case WGC_UNARY_CLIP:
    if (isnan(x) || isnan(alpha) || isnan(beta))
      return NAN;
    return fmin(fmax(x, alpha), beta);
  }
  return NAN;
}

double ref_binary(wgc_binary_op op, double a, double b) {
  switch (op) {
  case WGC_BINARY_ADD:
    return a + b;
  case WGC_BINARY_SUB:
    return a - b;
  case WGC_BINARY_MUL:
    return a * b;
  case WGC_BINARY_DIV:
    return a / b;
  case WGC_BINARY_MAX:
    return isnan(a) || isnan(b) ? NAN : fmax(a, b);
  case WGC_BINARY_MIN:
    return isnan(a) || isnan(b) ? NAN : fmin(a, b);
  case WGC_BINARY_POW:
    /* C's pow on the float inputs: the rules powf follows. */
    return pow(a, b);
  }
  return NAN;
}

bool ref_broadcast_shape(const size_t *sa, size_t ra, const size_t *sb,
                         size_t rb, size_t *out_shape, size_t *out_rank) {
  size_t r = ra > rb ? ra : rb;
  for (size_t i = 0; i < r; i++) {
    /* Align from the right, as numpy does. */
    size_t da = i < r - ra ? 1 : sa[i - (r - ra)];
    size_t db = i < r - rb ? 1 : sb[i - (r - rb)];
    if (da != db && da != 1 && db != 1)
      return false;
    out_shape[i] = da == 1 ? db : da;
  }
  *out_rank = r;
  return true;
}

void ref_broadcast(wgc_binary_op op, const float *a, const size_t *sa,
                   size_t ra, const float *b, const size_t *sb, size_t rb,
                   double *out) {
  size_t shape[16], r;
  if (!ref_broadcast_shape(sa, ra, sb, rb, shape, &r))
    return;
  size_t total = ref_count(shape, r);
  for (size_t flat = 0; flat < total; flat++) {
    size_t rem = flat, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
    for (size_t d = r; d-- > 0;) {
      size_t idx = rem % shape[d];
      rem /= shape[d];
      if (d >= r - ra) {
        size_t dim = sa[d - (r - ra)];
        ia += (dim == 1 ? 0 : idx) * stride_a;
        stride_a *= dim;
      }
      if (d >= r - rb) {
        size_t dim = sb[d - (r - rb)];
        ib += (dim == 1 ? 0 : idx) * stride_b;
        stride_b *= dim;
      }
    }
    out[flat] = ref_binary(op, a[ia], b[ib]);
  }
}

void ref_unary_bound(wgc_unary_op op, double *rel, double *abs_tol) {
  *abs_tol = 1e-6;
  switch (op) {
  case WGC_UNARY_RELU:
  case WGC_UNARY_SQRT:
  case WGC_UNARY_ABS:
  case WGC_UNARY_NEG:
  case WGC_UNARY_RECIPROCAL:
  case WGC_UNARY_LEAKY_RELU:
  case WGC_UNARY_HARD_SIGMOID:
  case WGC_UNARY_CLIP:
    *rel = 2e-6;
    break;
  case WGC_UNARY_FLOOR:
  case WGC_UNARY_CEIL:
  case WGC_UNARY_ROUND:
    *rel = *abs_tol = 0; /* exact */
    break;
  default:
    *rel = 1e-5;
  }
}

void ref_unary_range(wgc_unary_op op, float *lo, float *hi) {
  float r[2] = {-10, 10};
  switch (op) {
  case WGC_UNARY_RELU:
  case WGC_UNARY_TANH:
  case WGC_UNARY_ABS:
  case WGC_UNARY_NEG:
  case WGC_UNARY_RECIPROCAL:
  case WGC_UNARY_FLOOR:
  case WGC_UNARY_CEIL:
  case WGC_UNARY_ROUND:
  case WGC_UNARY_SIN:
  case WGC_UNARY_COS:
  case WGC_UNARY_LEAKY_RELU:
  case WGC_UNARY_ELU:
  case WGC_UNARY_HARD_SIGMOID:
  case WGC_UNARY_CLIP:
    break;
  case WGC_UNARY_SIGMOID:
  case WGC_UNARY_EXP:
  case WGC_UNARY_SILU:
  case WGC_UNARY_SOFTPLUS:
    r[0] = -20, r[1] = 20;
    break;
  case WGC_UNARY_LOG:
    r[0] = 1e-3f, r[1] = 100;
    break;
  case WGC_UNARY_SQRT:
    r[0] = 0, r[1] = 100;
    break;
  case WGC_UNARY_GELU:
  case WGC_UNARY_GELU_TANH:
    r[0] = -8, r[1] = 8;
    break;
  case WGC_UNARY_ERF:
    r[0] = -4, r[1] = 4;
    break;
  }
  *lo = r[0];
  *hi = r[1];
}

void ref_binary_bound(wgc_binary_op op, double *rel, double *abs_tol) {
  *rel = op == WGC_BINARY_POW ? 1e-5 : 2e-6;
  *abs_tol = 1e-6;
}

#define OP_NAME_(NAME, name) #name,
static const char *const unary_names[] = {WGC_UNARY_OPS(OP_NAME_)};
static const char *const binary_names[] = {WGC_BINARY_OPS(OP_NAME_)};
static const char *const reduce_names[] = {WGC_REDUCE_OPS(OP_NAME_)};
#undef OP_NAME_
_Static_assert(sizeof unary_names / sizeof *unary_names == WGC_UNARY_OP_COUNT,
               "one name per unary op");
_Static_assert(sizeof binary_names / sizeof *binary_names ==
                   WGC_BINARY_OP_COUNT,
               "one name per binary op");
_Static_assert(sizeof reduce_names / sizeof *reduce_names ==
                   WGC_REDUCE_OP_COUNT,
               "one name per reduce op");

const char *ref_unary_name(wgc_unary_op op) {
  return (unsigned)op < WGC_UNARY_OP_COUNT ? unary_names[op] : "?";
}

const char *ref_binary_name(wgc_binary_op op) {
  return (unsigned)op < WGC_BINARY_OP_COUNT ? binary_names[op] : "?";
}

const char *ref_reduce_name(wgc_reduce_op op) {
  return (unsigned)op < WGC_REDUCE_OP_COUNT ? reduce_names[op] : "?";
}

/* ---- comparison ---------------------------------------------------------- */

#define MAX_KEYS 256
static struct {
  char key[64];
  double worst;
  size_t cases;
} acc[MAX_KEYS];
static int acc_count;

void accuracy_record(const char *key, double ratio) {
  int i = 0;
  while (i < acc_count && strcmp(acc[i].key, key) != 0)
    i++;
  if (i == acc_count) {
    if (acc_count == MAX_KEYS)
      return;
    snprintf(acc[i].key, sizeof acc[i].key, "%s", key);
    acc[i].worst = 0;
    acc[i].cases = 0;
    acc_count++;
  }
  if (ratio > acc[i].worst || isnan(ratio))
    acc[i].worst = ratio;
  acc[i].cases++;
}

double check_close_at(const char *file, int line, const char *key,
                      const char *label, const float *got, const double *want,
                      size_t n, double rel, double abs_tol,
                      const double *tol_each) {
  double worst = 0;
  size_t worst_i = 0;
  double worst_bound = 0;
  bool mismatch = false; /* a NaN or infinity where it does not belong */
  for (size_t i = 0; i < n; i++) {
    double g = got[i], w = want[i];
    double bound = rel * fabs(w) + (tol_each ? tol_each[i] : abs_tol);
    double ratio;
    if (isnan(w) || isnan(g)) {
      ratio = isnan(w) && isnan(g) ? 0 : INFINITY;
    } else if (isinf(w) || isinf(g)) {
      /* An exact infinity, or a finite want that overflows float. */
      double wf = (double)(float)w;
      ratio = (g == w || g == wf) ? 0 : INFINITY;
    } else {
      double err = fabs(g - w);
      ratio = err == 0 ? 0 : (bound > 0 ? err / bound : INFINITY);
    }
    if (ratio > worst && !mismatch) {
      worst = ratio;
      worst_i = i;
      worst_bound = bound;
      mismatch = isinf(ratio);
    }
  }
  accuracy_record(key, worst);
  if (worst > 1)
    check_fail(file, line,
               "%s%s%s: worst of %zu elements is [%zu]: got %.9g, want %.9g, "
               "bound %.3g (err/bound %.3g)",
               key, label ? " " : "", label ? label : "", n, worst_i,
               got[worst_i], want[worst_i], worst_bound, worst);
  return worst;
}

void accuracy_summary(const char *prefix, bool with) {
  size_t len = strlen(prefix);
  bool any = false;
  for (int i = 0; i < acc_count; i++) {
    if ((strncmp(acc[i].key, prefix, len) == 0) != with)
      continue;
    if (!any)
      printf("# worst error/bound per %s (1 = at the API.md bound):\n",
             with ? "typed op and output type" : "op");
    any = true;
    printf("#   %-40s %10.3g  (%zu checks)\n", acc[i].key, acc[i].worst,
           acc[i].cases);
  }
}

/* ---- rotary ------------------------------------------------------------ */

void ref_rotary(const wgc_rotary_desc *d, const double *x, const int32_t *pos,
                const double *cosc, const double *sinc, double *y,
                double *tol) {
  size_t rd = d->rotary_dim ? d->rotary_dim : d->head_dim, half = rd / 2;
  for (size_t b = 0; b < d->batch; b++)
    for (size_t s = 0; s < d->seq; s++)
      for (size_t h = 0; h < d->heads; h++) {
        size_t row = d->layout == WGC_ROTARY_BSHD
                         ? (b * d->seq + s) * d->heads + h
                         : (b * d->heads + h) * d->seq + s;
        const double *xr = x + row * d->head_dim;
        double *yr = y + row * d->head_dim, *tr = tol + row * d->head_dim;
        const double *c = NULL, *sn = NULL;
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
        for (size_t j = 0; j < d->head_dim; j++) {
          yr[j] = xr[j];
          tr[j] = 0;
        }
        for (size_t k = 0; k < half; k++) {
          size_t i1 = d->interleaved ? 2 * k : k;
          size_t i2 = d->interleaved ? 2 * k + 1 : k + half;
          double cv = c ? c[k] : 0, sv = sn ? sn[k] : 0;
          double x1 = xr[i1], x2 = xr[i2];
          yr[i1] = cv * x1 - sv * x2;
          yr[i2] = sv * x1 + cv * x2;
          /* two products and a sum */
          tr[i1] = tr[i2] =
              4e-7 * (fabs(x1) + fabs(x2)) * (fabs(cv) + fabs(sv));
        }
      }
}
