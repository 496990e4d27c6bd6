/* Attention keys whose weight underflows: a weight exp(s - max) below
 * e^-87 (float32's normal range) is 0, so the key does not reach the row,
 * as a masked key, even when its V row holds infinities or NaN (API.md);
 * a key whose weight is not 0 brings them in as IEEE adds them. Scores are
 * set through the mask (Q and K are 0). Keys a and b hold non-finite
 * values (+inf, -inf, NaN, and a finite one, mixed by dimension), and
 * rows place them where the streaming kernels weigh a key before the
 * row's max is known: the max rising by more than 87 at once after them
 * (a later tile, a later split-KV block), or by several smaller steps
 * (0, 50, 100; a ramp), a, b or both ending more than 87 below it; them
 * following the max; 100 below the rest; 50 and 80 below (weights, so
 * their values reach the row). Every path: the CPU backend, the adapter's
 * kernel form (attention_block), the forms made for GPUs
 * (attention.wgsl's rows and tiles), split-KV with its combine (keys
 * beyond lavapipe's loop budget, or beyond 4 KiB bindings, the combine's
 * rounds and slices there) and the unfused path (4 KiB bindings), against
 * ops_ref.c's float64 formula. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { NQ = 8, HIGH = 8 };

typedef struct uf_shape {
  size_t hd, seq_kv;
  size_t bindings; /* max_binding_bytes; 0: the device's */
} uf_shape;

/* Which of keys a and b reach row r (bit 0: a, bit 1: b). */
static const unsigned reach[NQ] = {0, 0, 0, 3, 0, 1, 2, 3};

/* The rows' scores (see the file comment); keys a and b hold non-finite
 * values. Rows 4-7 rise by several steps after a: 50 from a + 1 on, 100
 * for the last HIGH keys (row 6: a ramp to 100, then 120). */
static void fill_mask(float *m, size_t nk, size_t a, size_t b) {
  fill_uniform(m, NQ * nk, -2.0f, 2.0f, 71);
  for (size_t j = 0; j < nk; j++) {
    if (j >= nk - HIGH) /* row 0: the max rises after a and b */
      m[0 * nk + j] += 100.0f;
    if (j < HIGH) /* row 1: a and b follow the max */
      m[1 * nk + j] += 100.0f;
    for (size_t r = 4; r < NQ; r++) {
      float *x = &m[r * nk + j];
      if (j <= a)
        continue;
      if (j >= nk - HIGH)
        *x += r == 6 ? 120.0f : 100.0f;
      else if (r == 6) /* small steps */
        *x += 100.0f * (float)(j - a) / (float)(nk - HIGH - a);
      else
        *x += 50.0f;
    }
  }
  m[2 * nk + a] = m[2 * nk + b] = -100.0f; /* row 2: 100 below the rest */
  m[3 * nk + a] = m[3 * nk + b] = -50.0f;  /* row 3: still weights */
  /* row 4: both read at 50 below (b: 50 below its tile's 50), then the
   * last keys' 100 leaves them 100 below */
  m[4 * nk + a] = m[4 * nk + b] = 0.0f;
  m[5 * nk + a] = 60.0f; /* row 5: a 40 below the end, b 100 */
  m[5 * nk + b] = 0.0f;
  m[6 * nk + a] = 0.0f; /* row 6: a 120 below the end, b 20 */
  m[6 * nk + b] = 100.0f;
  m[7 * nk + a] = 20.0f; /* row 7: 80 and 40 below, after the rises */
  m[7 * nk + b] = 60.0f;
}

/* Key a's and b's value in dimension e, by e % 6: the pairs +inf +inf,
 * -inf +inf, NaN +inf, +inf -inf, +inf finite, finite -inf. */
static float special(size_t key, size_t e) {
  static const float av[6] = {INFINITY, -INFINITY, NAN, INFINITY, INFINITY, 0};
  static const float bv[6] = {INFINITY,  INFINITY, INFINITY,
                              -INFINITY, 0,        -INFINITY};
  return key == 0 ? av[e % 6] : bv[e % 6];
}

/* What row r holds in dimension e, from the values that reach it: 0 for
 * a finite value, else the IEEE sum's +inf, -inf or NaN. */
static double expected(size_t r, size_t e) {
  double x = 0;
  for (size_t key = 0; key < 2; key++)
    if (reach[r] >> key & 1 && !isfinite(special(key, e)))
      x += special(key, e);
  return x;
}

static wgc_context *make_ctx(wgc_backend be, bool gpu_kernels,
                             size_t bindings) {
  wgc_options opt = {.backend = be, .max_binding_bytes = bindings};
  const char *old = getenv("WGC_KERNELS");
  char *saved = old ? strdup(old) : NULL;
  if (gpu_kernels)
    setenv("WGC_KERNELS", "gpu", 1);
  wgc_context *ctx = NULL;
  wgc_status s = wgc_create(&opt, &ctx);
  if (saved) {
    setenv("WGC_KERNELS", saved, 1);
    free(saved);
  } else {
    unsetenv("WGC_KERNELS");
  }
  CHECK(s == WGC_OK, "wgc_create: %s", wgc_last_error(NULL));
  return s == WGC_OK ? ctx : NULL;
}

