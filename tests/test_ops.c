/* Every operation against the float64 loops of ops_ref.c, within the
 * accuracy bounds of API.md, on both backends: each case runs once per
 * backend and prints one line ("gemm[cpu] ...", "gemm[webgpu] ..."). A
 * backend answering WGC_ERR_UNSUPPORTED fails the case, it is not skipped.
 *
 * Outputs sit between guard elements holding a NaN with a payload, and
 * input padding (lda > rows, ...) holds NaN, so that writes outside the
 * footprint and reads of elements an operation must not read both show. */
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 3 /* sentinel elements on each side of an output */

static void fill_value(float *x, size_t n, float v) {
  for (size_t i = 0; i < n; i++)
    x[i] = v;
}

static double max_abs(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    m = fmax(m, fabs((double)x[i]));
  return m;
}

static const char *key_of(char *buf, size_t size, const char *op, int bi) {
  snprintf(buf, size, "%s[%s]", op, backend_label(test_backends[bi]));
  return buf;
}

/* CHECKs that got[i] == orig[i] bit for bit wherever written[i] is false
 * (everywhere when written is NULL). */
static void check_untouched(const float *got, const float *orig,
                            const bool *written, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    if ((!written || !written[i]) && !same_bits(got[i], orig[i])) {
      CHECK(false, "%s: element %zu outside the output changed: %.9g, was %.9g",
            what, i, got[i], orig[i]);
      return;
    }
  }
}

/* CHECKs that only the n_out output elements between the guards changed:
 * got and orig hold n_out + 2*GUARD floats. */
static void check_guards(const float *got, const float *orig, size_t n_out,
                         const char *what) {
  size_t total = n_out + 2 * GUARD;
  bool *written = xmalloc(total * sizeof(bool));
  for (size_t i = 0; i < n_out; i++)
    written[GUARD + i] = true;
  check_untouched(got, orig, written, total, what);
  free(written);
}

static void fmt_shape(char *buf, size_t size, const size_t *shape,
                      size_t rank) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < rank && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%zu", i ? "," : "",
                             shape[i]);
  if (used < size)
    snprintf(buf + used, size - used, "]");
}

/* ---- GEMM and batched GEMM ------------------------------------------------
 */

typedef struct gemm_case {
  bool batched;
  wgc_layout layout;
  wgc_transpose ta, tb;
  size_t m, n, k;
  size_t pad_a, pad_b, pad_c; /* added to the smallest legal ld */
  float alpha, beta;
  bool nan_ab; /* A and B hold NaN: alpha == 0 must not read them */
  bool nan_c;  /* C holds NaN: beta == 0 must not read it */
  /* batched only */
  size_t batch;
  char sa, sb, sc; /* stride: the span (0 or 't'), 'g' span + 5, 'z' 0, 'o' 1 */
  int place;       /* 0: three allocations; 1: one allocation, odd offsets;
                      2: one allocation, [A_i B_i C_i] interleaved per batch */
} gemm_case;

static const char tchar[] = {'N', 'T', 'C'};

static size_t stride_of(char kind, size_t span) {
  switch (kind) {
  case 'z':
    return 0;
  case 'o':
    return 1;
  case 'g':
    return span + 5;
  default:
    return span;
  }
}

static size_t odd_after(size_t x) { return x % 2 ? x : x + 1; }

/* Stores vals (rows x cols, row by row) as a matrix at h, and marks each
 * element stored in mask (when given). */
static void place_matrix(float *h, bool *mask, wgc_layout layout, size_t ld,
                         size_t rows, size_t cols, const float *vals) {
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) {
      size_t i = ref_index(layout, ld, r, c);
      h[i] = vals[r * cols + c];
      if (mask)
        mask[i] = true;
    }
}

