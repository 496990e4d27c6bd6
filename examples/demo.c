/* One transformer block on the default backend, checked against the CPU
 * backend: per-head Q/K/V projections (strided batched GEMM), causal
 * attention, the output projection accumulated head by head (beta = 1), a
 * residual add, an MLP (GEMM, GELU, GEMM), a second residual add, and the
 * mean of every row (a reduction). */
#include "wgc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum {
  SEQ = 128,
  MODEL = 256,
  HEADS = 4,
  HEAD_DIM = MODEL / HEADS,
  FF = 1024,
  STEPS = 5
};

typedef struct block {
  wgc_context *ctx;
  wgc_ptr x, wq, wk, wv, wo, w1, w2;        /* input and weights */
  wgc_ptr q, k, v, att, y, x1, h, x2, mean; /* activations */
} block;

#define TRY(call)                                                              \
  do {                                                                         \
    wgc_status s_ = (call);                                                    \
    if (s_ != WGC_OK) {                                                        \
      fprintf(stderr, "demo: %s failed: %s\n", #call, wgc_last_error(b->ctx)); \
      return s_;                                                               \
    }                                                                          \
  } while (0)

static float *random_floats(size_t n, float scale, unsigned seed) {
  float *x = malloc(n * sizeof *x);
  srand(seed);
  for (size_t i = 0; i < n; i++)
    x[i] = scale * ((float)rand() / (float)RAND_MAX * 2.0f - 1.0f);
  return x;
}

static wgc_status upload_new(block *b, wgc_ptr *p, size_t n, float scale,
                             unsigned seed) {
  TRY(wgc_alloc(b->ctx, n * sizeof(float), p));
  if (scale != 0.0f) {
    float *host = random_floats(n, scale, seed);
    wgc_status s = wgc_upload(b->ctx, *p, host, n * sizeof(float));
    free(host);
    return s;
  }
  return WGC_OK;
}

static wgc_status block_setup(block *b) {
  float ws = 1.0f / sqrtf((float)MODEL);
  TRY(upload_new(b, &b->x, SEQ * MODEL, 1.0f, 1));
  TRY(upload_new(b, &b->wq, MODEL * MODEL, ws, 2));
  TRY(upload_new(b, &b->wk, MODEL * MODEL, ws, 3));
  TRY(upload_new(b, &b->wv, MODEL * MODEL, ws, 4));
  TRY(upload_new(b, &b->wo, MODEL * MODEL, ws, 5));
  TRY(upload_new(b, &b->w1, MODEL * FF, ws, 6));
  TRY(upload_new(b, &b->w2, FF * MODEL, 1.0f / sqrtf((float)FF), 7));
  wgc_ptr *acts[] = {&b->q, &b->k, &b->v, &b->att, &b->y, &b->x1, &b->x2};
  for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
    TRY(upload_new(b, acts[i], SEQ * MODEL, 0.0f, 0));
  TRY(upload_new(b, &b->h, SEQ * FF, 0.0f, 0));
  TRY(upload_new(b, &b->mean, SEQ, 0.0f, 0));
  return WGC_OK;
}

static wgc_status block_run(block *b) {
  wgc_context *c = b->ctx;
  /* Q/K/V per head: [HEADS, SEQ, HEAD_DIM] = x * W[:, h*HEAD_DIM ...];
   * x is shared (stride 0), the weight's column block advances by
   * HEAD_DIM per head. */
  wgc_ptr w[3] = {b->wq, b->wk, b->wv}, out[3] = {b->q, b->k, b->v};
  for (int i = 0; i < 3; i++)
    TRY(wgc_gemm_batched(c, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, SEQ,
                         HEAD_DIM, MODEL, 1.0f, b->x, MODEL, 0, w[i], MODEL,
                         HEAD_DIM, 0.0f, out[i], HEAD_DIM, SEQ * HEAD_DIM,
                         HEADS));
  wgc_attention_desc ad = {.batch = 1,
                           .heads = HEADS,
                           .seq_q = SEQ,
                           .seq_kv = SEQ,
                           .head_dim = HEAD_DIM,
                           .scale = 1.0f / sqrtf((float)HEAD_DIM),
                           .causal = WGC_CAUSAL_TOP_LEFT};
  TRY(wgc_attention(c, &ad, b->q, b->k, b->v, b->att));
  /* y = sum over heads of att_h * Wo[h*HEAD_DIM.., :]: beta accumulates. */
  for (int h = 0; h < HEADS; h++)
    TRY(wgc_gemm(c, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, SEQ, MODEL,
                 HEAD_DIM, 1.0f, b->att + 4u * h * SEQ * HEAD_DIM, HEAD_DIM,
                 b->wo + 4u * h * HEAD_DIM * MODEL, MODEL, h ? 1.0f : 0.0f,
                 b->y, MODEL));
  TRY(wgc_binary(c, WGC_BINARY_ADD, b->x, b->y, b->x1, SEQ * MODEL));
  TRY(wgc_gemm(c, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, SEQ, FF, MODEL,
               1.0f, b->x1, MODEL, b->w1, FF, 0.0f, b->h, FF));
  TRY(wgc_unary(c, WGC_UNARY_GELU, b->h, b->h, SEQ * FF));
  TRY(wgc_gemm(c, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, SEQ, MODEL, FF,
               1.0f, b->h, FF, b->w2, MODEL, 0.0f, b->x2, MODEL));
  TRY(wgc_binary(c, WGC_BINARY_ADD, b->x1, b->x2, b->x2, SEQ * MODEL));
  size_t shape[2] = {SEQ, MODEL};
  TRY(wgc_reduce(c, WGC_REDUCE_MEAN, b->x2, b->mean, shape, 2, 1));
  return WGC_OK;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double max_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= m))
      m = d; /* NaN wins */
  }
  return m;
}

