/* conv2d on WebGPU with tensors beyond the storage binding limit: contexts
 * whose binding limit is 64 KiB or 4 KiB make single images, filters, output
 * rows and even filter rows exceed one binding, so that the launches split
 * within an image (over output channels, output rows and columns, and tap
 * ranges that accumulate). Each case runs on WebGPU and on the CPU backend
 * and must agree within API.md's conv bound; input and output may lie
 * adjacent in one allocation, and nothing outside the output may change. */
#include "harness.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum layout {
  SEPARATE, /* input, filter, bias, output in their own allocations */
  IN_OUT,   /* one allocation: input, then output right after it */
  OUT_IN    /* one allocation: output, then input right after it */
};

typedef struct split_case {
  size_t limit; /* wgc_options.max_binding_bytes */
  wgc_conv2d_desc d;
  bool bias;
  enum layout layout;
} split_case;

#define GUARD 37 /* floats after the output that must stay untouched */
#define SENTINEL 12345.0f

static float max_abs_of(const float *x, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; i++)
    m = fmaxf(m, fabsf(x[i]));
  return m;
}

/* Runs the conv on ctx; returns the output (ny floats) or NULL. Checks that
 * the input and the guard after the output are unchanged. */
static float *conv_on(wgc_context *ctx, const split_case *sc, const float *x,
                      size_t nx, const float *f, size_t nf, const float *b,
                      size_t ny) {
  const wgc_conv2d_desc *d = &sc->d;
  size_t nxa = nx ? nx : 1; /* c == 0: a valid address all the same */
  size_t total = nxa + ny + GUARD;
  float *init = falloc(total);
  for (size_t i = 0; i < total; i++)
    init[i] = SENTINEL;
  size_t xo = sc->layout == OUT_IN ? ny + GUARD : 0;
  size_t yo = sc->layout == OUT_IN ? 0 : sc->layout == IN_OUT ? nxa : 0;
  wgc_ptr mem = 0, xin = 0, yout = 0;
  if (sc->layout == SEPARATE) {
    xin = dev_from(ctx, x, nxa);
    yout = dev_from(ctx, init, ny + GUARD);
  } else {
    memcpy(init + xo, x, nx * sizeof *x);
    mem = dev_from(ctx, init, total);
    xin = at(mem, xo);
    yout = at(mem, yo);
  }
  wgc_ptr df = dev_from(ctx, f, nf ? nf : 1);
  wgc_ptr db = sc->bias ? dev_from(ctx, b, d->k) : 0;
  float *y = NULL;
  if (xin && yout && df && (db || !sc->bias)) {
    wgc_status s = wgc_conv2d(ctx, d, xin, df, db, yout);
    CHECK(s == WGC_OK, "wgc_conv2d(%s) returned %s: %s", wgc_backend_name(ctx),
          wgc_status_name(s), wgc_last_error(ctx));
    float *all = falloc(ny + GUARD), *xback = falloc(nxa);
    if (s == WGC_OK && dev_read(ctx, all, yout, ny + GUARD) &&
        dev_read(ctx, xback, xin, nxa)) {
      for (size_t i = ny; i < ny + GUARD; i++)
        if (all[i] != SENTINEL) {
          CHECK(false, "%s: guard element %zu after the output changed",
                wgc_backend_name(ctx), i - ny);
          break;
        }
      if (nx && memcmp(xback, x, nx * sizeof *x))
        CHECK(false, "%s: the input changed", wgc_backend_name(ctx));
      y = all;
    } else {
      free(all);
    }
    free(xback);
  }
  if (sc->layout == SEPARATE) {
    dev_free(ctx, xin);
    dev_free(ctx, yout);
  } else {
    dev_free(ctx, mem);
  }
  dev_free(ctx, df);
  dev_free(ctx, db);
  free(init);
  return y;
}

static const char *layout_name(enum layout l) {
  return l == SEPARATE ? "separate" : l == IN_OUT ? "in|out" : "out|in";
}

/* *gpup (a WebGPU context with the case's binding limit) is created by the
 * first case the filter lets run, so that a run of other cases (the
 * CPU-only run under valgrind) starts no adapter. */
