/* Typed data movement on both backends: wgc_copy_strided_ex with every
 * source x destination pair of f32, f16 and bf16 through a transpose into
 * a destination with gaps, a broadcast and rank 0, checked bit for bit
 * against the independent model of wgc_cast (tests/dtype_ref.c) over
 * random bit patterns (NaN payloads, signalling NaNs, subnormals,
 * infinities, f16 overflow); 2-byte operands 2 bytes into a word with the
 * gaps and guards around them untouched; copies split over 4 KiB
 * bindings; the CPU backend's pieces; and the rejected types. */
#include "dtype_ref.h"
#include "ops_ref.h"
#include "tbuf.h"
#include "util.h"

#include "cpu/cpu.h"
#include "cpu/work.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const wgc_dtype TYPES[3] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                   WGC_DTYPE_BF16};

static uint32_t xorshift(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* n elements of t as raw bits at p: random patterns (every class of value
 * shows up: NaNs with payloads, subnormals, infinities), then a few
 * chosen ones (an f32 signalling NaN, 70000 and 65520 that overflow f16,
 * an f16 subnormal, -0). */
static void fill_bits(uint8_t *p, wgc_dtype t, size_t n, uint32_t seed) {
  static const uint32_t f32s[] = {0x7f812345u, 0xffc00001u, 0x7f800000u,
                                  0x478b3800u, 0x477ff000u, 0x366b0000u,
                                  0x80000000u, 0x00000001u};
  static const uint16_t h16[] = {0x7d01, 0xfe00, 0x7c00,
                                 0x0001, 0x8000, 0x03ff};
  static const uint16_t b16[] = {0x7f81, 0xffc1, 0xff80,
                                 0x0001, 0x8000, 0x007f};
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    uint32_t r = xorshift(&s);
    if (t == WGC_DTYPE_F32) {
      /* mostly ordinary magnitudes, so f32 -> f16 rounds as often as
       * it overflows */
      if (r & 1)
        r = (r & 0x807fffffu) | ((uint32_t)(110 + (r >> 1) % 40) << 23);
      if (i < sizeof f32s / sizeof *f32s)
        r = f32s[i];
      memcpy(p + 4 * i, &r, 4);
    } else {
      uint16_t h = (uint16_t)r;
      const uint16_t *pick = t == WGC_DTYPE_F16 ? h16 : b16;
      if (i < 6)
        h = pick[i];
      memcpy(p + 2 * i, &h, 2);
    }
  }
}

/* Element offset of index i of shape[rank] through strides. */
static size_t offset_of(size_t i, const size_t *shape, const size_t *stride,
                        size_t rank) {
  size_t off = 0;
  for (size_t d = rank; d-- > 0;) {
    off += i % shape[d] * stride[d];
    i /= shape[d];
  }
  return off;
}

/* Copies shape[rank] from a src of src_n elements of st (strides ss) into
 * a dst of dst_n elements of dt (strides ds) on ctx, and checks every
 * byte of dst's image: the copied elements as dref_cast gives them, the
 * rest (gaps, guards) unchanged. */
static void copy_case(wgc_context *ctx, wgc_dtype st, wgc_dtype dt,
                      const size_t *shape, size_t rank, const size_t *ss,
                      size_t src_n, const size_t *ds, size_t dst_n,
                      const char *what, uint32_t seed) {
  tbuf src = tbuf_make(ctx, st, NULL, src_n);
  tbuf dst = tbuf_make(ctx, dt, NULL, dst_n);
  fill_bits(src.host + src.off, st, src_n, seed);
  size_t eb = dref_bytes(dt, 1), sb = dref_bytes(st, 1), count = 1;
  for (size_t d = 0; d < rank; d++)
    count *= shape[d];
  uint8_t *want = xmalloc(dst.bytes), *got = xmalloc(dst.bytes);
  memcpy(want, dst.host, dst.bytes);
  for (size_t i = 0; i < count; i++) {
    size_t so = offset_of(i, shape, ss, rank),
           d = offset_of(i, shape, ds, rank);
    dref_cast(src.host + src.off + sb * so, st, want + dst.off + eb * d, dt, 1);
  }
  char name[160];
  snprintf(name, sizeof name, "copy_strided %s->%s %s", wgc_dtype_name(st),
           wgc_dtype_name(dt), what);
  if (src.dev && dst.dev &&
      dev_write(ctx, src.dev, (const float *)(const void *)src.host,
                src.bytes / 4)) {
    CHECK_OK(ctx, wgc_copy_strided_ex(ctx, dst.dev + dst.off, dt, ds,
                                      src.dev + src.off, st, ss, shape, rank));
    if (dev_read(ctx, (float *)(void *)got, dst.dev, dst.bytes / 4)) {
      size_t bad = 0;
      for (size_t b = 0; b < dst.bytes && bad < 3; b++)
        if (got[b] != want[b]) {
          bad++;
          CHECK(false, "%s: byte %zu (element %zd) is 0x%02x, want 0x%02x",
                name, b, ((ptrdiff_t)b - (ptrdiff_t)dst.off) / (ptrdiff_t)eb,
                got[b], want[b]);
        }
    }
  }
  free(want), free(got);
  tbuf_free(ctx, &src);
  tbuf_free(ctx, &dst);
}