static void run_gemm(int bi, const gemm_case *gc) {
  size_t m = gc->m, n = gc->n, k = gc->k;
  size_t ar, ac, br, bc;
  ref_stored_dims(gc->ta, m, k, &ar, &ac);
  ref_stored_dims(gc->tb, k, n, &br, &bc);
  size_t lda = ref_min_ld(gc->layout, ar, ac) + gc->pad_a;
  size_t ldb = ref_min_ld(gc->layout, br, bc) + gc->pad_b;
  size_t ldc = ref_min_ld(gc->layout, m, n) + gc->pad_c;
  size_t span[3] = {ref_span(gc->layout, lda, ar, ac),
                    ref_span(gc->layout, ldb, br, bc),
                    ref_span(gc->layout, ldc, m, n)};
  size_t batch = gc->batched ? gc->batch : 1;
  size_t stride[3] = {0, 0, 0};
  if (gc->batched) {
    stride[0] = stride_of(gc->sa, span[0]);
    stride[1] = stride_of(gc->sb, span[1]);
    stride[2] = stride_of(gc->sc, span[2]);
  }
  /* Where each operand lives: buffer and element offset. */
  size_t nbuf = gc->place == 0 ? 3 : 1, off[3], total[3] = {0, 0, 0};
  int buf[3];
  if (gc->place == 2) {
    size_t block = span[0] + span[1] + span[2] + 1;
    for (int i = 0; i < 3; i++)
      stride[i] = block, buf[i] = 0;
    off[0] = 1;
    off[1] = 1 + span[0];
    off[2] = 1 + span[0] + span[1];
    total[0] = 1 + batch * block + GUARD;
  } else {
    size_t end = 0;
    for (int i = 0; i < 3; i++) {
      size_t ext = span[i] + (batch - 1) * stride[i];
      ext = ext ? ext : 1; /* k == 0: A and B are empty, keep an address */
      if (gc->place == 0) {
        buf[i] = i;
        off[i] = GUARD;
        total[i] = GUARD + ext + GUARD;
      } else {
        buf[i] = 0;
        off[i] = odd_after(end + (i ? 2 : 1));
        end = off[i] + ext;
        total[0] = end + GUARD;
      }
    }
  }

  char name[256];
  int len = snprintf(
      name, sizeof name,
      "%s[%s] %s %c%c m=%zu n=%zu k=%zu lda=%zu ldb=%zu "
      "ldc=%zu alpha=%g beta=%g",
      gc->batched ? "gemm_batched" : "gemm", backend_label(test_backends[bi]),
      gc->layout == WGC_ROW_MAJOR ? "row" : "col", tchar[gc->ta], tchar[gc->tb],
      m, n, k, lda, ldb, ldc, gc->alpha, gc->beta);
  if (gc->batched)
    len += snprintf(name + len, sizeof name - (size_t)len,
                    " batch=%zu stride_a=%zu stride_b=%zu stride_c=%zu%s",
                    batch, stride[0], stride[1], stride[2],
                    gc->place == 1   ? " one-allocation"
                    : gc->place == 2 ? " interleaved"
                                     : "");
  snprintf(name + len, sizeof name - (size_t)len, "%s%s",
           gc->nan_ab ? " nan-ab" : "", gc->nan_c ? " nan-c" : "");
  if (!case_begin("%s", name))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  if (!ctx) {
    case_end();
    return;
  }

  float *h[3] = {NULL, NULL, NULL}, *got_buf[3] = {NULL, NULL, NULL};
  bool *written[3] = {NULL, NULL, NULL};
  wgc_ptr dev[3] = {0, 0, 0};
  for (size_t i = 0; i < nbuf; i++) {
    h[i] = falloc(total[i]);
    got_buf[i] = falloc(total[i]);
    written[i] = xmalloc(total[i] * sizeof(bool));
    fill_value(h[i], total[i], sentinel());
  }
  size_t rows[3] = {ar, br, m}, cols[3] = {ac, bc, n};
  for (int op = 0; op < 3; op++) {
    size_t cnt = rows[op] * cols[op];
    float *vals = falloc(cnt ? cnt : 1);
    for (size_t t = 0; t < batch; t++) {
      bool nan = op < 2 ? gc->nan_ab : gc->nan_c;
      if (nan)
        fill_value(vals, cnt, NAN);
      else
        fill_uniform(vals, cnt, -1, 1, (unsigned)(100 * op + t + 7 * m + k));
      place_matrix(h[buf[op]] + off[op] + t * stride[op],
                   op == 2 ? written[buf[op]] + off[op] + t * stride[op] : NULL,
                   gc->layout,
                   op == 0   ? lda
                   : op == 1 ? ldb
                             : ldc,
                   rows[op], cols[op], vals);
    }
    free(vals);
  }
  for (size_t i = 0; i < nbuf; i++)
    dev[i] = dev_from(ctx, h[i], total[i]);

  if (dev[0] && (nbuf == 1 || (dev[1] && dev[2]))) {
    wgc_ptr a = at(dev[buf[0]], off[0]), b = at(dev[buf[1]], off[1]),
            c = at(dev[buf[2]], off[2]);
    wgc_status s =
        gc->batched
            ? wgc_gemm_batched(ctx, gc->layout, gc->ta, gc->tb, m, n, k,
                               gc->alpha, a, lda, stride[0], b, ldb, stride[1],
                               gc->beta, c, ldc, stride[2], batch)
            : wgc_gemm(ctx, gc->layout, gc->ta, gc->tb, m, n, k, gc->alpha, a,
                       lda, b, ldb, gc->beta, c, ldc);
    CHECK(s == WGC_OK, "%s returned %s: %s",
          gc->batched ? "wgc_gemm_batched" : "wgc_gemm", wgc_status_name(s),
          wgc_last_error(ctx));
    bool read = s == WGC_OK;
    for (size_t i = 0; read && i < nbuf; i++)
      read = dev_read(ctx, got_buf[i], dev[i], total[i]);
    if (read) {
      double *want = dalloc(batch * m * n);
      float *got = falloc(batch * m * n);
      ref_gemm_max mx = {0, 0, 0};
      for (size_t t = 0; t < batch; t++) {
        const float *ha = h[buf[0]] + off[0] + t * stride[0];
        const float *hb = h[buf[1]] + off[1] + t * stride[1];
        const float *hc = h[buf[2]] + off[2] + t * stride[2];
        const float *gcv = got_buf[buf[2]] + off[2] + t * stride[2];
        ref_gemm_max bm =
            ref_gemm(gc->layout, gc->ta, gc->tb, m, n, k, gc->alpha, ha, lda,
                     hb, ldb, gc->beta, hc, ldc, want + t * m * n);
        mx.a = fmax(mx.a, bm.a);
        mx.b = fmax(mx.b, bm.b);
        mx.c = fmax(mx.c, bm.c);
        for (size_t i = 0; i < m; i++)
          for (size_t j = 0; j < n; j++)
            got[t * m * n + i * n + j] = gcv[ref_index(gc->layout, ldc, i, j)];
      }
      double bound = 1e-5 * (double)k * fabs(gc->alpha) * mx.a * mx.b +
                     1e-6 * fabs(gc->beta) * mx.c;
      char key[64];
      CHECK_CLOSE(
          key_of(key, sizeof key, gc->batched ? "gemm_batched" : "gemm", bi),
          NULL, got, want, batch * m * n, 0, bound);
      for (size_t i = 0; i < nbuf; i++)
        check_untouched(got_buf[i], h[i], written[i], total[i], "gemm");
      free(want);
      free(got);
    }
  }
  for (size_t i = 0; i < nbuf; i++) {
    dev_free(ctx, dev[i]);
    free(h[i]);
    free(got_buf[i]);
    free(written[i]);
  }
  case_end();
}

#define R WGC_ROW_MAJOR
#define C WGC_COL_MAJOR
#define N_ WGC_NO_TRANS
#define T_ WGC_TRANS
#define CT WGC_CONJ_TRANS
TEST(ops_gemm) {
  /* Every layout x transpose pair, with leading dimensions larger than
   * needed and alpha/beta in turn (beta == 0 over a NaN C). */
  static const float ab[][2] = {{1, 0}, {0.75f, 0.5f}, {-1.25f, 2}, {2, -1}};
  const wgc_transpose ts[3] = {N_, T_, CT};
  int idx = 0;
  for (int l = 0; l < 2; l++)
    for (int x = 0; x < 3; x++)
      for (int y = 0; y < 3; y++, idx++) {
        gemm_case gc = {.layout = l ? R : C,
                        .ta = ts[x],
                        .tb = ts[y],
                        .m = 37,
                        .n = 29,
                        .k = 41,
                        .pad_a = (size_t)(idx % 3) + 1,
                        .pad_b = (size_t)(idx % 4) + 2,
                        .pad_c = (size_t)(idx % 2) + 3,
                        .alpha = ab[idx % 4][0],
                        .beta = ab[idx % 4][1]};
        gc.nan_c = gc.beta == 0;
        for (int bi = 0; bi < 2; bi++)
          run_gemm(bi, &gc);
      }
  /* One case per line; fields left out are 0. */
  // clang-format off
  static const gemm_case cases[] = {
      /* tiny, vector-like and odd shapes, around tile edges */
      {.layout = R, .ta = N_, .tb = N_, .m = 1, .n = 1, .k = 1, .alpha = 1},
      {.layout = R, .ta = N_, .tb = N_, .m = 1, .n = 67, .k = 129, .alpha = 1, .beta = 0.5f},
      {.layout = C, .ta = T_, .tb = N_, .m = 67, .n = 1, .k = 129, .alpha = -1, .nan_c = true},
      {.layout = C, .ta = N_, .tb = T_, .m = 33, .n = 35, .k = 1, .alpha = 1.5f, .beta = 1},
      {.layout = R, .ta = N_, .tb = N_, .m = 16, .n = 16, .k = 16, .alpha = 1},
      {.layout = C, .ta = N_, .tb = N_, .m = 64, .n = 64, .k = 64, .alpha = 1, .beta = 1},
      {.layout = R, .ta = N_, .tb = T_, .m = 65, .n = 67, .k = 129, .pad_a = 1, .pad_b = 3, .pad_c = 7, .alpha = 1},
      {.layout = C, .ta = T_, .tb = N_, .m = 65, .n = 67, .k = 129, .pad_a = 2, .pad_b = 1, .pad_c = 1, .alpha = 0.5f, .beta = 0.25f},
      {.layout = C, .ta = CT, .tb = CT, .m = 53, .n = 31, .k = 97, .pad_a = 5, .pad_b = 6, .pad_c = 4, .alpha = -0.5f, .beta = 1.5f},
      /* k == 0: C := beta*C, and zeros over a NaN C when beta == 0 */
      {.layout = R, .ta = N_, .tb = N_, .m = 7, .n = 9, .k = 0, .pad_c = 2, .alpha = 1, .beta = 0.5f},
      {.layout = C, .ta = T_, .tb = N_, .m = 7, .n = 9, .k = 0, .pad_c = 1, .alpha = 1, .nan_c = true},
      /* alpha == 0: A and B are NaN and must not be read */
      {.layout = R, .ta = T_, .tb = N_, .m = 11, .n = 13, .k = 17, .pad_a = 1, .alpha = 0, .beta = 2, .nan_ab = true},
      {.layout = C, .ta = N_, .tb = T_, .m = 11, .n = 13, .k = 17, .alpha = 0, .nan_ab = true, .nan_c = true},
      /* a long reduction: the K-scaled bound */
      {.layout = R, .ta = N_, .tb = N_, .m = 8, .n = 8, .k = 4096, .alpha = 1},
      /* realistic: a projection and an attention-score product */
      {.layout = R, .ta = N_, .tb = N_, .m = 128, .n = 256, .k = 192, .alpha = 1},
      {.layout = R, .ta = N_, .tb = T_, .m = 96, .n = 384, .k = 128, .alpha = 0.125f},
  };
  // clang-format on
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int bi = 0; bi < 2; bi++)
      run_gemm(bi, &cases[i]);
}

