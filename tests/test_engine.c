/* The WebGPU execution engine: the pipeline cache, long chains of queued
 * work (batches that flush in the middle of multi-pass operations), and the
 * splitting of operations whose operands exceed one binding window or whose
 * grids exceed 65,535 workgroups. Each workload runs on the CPU backend and
 * on WebGPU and must agree. */
#include "harness.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Results of a workload: a list of downloaded outputs. */
#define MAX_OUTPUTS 16
typedef struct outputs {
  float *data[MAX_OUTPUTS];
  size_t count[MAX_OUTPUTS];
  const char *name[MAX_OUTPUTS];
  size_t n;
} outputs;

static void outputs_free(outputs *o) {
  for (size_t i = 0; i < o->n; i++)
    free(o->data[i]);
  o->n = 0;
}

static wgc_ptr random_dev(wgc_context *ctx, size_t n, unsigned seed) {
  float *h = falloc(n);
  fill_uniform(h, n, -1.0f, 1.0f, seed);
  wgc_ptr p = dev_from(ctx, h, n);
  free(h);
  return p;
}

static void keep(wgc_context *ctx, outputs *o, const char *name, wgc_ptr p,
                 size_t n) {
  if (o->n == MAX_OUTPUTS)
    return;
  o->data[o->n] = falloc(n);
  o->count[o->n] = n;
  o->name[o->n] = name;
  dev_read(ctx, o->data[o->n], p, n);
  o->n++;
}

#define RUN(call) CHECK_STATUS(call, WGC_OK)

/* Every operation family once, on operands larger than 64 KiB so that a
 * 64 KiB binding limit forces each to split. */
