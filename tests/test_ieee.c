/* Special values and accuracy corners, against float64 references computed
 * here: empty reductions that must not read memory, NaN scalars (GEMM
 * beta), NaN and infinities in attention, subnormal and extreme inputs of
 * the element-wise functions, and sums a large bias must not swallow. Each
 * case runs on both backends ("[cpu]", "[webgpu]"); the test runner runs the
 * webgpu ones again with WGC_KERNELS=gpu, so both kernel forms are covered. */
#include "ops_ref.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill(float *x, size_t n, float v) {
  for (size_t i = 0; i < n; i++)
    x[i] = v;
}

/* Whether got is NaN exactly where want is, and elsewhere within
 * rel*|want| + abs_tol; names the first mismatch. */
static void check_values(const char *what, const float *got, const double *want,
                         size_t n, double rel, double abs_tol) {
  for (size_t i = 0; i < n; i++) {
    double g = got[i], w = want[i];
    bool ok;
    if (isnan(w) || isnan(g))
      ok = isnan(w) && isnan(g);
    else if (isinf(w) || isinf(g))
      ok = g == w;
    else
      ok = fabs(g - w) <= rel * fabs(w) + abs_tol;
    if (!ok) {
      CHECK(false, "%s: element %zu is %.9g, want %.9g (bound %.3g)", what, i,
            g, w, rel * fabs(w) + abs_tol);
      return;
    }
  }
}

/* ---- conv2d ------------------------------------------------------------ */

/* c == 0: the sum over input channels is empty, so every output is its
 * channel's bias (or 0), whatever the memory at the input and filter
 * addresses holds. The allocations hold garbage right where they start. */
