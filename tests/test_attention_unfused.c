/* Attention's unfused path (src/webgpu/attention_unfused.c), reached under
 * 4 KiB bindings by query rows of 1100 floats: special values in the
 * scores, the mask and V against the float64 formula of ops_ref.c, on the
 * adapter's kernel forms and on those made for GPUs. A key of weight 0
 * (masked by -inf) whose V row holds NaN or infinity must not reach the
 * row: the PV step skips it rather than forming 0 * NaN. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
  UF_NEG_INF_NAN_V, /* -inf at key 1 of every row, NaN in V's key 1 */
  UF_NEG_INF_INF_V, /* -inf at key 3 of row 0, +inf and -inf in V's key 3 */
  UF_HIDDEN_NAN,    /* NaN in K, V and the mask at keys the causal hides */
  UF_ROW_NEG_INF,   /* row 1 all -inf: NaN */
  UF_MASK_NAN,      /* NaN at key 2 of row 2: row 2 NaN */
  UF_POS_INF,       /* +inf at key 4 of row 0: row 0 NaN */
  UF_CAP_INF_K,     /* softcap: +inf in K gives a finite score */
  UF_COUNT
} uf_special;

static const char *const UF_NAMES[UF_COUNT] = {
    "-inf in the mask with NaN in v",
    "-inf in the mask with +-inf in v",
    "NaN at hidden keys",
    "row of -inf in the mask",
    "NaN in the mask",
    "+inf in the mask",
    "softcap with +inf in k"};

enum { NQ = 5, NK = 7, HD = 1100 };

static void plant(uf_special sp, wgc_attention_desc *d, float *q, float *k,
                  float *v, float *m) {
  size_t hdv = d->head_dim_v;
  switch (sp) {
  case UF_NEG_INF_NAN_V:
    for (size_t i = 0; i < NQ; i++)
      m[i * NK + 1] = -INFINITY;
    for (size_t e = 0; e < hdv; e++)
      v[1 * hdv + e] = NAN;
    break;
  case UF_NEG_INF_INF_V:
    m[3] = -INFINITY;
    for (size_t e = 0; e < hdv; e++)
      v[3 * hdv + e] = e % 2 ? INFINITY : -INFINITY;
    /* row 0 only: the others see key 3 and are NaN (inf - inf) or inf */
    break;
  case UF_HIDDEN_NAN:
    d->causal = WGC_CAUSAL_TOP_LEFT;
    for (size_t e = 0; e < HD; e++)
      k[(NK - 1) * HD + e] = NAN;
    for (size_t e = 0; e < hdv; e++)
      v[(NK - 1) * hdv + e] = NAN;
    for (size_t i = 0; i < NQ; i++)
      for (size_t j = i + 1; j < NK; j++)
        m[i * NK + j] = NAN;
    break;
  case UF_ROW_NEG_INF:
    for (size_t j = 0; j < NK; j++)
      m[1 * NK + j] = -INFINITY;
    break;
  case UF_MASK_NAN:
    m[2 * NK + 2] = NAN;
    break;
  case UF_POS_INF:
    m[4] = INFINITY;
    break;
  case UF_CAP_INF_K:
    d->softcap = 2.5f;
    for (size_t i = 0; i < 2 * NQ; i++)
      q[i * HD] = 0.5f;
    k[5 * HD] = INFINITY;
    break;
  default:
    break;
  }
}

/* *ctx is created by the first case the filter lets run, so that a run of
 * other cases (the CPU-only run under valgrind) starts no adapter. */
static void unfused_special(wgc_context **ctxp, bool gpu, const char *label,
                            uf_special sp, size_t hdv) {
  if (!case_begin("attention unfused[%s] %s head_dim_v=%zu", label,
                  UF_NAMES[sp], hdv))
    return;
  if (!*ctxp)
    *ctxp = new_ctx_kernels(WGC_BACKEND_WEBGPU, 4096,
                            gpu ? KERNELS_GPU : KERNELS_ENV);
  wgc_context *ctx = *ctxp;
  if (!ctx) {
    case_end();
    return;
  }
  wgc_attention_desc d = {.batch = 1,
                          .heads = 2,
                          .heads_kv = 1,
                          .seq_q = NQ,
                          .seq_kv = NK,
                          .head_dim = HD,
                          .head_dim_v = hdv,
                          .scale = 1.0f / sqrtf((float)HD),
                          .mask_stride = {0, 0, NK}};
  size_t n_q = 2 * NQ * HD, n_k = NK * HD, n_v = NK * hdv, n_m = NQ * NK;
  size_t n_o = 2 * NQ * hdv;
  float *q = falloc(n_q), *k = falloc(n_k), *v = falloc(n_v);
  float *m = falloc(n_m), *o = falloc(n_o);
  fill_uniform(q, n_q, -1, 1, 51);
  fill_uniform(k, n_k, -1, 1, 52);
  fill_uniform(v, n_v, -1, 1, 53);
  fill_uniform(m, n_m, -3, 1, 54);
  plant(sp, &d, q, k, v, m);
  for (size_t i = 0; i < n_o; i++)
    o[i] = 12345.0f;
  wgc_ptr dq = dev_from(ctx, q, n_q), dk = dev_from(ctx, k, n_k);
  wgc_ptr dv = dev_from(ctx, v, n_v), dm = dev_from(ctx, m, n_m);
  wgc_ptr dout = dev_from(ctx, o, n_o);
  if (dq && dk && dv && dm && dout) {
    d.mask = dm;
    CHECK_STATUS(wgc_attention(ctx, &d, dq, dk, dv, dout), WGC_OK);
    if (dev_read(ctx, o, dout, n_o)) {
      double *want = dalloc(n_o);
      d.mask = (wgc_ptr)(uintptr_t)m;
      ref_attention(&d, q, k, v, want);
      /* the finite part of V and the mask bound the error */
      double mv = 1, mm = 3;
      double bound = 1e-5 * HD + 4e-6 * mv + 1e-6 * mm * mv;
      for (size_t i = 0; i < n_o; i++) {
        double g = o[i], w = want[i];
        bool ok = isnan(w) || isnan(g)   ? isnan(w) && isnan(g)
                  : isinf(w) || isinf(g) ? g == w
                                         : fabs(g - w) <= bound;
        if (!ok) {
          CHECK(false, "O element %zu (row %zu) is %.9g, want %.9g", i, i / hdv,
                g, w);
          break;
        }
      }
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
  case_end();
}

TEST(attention_unfused_special) {
  for (int gpu = 0; gpu < 2; gpu++) {
    wgc_context *ctx = NULL;
    const char *label = gpu ? "4 KiB bindings, gpu kernels" : "4 KiB bindings";
    for (int sp = 0; sp < UF_COUNT; sp++) {
      unfused_special(&ctx, gpu, label, (uf_special)sp, 40);
      if (sp <= UF_HIDDEN_NAN) /* V rows beyond a binding too */
        unfused_special(&ctx, gpu, label, (uf_special)sp, 1100);
    }
    if (ctx)
      wgc_destroy(ctx);
  }
}
