/* wgc_gemm_ex and wgc_gemm_batched_ex: C := act(alpha*op(A)*op(B) + beta*C
 * + bias) against float64 sums and activations written here, on both
 * backends, for every bias kind and activation, both layouts, every
 * transpose, ldc beyond n, batches, the split-K and k == 0 / alpha == 0
 * paths, NaN and infinity through the bias and C, and rejected calls.
 * C sits between guard NaNs with a payload, and its padding (ldc) and the
 * gaps between batches hold them too, so that stray writes show. Each case
 * notes its worst error in float epsilons of the sum of magnitudes that
 * make the pre-activation (|alpha|*sum|a*b| + |beta*c| + |bias|). */
#include "ops_ref.h"
#include "util.h"

#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 3

/* The activations by their defining formulas, in double. */
static double ref_act(wgc_activation act, double x) {
  switch (act) {
  case WGC_ACTIVATION_RELU:
    return x < 0 ? 0 : x; /* NaN stays NaN */
  case WGC_ACTIVATION_GELU:
    return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case WGC_ACTIVATION_GELU_TANH:
    return 0.5 * x *
           (1 + tanh(sqrt(2 / 3.14159265358979323846) *
                     (x + 0.044715 * x * x * x)));
  case WGC_ACTIVATION_SILU:
    return x / (1 + exp(-x));
  default:
    return x;
  }
}

static const char *ACT_NAMES[] = {"none", "relu", "gelu", "gelu_tanh", "silu"};

enum { NO_BIAS = -1 };
enum special {
  PLAIN,
  NAN_AB,  /* A and B are NaN: alpha == 0 must not read them */
  NAN_C,   /* C is NaN: beta == 0 must not read it */
  SPECIALS /* NaN and infinities in the bias, a NaN in C */
};

typedef struct ep_case {
  wgc_layout layout;
  wgc_transpose ta, tb;
  size_t m, n, k, batch; /* batch 0: wgc_gemm_ex */
  size_t pad_c;          /* ldc beyond the smallest legal one */
  float alpha, beta;
  int bias; /* NO_BIAS or a wgc_bias_kind */
  wgc_activation act;
  enum special special;
} ep_case;

/* A's and B's placement (gemm_rv's vec4 reads): off_a, off_b floats into
 * their allocations; lda4, ldb4: the leading dimension the smallest
 * multiple of 4 above the smallest legal one (else that plus 1 for A, plus
 * 2 for B). */
typedef struct b_place {
  size_t off_b;
  bool ldb4;
  size_t off_a;
  bool lda4;
} b_place;
static b_place g_place;

static const char TCH[] = {'N', 'T', 'C'};

/* Element (i, j) of op(X) for a stored X. */
static double op_at(wgc_layout layout, wgc_transpose t, const float *x,
                    size_t ld, size_t i, size_t j) {
  return t == WGC_NO_TRANS ? x[ref_index(layout, ld, i, j)]
                           : x[ref_index(layout, ld, j, i)];
}

/* The GEMM variant forced through WGC_GEMM_VARIANT, named in case labels;
 * NULL: the planner's own choice. */
static const char *g_variant;