static void conv_no_channels(int bi, size_t k, bool bias) {
  if (!case_begin("ieee conv2d[%s] c=0 k=%zu %s with garbage at input and "
                  "filter -> %s",
                  backend_label(test_backends[bi]), k,
                  bias ? "bias" : "no-bias", bias ? "bias" : "zeros"))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  wgc_conv2d_desc d = {.n = 2,
                       .c = 0,
                       .h = 5,
                       .w = 6,
                       .k = k,
                       .r = 3,
                       .s = 3,
                       .pad_h = 1,
                       .pad_w = 1};
  size_t p = 5, q = 6, ny = d.n * k * p * q;
  float junk[16], *b = falloc(k), *y = falloc(ny);
  fill(junk, 16, 7.0f);
  fill_uniform(b, k, -2, 2, 5);
  fill(y, ny, -1.0f);
  wgc_ptr dx = ctx ? dev_from(ctx, junk, 16) : 0;
  wgc_ptr dw = ctx ? dev_from(ctx, junk, 16) : 0;
  wgc_ptr db = ctx ? dev_from(ctx, b, k) : 0;
  wgc_ptr dy = ctx ? dev_from(ctx, y, ny) : 0;
  if (dx && dw && db && dy) {
    CHECK_STATUS(wgc_conv2d(ctx, &d, dx, dw, bias ? db : 0, dy), WGC_OK);
    if (dev_read(ctx, y, dy, ny)) {
      double *want = dalloc(ny);
      for (size_t i = 0; i < ny; i++)
        want[i] = bias ? b[i / (p * q) % k] : 0.0;
      check_values("output", y, want, ny, 0, 0);
      free(want);
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dw);
  dev_free(ctx, db);
  dev_free(ctx, dy);
  free(b);
  free(y);
  case_end();
}

/* A bias far larger than the sum of the taps: the sum is formed first and
 * the bias added last, so the taps are not lost to its rounding (bias 1e6
 * plus 256 taps of 0.03 is 1000007.68; starting at the bias in float, each
 * tap vanishes). c_mul scales the channels; with many taps the WebGPU
 * kernels split the sum over launches and the bias must still come once. */
static void conv_big_bias(int bi, size_t c, size_t k) {
  wgc_conv2d_desc d = {.n = 1, .c = c, .h = 4, .w = 4, .k = k, .r = 4, .s = 4};
  size_t taps = c * 16, nx = c * 16, nw = k * taps, ny = k;
  if (!case_begin("ieee conv2d[%s] bias 1e6 plus %zu taps of 0.03 k=%zu",
                  backend_label(test_backends[bi]), taps, k))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  float *x = falloc(nx), *w = falloc(nw), *b = falloc(k), *y = falloc(ny);
  fill(x, nx, 1.0f);
  fill(w, nw, 0.03f);
  for (size_t o = 0; o < k; o++)
    b[o] = 1e6f + (float)o;
  wgc_ptr dx = ctx ? dev_from(ctx, x, nx) : 0;
  wgc_ptr dw = ctx ? dev_from(ctx, w, nw) : 0;
  wgc_ptr db = ctx ? dev_from(ctx, b, k) : 0;
  wgc_ptr dy = ctx ? dev_alloc(ctx, 4 * ny) : 0;
  if (dx && dw && db && dy) {
    CHECK_STATUS(wgc_conv2d(ctx, &d, dx, dw, db, dy), WGC_OK);
    if (dev_read(ctx, y, dy, ny)) {
      double *want = dalloc(ny);
      for (size_t o = 0; o < k; o++)
        want[o] = (double)b[o] + (double)taps * (double)0.03f;
      /* API.md's conv bound: 1e-5*K*max|x|*max|f| + 1e-6*max|bias| */
      double bound = 1e-5 * (double)taps * 0.03 + 1e-6 * (1e6 + k);
      check_values("output", y, want, ny, 0, bound);
      free(want);
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dw);
  dev_free(ctx, db);
  dev_free(ctx, dy);
  free(x);
  free(w);
  free(b);
  free(y);
  case_end();
}

TEST(ieee_conv2d) {
  for (int bi = 0; bi < 2; bi++) {
    /* k < 8: the direct kernel; 8..47 and 64: the GEMM-shaped forms */
    const size_t ks[] = {1, 3, 8, 64};
    for (size_t i = 0; i < 4; i++) {
      conv_no_channels(bi, ks[i], true);
      conv_no_channels(bi, ks[i], false);
    }
    conv_big_bias(bi, 16, 1);
    conv_big_bias(bi, 16, 8);
    /* 35200 taps: more than one launch runs on CPU adapters (loop budget) */
    conv_big_bias(bi, 2200, 2);
    conv_big_bias(bi, 2200, 8);
  }
}

/* ---- GEMM ---------------------------------------------------------------- */

/* beta = NaN makes every element of C NaN (only an exact beta == 0 skips C),
 * on every path: the per-element, tiled and split-K kernels and the
 * k == 0 and alpha == 0 quick returns; batched too. */
static void gemm_nan_beta(int bi, size_t m, size_t n, size_t k, float alpha,
                          size_t batch) {
  if (!case_begin("ieee gemm[%s] beta=NaN m=%zu n=%zu k=%zu alpha=%g "
                  "batch=%zu -> NaN",
                  backend_label(test_backends[bi]), m, n, k, alpha, batch))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  size_t na = batch * m * (k ? k : 1), nb = batch * (k ? k : 1) * n,
         nc = batch * m * n;
  float *a = falloc(na), *b = falloc(nb), *c = falloc(nc);
  fill_uniform(a, na, -1, 1, 1);
  fill_uniform(b, nb, -1, 1, 2);
  fill_uniform(c, nc, -1, 1, 3);
  wgc_ptr da = ctx ? dev_from(ctx, a, na) : 0;
  wgc_ptr db = ctx ? dev_from(ctx, b, nb) : 0;
  wgc_ptr dc = ctx ? dev_from(ctx, c, nc) : 0;
  if (da && db && dc) {
    float beta = NAN;
    size_t lk = k ? k : 1;
    if (batch == 1)
      CHECK_STATUS(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, m,
                            n, k, alpha, da, lk, db, n, beta, dc, n),
                   WGC_OK);
    else
      CHECK_STATUS(wgc_gemm_batched(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS,
                                    WGC_NO_TRANS, m, n, k, alpha, da, lk,
                                    m * lk, db, n, lk * n, beta, dc, n, m * n,
                                    batch),
                   WGC_OK);
    if (dev_read(ctx, c, dc, nc)) {
      double *want = dalloc(nc);
      for (size_t i = 0; i < nc; i++)
        want[i] = NAN;
      check_values("C", c, want, nc, 0, 0);
      free(want);
    }
  }
  dev_free(ctx, da);
  dev_free(ctx, db);
  dev_free(ctx, dc);
  free(a);
  free(b);
  free(c);
  case_end();
}

TEST(ieee_gemm) {
  for (int bi = 0; bi < 2; bi++) {
    gemm_nan_beta(bi, 3, 5, 7, 1, 1);      /* per-element kernel */
    gemm_nan_beta(bi, 128, 96, 64, 1, 1);  /* tiled */
    gemm_nan_beta(bi, 4, 4, 4096, 1, 1);   /* per-element, split-K */
    gemm_nan_beta(bi, 64, 64, 2048, 1, 1); /* tiled, split-K */
    gemm_nan_beta(bi, 9, 10, 0, 1, 1);     /* k == 0 */
    gemm_nan_beta(bi, 9, 10, 11, 0, 1);    /* alpha == 0 */
    gemm_nan_beta(bi, 5, 6, 7, 1, 3);      /* batched */
    gemm_nan_beta(bi, 70, 70, 33, 2, 2);   /* batched, tiled */
  }
}

/* ---- attention ----------------------------------------------------------- */

/* Which special values a case plants (in Q, K, V of head 0 unless said). */
typedef enum {
  SP_Q_NAN,         /* NaN in query row 1 */
  SP_K_NAN,         /* NaN in key 3: rows that see it are NaN */
  SP_K_POS_INF,     /* +inf score at key 5 (q[.][0] > 0): NaN rows */
  SP_K_NEG_INF,     /* -inf score at key 4 with NaN in its V: weight 0 */
  SP_ROW_NEG_INF,   /* every score of row 0 is -inf: NaN row */
  SP_V_NAN,         /* NaN in V of key 6: every row that sees it */
  SP_V_INF,         /* +inf in V of key 7, dim 1: +inf there */
  SP_BLOCK_NEG_INF, /* keys of the first half score -inf, the rest finite */
  SP_HUGE,          /* q 1e30 * k 1e30 at key 2: beyond float, +inf */
  SP_COUNT
} special;

static const char *const SPECIAL_NAMES[SP_COUNT] = {
    "NaN in q",
    "NaN in k",
    "+inf score",
    "-inf score with NaN in v",
    "row of -inf scores",
    "NaN in v",
    "+inf in v",
    "first half of keys -inf",
    "score beyond the float range"};

/* Column 0 of Q is 0.5 and of K 0.5 too (keys in far blocks as well), so
 * that an infinity there gives a score of a known sign. */
static void plant(special sp, const wgc_attention_desc *d, float *q, float *k,
                  float *v) {
  size_t hd = d->head_dim, nq = d->seq_q, nk = d->seq_kv;
  for (size_t i = 0; i < d->batch * d->heads * nq; i++)
    q[i * hd] = 0.5f;
  for (size_t j = 0; j < d->batch * d->heads_kv * nk; j++)
    k[j * hd] = 0.5f;
  /* far keys for long sequences, so that split blocks see them */
  size_t far = nk > 1000 ? nk - 10 : 0;
  switch (sp) {
  case SP_Q_NAN:
    q[1 * hd + 2 % hd] = NAN;
    break;
  case SP_K_NAN:
    k[(3 + far) * hd + (hd - 1)] = NAN;
    break;
  case SP_K_POS_INF:
    k[(5 + far) * hd] = INFINITY;
    break;
  case SP_K_NEG_INF:
    k[(4 + far) * hd] = -INFINITY;
    for (size_t e = 0; e < hd; e++)
      v[(4 + far) * hd + e] = NAN;
    break;
  case SP_ROW_NEG_INF:
    q[0] = -INFINITY;
    break;
  case SP_V_NAN:
    v[(6 + far) * hd + hd / 2] = NAN;
    break;
  case SP_V_INF:
    v[(7 + far) * hd + 1] = INFINITY;
    break;
  case SP_BLOCK_NEG_INF:
    for (size_t j = 0; j < nk / 2; j++)
      k[j * hd] = -INFINITY;
    break;
  case SP_HUGE:
    q[2 * hd + 1] = 1e30f;
    k[(2 + far) * hd + 1] = 1e30f;
    break;
  default:
    break;
  }
}

/* softmax(scale*QK^T + mask) V in float64, with IEEE semantics of the
 * unfused formula as API.md states them. */
static void attention_ref(const wgc_attention_desc *d, const float *q,
                          const float *k, const float *v, double *out) {
  size_t hkv = d->heads_kv ? d->heads_kv : d->heads, hd = d->head_dim;
  size_t nq = d->seq_q, nk = d->seq_kv, group = d->heads / hkv;
  double *s = dalloc(nk ? nk : 1);
  for (size_t bh = 0; bh < d->batch * d->heads; bh++) {
    size_t kvh = bh / d->heads * hkv + bh % d->heads / group;
    const float *kb = k + kvh * nk * hd, *vb = v + kvh * nk * hd;
    for (size_t i = 0; i < nq; i++) {
      const float *qi = q + (bh * nq + i) * hd;
      double *oi = out + (bh * nq + i) * hd;
      long long vis = (long long)nk;
      if (d->causal == WGC_CAUSAL_TOP_LEFT)
        vis = (long long)i + 1;
      else if (d->causal == WGC_CAUSAL_BOTTOM_RIGHT)
        vis = (long long)i + 1 + (long long)nk - (long long)nq;
      vis = vis < 0 ? 0 : vis > (long long)nk ? (long long)nk : vis;
      for (size_t e = 0; e < hd; e++)
        oi[e] = 0;
      if (vis == 0)
        continue;
      double top = -INFINITY;
      bool bad = false;
      for (long long j = 0; j < vis; j++) {
        double dot = 0;
        for (size_t e = 0; e < hd; e++)
          dot += (double)qi[e] * kb[j * hd + e];
        s[j] = d->scale * dot;
        if (fabs(s[j]) > FLT_MAX) /* the float arithmetic's overflow */
          s[j] = s[j] > 0 ? INFINITY : -INFINITY;
        bad |= isnan(s[j]) || s[j] == INFINITY;
        top = fmax(top, s[j]);
      }
      double sum = 0;
      for (long long j = 0; j < vis; j++) {
        double p = exp(s[j] - top); /* NaN when top is +-inf */
        if (p == 0)
          continue; /* weight 0: nothing of V[j] */
        sum += p;
        for (size_t e = 0; e < hd; e++)
          oi[e] += p * vb[j * hd + e];
      }
      for (size_t e = 0; e < hd; e++)
        oi[e] = bad || top == -INFINITY ? NAN : oi[e] / sum;
    }
  }
  free(s);
}

static double max_finite(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i]))
      m = fmax(m, fabs((double)x[i]));
  return m;
}

