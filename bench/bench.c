/* Benchmarks: every figure is measured in this run, and every comparison is
 * printed as a ratio of two measurements taken side by side.
 *   make bench                 default sizes
 *   WGC_BENCH_LARGE=1 make bench   adds 1024^3 GEMM and larger shapes */
#include "wgc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(wgc_context *ctx, const char *what) {
  fprintf(stderr, "bench: %s failed: %s\n", what, wgc_last_error(ctx));
  exit(1);
}
#define OK(ctx, call)                                                          \
  do {                                                                         \
    if ((call) != WGC_OK)                                                      \
      die(ctx, #call);                                                         \
  } while (0)

static wgc_ptr random_buffer(wgc_context *ctx, size_t n, unsigned seed) {
  float *h = malloc(n * sizeof *h);
  srand(seed);
  for (size_t i = 0; i < n; i++)
    h[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  wgc_ptr p;
  OK(ctx, wgc_alloc(ctx, n * sizeof *h, &p));
  OK(ctx, wgc_upload(ctx, p, h, n * sizeof *h));
  free(h);
  return p;
}

/* Seconds per repetition of fn, after one warm-up (which compiles
 * pipelines), repeated until at least min_time has passed. */
typedef void (*bench_fn)(wgc_context *ctx, void *arg);
static double time_op(wgc_context *ctx, bench_fn fn, void *arg,
                      double min_time) {
  fn(ctx, arg);
  OK(ctx, wgc_synchronize(ctx));
  int reps = 0;
  double t0 = now(), t;
  do {
    fn(ctx, arg);
    OK(ctx, wgc_synchronize(ctx));
    reps++;
    t = now() - t0;
  } while (t < min_time && reps < 1000);
  return t / reps;
}

/* ---- GEMM: WebGPU against the CPU backend ------------------------------ */

typedef struct gemm_case {
  size_t n;
  wgc_ptr a, b, c;
} gemm_case;

static void run_gemm(wgc_context *ctx, void *arg) {
  gemm_case *g = arg;
  OK(ctx, wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, g->n, g->n,
                   g->n, 1.0f, g->a, g->n, g->b, g->n, 0.0f, g->c, g->n));
}

static double gemm_gflops(wgc_context *ctx, size_t n) {
  gemm_case g = {n, random_buffer(ctx, n * n, 1), random_buffer(ctx, n * n, 2),
                 random_buffer(ctx, n * n, 3)};
  double t = time_op(ctx, run_gemm, &g, 0.5);
  wgc_free(ctx, g.a);
  wgc_free(ctx, g.b);
  wgc_free(ctx, g.c);
  return 2.0 * n * n * n / t * 1e-9;
}

/* ---- a chain of operations: enqueue all, or wait after each ------------ */

typedef struct chain {
  wgc_ptr x;
  size_t n;
  int ops;
  int wait_each;
} chain;

static void run_chain(wgc_context *ctx, void *arg) {
  chain *c = arg;
  for (int i = 0; i < c->ops; i++) {
    OK(ctx,
       wgc_unary(ctx, i % 2 ? WGC_UNARY_NEG : WGC_UNARY_ABS, c->x, c->x, c->n));
    if (c->wait_each)
      OK(ctx, wgc_synchronize(ctx));
  }
}

/* ---- batched GEMM against a loop of GEMM calls -------------------------- */

typedef struct batch {
  size_t n, count;
  wgc_ptr a, b, c;
  int looped;
} batch;

static void run_batch(wgc_context *ctx, void *arg) {
  batch *bt = arg;
  size_t nn = bt->n * bt->n;
  if (!bt->looped) {
    OK(ctx, wgc_gemm_batched(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, bt->n,
                             bt->n, bt->n, 1.0f, bt->a, bt->n, nn, bt->b, bt->n,
                             nn, 0.0f, bt->c, bt->n, nn, bt->count));
    return;
  }
  for (size_t i = 0; i < bt->count; i++)
    OK(ctx, wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, bt->n, bt->n,
                     bt->n, 1.0f, bt->a + 4 * i * nn, bt->n, bt->b + 4 * i * nn,
                     bt->n, 0.0f, bt->c + 4 * i * nn, bt->n));
}

/* ---- attention, conv2d and reduce: WebGPU against the CPU backend ------ */

