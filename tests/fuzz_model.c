/* Fuzz steps for the operations models are built from: unary ops with
 * parameters, reductions over several axes, argmax/argmin, softmax and the
 * norms, rotary embeddings, strided copies, gather and where. Each builds
 * its operands, issues the call on both contexts and fills the expected
 * elements from float64 (or exact-bit) references written here from
 * wgc.h's statements. GEMM epilogues live with the GEMM step
 * (fuzz_step.c) and take their reference from fz_epilogue_want. */
#include "fuzz_step.h"

#include "dtype_ref.h"
#include "ops_ref.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Float32 intermediates beyond this may overflow. */
#define FZ_OVERFLOW 1e38
/* Results that float32 holds only as subnormals may be flushed. */
#define FZ_FLUSH_ALLOW ((double)FLT_MIN)

static double fin(double x) { return isfinite(x) ? fabs(x) : 0.0; }

static void *mz(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) {
    fprintf(stdout, "FUZZ out of host memory\n");
    exit(3);
  }
  return p;
}

static float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static void set_want(fz_pending *p, int v, size_t i, double val, double tol,
                     int len) {
  p->w[v].v[i] = val;
  p->w[v].tol[i] = tol;
  p->w[v].len[i] = (unsigned char)len;
}

#define ADDR(o, b) (zero ? (wgc_ptr)0 : fz_addr(p, (o), (b)))

/* ---- GEMM epilogue --------------------------------------------------------
 */

static wgc_unary_op act_op(int act) {
  switch (act) {
  case WGC_ACTIVATION_RELU:
    return WGC_UNARY_RELU;
  case WGC_ACTIVATION_GELU:
    return WGC_UNARY_GELU;
  case WGC_ACTIVATION_GELU_TANH:
    return WGC_UNARY_GELU_TANH;
  default:
    return WGC_UNARY_SILU;
  }
}

void fz_epilogue_want(const fz_step *s, const float *bias, fz_want w,
                      size_t nout) {
  for (size_t o = 0; o < nout; o++) {
    size_t i = o / s->n % s->m, j = o % s->n;
    double bv = bias ? bias[s->bkind == WGC_BIAS_PER_ROW ? i : j] : 0.0;
    double pre = w.v[o] + bv;
    /* The bias is added in the sum's arithmetic: one more rounding. */
    double tol = w.tol[o] + 2e-7 * (fin(w.v[o]) + fin(bv)) + 1e-6 * fin(bv);
    int len = w.len[o] || fin(bv) > FZ_OVERFLOW;
    if (s->act == WGC_ACTIVATION_NONE) {
      w.v[o] = pre;
      w.tol[o] = tol;
    } else {
      double y = ref_unary(act_op(s->act), pre);
      /* An activation of a sum float32 may round to +-inf (or from
       * inf - inf to NaN) is that function's value there. */
      if (isfinite(pre) && fabs(pre) + tol >= FLT_MAX)
        len = 1;
      w.v[o] = y;
      w.tol[o] = 1.13 * tol + 1e-5 * fin(y) + 1e-6;
    }
    w.len[o] = (unsigned char)len;
  }
}

/* ---- unary with parameters ------------------------------------------------
 */

static bool build_unary_p(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  int X = fz_add_opnd(p, "input", s->n, false, -1);
  int O = fz_add_opnd(p, "output", s->n, true, s->inplace ? X : -1);
  fz_place(p);
  fz_fill_opnd(p, X, s->dist, s->mag);
  if (!fz_upload_all(e, p, msg, size))
    return false;
  bool zero = !s->n && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] = wgc_unary_params(e->ctx[b], (wgc_unary_op)s->op, s->alpha, s->beta,
                             ADDR(X, b), ADDR(O, b), s->n);
  if (!fz_statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, s->n);
  fz_map_contiguous(p, 0, O, s->n);
  double rel, abs_tol;
  ref_unary_bound((wgc_unary_op)s->op, &rel, &abs_tol);
  bool uses = s->op >= WGC_UNARY_LEAKY_RELU;
  for (int v = 0; v < 2; v++) {
    const float *x = fz_in(p, v, X);
    /* the flushed view flushes the parameters too: they are inputs of the
     * element function (wgc.h, SPECIAL VALUES) */
    float alpha = v ? fz_flush(s->alpha) : s->alpha;
    float beta = v ? fz_flush(s->beta) : s->beta;
    for (size_t i = 0; i < s->n; i++) {
      double y = uses ? ref_unary_params((wgc_unary_op)s->op, x[i], alpha, beta)
                      : ref_unary((wgc_unary_op)s->op, x[i]);
      double tol = rel * fabs(y) + abs_tol;
      if (s->op == WGC_UNARY_HARD_SIGMOID)
        tol += 1.2e-7 * (fin((double)alpha * x[i]) + fin(beta));
      set_want(p, v, i, y, tol, 0);
    }
  }
  return true;
}

/* ---- reductions over several axes -----------------------------------------
 */

