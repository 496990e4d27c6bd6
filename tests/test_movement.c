/* Strided copy and gather on both backends against references computed
 * here index by index. Both ops move values without arithmetic, so the
 * whole destination allocation (written elements, gaps and guards) must
 * come back bit for bit: NaN payloads, subnormals and -0 included. */
#include "harness.h"
#include "util.h"

#include "cpu/work.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Random values with specials sprinkled in: a NaN with a payload, a
 * negative NaN, subnormals, -0 and infinities. */
static void fill_special(float *x, size_t n, unsigned seed) {
  fill_uniform(x, n, -4.0f, 4.0f, seed);
  static const uint32_t bits[] = {0x7fc12345u, 0xffc00001u, 0x00000001u,
                                  0x807fffffu, 0x80000000u, 0x7f800000u,
                                  0xff800000u, 0x00400000u};
  for (size_t i = 0; i < n; i += 7)
    memcpy(&x[i], &bits[(i / 7) % 8], 4);
}

static uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

/* CHECKs that got equals want bit for bit; reports the first difference. */
static void check_bits(const float *got, const float *want, size_t n,
                       const char *what) {
  for (size_t i = 0; i < n; i++)
    if (!same_bits(got[i], want[i])) {
      CHECK(false, "%s[%zu] = %.9g (0x%08x), want %.9g (0x%08x)", what, i,
            (double)got[i], bits_of(got[i]), (double)want[i], bits_of(want[i]));
      return;
    }
}

/* ---- strided copy ----------------------------------------------------------
 */

/* One wgc_copy_strided call: element offsets of dst and src from their
 * allocations' bases. */
typedef struct copy_call {
  size_t rank;
  size_t shape[8], sd[8], ss[8];
  size_t dst_off, src_off;
} copy_call;

typedef struct copy_case {
  const char *name;
  size_t dst_n, src_n; /* allocation sizes, floats */
  unsigned ncalls;
  copy_call calls[2];
} copy_case;

/* want[dst_off + idx.sd] = src[src_off + idx.ss] for every index. */
static void copy_ref(const copy_call *c, float *want, const float *src) {
  size_t count = 1, idx[8] = {0};
  for (size_t d = 0; d < c->rank; d++)
    count *= c->shape[d];
  for (size_t e = 0; e < count; e++) {
    size_t rest = e, od = c->dst_off, os = c->src_off;
    for (size_t d = c->rank; d-- > 0;) {
      idx[d] = rest % c->shape[d];
      rest /= c->shape[d];
      od += idx[d] * c->sd[d];
      os += idx[d] * c->ss[d];
    }
    want[od] = src[os];
  }
}

static void run_copy_case(int bi, const copy_case *cc, unsigned seed) {
  wgc_context *ctx;
  if (!backend_case(bi, &ctx, "copy_strided %s", cc->name))
    return;
  float *src = falloc(cc->src_n), *dst0 = falloc(cc->dst_n),
        *want = falloc(cc->dst_n), *got = falloc(cc->dst_n);
  fill_special(src, cc->src_n, seed);
  fill_uniform(dst0, cc->dst_n, 100.0f, 200.0f, seed + 1);
  memcpy(want, dst0, 4 * cc->dst_n);
  wgc_ptr s = dev_from(ctx, src, cc->src_n), d = dev_from(ctx, dst0, cc->dst_n);
  for (unsigned k = 0; k < cc->ncalls && s && d; k++) {
    const copy_call *c = &cc->calls[k];
    copy_ref(c, want, src);
    CHECK_OK(ctx,
             wgc_copy_strided(ctx, at(d, c->dst_off), c->sd, at(s, c->src_off),
                              c->ss, c->shape, c->rank));
  }
  if (s && d && dev_read(ctx, got, d, cc->dst_n))
    check_bits(got, want, cc->dst_n, "dst");
  dev_free(ctx, s);
  dev_free(ctx, d);
  free(src);
  free(dst0);
  free(want);
  free(got);
  case_end();
}