static void workload(wgc_context *ctx, outputs *o) {
  /* GEMM row-major NT: A is 150x170 (102 KB). */
  wgc_ptr a = random_dev(ctx, 150 * 170, 1), b = random_dev(ctx, 130 * 170, 2);
  wgc_ptr c = random_dev(ctx, 150 * 130, 3);
  RUN(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, 150, 130, 170, 0.5f,
               a, 170, b, 170, 2.0f, c, 130));
  keep(ctx, o, "gemm", c, 150 * 130);

  /* Batched, column-major, B shared by every batch. */
  wgc_ptr ba = random_dev(ctx, 7 * 40 * 60, 4),
          bb = random_dev(ctx, 60 * 50, 5);
  wgc_ptr bc = dev_alloc(ctx, 4 * 7 * 40 * 50);
  RUN(wgc_gemm_batched(ctx, WGC_COL_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 40, 50,
                       60, 1.0f, ba, 40, 40 * 60, bb, 60, 0, 0.0f, bc, 40,
                       40 * 50, 7));
  keep(ctx, o, "gemm_batched", bc, 7 * 40 * 50);

  /* A long reduction dimension: split-K. */
  wgc_ptr ka = random_dev(ctx, 4 * 30000, 6),
          kb = random_dev(ctx, 30000 * 4, 7);
  wgc_ptr kc = dev_alloc(ctx, 4 * 16);
  RUN(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 4, 4, 30000,
               1.0f, ka, 30000, kb, 4, 0.0f, kc, 4));
  keep(ctx, o, "gemm_long_k", kc, 16);

  wgc_conv2d_desc cd = {.n = 2,
                        .c = 8,
                        .h = 30,
                        .w = 30,
                        .k = 12,
                        .r = 3,
                        .s = 3,
                        .pad_h = 1,
                        .pad_w = 1};
  wgc_ptr in = random_dev(ctx, 2 * 8 * 30 * 30, 8);
  wgc_ptr f = random_dev(ctx, 12 * 8 * 9, 9), bias = random_dev(ctx, 12, 10);
  wgc_ptr out = dev_alloc(ctx, 4 * 2 * 12 * 30 * 30);
  RUN(wgc_conv2d(ctx, &cd, in, f, bias, out));
  keep(ctx, o, "conv2d", out, 2 * 12 * 30 * 30);

  wgc_attention_desc ad = {.batch = 2,
                           .heads = 4,
                           .heads_kv = 2,
                           .seq_q = 70,
                           .seq_kv = 90,
                           .head_dim = 32,
                           .scale = 0.17f,
                           .causal = WGC_CAUSAL_BOTTOM_RIGHT};
  wgc_ptr q = random_dev(ctx, 2 * 4 * 70 * 32, 11);
  wgc_ptr k = random_dev(ctx, 2 * 2 * 90 * 32, 12);
  wgc_ptr v = random_dev(ctx, 2 * 2 * 90 * 32, 13);
  wgc_ptr ao = dev_alloc(ctx, 4 * 2 * 4 * 70 * 32);
  RUN(wgc_attention(ctx, &ad, q, k, v, ao));
  keep(ctx, o, "attention", ao, 2 * 4 * 70 * 32);

  size_t s3[3] = {40, 700, 3}, s2[2] = {30000, 2};
  wgc_ptr r3 = random_dev(ctx, 40 * 700 * 3, 14),
          r2 = random_dev(ctx, 60000, 15);
  wgc_ptr ro3 = dev_alloc(ctx, 4 * 40 * 3), ro2 = dev_alloc(ctx, 4 * 2);
  RUN(wgc_reduce(ctx, WGC_REDUCE_SUM, r3, ro3, s3, 3, 1));
  RUN(wgc_reduce(ctx, WGC_REDUCE_MAX, r2, ro2, s2, 2, 0));
  keep(ctx, o, "reduce_middle", ro3, 40 * 3);
  keep(ctx, o, "reduce_leading", ro2, 2);

  wgc_ptr u = random_dev(ctx, 50000, 16);
  RUN(wgc_unary(ctx, WGC_UNARY_GELU, u, u, 50000));
  keep(ctx, o, "unary", u, 50000);

  size_t sa[3] = {100, 1, 70}, sb[3] = {1, 60, 70};
  wgc_ptr x = random_dev(ctx, 100 * 70, 17), y = random_dev(ctx, 60 * 70, 18);
  wgc_ptr xy = dev_alloc(ctx, 4 * 100 * 60 * 70);
  RUN(wgc_binary_broadcast(ctx, WGC_BINARY_MUL, x, sa, 3, y, sb, 3, xy));
  keep(ctx, o, "broadcast", xy, 100 * 60 * 70);

  /* A copy inside one allocation (WebGPU's buffer copy cannot do it). */
  wgc_ptr big = random_dev(ctx, 70000, 19);
  RUN(wgc_copy(ctx, at(big, 35000), big, 4 * 30000));
  keep(ctx, o, "copy", big, 70000);

  wgc_ptr all[] = {a, b, c, ba, bb, bc, ka,  kb,  kc, in, f, bias, out,
                   q, k, v, ao, r3, r2, ro3, ro2, u,  x,  y, xy,   big};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    dev_free(ctx, all[i]);
}

/* Compares two runs of the workload, output by output. */
static void compare(const outputs *got, const outputs *want) {
  CHECK(got->n == want->n, "%zu outputs, want %zu", got->n, want->n);
  for (size_t i = 0; i < got->n && i < want->n; i++) {
    double scale = 0;
    for (size_t j = 0; j < want->count[i]; j++)
      scale = fmax(scale, fabs(want->data[i][j]));
    for (size_t j = 0; j < want->count[i]; j++) {
      double g = got->data[i][j], w = want->data[i][j];
      if (!(fabs(g - w) <= 1e-4 * scale + 1e-6)) {
        CHECK(false, "%s[%zu] = %.9g, want %.9g", want->name[i], j, g, w);
        break;
      }
    }
  }
}

TEST(engine_split_bindings) {
  if (!case_begin("engine[webgpu] every op split to 64 KiB bindings"))
    return;
  wgc_context *cpu = test_ctx(WGC_BACKEND_CPU);
  wgc_context *gpu = new_ctx(WGC_BACKEND_WEBGPU, 64 * 1024);
  if (cpu && gpu) {
    outputs want = {0}, got = {0};
    workload(cpu, &want);
    workload(gpu, &got);
    compare(&got, &want);
    outputs_free(&want);
    outputs_free(&got);
  }
  wgc_destroy(gpu);
  case_end();
}

