/* wgc_where on both backends against a reference computed here: numpy
 * broadcasting of cond, a and b, cond true unless +-0 (NaN and subnormals
 * are true), the chosen value copied bit for bit. */
#include "harness.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 3

static float from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

static uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

typedef struct where_case {
  const char *name;
  size_t rc, sc[8], ra, sa[8], rb, sb[8];
} where_case;

static size_t count_of(const size_t *s, size_t r) {
  size_t n = 1;
  for (size_t d = 0; d < r; d++)
    n *= s[d];
  return n;
}

/* Offset in an input of shape s (rank r) of output index idx (rank ro):
 * right-aligned, 0 along its dimensions of size 1. */
static size_t input_offset(const size_t *idx, size_t ro, const size_t *s,
                           size_t r) {
  size_t off = 0;
  for (size_t d = 0; d < r; d++) {
    size_t i = idx[ro - r + d];
    off = off * s[d] + (s[d] == 1 ? 0 : i);
  }
  return off;
}

/* cond values: zeros of both signs, NaNs, subnormals, infinities and
 * ordinary numbers, in a pattern that does not repeat with small shapes. */
static float cond_value(size_t i, unsigned seed) {
  static const uint32_t bits[] = {
      0x00000000u, 0x80000000u, 0x7fc00000u, 0xffc00123u, 0x00000001u,
      0x80000001u, 0x7f800000u, 0xff800000u, 0x3f800000u, 0xbf000000u,
      0x00000000u, 0x80000000u, 0x7f800001u, 0x00800000u};
  return from_bits(bits[(i * 7 + seed) % (sizeof bits / sizeof *bits)]);
}

static void run_where_case(int bi, const where_case *wc, unsigned seed) {
  wgc_context *ctx;
  if (!backend_case(bi, &ctx, "where %s", wc->name))
    return;
  size_t ro = wc->rc;
  if (wc->ra > ro)
    ro = wc->ra;
  if (wc->rb > ro)
    ro = wc->rb;
  size_t so[8];
  for (size_t d = 0; d < ro; d++) {
    size_t x = 1;
    const size_t *s[3] = {wc->sc, wc->sa, wc->sb};
    const size_t r[3] = {wc->rc, wc->ra, wc->rb};
    for (int k = 0; k < 3; k++)
      if (d + r[k] >= ro && s[k][d + r[k] - ro] != 1)
        x = s[k][d + r[k] - ro];
    so[d] = x;
  }
  size_t nc = count_of(wc->sc, wc->rc), na = count_of(wc->sa, wc->ra),
         nb = count_of(wc->sb, wc->rb), no = count_of(so, ro);
  float *c = falloc(nc), *a = falloc(na), *b = falloc(nb);
  float *want = falloc(no + 2 * GUARD), *got = falloc(no + 2 * GUARD);
  for (size_t i = 0; i < nc; i++)
    c[i] = cond_value(i, seed);
  fill_uniform(a, na, -2.0f, 2.0f, seed + 1);
  fill_uniform(b, nb, 10.0f, 20.0f, seed + 2);
  if (na > 1)
    a[1] = from_bits(0x7fc0abcdu); /* a NaN payload travels unchanged */
  fill_uniform(want, no + 2 * GUARD, 100.0f, 200.0f, seed + 3);
  wgc_ptr pc = dev_from(ctx, c, nc), pa = dev_from(ctx, a, na),
          pb = dev_from(ctx, b, nb), po = dev_from(ctx, want, no + 2 * GUARD);
  size_t idx[8] = {0};
  for (size_t e = 0; e < no; e++) {
    for (size_t d = ro, rest = e; d-- > 0; rest /= so[d])
      idx[d] = rest % so[d];
    float cv = c[input_offset(idx, ro, wc->sc, wc->rc)];
    want[GUARD + e] = cv != 0.0f ? a[input_offset(idx, ro, wc->sa, wc->ra)]
                                 : b[input_offset(idx, ro, wc->sb, wc->rb)];
  }
  if (pc && pa && pb && po) {
    CHECK_OK(ctx, wgc_where(ctx, pc, wc->sc, wc->rc, pa, wc->sa, wc->ra, pb,
                            wc->sb, wc->rb, at(po, GUARD)));
    if (dev_read(ctx, got, po, no + 2 * GUARD))
      for (size_t i = 0; i < no + 2 * GUARD; i++)
        if (!same_bits(got[i], want[i])) {
          CHECK(false, "out[%zu] (guard %d) = 0x%08x, want 0x%08x", i - GUARD,
                GUARD, bits_of(got[i]), bits_of(want[i]));
          break;
        }
  }
  dev_free(ctx, pc);
  dev_free(ctx, pa);
  dev_free(ctx, pb);
  dev_free(ctx, po);
  free(c);
  free(a);
  free(b);
  free(want);
  free(got);
  case_end();
}

