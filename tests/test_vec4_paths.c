/* The vec4 forms of the streaming kernels (map4, binary4, reduce's VEC
 * branches) and where they hand over to the scalar ones: operands at every
 * float offset modulo 4 (only 16-byte aligned ones take the vec4 form),
 * lengths with 0 to 3 floats past the last whole vec4, in place, a
 * broadcast scalar on either side, rows of whole vec4s with a bias row, a
 * per-row scalar or both broadcast, reductions over rows and over columns
 * whose lengths and strides are multiples of 4 and ones that are not. Each
 * case runs on both backends against float64 arithmetic done here. */
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deterministic values in [-1, 1) with varied exponents, so sums carry
 * real rounding errors. */
static void fill_mixed(float *x, size_t n, unsigned seed) {
  unsigned s = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    float v = (float)(s >> 8) / 16777216.0f * 2.0f - 1.0f;
    x[i] = v * (float)(1u << (s % 5)) / 16.0f;
  }
}

/* Sizes just past map's short-run kernel, with every tail length. */
static const size_t LENS[] = {257, 258, 259, 260, 1027, 4096};

TEST(vec4_unary_offsets_and_tails) {
  for (int bi = 0; bi < 2; bi++)
    for (size_t li = 0; li < sizeof LENS / sizeof *LENS; li++)
      for (unsigned ox = 0; ox < 4; ox++)
        for (unsigned oy = 0; oy < 4; oy += 3) {
          size_t n = LENS[li];
          wgc_context *ctx;
          if (!backend_case(bi, &ctx, "vec4 unary n=%zu x+%u y+%u", n, ox, oy))
            continue;
          float *x = falloc(n + 4), *got = falloc(n + 4);
          fill_mixed(x, n + 4, (unsigned)(n + ox));
          wgc_ptr dx = dev_from(ctx, x, n + 4), dy = dev_alloc(ctx, 4 * n + 16);
          if (dx && dy) {
            CHECK_OK(ctx,
                     wgc_unary(ctx, WGC_UNARY_NEG, at(dx, ox), at(dy, oy), n));
            if (dev_read(ctx, got, at(dy, oy), n))
              for (size_t i = 0; i < n; i++)
                if (got[i] != -x[ox + i]) {
                  CHECK(false, "y[%zu] = %g, expected %g", i, got[i],
                        -x[ox + i]);
                  break;
                }
          }
          dev_free(ctx, dx);
          dev_free(ctx, dy);
          free(x);
          free(got);
          case_end();
        }
}

TEST(vec4_unary_in_place) {
  for (int bi = 0; bi < 2; bi++)
    for (unsigned o = 0; o < 4; o++) {
      size_t n = 1031;
      wgc_context *ctx;
      if (!backend_case(bi, &ctx, "vec4 unary in place +%u", o))
        continue;
      float *x = falloc(n + 4), *got = falloc(n);
      fill_mixed(x, n + 4, 7 + o);
      wgc_ptr dx = dev_from(ctx, x, n + 4);
      if (dx) {
        CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_RELU, at(dx, o), at(dx, o), n));
        if (dev_read(ctx, got, at(dx, o), n))
          for (size_t i = 0; i < n; i++) {
            float want = x[o + i] > 0 ? x[o + i] : 0.0f;
            if (got[i] != want) {
              CHECK(false, "x[%zu] = %g, expected %g", i, got[i], want);
              break;
            }
          }
      }
      dev_free(ctx, dx);
      free(x);
      free(got);
      case_end();
    }
}

/* a OP b with a or b (or neither) a broadcast scalar; SUB tells the
 * operands apart. */