/* capped (NULL: the shared contexts): a WebGPU context with 4 KiB
 * bindings, made on first use (bi must be the WebGPU one), which splits the
 * keys into many blocks merged over several combine rounds. */
static void attention_special(int bi, special sp, size_t nq, size_t nk,
                              size_t hd, wgc_causal causal,
                              wgc_context **capped) {
  static const char *const CAUSAL[] = {"none", "top-left", "bottom-right"};
  if (!case_begin("ieee attention[%s%s] %s seq_q=%zu seq_kv=%zu head_dim=%zu "
                  "causal=%s",
                  backend_label(test_backends[bi]),
                  capped ? " 4 KiB bindings" : "", SPECIAL_NAMES[sp], nq, nk,
                  hd, CAUSAL[causal]))
    return;
  wgc_context *ctx = NULL;
  if (!capped) {
    ctx = test_ctx(test_backends[bi]);
  } else {
    if (!*capped)
      *capped = new_ctx(WGC_BACKEND_WEBGPU, 4096);
    ctx = *capped;
  }
  wgc_attention_desc d = {.batch = 1,
                          .heads = 2,
                          .heads_kv = 1,
                          .seq_q = nq,
                          .seq_kv = nk,
                          .head_dim = hd,
                          .scale = 1.0f / sqrtf((float)hd),
                          .causal = causal};
  size_t n_q = 2 * nq * hd, n_kv = nk * hd;
  float *q = falloc(n_q), *k = falloc(n_kv), *v = falloc(n_kv);
  float *o = falloc(n_q);
  fill_uniform(q, n_q, -1, 1, 21);
  fill_uniform(k, n_kv, -1, 1, 22);
  fill_uniform(v, n_kv, -1, 1, 23);
  plant(sp, &d, q, k, v);
  fill(o, n_q, 12345.0f);
  wgc_ptr dq = ctx ? dev_from(ctx, q, n_q) : 0;
  wgc_ptr dk = ctx ? dev_from(ctx, k, n_kv) : 0;
  wgc_ptr dv = ctx ? dev_from(ctx, v, n_kv) : 0;
  wgc_ptr dout = ctx ? dev_from(ctx, o, n_q) : 0;
  if (dq && dk && dv && dout) {
    CHECK_STATUS(wgc_attention(ctx, &d, dq, dk, dv, dout), WGC_OK);
    if (dev_read(ctx, o, dout, n_q)) {
      double *want = dalloc(n_q);
      attention_ref(&d, q, k, v, want);
      double mv = max_finite(v, n_kv);
      double bound =
          1e-5 * (double)hd * max_finite(q, n_q) * max_finite(k, n_kv) * mv +
          4e-6 * mv;
      check_values("O", o, want, n_q, 0, bound);
      free(want);
    }
  }
  dev_free(ctx, dq);
  dev_free(ctx, dk);
  dev_free(ctx, dv);
  dev_free(ctx, dout);
  free(q);
  free(k);
  free(v);
  free(o);
  case_end();
}

