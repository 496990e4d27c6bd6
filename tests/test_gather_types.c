/* Gather with a typed table and output (wgc_gather_ex) on both backends:
 * every table type (Q8_0/Q4_0 rows dequantized) into every output type,
 * bit for bit against a float64 reference (dtype_ref.c's independent
 * decoders, each value rounded once to the output type); 2-byte operands
 * at odd element offsets, block tables at 2 mod 4 bytes, neighbouring
 * halves and bytes around the output untouched; tables split over
 * several launches by small bindings; and the rejected calls, which
 * write nothing. */
#include "dtype_ref.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD_BYTE 0xA5

static const wgc_dtype DATA_TYPES[] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                       WGC_DTYPE_BF16, WGC_DTYPE_Q8_0,
                                       WGC_DTYPE_Q4_0};
static const wgc_dtype OUT_TYPES[] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                      WGC_DTYPE_BF16};

static bool is_block(wgc_dtype t) { return wgc_dtype_block_size(t) > 1; }

typedef struct gcase {
  const char *name;
  size_t rank, shape[3], axis, n;
} gcase;

/* Byte offsets that are awkward for each type: 2-byte elements at odd
 * element indices, blocks at 2 mod 4 bytes. */
static size_t awkward(wgc_dtype t, size_t f32_off) {
  return t == WGC_DTYPE_F32 ? f32_off : 2 + 4 * (f32_off / 4);
}

/* Whether run_case puts a 2-byte output at a word's start instead. */
static bool output_word_start;

/* Gathers c's table of type dt into an output of type ot; false where a
 * byte differs from the reference. Values include f16 overflow, rounding
 * to f16's largest finite value and an f16 subnormal when the table is
 * f32. */
static void run_case(wgc_context *ctx, const gcase *c, wgc_dtype dt,
                     wgc_dtype ot, unsigned seed) {
  size_t outer = 1, inner = 1, len = c->shape[c->axis], data_n = 1;
  for (size_t d = 0; d < c->rank; d++) {
    data_n *= c->shape[d];
    outer *= d < c->axis ? c->shape[d] : 1;
    inner *= d > c->axis ? c->shape[d] : 1;
  }
  size_t out_n = outer * c->n * inner;
  size_t doff = awkward(dt, 8), ooff = output_word_start ? 4 : awkward(ot, 4);
  size_t dbytes = (doff + dref_bytes(dt, data_n) + 8) & ~(size_t)3;
  size_t obytes = (ooff + dref_bytes(ot, out_n) + 8) & ~(size_t)3;
  uint8_t *data = xmalloc(dbytes), *want = xmalloc(obytes),
          *got = xmalloc(obytes);
  memset(data, GUARD_BYTE, dbytes);
  memset(want, GUARD_BYTE, obytes);
  float *x = falloc(data_n);
  fill_uniform(x, data_n, -1.0f, 1.0f, seed);
  if (dt == WGC_DTYPE_F32 && data_n >= 4) {
    x[0] = 70000.0f;  /* f16 infinity */
    x[1] = -65519.0f; /* rounds to f16's -65504 */
    x[2] = 1e-6f;     /* f16 subnormal */
    x[3] = 3.0e38f;   /* bf16 rounds it up to infinity */
  }
  CHECK_STATUS(wgc_quantize(x, data + doff, dt, data_n), WGC_OK);
  int32_t *idx = xmalloc(4 * c->n + 4);
  unsigned r = seed * 2654435761u + 1;
  for (size_t j = 0; j < c->n; j++) {
    r ^= r << 13, r ^= r >> 17, r ^= r << 5;
    /* mostly inside, some negative, some outside on either side */
    idx[j] = (int32_t)(r % (2 * len + 4)) - (int32_t)len - 2;
  }
  if (c->n > 1)
    idx[0] = 0, idx[1] = -1;
  size_t eb = dref_bytes(ot, 1);
  for (size_t o = 0; o < outer; o++)
    for (size_t j = 0; j < c->n; j++) {
      int64_t k = idx[j] < 0 ? (int64_t)len + idx[j] : idx[j];
      bool inside = k >= 0 && k < (int64_t)len;
      for (size_t e = 0; e < inner; e++) {
        uint8_t *w = want + ooff + ((o * c->n + j) * inner + e) * eb;
        if (!inside) {
          memset(w, 0, eb);
          continue;
        }
        dref_val v =
            dref_load(data + doff, dt, (o * len + (size_t)k) * inner + e);
        if (ot == WGC_DTYPE_F32) {
          uint32_t b = dref_enc_f32(v);
          memcpy(w, &b, 4);
        } else {
          uint16_t h = dref_enc16(v, ot == WGC_DTYPE_BF16);
          memcpy(w, &h, 2);
        }
      }
    }
  wgc_ptr dp = dev_alloc(ctx, dbytes), op = dev_alloc(ctx, obytes),
          ip = dev_alloc(ctx, 4 * c->n + 4);
  memset(got, GUARD_BYTE, obytes);
  if (dp && op && ip && dev_write(ctx, dp, (const float *)data, dbytes / 4) &&
      dev_write(ctx, op, (const float *)got, obytes / 4)) {
    CHECK_OK(ctx, wgc_upload(ctx, ip, idx, 4 * c->n));
    CHECK_OK(ctx, wgc_gather_ex(ctx, dp + doff, dt, c->shape, c->rank, c->axis,
                                ip, c->n, op + ooff, ot));
    if (dev_read(ctx, (float *)got, op, obytes / 4))
      for (size_t i = 0; i < obytes; i++)
        if (got[i] != want[i]) {
          bool in = i >= ooff && i < ooff + out_n * eb;
          CHECK(false, "%s byte %zu (element %zu) is 0x%02x, want 0x%02x",
                in ? "output" : "guard", i, in ? (i - ooff) / eb : 0, got[i],
                want[i]);
          break;
        }
  }
  dev_free(ctx, dp);
  dev_free(ctx, op);
  dev_free(ctx, ip);
  free(data);
  free(want);
  free(got);
  free(x);
  free(idx);
}

