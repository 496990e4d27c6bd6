/* float64 references with per-element bounds (see fuzz_ref.h). */
#include "fuzz_ref.h"

#include "ops_ref.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* Float32 intermediates beyond this may overflow. */
#define FZ_OVERFLOW 1e38
/* Results that float32 holds only as subnormals may be flushed. */
#define FZ_FLUSH_ALLOW ((double)FLT_MIN)

static double fin(double x) { return isfinite(x) ? fabs(x) : 0.0; }
static size_t or_one(size_t v) { return v ? v : 1; }

bool fz_close(float got, double want, double tol, int lenient) {
  double g = got;
  if (isnan(want))
    return isnan(g);
  if (lenient == FZ_LENIENT || (lenient == FZ_NAN_OK && isnan(g)))
    return true;
  if (isnan(g))
    return false;
  if (isinf(want))
    return g == want;
  double err = fabs(g - want);
  if (isinf(g))
    /* Only where the float64 value rounds to, or lies within its bound of,
     * float32's overflow threshold. */
    return (g > 0) == (want > 0) && fabs(want) + tol >= FLT_MAX;
  return err <= tol;
}

void fzr_gemm(const fz_step *s, size_t lda, size_t ldb, size_t ldc, size_t stra,
              size_t strb, size_t strc, const float *a, const float *b,
              const float *c, fz_want w) {
  wgc_layout L = (wgc_layout)s->op;
  double alpha = s->alpha, beta = s->beta;
  bool read_ab = s->k > 0 && alpha != 0;
  size_t bc = s->batched ? s->batch : 1;
  for (size_t bi = 0; bi < bc; bi++) {
    const float *A = a + bi * stra, *B = b + bi * strb, *C = c + bi * strc;
    for (size_t i = 0; i < s->m; i++)
      for (size_t j = 0; j < s->n; j++) {
        double acc = 0, ma = 0, mb = 0;
        if (read_ab)
          for (size_t p = 0; p < s->k; p++) {
            double x = s->ta == WGC_NO_TRANS ? A[ref_index(L, lda, i, p)]
                                             : A[ref_index(L, lda, p, i)];
            double y = s->tb == WGC_NO_TRANS ? B[ref_index(L, ldb, p, j)]
                                             : B[ref_index(L, ldb, j, p)];
            acc += x * y;
            ma = fmax(ma, fin(x));
            mb = fmax(mb, fin(y));
          }
        double r = read_ab ? alpha * acc : 0.0, cm = 0;
        if (beta != 0) {
          double cij = C[ref_index(L, ldc, i, j)];
          r += beta * cij;
          cm = fin(beta) * fin(cij);
        }
        double scale = (double)s->k * fin(alpha) * ma * mb;
        size_t o = (bi * s->m + i) * s->n + j;
        w.v[o] = r;
        /* Each product, and beta*c, may be flushed where subnormal. */
        w.tol[o] = 1e-5 * scale + 1e-6 * cm +
                   FZ_FLUSH_ALLOW * (1 + (double)s->k * fin(alpha) + fin(beta));
        /* The products are summed in float32 before alpha scales them, so
         * they may overflow even where alpha brings the result back. */
        w.len[o] = scale > FZ_OVERFLOW || cm > FZ_OVERFLOW ||
                   (double)s->k * ma * mb > FZ_OVERFLOW;
      }
  }
}