TEST(ieee_attention) {
  for (int bi = 0; bi < 2; bi++)
    for (int sp = 0; sp < SP_COUNT; sp++) {
      /* rows form (and the register form on CPU adapters) */
      attention_special(bi, sp, 9, 20, 8, WGC_CAUSAL_NONE, NULL);
      attention_special(bi, sp, 9, 20, 8, WGC_CAUSAL_TOP_LEFT, NULL);
      /* rows that see no key stay zeros, whatever they hold */
      attention_special(bi, sp, 12, 8, 8, WGC_CAUSAL_BOTTOM_RIGHT, NULL);
      /* tiles form on GPUs */
      attention_special(bi, sp, 20, 37, 80, WGC_CAUSAL_TOP_LEFT, NULL);
      /* decoding over key blocks merged by the split-KV combine on CPU
       * adapters (their loop budget) */
      attention_special(bi, sp, 2, 9000, 64, WGC_CAUSAL_BOTTOM_RIGHT, NULL);
    }
  /* many key blocks merged over several combine rounds */
  wgc_context *capped = NULL;
  int bi = test_backends[0] == WGC_BACKEND_WEBGPU ? 0 : 1;
  for (int sp = 0; sp < SP_COUNT; sp++)
    attention_special(bi, sp, 3, 1100, 16, WGC_CAUSAL_BOTTOM_RIGHT, &capped);
  wgc_destroy(capped);
}

/* Special values in the additive mask ([seq_q, seq_kv], shared by the
 * heads), alone and with softcap: the unfused softmax(softcap(s) + mask) V
 * of ops_ref.c. */
typedef enum {
  MSP_NEG_INF,     /* -inf at keys 1, 4 (NaN in V of key 4): weight 0 */
  MSP_ROW_NEG_INF, /* row 1 all -inf: NaN */
  MSP_NAN,         /* NaN at key 3 of row 2: row 2 NaN */
  MSP_POS_INF,     /* +inf at key 5 of row 0: row 0 NaN */
  MSP_HIDDEN_NAN,  /* NaN at keys the causal mask hides: no effect */
  MSP_CAP_INF,     /* softcap: a +inf score becomes softcap, -inf masks */
  MSP_CAP_ROW_NEG, /* softcap: row 0 all -inf in the mask: NaN */
  MSP_COUNT
} mask_special;

static const char *const MASK_SPECIAL_NAMES[MSP_COUNT] = {
    "-inf in the mask with NaN in v",
    "row of -inf in the mask",
    "NaN in the mask",
    "+inf in the mask",
    "NaN in the mask under the causal mask",
    "softcap with +inf score and -inf mask",
    "softcap with a row of -inf in the mask"};

static void plant_mask(mask_special sp, const wgc_attention_desc *d, float *m,
                       float *q, float *k, float *v) {
  size_t nq = d->seq_q, nk = d->seq_kv, hd = d->head_dim;
  size_t far = nk > 1000 ? nk - 10 : 0; /* reaches later key blocks */
  switch (sp) {
  case MSP_NEG_INF:
    for (size_t i = 0; i < nq; i++)
      m[i * nk + 1] = m[i * nk + 4 + far] = -INFINITY;
    for (size_t e = 0; e < hd; e++)
      v[(4 + far) * hd + e] = NAN;
    break;
  case MSP_ROW_NEG_INF:
    for (size_t j = 0; j < nk; j++)
      m[1 * nk + j] = -INFINITY;
    break;
  case MSP_NAN: /* the last row where there are fewer than three */
    m[(nq > 2 ? 2 : nq - 1) * nk + 3 + far] = NAN;
    break;
  case MSP_POS_INF:
    m[5 + far] = INFINITY;
    break;
  case MSP_HIDDEN_NAN: /* keys past row i's causal prefix */
    for (size_t i = 0; i < nq; i++)
      for (size_t j = 0; j < nk; j++)
        if (d->causal == WGC_CAUSAL_NONE
                ? j == 2
                : j > i + (d->causal == WGC_CAUSAL_TOP_LEFT ? 0 : nk - nq))
          m[i * nk + j] = d->causal == WGC_CAUSAL_NONE ? -INFINITY : NAN;
    break;
  case MSP_CAP_INF:
    for (size_t i = 0; i < d->batch * d->heads * nq; i++)
      q[i * hd] = 0.5f;
    k[(5 + far) * hd] = INFINITY;
    for (size_t i = 0; i < nq; i++)
      m[i * nk + 1] = -INFINITY;
    break;
  case MSP_CAP_ROW_NEG:
    for (size_t j = 0; j < nk; j++)
      m[j] = -INFINITY;
    break;
  default:
    break;
  }
}

