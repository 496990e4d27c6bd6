/* 2-D pooling against a float64 loop of ONNX's MaxPool / AveragePool
 * (ceil_mode 0) on both backends: strides, padding, dilation, both AVG
 * divisors, windows with no position inside the input, NaN and
 * infinities, windows beyond the loop budget of CPU adapters, 4 KiB
 * binding windows (runs of rows, of columns, chunks of window rows),
 * input and output packed in one allocation, the CPU backend's pieces, and
 * rejected arguments. */
#include "ops_ref.h"
#include "util.h"

#include "cpu/work.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 3

typedef enum fill_kind { FILL_UNIFORM, FILL_SPECIAL, FILL_TIES } fill_kind;

static void fill_input(float *x, size_t n, fill_kind kind, unsigned seed) {
  fill_uniform(x, n, -2.0f, 2.0f, seed);
  if (kind == FILL_SPECIAL)
    for (size_t i = 0; i < n; i++) {
      size_t h = (i * 2654435761u + seed) % 97;
      if (h == 0)
        x[i] = NAN;
      else if (h == 1)
        x[i] = INFINITY;
      else if (h == 2)
        x[i] = -INFINITY;
    }
  if (kind == FILL_TIES) /* few distinct values: many ties, -0 and +0 */
    for (size_t i = 0; i < n; i++)
      x[i] = (float)((long)(x[i] * 2.0f)) * 0.5f + (i % 5 == 0 ? -0.0f : 0.0f);
}

/* Runs d on ctx (input and output apart, or packed in one allocation with
 * a gap) and checks the output against the reference, guards included. */
static void run_case(wgc_context *ctx, const char *key,
                     const wgc_pool2d_desc *d, fill_kind kind, bool packed) {
  size_t p, q;
  ref_pool2d_size(d, &p, &q);
  size_t nx = d->n * d->c * d->h * d->w, ny = d->n * d->c * p * q;
  size_t total = ny + 2 * GUARD;
  float *x = falloc(nx + 1), *y = falloc(total), *got = falloc(total);
  fill_input(x, nx, kind, (unsigned)(nx * 31 + ny));
  for (size_t i = 0; i < total; i++)
    y[i] = sentinel();
  wgc_ptr dx = 0, dy = 0, both = 0;
  if (packed) {
    /* [input][7 floats][guards + output + guards] */
    float *all = falloc(nx + 7 + total);
    memcpy(all, x, nx * sizeof *x);
    memcpy(all + nx + 7, y, total * sizeof *y);
    both = dev_from(ctx, all, nx + 7 + total);
    dx = both;
    dy = both ? at(both, nx + 7) : 0;
    free(all);
  } else {
    dx = dev_from(ctx, x, nx + 1);
    dy = dev_from(ctx, y, total);
  }
  if (dx && dy) {
    CHECK_OK(ctx, wgc_pool2d(ctx, d, dx, at(dy, GUARD)));
    if (dev_read(ctx, got, dy, total)) {
      double *want = dalloc(ny), *tol = dalloc(ny);
      ref_pool2d(d, x, want, tol, NULL);
      double worst = check_close_at(__FILE__, __LINE__, key, NULL, got + GUARD,
                                    want, ny, 0, 0, tol);
      case_note(" err/bound %.2g", worst);
      for (size_t g = 0; g < GUARD; g++)
        CHECK(same_bits(got[g], y[g]) &&
                  same_bits(got[total - 1 - g], y[total - 1 - g]),
              "a guard element changed");
      free(want);
      free(tol);
    }
  }
  if (packed) {
    dev_free(ctx, both);
  } else {
    dev_free(ctx, dx);
    dev_free(ctx, dy);
  }
  free(x);
  free(y);
  free(got);
}

static const char *mode_name(const wgc_pool2d_desc *d) {
  return d->mode == WGC_POOL_MAX ? "max"
         : d->count_include_pad  ? "avg+pad"
                                 : "avg";
}