TEST(ops_gemm_batched) {
  /* One case per line; fields left out are 0 (stride kinds: see gemm_case). */
  // clang-format off
  static const gemm_case cases[] = {
      {.batched = true, .layout = R, .ta = N_, .tb = N_, .m = 13, .n = 11, .k = 7, .alpha = 1, .batch = 5},
      {.batched = true, .layout = C, .ta = T_, .tb = T_, .m = 9, .n = 10, .k = 12, .pad_a = 1, .pad_b = 2, .pad_c = 3, .alpha = 0.5f, .beta = -1, .batch = 3, .sa = 'g', .sb = 'g', .sc = 'g'},
      /* one matrix shared by every batch */
      {.batched = true, .layout = R, .ta = N_, .tb = N_, .m = 6, .n = 17, .k = 5, .alpha = 1, .batch = 4, .sa = 'z'},
      {.batched = true, .layout = C, .ta = N_, .tb = T_, .m = 15, .n = 4, .k = 9, .alpha = 2, .beta = 0.5f, .batch = 4, .sa = 'g', .sb = 'z', .sc = 'g'},
      {.batched = true, .layout = R, .ta = T_, .tb = CT, .m = 5, .n = 6, .k = 7, .alpha = 1, .batch = 3, .sa = 'z', .sb = 'z'},
      /* A, B and C in one allocation at odd element offsets */
      {.batched = true, .layout = R, .ta = T_, .tb = N_, .m = 7, .n = 5, .k = 3, .pad_a = 1, .alpha = 1, .beta = 1, .batch = 6, .sb = 'g', .sc = 'g', .place = 1},
      {.batched = true, .layout = C, .ta = N_, .tb = N_, .m = 4, .n = 3, .k = 5, .alpha = -1, .batch = 4, .sa = 'z', .place = 1},
      /* per-batch footprints: [A_i B_i C_i] interleaved */
      {.batched = true, .layout = C, .ta = N_, .tb = N_, .m = 5, .n = 4, .k = 3, .alpha = 1, .beta = 0.5f, .batch = 4, .place = 2},
      /* inputs may overlap each other: A batches shifted by one element */
      {.batched = true, .layout = R, .ta = N_, .tb = N_, .m = 4, .n = 5, .k = 6, .alpha = 1, .batch = 5, .sa = 'o'},
      {.batched = true, .layout = R, .ta = N_, .tb = T_, .m = 3, .n = 2, .k = 4, .alpha = 1, .batch = 1},
      /* quick returns per batch */
      {.batched = true, .layout = R, .ta = N_, .tb = N_, .m = 5, .n = 6, .k = 0, .alpha = 1, .beta = 2, .batch = 3, .sc = 'g'},
      {.batched = true, .layout = C, .ta = T_, .tb = N_, .m = 5, .n = 6, .k = 4, .alpha = 0, .beta = 0.5f, .nan_ab = true, .batch = 3},
      /* realistic: per-head attention scores */
      {.batched = true, .layout = R, .ta = N_, .tb = T_, .m = 64, .n = 64, .k = 64, .alpha = 0.125f, .batch = 8},
  };
  // clang-format on
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int bi = 0; bi < 2; bi++)
      run_gemm(bi, &cases[i]);
}

#undef R
#undef C
#undef N_
#undef T_
#undef CT

/* ---- conv2d ---------------------------------------------------------------
 */

typedef struct conv_case {
  wgc_conv2d_desc d;
  bool bias;
} conv_case;