TEST(engine_pipeline_cache) {
  if (!case_begin("engine[webgpu] a second run compiles no pipeline"))
    return;
  wgc_context *cpu = test_ctx(WGC_BACKEND_CPU);
  wgc_context *gpu = new_ctx(WGC_BACKEND_WEBGPU, 0);
  if (cpu && gpu) {
    outputs want = {0}, first = {0}, second = {0};
    workload(cpu, &want);
    workload(gpu, &first);
    size_t compiled = wgc_pipelines_compiled(gpu);
    CHECK(compiled > 0, "the first run compiled no pipeline");
    workload(gpu, &second);
    CHECK(wgc_pipelines_compiled(gpu) == compiled,
          "the second run compiled %zu more pipelines",
          wgc_pipelines_compiled(gpu) - compiled);
    compare(&first, &want);
    compare(&second, &want);
    outputs_free(&want);
    outputs_free(&first);
    outputs_free(&second);
  }
  wgc_destroy(gpu);
  case_end();
}

/* 300 queued operations with multi-pass ones among them: batches flush in
 * the middle of operations, and nothing waits until the download. */
static void chain(wgc_context *ctx, outputs *o) {
  wgc_ptr x = random_dev(ctx, 1024, 20), ka = random_dev(ctx, 4 * 20000, 21);
  wgc_ptr kb = random_dev(ctx, 20000 * 4, 22), kc = dev_alloc(ctx, 4 * 16);
  wgc_ptr r = random_dev(ctx, 200000, 23), rs = dev_alloc(ctx, 4);
  size_t shape[1] = {200000};
  for (int i = 0; i < 300; i++) {
    switch (i % 10) {
    case 3:
      RUN(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 4, 4, 20000,
                   1.0f, ka, 20000, kb, 4, 0.5f, kc, 4));
      break;
    case 7:
      RUN(wgc_reduce(ctx, WGC_REDUCE_SUM, r, rs, shape, 1, 0));
      RUN(wgc_binary(ctx, WGC_BINARY_ADD, x, rs, x, 1));
      break;
    default:
      RUN(wgc_unary(ctx, i % 2 ? WGC_UNARY_TANH : WGC_UNARY_NEG, x, x, 1024));
    }
  }
  keep(ctx, o, "chain_x", x, 1024);
  keep(ctx, o, "chain_gemm", kc, 16);
  wgc_ptr all[] = {x, ka, kb, kc, r, rs};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    dev_free(ctx, all[i]);
}

TEST(engine_long_chain) {
  if (!case_begin("engine[webgpu] 300 queued ops with multi-pass ops inside"))
    return;
  wgc_context *cpu = test_ctx(WGC_BACKEND_CPU);
  wgc_context *gpu = test_ctx(WGC_BACKEND_WEBGPU);
  if (cpu && gpu) {
    outputs want = {0}, got = {0};
    chain(cpu, &want);
    chain(gpu, &got);
    compare(&got, &want);
    outputs_free(&want);
    outputs_free(&got);
  }
  case_end();
}

/* Grids beyond 65,535 workgroups in one dimension. */
static void big_grids(wgc_context *ctx, outputs *o) {
  size_t batch = 70000;
  wgc_ptr a = random_dev(ctx, batch * 6, 24), b = random_dev(ctx, 12, 25);
  wgc_ptr c = dev_alloc(ctx, 4 * batch * 8);
  RUN(wgc_gemm_batched(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 2, 4, 3,
                       1.0f, a, 3, 6, b, 4, 0, 0.0f, c, 4, 8, batch));
  keep(ctx, o, "gemm_70000_batches", c, batch * 8);
  size_t shape[2] = {300000, 3};
  wgc_ptr r = random_dev(ctx, 900000, 26), rs = dev_alloc(ctx, 4 * 300000);
  RUN(wgc_reduce(ctx, WGC_REDUCE_MIN, r, rs, shape, 2, 1));
  keep(ctx, o, "reduce_300000_rows", rs, 300000);
  wgc_ptr all[] = {a, b, c, r, rs};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    dev_free(ctx, all[i]);
}