static void describe(char *buf, size_t size, const wgc_pool2d_desc *d) {
  snprintf(buf, size,
           "%s [%zu,%zu,%zu,%zu] win %zux%zu stride %zux%zu pad %zux%zu "
           "dil %zux%zu",
           mode_name(d), d->n, d->c, d->h, d->w, d->r, d->s, d->stride_h,
           d->stride_w, d->pad_h, d->pad_w, d->dilation_h, d->dilation_w);
}

typedef struct shape {
  size_t n, c, h, w, r, s, sh, sw, ph, pw, dh, dw;
} shape;

static const shape SHAPES[] = {
    {1, 1, 5, 5, 2, 2, 2, 2, 0, 0, 0, 0},         /* 2x2 stride 2 */
    {2, 3, 7, 9, 3, 3, 2, 2, 1, 1, 0, 0},         /* ResNet-stem-like */
    {1, 2, 10, 8, 3, 2, 1, 3, 1, 0, 2, 3},        /* strides, dilation */
    {1, 1, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0},         /* global */
    {1, 1, 1, 9, 1, 5, 0, 0, 0, 2, 0, 0},         /* one row, padded */
    {1, 1, 2, 2, 2, 2, 0, 0, 4, 4, 5, 5},         /* windows with no input */
    {1, 2, 0, 3, 1, 2, 0, 0, 1, 1, 0, 0},         /* an empty input, padded */
    {1, 4, 23, 19, 3, 3, 2, 1, 1, 1, 1, 1},       /* odd sizes */
    {1, 1, 200, 200, 200, 200, 0, 0, 0, 0, 0, 0}, /* beyond a loop budget */
    {1, 1, 64, 600, 60, 600, 4, 1, 0, 0, 1, 1},   /* long rows and windows */
};

static wgc_pool2d_desc desc_of(const shape *s, int mode) {
  return (wgc_pool2d_desc){.n = s->n,
                           .c = s->c,
                           .h = s->h,
                           .w = s->w,
                           .r = s->r,
                           .s = s->s,
                           .stride_h = s->sh,
                           .stride_w = s->sw,
                           .pad_h = s->ph,
                           .pad_w = s->pw,
                           .dilation_h = s->dh,
                           .dilation_w = s->dw,
                           .mode = mode ? WGC_POOL_AVG : WGC_POOL_MAX,
                           .count_include_pad = mode == 2};
}

TEST(pool2d) {
  for (size_t si = 0; si < sizeof SHAPES / sizeof *SHAPES; si++)
    for (int mode = 0; mode < 3; mode++)
      for (int bi = 0; bi < 2; bi++) {
        wgc_pool2d_desc d = desc_of(&SHAPES[si], mode);
        fill_kind kind = si % 3 == 1   ? FILL_SPECIAL
                         : si % 3 == 2 ? FILL_TIES
                                       : FILL_UNIFORM;
        char desc[160];
        describe(desc, sizeof desc, &d);
        wgc_context *ctx;
        if (!backend_case(bi, &ctx, "pool2d %s", desc))
          continue;
        char key[32];
        snprintf(key, sizeof key, "pool2d[%s]",
                 backend_label(test_backends[bi]));
        run_case(ctx, key, &d, kind, false);
        case_end();
      }
}

