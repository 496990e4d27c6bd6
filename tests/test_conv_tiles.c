/* conv2d shapes at the edges of the WebGPU kernels' tiles: output channels
 * per group and output pixels that are not multiples of a register block
 * (16 channels x 8 pixels on CPU adapters, 64 x 64 or 32 x 128 in
 * workgroup memory), blocks whose pixels span several images, groups on
 * either side of the 8-channel switch from the direct kernel, pointwise
 * convs (plain, strided, padded, grouped), and a filter long enough that
 * its taps split into ranges that add up. Each output is checked against a
 * float64 reference on both backends, and nothing beside the output may change.
 */
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 5 /* sentinel elements on each side of the output */

typedef struct tile_case {
  wgc_conv2d_desc d;
  bool bias;
} tile_case;

static double max_abs(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    m = fmax(m, fabs((double)x[i]));
  return m;
}

static void run_tile_case(int bi, const tile_case *tc) {
  const wgc_conv2d_desc *d = &tc->d;
  size_t p = 0, q = 0;
  CHECK(ref_conv2d_size(d, &p, &q), "bad test shape");
  wgc_context *ctx;
  if (!backend_case(
          bi, &ctx,
          "conv_tiles n=%zu c=%zu %zux%zu k=%zu %zux%zu stride=%zux%zu "
          "pad=%zux%zu dil=%zux%zu groups=%zu%s",
          d->n, d->c, d->h, d->w, d->k, d->r, d->s, d->stride_h, d->stride_w,
          d->pad_h, d->pad_w, d->dilation_h, d->dilation_w, d->groups,
          tc->bias ? " bias" : ""))
    return;
  size_t g = d->groups ? d->groups : 1;
  size_t nx = d->n * d->c * d->h * d->w;
  size_t nf = d->k * (d->c / g) * d->r * d->s;
  size_t ny = d->n * d->k * p * q, total = ny + 2 * GUARD;
  float *x = falloc(nx), *f = falloc(nf), *b = falloc(d->k);
  float *y = falloc(total), *got = falloc(total);
  unsigned seed = 71;
  for (size_t i = 0; i < nx; i++)
    x[i] = (float)((seed = seed * 1103515245u + 12345u) >> 8) / 16777216.0f *
               2.0f -
           1.0f;
  for (size_t i = 0; i < nf; i++)
    f[i] = (float)((seed = seed * 1103515245u + 12345u) >> 8) / 16777216.0f *
               2.0f -
           1.0f;
  for (size_t i = 0; i < d->k; i++)
    b[i] = (float)i * 0.25f - 2.0f;
  for (size_t i = 0; i < total; i++)
    y[i] = sentinel(); /* every output element must be written */
  wgc_ptr dx = dev_from(ctx, x, nx), df = dev_from(ctx, f, nf);
  wgc_ptr db = tc->bias ? dev_from(ctx, b, d->k) : 0;
  wgc_ptr dy = dev_from(ctx, y, total);
  if (dx && df && dy && (db || !tc->bias)) {
    CHECK_OK(ctx, wgc_conv2d(ctx, d, dx, df, db, at(dy, GUARD)));
    if (dev_read(ctx, got, dy, total)) {
      double *want = dalloc(ny);
      ref_conv2d(d, x, f, tc->bias ? b : NULL, want);
      double K = (double)(d->c / g * d->r * d->s);
      double bound = 1e-5 * K * max_abs(x, nx) * max_abs(f, nf) +
                     (tc->bias ? 1e-6 * max_abs(b, d->k) : 0);
      CHECK_CLOSE(bi ? "conv2d_tiles[webgpu]" : "conv2d_tiles[cpu]", NULL,
                  got + GUARD, want, ny, 0, bound);
      for (size_t i = 0; i < GUARD; i++) {
        CHECK(memcmp(&got[i], &y[i], 4) == 0,
              "element %zu before the output "
              "changed",
              GUARD - i);
        CHECK(memcmp(&got[GUARD + ny + i], &y[GUARD + ny + i], 4) == 0,
              "element %zu after the output changed", i);
      }
      free(want);
    }
  }
  dev_free(ctx, dx);
  dev_free(ctx, df);
  dev_free(ctx, db);
  dev_free(ctx, dy);
  free(x);
  free(f);
  free(b);
  free(y);
  free(got);
  case_end();
}