static void run_case(wgc_context **gpup, const split_case *sc) {
  const wgc_conv2d_desc *d = &sc->d;
  size_t p = 0, q = 0;
  CHECK_STATUS(wgc_conv2d_output_size(d, &p, &q), WGC_OK);
  size_t g = d->groups ? d->groups : 1;
  size_t nx = d->n * d->c * d->h * d->w;
  size_t nf = d->k * (d->c / g) * d->r * d->s;
  size_t ny = d->n * d->k * p * q;
  if (!case_begin("conv_split[webgpu %zu B bindings] n=%zu c=%zu h=%zu w=%zu "
                  "k=%zu r=%zu s=%zu stride=%zux%zu pad=%zux%zu dil=%zux%zu "
                  "groups=%zu %s %s: image in %zu out %zu filter %zu floats",
                  sc->limit, d->n, d->c, d->h, d->w, d->k, d->r, d->s,
                  d->stride_h, d->stride_w, d->pad_h, d->pad_w, d->dilation_h,
                  d->dilation_w, d->groups, sc->bias ? "bias" : "no-bias",
                  layout_name(sc->layout), d->c * d->h * d->w, d->k * p * q,
                  nf))
    return;
  if (!*gpup)
    *gpup = new_ctx(WGC_BACKEND_WEBGPU, sc->limit);
  wgc_context *gpu = *gpup;
  wgc_context *cpu = test_ctx(WGC_BACKEND_CPU);
  float *x = falloc(nx + 1), *f = falloc(nf + 1), *b = falloc(d->k + 1);
  fill_uniform(x, nx, -1, 1, 31);
  fill_uniform(f, nf, -1, 1, 32);
  fill_uniform(b, d->k, -1, 1, 33);
  if (cpu && gpu) {
    float *want = conv_on(cpu, sc, x, nx, f, nf, b, ny);
    float *got = conv_on(gpu, sc, x, nx, f, nf, b, ny);
    if (want && got) {
      double K = (double)(d->c / g * d->r * d->s);
      double bound = 1e-5 * K * max_abs_of(x, nx) * max_abs_of(f, nf) + 1e-6;
      for (size_t i = 0; i < ny; i++)
        if (!(fabs((double)got[i] - want[i]) <= bound)) {
          CHECK(false, "y[%zu] = %.9g, want %.9g (bound %.3g)", i, got[i],
                want[i], bound);
          break;
        }
    }
    free(want);
    free(got);
  }
  free(x);
  free(f);
  free(b);
  case_end();
}

/* d: n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w, dilation_h,
 * dilation_w, groups; f32 operands */
#define DESC(...)                                                              \
  (wgc_conv2d_desc) { __VA_ARGS__, 0, 0, 0, 0 }
#define KB64 (64 * 1024)
#define KB4 4096

TEST(conv_split) {
  static const split_case cases[] = {
      /* one image's input and output exceed a binding: output rows */
      {KB64, DESC(2, 8, 48, 48, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1), true, SEPARATE},
      /* stride 2, padding 2, dilation 2 */
      {KB64, DESC(1, 16, 40, 40, 24, 3, 3, 2, 2, 2, 2, 2, 2, 1), false,
       SEPARATE},
      /* groups: the output exceeds a binding, groups and rows split */
      {KB64, DESC(1, 16, 36, 36, 64, 3, 3, 1, 1, 1, 1, 1, 1, 4), true,
       SEPARATE},
      /* depthwise (direct kernel) */
      {KB64, DESC(2, 32, 30, 30, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32), false,
       SEPARATE},
      /* depthwise with multiplier 2, stride 2, 5x5 */
      {KB64, DESC(1, 24, 33, 33, 48, 5, 5, 2, 2, 2, 2, 1, 1, 24), true,
       SEPARATE},
      /* 1x1 */
      {KB64, DESC(1, 64, 24, 24, 96, 1, 1, 1, 1, 0, 0, 1, 1, 1), true,
       SEPARATE},
      /* the filter exceeds a binding: output channels split */
      {KB64, DESC(1, 256, 6, 6, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1), true,
       SEPARATE},
      /* one output channel's filter exceeds a binding: tap ranges add up */
      {KB64, DESC(1, 2048, 4, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1), false,
       SEPARATE},
      /* input and output adjacent in one allocation */
      {KB64, DESC(2, 8, 32, 32, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1), true, IN_OUT},
      {KB64, DESC(1, 12, 50, 50, 20, 3, 3, 2, 2, 1, 1, 1, 1, 2), false, OUT_IN},
      /* no input channels: the bias over an output beyond a binding */
      {KB64, DESC(1, 0, 60, 60, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1), true, SEPARATE},
      /* 4 KiB: one input row and one output row exceed a binding, so taps
       * split within filter rows and output rows into columns */
      {KB4, DESC(1, 2, 5, 1500, 3, 3, 5, 1, 1, 1, 2, 1, 3, 1), true, SEPARATE},
      /* large dilation: the receptive field of one output row is wide */
      {KB4, DESC(1, 3, 40, 40, 5, 3, 3, 1, 1, 12, 12, 12, 12, 1), false,
       SEPARATE},
      /* groups of few channels (direct kernel) with tap ranges */
      {KB4, DESC(1, 96, 6, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 3), true, SEPARATE},
      /* GEMM kernel with everything split */
      {KB4, DESC(2, 16, 12, 12, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1), true, OUT_IN},
  };
  wgc_context *gpu64 = NULL, *gpu4 = NULL;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    run_case(cases[i].limit == KB64 ? &gpu64 : &gpu4, &cases[i]);
  }
  wgc_destroy(gpu64);
  wgc_destroy(gpu4);
}