/* Every element NaN, +inf or -inf in turn, in a 3x3 window. */
TEST(pool2d_special_values) {
  static const float values[] = {NAN, INFINITY, -INFINITY};
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "pool2d special values"))
      continue;
    for (int v = 0; v < 3; v++)
      for (int mode = 0; mode < 2; mode++) {
        wgc_pool2d_desc d = {.n = 1,
                             .c = 1,
                             .h = 6,
                             .w = 6,
                             .r = 3,
                             .s = 3,
                             .stride_h = 3,
                             .stride_w = 3,
                             .mode = mode ? WGC_POOL_AVG : WGC_POOL_MAX};
        float x[36];
        for (int i = 0; i < 36; i++)
          x[i] = (float)(i % 7) - 3.0f;
        x[7] = values[v];                 /* window (0, 0) */
        x[27] = values[v], x[34] = -3.0f; /* window (1, 1) */
        if (v == 1)
          x[28] = -INFINITY; /* +inf and -inf in one window */
        wgc_ptr dx = dev_from(ctx, x, 36), dy = dev_alloc(ctx, 16);
        float got[4];
        double want[4], tol[4];
        if (dx && dy) {
          CHECK_OK(ctx, wgc_pool2d(ctx, &d, dx, dy));
          if (dev_read(ctx, got, dy, 4)) {
            ref_pool2d(&d, x, want, tol, NULL);
            check_close_at(__FILE__, __LINE__, "pool2d special", NULL, got,
                           want, 4, 0, 0, tol);
          }
        }
        dev_free(ctx, dx);
        dev_free(ctx, dy);
      }
    case_end();
  }
}

/* 4 KiB binding windows: planes beyond a window (runs of rows), rows beyond
 * it (runs of columns), one output's input beyond it (chunks of window
 * rows and columns), and input and output packed in one allocation. */
TEST(pool2d_small_bindings) {
  static const shape shapes[] = {
      {1, 2, 30, 40, 3, 3, 1, 1, 1, 1, 0, 0},   /* 1200 floats a plane */
      {1, 1, 3, 1500, 2, 3, 1, 2, 0, 1, 0, 0},  /* rows of 1500 */
      {1, 1, 40, 100, 20, 3, 1, 1, 2, 1, 2, 1}, /* 40 rows of 100 a window */
      {2, 1, 5, 2000, 3, 700, 1, 50, 1, 0, 1, 2},
  };
  wgc_context *ctx = NULL;
  for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
    for (int mode = 0; mode < 3; mode++)
      for (int packed = 0; packed < 2; packed++) {
        wgc_pool2d_desc d = desc_of(&shapes[si], mode);
        char desc[160];
        describe(desc, sizeof desc, &d);
        if (!case_begin("pool2d[webgpu, 4 KiB bindings%s] %s",
                        packed ? ", packed" : "", desc))
          continue;
        if (!ctx)
          ctx = new_ctx(WGC_BACKEND_WEBGPU, 4096);
        if (ctx)
          run_case(ctx, "pool2d[small bindings]", &d, FILL_SPECIAL, packed);
        case_end();
      }
  if (ctx)
    wgc_destroy(ctx);
}

/* Pieces of the CPU work (cpu/split.h) give the whole call's result. */
TEST(pool2d_cpu_split) {
  if (!case_begin("pool2d_split[cpu] [2,3,9,11] 3x3 stride 2 pad 1 avg"))
    return;
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  wgc_pool2d_desc d = {.n = 2,
                       .c = 3,
                       .h = 9,
                       .w = 11,
                       .r = 3,
                       .s = 3,
                       .stride_h = 2,
                       .stride_w = 2,
                       .pad_h = 1,
                       .pad_w = 1,
                       .dilation_h = 1,
                       .dilation_w = 1,
                       .mode = WGC_POOL_AVG};
  size_t p = 0, q = 0;
  CHECK_OK(NULL, wgc_pool2d_output_size(&d, &p, &q));
  size_t nx = 2 * 3 * 9 * 11, ny = 2 * 3 * p * q;
  float *x = falloc(nx), *whole = falloc(ny), *part = falloc(ny);
  fill_uniform(x, nx, -1, 1, 5);
  cpu_work w = {.kind = CPU_WORK_POOL2D};
  w.u.pool2d = (wgc_pool2d_args){.d = d,
                                 .p = p,
                                 .q = q,
                                 .input = {.mem = x},
                                 .output = {.mem = whole},
                                 .fn = "test"};
  if (ctx) {
    CHECK_STATUS(cpu_work_run(ctx, &w), WGC_OK);
    w.u.pool2d.output = (wgc_ref){.mem = part};
    cpu_split sp;
    CHECK_STATUS(cpu_split_plan(&w, 50, &sp), WGC_OK);
    CHECK(sp.pieces > 5, "only %zu pieces", sp.pieces);
    for (size_t i = 0; i < sp.pieces; i++)
      CHECK_STATUS(cpu_split_run(ctx, &w, &sp, i), WGC_OK);
    cpu_split_release(&sp);
    CHECK(!memcmp(part, whole, ny * sizeof *part), "pieces differ");
  }
  free(x);
  free(whole);
  free(part);
  case_end();
}