static void run_ep(int bi, const ep_case *ec) {
  size_t m = ec->m, n = ec->n, k = ec->k, nb = ec->batch ? ec->batch : 1;
  size_t ar, ac, br, bc;
  ref_stored_dims(ec->ta, m, k, &ar, &ac);
  ref_stored_dims(ec->tb, k, n, &br, &bc);
  size_t lda = ref_min_ld(ec->layout, ar, ac) + 1;
  if (g_place.lda4)
    lda = (ref_min_ld(ec->layout, ar, ac) / 4 + 1) * 4;
  size_t ldb = ref_min_ld(ec->layout, br, bc) + 2;
  if (g_place.ldb4)
    ldb = (ref_min_ld(ec->layout, br, bc) / 4 + 1) * 4;
  size_t ldc = ref_min_ld(ec->layout, m, n) + ec->pad_c;
  size_t sa = ref_span(ec->layout, lda, ar, ac);
  size_t sb = ref_span(ec->layout, ldb, br, bc);
  size_t sc = ref_span(ec->layout, ldc, m, n) + 2; /* gaps between batches */
  size_t na = g_place.off_a + nb * sa + 1, nbb = g_place.off_b + nb * sb + 1;
  size_t nc = GUARD + nb * sc + GUARD;
  size_t nbias = ec->bias == WGC_BIAS_PER_ROW ? m : n;

  char bias_name[16];
  snprintf(bias_name, sizeof bias_name, "%s",
           ec->bias == NO_BIAS            ? "none"
           : ec->bias == WGC_BIAS_PER_ROW ? "row"
                                          : "column");
  if (!case_begin("%s[%s] %s %c%c m=%zu n=%zu k=%zu batch=%zu ldc=%zu "
                  "alpha=%g beta=%g bias=%s act=%s lda=%zu off_a=%zu ldb=%zu "
                  "off_b=%zu%s%s%s",
                  ec->batch ? "gemm_batched_ex" : "gemm_ex",
                  backend_label(test_backends[bi]),
                  ec->layout == WGC_ROW_MAJOR ? "row" : "col", TCH[ec->ta],
                  TCH[ec->tb], m, n, k, nb, ldc, ec->alpha, ec->beta, bias_name,
                  ACT_NAMES[ec->act], lda, g_place.off_a, ldb, g_place.off_b,
                  ec->special == NAN_AB     ? " nan-ab"
                  : ec->special == NAN_C    ? " nan-c"
                  : ec->special == SPECIALS ? " nan-inf"
                                            : "",
                  g_variant ? " variant=" : "", g_variant ? g_variant : ""))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  if (!ctx) {
    case_end();
    return;
  }

  float *ha_all = falloc(na), *ha = ha_all + g_place.off_a,
        *hb_all = falloc(nbb), *hc = falloc(nc);
  float *hb = hb_all + g_place.off_b;
  float *hbias = falloc(nbias), *got = falloc(nc);
  bool *written = xmalloc(nc * sizeof(bool));
  unsigned seed = (unsigned)(m * 131 + n * 17 + k + nb * 7 + ec->act);
  fill_uniform(ha_all, na, -1, 1, seed);
  fill_uniform(hb_all, nbb, -1, 1, seed + 1);
  fill_uniform(hbias, nbias, -1, 1, seed + 2);
  for (size_t i = 0; i < nc; i++) {
    hc[i] = sentinel();
    written[i] = false;
  }
  float *cvals = falloc(m * n);
  for (size_t t = 0; t < nb; t++) {
    fill_uniform(cvals, m * n, -1, 1, seed + 3 + (unsigned)t);
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        size_t e = GUARD + t * sc + ref_index(ec->layout, ldc, i, j);
        hc[e] = cvals[i * n + j];
        written[e] = true;
      }
  }
  free(cvals);
  if (ec->special == NAN_AB) {
    for (size_t i = 0; i < na; i++)
      ha_all[i] = NAN;
    for (size_t i = 0; i < nbb; i++)
      hb_all[i] = NAN;
  }
  if (ec->special == NAN_C)
    for (size_t i = 0; i < nc; i++)
      if (written[i])
        hc[i] = NAN;
  if (ec->special == SPECIALS) {
    hbias[0] = NAN;
    hbias[1 % nbias] = INFINITY;
    hbias[2 % nbias] = -INFINITY;
    hc[GUARD + ref_index(ec->layout, ldc, m - 1, n - 1)] = NAN;
  }

  wgc_ptr da = dev_from(ctx, ha_all, na), db = dev_from(ctx, hb_all, nbb);
  wgc_ptr dc = dev_from(ctx, hc, nc), dbias = dev_from(ctx, hbias, nbias);
  if (da && db && dc && dbias) {
    wgc_gemm_epilogue ep = {.bias = ec->bias == NO_BIAS ? 0 : dbias,
                            .bias_kind = ec->bias == NO_BIAS
                                             ? WGC_BIAS_PER_COLUMN
                                             : (wgc_bias_kind)ec->bias,
                            .activation = ec->act};
    wgc_ptr c0 = at(dc, GUARD);
    wgc_status s =
        ec->batch
            ? wgc_gemm_batched_ex(ctx, ec->layout, ec->ta, ec->tb, m, n, k,
                                  ec->alpha, at(da, g_place.off_a), lda, sa,
                                  at(db, g_place.off_b), ldb, sb, ec->beta, c0,
                                  ldc, sc, nb, &ep)
            : wgc_gemm_ex(ctx, ec->layout, ec->ta, ec->tb, m, n, k, ec->alpha,
                          at(da, g_place.off_a), lda, at(db, g_place.off_b),
                          ldb, ec->beta, c0, ldc, &ep);
    CHECK(s == WGC_OK, "returned %s: %s", wgc_status_name(s),
          wgc_last_error(ctx));
    if (s == WGC_OK && dev_read(ctx, got, dc, nc)) {
      size_t total = nb * m * n;
      double *want = dalloc(total), *tol = dalloc(total), *mag = dalloc(total);
      float *out = falloc(total);
      bool read_ab = k > 0 && ec->alpha != 0;
      for (size_t t = 0; t < nb; t++)
        for (size_t i = 0; i < m; i++)
          for (size_t j = 0; j < n; j++) {
            double dot = 0, sabs = 0;
            for (size_t p = 0; read_ab && p < k; p++) {
              double x = op_at(ec->layout, ec->ta, ha + t * sa, lda, i, p) *
                         op_at(ec->layout, ec->tb, hb + t * sb, ldb, p, j);
              dot += x;
              sabs += fabs(x);
            }
            size_t ce = GUARD + t * sc + ref_index(ec->layout, ldc, i, j);
            double v = ec->alpha * dot, cterm = 0, bterm = 0;
            if (ec->beta != 0)
              cterm = (double)ec->beta * hc[ce];
            if (ec->bias != NO_BIAS)
              bterm = hbias[ec->bias == WGC_BIAS_PER_ROW ? i : j];
            v += cterm + bterm;
            size_t o = (t * m + i) * n + j;
            want[o] = ref_act(ec->act, v);
            mag[o] = fabs(ec->alpha) * sabs + fabs(cterm) + fabs(bterm);
            /* float sums over k (and the split-K partial sums), the beta
             * and bias terms; the activations' slope is at most 1.13 */
            tol[o] = 1.13 * (double)(k + 4) * FLT_EPSILON * mag[o] + 1e-6;
            out[o] = got[ce];
          }
      char key[64];
      snprintf(key, sizeof key, "%s[%s]",
               ec->batch ? "gemm_batched_ex" : "gemm_ex",
               backend_label(test_backends[bi]));
      check_close_at(__FILE__, __LINE__, key, NULL, out, want, total, 1e-5, 0,
                     tol);
      double worst = 0;
      for (size_t o = 0; o < total; o++)
        if (isfinite(want[o]) && mag[o] > 0)
          worst = fmax(worst, fabs(out[o] - want[o]) / (FLT_EPSILON * mag[o]));
      case_note(" err=%.2f eps", worst);
      for (size_t i = 0; i < nc; i++)
        if (!written[i] && !same_bits(got[i], hc[i])) {
          CHECK(false, "C element %zu outside the output changed: %.9g", i,
                got[i]);
          break;
        }
      free(want);
      free(tol);
      free(mag);
      free(out);
    }
  }
  dev_free(ctx, da);
  dev_free(ctx, db);
  dev_free(ctx, dc);
  dev_free(ctx, dbias);
  free(ha_all);
  free(hb_all);
  free(hc);
  free(hbias);
  free(got);
  free(written);
  case_end();
}