#define C(...)                                                                 \
  (wgc_conv2d_desc) { __VA_ARGS__ }

TEST(conv_tiles) {
  static const tile_case cases[] = {
      /* 16 channels, 35 pixels per image over two images */
      {C(.n = 2, .c = 5, .h = 5, .w = 7, .k = 16, .r = 3, .s = 3, .pad_h = 1,
         .pad_w = 1),
       true},
      /* 17 channels: one full channel block and one of a single channel;
       * stride 2 */
      {C(.n = 3, .c = 4, .h = 9, .w = 9, .k = 17, .r = 3, .s = 3, .stride_h = 2,
         .stride_w = 2, .pad_h = 1, .pad_w = 1),
       true},
      /* 4 pixels per image: each block of 8 pixels spans images */
      {C(.n = 5, .c = 3, .h = 2, .w = 2, .k = 24, .r = 3, .s = 3, .pad_h = 1,
         .pad_w = 1),
       true},
      /* groups of 20, 15, 8 and 7 channels */
      {C(.n = 1, .c = 6, .h = 11, .w = 10, .k = 40, .r = 3, .s = 3,
         .stride_h = 2, .stride_w = 2, .pad_h = 2, .pad_w = 2, .dilation_h = 2,
         .dilation_w = 2, .groups = 2),
       false},
      {C(.n = 2, .c = 9, .h = 7, .w = 6, .k = 45, .r = 3, .s = 3, .pad_h = 1,
         .pad_w = 1, .groups = 3),
       true},
      {C(.n = 2, .c = 6, .h = 6, .w = 9, .k = 16, .r = 3, .s = 3, .pad_h = 1,
         .pad_w = 1, .groups = 2),
       true},
      {C(.n = 1, .c = 4, .h = 7, .w = 5, .k = 14, .r = 2, .s = 3, .pad_h = 1,
         .groups = 2),
       false},
      /* a 5x3 filter with different strides and dilations per direction */
      {C(.n = 2, .c = 3, .h = 14, .w = 13, .k = 33, .r = 5, .s = 3,
         .stride_h = 1, .stride_w = 2, .pad_h = 2, .pad_w = 1, .dilation_h = 1,
         .dilation_w = 2),
       true},
      /* long sum: 64 channels of 3x3 taps */
      {C(.n = 1, .c = 64, .h = 6, .w = 7, .k = 32, .r = 3, .s = 3, .pad_h = 1,
         .pad_w = 1),
       false},
      /* pointwise: odd channels and pixels, batch 3 */
      {C(.n = 3, .c = 5, .h = 7, .w = 9, .k = 19, .r = 1, .s = 1), true},
      {C(.n = 2, .c = 1, .h = 3, .w = 5, .k = 3, .r = 1, .s = 1), true},
      {C(.n = 1, .c = 70, .h = 9, .w = 9, .k = 130, .r = 1, .s = 1), false},
      /* pointwise, strided, padded, grouped */
      {C(.n = 2, .c = 8, .h = 9, .w = 9, .k = 20, .r = 1, .s = 1, .stride_h = 2,
         .stride_w = 2),
       true},
      {C(.n = 1, .c = 8, .h = 5, .w = 6, .k = 18, .r = 1, .s = 1, .pad_h = 1,
         .pad_w = 1),
       true},
      {C(.n = 2, .c = 12, .h = 5, .w = 5, .k = 48, .r = 1, .s = 1, .groups = 3),
       true},
      /* 3700 * 9 taps: beyond a CPU adapter's loop budget per invocation,
       * so tap ranges add up */
      {C(.n = 1, .c = 3700, .h = 3, .w = 3, .k = 17, .r = 3, .s = 3, .pad_h = 1,
         .pad_w = 1),
       true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int bi = 0; bi < 2; bi++)
      run_tile_case(bi, &cases[i]);
}