static void binary_case(int bi, size_t n, unsigned oa, unsigned ob, unsigned oo,
                        int scalar) {
  wgc_context *ctx;
  if (!backend_case(bi, &ctx, "vec4 binary n=%zu a+%u b+%u out+%u scalar=%d", n,
                    oa, ob, oo, scalar))
    return;
  float *a = falloc(n + 4), *b = falloc(n + 4), *got = falloc(n);
  fill_mixed(a, n + 4, (unsigned)n);
  fill_mixed(b, n + 4, (unsigned)n + 99);
  wgc_ptr da = dev_from(ctx, a, n + 4), db = dev_from(ctx, b, n + 4),
          dout = dev_alloc(ctx, 4 * n + 16);
  if (da && db && dout) {
    size_t full[1] = {n}, one[1] = {1};
    CHECK_OK(ctx,
             wgc_binary_broadcast(ctx, WGC_BINARY_SUB, at(da, oa),
                                  scalar == 1 ? one : full, 1, at(db, ob),
                                  scalar == 2 ? one : full, 1, at(dout, oo)));
    if (dev_read(ctx, got, at(dout, oo), n))
      for (size_t i = 0; i < n; i++) {
        float want = (float)((double)a[oa + (scalar == 1 ? 0 : i)] -
                             (double)b[ob + (scalar == 2 ? 0 : i)]);
        if (got[i] != want) {
          CHECK(false, "out[%zu] = %g, expected %g", i, got[i], want);
          break;
        }
      }
  }
  dev_free(ctx, da);
  dev_free(ctx, db);
  dev_free(ctx, dout);
  free(a);
  free(b);
  free(got);
  case_end();
}

TEST(vec4_binary_offsets_tails_broadcast) {
  for (int bi = 0; bi < 2; bi++) {
    for (size_t li = 0; li < sizeof LENS / sizeof *LENS; li++)
      for (int scalar = 0; scalar < 3; scalar++)
        binary_case(bi, LENS[li], 0, 0, 0, scalar);
    /* one operand off the vec4 grid at a time */
    for (unsigned o = 1; o < 4; o++) {
      binary_case(bi, 1030, o, 0, 0, 0);
      binary_case(bi, 1030, 0, o, 0, 0);
      binary_case(bi, 1030, 0, 0, o, 0);
      binary_case(bi, 1030, o, 0, 0, 2);
      binary_case(bi, 1030, 0, o, 0, 1);
    }
  }
}

/* out[R, C] = a - b with numpy broadcasting from the shapes given (rank 1
 * or 2), each operand at a float offset. */
static void rows_case(int bi, size_t R, size_t C, const size_t *sa, size_t ra,
                      const size_t *sb, size_t rb, unsigned off) {
  wgc_context *ctx;
  if (!backend_case(bi, &ctx,
                    "vec4 binary rows [%zu,%zu] a %zu-d [..%zu] b %zu-d "
                    "[..%zu] +%u",
                    R, C, ra, sa[ra - 1], rb, sb[rb - 1], off))
    return;
  size_t na = 1, nb = 1;
  for (size_t d = 0; d < ra; d++)
    na *= sa[d];
  for (size_t d = 0; d < rb; d++)
    nb *= sb[d];
  float *a = falloc(na + 4), *b = falloc(nb + 4), *got = falloc(R * C);
  fill_mixed(a, na + 4, (unsigned)(na + off));
  fill_mixed(b, nb + 4, (unsigned)(nb + 7));
  wgc_ptr da = dev_from(ctx, a, na + 4), db = dev_from(ctx, b, nb + 4),
          dout = dev_alloc(ctx, 4 * R * C + 16);
  if (da && db && dout) {
    CHECK_OK(ctx, wgc_binary_broadcast(ctx, WGC_BINARY_SUB, at(da, off), sa, ra,
                                       at(db, off), sb, rb, at(dout, off)));
    if (dev_read(ctx, got, at(dout, off), R * C))
      for (size_t r = 0; r < R; r++)
        for (size_t c = 0; c < C; c++) {
          /* element (r, c) of an operand of shape s (rank k, right-aligned) */
          size_t ia = 0, ib = 0;
          size_t ar = ra == 2 && sa[0] > 1 ? r : 0, ac = sa[ra - 1] > 1 ? c : 0;
          size_t br = rb == 2 && sb[0] > 1 ? r : 0, bc = sb[rb - 1] > 1 ? c : 0;
          ia = ar * sa[ra - 1] + ac;
          ib = br * sb[rb - 1] + bc;
          float want = (float)((double)a[off + ia] - (double)b[off + ib]);
          if (got[r * C + c] != want) {
            CHECK(false, "out[%zu][%zu] = %g, expected %g", r, c,
                  got[r * C + c], want);
            r = R;
            break;
          }
        }
  }
  dev_free(ctx, da);
  dev_free(ctx, db);
  dev_free(ctx, dout);
  free(a);
  free(b);
  free(got);
  case_end();
}