static void run_both(const ep_case *ec) {
  for (int bi = 0; bi < 2; bi++)
    run_ep(bi, ec);
}

#define R WGC_ROW_MAJOR
#define C WGC_COL_MAJOR
#define N_ WGC_NO_TRANS
#define T_ WGC_TRANS
#define CT WGC_CONJ_TRANS
#define COL WGC_BIAS_PER_COLUMN
#define ROW WGC_BIAS_PER_ROW

TEST(gemm_epilogue_kinds) {
  /* Every activation with each bias kind, both layouts; the transposes,
   * shapes (1 to 70), ldc padding and alpha/beta vary along the loop. */
  static const size_t dims[][3] = {{1, 1, 1},   {7, 5, 3},    {13, 29, 11},
                                   {37, 2, 41}, {3, 70, 19},  {64, 33, 17},
                                   {70, 65, 9}, {23, 31, 70}, {5, 1, 64}};
  static const float ab[][2] = {{1, 0}, {0.75f, 0.5f}, {-1.25f, 2}, {2, -1}};
  const wgc_transpose ts[3] = {N_, T_, CT};
  unsigned idx = 0;
  for (int act = WGC_ACTIVATION_NONE; act <= WGC_ACTIVATION_SILU; act++)
    for (int bias = NO_BIAS; bias <= WGC_BIAS_PER_ROW; bias++)
      for (int l = 0; l < 2; l++, idx++) {
        if (act == WGC_ACTIVATION_NONE && bias == NO_BIAS)
          continue; /* the plain GEMM, tested with it */
        const size_t *d = dims[idx % 9];
        ep_case ec = {.layout = l ? R : C,
                      .ta = ts[idx % 3],
                      .tb = ts[idx / 3 % 3],
                      .m = d[0],
                      .n = d[1],
                      .k = d[2],
                      .pad_c = idx % 3,
                      .alpha = ab[idx % 4][0],
                      .beta = ab[idx % 4][1],
                      .bias = bias,
                      .act = (wgc_activation)act};
        run_both(&ec);
      }
}