/* Rows of whole blocks for every type; a last-axis gather (single
 * elements, neighbouring 2-byte outputs from different invocations) for
 * the scalar types. */
static const gcase BLOCK_CASES[] = {
    {"embedding [40,64] axis 0", 2, {40, 64}, 0, 13},
    {"[3,7,96] axis 1", 3, {3, 7, 96}, 1, 9},
    {"[2,5,64] axis 1", 3, {2, 5, 64}, 1, 4},
};
static const gcase SCALAR_CASES[] = {
    {"[5,37] axis 1", 2, {5, 37}, 1, 11},
    {"[9,3,5] axis 0", 3, {9, 3, 5}, 0, 7},
};

TEST(gather_types) {
  for (int bi = 0; bi < 2; bi++)
    for (size_t id = 0; id < 5; id++)
      for (size_t io = 0; io < 3; io++) {
        wgc_dtype dt = DATA_TYPES[id], ot = OUT_TYPES[io];
        wgc_context *ctx;
        if (!backend_case(bi, &ctx, "gather types data=%s output=%s",
                          wgc_dtype_name(dt), wgc_dtype_name(ot)))
          continue;
        unsigned seed = (unsigned)(id * 10 + io) * 7 + 1;
        for (size_t i = 0; i < sizeof BLOCK_CASES / sizeof *BLOCK_CASES; i++)
          run_case(ctx, &BLOCK_CASES[i], dt, ot, seed + (unsigned)i);
        if (!is_block(dt))
          for (size_t i = 0; i < sizeof SCALAR_CASES / sizeof *SCALAR_CASES;
               i++)
            run_case(ctx, &SCALAR_CASES[i], dt, ot, seed + 5 + (unsigned)i);
        case_end();
      }
}

/* 2-byte outputs from a word's start (stored by whole words on WebGPU
 * where a launch's outputs are contiguous), on both backends and with 4
 * KiB bindings (launches over the same outputs, or split along the
 * indices, whose words they share). */
TEST(gather_types_word_start) {
  static const gcase split[] = {
      {"table [300,64] axis 0", 2, {300, 64}, 0, 21},
      {"[3,40,96] axis 1", 3, {3, 40, 96}, 1, 17},
      {"[5,2001] axis 1", 2, {5, 2001}, 1, 1501},
  };
  output_word_start = true;
  for (int bi = 0; bi < 3; bi++) {
    wgc_context *ctx;
    if (bi < 2 ? !backend_case(bi, &ctx, "gather types from a word's start")
               : !case_begin("gather types from a word's start[webgpu] 4 KiB "
                             "bindings"))
      continue;
    if (bi == 2 && !(ctx = new_ctx(WGC_BACKEND_WEBGPU, 4096))) {
      case_end();
      continue;
    }
    for (size_t io = 1; io < 3; io++)
      for (size_t id = 0; id < 3; id++) {
        unsigned seed = (unsigned)(id * 3 + io) * 5 + 2;
        if (bi == 2) {
          for (size_t i = 0; i < sizeof split / sizeof *split; i++)
            run_case(ctx, &split[i], DATA_TYPES[id], OUT_TYPES[io],
                     seed + (unsigned)i);
          continue;
        }
        for (size_t i = 0; i < sizeof BLOCK_CASES / sizeof *BLOCK_CASES; i++)
          run_case(ctx, &BLOCK_CASES[i], DATA_TYPES[id], OUT_TYPES[io],
                   seed + (unsigned)i);
        for (size_t i = 0; i < sizeof SCALAR_CASES / sizeof *SCALAR_CASES; i++)
          run_case(ctx, &SCALAR_CASES[i], DATA_TYPES[id], OUT_TYPES[io],
                   seed + 5 + (unsigned)i);
      }
    if (bi == 2)
      wgc_destroy(ctx);
    case_end();
  }
  output_word_start = false;
}

/* A table beyond one binding: gathered by several launches over the same
 * outputs, each writing its rows' halves of shared words; rows beyond one
 * binding split at columns inside a block. */