/* Row-major strides of shape. */
static void contiguous(const size_t *shape, size_t rank, size_t *stride) {
  size_t s = 1;
  for (size_t d = rank; d-- > 0;) {
    stride[d] = s;
    s *= shape[d];
  }
}

/* A permutation: src contiguous of shape, dst contiguous of shape permuted
 * by perm (dst dimension i is src dimension perm[i]). */
static copy_case permute_case(const char *name, const size_t *shape,
                              size_t rank, const size_t *perm) {
  copy_case cc = {.name = name, .ncalls = 1};
  copy_call *c = &cc.calls[0];
  c->rank = rank;
  size_t dshape[8], dstride[8], n = 1;
  for (size_t i = 0; i < rank; i++) {
    c->shape[i] = shape[i];
    dshape[i] = shape[perm[i]];
    n *= shape[i];
  }
  contiguous(shape, rank, c->ss);
  contiguous(dshape, rank, dstride);
  for (size_t i = 0; i < rank; i++)
    c->sd[perm[i]] = dstride[i];
  c->dst_off = 3;
  c->src_off = 5;
  cc.dst_n = n + 7;
  cc.src_n = n + 6;
  return cc;
}

TEST(movement_copy_strided) {
  static const size_t s2[] = {37, 53}, p2[] = {1, 0};
  /* [b, s, h, d] -> [b, h, s, d], and [b, c, h, w] -> [b, w, c, h] */
  static const size_t s4[] = {2, 7, 3, 5}, p4[] = {0, 2, 1, 3};
  static const size_t s4b[] = {2, 3, 4, 65}, p4b[] = {0, 3, 1, 2};
  static const size_t s8[] = {2, 1, 3, 2, 1, 2, 3, 2},
                      p8[] = {7, 6, 5, 4, 3, 2, 1, 0};
  copy_case cases[] = {
      permute_case("transpose [37,53]", s2, 2, p2),
      permute_case("[b,s,h,d]->[b,h,s,d] [2,7,3,5]", s4, 4, p4),
      permute_case("[b,c,h,w]->[b,w,c,h] [2,3,4,65]", s4b, 4, p4b),
      permute_case("rank 8 reversed", s8, 8, p8),
      /* rows 2..8 and every other column from 3 of a [10, 20] source */
      {"slice [2:9, 3:17:2] of [10,20]",
       60,
       200,
       1,
       {{2, {7, 7}, {7, 1}, {20, 2}, 4, 43}}},
      /* [4,6] and [4,9] into the halves of a [4,15] destination */
      {"concat [4,6]+[4,9] -> [4,15]",
       61,
       70,
       2,
       {{2, {4, 6}, {15, 1}, {6, 1}, 1, 0},
        {2, {4, 9}, {15, 1}, {9, 1}, 7, 30}}},
      /* a row broadcast down 6 rows; a scalar over [3,4] */
      {"expand [1,5] -> [6,5]", 31, 5, 1, {{2, {6, 5}, {5, 1}, {0, 1}, 0, 0}}},
      {"expand scalar -> [3,4]", 12, 9, 1, {{2, {3, 4}, {4, 1}, {0, 0}, 0, 8}}},
      {"rank 0", 4, 4, 1, {{0, {0}, {0}, {0}, 2, 3}}},
      /* sizes 1 with any stride, and a strided destination with gaps */
      {"size-1 dims, gaps in dst",
       80,
       30,
       1,
       {{4, {1, 3, 1, 7}, {999, 20, 0, 2}, {5, 7, 77, 1}, 10, 2}}},
      /* 1100 x 2 transposed: a long inner run crossing workgroups */
      {"transpose [1100,2]",
       2201,
       2203,
       1,
       {{2, {1100, 2}, {1, 1100}, {2, 1}, 1, 3}}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int bi = 0; bi < 2; bi++)
      run_copy_case(bi, &cases[i], 100u + (unsigned)i);
}

/* An empty shape copies nothing, whatever the addresses and strides. */
TEST(movement_copy_strided_empty) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "copy_strided empty shape"))
      continue;
    float h[6] = {1, 2, 3, 4, 5, 6};
    wgc_ptr d = dev_from(ctx, h, 6), g = wild_address(7);
    const size_t shape[3] = {4, 0, 3}, sd[3] = {0, 0, 0}, ss[3] = {1, 1, 1};
    CHECK_OK(ctx, wgc_copy_strided(ctx, d, sd, g, ss, shape, 3));
    CHECK_OK(ctx, wgc_copy_strided(ctx, 0, sd, 0, ss, shape, 3));
    CHECK_DEVICE_EQUALS(ctx, d, h, 6, "dst");
    dev_free(ctx, d);
    case_end();
  }
}