TEST(gemm_epilogue_shapes) {
  static const ep_case cases[] = {
      /* crosses the tiled kernel's 64 x 64 blocks */
      {R, N_, N_, 128, 200, 96, 0, 3, 1, 0, COL, WGC_ACTIVATION_GELU_TANH, 0},
      {C, T_, N_, 130, 96, 128, 0, 1, 0.5f, 0.5f, ROW, WGC_ACTIVATION_SILU, 0},
      /* batched, strided C with gaps; one bias for every batch */
      {R, N_, T_, 9, 14, 12, 4, 1, -1, 0.5f, COL, WGC_ACTIVATION_RELU, 0},
      {C, N_, N_, 17, 6, 5, 3, 0, 1, 0, ROW, WGC_ACTIVATION_GELU, 0},
      {R, T_, T_, 64, 64, 64, 8, 2, 0.125f, 0, COL, WGC_ACTIVATION_GELU, 0},
      /* split-K: few outputs, long k (per-element and tiled forms) */
      {R, N_, N_, 8, 8, 1024, 0, 0, 1, 0.5f, ROW, WGC_ACTIVATION_GELU, 0},
      {C, N_, T_, 5, 7, 2000, 2, 1, 0.5f, 0, COL, WGC_ACTIVATION_SILU, 0},
      {R, N_, N_, 128, 128, 2048, 0, 0, 1, 0, COL, WGC_ACTIVATION_GELU_TANH, 0},
      /* k == 0 and alpha == 0: act(beta*C + bias) */
      {R, N_, N_, 7, 9, 0, 0, 2, 1, 0.5f, COL, WGC_ACTIVATION_GELU, 0},
      {C, T_, N_, 7, 9, 0, 3, 1, 1, 0, ROW, WGC_ACTIVATION_SILU, NAN_C},
      {R, T_, N_, 11, 13, 17, 0, 0, 0, 2, ROW, WGC_ACTIVATION_RELU, NAN_AB},
      {C, N_, T_, 11, 13, 17, 2, 1, 0, 0, COL, WGC_ACTIVATION_GELU_TANH,
       NAN_AB},
      {R, N_, N_, 6, 5, 0, 0, 0, 1, 1, NO_BIAS, WGC_ACTIVATION_RELU, 0},
      /* beta == 0 over a NaN C */
      {R, N_, N_, 19, 21, 23, 0, 1, 1, 0, COL, WGC_ACTIVATION_SILU, NAN_C},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    run_both(&cases[i]);
}

TEST(gemm_epilogue_nan_inf) {
  /* NaN and +-inf in the bias, NaN in C (beta != 0): IEEE arithmetic on
   * the unfused formula, relu(NaN) = NaN, gelu(-inf) = NaN as the unary
   * op. */
  for (int act = WGC_ACTIVATION_NONE; act <= WGC_ACTIVATION_SILU; act++)
    for (int bias = COL; bias <= ROW; bias++) {
      ep_case ec = {R, bias ? T_ : N_, N_,   5,   6,       7, 0, 1,
                    1, 0.5f,           bias, act, SPECIALS};
      run_both(&ec);
    }
  /* an activation alone, at the edges of the scale path too */
  ep_case k0 = {
      C, N_, N_, 4, 3, 0, 0, 0, 1, 1, NO_BIAS, WGC_ACTIVATION_GELU, SPECIALS};
  run_both(&k0);
}

/* ep NULL and an all-zero ep are the plain call, bit for bit. */
TEST(gemm_epilogue_plain) {
  enum { M = 45, N = 38, K = 29 };
  float ha[M * K], hb[K * N], hc[M * N], g0[M * N], g1[M * N], g2[M * N];
  fill_uniform(ha, M * K, -1, 1, 1);
  fill_uniform(hb, K * N, -1, 1, 2);
  fill_uniform(hc, M * N, -1, 1, 3);
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "gemm_epilogue_plain"))
      continue;
    wgc_ptr a = dev_from(ctx, ha, M * K), b = dev_from(ctx, hb, K * N);
    wgc_ptr c0 = dev_from(ctx, hc, M * N), c1 = dev_from(ctx, hc, M * N);
    wgc_ptr c2 = dev_from(ctx, hc, M * N);
    wgc_gemm_epilogue zero = {0};
    if (a && b && c0 && c1 && c2) {
      CHECK_OK(ctx,
               wgc_gemm(ctx, R, N_, T_, M, N, K, 0.5f, a, K, b, K, 2, c0, N));
      CHECK_OK(ctx, wgc_gemm_ex(ctx, R, N_, T_, M, N, K, 0.5f, a, K, b, K, 2,
                                c1, N, NULL));
      CHECK_OK(ctx, wgc_gemm_batched_ex(ctx, R, N_, T_, M, N, K, 0.5f, a, K, 0,
                                        b, K, 0, 2, c2, N, 0, 1, &zero));
      if (dev_read(ctx, g0, c0, M * N) && dev_read(ctx, g1, c1, M * N) &&
          dev_read(ctx, g2, c2, M * N))
        for (size_t i = 0; i < M * N; i++)
          if (!same_bits(g0[i], g1[i]) || !same_bits(g0[i], g2[i])) {
            CHECK(false, "element %zu: wgc_gemm %.9g, ex %.9g, zero ep %.9g", i,
                  g0[i], g1[i], g2[i]);
            break;
          }
    }
    dev_free(ctx, a);
    dev_free(ctx, b);
    dev_free(ctx, c0);
    dev_free(ctx, c1);
    dev_free(ctx, c2);
    case_end();
  }
}