typedef struct dnn {
  wgc_attention_desc ad;
  wgc_conv2d_desc cd;
  size_t shape[2];
  wgc_ptr q, k, v, o, in, f, out, big, sum;
} dnn;

static void run_attention(wgc_context *ctx, void *arg) {
  dnn *d = arg;
  OK(ctx, wgc_attention(ctx, &d->ad, d->q, d->k, d->v, d->o));
}
static void run_conv(wgc_context *ctx, void *arg) {
  dnn *d = arg;
  OK(ctx, wgc_conv2d(ctx, &d->cd, d->in, d->f, 0, d->out));
}
static void run_reduce(wgc_context *ctx, void *arg) {
  dnn *d = arg;
  OK(ctx, wgc_reduce(ctx, WGC_REDUCE_SUM, d->big, d->sum, d->shape, 2, 1));
}

static void dnn_setup(wgc_context *ctx, dnn *d, int large) {
  size_t seq = large ? 1024 : 256;
  d->ad = (wgc_attention_desc){.batch = 1,
                               .heads = 8,
                               .heads_kv = 2,
                               .seq_q = seq,
                               .seq_kv = seq,
                               .head_dim = 64,
                               .scale = 0.125f,
                               .causal = WGC_CAUSAL_TOP_LEFT};
  d->q = random_buffer(ctx, 8 * seq * 64, 4);
  d->k = random_buffer(ctx, 2 * seq * 64, 5);
  d->v = random_buffer(ctx, 2 * seq * 64, 6);
  OK(ctx, wgc_alloc(ctx, 4 * 8 * seq * 64, &d->o));
  d->cd = (wgc_conv2d_desc){.n = 1,
                            .c = 64,
                            .h = 56,
                            .w = 56,
                            .k = 64,
                            .r = 3,
                            .s = 3,
                            .pad_h = 1,
                            .pad_w = 1};
  d->in = random_buffer(ctx, 64 * 56 * 56, 7);
  d->f = random_buffer(ctx, 64 * 64 * 9, 8);
  OK(ctx, wgc_alloc(ctx, 4 * 64 * 56 * 56, &d->out));
  d->shape[0] = 1;
  d->shape[1] = large ? 10000000 : 1 << 22;
  d->big = random_buffer(ctx, d->shape[1], 9);
  OK(ctx, wgc_alloc(ctx, 4, &d->sum));
}

static wgc_context *make(wgc_backend b) {
  wgc_options o = {.backend = b};
  wgc_context *ctx;
  if (wgc_create(&o, &ctx) != WGC_OK)
    die(NULL, "wgc_create");
  return ctx;
}