/* Rank 0 needs no arrays: NULL shape and strides copy one element. */
TEST(movement_copy_strided_rank0_null) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "copy_strided rank 0, NULL arrays"))
      continue;
    float h[4] = {1, 2, 3, 4}, want[4] = {1, 2, 3, 2};
    wgc_ptr p = dev_from(ctx, h, 4);
    if (p)
      CHECK_OK(ctx,
               wgc_copy_strided(ctx, at(p, 3), NULL, at(p, 1), NULL, NULL, 0));
    CHECK_DEVICE_EQUALS(ctx, p, want, 4, "the allocation");
    dev_free(ctx, p);
    case_end();
  }
}

/* Strides of millions of elements in a 148 MB allocation: offsets beyond
 * 2^24 floats, and a source span beyond a default 128 MiB binding, which
 * the WebGPU planner must split. */
TEST(movement_copy_strided_huge_strides) {
  enum { BIG = 37000000, R = 4, C = 3, SR = 12000001, SC = 1000 };
  /* the third run: WebGPU with 1 MiB bindings, so that every operand
   * splits whatever the adapter's own limit */
  wgc_context *capped = NULL;
  for (int bi = 0; bi < 3; bi++) {
    wgc_context *ctx;
    if (bi == 2) {
      if (!case_begin("copy_strided huge strides[webgpu, 1 MiB bindings]"))
        continue;
      capped = new_ctx(WGC_BACKEND_WEBGPU, 1 << 20);
      if (!capped) {
        case_end();
        continue;
      }
      ctx = capped;
    } else if (!backend_case(bi, &ctx, "copy_strided huge strides"))
      continue;
    wgc_ptr big = dev_alloc(ctx, 4 * (size_t)BIG);
    float vals[R][C], got[C * R + 2], want[C * R + 2];
    fill_special(&vals[0][0], R * C, 9);
    for (int r = 0; r < R && big; r++)
      for (int c = 0; c < C; c++)
        CHECK_OK(ctx, wgc_upload(ctx, at(big, 5 + (size_t)r * SR + c * SC),
                                 &vals[r][c], 4));
    wgc_ptr d = dev_alloc(ctx, sizeof got);
    const size_t shape[2] = {R, C}, ss[2] = {SR, SC}, sd[2] = {1, R};
    if (big && d) {
      CHECK_OK(ctx,
               wgc_copy_strided(ctx, at(d, 1), sd, at(big, 5), ss, shape, 2));
    }
    memset(want, 0, sizeof want);
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++)
        want[1 + r + c * R] = vals[r][c];
    if (big && d && dev_read(ctx, got, d, C * R + 2))
      check_bits(got, want, C * R + 2, "dst");
    /* and back at the next element: each source element then has its copy
     * beside it */
    if (big && d)
      CHECK_OK(ctx,
               wgc_copy_strided(ctx, at(big, 6), ss, at(d, 1), sd, shape, 2));
    for (int r = 0; r < R && big; r++)
      for (int c = 0; c < C; c++) {
        float pair[2];
        if (dev_read(ctx, pair, at(big, 5 + (size_t)r * SR + c * SC), 2))
          CHECK(same_bits(pair[0], vals[r][c]) &&
                    same_bits(pair[1], vals[r][c]),
                "big[(%d, %d)] = %g, %g, want %g twice", r, c, (double)pair[0],
                (double)pair[1], (double)vals[r][c]);
      }
    dev_free(ctx, big);
    dev_free(ctx, d);
    case_end();
  }
  if (capped)
    wgc_destroy(capped);
}