static void run_shape(const char *label, wgc_backend be, bool gpu_kernels,
                      const uf_shape *sh) {
  if (!case_begin("attention_underflow[%s] head_dim=%zu seq_kv=%zu%s", label,
                  sh->hd, sh->seq_kv, sh->bindings ? ", 4 KiB bindings" : ""))
    return;
  wgc_context *ctx = make_ctx(be, gpu_kernels, sh->bindings);
  if (!ctx) {
    case_end();
    return;
  }
  size_t hd = sh->hd, nk = sh->seq_kv, a = HIGH + 2, b = nk - HIGH - 3;
  wgc_attention_desc d = {.batch = 1,
                          .heads = 1,
                          .seq_q = NQ,
                          .seq_kv = nk,
                          .head_dim = hd,
                          .scale = 1.0f,
                          .mask_stride = {0, 0, nk}};
  float *q = falloc(NQ * hd), *k = falloc(nk * hd), *v = falloc(nk * hd);
  float *m = falloc(NQ * nk), *o = falloc(NQ * hd);
  fill_uniform(v, nk * hd, -1.0f, 1.0f, 72);
  for (size_t e = 0; e < hd; e++) {
    if (!isfinite(special(0, e)))
      v[a * hd + e] = special(0, e);
    if (!isfinite(special(1, e)))
      v[b * hd + e] = special(1, e);
  }
  fill_mask(m, nk, a, b);
  wgc_ptr dq = dev_from(ctx, q, NQ * hd), dk = dev_from(ctx, k, nk * hd);
  wgc_ptr dv = dev_from(ctx, v, nk * hd), dm = dev_from(ctx, m, NQ * nk);
  wgc_ptr dout = dev_alloc(ctx, 4 * NQ * hd);
  if (dq && dk && dv && dm && dout) {
    d.mask = dm;
    CHECK_OK(ctx, wgc_attention(ctx, &d, dq, dk, dv, dout));
    if (dev_read(ctx, o, dout, NQ * hd)) {
      double *want = dalloc(NQ * hd);
      d.mask = (wgc_ptr)(uintptr_t)m;
      ref_attention(&d, q, k, v, want);
      /* V's finite values are within 1; the scores are exact, the mask
       * within 122 */
      double bound = 1e-5 + 4e-6 + 1e-6 * 122;
      size_t bad = 0;
      for (size_t i = 0; i < NQ * hd; i++) {
        double g = o[i], w = want[i], x = expected(i / hd, i % hd);
        /* the reference agrees with the rows' design */
        bool shape_ok = isnan(x) ? isnan(w) : isinf(x) ? w == x : isfinite(w);
        bool ok = isnan(w) || isnan(g)   ? isnan(w) && isnan(g)
                  : isinf(w) || isinf(g) ? g == w
                                         : fabs(g - w) <= bound;
        if ((!ok || !shape_ok) && bad++ == 0)
          CHECK(false, "o[%zu][%zu] = %.9g, want %.9g (%.9g)", i / hd, i % hd,
                g, w, x);
      }
      CHECK(bad == 0, "%zu elements wrong", bad);
      free(want);
    }
  }
  dev_free(ctx, dq);
  dev_free(ctx, dk);
  dev_free(ctx, dv);
  dev_free(ctx, dm);
  dev_free(ctx, dout);
  free(q);
  free(k);
  free(v);
  free(m);
  free(o);
  wgc_destroy(ctx);
  case_end();
}

static void run_shapes(const uf_shape *shapes, size_t n) {
  for (size_t s = 0; s < n; s++) {
    run_shape("cpu", WGC_BACKEND_CPU, false, &shapes[s]);
    run_shape("webgpu", WGC_BACKEND_WEBGPU, false, &shapes[s]);
    run_shape("webgpu, gpu kernels", WGC_BACKEND_WEBGPU, true, &shapes[s]);
  }
}

/* Three functions, each within the harness's watchdog on SwiftShader. */
TEST(attention_underflow) {
  /* head sizes for each fused form (tiles with two dim groups at 300) */
  static const uf_shape shapes[] = {
      {4, 40, 0}, {96, 40, 0}, {160, 40, 0}, {300, 40, 0}};
  run_shapes(shapes, sizeof shapes / sizeof *shapes);
}

TEST(attention_underflow_split) {
  /* keys past lavapipe's loop budget for each form: split-KV */
  static const uf_shape shapes[] = {{64, 6000, 0}, {300, 2000, 0}};
  run_shapes(shapes, sizeof shapes / sizeof *shapes);
}

TEST(attention_underflow_bindings) {
  /* under 4 KiB bindings keys in blocks of 64 (the combine in rounds) and
   * of 8 with the states in slices (128), and rows of 1100 floats on the
   * unfused path */
  static const uf_shape shapes[] = {
      {16, 1100, 4096}, {128, 300, 4096}, {1100, 24, 4096}};
  run_shapes(shapes, sizeof shapes / sizeof *shapes);
}