TEST(where_broadcast) {
  static const where_case cases[] = {
      {"same shape [1031]", 1, {1031}, 1, {1031}, 1, {1031}},
      {"cond [4,1,5] a [3,1] b [5]", 3, {4, 1, 5}, 2, {3, 1}, 1, {5}},
      {"scalar cond, a [2,3], scalar b", 0, {0}, 2, {2, 3}, 0, {0}},
      {"all scalars", 0, {0}, 0, {0}, 0, {0}},
      {"cond [7,1,33] a [1,9,1] b [7,9,33]",
       3,
       {7, 1, 33},
       3,
       {1, 9, 1},
       3,
       {7, 9, 33}},
      {"rank 8",
       8,
       {2, 1, 3, 1, 2, 1, 3, 2},
       8,
       {1, 2, 1, 2, 1, 2, 1, 2},
       3,
       {1, 3, 2}},
      /* a mask row broadcast over 300 rows, crossing workgroups */
      {"mask [1,1,37] a [300,37] b [1]", 3, {1, 1, 37}, 2, {300, 37}, 1, {1}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int bi = 0; bi < 2; bi++)
      run_where_case(bi, &cases[i], 500u + (unsigned)i);
}

/* out == a and out == b exactly (inputs of the output's shape). */
TEST(where_in_place) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "where in place"))
      continue;
    enum { N = 50 };
    float c[N], a[N], b[N], got[N];
    for (int i = 0; i < N; i++)
      c[i] = cond_value((size_t)i, 1);
    fill_uniform(a, N, -1, 1, 4);
    fill_uniform(b, N, 2, 3, 5);
    const size_t s[1] = {N}, one[1] = {1};
    for (int which = 0; which < 2; which++) {
      wgc_ptr pc = dev_from(ctx, c, N), pa = dev_from(ctx, a, N),
              pb = dev_from(ctx, b, N);
      if (pc && pa && pb) {
        if (which == 0)
          CHECK_OK(ctx, wgc_where(ctx, pc, s, 1, pa, s, 1, pb, one, 1, pa));
        else
          CHECK_OK(ctx, wgc_where(ctx, pc, s, 1, pa, one, 1, pb, s, 1, pb));
        if (dev_read(ctx, got, which ? pb : pa, N))
          for (int i = 0; i < N; i++) {
            float w = c[i] != 0.0f ? a[which ? 0 : i] : b[which ? i : 0];
            if (!same_bits(got[i], w)) {
              CHECK(false, "out == %s: out[%d] = %g, want %g",
                    which ? "b" : "a", i, (double)got[i], (double)w);
              break;
            }
          }
      }
      dev_free(ctx, pc);
      dev_free(ctx, pa);
      dev_free(ctx, pb);
    }
    case_end();
  }
}

TEST(where_invalid) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "where invalid"))
      continue;
    float h[12], hm[40];
    fill_ramp(h, 12, 1);
    fill_ramp(hm, 40, 50);
    wgc_ptr c = dev_from(ctx, h, 12), a = dev_from(ctx, h, 12),
            b = dev_from(ctx, h, 4), y = dev_from(ctx, hm, 12),
            m = dev_from(ctx, hm, 40), g = wild_address(11);
    const char *F = "wgc_where";
    /* cond [3,4], a [3,4], b [4] -> out [3,4] */
    const size_t s34[9] = {3, 4, 1, 1, 1, 1, 1, 1, 1}, s4[1] = {4}, s5[1] = {5},
                 s24[2] = {2, 4}, s04[2] = {0, 4};