TEST(engine_large_grids) {
  if (!case_begin("engine[webgpu] grids beyond 65535 workgroups"))
    return;
  wgc_context *cpu = test_ctx(WGC_BACKEND_CPU);
  wgc_context *gpu = test_ctx(WGC_BACKEND_WEBGPU);
  if (cpu && gpu) {
    outputs want = {0}, got = {0};
    big_grids(cpu, &want);
    big_grids(gpu, &got);
    compare(&got, &want);
    outputs_free(&want);
    outputs_free(&got);
  }
  case_end();
}

/* A reduction axis of 10^7 elements: every element counts (the replaced
 * backend dropped data past 65,536) and the sum is exact to float
 * tolerance against a double accumulation. */
TEST(engine_long_axis) {
  if (!case_begin("engine[webgpu] SUM and MAX over an axis of 10^7"))
    return;
  wgc_context *gpu = test_ctx(WGC_BACKEND_WEBGPU);
  const size_t n = 10000000;
  float *x = gpu ? falloc(n) : NULL;
  if (x) {
    fill_uniform(x, n, -1.0f, 1.0f, 27);
    x[n - 1] = 3.5f; /* the maximum sits in the very last element */
    double exact = 0, mag = 0;
    for (size_t i = 0; i < n; i++) {
      exact += x[i];
      mag += fabs(x[i]);
    }
    wgc_ptr in = dev_from(gpu, x, n), out = dev_alloc(gpu, 8);
    size_t shape[1] = {n};
    RUN(wgc_reduce(gpu, WGC_REDUCE_SUM, in, out, shape, 1, 0));
    RUN(wgc_reduce(gpu, WGC_REDUCE_MAX, in, at(out, 1), shape, 1, 0));
    float got[2] = {0, 0};
    dev_read(gpu, got, out, 2);
    CHECK(fabs(got[0] - exact) <= 1e-6 * mag + 1e-3,
          "sum %.9g, exact %.9g (sum of |x| %.3g)", got[0], exact, mag);
    CHECK(got[1] == 3.5f, "max %.9g, want 3.5", got[1]);
    dev_free(gpu, in);
    dev_free(gpu, out);
    free(x);
  }
  case_end();
}

/* Every operand of each op in ONE allocation, far apart or adjacent, under
 * 64 KiB bindings: launches bind each operand's window on its own where
 * windows do not overlap, and split where they would. */
static void one_allocation(wgc_context *ctx, outputs *o) {
  const size_t total = 400000; /* floats: 1.6 MB */
  wgc_ptr m = random_dev(ctx, total, 28);
  /* attention: Q, K, V, O each 8 heads x 40 x 16 = 5120 floats (20 KB) */
  wgc_attention_desc ad = {.batch = 2,
                           .heads = 4,
                           .seq_q = 40,
                           .seq_kv = 40,
                           .head_dim = 16,
                           .scale = 0.25f,
                           .causal = WGC_CAUSAL_TOP_LEFT};
  RUN(wgc_attention(ctx, &ad, at(m, 0), at(m, 100000), at(m, 200000),
                    at(m, 300000)));
  keep(ctx, o, "attention_one_allocation", at(m, 300000), 5120);
  /* binary: inputs ending right before the output (adjacent windows) */
  RUN(wgc_binary(ctx, WGC_BINARY_SUB, at(m, 10000), at(m, 40001), at(m, 70001),
                 30000));
  keep(ctx, o, "binary_adjacent", at(m, 70001), 30000);
  /* GEMM: A, B, C 100 KB apart, each larger than one binding */
  RUN(wgc_gemm(ctx, WGC_COL_MAJOR, WGC_TRANS, WGC_NO_TRANS, 90, 80, 200, 1.0f,
               at(m, 110001), 200, at(m, 160003), 200, 0.0f, at(m, 250007),
               90));
  keep(ctx, o, "gemm_one_allocation", at(m, 250007), 90 * 80);
  /* unary with its output right after its input; a copy in the same
   * allocation */
  RUN(wgc_unary(ctx, WGC_UNARY_SILU, at(m, 320000), at(m, 350001), 30000));
  keep(ctx, o, "unary_adjacent", at(m, 350001), 30000);
  RUN(wgc_copy(ctx, at(m, 385000), at(m, 320000), 4 * 15000));
  keep(ctx, o, "copy_one_allocation", at(m, 385000), 15000);
  dev_free(ctx, m);
}