TEST(vec4_binary_rows) {
  for (int bi = 0; bi < 2; bi++)
    for (unsigned off = 0; off < 2; off++)
      for (size_t C = 36; C <= 38; C += 2) {
        size_t R = 29, full[2] = {R, C}, row[1] = {C}, col[2] = {R, 1},
               row2[2] = {1, C};
        rows_case(bi, R, C, full, 2, row, 1, off);  /* bias row */
        rows_case(bi, R, C, row, 1, full, 2, off);  /* bias row, on a */
        rows_case(bi, R, C, full, 2, col, 2, off);  /* per-row scalar */
        rows_case(bi, R, C, col, 2, row2, 2, off);  /* outer product */
        rows_case(bi, R, C, full, 2, full, 2, off); /* plain, 2-d */
      }
}

/* SUM over axis of [outer, len, inner] at a float offset, against float64:
 * compensated sums come out within a few units of 2^-24 of the exact sum
 * relative to the sum of magnitudes. */
static void reduce_case(int bi, size_t outer, size_t len, size_t inner,
                        unsigned off) {
  wgc_context *ctx;
  if (!backend_case(bi, &ctx, "vec4 reduce sum [%zu,%zu,%zu] x+%u", outer, len,
                    inner, off))
    return;
  size_t n = outer * len * inner, m = outer * inner;
  float *x = falloc(n + 4), *got = falloc(m);
  fill_mixed(x, n + 4, (unsigned)(n + off));
  wgc_ptr dx = dev_from(ctx, x, n + 4), dy = dev_alloc(ctx, 4 * m);
  if (dx && dy) {
    size_t shape[3] = {outer, len, inner};
    CHECK_OK(ctx,
             wgc_reduce(ctx, WGC_REDUCE_SUM, at(dx, off), dy, shape, 3, 1));
    if (dev_read(ctx, got, dy, m)) {
      double worst = 0;
      for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++) {
          double want = 0, mag = 0;
          for (size_t r = 0; r < len; r++) {
            double v = x[off + (o * len + r) * inner + i];
            want += v;
            mag += fabs(v);
          }
          double e = fabs(got[o * inner + i] - want) / (mag * 0x1p-24);
          worst = e > worst ? e : worst;
        }
      CHECK(worst <= 2.0, "worst error %.3g units of 2^-24 of sum |x|", worst);
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, dy);
  free(x);
  free(got);
  case_end();
}

TEST(vec4_reduce_rows_and_columns) {
  for (int bi = 0; bi < 2; bi++)
    for (unsigned off = 0; off < 4; off += 1) {
      reduce_case(bi, 1, 37, 1, off);     /* one short row */
      reduce_case(bi, 9, 2052, 1, off);   /* rows of chunks and a tail */
      reduce_case(bi, 5, 1027, 1, off);   /* odd row stride */
      reduce_case(bi, 1, 130, 12, off);   /* columns, 3 vec4s per row */
      reduce_case(bi, 3, 70, 36, off);    /* columns of several slabs */
      reduce_case(bi, 2, 65, 10, off);    /* inner not a multiple of 4 */
      reduce_case(bi, 1, 200, 1024, off); /* columns past one chunk */
    }
}