static void run_conv(int bi, const conv_case *cc) {
  const wgc_conv2d_desc *d = &cc->d;
  size_t p = 0, q = 0;
  ref_conv2d_size(d, &p, &q);
  if (!case_begin("conv2d[%s] n=%zu c=%zu h=%zu w=%zu k=%zu r=%zu s=%zu "
                  "stride=%zux%zu pad=%zux%zu dil=%zux%zu groups=%zu %s "
                  "-> p=%zu q=%zu",
                  backend_label(test_backends[bi]), d->n, d->c, d->h, d->w,
                  d->k, d->r, d->s, d->stride_h, d->stride_w, d->pad_h,
                  d->pad_w, d->dilation_h, d->dilation_w, d->groups,
                  cc->bias ? "bias" : "no-bias", p, q))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  if (!ctx) {
    case_end();
    return;
  }
  size_t g = d->groups ? d->groups : 1;
  size_t nx = d->n * d->c * d->h * d->w;
  size_t nw = d->k * (d->c / g) * d->r * d->s;
  size_t ny = d->n * d->k * p * q, total = ny + 2 * GUARD;
  float *x = falloc(nx + 1), *w = falloc(nw + 1), *bias = falloc(d->k);
  float *y = falloc(total), *got = falloc(total);
  fill_uniform(x, nx, -1, 1, 11);
  fill_uniform(w, nw, -1, 1, 12);
  fill_uniform(bias, d->k, -1, 1, 13);
  fill_value(y, total, sentinel()); /* every output element must be written */
  /* Empty inputs (c == 0) still get a valid address. */
  wgc_ptr dx = dev_from(ctx, x, nx ? nx : 1),
          dw = dev_from(ctx, w, nw ? nw : 1);
  wgc_ptr db = cc->bias ? dev_from(ctx, bias, d->k) : 0;
  wgc_ptr dy = dev_from(ctx, y, total);
  if (dx && dw && dy && (db || !cc->bias)) {
    wgc_status s = wgc_conv2d(ctx, d, dx, dw, db, at(dy, GUARD));
    CHECK(s == WGC_OK, "wgc_conv2d returned %s: %s", wgc_status_name(s),
          wgc_last_error(ctx));
    if (s == WGC_OK && dev_read(ctx, got, dy, total)) {
      double *want = dalloc(ny + 1);
      ref_conv2d(d, x, w, cc->bias ? bias : NULL, want);
      double K = (double)(d->c / g * d->r * d->s);
      double bound = 1e-5 * K * max_abs(x, nx) * max_abs(w, nw) +
                     (cc->bias ? 1e-6 * max_abs(bias, d->k) : 0);
      char key[64];
      CHECK_CLOSE(key_of(key, sizeof key, "conv2d", bi), NULL, got + GUARD,
                  want, ny, 0, bound);
      check_guards(got, y, ny, "conv2d");
      free(want);
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dw);
  dev_free(ctx, db);
  dev_free(ctx, dy);
  free(x);
  free(w);
  free(bias);
  free(y);
  free(got);
  case_end();
}

/* d: n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w, dilation_h,
 * dilation_w, groups; f32 operands */
#define DESC(...)                                                              \
  (wgc_conv2d_desc) { __VA_ARGS__, 0, 0, 0, 0 }

TEST(ops_conv2d) {
  const conv_case cases[] = {
      {DESC(1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1), true},
      {DESC(2, 3, 9, 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1), true},
      {DESC(1, 3, 10, 10, 5, 3, 3, 2, 2, 0, 0, 1, 1, 1), false},
      {DESC(1, 2, 12, 12, 3, 3, 3, 1, 1, 2, 2, 2, 2, 1), true},
      /* different stride, padding and dilation per direction */
      {DESC(2, 3, 13, 17, 4, 3, 2, 2, 3, 1, 0, 1, 2, 1), true},
      {DESC(3, 5, 11, 13, 7, 5, 3, 3, 2, 2, 1, 1, 1, 1), false},
      /* groups, depthwise, depthwise with multiplier 2 */
      {DESC(1, 4, 8, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2), true},
      {DESC(1, 8, 10, 10, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8), false},
      {DESC(1, 4, 7, 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 4), true},
      {DESC(2, 6, 15, 15, 9, 3, 3, 2, 2, 2, 2, 2, 2, 3), true},
      /* pointwise */
      {DESC(2, 16, 7, 7, 32, 1, 1, 1, 1, 0, 0, 1, 1, 1), true},
      /* no input channels: the bias, or zeros */
      {DESC(2, 0, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1), true},
      {DESC(1, 0, 4, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1), false},
      /* a filter larger than the input that just fits the padded input */
      {DESC(1, 2, 2, 2, 3, 4, 4, 1, 1, 1, 1, 1, 1, 1), true},
      /* padding wider than the filter: border outputs see only padding */
      {DESC(1, 2, 4, 4, 2, 3, 3, 1, 1, 3, 3, 1, 1, 1), true},
      /* 0 stride, dilation and groups mean 1 */
      {DESC(1, 3, 6, 7, 2, 3, 3, 0, 0, 1, 1, 0, 0, 0), true},
      /* realistic */
      {DESC(1, 32, 28, 28, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1), true},
      {DESC(2, 16, 32, 32, 16, 5, 5, 2, 2, 2, 2, 1, 1, 1), false},
      /* coordinates near wgc.h's 2^31 limit: windows wholly in padding
       * (the bias), windows reaching the input across 2^29..2^30 - 1 of
       * padding or dilation, with every kernel form (k per group 3, 16) */
      {DESC(1, 1, 1, 1, 1, 1, 1, 1u << 29, 1u << 29, 1u << 29, 1u << 29, 1, 1,
            1),
       true},
      {DESC(1, 2, 1, 5, 3, 1, 3, (1u << 30) - 1, 1, (1u << 30) - 1, 1, 1, 1, 1),
       true},
      {DESC(2, 4, 3, 6, 16, 2, 3, 1u << 29, 2, 1u << 29, 1, 1u << 29, 1, 1),
       true},
      {DESC(1, 2, 1, 5, 16, 2, 3, 1, 1, (1u << 30) - 1, 1, (1u << 31) - 2, 1,
            1),
       false},
      {DESC(1, 3, 4, 1, 8, 3, 2, 3, (1u << 30) - 1, 1, (1u << 30) - 1, 1,
            (1u << 30) - 1, 1),
       true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int bi = 0; bi < 2; bi++)
      run_conv(bi, &cases[i]);
}

/* Beyond wgc.h's limit (padded sizes, dilated spans, strides below 2^31)
 * both backends reject a conv alike, status and message, and
 * wgc_conv2d_output_size rejects the desc with the same words. */
TEST(conv2d_coordinate_limit) {
  static const wgc_conv2d_desc bad[] = {
      DESC(1, 1, 1, 1, 1, 1, 1, 1u << 30, 1u << 30, 1u << 30, 1u << 30, 1, 1,
           1),
      DESC(1, 1, 1, 1, 1, 1, 1, 1, 1u << 31, 0, 0, 1, 1, 1),
      DESC(1, 1, 2, 2, 1, 2, 1, 1, 1, 0, 0, 1u << 31, 1, 1),
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (!case_begin("conv2d beyond 2^31 coordinates, desc %zu", i))
      continue;
    size_t p, q;
    CHECK_STATUS(wgc_conv2d_output_size(&bad[i], &p, &q),
                 WGC_ERR_INVALID_ARGUMENT);
    char want[256];
    snprintf(want, sizeof want, "%s", wgc_last_error(NULL));
    CHECK(strstr(want, "exceed 2147483647") != NULL, "message \"%s\"", want);
    wgc_status st[2] = {WGC_OK, WGC_OK};
    char msg[2][256] = {"", ""};
    for (int bi = 0; bi < 2; bi++) {
      wgc_context *ctx = test_ctx(test_backends[bi]);
      if (!ctx)
        continue;
      float one[4] = {1, 1, 1, 1};
      wgc_ptr a = dev_from(ctx, one, 4), y = dev_from(ctx, one, 4);
      st[bi] = wgc_conv2d(ctx, &bad[i], a, a, 0, y);
      snprintf(msg[bi], sizeof msg[bi], "%s", wgc_last_error(ctx));
      CHECK_DEVICE_EQUALS(ctx, y, one, 4, "output");
      dev_free(ctx, a);
      dev_free(ctx, y);
      CHECK_STATUS(st[bi], WGC_ERR_INVALID_ARGUMENT);
    }
    CHECK(st[0] == st[1] && strcmp(msg[0], msg[1]) == 0,
          "backends differ: %s \"%s\" / %s \"%s\"", wgc_status_name(st[0]),
          msg[0], wgc_status_name(st[1]), msg[1]);
    CHECK(strstr(msg[0], want + strlen("wgc_conv2d_output_size")) != NULL,
          "\"%s\" does not end as \"%s\"", msg[0], want);
    case_end();
  }
}

/* ---- attention ------------------------------------------------------------
 */

typedef struct attn_case {
  wgc_attention_desc d; /* scale 0: 1/sqrt(head_dim) */
  float range;          /* q and k in [-range, range); 0: 1 */
} attn_case;

static const char *causal_name(wgc_causal c) {
  return c == WGC_CAUSAL_NONE       ? "none"
         : c == WGC_CAUSAL_TOP_LEFT ? "top-left"
                                    : "bottom-right";
}

static void run_attention(int bi, const attn_case *ac) {
  wgc_attention_desc d = ac->d;
  if (d.scale == 0)
    d.scale = (float)(1.0 / sqrt((double)d.head_dim));
  float range = ac->range ? ac->range : 1;
  if (!case_begin("attention[%s] batch=%zu heads=%zu heads_kv=%zu seq_q=%zu "
                  "seq_kv=%zu head_dim=%zu scale=%g causal=%s range=%g",
                  backend_label(test_backends[bi]), d.batch, d.heads,
                  d.heads_kv, d.seq_q, d.seq_kv, d.head_dim, d.scale,
                  causal_name(d.causal), range))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  if (!ctx) {
    case_end();
    return;
  }
  size_t hkv = d.heads_kv ? d.heads_kv : d.heads;
  size_t nq = d.batch * d.heads * d.seq_q * d.head_dim;
  size_t nk = d.batch * hkv * d.seq_kv * d.head_dim;
  size_t total = nq + 2 * GUARD;
  float *q = falloc(nq), *k = falloc(nk + 1), *v = falloc(nk + 1);
  float *o = falloc(total), *got = falloc(total);
  fill_uniform(q, nq, -range, range, 21);
  fill_uniform(k, nk, -range, range, 22);
  fill_uniform(v, nk, -1, 1, 23);
  fill_value(o, total, sentinel());
  wgc_ptr dq = dev_from(ctx, q, nq), dk = dev_from(ctx, k, nk ? nk : 1);
  wgc_ptr dv = dev_from(ctx, v, nk ? nk : 1), dout = dev_from(ctx, o, total);
  if (dq && dk && dv && dout) {
    wgc_status s = wgc_attention(ctx, &d, dq, dk, dv, at(dout, GUARD));
    CHECK(s == WGC_OK, "wgc_attention returned %s: %s", wgc_status_name(s),
          wgc_last_error(ctx));
    if (s == WGC_OK && dev_read(ctx, got, dout, total)) {
      double *want = dalloc(nq);
      ref_attention(&d, q, k, v, want);
      double bound = 1e-5 * (double)d.head_dim * max_abs(q, nq) *
                     max_abs(k, nk) * max_abs(v, nk);
      char key[64];
      CHECK_CLOSE(key_of(key, sizeof key, "attention", bi), NULL, got + GUARD,
                  want, nq, 0, bound);
      check_guards(got, o, nq, "attention");
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
  free(got);
  case_end();
}

#define ATT(b, h, hkv, sq, skv, dim, sc, mask)                                 \
  (wgc_attention_desc) {                                                       \
    .batch = b, .heads = h, .heads_kv = hkv, .seq_q = sq, .seq_kv = skv,       \
    .head_dim = dim, .scale = sc, .causal = mask                               \
  }

TEST(ops_attention) {
  const wgc_causal NONE = WGC_CAUSAL_NONE, TL = WGC_CAUSAL_TOP_LEFT,
                   BR = WGC_CAUSAL_BOTTOM_RIGHT;
  const attn_case cases[] = {
      {ATT(1, 1, 1, 1, 1, 1, 0, NONE), 0},
      {ATT(1, 2, 0, 16, 16, 16, 0, NONE), 0}, /* heads_kv 0 = heads */
      {ATT(2, 8, 2, 33, 33, 64, 0, TL), 0},   /* GQA */
      {ATT(1, 4, 1, 17, 23, 32, 0, NONE), 0}, /* MQA */
      {ATT(1, 6, 2, 9, 12, 16, 0.3f, BR), 0},
      /* seq_q < seq_kv and seq_q > seq_kv under each mask */
      {ATT(1, 2, 2, 5, 19, 8, 0, NONE), 0},
      {ATT(1, 2, 2, 5, 19, 8, 0, TL), 0},
      {ATT(1, 2, 2, 5, 19, 8, 0, BR), 0},
      {ATT(1, 2, 1, 19, 5, 8, 0, NONE), 0},
      {ATT(1, 2, 1, 19, 5, 8, 0, TL), 0},
      {ATT(1, 2, 1, 19, 5, 8, 0, BR), 0}, /* the first 14 rows see no key */
      /* no keys at all: zeros */
      {ATT(1, 2, 2, 4, 0, 8, 0, NONE), 0},
      {ATT(2, 2, 1, 3, 0, 5, 0, BR), 0},
      /* head dims */
      {ATT(1, 2, 2, 50, 50, 1, 0, TL), 0},
      {ATT(1, 3, 3, 13, 29, 7, 0, BR), 0},
      {ATT(1, 2, 1, 16, 40, 128, 0, NONE), 0},
      {ATT(1, 1, 1, 8, 24, 256, 0, TL), 0},
      /* decoding one token against a KV cache */
      {ATT(2, 4, 2, 1, 100, 64, 0, BR), 0},
      /* scores near 300: overflows exp without max subtraction */
      {ATT(1, 2, 2, 24, 24, 32, 1, NONE), 3},
      /* realistic */
      {ATT(1, 8, 8, 128, 128, 64, 0, TL), 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int bi = 0; bi < 2; bi++)
      run_attention(bi, &cases[i]);
}

/* ---- reduce ---------------------------------------------------------------
 */

/* Runs op over axis of x (filled by the caller) and compares; returns false
 * if the call itself failed. */
static bool reduce_one(wgc_context *ctx, int bi, wgc_reduce_op op,
                       const float *x, const size_t *shape, size_t rank,
                       size_t axis, const char *label) {
  /* The output is the shape without axis (not nx / len: len may be 0). */
  size_t nx = ref_count(shape, rank), ny = 1;
  for (size_t i = 0; i < rank; i++)
    ny *= i == axis ? 1 : shape[i];
  size_t total = ny + 2 * GUARD;
  float *y = falloc(total), *got = falloc(total);
  fill_value(y, total, sentinel());
  wgc_ptr dx = dev_from(ctx, x, nx ? nx : 1), dy = dev_from(ctx, y, total);
  bool ok = false;
  if (dx && dy) {
    wgc_status s = wgc_reduce(ctx, op, dx, at(dy, GUARD), shape, rank, axis);
    CHECK(s == WGC_OK, "wgc_reduce(%s, %s) returned %s: %s",
          ref_reduce_name(op), label, wgc_status_name(s), wgc_last_error(ctx));
    ok = s == WGC_OK;
    if (ok && dev_read(ctx, got, dy, total)) {
      double *want = dalloc(ny), *mag = dalloc(ny), *tol = dalloc(ny);
      ref_reduce(op, x, shape, rank, axis, want, mag);
      double rel = 0;
      for (size_t i = 0; i < ny; i++)
        tol[i] = ref_reduce_tol(op, shape[axis], want[i], mag[i]);
      char key[64];
      snprintf(key, sizeof key, "reduce_%s[%s]", ref_reduce_name(op),
               backend_label(test_backends[bi]));
      check_close_at(__FILE__, __LINE__, key, label, got + GUARD, want, ny, rel,
                     0, tol);
      check_guards(got, y, ny, label);
      free(want);
      free(mag);
      free(tol);
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dy);
  free(y);
  free(got);
  return ok;
}

typedef struct reduce_shape {
  size_t rank;
  size_t shape[8];
} reduce_shape;

TEST(ops_reduce) {
  /* Ranks 1..8, every axis, every op. */
  static const reduce_shape shapes[] = {
      {1, {1}},
      {1, {1000}},
      {2, {17, 33}},
      {3, {5, 1, 7}},
      {4, {3, 4, 5, 6}},
      {5, {2, 3, 1, 4, 5}},
      {6, {2, 1, 3, 2, 2, 3}},
      {7, {2, 2, 2, 3, 1, 2, 2}},
      {8, {2, 1, 2, 3, 2, 1, 2, 2}},
      {2, {4096, 3}}, /* a long strided reduction */
      {2, {3, 2053}}, /* a long contiguous one */
  };
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    const reduce_shape *rs = &shapes[si];
    char sh[96];
    fmt_shape(sh, sizeof sh, rs->shape, rs->rank);
    size_t nx = ref_count(rs->shape, rs->rank);
    float *x = falloc(nx);
    fill_uniform(x, nx, -1, 1, (unsigned)(31 + si));
    for (int op = 0; op < WGC_REDUCE_OP_COUNT; op++)
      for (int bi = 0; bi < 2; bi++) {
        if (!case_begin("reduce[%s] %s shape=%s rank=%zu every axis",
                        backend_label(test_backends[bi]),
                        ref_reduce_name((wgc_reduce_op)op), sh, rs->rank))
          continue;
        wgc_context *ctx = test_ctx(test_backends[bi]);
        for (size_t axis = 0; ctx && axis < rs->rank; axis++) {
          char label[32];
          snprintf(label, sizeof label, "axis %zu", axis);
          if (!reduce_one(ctx, bi, (wgc_reduce_op)op, x, rs->shape, rs->rank,
                          axis, label))
            break;
        }
        case_end();
      }
    free(x);
  }
}

TEST(ops_reduce_special) {
  /* SUM over an empty axis is 0 (the output starts as NaN). */
  for (int bi = 0; bi < 2; bi++) {
    if (!case_begin("reduce[%s] sum shape=[3,0,4] axis=1 -> zeros",
                    backend_label(test_backends[bi])))
      continue;
    wgc_context *ctx = test_ctx(test_backends[bi]);
    const size_t shape[] = {3, 0, 4};
    float dummy[1] = {0};
    if (ctx)
      reduce_one(ctx, bi, WGC_REDUCE_SUM, dummy, shape, 3, 1, "axis 1");
    case_end();
  }
  /* NaN propagates through MAX and MIN (numpy), infinities are values. */
  float x[4 * 6];
  fill_uniform(x, 24, -1, 1, 41);
  x[1 * 6 + 2] = NAN;       /* row 1, column 2 */
  x[3 * 6 + 5] = NAN;       /* row 3, column 5 */
  x[0 * 6 + 4] = INFINITY;  /* row 0, column 4 */
  x[2 * 6 + 0] = -INFINITY; /* row 2, column 0 */
  const size_t shape[] = {4, 6};
  for (int op = 0; op < WGC_REDUCE_OP_COUNT; op++)
    for (size_t axis = 0; axis < 2; axis++)
      for (int bi = 0; bi < 2; bi++) {
        if (!case_begin("reduce[%s] %s shape=[4,6] axis=%zu with NaN and inf",
                        backend_label(test_backends[bi]),
                        ref_reduce_name((wgc_reduce_op)op), axis))
          continue;
        wgc_context *ctx = test_ctx(test_backends[bi]);
        if (ctx)
          reduce_one(ctx, bi, (wgc_reduce_op)op, x, shape, 2, axis, "nan");
        case_end();
      }
  /* 2^20 values in [-1, 1) sum to within 1e-2 of the exact sum. */
  size_t n = (size_t)1 << 20;
  float *big = falloc(n);
  fill_uniform(big, n, -1, 1, 43);
  double exact = 0;
  for (size_t i = 0; i < n; i++)
    exact += big[i];
  for (int bi = 0; bi < 2; bi++) {
    if (!case_begin("reduce[%s] sum of 2^20 values in [-1,1) within 1e-2",
                    backend_label(test_backends[bi])))
      continue;
    wgc_context *ctx = test_ctx(test_backends[bi]);
    wgc_ptr dx = ctx ? dev_from(ctx, big, n) : 0;
    wgc_ptr dy = dx ? dev_alloc(ctx, 4) : 0;
    if (dy) {
      size_t len = n;
      wgc_status s = wgc_reduce(ctx, WGC_REDUCE_SUM, dx, dy, &len, 1, 0);
      CHECK(s == WGC_OK, "wgc_reduce returned %s: %s", wgc_status_name(s),
            wgc_last_error(ctx));
      float got = 0;
      if (s == WGC_OK && dev_read(ctx, &got, dy, 1)) {
        char key[64];
        CHECK_CLOSE(key_of(key, sizeof key, "reduce_sum_2^20", bi), NULL, &got,
                    &exact, 1, 0, 1e-2);
      }
    }
    dev_free(ctx, dx);
    dev_free(ctx, dy);
    case_end();
  }
  free(big);
}

/* ---- unary ----------------------------------------------------------------
 */

typedef struct unary_case {
  wgc_unary_op op;
  size_t n;
  float lo, hi;
  bool specials; /* the values of API.md and IEEE edge cases instead */
  bool inplace;
} unary_case;

static const float unary_specials[] = {
    NAN,    0.0f,    -0.0f, 1.0f,   -1.0f,    100.0f,   -100.0f,
    1e-30f, -1e-30f, 4.0f,  0.5f,   -0.5f,    20.0f,    -20.0f,
    1e30f,  -1e30f,  88.0f, -88.0f, INFINITY, -INFINITY};

static void run_unary(int bi, const unary_case *uc) {
  size_t n = uc->n;
  if (uc->specials) {
    n = sizeof unary_specials / sizeof unary_specials[0];
    /* gelu(-inf) and silu(-inf) are inf*0 in their formulas: left out. */
    if (uc->op == WGC_UNARY_GELU || uc->op == WGC_UNARY_SILU)
      n--;
  }
  if (!case_begin(uc->specials ? "unary[%s] %s special values n=%zu%s"
                               : "unary[%s] %s n=%zu%s in [%g, %g)",
                  backend_label(test_backends[bi]), ref_unary_name(uc->op), n,
                  uc->inplace ? " in-place" : "", uc->lo, uc->hi))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  if (!ctx) {
    case_end();
    return;
  }
  size_t total = n + 2 * GUARD;
  float *x = falloc(n), *buf = falloc(total), *got = falloc(total);
  if (uc->specials)
    memcpy(x, unary_specials, n * sizeof(float));
  else
    fill_uniform(x, n, uc->lo, uc->hi, (unsigned)(51 + uc->op));
  fill_value(buf, total, sentinel());
  if (uc->inplace)
    memcpy(buf + GUARD, x, n * sizeof(float));
  wgc_ptr dx = uc->inplace ? 0 : dev_from(ctx, x, n);
  wgc_ptr dy = dev_from(ctx, buf, total);
  if (dy && (dx || uc->inplace)) {
    wgc_ptr in = uc->inplace ? at(dy, GUARD) : dx;
    wgc_status s = wgc_unary(ctx, uc->op, in, at(dy, GUARD), n);
    CHECK(s == WGC_OK, "wgc_unary(%s) returned %s: %s", ref_unary_name(uc->op),
          wgc_status_name(s), wgc_last_error(ctx));
    if (s == WGC_OK && dev_read(ctx, got, dy, total)) {
      double *want = dalloc(n), rel, abs_tol;
      for (size_t i = 0; i < n; i++)
        want[i] = ref_unary(uc->op, x[i]);
      ref_unary_bound(uc->op, &rel, &abs_tol);
      char key[64], op[32];
      snprintf(op, sizeof op, "unary_%s", ref_unary_name(uc->op));
      CHECK_CLOSE(key_of(key, sizeof key, op, bi), NULL, got + GUARD, want, n,
                  rel, abs_tol);
      check_guards(got, buf, n, "unary");
      free(want);
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dy);
  free(x);
  free(buf);
  free(got);
  case_end();
}

TEST(ops_unary) {
  for (int op = 0; op < WGC_UNARY_OP_COUNT; op++) {
    float lo, hi;
    ref_unary_range((wgc_unary_op)op, &lo, &hi);
    unary_case rnd = {(wgc_unary_op)op, 1031, lo, hi, false, false};
    unary_case spec = {(wgc_unary_op)op, 0, 0, 0, true, false};
    for (int bi = 0; bi < 2; bi++)
      run_unary(bi, &rnd);
    for (int bi = 0; bi < 2; bi++)
      run_unary(bi, &spec);
  }
  static const unary_case more[] = {
      {WGC_UNARY_RELU, 1, -1, 1, false, false},
      {WGC_UNARY_NEG, 7, -1, 1, false, true},
      {WGC_UNARY_SILU, 777, -6, 6, false, true},
      {WGC_UNARY_EXP, 64, -5, 5, true, true},
      {WGC_UNARY_GELU, 65539, -6, 6, false, false}, /* realistic */
  };
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    for (int bi = 0; bi < 2; bi++)
      run_unary(bi, &more[i]);
}

/* ---- binary ---------------------------------------------------------------
 */

typedef struct binary_case {
  wgc_binary_op op;
  size_t n;
  int specials; /* 1: the edge-case table of op */
  int inplace;  /* 0: separate out; 1: out == a; 2: out == b */
} binary_case;

typedef struct pair {
  float a, b;
} pair;

static const pair add_specials[] = {
    {INFINITY, -INFINITY}, {INFINITY, 1}, {NAN, 1}, {1, NAN},
    {1e38f, 1e38f},        {-0.0f, 0},    {3, -3},  {-1e38f, -1e38f}};
static const pair sub_specials[] = {
    {INFINITY, INFINITY}, {1, NAN}, {3, 3}, {-INFINITY, 1}, {1e38f, -1e38f}};
static const pair mul_specials[] = {{INFINITY, 0},  {NAN, 0},
                                    {1e30f, 1e30f}, {-2, INFINITY},
                                    {-0.0f, 5},     {1e-30f, 1e-30f}};
static const pair div_specials[] = {
    {1, 0},   {-1, 0}, {0, 0}, {1, INFINITY}, {INFINITY, INFINITY},
    {NAN, 1}, {6, -3}, {1, 3}};
static const pair max_specials[] = {
    {NAN, 1}, {1, NAN}, {NAN, NAN},      {-INFINITY, 3}, {INFINITY, -INFINITY},
    {-1, -2}, {2, 2},   {NAN, -INFINITY}};
static const pair pow_specials[] = {
    {-2, 3},  {-2, 2},   {-2, 0.5f}, {-0.5f, -3}, {2, -1},   {0, 2},
    {0, -1},  {0, 0},    {NAN, 0},   {1, NAN},    {3, 2.5f}, {-3, 4},
    {10, 10}, {4, 0.5f}, {-1, 7},    {2, 0}};

static void specials_of(wgc_binary_op op, const pair **p, size_t *n) {
  switch (op) {
  case WGC_BINARY_ADD:
    *p = add_specials, *n = sizeof add_specials / sizeof(pair);
    break;
  case WGC_BINARY_SUB:
    *p = sub_specials, *n = sizeof sub_specials / sizeof(pair);
    break;
  case WGC_BINARY_MUL:
    *p = mul_specials, *n = sizeof mul_specials / sizeof(pair);
    break;
  case WGC_BINARY_DIV:
    *p = div_specials, *n = sizeof div_specials / sizeof(pair);
    break;
  case WGC_BINARY_MAX:
  case WGC_BINARY_MIN:
    *p = max_specials, *n = sizeof max_specials / sizeof(pair);
    break;
  case WGC_BINARY_POW:
    *p = pow_specials, *n = sizeof pow_specials / sizeof(pair);
    break;
  }
}

/* Random operands where op is well conditioned: divisors and pow bases
 * away from 0. */
static void binary_inputs(wgc_binary_op op, float *a, float *b, size_t n,
                          unsigned seed) {
  fill_uniform(a, n, -10, 10, seed);
  fill_uniform(b, n, -10, 10, seed + 1);
  if (op == WGC_BINARY_DIV)
    for (size_t i = 0; i < n; i++)
      b[i] = (b[i] < 0 ? -0.5f : 0.5f) + b[i];
  if (op == WGC_BINARY_POW) {
    fill_uniform(a, n, 0.05f, 4, seed);
    fill_uniform(b, n, -3, 3, seed + 1);
  }
}

static void run_binary(int bi, const binary_case *bc) {
  const pair *sp = NULL;
  size_t n = bc->n;
  if (bc->specials)
    specials_of(bc->op, &sp, &n);
  static const char *const where[] = {"", " out==a", " out==b"};
  if (!case_begin("binary[%s] %s %s n=%zu%s", backend_label(test_backends[bi]),
                  ref_binary_name(bc->op),
                  bc->specials ? "special values" : "random", n,
                  where[bc->inplace]))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  if (!ctx) {
    case_end();
    return;
  }
  size_t total = n + 2 * GUARD;
  float *a = falloc(n), *b = falloc(n), *buf = falloc(total),
        *got = falloc(total);
  if (sp) {
    for (size_t i = 0; i < n; i++)
      a[i] = sp[i].a, b[i] = sp[i].b;
  } else {
    binary_inputs(bc->op, a, b, n, (unsigned)(61 + 2 * bc->op));
  }
  fill_value(buf, total, sentinel());
  if (bc->inplace)
    memcpy(buf + GUARD, bc->inplace == 1 ? a : b, n * sizeof(float));
  wgc_ptr da = bc->inplace == 1 ? 0 : dev_from(ctx, a, n);
  wgc_ptr db = bc->inplace == 2 ? 0 : dev_from(ctx, b, n);
  wgc_ptr dout = dev_from(ctx, buf, total);
  if (dout && (da || bc->inplace == 1) && (db || bc->inplace == 2)) {
    wgc_ptr pa = bc->inplace == 1 ? at(dout, GUARD) : da;
    wgc_ptr pb = bc->inplace == 2 ? at(dout, GUARD) : db;
    wgc_status s = wgc_binary(ctx, bc->op, pa, pb, at(dout, GUARD), n);
    CHECK(s == WGC_OK, "wgc_binary(%s) returned %s: %s",
          ref_binary_name(bc->op), wgc_status_name(s), wgc_last_error(ctx));
    if (s == WGC_OK && dev_read(ctx, got, dout, total)) {
      double *want = dalloc(n), rel, abs_tol;
      for (size_t i = 0; i < n; i++)
        want[i] = ref_binary(bc->op, a[i], b[i]);
      ref_binary_bound(bc->op, &rel, &abs_tol);
      char key[64], op[32];
      snprintf(op, sizeof op, "binary_%s", ref_binary_name(bc->op));
      CHECK_CLOSE(key_of(key, sizeof key, op, bi), NULL, got + GUARD, want, n,
                  rel, abs_tol);
      check_guards(got, buf, n, "binary");
      free(want);
    }
  }
  dev_free(ctx, da);
  dev_free(ctx, db);
  dev_free(ctx, dout);
  free(a);
  free(b);
  free(buf);
  free(got);
  case_end();
}

TEST(ops_binary) {
  for (int op = 0; op < WGC_BINARY_OP_COUNT; op++) {
    binary_case rnd = {(wgc_binary_op)op, 1031, 0, 0};
    binary_case spec = {(wgc_binary_op)op, 0, 1, 0};
    for (int bi = 0; bi < 2; bi++)
      run_binary(bi, &rnd);
    for (int bi = 0; bi < 2; bi++)
      run_binary(bi, &spec);
  }
  static const binary_case more[] = {
      {WGC_BINARY_ADD, 1, 0, 0},
      {WGC_BINARY_ADD, 257, 0, 1},
      {WGC_BINARY_SUB, 257, 0, 2}, /* a - out: the operand order matters */
      {WGC_BINARY_DIV, 100, 0, 2},
      {WGC_BINARY_MUL, 65537, 0, 0}, /* realistic */
  };
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    for (int bi = 0; bi < 2; bi++)
      run_binary(bi, &more[i]);
}

/* ---- broadcasting ----------------------------------------------------------
 */

typedef struct bcast_case {
  wgc_binary_op op;
  size_t ra, sa[8], rb, sb[8];
  bool inplace; /* out == a (a has the output's shape) */
} bcast_case;

static void run_broadcast(int bi, const bcast_case *bc) {
  size_t so[16], ro = 0;
  ref_broadcast_shape(bc->sa, bc->ra, bc->sb, bc->rb, so, &ro);
  char sa[96], sb[96], sout[96];
  fmt_shape(sa, sizeof sa, bc->sa, bc->ra);
  fmt_shape(sb, sizeof sb, bc->sb, bc->rb);
  fmt_shape(sout, sizeof sout, so, ro);
  if (!case_begin("broadcast[%s] %s a=%s b=%s -> %s%s",
                  backend_label(test_backends[bi]), ref_binary_name(bc->op), sa,
                  sb, sout, bc->inplace ? " out==a" : ""))
    return;
  wgc_context *ctx = test_ctx(test_backends[bi]);
  if (!ctx) {
    case_end();
    return;
  }
  size_t na = ref_count(bc->sa, bc->ra), nb = ref_count(bc->sb, bc->rb);
  size_t no = ref_count(so, ro), total = no + 2 * GUARD;
  float *a = falloc(na), *b = falloc(nb), *buf = falloc(total),
        *got = falloc(total);
  float *tmp = falloc(na > nb ? na : nb);
  binary_inputs(bc->op, a, tmp, na, 71);
  binary_inputs(bc->op, tmp, b, nb, 73);
  free(tmp);
  fill_value(buf, total, sentinel());
  if (bc->inplace)
    memcpy(buf + GUARD, a, na * sizeof(float));
  wgc_ptr da = bc->inplace ? 0 : dev_from(ctx, a, na);
  wgc_ptr db = dev_from(ctx, b, nb), dout = dev_from(ctx, buf, total);
  if (dout && db && (da || bc->inplace)) {
    wgc_ptr pa = bc->inplace ? at(dout, GUARD) : da;
    wgc_status s = wgc_binary_broadcast(ctx, bc->op, pa, bc->sa, bc->ra, db,
                                        bc->sb, bc->rb, at(dout, GUARD));
    CHECK(s == WGC_OK, "wgc_binary_broadcast(%s) returned %s: %s",
          ref_binary_name(bc->op), wgc_status_name(s), wgc_last_error(ctx));
    if (s == WGC_OK && dev_read(ctx, got, dout, total)) {
      double *want = dalloc(no), rel, abs_tol;
      ref_broadcast(bc->op, a, bc->sa, bc->ra, b, bc->sb, bc->rb, want);
      ref_binary_bound(bc->op, &rel, &abs_tol);
      char key[64];
      CHECK_CLOSE(key_of(key, sizeof key, "broadcast", bi), NULL, got + GUARD,
                  want, no, rel, abs_tol);
      check_guards(got, buf, no, "broadcast");
      free(want);
    }
  }
  dev_free(ctx, da);
  dev_free(ctx, db);
  dev_free(ctx, dout);
  free(a);
  free(b);
  free(buf);
  free(got);
  case_end();
}

TEST(ops_broadcast) {
  static const bcast_case cases[] = {
      {WGC_BINARY_MUL, 0, {0}, 2, {5, 7}, false},       /* scalar a */
      {WGC_BINARY_SUB, 2, {5, 7}, 0, {0}, false},       /* scalar b */
      {WGC_BINARY_ADD, 0, {0}, 0, {0}, false},          /* scalar out */
      {WGC_BINARY_ADD, 3, {3, 1, 5}, 2, {4, 1}, false}, /* both sides */
      {WGC_BINARY_DIV, 1, {1}, 3, {6, 1, 3}, false},    /* rank 1 vs 3 */
      {WGC_BINARY_SUB, 3, {2, 3, 4}, 2, {3, 1}, false},
      {WGC_BINARY_MIN, 2, {1, 5}, 2, {4, 1}, false},
      {WGC_BINARY_POW, 2, {4, 5}, 2, {4, 5}, false}, /* same shape */
      {WGC_BINARY_MAX,
       8,
       {2, 1, 3, 1, 2, 1, 2, 3},
       8,
       {1, 2, 1, 3, 1, 2, 2, 1},
       false}, /* rank 8 */
      {WGC_BINARY_ADD, 5, {1, 3, 1, 4, 1}, 5, {2, 1, 5, 1, 3}, false},
      {WGC_BINARY_MUL, 4, {7, 1, 1, 1}, 4, {1, 1, 1, 9}, false},
      {WGC_BINARY_ADD, 2, {1, 1}, 2, {1, 1}, false},
      {WGC_BINARY_POW, 2, {3, 4}, 1, {4}, false},
      /* in place: x = x op y */
      {WGC_BINARY_ADD, 2, {4, 5}, 1, {5}, true},
      {WGC_BINARY_MUL, 3, {2, 3, 4}, 0, {0}, true},
      {WGC_BINARY_DIV, 3, {2, 3, 4}, 3, {2, 1, 4}, true},
      /* realistic: a bias added to a batch of activations */
      {WGC_BINARY_ADD, 2, {64, 768}, 1, {768}, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int bi = 0; bi < 2; bi++)
      run_broadcast(bi, &cases[i]);
}

/* Registered last in this file: prints the accuracy table of the run. */
TEST(ops_accuracy_summary) { accuracy_summary("types ", false); }