TEST(gather_types_split) {
  static const gcase cases[] = {
      {"table [300,64] axis 0", 2, {300, 64}, 0, 21},
      {"[3,40,96] axis 1", 3, {3, 40, 96}, 1, 17},
      /* rows beyond a binding: split along them, mid-block */
      {"rows [3,4000] axis 0", 2, {3, 4000}, 0, 4},
  };
  for (size_t id = 0; id < 5; id++) {
    char name[96];
    snprintf(name, sizeof name, "gather types split data=%s",
             wgc_dtype_name(DATA_TYPES[id]));
    if (!case_begin(name))
      continue;
    wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 4096);
    if (ctx) {
      for (size_t i = 0; i < 3; i++)
        for (size_t io = 1; io < 3; io++)
          run_case(ctx, &cases[i], DATA_TYPES[id], OUT_TYPES[io],
                   (unsigned)(id * 3 + i * 5 + io));
      wgc_destroy(ctx);
    }
    case_end();
  }
}

TEST(gather_types_rejected) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "gather types rejected"))
      continue;
    float init[1024];
    for (int i = 0; i < 1024; i++)
      init[i] = sentinel();
    int32_t idx[4] = {0, 1, -1, 2};
    wgc_ptr d = dev_from(ctx, init, 1024), o = dev_from(ctx, init, 1024),
            ip = dev_alloc(ctx, 16);
    CHECK_OK(ctx, wgc_upload(ctx, ip, idx, 16));
    const char *fn = "wgc_gather_ex";
    size_t sh[2] = {4, 64}, sh3[3] = {2, 4, 48};
#define GATHER_T(D, DT, SH, R, AX, O, OT)                                      \
  wgc_gather_ex(ctx, D, DT, SH, R, AX, ip, 4, O, OT)
    /* the well-formed calls, then one fault at a time */
    CHECK_OK(ctx, GATHER_T(d, WGC_DTYPE_Q8_0, sh, 2, 0, o + 2, WGC_DTYPE_F16));
    CHECK_OK(ctx, wgc_synchronize(ctx));
    dev_write(ctx, o, init, 1024);
    CHECK_REJECTED(ctx, GATHER_T(d, WGC_DTYPE_I32, sh, 2, 0, o, WGC_DTYPE_F32),
                   fn, "data_type");
    CHECK(strstr(wgc_last_error(ctx), "i32"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, GATHER_T(d, (wgc_dtype)17, sh, 2, 0, o, WGC_DTYPE_F32),
                   fn, "data_type");
    CHECK_REJECTED(ctx, GATHER_T(d, WGC_DTYPE_F16, sh, 2, 0, o, WGC_DTYPE_Q8_0),
                   fn, "output_type");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, GATHER_T(d, WGC_DTYPE_F32, sh, 2, 0, o, WGC_DTYPE_I32),
                   fn, "output_type");
    /* block rows: not whole blocks, or single elements of the last axis */
    CHECK_REJECTED(ctx,
                   GATHER_T(d, WGC_DTYPE_Q4_0, sh3, 3, 1, o, WGC_DTYPE_F32), fn,
                   "data");
    CHECK(strstr(wgc_last_error(ctx), "q4_0"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx, GATHER_T(d, WGC_DTYPE_Q8_0, sh, 2, 1, o, WGC_DTYPE_F32),
                   fn, "data");
    /* misaligned typed operands */
    CHECK_REJECTED(ctx,
                   GATHER_T(d + 1, WGC_DTYPE_F16, sh, 2, 0, o, WGC_DTYPE_F32),
                   fn, "data");
    CHECK(strstr(wgc_last_error(ctx), "f16"), "names the type: %s",
          wgc_last_error(ctx));
    CHECK_REJECTED(ctx,
                   GATHER_T(d + 3, WGC_DTYPE_Q8_0, sh, 2, 0, o, WGC_DTYPE_F32),
                   fn, "data");
    CHECK_REJECTED(ctx,
                   GATHER_T(d, WGC_DTYPE_F32, sh, 2, 0, o + 1, WGC_DTYPE_BF16),
                   fn, "output");
    CHECK(strstr(wgc_last_error(ctx), "bf16"), "names the type: %s",
          wgc_last_error(ctx));
    /* the footprint counts blocks: 4 rows of 2 Q8_0 blocks (272 bytes) */
    CHECK_REJECTED(
        ctx,
        GATHER_T(d + 4096 - 270, WGC_DTYPE_Q8_0, sh, 2, 0, o, WGC_DTYPE_F32),
        fn, "data");
    /* and 4 x 64 f16 outputs (512 bytes) */
    CHECK_REJECTED(
        ctx,
        GATHER_T(d, WGC_DTYPE_Q8_0, sh, 2, 0, o + 4096 - 510, WGC_DTYPE_F16),
        fn, "output");
#undef GATHER_T
    CHECK_DEVICE_EQUALS(ctx, o, init, 1024, "output");
    CHECK_DEVICE_EQUALS(ctx, d, init, 1024, "data");
    dev_free(ctx, d);
    dev_free(ctx, o);
    dev_free(ctx, ip);
    case_end();
  }
}