static bool build_reduce_axes(fz_env *e, fz_pending *p, char *msg,
                              size_t size) {
  const fz_step *s = &p->s;
  size_t rank = s->sh.rank, axes[8], naxes = 0, nin = 1, nout = 1, red = 1;
  bool reduced[8] = {false};
  for (size_t d = 0; d < rank; d++) {
    nin *= s->sh.d[d];
    if (s->axes & (1u << d)) {
      reduced[d] = true;
      axes[naxes++] = d;
      red *= s->sh.d[d];
    } else {
      nout *= s->sh.d[d];
    }
  }
  fz_typed tx = fz_typed_make(s->dta, s, 0, nin),
           to = fz_typed_make(s->dtc, s, 2, nout);
  int X = fz_ew_add(p, "input", tx, false, -1);
  int O = fz_ew_add(p, "output", to, true, -1);
  fz_place(p);
  /* Any order of the list. */
  for (size_t i = naxes; i > 1; i--) {
    size_t j = fz_below(&p->data, i), t = axes[i - 1];
    axes[i - 1] = axes[j];
    axes[j] = t;
  }
  fz_ew_fill(p, X, tx, s->dist, s->mag);
  if (!fz_upload_all(e, p, msg, size))
    return false;
  bool zero = !nout && s->nullptrs;
  bool typed = tx.t || to.t;
  wgc_ptr xs = zero ? 0 : tx.sh, os = zero ? 0 : to.sh;
  bool no_identity = s->op == WGC_REDUCE_MAX || s->op == WGC_REDUCE_MIN ||
                     s->op == WGC_REDUCE_MEAN;
  wgc_status want =
      nout && !red && no_identity ? WGC_ERR_INVALID_ARGUMENT : WGC_OK;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] =
        s->inplace && naxes == 1 && typed
            ? wgc_reduce_ex(e->ctx[b], (wgc_reduce_op)s->op, ADDR(X, b) + xs,
                            tx.t, ADDR(O, b) + os, to.t, s->sh.d, rank, axes[0])
        : s->inplace && naxes == 1
            ? wgc_reduce(e->ctx[b], (wgc_reduce_op)s->op, ADDR(X, b),
                         ADDR(O, b), s->sh.d, rank, axes[0])
        : typed ? wgc_reduce_axes_ex(e->ctx[b], (wgc_reduce_op)s->op,
                                     ADDR(X, b) + xs, tx.t, ADDR(O, b) + os,
                                     to.t, s->sh.d, rank, axes, naxes)
                : wgc_reduce_axes(e->ctx[b], (wgc_reduce_op)s->op, ADDR(X, b),
                                  ADDR(O, b), s->sh.d, rank, axes, naxes);
  if (!fz_statuses(e, st, want, msg, size))
    return false;
  if (want != WGC_OK)
    nout = 0;
  fz_want_alloc(p, nout);
  fz_ew_map(p, O, to, nout);
  if (!nout)
    return true;
  double *out = mz(nout * sizeof *out), *mag = mz(nout * sizeof *mag);
  double *big = mz(nout * sizeof *big), *small = mz(nout * sizeof *small);
  float *lg = mz(nin * sizeof *lg);
  for (int v = 0; v < 2; v++) {
    float *own;
    const float *x = fz_ew_in(p, v, X, tx, &own);
    ref_reduce_axes((wgc_reduce_op)s->op, x, s->sh.d, rank, reduced, out, mag);
    if (s->op == WGC_REDUCE_PROD) {
      /* WebGPU multiplies in float32: a partial product may leave the
       * range where the whole does not. Its extremes bound every partial
       * product: the factors above 1 and those below. */
      for (size_t i = 0; i < nin; i++)
        lg[i] = isfinite(x[i]) && x[i] != 0 && fabsf(x[i]) > 1
                    ? (float)log(fabs(x[i]))
                    : 0.0f;
      ref_reduce_axes(WGC_REDUCE_SUM, lg, s->sh.d, rank, reduced, big, NULL);
      for (size_t i = 0; i < nin; i++)
        lg[i] = isfinite(x[i]) && x[i] != 0 && fabsf(x[i]) < 1
                    ? (float)log(fabs(x[i]))
                    : 0.0f;
      ref_reduce_axes(WGC_REDUCE_SUM, lg, s->sh.d, rank, reduced, small, NULL);
    }
    for (size_t i = 0; i < nout; i++) {
      double tol = ref_reduce_tol((wgc_reduce_op)s->op, red, out[i], mag[i]) +
                   FZ_FLUSH_ALLOW;
      int len = 0;
      switch (s->op) {
      case WGC_REDUCE_SUM:
      case WGC_REDUCE_MEAN:
      case WGC_REDUCE_L1:
        len = mag[i] > FZ_OVERFLOW;
        break;
      case WGC_REDUCE_SUM_SQUARE:
        /* squares below float32's range count as 0 on WebGPU */
        tol += (double)red * ldexp(1.0, -126);
        len = mag[i] > FZ_OVERFLOW;
        break;
      case WGC_REDUCE_L2:
        tol += sqrt((double)red) * ldexp(1.0, -63);
        len = mag[i] > FZ_OVERFLOW;
        break;
      case WGC_REDUCE_PROD:
        len = big[i] > log(FZ_OVERFLOW) || small[i] < log(1e-37);
        break;
      default:
        break;
      }
      set_want(p, v, i, out[i], tol, len);
    }
    free(own);
  }
  fz_ew_round(p, to, nout);
  free(out);
  free(mag);
  free(big);
  free(small);
  free(lg);
  return true;
}

/* ---- argmax, argmin -------------------------------------------------------
 */