/* A transpose of [4, 5, 3] stored as [3][4][5] into a destination whose
 * rows leave gaps (strides 1, 8, 40) and into a row-major one (written at
 * the flat index, a 2-byte one by words), one of [3, 5, 3] (an odd count),
 * a broadcast along a stride-0 dimension, and rank 0. */
static void copy_cases(wgc_context *ctx, wgc_dtype st, wgc_dtype dt,
                       uint32_t seed) {
  size_t shape[3] = {4, 5, 3}, ss[3] = {5, 1, 20}, ds[3] = {1, 8, 40};
  copy_case(ctx, st, dt, shape, 3, ss, 60, ds, 120, "transpose into gaps",
            seed);
  size_t rm[3] = {15, 3, 1};
  copy_case(ctx, st, dt, shape, 3, ss, 60, rm, 60, "transpose", seed + 3);
  size_t odd[3] = {3, 5, 3};
  copy_case(ctx, st, dt, odd, 3, ss, 60, rm, 45, "transpose, odd count",
            seed + 4);
  size_t bshape[2] = {6, 7}, bss[2] = {0, 1}, bds[2] = {7, 1};
  copy_case(ctx, st, dt, bshape, 2, bss, 7, bds, 42, "broadcast", seed + 1);
  copy_case(ctx, st, dt, NULL, 0, NULL, 1, NULL, 1, "rank 0", seed + 2);
}

TEST(types_copy_strided) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types copy_strided"))
      continue;
    for (int c = 0; c < 9; c++)
      copy_cases(ctx, TYPES[c / 3], TYPES[c % 3], (uint32_t)(7 * c + 1));
    /* 2-byte operands from a word's start */
    size_t was = tbuf_half_offset(8);
    for (int c = 0; c < 9; c++)
      copy_cases(ctx, TYPES[c / 3], TYPES[c % 3], (uint32_t)(7 * c + 100));
    tbuf_half_offset(was);
    case_end();
  }
}

/* A transpose of [96, 64] whose operands span more than a 4 KiB binding:
 * split along its outer dimension, 2-byte pieces starting mid-word. */
TEST(types_copy_strided_split) {
  if (!case_begin("types copy_strided split[webgpu] 4 KiB bindings"))
    return;
  wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 4096);
  if (ctx) {
    size_t shape[2] = {96, 64}, ss[2] = {1, 96}, ds[2] = {65, 1},
           rm[2] = {64, 1}, odd[2] = {95, 63};
    for (int c = 0; c < 9; c++)
      if (c != 0) {
        copy_case(ctx, TYPES[c / 3], TYPES[c % 3], shape, 2, ss, 96 * 64, ds,
                  96 * 65, "transpose [96,64]", (uint32_t)c + 50);
        copy_case(ctx, TYPES[c / 3], TYPES[c % 3], shape, 2, ss, 96 * 64, rm,
                  96 * 64, "transpose [96,64] row-major", (uint32_t)c + 60);
        copy_case(ctx, TYPES[c / 3], TYPES[c % 3], odd, 2, ss, 96 * 64,
                  (size_t[]){63, 1}, 95 * 63, "transpose [95,63] row-major",
                  (uint32_t)c + 70);
      }
    wgc_destroy(ctx);
  }
  case_end();
}