/* ---- gather
 * ------------------------------------------------------------------ */

typedef struct gather_case {
  const char *name;
  size_t rank, shape[4], axis;
  size_t n; /* indices */
  int32_t idx[12];
  bool random; /* n random indices in [-len-3, len+3) instead of idx */
} gather_case;

static void gather_ref(const float *data, const size_t *shape, size_t rank,
                       size_t axis, const int32_t *idx, size_t n, float *out) {
  size_t outer = 1, inner = 1, len = shape[axis];
  for (size_t d = 0; d < axis; d++)
    outer *= shape[d];
  for (size_t d = axis + 1; d < rank; d++)
    inner *= shape[d];
  for (size_t o = 0; o < outer; o++)
    for (size_t j = 0; j < n; j++) {
      long long k = idx[j] < 0 ? (long long)len + idx[j] : idx[j];
      for (size_t c = 0; c < inner; c++)
        out[(o * n + j) * inner + c] =
            k >= 0 && k < (long long)len
                ? data[(o * len + (size_t)k) * inner + c]
                : 0.0f;
    }
}

static void run_gather_case(int bi, const gather_case *gc, unsigned seed) {
  wgc_context *ctx;
  if (!backend_case(bi, &ctx, "gather %s", gc->name))
    return;
  size_t data_n = 1, outer = 1, inner = 1, len = gc->shape[gc->axis];
  for (size_t d = 0; d < gc->rank; d++) {
    data_n *= gc->shape[d];
    if (d < gc->axis)
      outer *= gc->shape[d];
    if (d > gc->axis)
      inner *= gc->shape[d];
  }
  size_t out_n = outer * gc->n * inner, GUARD = 3;
  float *data = falloc(data_n + 1), *want = falloc(out_n + 2 * GUARD),
        *got = falloc(out_n + 2 * GUARD);
  int32_t *idx = xmalloc(4 * gc->n + 4);
  fill_special(data, data_n, seed);
  unsigned r = seed * 2654435761u + 1;
  for (size_t j = 0; j < gc->n; j++) {
    r ^= r << 13, r ^= r >> 17, r ^= r << 5;
    idx[j] = gc->random ? (int32_t)(r % (2 * len + 6)) - (int32_t)len - 3
                        : gc->idx[j];
  }
  fill_uniform(want, out_n + 2 * GUARD, 100.0f, 200.0f, seed + 1);
  wgc_ptr dp = dev_from(ctx, data, data_n + 1),
          op = dev_from(ctx, want, out_n + 2 * GUARD),
          ip = dev_alloc(ctx, 4 * gc->n + 4);
  gather_ref(data, gc->shape, gc->rank, gc->axis, idx, gc->n, want + GUARD);
  if (dp && op && ip) {
    CHECK_OK(ctx, wgc_upload(ctx, ip, idx, 4 * gc->n));
    CHECK_OK(ctx, wgc_gather(ctx, dp, gc->shape, gc->rank, gc->axis, ip, gc->n,
                             at(op, GUARD)));
    if (dev_read(ctx, got, op, out_n + 2 * GUARD))
      check_bits(got, want, out_n + 2 * GUARD, "output (with guards)");
  }
  dev_free(ctx, dp);
  dev_free(ctx, op);
  dev_free(ctx, ip);
  free(data);
  free(want);
  free(got);
  free(idx);
  case_end();
}