static bool build_arg(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  size_t nin = ref_count(s->sh.d, s->sh.rank);
  size_t len = s->sh.d[s->axis];
  size_t nout = len ? nin / len : 0;
  int X = fz_add_opnd(p, "input", nin, false, -1);
  int O = fz_add_opnd(p, "output", nout, true, -1);
  fz_place(p);
  fz_fill_opnd(p, X, s->dist, s->mag);
  if (!fz_upload_all(e, p, msg, size))
    return false;
  bool zero = !nout && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] = (s->op ? wgc_argmin : wgc_argmax)(e->ctx[b], ADDR(X, b), ADDR(O, b),
                                              s->sh.d, s->sh.rank, s->axis);
  if (!fz_statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, nout);
  fz_map_contiguous(p, 0, O, nout);
  int32_t *idx = mz(nout * sizeof *idx);
  for (int v = 0; v < 2; v++) {
    ref_arg(!s->op, fz_in(p, v, X), s->sh.d, s->sh.rank, s->axis, idx);
    /* The index's bits as a float (a subnormal): compared exactly. */
    for (size_t i = 0; i < nout; i++)
      set_want(p, v, i, bits_float((uint32_t)idx[i]), 0.0, 0);
  }
  free(idx);
  return true;
}

/* ---- softmax, log_softmax, layer_norm, rms_norm ---------------------------
 */

static void ref_softmax_row(const float *x, size_t len, size_t step, bool lg,
                            double *y) {
  double m = -INFINITY;
  bool nan = false;
  for (size_t j = 0; j < len; j++) {
    double v = x[j * step];
    if (isnan(v))
      nan = true;
    else
      m = fmax(m, v);
  }
  if (nan || isinf(m)) { /* NaN, +inf, or every element -inf */
    for (size_t j = 0; j < len; j++)
      y[j] = NAN;
    return;
  }
  double sum = 0;
  for (size_t j = 0; j < len; j++)
    sum += exp((double)x[j * step] - m);
  for (size_t j = 0; j < len; j++)
    y[j] = lg ? (double)x[j * step] - m - log(sum)
              : exp((double)x[j * step] - m) / sum;
}

static bool build_norm(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  size_t rank = s->sh.rank, n = ref_count(s->sh.d, rank);
  size_t outer = ref_count(s->sh.d, s->axis);
  size_t group = ref_count(s->sh.d + s->axis, rank - s->axis);
  bool norm = s->op >= 2;
  bool has_scale = norm && (s->bias & 1),
       has_bias = s->op == 2 && (s->bias & 2);
  /* input dta, output dtc, scale and bias dtb (f32 or f16) */
  fz_typed tx = fz_typed_make(s->dta, s, 0, n),
           ts = fz_typed_make(s->dtb, s, 1, group),
           tb = fz_typed_make(s->dtb, s, 3, group),
           to = fz_typed_make(s->dtc, s, 2, n);
  if (s->inplace)
    to.sh = tx.sh;
  bool typed = tx.t || ts.t || to.t;
  int X = fz_ew_add(p, "input", tx, false, -1);
  int Sc = has_scale ? fz_ew_add(p, "scale", ts, false, -1) : -1;
  int Bi = has_bias ? fz_ew_add(p, "bias", tb, false, -1) : -1;
  int O = fz_ew_add(p, "output", to, true, s->inplace ? X : -1);
  fz_place(p);
  fz_ew_fill(p, X, tx, s->dist, s->mag);
  if (Sc >= 0)
    fz_ew_fill(p, Sc, ts, FZ_DIST_UNIT, 2.0);
  if (Bi >= 0)
    fz_ew_fill(p, Bi, tb, FZ_DIST_UNIT, 2.0);
  if (!fz_upload_all(e, p, msg, size))
    return false;
  bool zero = !n && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++) {
    wgc_context *c = e->ctx[b];
    wgc_ptr sc = Sc >= 0 ? ADDR(Sc, b) + ts.sh : 0,
            bi = Bi >= 0 ? ADDR(Bi, b) + tb.sh : 0;
    wgc_ptr x = ADDR(X, b) + (zero ? 0 : tx.sh),
            o = ADDR(O, b) + (zero ? 0 : to.sh);
    switch (s->op + 4 * typed) {
    case 0:
      st[b] = wgc_softmax(c, x, o, s->sh.d, rank, s->axis);
      break;
    case 1:
      st[b] = wgc_log_softmax(c, x, o, s->sh.d, rank, s->axis);
      break;
    case 2:
      st[b] = wgc_layer_norm(c, x, sc, bi, o, s->sh.d, rank, s->axis, s->eps);
      break;
    case 3:
      st[b] = wgc_rms_norm(c, x, sc, o, s->sh.d, rank, s->axis, s->eps);
      break;
    case 4:
      st[b] = wgc_softmax_ex(c, x, tx.t, o, to.t, s->sh.d, rank, s->axis);
      break;
    case 5:
      st[b] = wgc_log_softmax_ex(c, x, tx.t, o, to.t, s->sh.d, rank, s->axis);
      break;
    case 6:
      st[b] = wgc_layer_norm_ex(c, x, tx.t, sc, ts.t, bi, tb.t, o, to.t,
                                s->sh.d, rank, s->axis, s->eps);
      break;
    default:
      st[b] = wgc_rms_norm_ex(c, x, tx.t, sc, ts.t, o, to.t, s->sh.d, rank,
                              s->axis, s->eps);
    }
  }
  if (!fz_statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, n);
  fz_ew_map(p, O, to, n);
  if (!n)
    return true;
  double *y =
      mz((group > s->sh.d[s->axis] ? group : s->sh.d[s->axis]) * sizeof *y);
  for (int v = 0; v < 2; v++) {
    float *own[3];
    const float *x = fz_ew_in(p, v, X, tx, &own[0]);
    const float *sc = Sc >= 0 ? fz_ew_in(p, v, Sc, ts, &own[1]) : NULL;
    const float *bi = Bi >= 0 ? fz_ew_in(p, v, Bi, tb, &own[2]) : NULL;
    if (Sc < 0)
      own[1] = NULL;
    if (Bi < 0)
      own[2] = NULL;
    if (!norm) {
      size_t len = s->sh.d[s->axis], inner = group / len;
      for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++) {
          ref_softmax_row(x + o * group + i, len, inner, s->op == 1, y);
          for (size_t j = 0; j < len; j++) {
            double tol = 1e-5 * fin(y[j]) + (s->op == 1 ? 2e-6 : 1e-6);
            set_want(p, v, o * group + j * inner + i, y[j], tol, 0);
          }
        }
      free(own[0]);
      continue;
    }
    for (size_t o = 0; o < outer; o++) {
      const float *g = x + o * group;
      double mean = 0, var = 0, mx = 0;
      if (s->op == 2) {
        for (size_t j = 0; j < group; j++)
          mean += g[j];
        mean /= (double)group;
      }
      for (size_t j = 0; j < group; j++) {
        double d = (double)g[j] - mean;
        var += d * d;
        mx = fmax(mx, fin(d));
      }
      var /= (double)group;
      /* WebGPU keeps the statistics in float32: squares beyond its range
       * overflow there (the header's 1e19). */
      bool len = mx * mx * (double)group > FZ_OVERFLOW;
      /* The same float32 statistics underflow: with epsilon 0 (or below
       * float32's range) a group whose squares are all subnormal loses
       * them (inf, or digits gone). The header states only the overflow;
       * this case is left lenient until it says which answer holds. */
      len = len || (double)s->eps + var < 1e-35;
      double rs = 1.0 / sqrt(var + (double)s->eps);
      for (size_t j = 0; j < group; j++) {
        double sv = sc ? sc[j] : 1.0, bv = bi ? bi[j] : 0.0;
        double d = (double)g[j] - mean;
        double val = d * rs * sv + bv;
        int l = len;
        if (s->op == 2 && d == 0 && isinf(rs)) {
          /* A constant group with epsilon 0: the header's exact bias, or
           * IEEE's 0/0. */
          val = bv + 0.0 * sv;
          l = FZ_NAN_OK;
        }
        double tol = 1e-5 * fin(val) +
                     (s->op == 2 ? 1e-5 * fmax(1.0, fin(sv)) : 1e-6 * fin(sv)) +
                     1e-6 * fin(bv) + FZ_FLUSH_ALLOW;
        set_want(p, v, o * group + j, val, tol, l);
      }
    }
    for (int k = 0; k < 3; k++)
      free(own[k]);
  }
  fz_ew_round(p, to, n);
  free(y);
  return true;
}