/* The CPU backend's pieces of a typed copy give the whole call's bits. */
TEST(types_copy_strided_cpu_split) {
  if (!case_begin("types copy_strided split[cpu] pieces"))
    return;
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  size_t rows = 300, cols = 97, n = rows * cols;
  uint16_t *src = xmalloc(2 * n + 2), *whole = xmalloc(2 * n + 2),
           *part = xmalloc(2 * n + 2);
  fill_bits((uint8_t *)(src + 1), WGC_DTYPE_F16, n, 3);
  for (int same = 0; same < 2; same++) {
    cpu_work w = {.kind = CPU_WORK_COPY_STRIDED};
    w.u.copy_strided = (wgc_copy_strided_args){
        .rank = 2,
        .count = n,
        .shape = {rows, cols},
        .stride_dst = {cols, 1},
        .stride_src = {1, rows},
        .src = {.mem = src, .offset = 2},
        .dst = {.mem = whole, .offset = 2},
        .src_type = WGC_DTYPE_F16,
        .dst_type = same ? WGC_DTYPE_F16 : WGC_DTYPE_BF16,
        .fn = "test"};
    CHECK_STATUS(cpu_work_run(ctx, &w), WGC_OK);
    size_t most = check_pieces(ctx, &w, &w.u.copy_strided.dst, part, whole, n);
    CHECK(most >= 2, "at most %zu pieces", most);
  }
  free(src), free(whole), free(part);
  case_end();
}

TEST(types_copy_strided_rejected) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types copy_strided rejected"))
      continue;
    float init[256];
    for (int i = 0; i < 256; i++)
      init[i] = sentinel();
    wgc_ptr s = dev_from(ctx, init, 256), d = dev_from(ctx, init, 256);
    const wgc_dtype F32 = WGC_DTYPE_F32, F16 = WGC_DTYPE_F16,
                    BF16 = WGC_DTYPE_BF16;
    const char *fn = "wgc_copy_strided_ex";
    size_t sh[2] = {4, 8}, st[2] = {8, 1}, tr[2] = {1, 4};
    /* the well-formed call still runs: f16 2 bytes into a word */
    CHECK_OK(ctx,
             wgc_copy_strided_ex(ctx, d + 2, F16, st, s + 2, F16, tr, sh, 2));
    CHECK_OK(ctx, wgc_synchronize(ctx));
    dev_write(ctx, d, init, 256);
    CHECK_REJECTED(
        ctx, wgc_copy_strided_ex(ctx, d, WGC_DTYPE_I32, st, s, F32, st, sh, 2),
        fn, "dst_type");
    CHECK(strstr(wgc_last_error(ctx), "i32"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(
        ctx, wgc_copy_strided_ex(ctx, d, F16, st, s, WGC_DTYPE_Q8_0, tr, sh, 2),
        fn, "src_type");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(
        ctx, wgc_copy_strided_ex(ctx, d, F16, st, s, (wgc_dtype)17, st, sh, 2),
        fn, "src_type");
    /* misaligned 2-byte operands; a span past the allocation in 2-byte
     * elements; overlap */
    CHECK_REJECTED(ctx,
                   wgc_copy_strided_ex(ctx, d + 1, BF16, st, s, F16, st, sh, 2),
                   fn, "dst");
    CHECK(strstr(wgc_last_error(ctx), "bf16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   wgc_copy_strided_ex(ctx, d, F32, st, s + 3, F16, tr, sh, 2),
                   fn, "src");
    CHECK_REJECTED(
        ctx, wgc_copy_strided_ex(ctx, d + 1000, F16, st, s, F16, st, sh, 2), fn,
        "dst");
    CHECK_REJECTED(
        ctx, wgc_copy_strided_ex(ctx, s + 40, F16, st, s, BF16, st, sh, 2), fn,
        "dst|src");
    CHECK_DEVICE_EQUALS(ctx, d, init, 256, "dst");
    CHECK_DEVICE_EQUALS(ctx, s, init, 256, "src");
    dev_free(ctx, s);
    dev_free(ctx, d);
    case_end();
  }
}

/* ---- rotary --------------------------------------------------------------
 */

/* One typed rotary call: x of type it, output ot, caches ct; [2, 3, 2,
 * head_dim] with rotary_dim 8 (the rest copied); position ids with one
 * outside the cache, or caches per (batch, seq). x holds a NaN, 70000
 * (f16 inf; an f16 overflow where cos is 1 and sin 0: row 0 of the
 * caches), an f16 subnormal and, past rotary_dim, a NaN with a payload. */
static double rotary_case(wgc_context *ctx, wgc_dtype it, wgc_dtype ot,
                          wgc_dtype ct, int variant, size_t head_dim,
                          bool in_place) {
  wgc_rotary_desc d = {.batch = 2,
                       .seq = 3,
                       .heads = 2,
                       .head_dim = head_dim,
                       .rotary_dim = 8,
                       .interleaved = variant & 1,
                       .layout =
                           variant & 2 ? WGC_ROTARY_BHSD : WGC_ROTARY_BSHD,
                       .max_positions = 5,
                       .input_type = it,
                       .output_type = ot,
                       .cache_type = ct};
  bool has_pos = variant & 4;
  size_t n = 12 * head_dim, pairs = 6, half = 4;
  size_t crow = has_pos ? d.max_positions : pairs;
  float *x = falloc(n), *cs = falloc(crow * half), *sn = falloc(crow * half);
  fill_uniform(x, n, -3, 3, 7 + (unsigned)variant);
  for (size_t p = 0; p < crow; p++)
    for (size_t k = 0; k < half; k++) {
      double theta = (double)p * pow(10000.0, -2.0 * (double)k / 8.0);
      cs[p * half + k] = (float)cos(theta);
      sn[p * half + k] = (float)sin(theta);
    }
  x[1] = NAN;
  x[head_dim + 1] = 3.5e-6f;
  x[9] = NAN; /* copied: past rotary_dim */
  int32_t pos[6] = {0, 4, 1, 7, 2, -1};
  /* row 0 is (batch 0, seq 0) in both layouts: cache row 0, cos 1, sin 0 */
  x[0] = 70000.0f;
  tbuf in = tbuf_make(ctx, it, x, n);
  tbuf out = in_place ? in : tbuf_make(ctx, ot, NULL, n);
  tbuf tc = tbuf_make(ctx, ct, cs, crow * half);
  tbuf ts = tbuf_make(ctx, ct, sn, crow * half);
  wgc_ptr dp = 0;
  if (has_pos) {
    dp = dev_alloc(ctx, sizeof pos);
    if (dp)
      CHECK_OK(ctx, wgc_upload(ctx, dp, pos, sizeof pos));
  }
  double *xd = dalloc(n), *cd = dalloc(crow * half), *sd = dalloc(crow * half);
  double *want = dalloc(n), *tol = dalloc(n), worst = 0;
  for (size_t i = 0; i < n; i++)
    xd[i] = tbuf_val(&in, i);
  for (size_t i = 0; i < crow * half; i++)
    cd[i] = tbuf_val(&tc, i), sd[i] = tbuf_val(&ts, i);
  ref_rotary(&d, xd, has_pos ? pos : NULL, cd, sd, want, tol);
  char what[128];
  snprintf(what, sizeof what, "rotary %s->%s cache %s hd=%zu %s %s%s%s",
           wgc_dtype_name(it), wgc_dtype_name(ot), wgc_dtype_name(ct), head_dim,
           variant & 2 ? "BHSD" : "BSHD",
           variant & 1 ? "interleaved" : "halves",
           has_pos ? " position_ids" : "", in_place ? " in place" : "");
  if (in.dev && out.dev && tc.dev && ts.dev && (!has_pos || dp)) {
    CHECK_OK(ctx,
             wgc_rotary_embedding(ctx, &d, in.dev + in.off, dp, tc.dev + tc.off,
                                  ts.dev + ts.off, out.dev + out.off));
    worst = check_out_tol(ctx, &out, want, tol, what);
  }
  tbuf_free(ctx, &in);
  if (!in_place)
    tbuf_free(ctx, &out);
  tbuf_free(ctx, &tc);
  tbuf_free(ctx, &ts);
  dev_free(ctx, dp);
  free(x), free(cs), free(sn), free(xd), free(cd), free(sd), free(want),
      free(tol);
  return worst;
}

TEST(types_rotary) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types rotary"))
      continue;
    double worst[3] = {0};
    for (int c = 0; c < 9; c++)
      for (int v = 0; v < 8; v += 1 + c % 2) {
        double e = rotary_case(ctx, TYPES[c / 3], TYPES[c % 3],
                               TYPES[(c + v) % 2], v, 10, false);
        worst[c % 3] = fmax(worst[c % 3], e);
      }
    for (int t = 1; t < 3; t++)
      rotary_case(ctx, TYPES[t], TYPES[t], WGC_DTYPE_F16, 5 + t, 10, true);
    case_note(" worst/bound f32 %.2f f16 %.2f bf16 %.2f", worst[0], worst[1],
              worst[2]);
    case_end();
  }
}