TEST(engine_one_allocation) {
  if (!case_begin("engine[webgpu] operands of one allocation, 64 KiB bindings"))
    return;
  wgc_context *cpu = test_ctx(WGC_BACKEND_CPU);
  wgc_context *gpu = new_ctx(WGC_BACKEND_WEBGPU, 64 * 1024);
  if (cpu && gpu) {
    outputs want = {0}, got = {0};
    one_allocation(cpu, &want);
    one_allocation(gpu, &got);
    compare(&got, &want);
    outputs_free(&want);
    outputs_free(&got);
  }
  wgc_destroy(gpu);
  case_end();
}

/* Loops longer than llvmpipe runs in one invocation (65535 iterations, then
 * it stops silently): GEMM with k = 140000 where no split-K is planned (8192
 * outputs of the per-output kernel, two k a turn) and conv2d with 73728
 * taps. Every term must count: inputs of ones give exactly k. */
static void long_loops(wgc_context *ctx, outputs *o) {
  const size_t k = 140000, batch = 8192, c = 8192;
  float *ones = falloc(8 * c * 9);
  for (size_t i = 0; i < 8 * c * 9; i++)
    ones[i] = 1.0f;
  /* a 1 x k row of ones against a k x 1 column of ones (one allocation),
   * shared by every batch (stride 0) */
  wgc_ptr ab = dev_from(ctx, ones, k), cc = dev_alloc(ctx, 4 * batch);
  RUN(wgc_gemm_batched(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 1, 1, k,
                       1.0f, ab, k, 0, ab, 1, 0, 0.0f, cc, 1, 1, batch));
  keep(ctx, o, "gemm_k_140000", cc, batch);
  wgc_conv2d_desc d = {.n = 1, .c = c, .h = 3, .w = 3, .k = 8, .r = 3, .s = 3};
  wgc_ptr in = dev_from(ctx, ones, c * 9), f = dev_from(ctx, ones, 8 * c * 9);
  wgc_ptr out = dev_alloc(ctx, 4 * 8);
  RUN(wgc_conv2d(ctx, &d, in, f, 0, out));
  keep(ctx, o, "conv2d_73728_taps", out, 8);
  wgc_ptr all[] = {ab, cc, in, f, out};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    dev_free(ctx, all[i]);
  free(ones);
}

TEST(engine_long_loops) {
  if (!case_begin(
          "engine[webgpu] loops beyond 65535 iterations per invocation"))
    return;
  wgc_context *cpu = test_ctx(WGC_BACKEND_CPU);
  wgc_context *gpu = test_ctx(WGC_BACKEND_WEBGPU);
  if (cpu && gpu) {
    outputs want = {0}, got = {0};
    long_loops(cpu, &want);
    long_loops(gpu, &got);
    CHECK(want.n == 2 && want.data[0][0] == 140000.0f &&
              want.data[1][0] == 73728.0f,
          "cpu reference gave %g and %g", want.n ? want.data[0][0] : 0.0,
          want.n > 1 ? want.data[1][0] : 0.0);
    compare(&got, &want);
    outputs_free(&want);
    outputs_free(&got);
  }
  case_end();
}