TEST(gemm_epilogue_invalid) {
  enum { M = 4, N = 5, K = 3 };
  float hc[M * N];
  fill_uniform(hc, M * N, -1, 1, 9);
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "gemm_epilogue_invalid"))
      continue;
    static const float zeros[M * N];
    wgc_ptr a = dev_from(ctx, zeros, M * K), b = dev_from(ctx, zeros, K * N);
    wgc_ptr c = dev_from(ctx, hc, M * N);
    wgc_ptr bias = dev_from(ctx, zeros, N - 1); /* room for m, not n */
    const char *F = "wgc_gemm_ex", *FB = "wgc_gemm_batched_ex";
    struct {
      wgc_gemm_epilogue ep;
      const char *param, *value;
    } bad[] = {
        {{.bias = bias,
          .bias_kind = WGC_BIAS_PER_COLUMN,
          .activation = (wgc_activation)5},
         "activation",
         "5"},
        {{.bias = 0,
          .bias_kind = WGC_BIAS_PER_COLUMN,
          .activation = (wgc_activation)-1},
         "activation",
         "-1"},
        {{.bias = bias,
          .bias_kind = (wgc_bias_kind)2,
          .activation = WGC_ACTIVATION_RELU},
         "bias_kind",
         "2"},
        {{.bias = 0,
          .bias_kind = (wgc_bias_kind)-7,
          .activation = WGC_ACTIVATION_NONE},
         "bias_kind",
         "-7"},
        /* n floats do not fit the bias allocation */
        {{.bias = bias,
          .bias_kind = WGC_BIAS_PER_COLUMN,
          .activation = WGC_ACTIVATION_NONE},
         "bias",
         NULL},
        {{.bias = at(bias, 1),
          .bias_kind = WGC_BIAS_PER_ROW,
          .activation = WGC_ACTIVATION_GELU},
         "bias",
         NULL},
        {{.bias = wild_address(3),
          .bias_kind = WGC_BIAS_PER_ROW,
          .activation = WGC_ACTIVATION_NONE},
         "bias",
         NULL},
        {{.bias = bias + 2,
          .bias_kind = WGC_BIAS_PER_ROW,
          .activation = WGC_ACTIVATION_NONE},
         "bias",
         NULL},
        /* the bias may not overlap the output */
        {{.bias = at(c, 7),
          .bias_kind = WGC_BIAS_PER_ROW,
          .activation = WGC_ACTIVATION_NONE},
         "bias",
         NULL},
        {{.bias = c,
          .bias_kind = WGC_BIAS_PER_COLUMN,
          .activation = WGC_ACTIVATION_SILU},
         "bias",
         NULL},
    };
    for (size_t i = 0; a && b && c && bias && i < sizeof bad / sizeof *bad;
         i++) {
      for (int batched = 0; batched < 2; batched++) {
        wgc_status s =
            batched ? wgc_gemm_batched_ex(ctx, R, N_, N_, M, N, K, 1, a, K, 0,
                                          b, N, 0, 0, c, N, 0, 1, &bad[i].ep)
                    : wgc_gemm_ex(ctx, R, N_, N_, M, N, K, 1, a, K, b, N, 0, c,
                                  N, &bad[i].ep);
        CHECK_REJECTED(ctx, s, batched ? FB : F, bad[i].param);
        if (bad[i].value)
          CHECK_ERROR_VALUE(ctx, bad[i].value);
      }
    }
    /* the plain checks, named after the _ex entry points */
    wgc_gemm_epilogue relu = {.bias = 0,
                              .bias_kind = WGC_BIAS_PER_COLUMN,
                              .activation = WGC_ACTIVATION_RELU};
    CHECK_REJECTED(
        NULL,
        wgc_gemm_ex(NULL, R, N_, N_, M, N, K, 1, a, K, b, N, 0, c, N, &relu), F,
        "ctx");
    CHECK_REJECTED(ctx,
                   wgc_gemm_batched_ex(ctx, R, N_, N_, M, N, K, 1, a, K - 1, 0,
                                       b, N, 0, 0, c, N, 0, 1, &relu),
                   FB, "lda");
    /* a per-row bias of m floats fits where a per-column one did not */
    wgc_gemm_epilogue fits = {.bias = bias,
                              .bias_kind = WGC_BIAS_PER_ROW,
                              .activation = WGC_ACTIVATION_NONE};
    wgc_ptr c2 = dev_alloc(ctx, 4 * M * N);
    if (c2)
      CHECK_OK(ctx, wgc_gemm_ex(ctx, R, N_, N_, M, N, K, 1, a, K, b, N, 0, c2,
                                N, &fits));
    if (c)
      CHECK_DEVICE_EQUALS(ctx, c, hc, M * N, "C after rejected calls");
    dev_free(ctx, a);
    dev_free(ctx, b);
    dev_free(ctx, c);
    dev_free(ctx, c2);
    dev_free(ctx, bias);
    case_end();
  }
}