/* ---- rotary embedding -----------------------------------------------------
 */

static int32_t pick_index(fz_rng *r, size_t len, int oor, bool negative) {
  if ((int)fz_below(r, 1000) < oor) {
    static const int64_t far[] = {INT32_MIN, INT32_MAX, -1000000, 1000000};
    size_t c = fz_below(r, 6);
    int64_t v = c < 4    ? far[c]
                : c == 4 ? (int64_t)len + (int64_t)fz_below(r, 3)
                         : -(int64_t)len - 1 - (int64_t)fz_below(r, 3);
    return (int32_t)v;
  }
  if (!len)
    return (int32_t)fz_below(r, 3) - 1;
  int64_t v = (int64_t)fz_below(r, len);
  if (negative && fz_chance(r, 0.4))
    v -= (int64_t)len;
  return (int32_t)v;
}

static bool build_rotary(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  const wgc_rotary_desc *d = &s->rd;
  size_t rd = d->rotary_dim ? d->rotary_dim : d->head_dim, half = rd / 2;
  size_t n = d->batch * d->seq * d->heads * d->head_dim;
  size_t rows = s->posids ? d->max_positions : d->batch * d->seq;
  /* input dta, caches dtb, output dtc (tsh bits 0, 1, 3, 2) */
  fz_typed tx = fz_typed_make(s->dta, s, 0, n),
           tc = fz_typed_make(s->dtb, s, 1, rows * half),
           ts = fz_typed_make(s->dtb, s, 3, rows * half),
           to = fz_typed_make(s->dtc, s, 2, n);
  if (s->inplace)
    to.sh = tx.sh;
  wgc_rotary_desc dt = *d;
  dt.input_type = tx.t, dt.output_type = to.t, dt.cache_type = tc.t;
  int X = fz_ew_add(p, "input", tx, false, -1);
  int P = s->posids
              ? fz_add_opnd(p, "position_ids", d->batch * d->seq, false, -1)
              : -1;
  int C = fz_ew_add(p, "cos_cache", tc, false, -1);
  int S = fz_ew_add(p, "sin_cache", ts, false, -1);
  int O = fz_ew_add(p, "output", to, true, s->inplace ? X : -1);
  fz_place(p);
  fz_ew_fill(p, X, tx, s->dist, s->mag);
  fz_ew_fill(p, C, tc, FZ_DIST_UNIT, 1.0);
  fz_ew_fill(p, S, ts, FZ_DIST_UNIT, 1.0);
  if (P >= 0) {
    float *ids = fz_in(p, 0, P);
    for (size_t i = 0; i < d->batch * d->seq; i++)
      ids[i] = bits_float(
          (uint32_t)pick_index(&p->data, d->max_positions, s->oor, false));
  }
  if (!fz_upload_all(e, p, msg, size))
    return false;
  bool zero = !n && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] = wgc_rotary_embedding(
        e->ctx[b], &dt, ADDR(X, b) + (zero ? 0 : tx.sh),
        P >= 0 ? ADDR(P, b) : 0, ADDR(C, b) + (zero ? 0 : tc.sh),
        ADDR(S, b) + (zero ? 0 : ts.sh), ADDR(O, b) + (zero ? 0 : to.sh));
  if (!fz_statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, n);
  fz_ew_map(p, O, to, n);
  for (int v = 0; v < 2; v++) {
    float *own[3];
    const float *x = fz_ew_in(p, v, X, tx, &own[0]),
                *cc = fz_ew_in(p, v, C, tc, &own[1]),
                *ss = fz_ew_in(p, v, S, ts, &own[2]);
    /* position ids are int32: their unflushed bits */
    const float *ids = P >= 0 ? fz_in(p, 0, P) : NULL;
    for (size_t b = 0; b < d->batch; b++)
      for (size_t q = 0; q < d->seq; q++)
        for (size_t h = 0; h < d->heads; h++) {
          size_t row = d->layout == WGC_ROTARY_BSHD
                           ? (b * d->seq + q) * d->heads + h
                           : (b * d->heads + h) * d->seq + q;
          const float *xr = x + row * d->head_dim;
          size_t o0 = row * d->head_dim;
          for (size_t j = 0; j < d->head_dim; j++)
            set_want(p, v, o0 + j, xr[j], 0.0, 0);
          const float *cr = NULL, *sr = NULL;
          if (ids) {
            int32_t pos = (int32_t)float_bits(ids[b * d->seq + q]);
            if (pos >= 0 && (size_t)pos < d->max_positions) {
              cr = cc + (size_t)pos * half;
              sr = ss + (size_t)pos * half;
            }
          } else {
            cr = cc + (b * d->seq + q) * half;
            sr = ss + (b * d->seq + q) * half;
          }
          for (size_t k = 0; k < half; k++) {
            size_t i1 = d->interleaved ? 2 * k : k;
            size_t i2 = d->interleaved ? 2 * k + 1 : k + half;
            double c = cr ? cr[k] : 0.0, sn = sr ? sr[k] : 0.0;
            double x1 = xr[i1], x2 = xr[i2];
            double scale = (fin(x1) + fin(x2)) * (fin(c) + fin(sn));
            /* each of the two products may be flushed where subnormal */
            double tol = 4e-7 * scale + 2 * FZ_FLUSH_ALLOW;
            int len = scale > FZ_OVERFLOW;
            set_want(p, v, o0 + i1, x1 * c - x2 * sn, tol, len);
            set_want(p, v, o0 + i2, x2 * c + x1 * sn, tol, len);
          }
        }
    for (int k = 0; k < 3; k++)
      free(own[k]);
  }
  fz_ew_round(p, to, n);
  return true;
}