/* Rows longer than a 4 KiB binding: rotated in runs of pairs, the rest
 * converted by windows; caches gathered by position ids from f16. */
TEST(types_rotary_split) {
  if (!case_begin("types rotary split[webgpu] 4 KiB bindings"))
    return;
  wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 4096);
  if (ctx) {
    for (int c = 1; c < 9; c++)
      rotary_case(ctx, TYPES[c / 3], TYPES[c % 3], TYPES[c % 2], c % 8, 1500,
                  false);
    rotary_case(ctx, WGC_DTYPE_BF16, WGC_DTYPE_BF16, WGC_DTYPE_F16, 4, 1500,
                true);
    wgc_destroy(ctx);
  }
  case_end();
}

/* The CPU backend's pieces of a typed rotary call give the whole call's
 * bits: f16 input 2 bytes into a word, bf16 output, f16 caches. */
TEST(types_rotary_cpu_split) {
  if (!case_begin("types rotary split[cpu] pieces"))
    return;
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  size_t b = 2, s = 40, h = 4, hd = 70, half = 32, n = b * s * h * hd;
  float *x = falloc(n), *cs = falloc(b * s * half);
  fill_uniform(x, n, -2, 2, 5);
  fill_uniform(cs, b * s * half, -1, 1, 6);
  uint16_t *xh = xmalloc(2 * n + 2), *ch = xmalloc(2 * b * s * half + 2);
  uint16_t *whole = xmalloc(2 * n + 2), *part = xmalloc(2 * n + 2);
  CHECK_STATUS(wgc_quantize(x, xh + 1, WGC_DTYPE_F16, n), WGC_OK);
  CHECK_STATUS(wgc_quantize(cs, ch + 1, WGC_DTYPE_F16, b * s * half), WGC_OK);
  cpu_work w = {.kind = CPU_WORK_ROTARY};
  w.u.rotary = (wgc_rotary_args){.d = {.batch = b,
                                       .seq = s,
                                       .heads = h,
                                       .head_dim = hd,
                                       .rotary_dim = 2 * half,
                                       .layout = WGC_ROTARY_BHSD,
                                       .input_type = WGC_DTYPE_F16,
                                       .output_type = WGC_DTYPE_BF16,
                                       .cache_type = WGC_DTYPE_F16},
                                 .input = {.mem = xh, .offset = 2},
                                 .cos_cache = {.mem = ch, .offset = 2},
                                 .sin_cache = {.mem = ch, .offset = 2},
                                 .output = {.mem = whole, .offset = 2},
                                 .fn = "test"};
  CHECK_STATUS(cpu_work_run(ctx, &w), WGC_OK);
  size_t most = check_pieces(ctx, &w, &w.u.rotary.output, part, whole, n);
  CHECK(most >= 2, "at most %zu pieces", most);
  free(x), free(cs), free(xh), free(ch), free(whole), free(part);
  case_end();
}