static void attention_mask_special(int bi, mask_special sp, size_t nq,
                                   size_t nk, size_t hd, wgc_causal causal,
                                   wgc_context **capped) {
  static const char *const CAUSAL[] = {"none", "top-left", "bottom-right"};
  if (!case_begin("ieee attention mask[%s%s] %s seq_q=%zu seq_kv=%zu "
                  "head_dim=%zu causal=%s",
                  backend_label(test_backends[bi]),
                  capped ? " 4 KiB bindings" : "", MASK_SPECIAL_NAMES[sp], nq,
                  nk, hd, CAUSAL[causal]))
    return;
  wgc_context *ctx = NULL;
  if (!capped) {
    ctx = test_ctx(test_backends[bi]);
  } else {
    if (!*capped)
      *capped = new_ctx(WGC_BACKEND_WEBGPU, 4096);
    ctx = *capped;
  }
  bool cap = sp == MSP_CAP_INF || sp == MSP_CAP_ROW_NEG;
  wgc_attention_desc d = {.batch = 1,
                          .heads = 2,
                          .heads_kv = 1,
                          .seq_q = nq,
                          .seq_kv = nk,
                          .head_dim = hd,
                          .scale = 1.0f / sqrtf((float)hd),
                          .causal = causal,
                          .softcap = cap ? 2.5f : 0.0f,
                          .mask_stride = {0, 0, nk}};
  size_t n_q = 2 * nq * hd, n_kv = nk * hd, n_m = nq * nk;
  float *q = falloc(n_q), *k = falloc(n_kv), *v = falloc(n_kv);
  float *m = falloc(n_m), *o = falloc(n_q);
  fill_uniform(q, n_q, -1, 1, 21);
  fill_uniform(k, n_kv, -1, 1, 22);
  fill_uniform(v, n_kv, -1, 1, 23);
  fill_uniform(m, n_m, -3, 1, 24);
  plant_mask(sp, &d, m, q, k, v);
  fill(o, n_q, 12345.0f);
  wgc_ptr dq = ctx ? dev_from(ctx, q, n_q) : 0;
  wgc_ptr dk = ctx ? dev_from(ctx, k, n_kv) : 0;
  wgc_ptr dv = ctx ? dev_from(ctx, v, n_kv) : 0;
  wgc_ptr dm = ctx ? dev_from(ctx, m, n_m) : 0;
  wgc_ptr dout = ctx ? dev_from(ctx, o, n_q) : 0;
  if (dq && dk && dv && dm && dout) {
    d.mask = dm;
    CHECK_STATUS(wgc_attention(ctx, &d, dq, dk, dv, dout), WGC_OK);
    if (dev_read(ctx, o, dout, n_q)) {
      double *want = dalloc(n_q);
      d.mask = (wgc_ptr)(uintptr_t)m;
      ref_attention(&d, q, k, v, want);
      double mv = max_finite(v, n_kv);
      double bound =
          1e-5 * (double)hd * max_finite(q, n_q) * max_finite(k, n_kv) * mv +
          4e-6 * mv + 1e-6 * max_finite(m, n_m) * mv;
      check_values("O", o, want, n_q, 0, bound);
      free(want);
    }
  }
  dev_free(ctx, dq);
  dev_free(ctx, dk);
  dev_free(ctx, dv);
  dev_free(ctx, dm);
  dev_free(ctx, dout);
  free(q);
  free(k);
  free(v);
  free(m);
  free(o);
  case_end();
}

TEST(ieee_attention_mask) {
  for (int bi = 0; bi < 2; bi++)
    for (int sp = 0; sp < MSP_COUNT; sp++) {
      attention_mask_special(bi, sp, 9, 20, 8, WGC_CAUSAL_NONE, NULL);
      attention_mask_special(bi, sp, 9, 20, 8, WGC_CAUSAL_TOP_LEFT, NULL);
      attention_mask_special(bi, sp, 12, 15, 8, WGC_CAUSAL_BOTTOM_RIGHT, NULL);
      /* tiles form on GPUs, register form on CPU adapters */
      attention_mask_special(bi, sp, 20, 37, 80, WGC_CAUSAL_TOP_LEFT, NULL);
      attention_mask_special(bi, sp, 3, 40, 96, WGC_CAUSAL_BOTTOM_RIGHT, NULL);
      /* key blocks merged by the split-KV combine on CPU adapters */
      attention_mask_special(bi, sp, 2, 9000, 64, WGC_CAUSAL_BOTTOM_RIGHT,
                             NULL);
    }
  /* many key blocks merged over several combine rounds */
  wgc_context *capped = NULL;
  int bi = test_backends[0] == WGC_BACKEND_WEBGPU ? 0 : 1;
  for (int sp = 0; sp < MSP_COUNT; sp++)
    attention_mask_special(bi, sp, 3, 1100, 16, WGC_CAUSAL_BOTTOM_RIGHT,
                           &capped);
  wgc_destroy(capped);
}

