/* Attention keys whose weight underflows: a weight exp(s - max) below
 * e^-87 (float32's normal range) is 0, so the key does not reach the row,
 * as a masked key, even when its V row holds infinities or NaN (API.md).
 * Scores are set through the mask (Q and K are 0): rows where the max
 * rises by more than 87 after such a key (a later tile, a later split-KV
 * block), where the key follows the max, where it sits 100 below the
 * rest, and where it sits only 50 below (e^-50 is a weight: its infinities
 * and NaN reach the row). Every path: the CPU backend, the adapter's
 * kernel forms (attention_block, attention_regs), the forms made for GPUs
 * (attention.wgsl's rows and tiles), split-KV with its combine (keys
 * beyond lavapipe's loop budget) and the unfused path (4 KiB bindings),
 * against ops_ref.c's float64 formula. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { NQ = 4, HIGH = 8 };

typedef struct uf_shape {
  size_t hd, seq_kv;
  size_t bindings; /* max_binding_bytes; 0: the device's */
} uf_shape;

/* Row r's mask: the scores of its keys (see the file comment); keys a and
 * b hold non-finite values. */
static void fill_mask(float *m, size_t nk, size_t a, size_t b) {
  fill_uniform(m, NQ * nk, -2.0f, 2.0f, 71);
  for (size_t j = 0; j < nk; j++) {
    if (j >= nk - HIGH) /* row 0: the max rises after a and b */
      m[0 * nk + j] += 100.0f;
    if (j < HIGH) /* row 1: a and b follow the max */
      m[1 * nk + j] += 100.0f;
  }
  m[2 * nk + a] = m[2 * nk + b] = -100.0f; /* row 2: 100 below the rest */
  m[3 * nk + a] = m[3 * nk + b] = -50.0f;  /* row 3: still a weight */
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
    float x = e % 3 == 0 ? INFINITY : e % 3 == 1 ? -INFINITY : NAN;
    v[a * hd + e] = x;
    v[b * hd + e] = x;
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
      /* V's finite values are within 1; the scores are exact */
      double bound = 1e-5 + 4e-6 + 1e-6 * 102;
      size_t bad = 0;
      for (size_t i = 0; i < NQ * hd; i++) {
        double g = o[i], w = want[i];
        /* rows 0-2 finite, row 3 +inf, -inf, NaN by dimension */
        bool shape_ok = i / hd == 3 ? !isfinite(w) : isfinite(w);
        bool ok = isnan(w) || isnan(g)   ? isnan(w) && isnan(g)
                  : isinf(w) || isinf(g) ? g == w
                                         : fabs(g - w) <= bound;
        if ((!ok || !shape_ok) && bad++ == 0)
          CHECK(false, "o[%zu][%zu] = %.9g, want %.9g", i / hd, i % hd, g, w);
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

TEST(attention_underflow) {
  /* head sizes for each fused form; 3700 keys pass lavapipe's loop budget
   * at head size 64 (split-KV); rows of 1100 floats take the unfused path
   * under 4 KiB bindings */
  static const uf_shape shapes[] = {
      {4, 40, 0}, {96, 40, 0}, {160, 40, 0}, {64, 3700, 0}, {1100, 24, 4096},
  };
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    run_shape("cpu", WGC_BACKEND_CPU, false, &shapes[s]);
    run_shape("webgpu", WGC_BACKEND_WEBGPU, false, &shapes[s]);
    run_shape("webgpu, gpu kernels", WGC_BACKEND_WEBGPU, true, &shapes[s]);
  }
}