/* ---- pooling ----------------------------------------------------------------
 */

static bool build_pool(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  const wgc_pool2d_desc *d = &s->pl;
  size_t pp, qq;
  ref_pool2d_size(d, &pp, &qq);
  size_t planes = d->n * d->c, nx = planes * d->h * d->w, ny = planes * pp * qq;
  /* input dta, output dtc (tsh bits 0, 2) */
  fz_typed tx = fz_typed_make(s->dta, s, 0, nx),
           to = fz_typed_make(s->dtc, s, 2, ny);
  wgc_pool2d_desc dt = *d;
  dt.input_type = tx.t, dt.output_type = to.t;
  int X = fz_ew_add(p, "input", tx, false, -1);
  int O = fz_ew_add(p, "output", to, true, -1);
  fz_place(p);
  fz_ew_fill(p, X, tx, s->dist, s->mag);
  if (!fz_upload_all(e, p, msg, size))
    return false;
  bool zero = !ny && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] = wgc_pool2d(e->ctx[b], &dt, ADDR(X, b) + (zero ? 0 : tx.sh),
                       ADDR(O, b) + (zero ? 0 : to.sh));
  if (!fz_statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, ny);
  fz_ew_map(p, O, to, ny);
  double *y = mz(ny * sizeof *y), *tol = mz(ny * sizeof *tol);
  double *mag = mz(ny * sizeof *mag);
  for (int v = 0; v < 2; v++) {
    float *own;
    ref_pool2d(d, fz_ew_in(p, v, X, tx, &own), y, tol, mag);
    free(own);
    /* float32 partial sums of finite taps may overflow where the double
     * sum does not */
    for (size_t o = 0; o < ny; o++)
      set_want(p, v, o, y[o], tol[o] + FZ_FLUSH_ALLOW, mag[o] > FZ_OVERFLOW);
  }
  free(y);
  free(tol);
  free(mag);
  fz_ew_round(p, to, ny);
  return true;
}

/* ---- strided copy ---------------------------------------------------------
 */

static dref_val where_val(fz_pending *p, int opnd, fz_typed o, size_t i);

/* Elements from the first to the last one a strided view reaches. */
static size_t view_span(const fz_shape *sh, const fz_shape *st) {
  size_t last = 0;
  for (size_t d = 0; d < sh->rank; d++) {
    if (!sh->d[d])
      return 0;
    if (sh->d[d] > 1)
      last += (sh->d[d] - 1) * st->d[d];
  }
  return last + 1;
}