TEST(movement_gather) {
  static const gather_case cases[] = {
      /* embedding lookup: last row by -1, first by -50, out of range on
       * both sides and at the int32 extremes, repeats */
      {"embedding [50,37] axis 0",
       2,
       {50, 37},
       0,
       12,
       {3, -1, 49, 0, -50, 50, -51, 2147483647, -2147483647 - 1, 3, 7, 17},
       false},
      {"axis last [3,4,11] axis 2",
       3,
       {3, 4, 11},
       2,
       5,
       {10, -11, 0, 11, -4},
       false},
      {"middle [2,9,3,4] axis 1",
       4,
       {2, 9, 3, 4},
       1,
       6,
       {8, 0, -9, 9, 4, -1},
       false},
      {"rank 1 [13]", 1, {13}, 0, 4, {12, -13, 13, 5}, false},
      {"one index [7,1] axis 0", 2, {7, 1}, 0, 1, {6}, false},
      /* rows across workgroups, many indices */
      {"table [1000,64] axis 0, 300 random", 2, {1000, 64}, 0, 300, {0}, true},
      {"[5,2000] axis 1, 1031 random", 2, {5, 2000}, 1, 1031, {0}, true},
      /* an empty axis: every index is outside; data is not read */
      {"empty axis [2,0,3]", 3, {2, 0, 3}, 1, 4, {0, -1, 1, 5}, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int bi = 0; bi < 2; bi++)
      run_gather_case(bi, &cases[i], 300u + (unsigned)i);
}

/* No indices (or an empty outer or inner extent): nothing written, no
 * address checked. */
TEST(movement_gather_empty) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "gather empty output"))
      continue;
    float h[6] = {1, 2, 3, 4, 5, 6};
    wgc_ptr o = dev_from(ctx, h, 6), g = wild_address(3);
    const size_t shape[2] = {4, 5}, shape0[3] = {0, 4, 5};
    CHECK_OK(ctx, wgc_gather(ctx, g, shape, 2, 0, g, 0, o));
    CHECK_OK(ctx, wgc_gather(ctx, g, shape0, 3, 1, g, 3, o));
    CHECK_DEVICE_EQUALS(ctx, o, h, 6, "output");
    dev_free(ctx, o);
    case_end();
  }
}

/* ---- bad input
 * ---------------------------------------------------------------- */

TEST(movement_copy_strided_invalid) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "copy_strided invalid"))
      continue;
    float hs[24], hd[40];
    fill_ramp(hs, 24, 1);
    fill_ramp(hd, 40, 100);
    wgc_ptr s = dev_from(ctx, hs, 24), d = dev_from(ctx, hd, 40);
    const char *F = "wgc_copy_strided";
    const size_t sh[9] = {3, 4, 1, 1, 1, 1, 1, 1, 1}, ss[9] = {4, 1},
                 sd[9] = {4, 1};
    const size_t sd_dup[2] = {2, 1}, sd_zero[2] = {0, 1}, ss_far[2] = {11, 1},
                 sd_t[2] = {1, 3};
#define CS(d_, sd_, s_, ss_, sh_, r_)                                          \
  wgc_copy_strided(ctx, d_, sd_, s_, ss_, sh_, r_)
    CHECK_REJECTED(NULL, wgc_copy_strided(NULL, d, sd, s, ss, sh, 2), F, "ctx");
    CHECK_REJECTED(ctx, CS(d, sd, s, ss, sh, 9), F, "rank");
    CHECK_ERROR_VALUE(ctx, "9");
    CHECK_REJECTED(ctx, CS(d, sd, s, ss, NULL, 2), F, "shape");
    CHECK_REJECTED(ctx, CS(d, NULL, s, ss, sh, 2), F, "dst_strides");
    CHECK_REJECTED(ctx, CS(d, sd, s, NULL, sh, 2), F, "src_strides");
    /* two indices onto one destination element */
    CHECK_REJECTED(ctx, CS(d, sd_dup, s, ss, sh, 2), F, "dst_strides");
    CHECK_ERROR_VALUE(ctx, "2");
    CHECK_REJECTED(ctx, CS(d, sd_zero, s, ss, sh, 2), F, "dst_strides");
    /* operands: overrun, null, wild, unaligned */
    CHECK_REJECTED(ctx, CS(d, sd, s, ss_far, sh, 2), F, "src");
    CHECK_REJECTED(ctx, CS(at(d, 30), sd, s, ss, sh, 2), F, "dst");
    CHECK_REJECTED(ctx, CS(0, sd, s, ss, sh, 2), F, "dst");
    CHECK_REJECTED(ctx, CS(d, sd, 0, ss, sh, 2), F, "src");
    CHECK_REJECTED(ctx, CS(wild_address(5), sd, s, ss, sh, 2), F, "dst");
    CHECK_REJECTED(ctx, CS(d, sd, s + 2, ss, sh, 2), F, "src");
    /* spans that meet, even where the elements interleave */
    CHECK_REJECTED(ctx, CS(at(d, 4), sd, d, ss, sh, 2), F, "dst|src");
    CHECK_REJECTED(ctx, CS(at(d, 1), sd_t, d, sd_t, sh, 2), F, "dst|src");
    CHECK_REJECTED(ctx, CS(d, sd, d, ss, sh, 2), F, "dst|src");