/* ---- element-wise ------------------------------------------------------ */

/* A subnormal as the zero of its sign: WGSL lets implementations flush. */
static float flushed(float x) {
  return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

/* A float64 result as the float it rounds to (beyond the range: inf). */
static double as_float(double x) { return (double)(float)x; }

static bool close_to(float got, double want, double rel, double abs_tol) {
  if (isnan(want) || isnan(got))
    return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got))
    return (double)got == want;
  return fabs(got - want) <= rel * fabs(want) + abs_tol;
}

/* Runs op on x (n) on ctx into got; false after a failed CHECK. */
static bool run_unary(wgc_context *ctx, wgc_unary_op op, const float *x,
                      float *got, size_t n) {
  wgc_ptr dx = dev_from(ctx, x, n), dy = dev_alloc(ctx, 4 * n);
  bool ok = dx && dy;
  if (ok) {
    wgc_status s = wgc_unary(ctx, op, dx, dy, n);
    CHECK(s == WGC_OK, "wgc_unary: %s", wgc_last_error(ctx));
    ok = s == WGC_OK && dev_read(ctx, got, dy, n);
  }
  dev_free(ctx, dx);
  dev_free(ctx, dy);
  return ok;
}

static bool run_binary(wgc_context *ctx, wgc_binary_op op, const float *a,
                       const float *b, float *got, size_t n) {
  wgc_ptr da = dev_from(ctx, a, n), db = dev_from(ctx, b, n);
  wgc_ptr dy = dev_alloc(ctx, 4 * n);
  bool ok = da && db && dy;
  if (ok) {
    wgc_status s = wgc_binary(ctx, op, da, db, dy, n);
    CHECK(s == WGC_OK, "wgc_binary: %s", wgc_last_error(ctx));
    ok = s == WGC_OK && dev_read(ctx, got, dy, n);
  }
  dev_free(ctx, da);
  dev_free(ctx, db);
  dev_free(ctx, dy);
  return ok;
}

/* Subnormals, zeros, infinities, NaN, extremes and ordinary values. */
static const float SPECIALS[] = {
    0.0f,    -0.0f,          INFINITY,  -INFINITY,      NAN,     1e-40f,
    -1e-40f, 1.4e-45f,       -1.4e-45f, 1.1754942e-38f, -5e-39f, 3e38f,
    -3e38f,  1.1754944e-38f, 1e-30f,    1.0f,           -1.0f,   2.5f,
    -3.0f,   0.5f,           7.0f,      -0.75f,         88.0f,   -104.0f,
    0.999f,  1.0000001f};
#define NSPECIALS (sizeof SPECIALS / sizeof *SPECIALS)

/* Every unary function on the special values: the float64 function of
 * the input, or (for a subnormal) of the zero of its sign. */
static void unary_specials(int bi, wgc_unary_op op) {
  if (!case_begin("ieee unary[%s] %s of zeros, subnormals, infinities, NaN",
                  backend_label(test_backends[bi]), ref_unary_name(op)))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  float got[NSPECIALS];
  double rel, abs_tol;
  ref_unary_bound(op, &rel, &abs_tol);
  if (ctx && run_unary(ctx, op, SPECIALS, got, NSPECIALS))
    for (size_t i = 0; i < NSPECIALS; i++) {
      float x = SPECIALS[i];
      double w1 = as_float(ref_unary(op, x));
      double w2 = as_float(ref_unary(op, flushed(x)));
      if (!close_to(got[i], w1, rel, abs_tol) &&
          !close_to(got[i], w2, rel, abs_tol)) {
        CHECK(false, "%s(%.9g) is %.9g, want %.9g%s%.9g", ref_unary_name(op), x,
              got[i], w1, w1 != w2 ? " or " : "", w1 != w2 ? w2 : NAN);
        break;
      }
    }
  case_end();
}

/* Every binary op on all pairs of special values, against C's float64
 * operators and pow; a subnormal operand may count as a signed zero. */
static void binary_specials(int bi, wgc_binary_op op) {
  if (!case_begin("ieee binary[%s] %s of all pairs of special values",
                  backend_label(test_backends[bi]), ref_binary_name(op)))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  size_t n = NSPECIALS * NSPECIALS;
  float *a = falloc(n), *b = falloc(n), *got = falloc(n);
  for (size_t i = 0; i < n; i++) {
    a[i] = SPECIALS[i / NSPECIALS];
    b[i] = SPECIALS[i % NSPECIALS];
  }
  double rel, abs_tol;
  ref_binary_bound(op, &rel, &abs_tol);
  if (ctx && run_binary(ctx, op, a, b, got, n))
    for (size_t i = 0; i < n; i++) {
      float x = a[i], y = b[i];
      double w[4] = {ref_binary(op, x, y), ref_binary(op, flushed(x), y),
                     ref_binary(op, x, flushed(y)),
                     ref_binary(op, flushed(x), flushed(y))};
      bool ok = false;
      for (int c = 0; c < 4 && !ok; c++)
        ok = close_to(got[i], as_float(w[c]), rel, abs_tol);
      if (!ok) {
        CHECK(false, "%s(%.9g, %.9g) is %.9g, want %.9g", ref_binary_name(op),
              x, y, got[i], as_float(w[0]));
        break;
      }
    }
  free(a);
  free(b);
  free(got);
  case_end();
}