static bool build_strided(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  size_t rank = s->sh.rank, n = ref_count(s->sh.d, rank);
  /* src dta, dst dtc (tsh bits 0, 2): wgc_copy_strided_ex */
  fz_typed ts = fz_typed_make(s->dta, s, 0, view_span(&s->sh, &s->sst)),
           td = fz_typed_make(s->dtc, s, 2, view_span(&s->sh, &s->dst));
  bool typed = ts.t || td.t;
  int S = fz_ew_add(p, "src", ts, false, -1);
  int D = fz_ew_add(p, "dst", td, true, -1);
  fz_place(p);
  fz_ew_fill(p, S, ts, FZ_DIST_BITS, 1);
  if (!fz_upload_all(e, p, msg, size))
    return false;
  bool zero = !n && s->nullptrs;
  bool null_shape = !rank && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++) {
    const size_t *dst = null_shape ? NULL : s->dst.d,
                 *sst = null_shape ? NULL : s->sst.d,
                 *shape = null_shape ? NULL : s->sh.d;
    st[b] = typed ? wgc_copy_strided_ex(
                        e->ctx[b], ADDR(D, b) + (zero ? 0 : td.sh), td.t, dst,
                        ADDR(S, b) + (zero ? 0 : ts.sh), ts.t, sst, shape, rank)
                  : wgc_copy_strided(e->ctx[b], ADDR(D, b), dst, ADDR(S, b),
                                     sst, shape, rank);
  }
  if (!fz_statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, n);
  p->bits = mz(n * sizeof(float));
  const float *src = fz_in(p, 0, S);
  if (td.t)
    p->otype = td.t;
  for (size_t i = 0; i < n; i++) {
    size_t rest = i, so = 0, dof = 0;
    for (size_t d = rank; d-- > 0;) {
      size_t k = rest % s->sh.d[d];
      rest /= s->sh.d[d];
      if (s->sh.d[d] > 1) {
        so += k * s->sst.d[d];
        dof += k * s->dst.d[d];
      }
    }
    p->oa[i] = (uint8_t)p->op[D].alloc;
    if (!typed) {
      p->opos[i] = p->op[D].off + dof;
      p->bits[i] = src[so];
      continue;
    }
    /* converted as wgc_cast does, then decoded as the check decodes it */
    p->opos[i] =
        td.t ? (4 * p->op[D].off + td.sh) / 2 + dof : p->op[D].off + dof;
    dref_val v = where_val(p, S, ts, so);
    if (td.t)
      v = dref_dec16(dref_enc16(v, td.t == WGC_DTYPE_BF16),
                     td.t == WGC_DTYPE_BF16);
    p->bits[i] = v.nan ? bits_float(v.nan) : (float)v.v;
  }
  return true;
}

/* ---- gather ---------------------------------------------------------------
 */

static bool build_gather(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  size_t rank = s->sh.rank, len = s->sh.d[s->axis];
  size_t outer = ref_count(s->sh.d, s->axis);
  size_t inner = ref_count(s->sh.d + s->axis + 1, rank - s->axis - 1);
  size_t nin = outer * len * inner, nout = outer * s->n * inner;
  /* typed (wgc_gather_ex) where ta or tb is set: 2-byte operands at a
   * 2-byte offset where m (table) or k (output) says */
  wgc_dtype dt = (wgc_dtype)s->ta, ot = (wgc_dtype)s->tb;
  bool typed = dt != WGC_DTYPE_F32 || ot != WGC_DTYPE_F32;
  size_t so = s->m && dt != WGC_DTYPE_F32 ? 2 : 0,
         oo = s->k && ot != WGC_DTYPE_F32 ? 2 : 0;
  size_t iw = (so + dref_bytes(dt, nin) + 3) / 4,
         ow = (oo + dref_bytes(ot, nout) + 3) / 4;
  int X = fz_add_opnd(p, "data", iw, false, -1);
  int I = fz_add_opnd(p, "indices", s->n, false, -1);
  int O = fz_add_opnd(p, "output", ow, true, -1);
  fz_place(p);
  fz_fill_opnd(p, X, FZ_DIST_BITS, 1);
  float *ids = fz_in(p, 0, I);
  for (size_t i = 0; i < s->n; i++)
    ids[i] = bits_float((uint32_t)pick_index(&p->data, len, s->oor, true));
  if (!fz_upload_all(e, p, msg, size))
    return false;
  bool zero = !nout && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++)
    st[b] = typed ? wgc_gather_ex(e->ctx[b], ADDR(X, b) + (zero ? 0 : so), dt,
                                  s->sh.d, rank, s->axis, ADDR(I, b), s->n,
                                  ADDR(O, b) + (zero ? 0 : oo), ot)
                  : wgc_gather(e->ctx[b], ADDR(X, b), s->sh.d, rank, s->axis,
                               ADDR(I, b), s->n, ADDR(O, b));
  if (!fz_statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, ow);
  fz_map_contiguous(p, 0, O, ow);
  /* the output's words as they were, each gathered row converted by
   * dtype_ref (exact, or rounded once to the output type), zeros for an
   * index out of range */
  p->bits = mz((ow ? ow : 1) * sizeof(float));
  memcpy(p->bits, fz_in(p, 0, O), ow * sizeof(float));
  const uint8_t *x = (const uint8_t *)fz_in(p, 0, X) + so;
  uint8_t *y = (uint8_t *)p->bits + oo;
  for (size_t o = 0; o < outer && inner; o++)
    for (size_t j = 0; j < s->n; j++) {
      int64_t k = (int32_t)float_bits(ids[j]);
      if (k < 0)
        k += (int64_t)len;
      uint8_t *row = y + dref_bytes(ot, (o * s->n + j) * inner);
      if (k >= 0 && k < (int64_t)len)
        dref_cast(x + dref_bytes(dt, (o * len + (size_t)k) * inner), dt, row,
                  ot, inner);
      else
        memset(row, 0, dref_bytes(ot, inner));
    }
  return true;
}

/* ---- where ----------------------------------------------------------------
 */

