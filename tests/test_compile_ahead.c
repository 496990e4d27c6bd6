/* Compiling ahead: calls between wgc_compile_begin and wgc_compile_end run
 * nothing and write nothing; afterwards the same calls compile nothing and
 * give exactly what a context that compiled them on first use gives (and
 * the GEMM what a float64 reference gives); transfers are refused in the
 * mode, bad calls still rejected, the mode's own misuse rejected. */
#include "harness.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { M = 19, N = 40, K = 33, ROWS = 6, COLS = 32, SEQ = 12, HD = 16 };

/* Device buffers of one sequence: inputs filled, outputs sentinel. */
typedef struct bufs {
  wgc_ptr a, b, c, bias, x, y, z, q, k, v, o, wh;
} bufs;

static const size_t OUT_FLOATS[] = {M * N, ROWS *COLS, ROWS *COLS, 2 * SEQ *HD};

static bufs make_bufs(wgc_context *ctx) {
  bufs d;
  float *h = falloc(4096);
  fill_uniform(h, 4096, -1, 1, 3);
  d.a = dev_from(ctx, h, M * K);
  d.b = dev_from(ctx, h + 1000, K * N);
  d.bias = dev_from(ctx, h + 2000, N);
  d.x = dev_from(ctx, h + 100, ROWS * COLS);
  d.q = dev_from(ctx, h + 300, 2 * SEQ * HD);
  d.k = dev_from(ctx, h + 800, 2 * SEQ * HD);
  d.v = dev_from(ctx, h + 1500, 2 * SEQ * HD);
  /* B of the typed GEMM: N x K f16 (2 bytes each) */
  uint16_t *wh = xmalloc(2 * N * K);
  CHECK_STATUS(wgc_quantize(h + 2500, wh, WGC_DTYPE_F16, N * K), WGC_OK);
  d.wh = dev_alloc(ctx, 2 * N * K);
  CHECK_OK(ctx, wgc_upload(ctx, d.wh, wh, 2 * N * K));
  free(wh);
  for (size_t i = 0; i < 4096; i++)
    h[i] = sentinel();
  d.c = dev_from(ctx, h, M * N);
  d.y = dev_from(ctx, h, ROWS * COLS);
  d.z = dev_from(ctx, h, ROWS * COLS);
  d.o = dev_from(ctx, h, 2 * SEQ * HD);
  free(h);
  return d;
}

/* GEMM with an epilogue, a typed GEMM, unary, softmax, LayerNorm, reduce
 * and attention. */
static wgc_status sequence(wgc_context *ctx, const bufs *d) {
  wgc_gemm_epilogue ep = {.bias = d->bias, .activation = WGC_ACTIVATION_GELU};
  wgc_status s = wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, M,
                             N, K, 1.0f, d->a, K, d->b, N, 0.0f, d->c, N, &ep);
  wgc_gemm_epilogue typed = {.b_type = WGC_DTYPE_F16};
  if (s == WGC_OK)
    s = wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, M, N, K, 1.0f,
                    d->a, K, d->wh, K, 1.0f, d->c, N, &typed);
  size_t shape[2] = {ROWS, COLS};
  if (s == WGC_OK)
    s = wgc_unary(ctx, WGC_UNARY_TANH, d->x, d->y, ROWS * COLS);
  if (s == WGC_OK)
    s = wgc_softmax(ctx, d->y, d->z, shape, 2, 1);
  if (s == WGC_OK)
    s = wgc_layer_norm(ctx, d->z, 0, 0, d->y, shape, 2, 1, 1e-5f);
  if (s == WGC_OK)
    s = wgc_reduce(ctx, WGC_REDUCE_SUM, d->x, d->z, shape, 2, 1);
  wgc_attention_desc ad = {.batch = 1,
                           .heads = 2,
                           .seq_q = SEQ,
                           .seq_kv = SEQ,
                           .head_dim = HD,
                           .scale = 0.25f,
                           .causal = WGC_CAUSAL_TOP_LEFT};
  if (s == WGC_OK)
    s = wgc_attention(ctx, &ad, d->q, d->k, d->v, d->o);
  return s;
}