/* What the front end hands the backend: a spy (the CPU backend with its
 * gemm replaced) records the arguments and fails with the name it got. */
static wgc_gemm_args spied;
static wgc_status spy_gemm(wgc_context *ctx, const wgc_gemm_args *g) {
  spied = *g;
  return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: spy", g->fn);
}

TEST(gemm_epilogue_args) {
  if (!case_begin("gemm_epilogue_args: the epilogue reaches the backend"))
    return;
  wgc_options opt = {.backend = WGC_BACKEND_CPU};
  wgc_context *ctx = NULL;
  CHECK_STATUS(wgc_create(&opt, &ctx), WGC_OK);
  wgc_ptr x = ctx ? dev_alloc(ctx, 4096) : 0;
  if (x) {
    const wgc_backend_ops *real = ctx->be;
    wgc_backend_ops spy = *real;
    spy.gemm = spy_gemm;
    ctx->be = &spy;
    wgc_gemm_epilogue ep = {.bias = at(x, 900),
                            .bias_kind = WGC_BIAS_PER_ROW,
                            .activation = WGC_ACTIVATION_GELU_TANH};
    memset(&spied, 0, sizeof spied);
    CHECK_STATUS(wgc_gemm_batched_ex(ctx, C, N_, N_, 3, 4, 5, 1, x, 3, 0,
                                     at(x, 100), 5, 0, 0, at(x, 200), 3, 12, 2,
                                     &ep),
                 WGC_ERR_DEVICE);
    CHECK(!strcmp(wgc_last_error(ctx), "wgc_gemm_batched_ex: spy"),
          "reported \"%s\"", wgc_last_error(ctx));
    CHECK(spied.has_bias && spied.bias_kind == WGC_BIAS_PER_ROW &&
              spied.act == WGC_ACTIVATION_GELU_TANH &&
              spied.bias.offset == 4 * 900 && spied.batch == 2,
          "has_bias %d, bias_kind %d, act %d, bias offset %llu",
          (int)spied.has_bias, (int)spied.bias_kind, (int)spied.act,
          (unsigned long long)spied.bias.offset);
    /* an activation alone, and NULL */
    wgc_gemm_epilogue silu = {.bias = 0,
                              .bias_kind = WGC_BIAS_PER_COLUMN,
                              .activation = WGC_ACTIVATION_SILU};
    CHECK_STATUS(wgc_gemm_ex(ctx, R, N_, N_, 3, 4, 5, 1, x, 5, at(x, 100), 4, 0,
                             at(x, 200), 4, &silu),
                 WGC_ERR_DEVICE);
    CHECK(!spied.has_bias && spied.act == WGC_ACTIVATION_SILU &&
              !strcmp(spied.fn, "wgc_gemm_ex"),
          "has_bias %d, act %d, fn %s", (int)spied.has_bias, (int)spied.act,
          spied.fn);
    CHECK_STATUS(wgc_gemm_ex(ctx, R, N_, N_, 3, 4, 5, 1, x, 5, at(x, 100), 4, 0,
                             at(x, 200), 4, NULL),
                 WGC_ERR_DEVICE);
    CHECK(!spied.has_bias && spied.act == WGC_ACTIVATION_NONE,
          "ep NULL: has_bias %d, act %d", (int)spied.has_bias, (int)spied.act);
    ctx->be = real;
  }
  wgc_destroy(ctx);
  case_end();
}