/* Element offset in a broadcast input of output index i. */
static size_t bcast_index(const size_t *osh, size_t orank, const fz_shape *in,
                          size_t i) {
  size_t off = 0, st = 1;
  for (size_t d = orank; d-- > 0;) {
    size_t k = i % osh[d];
    i /= osh[d];
    if (d >= orank - in->rank) {
      size_t dim = in->d[d - (orank - in->rank)];
      off += (dim == 1 ? 0 : k) * st;
      st *= dim;
    }
  }
  return off;
}

static bool same_shape(const fz_shape *a, const size_t *osh, size_t orank) {
  return a->rank == orank && !memcmp(a->d, osh, orank * sizeof(size_t));
}

/* Element i of a where operand as a value (NaN payloads as f32 bits). */
static dref_val where_val(fz_pending *p, int opnd, fz_typed o, size_t i) {
  if (o.t)
    return dref_load(fz_typed_bytes(p, opnd, o), o.t, i);
  float f = fz_in(p, 0, opnd)[i];
  return (dref_val){f, isnan(f) ? float_bits(f) : 0};
}

/* Whether cond element i is true: not +-0, by its bits. */
static bool where_true(fz_pending *p, int opnd, fz_typed o, size_t i) {
  if (!o.t)
    return float_bits(fz_in(p, 0, opnd)[i]) & 0x7FFFFFFFu;
  uint16_t h;
  memcpy(&h, fz_typed_bytes(p, opnd, o) + 2 * i, 2);
  return h & 0x7FFF;
}