static float *read_all(wgc_context *ctx, const bufs *d) {
  const wgc_ptr outs[] = {d->c, d->y, d->z, d->o};
  size_t total = 0;
  for (size_t i = 0; i < 4; i++)
    total += OUT_FLOATS[i];
  float *h = falloc(total), *at = h;
  for (size_t i = 0; i < 4; i++) {
    dev_read(ctx, at, outs[i], OUT_FLOATS[i]);
    at += OUT_FLOATS[i];
  }
  return h;
}

static void free_bufs(wgc_context *ctx, const bufs *d) {
  const wgc_ptr all[] = {d->a, d->b, d->c, d->bias, d->x, d->y,
                         d->z, d->q, d->k, d->v,    d->o, d->wh};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    dev_free(ctx, all[i]);
}

static void fired(wgc_status s, void *user) { *(wgc_status *)user = s; }

TEST(compile_ahead_then_calls_compile_nothing) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_backend be = test_backends[bi];
    if (!case_begin("compile_ahead[%s] sequence of 7 ops", backend_label(be)))
      continue;
    /* Fresh contexts: their caches start empty. */
    wgc_context *ahead = new_ctx(be, 0), *plain = new_ctx(be, 0);
    if (!ahead || !plain) {
      wgc_destroy(ahead);
      wgc_destroy(plain);
      case_end();
      continue;
    }
    bufs d = make_bufs(ahead), e = make_bufs(plain);
    CHECK_OK(ahead, wgc_synchronize(ahead));
    float *before = read_all(ahead, &d);

    CHECK_OK(ahead, wgc_compile_begin(ahead));
    CHECK_OK(ahead, sequence(ahead, &d));
    CHECK(wgc_pipelines_compiled(ahead) == 0,
          "%zu pipelines compiled before wgc_compile_end",
          wgc_pipelines_compiled(ahead));
    wgc_status done = WGC_ERR_DEVICE;
    CHECK_OK(ahead, wgc_compile_end_async(ahead, fired, &done));
    CHECK_OK(ahead, wgc_synchronize(ahead));
    CHECK_STATUS(done, WGC_OK);
    size_t compiled = wgc_pipelines_compiled(ahead);
    /* nothing ran: every output still holds what it held */
    float *after = read_all(ahead, &d);
    size_t total = M * N + 2 * ROWS * COLS + 2 * SEQ * HD, changed = 0;
    for (size_t i = 0; i < total; i++)
      changed += !same_bits(before[i], after[i]);
    CHECK(changed == 0, "%zu output elements changed while compiling ahead",
          changed);
    if (be == WGC_BACKEND_WEBGPU)
      CHECK(compiled >= 7, "only %zu pipelines compiled ahead", compiled);

    /* The calls themselves now compile nothing ... */
    CHECK_OK(ahead, sequence(ahead, &d));
    CHECK_OK(ahead, wgc_synchronize(ahead));
    CHECK(wgc_pipelines_compiled(ahead) == compiled,
          "the calls compiled %zu more pipelines after compiling ahead",
          wgc_pipelines_compiled(ahead) - compiled);
    /* ... and give exactly what compiling on first use gives. */
    CHECK_OK(plain, sequence(plain, &e));
    float *got = read_all(ahead, &d), *want = read_all(plain, &e);
    size_t differ = 0;
    for (size_t i = 0; i < total; i++)
      differ += !same_bits(got[i], want[i]);
    CHECK(differ == 0, "%zu of %zu elements differ from the plain context",
          differ, total);
    if (be == WGC_BACKEND_WEBGPU)
      CHECK(wgc_pipelines_compiled(plain) == compiled,
            "the plain context compiled %zu pipelines, compiling ahead %zu",
            wgc_pipelines_compiled(plain), compiled);
    /* The first GEMM against float64 (the typed one adds its share). */
    float *h = falloc(4096);
    fill_uniform(h, 4096, -1, 1, 3);
    double worst = 0;
    for (size_t i = 0; i < M; i++)
      for (size_t j = 0; j < N; j++) {
        double acc = h[2000 + j], acc2 = 0;
        for (size_t p = 0; p < K; p++) {
          acc += (double)h[i * K + p] * h[1000 + p * N + j];
          uint16_t bits;
          float w;
          CHECK_STATUS(
              wgc_quantize(&h[2500 + j * K + p], &bits, WGC_DTYPE_F16, 1),
              WGC_OK);
          CHECK_STATUS(wgc_dequantize(&bits, WGC_DTYPE_F16, &w, 1), WGC_OK);
          acc2 += (double)h[i * K + p] * w;
        }
        double gelu = 0.5 * acc * (1.0 + erf(acc / sqrt(2.0)));
        double err = fabs(got[i * N + j] - (gelu + acc2));
        worst = err > worst ? err : worst;
      }
    CHECK(worst < 1e-4, "GEMM worst error %g against float64", worst);
    free(h);
    free(before);
    free(after);
    free(got);
    free(want);
    free_bufs(ahead, &d);
    free_bufs(plain, &e);
    wgc_destroy(ahead);
    wgc_destroy(plain);
    case_end();
  }
}