TEST(pool2d_invalid) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "pool2d invalid arguments"))
      continue;
    const char *F = "wgc_pool2d";
    float h[256];
    fill_ramp(h, 256, 1);
    wgc_ptr x = dev_from(ctx, h, 256), y = dev_from(ctx, h, 256);
    /* [1, 2, 6, 8] -> 3x3 stride 2 pad 1: [1, 2, 3, 4] */
    wgc_pool2d_desc d = {.n = 1,
                         .c = 2,
                         .h = 6,
                         .w = 8,
                         .r = 3,
                         .s = 3,
                         .stride_h = 2,
                         .stride_w = 2,
                         .pad_h = 1,
                         .pad_w = 1};
    if (x && y) {
      size_t p = 0, q = 0;
      CHECK_OK(NULL, wgc_pool2d_output_size(&d, &p, &q));
      CHECK(p == 3 && q == 4, "output size %zux%zu, want 3x4", p, q);
      CHECK_REJECTED(NULL, wgc_pool2d_output_size(&d, NULL, &q),
                     "wgc_pool2d_output_size", "p");
      CHECK_REJECTED(NULL, wgc_pool2d_output_size(NULL, &p, &q),
                     "wgc_pool2d_output_size", "d");
      CHECK_REJECTED(NULL, wgc_pool2d(NULL, &d, x, y), F, "ctx");
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, NULL, x, y), F, "d");
      wgc_pool2d_desc bad = d;
      bad.mode = (wgc_pool_mode)7;
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &bad, x, y), F, "d->mode");
      CHECK_ERROR_VALUE(ctx, "7");
      bad = d;
      bad.r = 0;
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &bad, x, y), F, "d->r");
      bad = d;
      bad.s = 0;
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &bad, x, y), F, "d->s");
      bad = d;
      bad.r = 9; /* 6 + 2 padded rows */
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &bad, x, y), F, "d->r");
      bad = d;
      bad.s = 3;
      bad.dilation_w = 5; /* spans 11 > 10 */
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &bad, x, y), F, "d->s");
      bad = d;
      bad.pad_h = (size_t)1 << 30; /* padded height beyond 2^31 */
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &bad, x, y), F, "d");
      bad = d;
      bad.pad_w = SIZE_MAX / 2; /* overflows */
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &bad, x, y), F, "d");
      bad = d;
      bad.n = (size_t)1 << 20;
      bad.c = (size_t)1 << 10; /* 2^30 planes of 48 */
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &bad, x, y), F, "d");
      bad = d;
      bad.h = 40; /* input of 640 floats */
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &bad, x, y), F, "input");
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &d, x, at(y, 240)), F, "output");
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &d, x, at(x, 10)), F, "output|input");
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &d, wild_address(3), y), F, "input");
      CHECK_REJECTED(ctx, wgc_pool2d(ctx, &d, x + 2, y), F, "input");
      CHECK_DEVICE_EQUALS(ctx, x, h, 256, "input");
      CHECK_DEVICE_EQUALS(ctx, y, h, 256, "output");
      /* an empty output is a no-op, whatever the addresses */
      bad = d;
      bad.c = 0;
      CHECK_OK(ctx, wgc_pool2d(ctx, &bad, 0, 0));
    }
    dev_free(ctx, x);
    dev_free(ctx, y);
    case_end();
  }
}