int main(void) {
  int large = getenv("WGC_BENCH_LARGE") != NULL;
  wgc_context *gpu = make(WGC_BACKEND_WEBGPU), *cpu = make(WGC_BACKEND_CPU);
  printf("webgpu adapter: %s\ncpu backend:    %s\n\n", wgc_adapter_name(gpu),
         wgc_adapter_name(cpu));

  printf("GEMM row-major NN, GFLOP/s\n%8s %10s %10s %12s\n", "n", "webgpu",
         "cpu", "webgpu/cpu");
  size_t sizes[] = {64, 128, 256, 512, 1024};
  for (size_t i = 0; i < (large ? 5u : 4u); i++) {
    double g = gemm_gflops(gpu, sizes[i]), c = gemm_gflops(cpu, sizes[i]);
    printf("%8zu %10.2f %10.2f %12.3f\n", sizes[i], g, c, g / c);
  }

  /* The two GEMM kernel forms on this adapter (WGC_KERNELS forces one at
   * context creation): staged through workgroup memory, for GPUs, and
   * reading memory directly, for adapters that run on the CPU. */
  setenv("WGC_KERNELS", "gpu", 1);
  wgc_context *kg = make(WGC_BACKEND_WEBGPU);
  setenv("WGC_KERNELS", "cpu", 1);
  wgc_context *kc = make(WGC_BACKEND_WEBGPU);
  unsetenv("WGC_KERNELS");
  printf("\nGEMM kernel forms on this adapter, GFLOP/s\n%8s %10s %10s %12s\n",
         "n", "gpu-form", "cpu-form", "cpu/gpu");
  for (size_t i = 1; i < 4; i++) {
    double g = gemm_gflops(kg, sizes[i]), c = gemm_gflops(kc, sizes[i]);
    printf("%8zu %10.2f %10.2f %12.3f\n", sizes[i], g, c, c / g);
  }
  dnn fg = {0}, fc = {0};
  dnn_setup(kg, &fg, 0);
  dnn_setup(kc, &fc, 0);
  double cg = time_op(kg, run_conv, &fg, 0.5),
         cc = time_op(kc, run_conv, &fc, 0.5);
  printf("conv2d 64x56x56 -> 64, 3x3 (ms)  %8.2f %10.2f %12.3f\n", cg * 1e3,
         cc * 1e3, cg / cc);
  wgc_destroy(kg);
  wgc_destroy(kc);

  /* The replaced backend waited for the GPU after every operation. */
  size_t lens[2] = {1024, 1 << 16};
  for (int i = 0; i < 2; i++) {
    chain ch = {.n = lens[i], .ops = 200};
    ch.x = random_buffer(gpu, ch.n, 10);
    double enq = time_op(gpu, run_chain, &ch, 0.5);
    ch.wait_each = 1;
    double blk = time_op(gpu, run_chain, &ch, 0.5);
    printf("\nchain of %d element-wise ops on %zu floats (webgpu)\n"
           "  enqueued, one synchronize: %8.3f ms\n"
           "  synchronize after each op: %8.3f ms\n"
           "  ratio waiting/enqueued:    %8.2f\n",
           ch.ops, ch.n, enq * 1e3, blk * 1e3, blk / enq);
    wgc_free(gpu, ch.x);
  }

  batch bt = {.n = 32, .count = 128};
  size_t total = bt.n * bt.n * bt.count;
  bt.a = random_buffer(gpu, total, 11);
  bt.b = random_buffer(gpu, total, 12);
  bt.c = random_buffer(gpu, total, 13);
  double one = time_op(gpu, run_batch, &bt, 0.5);
  bt.looped = 1;
  double loop = time_op(gpu, run_batch, &bt, 0.5);
  printf("\n%zu GEMMs of %zu^3 (webgpu)\n"
         "  one strided batched call:  %8.3f ms\n"
         "  a loop of wgc_gemm calls:  %8.3f ms\n"
         "  ratio loop/batched:        %8.2f\n",
         bt.count, bt.n, one * 1e3, loop * 1e3, loop / one);

  dnn dg = {0}, dc = {0};
  dnn_setup(gpu, &dg, large);
  dnn_setup(cpu, &dc, large);
  struct {
    const char *name;
    bench_fn fn;
  } ops[] = {{"attention 8x2 heads, seq, d64, causal", run_attention},
             {"conv2d 64x56x56 -> 64, 3x3 pad 1", run_conv},
             {"reduce SUM over one long axis", run_reduce}};
  printf("\n%-40s %10s %10s %12s\n", "operation (ms)", "webgpu", "cpu",
         "cpu/webgpu");
  for (size_t i = 0; i < 3; i++) {
    double g = time_op(gpu, ops[i].fn, &dg, 0.5);
    double c = time_op(cpu, ops[i].fn, &dc, 0.5);
    printf("%-40s %10.2f %10.2f %12.3f\n", ops[i].name, g * 1e3, c * 1e3,
           c / g);
  }

  /* First call compiles the pipeline; later calls hit the cache. */
  size_t before = wgc_pipelines_compiled(gpu);
  wgc_ptr x = random_buffer(gpu, 1024, 14);
  double t0 = now();
  OK(gpu, wgc_unary(gpu, WGC_UNARY_SILU, x, x, 1024));
  OK(gpu, wgc_synchronize(gpu));
  double first = now() - t0;
  t0 = now();
  OK(gpu, wgc_unary(gpu, WGC_UNARY_SILU, x, x, 1024));
  OK(gpu, wgc_synchronize(gpu));
  double second = now() - t0;
  printf("\npipeline cache (unary SILU, 1024 floats)\n"
         "  first call + sync:  %8.3f ms (%zu pipeline compiled)\n"
         "  second call + sync: %8.3f ms (%zu compiled)\n"
         "  ratio first/second: %8.2f\n",
         first * 1e3, wgc_pipelines_compiled(gpu) - before, second * 1e3,
         wgc_pipelines_compiled(gpu) - before - 1, first / second);
  wgc_destroy(gpu);
  wgc_destroy(cpu);
  return 0;
}