#undef CS
    CHECK_DEVICE_EQUALS(ctx, d, hd, 40, "dst");
    CHECK_DEVICE_EQUALS(ctx, s, hs, 24, "src");
    dev_free(ctx, s);
    dev_free(ctx, d);
    case_end();
  }
}

TEST(movement_gather_invalid) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "gather invalid"))
      continue;
    float hd[20], ho[30];
    fill_ramp(hd, 20, 1);
    fill_ramp(ho, 30, 100);
    int32_t hi[3] = {0, 2, -1};
    wgc_ptr d = dev_from(ctx, hd, 20), o = dev_from(ctx, ho, 30),
            ix = dev_alloc(ctx, 12);
    if (ix)
      CHECK_OK(ctx, wgc_upload(ctx, ix, hi, 12));
    const char *F = "wgc_gather";
    const size_t sh[9] = {4, 5, 1, 1, 1, 1, 1, 1, 1}, big[2] = {4, 6};
    /* data [4,5] axis 0, 3 indices -> output [3,5] */
#define G(d_, sh_, r_, ax_, i_, n_, o_)                                        \
  wgc_gather(ctx, d_, sh_, r_, ax_, i_, n_, o_)
    CHECK_REJECTED(NULL, wgc_gather(NULL, d, sh, 2, 0, ix, 3, o), F, "ctx");
    CHECK_REJECTED(ctx, G(d, sh, 0, 0, ix, 3, o), F, "rank");
    CHECK_REJECTED(ctx, G(d, sh, 9, 0, ix, 3, o), F, "rank");
    CHECK_ERROR_VALUE(ctx, "9");
    CHECK_REJECTED(ctx, G(d, NULL, 2, 0, ix, 3, o), F, "shape");
    CHECK_REJECTED(ctx, G(d, sh, 2, 2, ix, 3, o), F, "axis");
    CHECK_ERROR_VALUE(ctx, "2");
    CHECK_REJECTED(ctx, G(d, big, 2, 0, ix, 3, o), F, "data");
    CHECK_REJECTED(ctx, G(0, sh, 2, 0, ix, 3, o), F, "data");
    CHECK_REJECTED(ctx, G(d + 2, sh, 2, 0, ix, 3, o), F, "data");
    CHECK_REJECTED(ctx, G(d, sh, 2, 0, ix, 4, o), F, "indices");
    CHECK_REJECTED(ctx, G(d, sh, 2, 0, wild_address(8), 3, o), F, "indices");
    CHECK_REJECTED(ctx, G(d, sh, 2, 0, ix, 3, at(o, 16)), F, "output");
    CHECK_REJECTED(ctx, G(d, sh, 2, 0, ix, 3, 0), F, "output");
    CHECK_REJECTED(ctx, G(d, sh, 2, 0, ix, SIZE_MAX / 2, o), F, "n_indices");
    /* the output may overlap neither data nor indices */
    CHECK_REJECTED(ctx, G(o, sh, 2, 0, ix, 3, at(o, 10)), F, "output|data");
    CHECK_REJECTED(ctx, G(d, sh, 2, 0, o, 3, at(o, 2)), F, "output|indices");