int main(void) {
  block dev = {0}, ref = {0};
  wgc_status s = wgc_create(NULL, &dev.ctx);
  if (s != WGC_OK) {
    fprintf(stderr, "demo: wgc_create failed: %s\n", wgc_last_error(NULL));
    return 1;
  }
  wgc_options cpu = {.backend = WGC_BACKEND_CPU};
  if (wgc_create(&cpu, &ref.ctx) != WGC_OK) {
    fprintf(stderr, "demo: wgc_create(cpu) failed: %s\n", wgc_last_error(NULL));
    return 1;
  }
  printf("backend: %s\nadapter: %s\n", wgc_backend_name(dev.ctx),
         wgc_adapter_name(dev.ctx));
  printf("block: seq %d, model %d, heads %d, mlp %d\n", SEQ, MODEL, HEADS, FF);
  if (block_setup(&dev) != WGC_OK || block_setup(&ref) != WGC_OK)
    return 1;
  /* The first step compiles the kernels; time the ones after it. */
  if (block_run(&dev) != WGC_OK || wgc_synchronize(dev.ctx) != WGC_OK)
    return 1;
  double t0 = now();
  for (int i = 0; i < STEPS; i++)
    if (block_run(&dev) != WGC_OK)
      return 1;
  if (wgc_synchronize(dev.ctx) != WGC_OK)
    return 1;
  double step = (now() - t0) / STEPS;
  if (block_run(&ref) != WGC_OK)
    return 1;
  static float got[SEQ * MODEL], want[SEQ * MODEL], gm[SEQ], wm[SEQ];
  if (wgc_download(dev.ctx, got, dev.x2, sizeof got) != WGC_OK ||
      wgc_download(ref.ctx, want, ref.x2, sizeof want) != WGC_OK ||
      wgc_download(dev.ctx, gm, dev.mean, sizeof gm) != WGC_OK ||
      wgc_download(ref.ctx, wm, ref.mean, sizeof wm) != WGC_OK) {
    fprintf(stderr, "demo: download failed\n");
    return 1;
  }
  double diff = max_diff(got, want, SEQ * MODEL);
  double mdiff = max_diff(gm, wm, SEQ);
  double flops = 2.0 * SEQ * MODEL * MODEL * 4 + 4.0 * SEQ * SEQ * MODEL +
                 4.0 * SEQ * MODEL * FF;
  printf("time per step: %.2f ms (%.2f GFLOP/s)\n", step * 1e3,
         flops / step * 1e-9);
  printf("largest difference from the cpu backend: output %.3g, row means "
         "%.3g\n",
         diff, mdiff);
  wgc_destroy(dev.ctx);
  wgc_destroy(ref.ctx);
  if (!(diff < 1e-3 && mdiff < 1e-4)) {
    printf("result: MISMATCH\n");
    return 1;
  }
  printf("result: ok\n");
  return 0;
}