TEST(compile_ahead_refusals) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_backend be = test_backends[bi];
    if (!case_begin("compile_ahead_refusals[%s]", backend_label(be)))
      continue;
    wgc_context *ctx = new_ctx(be, 0);
    if (!ctx) {
      case_end();
      continue;
    }
    float h[8] = {1, 2, 3, 4, 5, 6, 7, 8}, back[8];
    wgc_ptr p = dev_from(ctx, h, 8), q = dev_alloc(ctx, 32);
    CHECK_STATUS(wgc_compile_end(ctx), WGC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(wgc_last_error(ctx), "not compiling ahead"), "message: %s",
          wgc_last_error(ctx));
    CHECK_OK(ctx, wgc_compile_begin(ctx));
    CHECK_STATUS(wgc_compile_begin(ctx), WGC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(wgc_last_error(ctx), "already compiling ahead"), "message: %s",
          wgc_last_error(ctx));
    const float nine[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    CHECK_STATUS(wgc_upload(ctx, p, nine, 32), WGC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(wgc_last_error(ctx), "wgc_upload: the context is compiling"),
          "message: %s", wgc_last_error(ctx));
    CHECK_STATUS(wgc_download(ctx, back, p, 32), WGC_ERR_INVALID_ARGUMENT);
    wgc_status never = WGC_OK;
    CHECK_STATUS(wgc_download_async(ctx, back, p, 32, fired, &never),
                 WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_copy(ctx, q, p, 32), WGC_ERR_INVALID_ARGUMENT);
    /* a bad call is still rejected, and the mode goes on */
    CHECK_REJECTED(ctx, wgc_unary(ctx, WGC_UNARY_RELU, p, q, 9), "wgc_unary",
                   "input");
    CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_RELU, p, q, 8));
    CHECK_STATUS(wgc_compile_end_async(ctx, NULL, NULL),
                 WGC_ERR_INVALID_ARGUMENT);
    CHECK_OK(ctx, wgc_compile_end(ctx));
    CHECK_OK(ctx, wgc_synchronize(ctx));
    CHECK(never == WGC_OK, "a refused download's callback fired");
    /* nothing was written: p as uploaded, q zeros */
    CHECK_DEVICE_EQUALS(ctx, p, h, 8, "p");
    const float zeros[8] = {0};
    CHECK_DEVICE_EQUALS(ctx, q, zeros, 8, "q");
    CHECK_STATUS(wgc_compile_begin(NULL), WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_compile_end(NULL), WGC_ERR_INVALID_ARGUMENT);
    dev_free(ctx, p);
    dev_free(ctx, q);
    wgc_destroy(ctx);
    case_end();
  }
}