/* pow over the whole float range where the result is finite and normal:
 * bases of every exponent (subnormal ones too), bases next to 1 with
 * large exponents (where f32 log2 loses digits), negative bases with
 * integral exponents; within 1e-5 relative (API.md's 1e-5*|want| + 1e-6
 * without the absolute part). */
static void pow_accuracy(int bi) {
  enum { N = 6000 };
  if (!case_begin("ieee binary[%s] pow accuracy over the float range "
                  "(n=%d, bases near 1, subnormal bases)",
                  backend_label(test_backends[bi]), N))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  float *x = falloc(N), *y = falloc(N), *got = falloc(N), *u = falloc(2 * N);
  fill_uniform(u, 2 * N, 0, 1, 31);
  for (size_t i = 0; i < N; i++) {
    double base, e = (u[2 * i + 1] * 2 - 1) * 125; /* log2 of the result */
    switch (i % 4) {
    case 0: /* any normal or subnormal magnitude */
      base = exp2(u[2 * i] * 275.0 - 149.0);
      break;
    case 1: /* next to 1, up to 2^15 ulps away */
      base = 1.0 + ldexp(u[2 * i] * 2 - 1, -8);
      break;
    case 2: /* within a few ulps of 1 */
      base = 1.0 + ldexp(floor(u[2 * i] * 64) - 32, -24);
      break;
    default: /* negative, integral exponent */
      base = -exp2(u[2 * i] * 20 - 10);
      break;
    }
    x[i] = (float)base;
    if (x[i] == 1.0f)
      x[i] = 1.0f + 0x1p-23f;
    double l2 = log2(fabs((double)x[i]));
    y[i] = (float)(e / l2);
    if (i % 4 == 3)
      y[i] = (float)round(e / l2);
  }
  x[0] = 0.999f, y[0] = -5000.0f;
  x[1] = 1e-40f, y[1] = -0.5f;
  x[2] = -INFINITY, y[2] = 0.5f;
  x[3] = 1.4e-45f, y[3] = -0.75f;
  /* near 1 with the exponent near 125: a lost low part of y*log2|x| shows */
  x[4] = 1.00034082f, y[4] = 251266.188f;
  x[5] = 0.999998271f, y[5] = -49358540.0f;
  if (ctx && run_binary(ctx, WGC_BINARY_POW, x, y, got, N)) {
    for (size_t i = 0; i < N; i++) {
      double want = pow((double)x[i], (double)y[i]);
      double alt = pow((double)flushed(x[i]), (double)y[i]);
      bool normal = isinf(want) || fabs(want) >= 0x1p-126;
      /* relative only: 1e-6 absolute would hide every result below 0.1 */
      if (normal && !close_to(got[i], as_float(want), 1e-5, 0) &&
          !(fpclassify(x[i]) == FP_SUBNORMAL &&
            close_to(got[i], as_float(alt), 1e-5, 0))) {
        CHECK(false, "pow(%.9g, %.9g) is %.9g, want %.9g (rel %.2g)", x[i],
              y[i], got[i], want, fabs(got[i] - want) / fabs(want));
        break;
      }
    }
  }
  free(x);
  free(y);
  free(got);
  free(u);
  case_end();
}

/* log over the whole float range, subnormals included (each its own log,
 * or -inf where flushed, never in between). */
static void log_accuracy(int bi) {
  enum { N = 4096 };
  if (!case_begin("ieee unary[%s] log accuracy over the float range with "
                  "subnormals (n=%d)",
                  backend_label(test_backends[bi]), N))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  float *x = falloc(N), *got = falloc(N), *u = falloc(N);
  fill_uniform(u, N, 0, 1, 41);
  for (size_t i = 0; i < N; i++)
    x[i] = i % 2 ? (float)exp2(u[i] * 277.0 - 149.0)
                 : (float)(1.0 + ldexp(u[i] - 0.5, -10));
  if (ctx && run_unary(ctx, WGC_UNARY_LOG, x, got, N))
    for (size_t i = 0; i < N; i++) {
      double want = log((double)x[i]);
      bool ok = close_to(got[i], want, 1e-5, 1e-6) ||
                (fpclassify(x[i]) == FP_SUBNORMAL && got[i] == -INFINITY);
      if (!ok) {
        CHECK(false, "log(%.9g) is %.9g, want %.9g", x[i], got[i], want);
        break;
      }
    }
  free(x);
  free(got);
  free(u);
  case_end();
}

/* exp over its whole finite range within 1e-6 relative, ten times inside
 * API.md's bound: the builtin's error grows with |x| (4e-6 at x = 88.5 on
 * lavapipe, and WGSL allows 1.1e-5 there). */
static void exp_accuracy(int bi) {
  enum { N = 8192 };
  if (!case_begin("ieee unary[%s] exp within 1e-6 relative over [-87, 88.7] "
                  "(n=%d)",
                  backend_label(test_backends[bi]), N))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  float *x = falloc(N), *got = falloc(N);
  fill_uniform(x, N, -87.0f, 88.7f, 71);
  if (ctx && run_unary(ctx, WGC_UNARY_EXP, x, got, N))
    for (size_t i = 0; i < N; i++) {
      double want = exp((double)x[i]);
      if (!close_to(got[i], want, 1e-6, 0)) {
        CHECK(false, "exp(%.9g) is %.9g, want %.9g (rel %.2g)", x[i], got[i],
              want, fabs(got[i] - want) / want);
        break;
      }
    }
  free(x);
  free(got);
  case_end();
}