void fzr_conv(const wgc_conv2d_desc *d, const float *x, const float *f,
              const float *bias, fz_want w) {
  size_t P, Q;
  if (!ref_conv2d_size(d, &P, &Q))
    return;
  long long sh = (long long)or_one(d->stride_h);
  long long sw = (long long)or_one(d->stride_w);
  long long dh = (long long)or_one(d->dilation_h);
  long long dw = (long long)or_one(d->dilation_w);
  size_t g = or_one(d->groups), cpg = d->c / g, kpg = d->k / g;
  long long H = (long long)d->h, W = (long long)d->w;
  double K = (double)(cpg * d->r * d->s);
  for (size_t in = 0; in < d->n; in++)
    for (size_t ok = 0; ok < d->k; ok++) {
      size_t grp = ok / kpg;
      for (size_t op = 0; op < P; op++)
        for (size_t oq = 0; oq < Q; oq++) {
          double bv = bias ? bias[ok] : 0.0;
          double acc = bv, mx = 0, mw = 0;
          bool nan_ok = false;
          for (size_t cc = 0; cc < cpg; cc++)
            for (size_t r = 0; r < d->r; r++)
              for (size_t s = 0; s < d->s; s++) {
                long long ih = (long long)op * sh - (long long)d->pad_h +
                               (long long)r * dh;
                long long iw = (long long)oq * sw - (long long)d->pad_w +
                               (long long)s * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                  /* Padding as explicit zeros (PyTorch) meets a NaN or
                   * infinite weight with NaN; skipping it does not. */
                  if (!isfinite(f[((ok * cpg + cc) * d->r + r) * d->s + s]))
                    nan_ok = true;
                  continue;
                }
                size_t ic = grp * cpg + cc;
                double xv = x[((in * d->c + ic) * d->h + (size_t)ih) * d->w +
                              (size_t)iw];
                double wv = f[((ok * cpg + cc) * d->r + r) * d->s + s];
                acc += xv * wv;
                mx = fmax(mx, fin(xv));
                mw = fmax(mw, fin(wv));
              }
          size_t o = ((in * d->k + ok) * P + op) * Q + oq;
          double scale = K * mx * mw;
          w.v[o] = acc;
          /* Each product, and the bias, may be flushed where subnormal
           * (as GEMM's). */
          w.tol[o] = 1e-5 * scale + 1e-6 * fin(bv) + FZ_FLUSH_ALLOW * (1 + K);
          w.len[o] = scale > FZ_OVERFLOW || fin(bv) > FZ_OVERFLOW ? FZ_LENIENT
                     : nan_ok                                     ? FZ_NAN_OK
                                                                  : 0;
        }
    }
}

/* Keys j < visible(i) are seen by query i. */
static size_t visible_keys(const wgc_attention_desc *d, size_t i) {
  if (d->causal == WGC_CAUSAL_TOP_LEFT)
    return i + 1 < d->seq_kv ? i + 1 : d->seq_kv;
  if (d->causal == WGC_CAUSAL_BOTTOM_RIGHT) {
    if (i + 1 + d->seq_kv <= d->seq_q)
      return 0;
    size_t v = i + 1 + d->seq_kv - d->seq_q;
    return v < d->seq_kv ? v : d->seq_kv;
  }
  return d->seq_kv;
}

/* The element strides of an attention operand; all 0 is the contiguous
 * [batch, heads, seq, dim] form. */
wgc_attention_strides fzr_attn_strides(wgc_attention_strides st, size_t heads,
                                       size_t seq, size_t dim) {
  if (st.batch || st.head || st.seq)
    return st;
  return (wgc_attention_strides){heads * seq * dim, seq * dim, dim};
}