static bool build_where(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  size_t ab[16], rab, osh[16], orank;
  if (!ref_broadcast_shape(s->sh.d, s->sh.rank, s->shb.d, s->shb.rank, ab,
                           &rab) ||
      !ref_broadcast_shape(ab, rab, s->shc.d, s->shc.rank, osh, &orank)) {
    snprintf(msg, size, "the generator made incompatible shapes");
    return false;
  }
  size_t na = ref_count(s->sh.d, s->sh.rank);
  size_t nb = ref_count(s->shb.d, s->shb.rank);
  size_t nc = ref_count(s->shc.d, s->shc.rank);
  size_t nout = ref_count(osh, orank);
  const fz_shape *alias_sh[4] = {NULL, &s->sh, &s->shb, &s->shc};
  bool al = s->inplace && same_shape(alias_sh[s->inplace], osh, orank);
  /* a dta, b dtb, out dtc, cond dtcond (tsh bits 0, 1, 2, 3) */
  fz_typed tc = fz_typed_make(s->dtcond, s, 3, nc),
           ta = fz_typed_make(s->dta, s, 0, na),
           tb = fz_typed_make(s->dtb, s, 1, nb),
           to = fz_typed_make(s->dtc, s, 2, nout);
  const fz_typed *alias_t[4] = {NULL, &ta, &tb, &tc};
  if (al)
    to.sh = alias_t[s->inplace]->sh;
  bool typed = tc.t || ta.t || tb.t || to.t;
  int C = fz_ew_add(p, "cond", tc, false, -1);
  int A = fz_ew_add(p, "a", ta, false, -1);
  int B = fz_ew_add(p, "b", tb, false, -1);
  int aliased[4] = {-1, A, B, C};
  int O = fz_ew_add(p, "out", to, true, al ? aliased[s->inplace] : -1);
  fz_place(p);
  fz_ew_fill(p, A, ta, FZ_DIST_BITS, 1);
  fz_ew_fill(p, B, tb, FZ_DIST_BITS, 1);
  if (tc.t)
    fz_ew_fill(p, C, tc, FZ_DIST_BITS, 1);
  float *c = tc.t ? mz((nc ? nc : 1) * sizeof *c) : fz_in(p, 0, C);
  for (size_t i = 0; i < nc; i++) {
    size_t k = fz_below(&p->data, 10);
    c[i] = k < 4   ? 0.0f
           : k < 5 ? -0.0f
           : k < 6 ? bits_float(0x7FC00000u | (uint32_t)fz_below(&p->data, 99))
           : k < 7 ? bits_float((1 + (uint32_t)fz_below(&p->data, 0x7FFFFF)) |
                                (fz_chance(&p->data, 0.5) ? 0x80000000u : 0))
                   : (float)(2 * fz_unit(&p->data) - 1);
  }
  if (tc.t) { /* the same draws encoded as cond's type */
    uint8_t *ch = fz_typed_bytes(p, C, tc);
    for (size_t i = 0; i < nc; i++) {
      dref_val dv = {c[i], isnan(c[i]) ? float_bits(c[i]) : 0};
      uint16_t h = dref_enc16(dv, tc.t == WGC_DTYPE_BF16);
      memcpy(ch + 2 * i, &h, 2);
    }
    free(c);
  }
  if (!fz_upload_all(e, p, msg, size))
    return false;
  bool zero = !nout && s->nullptrs;
  wgc_status st[2];
  for (int b = 0; b < 2; b++) {
    wgc_ptr cp = ADDR(C, b) + (zero ? 0 : tc.sh),
            ap = ADDR(A, b) + (zero ? 0 : ta.sh),
            bp = ADDR(B, b) + (zero ? 0 : tb.sh),
            op = ADDR(O, b) + (zero ? 0 : to.sh);
    st[b] = typed ? wgc_where_ex(e->ctx[b], cp, tc.t, s->shc.d, s->shc.rank, ap,
                                 ta.t, s->sh.d, s->sh.rank, bp, tb.t, s->shb.d,
                                 s->shb.rank, op, to.t)
                  : wgc_where(e->ctx[b], cp, s->shc.d, s->shc.rank, ap, s->sh.d,
                              s->sh.rank, bp, s->shb.d, s->shb.rank, op);
  }
  if (!fz_statuses(e, st, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, nout);
  fz_ew_map(p, O, to, nout);
  p->bits = mz(nout * sizeof(float));
  /* the chosen value converted as wgc_cast does, then decoded as the
   * check decodes the output */
  for (size_t i = 0; i < nout; i++) {
    bool t = where_true(p, C, tc, bcast_index(osh, orank, &s->shc, i));
    dref_val v = t ? where_val(p, A, ta, bcast_index(osh, orank, &s->sh, i))
                   : where_val(p, B, tb, bcast_index(osh, orank, &s->shb, i));
    if (to.t)
      v = dref_dec16(dref_enc16(v, to.t == WGC_DTYPE_BF16),
                     to.t == WGC_DTYPE_BF16);
    float f = (float)v.v;
    if (v.nan)
      f = bits_float(v.nan);
    p->bits[i] = f;
  }
  return true;
}

/* ---- cast -----------------------------------------------------------------
 */

/* A subnormal f32 or bf16 source value becomes 0: quantizing one may
 * differ on devices that flush subnormals (wgc.h, wgc_cast). */
static void unflush(uint8_t *src, wgc_dtype t, size_t n) {
  for (size_t i = 0; i < n && (t == WGC_DTYPE_F32 || t == WGC_DTYPE_BF16);
       i++) {
    size_t w = t == WGC_DTYPE_F32 ? 4 : 2;
    uint8_t *at = src + i * w;
    uint32_t b = 0;
    memcpy((uint8_t *)&b + 4 - w, at, w);
    if (!(b & 0x7f800000u) && (b & 0x7fffffffu)) {
      b &= 0x80000000u;
      memcpy(at, (uint8_t *)&b + 4 - w, w);
    }
  }
}

static bool build_cast(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  wgc_dtype st = (wgc_dtype)s->ta, dt = (wgc_dtype)s->tb;
  size_t so = s->m && dref_bytes(st, 32) % 4 ? 2 : 0,
         dof = s->k && dref_bytes(dt, 32) % 4 ? 2 : 0;
  size_t sb = dref_bytes(st, s->n), db = dref_bytes(dt, s->n);
  size_t sw = (so + sb + 3) / 4, dw = (dof + db + 3) / 4;
  int S = fz_add_opnd(p, "src", sw, false, -1);
  int O = fz_add_opnd(p, "dst", dw, true, -1);
  fz_place(p);
  bool floats = st == WGC_DTYPE_F32;
  fz_fill_opnd(p, S, floats ? s->dist : FZ_DIST_BITS, floats ? s->mag : 1);
  uint8_t *src = (uint8_t *)fz_in(p, 0, S);
  if (dt == WGC_DTYPE_Q8_0 || dt == WGC_DTYPE_Q4_0)
    unflush(src + so, st, s->n);
  if (!fz_upload_all(e, p, msg, size))
    return false;
  bool zero = !s->n && s->nullptrs;
  wgc_status stt[2];
  for (int b = 0; b < 2; b++)
    stt[b] = wgc_cast(e->ctx[b], ADDR(S, b) + (zero ? 0 : so), st,
                      ADDR(O, b) + (zero ? 0 : dof), dt, s->n);
  if (!fz_statuses(e, stt, WGC_OK, msg, size))
    return false;
  fz_want_alloc(p, dw);
  fz_map_contiguous(p, 0, O, dw);
  p->bits = mz((dw ? dw : 1) * sizeof(float));
  memcpy(p->bits, fz_in(p, 0, O), dw * sizeof(float));
  if (s->n)
    dref_cast(src + so, st, (uint8_t *)p->bits + dof, dt, s->n);
  return true;
}

bool fz_build_model(fz_env *e, fz_pending *p, char *msg, size_t size) {
  switch (p->s.kind) {
  case FZ_UNARY_P:
    return build_unary_p(e, p, msg, size);
  case FZ_REDUCE_AXES:
    return build_reduce_axes(e, p, msg, size);
  case FZ_ARG:
    return build_arg(e, p, msg, size);
  case FZ_NORM:
    return build_norm(e, p, msg, size);
  case FZ_ROTARY:
    return build_rotary(e, p, msg, size);
  case FZ_STRIDED:
    return build_strided(e, p, msg, size);
  case FZ_GATHER:
    return build_gather(e, p, msg, size);
  case FZ_WHERE:
    return build_where(e, p, msg, size);
  case FZ_POOL:
    return build_pool(e, p, msg, size);
  case FZ_CAST:
    return build_cast(e, p, msg, size);
  default:
    snprintf(msg, size, "kind %d is not a model step", p->s.kind);
    return false;
  }
}

/* Inputs behind output element i, where one element decides it. */
void fz_describe_model(const fz_pending *p, size_t i, char *buf, size_t size) {
  const fz_step *s = &p->s;
  buf[0] = 0;
  if (s->kind == FZ_UNARY_P && p->nopnd > 0) {
    const float *x = p->al[p->op[0].alloc].init + p->op[0].off;
    snprintf(buf, size, " for %s(%.9g; alpha %.9g, beta %.9g)",
             ref_unary_name((wgc_unary_op)s->op), x[i], s->alpha, s->beta);
  } else if ((s->kind == FZ_NORM || s->kind == FZ_REDUCE_AXES ||
              s->kind == FZ_ARG) &&
             p->nopnd > 0) {
    snprintf(buf, size, " (op %d)", s->op);
  }
}