TEST(types_rotary_rejected) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types rotary rejected"))
      continue;
    float init[256];
    for (int i = 0; i < 256; i++)
      init[i] = sentinel();
    wgc_ptr x = dev_from(ctx, init, 256), o = dev_from(ctx, init, 256),
            c = dev_from(ctx, init, 256);
    const char *fn = "wgc_rotary_embedding";
    wgc_rotary_desc d = {.batch = 1,
                         .seq = 4,
                         .heads = 2,
                         .head_dim = 8,
                         .input_type = WGC_DTYPE_F16,
                         .output_type = WGC_DTYPE_BF16,
                         .cache_type = WGC_DTYPE_F16};
    CHECK_OK(ctx, wgc_rotary_embedding(ctx, &d, x + 2, 0, c + 2, c + 2, o + 2));
    CHECK_OK(ctx, wgc_synchronize(ctx));
    dev_write(ctx, o, init, 256);
    wgc_rotary_desc e = d;
    e.input_type = WGC_DTYPE_I32;
    CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &e, x, 0, c, c, o), fn,
                   "d->input_type");
    CHECK(strstr(wgc_last_error(ctx), "i32"), "names the type: %s",
          wgc_last_error(ctx));
    e = d, e.output_type = WGC_DTYPE_Q8_0;
    CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &e, x, 0, c, c, o), fn,
                   "d->output_type");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    e = d, e.cache_type = WGC_DTYPE_BF16;
    CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &e, x, 0, c, c, o), fn,
                   "d->cache_type");
    CHECK(strstr(wgc_last_error(ctx), "bf16"), "names the type: %s",
          wgc_last_error(ctx));
    e = d, e.cache_type = (wgc_dtype)17;
    CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &e, x, 0, c, c, o), fn,
                   "d->cache_type");
    /* misaligned 2-byte operands; in place across types */
    CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &d, x + 1, 0, c, c, o), fn,
                   "input");
    CHECK(strstr(wgc_last_error(ctx), "f16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &d, x, 0, c + 3, c, o), fn,
                   "cos_cache");
    CHECK_REJECTED(ctx, wgc_rotary_embedding(ctx, &d, x, 0, c, c, x), fn,
                   "output|input");
    CHECK_DEVICE_EQUALS(ctx, o, init, 256, "output");
    CHECK_DEVICE_EQUALS(ctx, x, init, 256, "input");
    dev_free(ctx, x);
    dev_free(ctx, o);
    dev_free(ctx, c);
    case_end();
  }
}