#undef G
    CHECK_DEVICE_EQUALS(ctx, o, ho, 30, "output");
    CHECK_DEVICE_EQUALS(ctx, d, hd, 20, "data");
    dev_free(ctx, d);
    dev_free(ctx, o);
    dev_free(ctx, ix);
    case_end();
  }
}

/* ---- pieces of the browser build's CPU queue -------------------------------
 */

/* The pieces src/cpu/split.c cuts the three ops into, each a range of
 * output elements, must give what the whole call gives, bit for bit. */
static void split_matches(wgc_context *ctx, const cpu_work *w, float *out,
                          size_t n, const char *what) {
  static const double budgets[] = {1e12, 300, 50, 7, 1};
  float *initial = falloc(n), *whole = falloc(n);
  memcpy(initial, out, 4 * n);
  CHECK_STATUS(cpu_work_run(ctx, w), WGC_OK);
  memcpy(whole, out, 4 * n);
  for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
    memcpy(out, initial, 4 * n);
    cpu_split s;
    CHECK_STATUS(cpu_split_plan(w, budgets[b], &s), WGC_OK);
    for (size_t i = 0; i < s.pieces; i++)
      CHECK_STATUS(cpu_split_run(ctx, w, &s, i), WGC_OK);
    cpu_split_release(&s);
    if (b == sizeof budgets / sizeof *budgets - 1)
      CHECK(s.pieces > 100, "%s: %zu pieces at budget 1", what, s.pieces);
    for (size_t i = 0; i < n; i++)
      if (!same_bits(out[i], whole[i])) {
        CHECK(false, "%s, budget %g (%zu pieces): [%zu] = %g, whole %g", what,
              budgets[b], s.pieces, i, (double)out[i], (double)whole[i]);
        break;
      }
  }
  free(initial);
  free(whole);
}

TEST(movement_cpu_split) {
  if (!case_begin("movement cpu pieces"))
    return;
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  float *src = falloc(600), *dst = falloc(700), *idx = falloc(9);
  fill_special(src, 600, 77);
  fill_uniform(dst, 700, 5, 6, 78);
  /* [3, 7, 20] transposed into [20, 3, 7] with gaps */
  cpu_work w = {.kind = CPU_WORK_COPY_STRIDED,
                .u.copy_strided = {.rank = 3,
                                   .count = 420,
                                   .shape = {3, 7, 20},
                                   .stride_dst = {8, 1, 30},
                                   .stride_src = {140, 20, 1},
                                   .dst = {.mem = dst},
                                   .src = {.mem = src},
                                   .fn = "wgc_copy_strided"}};
  split_matches(ctx, &w, dst, 700, "copy_strided");
  static const int32_t k[9] = {0, -1, 5, 29, -30, 30, 7, -100, 12};
  memcpy(idx, k, sizeof k);
  w = (cpu_work){.kind = CPU_WORK_GATHER,
                 .u.gather = {.outer = 2,
                              .len = 30,
                              .inner = 10,
                              .n_indices = 9,
                              .data = {.mem = src},
                              .indices = {.mem = idx},
                              .output = {.mem = dst},
                              .fn = "wgc_gather"}};
  split_matches(ctx, &w, dst, 700, "gather");
  w = (cpu_work){.kind = CPU_WORK_WHERE,
                 .u.where = {.rank = 2,
                             .count = 400,
                             .shape = {20, 20},
                             .stride_cond = {20, 1},
                             .stride_a = {0, 1},
                             .stride_b = {1, 0},
                             .cond = {.mem = src},
                             .a = {.mem = src + 400},
                             .b = {.mem = src + 500},
                             .out = {.mem = dst},
                             .fn = "wgc_where"}};
  split_matches(ctx, &w, dst, 700, "where");
  free(src);
  free(dst);
  free(idx);
  case_end();
}
