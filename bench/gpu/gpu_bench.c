/* The GPU machine's wgc side of bench/gpu.sh: GEMM n^3 and attention
 * (batch 1, heads, seq, head_dim, causal and not), and x W^T with W
 * stored f32, f16, bf16, Q8_0 and Q4_0 (m = 1 and 8, n x n), through wgc
 * on the WebGPU backend, each the median of several timed runs after a warm-up,
 * written as JSON. Timing ends with wgc_synchronize, so each figure
 * includes one submit-and-wait, as a user's would.
 *   gpu_bench [--n N] [--seq S] [--dim D] [--heads H] [--reps R] FILE */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wgc.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(wgc_context *ctx, const char *what, wgc_status s) {
  fprintf(stderr, "gpu_bench: %s: %s (%s)\n", what, wgc_status_string(s),
          wgc_last_error(ctx));
  exit(1);
}

#define CHECK(ctx, call)                                                       \
  do {                                                                         \
    wgc_status s_ = (call);                                                    \
    if (s_ != WGC_OK)                                                          \
      die(ctx, #call, s_);                                                     \
  } while (0)

/* n floats in [-1, 1) from a fixed seed, uploaded to a new allocation. */
static wgc_ptr random_tensor(wgc_context *ctx, size_t n, unsigned seed) {
  float *h = malloc(n * sizeof *h);
  if (!h)
    die(ctx, "host memory", WGC_ERR_OUT_OF_MEMORY);
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    h[i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
  }
  wgc_ptr p;
  CHECK(ctx, wgc_alloc(ctx, n * sizeof *h, &p));
  CHECK(ctx, wgc_upload(ctx, p, h, n * sizeof *h));
  free(h);
  return p;
}

typedef struct gemm_case {
  size_t n;
  wgc_ptr a, b, c;
} gemm_case;

/* x W^T with W [n, k] (k contiguous) stored in a type. */
typedef struct weights_case {
  size_t m, n;
  wgc_dtype type;
  wgc_ptr x, w, y;
} weights_case;

typedef struct attn_case {
  wgc_attention_desc d;
  wgc_ptr q, k, v, o;
} attn_case;

static void run_gemm(wgc_context *ctx, const gemm_case *g) {
  CHECK(ctx,
        wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, g->n, g->n,
                 g->n, 1.0f, g->a, g->n, g->b, g->n, 0.0f, g->c, g->n));
}

static void run_attn(wgc_context *ctx, const attn_case *a) {
  CHECK(ctx, wgc_attention(ctx, &a->d, a->q, a->k, a->v, a->o));
}

static void run_weights(wgc_context *ctx, const weights_case *c) {
  wgc_gemm_epilogue ep = {.b_type = c->type};
  CHECK(ctx,
        wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, c->m, c->n,
                    c->n, 1.0f, c->x, c->n, c->w, c->n, 0.0f, c->y, c->n, &ep));
}

enum { RUN_GEMM, RUN_ATTN, RUN_WEIGHTS };

/* Median seconds of reps runs of one enqueue plus a wait. */
static double median_seconds(wgc_context *ctx, int reps, int what,
                             const void *arg) {
  double t[64];
  if (reps > 64)
    reps = 64;
  for (int i = -1; i < reps; i++) { /* run -1 warms up (compiles) */
    double t0 = now();
    if (what == RUN_GEMM)
      run_gemm(ctx, arg);
    else if (what == RUN_WEIGHTS)
      run_weights(ctx, arg);
    else
      run_attn(ctx, arg);
    CHECK(ctx, wgc_synchronize(ctx));
    if (i >= 0)
      t[i] = now() - t0;
  }
  qsort(t, (size_t)reps, sizeof t[0], by_value);
  return reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
}