TEST(gemm_variants) {
  /* Every kernel variant the planner may choose (and a few it would not:
   * odd blocks, one-lane workgroups), forced on the WebGPU backend over
   * shapes that leave partial tiles and blocks everywhere: 1, primes,
   * thin, transposes, both layouts, ldc padding, batches, alpha/beta, the
   * epilogue and split-K (k 2000 over 35 outputs). */
  static const char *variants[] = {
      "small",          "shared:64x64",   "shared:32x32",   "shared:16x64",
      "shared:64x16",   "regs:16x16:8x1", "regs:16x16:8x4", "regs:16x8:8x4",
      "regs:16x8:4x2",  "regs:8x8:8x2",   "regs:4x8:8x4",   "regs:4x4:8x8",
      "regs:16x12:4x2", "regs:5x16:2x3",  "regs:1x4:4x1",   "regs:16x16:1x1",
      "regs:1x8:8x1",
  };
  static const ep_case cases[] = {
      {R, N_, N_, 1, 1, 1, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
      {R, N_, N_, 37, 29, 13, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
      {C, T_, T_, 67, 70, 41, 0, 2, -1.25f, 2, ROW, WGC_ACTIVATION_RELU, 0},
      {R, N_, T_, 9, 14, 12, 4, 1, 0.5f, 0.5f, COL, WGC_ACTIVATION_GELU, 0},
      {C, N_, T_, 5, 7, 2000, 0, 1, 0.5f, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
      {C, T_, N_, 130, 96, 19, 0, 1, 1, 0.5f, COL, WGC_ACTIVATION_SILU, 0},
      {R, T_, N_, 1, 70, 3, 3, 0, 2, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
      {R, N_, N_, 70, 1, 64, 2, 0, 1, -1, NO_BIAS, WGC_ACTIVATION_NONE, 0},
      {R, N_, N_, 19, 21, 23, 0, 1, 1, 0, COL, WGC_ACTIVATION_SILU, NAN_C},
  };
  for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
    g_variant = variants[v];
    setenv("WGC_GEMM_VARIANT", g_variant, 1);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
      run_ep(1, &cases[i]);
    unsetenv("WGC_GEMM_VARIANT");
    g_variant = NULL;
  }
}

TEST(gemm_rv_vec4) {
  /* gemm_rv reads B a vec4 at a time only where B's column groups are
   * whole aligned vec4s (n, ldb, the batch stride and B's offset multiples
   * of 4 floats, B contiguous along n), and A four k at a time where its
   * rows are aligned runs along k; each aligned case here has neighbours
   * that miss one condition (offsets of 1 to 3 floats, ld or n not
   * multiples of 4, transposed the other way) and run float by float.
   * Blocks wider than n, partial row blocks, batches, the epilogue, beta
   * over NaN, k of 1 and split-K, over a few forced blocks and the
   * planner's own choice. */
  static const char *variants[] = {NULL, "regs:16x16:8x1", "regs:4x8:8x4",
                                   "regs:5x16:2x3", "regs:1x4:4x1"};
  static const struct {
    ep_case ec;
    b_place place;
  } cases[] = {
      {{R, N_, N_, 37, 36, 13, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {0, true, 0, false}},
      {{R, N_, N_, 37, 36, 13, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {1, true, 0, false}},
      {{R, N_, N_, 37, 36, 13, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {2, true, 0, false}},
      {{R, N_, N_, 37, 36, 13, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {3, true, 0, false}},
      {{R, N_, N_, 37, 36, 13, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {4, false, 0, false}},
      {{R, N_, N_, 21, 35, 9, 0, 1, 1, 0.5f, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {4, true, 0, false}},
      {{R, T_, N_, 70, 132, 17, 3, 2, -1.25f, 2, COL, WGC_ACTIVATION_RELU, 0},
       {8, true, 0, false}},
      {{R, N_, T_, 19, 40, 11, 2, 1, 0.5f, 0.5f, ROW, WGC_ACTIVATION_GELU, 0},
       {4, true, 0, false}},
      {{C, N_, T_, 19, 40, 21, 3, 1, 1, 0.5f, COL, WGC_ACTIVATION_SILU, 0},
       {4, true, 0, false}},
      {{C, N_, T_, 19, 40, 21, 3, 1, 1, 0.5f, COL, WGC_ACTIVATION_SILU, 0},
       {3, true, 0, false}},
      {{C, N_, N_, 19, 40, 21, 0, 1, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {4, true, 0, false}},
      {{R, N_, N_, 9, 12, 1, 0, 0, 2, 0, NO_BIAS, WGC_ACTIVATION_NONE, NAN_C},
       {0, true, 0, false}},
      {{R, N_, N_, 5, 8, 2000, 0, 0, 0.5f, 1, COL, WGC_ACTIVATION_NONE, 0},
       {0, true, 0, false}},
      /* A's rows along k: aligned runs of 4 (k 1 to 3 left over) or not */
      {{R, N_, N_, 37, 36, 15, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {0, true, 0, true}},
      {{R, N_, N_, 37, 36, 15, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {0, true, 1, true}},
      {{R, N_, N_, 37, 36, 15, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {0, true, 3, true}},
      {{R, N_, N_, 37, 33, 14, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {0, false, 4, true}},
      {{R, N_, N_, 37, 33, 14, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {0, false, 4, false}},
      {{R, N_, T_, 21, 19, 3, 3, 1, 0.5f, 1, ROW, WGC_ACTIVATION_GELU, 0},
       {0, false, 8, true}},
      {{R, N_, N_, 26, 44, 33, 3, 2, -1, 0.5f, COL, WGC_ACTIVATION_RELU, 0},
       {4, true, 4, true}},
      {{C, T_, N_, 26, 44, 33, 3, 2, -1, 0.5f, COL, WGC_ACTIVATION_RELU, 0},
       {4, true, 4, true}},
      {{R, N_, N_, 6, 9, 2001, 0, 0, 0.5f, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {0, false, 0, true}},
      /* one row (decoding: the planner's row block on CPU adapters), A
       * aligned or not, split-K, a batch */
      {{R, N_, N_, 1, 36, 15, 0, 0, 1, 0, COL, WGC_ACTIVATION_GELU_TANH, 0},
       {0, true, 0, true}},
      {{R, N_, N_, 1, 70, 130, 0, 0, 1, 0.5f, COL, WGC_ACTIVATION_NONE, 0},
       {4, true, 3, true}},
      {{R, N_, N_, 1, 41, 1500, 0, 0, 1, 0, NO_BIAS, WGC_ACTIVATION_NONE, 0},
       {0, true, 0, true}},
      {{R, N_, N_, 1, 24, 17, 3, 2, 1, 0, COL, WGC_ACTIVATION_NONE, 0},
       {4, true, 4, true}},
  };
  for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
    g_variant = variants[v];
    if (g_variant)
      setenv("WGC_GEMM_VARIANT", g_variant, 1);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
      g_place = cases[i].place;
      run_ep(1, &cases[i].ec);
    }
    unsetenv("WGC_GEMM_VARIANT");
    g_variant = NULL;
  }
  g_place = (b_place){0};
}