TEST(ieee_elementwise) {
  for (int bi = 0; bi < 2; bi++) {
    for (int op = 0; op < WGC_UNARY_OP_COUNT; op++)
      unary_specials(bi, (wgc_unary_op)op);
    for (int op = 0; op < WGC_BINARY_OP_COUNT; op++)
      binary_specials(bi, (wgc_binary_op)op);
    pow_accuracy(bi);
    log_accuracy(bi);
    exp_accuracy(bi);
  }
}

/* ---- empty sums ---------------------------------------------------------- */

/* Empty reductions give the math's answer without reading memory the empty
 * operands do not own: the allocations at their addresses hold NaN. */
static void empty_sums(int bi) {
  if (!case_begin("ieee empty[%s] reduce sum over length 0, gemm k=0 and "
                  "alpha=0, attention seq_kv=0, with NaN at the addresses",
                  backend_label(test_backends[bi])))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  float junk[64], c[12], got[12];
  fill(junk, 64, NAN);
  fill_uniform(c, 12, -1, 1, 51);
  wgc_ptr dj = ctx ? dev_from(ctx, junk, 64) : 0;
  wgc_ptr dj2 = ctx ? dev_from(ctx, junk, 64) : 0;
  wgc_ptr dc = ctx ? dev_alloc(ctx, 4 * 12) : 0;
  if (dj && dj2 && dc) {
    double want[12];
    /* SUM over an axis of length 0: zeros */
    const size_t shape[] = {3, 0, 4};
    CHECK_STATUS(wgc_reduce(ctx, WGC_REDUCE_SUM, dj, dc, shape, 3, 1), WGC_OK);
    for (size_t i = 0; i < 12; i++)
      want[i] = 0;
    if (dev_read(ctx, got, dc, 12))
      check_values("reduce", got, want, 12, 0, 0);
    /* k == 0 and alpha == 0: C := beta*C, A and B unread */
    for (size_t i = 0; i < 12; i++)
      want[i] = 2.0 * c[i];
    for (int alpha0 = 0; alpha0 < 2; alpha0++) {
      if (!dev_write(ctx, dc, c, 12))
        break;
      CHECK_STATUS(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 3,
                            4, alpha0 ? 5 : 0, alpha0 ? 0.0f : 1.0f, dj, 5, dj2,
                            4, 2.0f, dc, 4),
                   WGC_OK);
      if (dev_read(ctx, got, dc, 12))
        check_values(alpha0 ? "gemm alpha=0" : "gemm k=0", got, want, 12, 0, 0);
    }
    /* attention with no keys: zeros */
    wgc_attention_desc d = {.batch = 1,
                            .heads = 1,
                            .seq_q = 3,
                            .seq_kv = 0,
                            .head_dim = 4,
                            .scale = 0.5f};
    fill(c, 12, 1.0f);
    if (dev_write(ctx, dj, c, 12)) {
      CHECK_STATUS(wgc_attention(ctx, &d, dj, dj2, dj2, dc), WGC_OK);
      for (size_t i = 0; i < 12; i++)
        want[i] = 0;
      if (dev_read(ctx, got, dc, 12))
        check_values("attention", got, want, 12, 0, 0);
    }
  }
  dev_free(ctx, dj);
  dev_free(ctx, dj2);
  dev_free(ctx, dc);
  case_end();
}

TEST(ieee_empty) {
  for (int bi = 0; bi < 2; bi++)
    empty_sums(bi);
}

/* ---- the reference backend's sums ---------------------------------------- */

/* The CPU backend is the reference, so it sums GEMM more accurately than
 * the float accumulation of the GPU kernels: long dot products of positive
 * terms (no cancellation to hide behind) within 4 float half-ulps of
 * sum|a*b| (float blocks of 256 added into C gave 9; lavapipe gives 8). */
TEST(ieee_cpu_gemm_sums) {
  if (!case_begin("ieee gemm[cpu] m=8 n=8 k=65536 of [0,1) within "
                  "4*2^-24*sum|ab|"))
    return;
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  size_t m = 8, n = 8, k = 65536;
  float *a = falloc(m * k), *b = falloc(k * n), *c = falloc(m * n);
  fill_uniform(a, m * k, 0, 1, 61);
  fill_uniform(b, k * n, 0, 1, 62);
  wgc_ptr da = ctx ? dev_from(ctx, a, m * k) : 0;
  wgc_ptr db = ctx ? dev_from(ctx, b, k * n) : 0;
  wgc_ptr dc = ctx ? dev_alloc(ctx, 4 * m * n) : 0;
  if (da && db && dc) {
    CHECK_STATUS(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, m, n,
                          k, 1.0f, da, k, db, n, 0.0f, dc, n),
                 WGC_OK);
    if (dev_read(ctx, c, dc, m * n)) {
      double *want = dalloc(m * n);
      for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
          double s = 0;
          for (size_t p = 0; p < k; p++)
            s += (double)a[i * k + p] * b[p * n + j];
          want[i * n + j] = s;
        }
      /* every term is positive: sum|ab| is the sum itself */
      check_values("C", c, want, m * n, 4 * 0x1p-24, 0);
      free(want);
    }
  }
  dev_free(ctx, da);
  dev_free(ctx, db);
  dev_free(ctx, dc);
  free(a);
  free(b);
  free(c);
  case_end();
}