int main(int argc, char **argv) {
  size_t n = 4096, seq = 4096, dim = 128, heads = 16;
  int reps = 10;
  const char *file = NULL;
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--n") == 0)
      n = strtoul(argv[++i], NULL, 10);
    else if (i + 1 < argc && strcmp(argv[i], "--seq") == 0)
      seq = strtoul(argv[++i], NULL, 10);
    else if (i + 1 < argc && strcmp(argv[i], "--dim") == 0)
      dim = strtoul(argv[++i], NULL, 10);
    else if (i + 1 < argc && strcmp(argv[i], "--heads") == 0)
      heads = strtoul(argv[++i], NULL, 10);
    else if (i + 1 < argc && strcmp(argv[i], "--reps") == 0)
      reps = atoi(argv[++i]);
    else
      file = argv[i];
  }
  if (!file || reps < 1) {
    fprintf(stderr, "usage: gpu_bench [--n N] [--seq S] [--dim D] "
                    "[--heads H] [--reps R] FILE\n");
    return 2;
  }
  wgc_context *ctx;
  wgc_options opt = {.backend = WGC_BACKEND_WEBGPU};
  CHECK(NULL, wgc_create(&opt, &ctx));
  printf("wgc on %s\n", wgc_adapter_name(ctx));

  gemm_case g = {n, random_tensor(ctx, n * n, 1), random_tensor(ctx, n * n, 2),
                 0};
  CHECK(ctx, wgc_alloc(ctx, n * n * 4, &g.c));
  double tg = median_seconds(ctx, reps, RUN_GEMM, &g);
  double gemm_tflops = 2.0 * (double)n * n * n / tg * 1e-12;
  printf("gemm %zu^3 f32: %.3f ms, %.2f TFLOP/s\n", n, tg * 1e3, gemm_tflops);
  CHECK(ctx, wgc_free(ctx, g.a));
  CHECK(ctx, wgc_free(ctx, g.b));
  CHECK(ctx, wgc_free(ctx, g.c));

  size_t elems = heads * seq * dim;
  attn_case a = {.d = {.batch = 1,
                       .heads = heads,
                       .seq_q = seq,
                       .seq_kv = seq,
                       .head_dim = dim,
                       .scale = 1.0f / sqrtf((float)dim)},
                 .q = random_tensor(ctx, elems, 3),
                 .k = random_tensor(ctx, elems, 4),
                 .v = random_tensor(ctx, elems, 5)};
  CHECK(ctx, wgc_alloc(ctx, elems * 4, &a.o));
  double ta[2];
  for (int causal = 0; causal < 2; causal++) {
    a.d.causal = causal ? WGC_CAUSAL_TOP_LEFT : WGC_CAUSAL_NONE;
    ta[causal] = median_seconds(ctx, reps, RUN_ATTN, &a);
    printf("attention b1 h%zu s%zu d%zu%s: %.3f ms\n", heads, seq, dim,
           causal ? " causal" : "", ta[causal] * 1e3);
  }

  CHECK(ctx, wgc_free(ctx, a.q));
  CHECK(ctx, wgc_free(ctx, a.k));
  CHECK(ctx, wgc_free(ctx, a.v));
  CHECK(ctx, wgc_free(ctx, a.o));

  /* Weights stored f32, f16, bf16, Q8_0, Q4_0 (quantized on the host),
   * m = 1 (a decoding step) and 8, n x n. */
  static const wgc_dtype types[] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                    WGC_DTYPE_BF16, WGC_DTYPE_Q8_0,
                                    WGC_DTYPE_Q4_0};
  enum { NT = sizeof types / sizeof *types };
  double tw[2][NT];
  float *wh = malloc(n * n * sizeof *wh);
  void *wq = malloc(n * n * sizeof *wh);
  if (!wh || !wq)
    die(ctx, "host memory", WGC_ERR_OUT_OF_MEMORY);
  for (size_t i = 0; i < n * n; i++)
    wh[i] = (float)((i * 2654435761u) >> 8 & 0xffff) / 32768.0f - 1.0f;
  weights_case wc = {.x = random_tensor(ctx, 8 * n, 6)};
  CHECK(ctx, wgc_alloc(ctx, 8 * n * 4, &wc.y));
  for (size_t t = 0; t < NT; t++) {
    size_t bytes = 0;
    CHECK(ctx, wgc_dtype_bytes(types[t], n * n, &bytes));
    CHECK(ctx, wgc_quantize(wh, wq, types[t], n * n));
    CHECK(ctx, wgc_alloc(ctx, bytes, &wc.w));
    CHECK(ctx, wgc_upload(ctx, wc.w, wq, (bytes + 3) & ~(size_t)3));
    wc.type = types[t];
    wc.n = n;
    for (int mi = 0; mi < 2; mi++) {
      wc.m = mi ? 8 : 1;
      tw[mi][t] = median_seconds(ctx, reps, RUN_WEIGHTS, &wc);
      printf("%zux%zux%zu, W %s: %.3f ms (%.1f GB/s of weights)\n", wc.m, n, n,
             wgc_dtype_name(types[t]), tw[mi][t] * 1e3,
             (double)bytes / tw[mi][t] * 1e-9);
    }
    CHECK(ctx, wgc_free(ctx, wc.w));
  }
  free(wh);
  free(wq);

  FILE *f = fopen(file, "w");
  if (!f) {
    perror(file);
    return 1;
  }
  fprintf(f,
          "{\"adapter\": \"%s\", \"reps\": %d,\n"
          " \"gemm\": {\"n\": %zu, \"ms\": %.6f, \"tflops\": %.4f},\n"
          " \"attention\": {\"batch\": 1, \"heads\": %zu, \"seq\": %zu, "
          "\"head_dim\": %zu, \"ms\": %.6f, \"causal_ms\": %.6f},\n"
          " \"weights\": [",
          wgc_adapter_name(ctx), reps, n, tg * 1e3, gemm_tflops, heads, seq,
          dim, ta[0] * 1e3, ta[1] * 1e3);
  for (size_t t = 0; t < NT; t++)
    for (int mi = 0; mi < 2; mi++)
      fprintf(f, "%s{\"type\": \"%s\", \"m\": %d, \"n\": %zu, \"ms\": %.6f}",
              t || mi ? ", " : "", wgc_dtype_name(types[t]), mi ? 8 : 1, n,
              tw[mi][t] * 1e3);
  fprintf(f, "]}\n");
  fclose(f);
  wgc_destroy(ctx);
  return 0;
}