void fzr_attn(const wgc_attention_desc *d, const float *q, const float *k,
              const float *v, const float *mask, fz_want w) {
  size_t hkv = d->heads_kv ? d->heads_kv : d->heads;
  size_t group = d->heads / hkv, D = d->head_dim;
  size_t Dv = d->head_dim_v ? d->head_dim_v : D;
  wgc_attention_strides qs =
      fzr_attn_strides(d->q_stride, d->heads, d->seq_q, D);
  wgc_attention_strides ks = fzr_attn_strides(d->k_stride, hkv, d->seq_kv, D);
  wgc_attention_strides vs = fzr_attn_strides(d->v_stride, hkv, d->seq_kv, Dv);
  wgc_attention_strides ms = d->mask_stride;
  double cap = d->softcap;
  /* scores of the keys a row sees: the last row sees the most */
  size_t most = d->seq_q ? visible_keys(d, d->seq_q - 1) : 0;
  double *p = calloc(most ? most : 1, sizeof *p);
  bool *near = calloc(most ? most : 1, sizeof *near);
  for (size_t b = 0; b < d->batch; b++)
    for (size_t h = 0; h < d->heads; h++) {
      size_t kh = h / group;
      for (size_t i = 0; i < d->seq_q; i++) {
        const float *qi = q + b * qs.batch + h * qs.head + i * qs.seq;
        const float *mr =
            mask ? mask + b * ms.batch + h * ms.head + i * ms.seq : NULL;
        size_t o0 = ((b * d->heads + h) * d->seq_q + i) * Dv;
        size_t vis = visible_keys(d, i);
        double mq = 0, mk = 0, mv = 0, mm = 0, mx = -INFINITY;
        bool nan_score = false;
        for (size_t e = 0; e < D; e++)
          mq = fmax(mq, fin(qi[e]));
        for (size_t j = 0; j < vis; j++) {
          const float *kj = k + b * ks.batch + kh * ks.head + j * ks.seq;
          const float *vj = v + b * vs.batch + kh * vs.head + j * vs.seq;
          double dot = 0;
          for (size_t e = 0; e < D; e++) {
            dot += (double)qi[e] * kj[e];
            mk = fmax(mk, fin(kj[e]));
          }
          for (size_t e = 0; e < Dv; e++)
            mv = fmax(mv, fin(vj[e]));
          p[j] = (double)d->scale * dot;
          if (cap > 0)
            p[j] = cap * tanh(p[j] / cap);
          if (mr) {
            p[j] += mr[j];
            mm = fmax(mm, fin(mr[j]));
          }
          if (isnan(p[j]))
            nan_score = true;
          else
            mx = fmax(mx, p[j]);
        }
        /* A key's weight is exp(s - max), 0 more than 87 below the max
         * (wgc.h); NaN where the row is NaN. Its values reach the row iff
         * the weight is not 0, infinities and NaN included; where its
         * score is within float32's rounding (of it and of the max) of
         * that edge, either answer holds. */
        double scale = (double)d->scale * (double)D * mq * mk;
        double l = 0;
        for (size_t j = 0; j < vis; j++) {
          double gap = nan_score ? NAN : p[j] - mx;
          double edge =
              1e-5 * scale + 1e-6 * (fin(p[j]) + fin(mx)) + 1e-5 * cap + 1e-6;
          near[j] = fabs(gap + 87.0) <= edge;
          p[j] = isnan(gap) ? NAN : gap >= -87.0 ? exp(gap) : 0.0;
          l += p[j];
        }
        for (size_t e = 0; e < Dv; e++) {
          double acc = 0;
          /* Kernels sum unnormalised weights (each at most 1) times the
           * values before dividing: up to vis * max|v| in float32; and
           * q.k is formed in float32 before the scale (1e30 * 1e30 is
           * +inf there, a NaN row). */
          bool len = scale > FZ_OVERFLOW || (double)D * mq * mk > FZ_OVERFLOW ||
                     (double)vis * mv > FZ_OVERFLOW || mm > FZ_OVERFLOW;
          for (size_t j = 0; j < vis; j++) {
            const float *vj = v + b * vs.batch + kh * vs.head + j * vs.seq;
            double wt = p[j] / l, vv = vj[e];
            if (!isfinite(vv) && !isnan(wt)) {
              if (near[j]) {
                len = true;
                continue;
              }
              if (p[j] == 0) /* weight 0: the key does not reach the row */
                continue;
            }
            acc += wt * vv;
          }
          w.v[o0 + e] = vis ? acc : 0.0;
          w.tol[o0 + e] = 1e-5 * (double)D * mq * mk * mv + 4e-6 * mv +
                          1e-6 * mm * mv + FZ_FLUSH_ALLOW;
          w.len[o0 + e] = vis && len;
        }
      }
    }
  free(p);
  free(near);
}

void fzr_reduce(wgc_reduce_op op, const float *x, const fz_shape *sh,
                size_t axis, fz_want w) {
  size_t outer = ref_count(sh->d, axis), len = sh->d[axis];
  size_t inner = ref_count(sh->d + axis + 1, sh->rank - axis - 1);
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      double acc = op == WGC_REDUCE_MAX   ? -INFINITY
                   : op == WGC_REDUCE_MIN ? INFINITY
                                          : 0.0;
      double mag = 0;
      bool nan = false;
      for (size_t r = 0; r < len; r++) {
        double v = x[(o * len + r) * inner + i];
        mag += fin(v);
        if (isnan(v))
          nan = true;
        else if (op == WGC_REDUCE_MAX)
          acc = fmax(acc, v);
        else if (op == WGC_REDUCE_MIN)
          acc = fmin(acc, v);
        else
          acc += v;
      }
      bool sum = op == WGC_REDUCE_SUM || op == WGC_REDUCE_MEAN;
      if (op == WGC_REDUCE_MEAN) {
        acc /= (double)len;
        mag /= (double)len;
      }
      size_t idx = o * inner + i;
      w.v[idx] = nan ? NAN : acc;
      /* API.md: at least pairwise summation; the header states about
       * 1e-6*sum|x|. */
      w.tol[idx] = (sum ? 2e-6 * mag : 0.0) + FZ_FLUSH_ALLOW;
      w.len[idx] = sum && mag * (op == WGC_REDUCE_MEAN ? (double)len : 1.0) >
                              FZ_OVERFLOW;
    }
}