#define WH(c_, sc_, rc_, a_, sa_, ra_, b_, sb_, rb_, o_)                       \
  wgc_where(ctx, c_, sc_, rc_, a_, sa_, ra_, b_, sb_, rb_, o_)
    CHECK_REJECTED(NULL, wgc_where(NULL, c, s34, 2, a, s34, 2, b, s4, 1, y), F,
                   "ctx");
    CHECK_REJECTED(ctx, WH(c, s34, 9, a, s34, 2, b, s4, 1, y), F, "rank_cond");
    CHECK_ERROR_VALUE(ctx, "9");
    CHECK_REJECTED(ctx, WH(c, s34, 2, a, s34, 9, b, s4, 1, y), F, "rank_a");
    CHECK_REJECTED(ctx, WH(c, s34, 2, a, s34, 2, b, s4, 9, y), F, "rank_b");
    CHECK_REJECTED(ctx, WH(c, NULL, 2, a, s34, 2, b, s4, 1, y), F,
                   "shape_cond");
    CHECK_REJECTED(ctx, WH(c, s34, 2, a, NULL, 2, b, s4, 1, y), F, "shape_a");
    CHECK_REJECTED(ctx, WH(c, s34, 2, a, s34, 2, b, NULL, 1, y), F, "shape_b");
    CHECK_REJECTED(ctx, WH(c, s34, 2, a, s34, 2, b, s5, 1, y), F,
                   "shape_b|shape_a|shape_cond");
    CHECK_ERROR_VALUE(ctx, "5");
    CHECK_REJECTED(ctx, WH(c, s24, 2, a, s34, 2, b, s4, 1, y), F,
                   "shape_cond|shape_a");
    CHECK_REJECTED(ctx, WH(c, s34, 2, a, s24, 2, b, s4, 1, y), F,
                   "shape_cond|shape_a");
    /* operands */
    CHECK_REJECTED(ctx, WH(0, s34, 2, a, s34, 2, b, s4, 1, y), F, "cond");
    CHECK_REJECTED(ctx, WH(c, s34, 2, g, s34, 2, b, s4, 1, y), F, "a");
    CHECK_REJECTED(ctx, WH(c, s34, 2, a, s34, 2, b + 2, s4, 1, y), F, "b");
    CHECK_REJECTED(ctx, WH(c, s34, 2, a, s34, 2, at(b, 1), s4, 1, y), F, "b");
    CHECK_REJECTED(ctx, WH(c, s34, 2, a, s34, 2, b, s4, 1, at(y, 1)), F, "out");
    /* out overlapping an input other than exactly, or one broadcast */
    CHECK_REJECTED(ctx, WH(at(m, 2), s34, 2, a, s34, 2, b, s4, 1, m), F,
                   "out|cond");
    CHECK_REJECTED(ctx, WH(c, s34, 2, a, s34, 2, at(m, 4), s4, 1, m), F,
                   "out|b");
    /* empty output: a no-op whatever the addresses */
    CHECK_OK(ctx, WH(g, s04, 2, 0, s4, 1, g, s4, 1, 0));
    CHECK_REJECTED(ctx, WH(g, s04, 2, g, s34, 2, g, s4, 1, g), F,
                   "shape_a|shape_cond");
#undef WH
    CHECK_DEVICE_EQUALS(ctx, y, hm, 12, "out");
    CHECK_DEVICE_EQUALS(ctx, m, hm, 40, "the shared allocation");
    CHECK_DEVICE_EQUALS(ctx, c, h, 12, "cond");
    dev_free(ctx, c);
    dev_free(ctx, a);
    dev_free(ctx, b);
    dev_free(ctx, y);
    dev_free(ctx, m);
    case_end();
  }
}
