/* wgc's side of every case, on one context (the WebGPU backend on this
 * part's adapter, or the CPU backend), plus wgc against itself: kernel
 * forms, queued against waiting, batched against looped, cached pipelines
 * against the first call. */
#include "parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/gpt_model.h"
#include "bench.h"
#include "shapes.h"

static void check(wgc_context *ctx, wgc_status s, const char *what) {
  if (s != WGC_OK)
    bench_die("%s failed: %s", what, wgc_last_error(ctx));
}
#define OK(ctx, call) check(ctx, (call), #call)

static wgc_ptr random_buffer(wgc_context *ctx, size_t n, unsigned seed) {
  float *h = malloc(n * sizeof *h);
  if (!h)
    bench_die("out of host memory");
  srand(seed);
  for (size_t i = 0; i < n; i++)
    h[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  wgc_ptr p;
  OK(ctx, wgc_alloc(ctx, n * sizeof *h, &p));
  OK(ctx, wgc_upload(ctx, p, h, n * sizeof *h));
  free(h);
  return p;
}

static wgc_context *make(wgc_backend b, const char *kernels) {
  if (kernels)
    setenv("WGC_KERNELS", kernels, 1);
  /* The steady state of a long run: GEMM's best blocks compiled at once,
   * not only after the calls that pay for their compile time (see
   * src/webgpu/gemm_select.c), unless the caller says otherwise. */
  int eager_set = getenv("WGC_GEMM_EAGER") != NULL;
  if (!eager_set)
    setenv("WGC_GEMM_EAGER", "1", 1);
  wgc_options o = {.backend = b};
  wgc_context *ctx;
  wgc_status s = wgc_create(&o, &ctx);
  unsetenv("WGC_KERNELS");
  if (!eager_set)
    unsetenv("WGC_GEMM_EAGER");
  if (s != WGC_OK)
    bench_die("wgc_create failed: %s", wgc_last_error(NULL));
  return ctx;
}

/* ---- GEMM ---------------------------------------------------------------- */

typedef struct gemm_run {
  wgc_context *ctx;
  const gemm_shape *s;
  wgc_ptr a, b, c;
  int looped;
} gemm_run;

static void run_gemm(void *arg) {
  gemm_run *g = arg;
  const gemm_shape *s = g->s;
  size_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
  wgc_transpose ta = s->ta ? WGC_TRANS : WGC_NO_TRANS;
  wgc_transpose tb = s->tb ? WGC_TRANS : WGC_NO_TRANS;
  size_t sa = s->m * s->k, sb = s->k * s->n, sc = s->m * s->n;
  if (s->batch > 1 && !g->looped)
    OK(g->ctx, wgc_gemm_batched(g->ctx, WGC_ROW_MAJOR, ta, tb, s->m, s->n, s->k,
                                1.0f, g->a, lda, sa, g->b, ldb, sb, 0.0f, g->c,
                                s->n, sc, s->batch));
  else
    for (size_t i = 0; i < s->batch; i++)
      OK(g->ctx, wgc_gemm(g->ctx, WGC_ROW_MAJOR, ta, tb, s->m, s->n, s->k, 1.0f,
                          g->a + 4 * i * sa, lda, g->b + 4 * i * sb, ldb, 0.0f,
                          g->c + 4 * i * sc, s->n));
  OK(g->ctx, wgc_synchronize(g->ctx));
}

static void gemm_case(wgc_context *ctx, const gemm_shape *s, const char *system,
                      int looped) {
  gemm_run g = {ctx, s, 0, 0, 0, looped};
  g.a = random_buffer(ctx, s->m * s->k * s->batch, 1);
  g.b = random_buffer(ctx, s->k * s->n * s->batch, 2);
  OK(ctx, wgc_alloc(ctx, 4 * s->m * s->n * s->batch, &g.c));
  int reps = bench_reps();
  double t = bench_median(run_gemm, &g, reps);
  record("gemm", s->name, system, t, reps, gemm_flops(s), "GFLOP/s", 0);
  wgc_free(ctx, g.a);
  wgc_free(ctx, g.b);
  wgc_free(ctx, g.c);
}

/* WGC_BENCH_GEMM_VARIANTS="v1,v2,...": each GEMM shape also through each
 * forced kernel variant (WGC_GEMM_VARIANT, see src/webgpu/gemm_select.c),
 * labelled wgc:v1, ..., right after the planner's own choice, to compare a
 * selection against the alternatives in one run. */
static void gemm_variant_cases(wgc_context *ctx, const gemm_shape *s) {
  const char *list = getenv("WGC_BENCH_GEMM_VARIANTS");
  while (list && *list) {
    size_t len = strcspn(list, ",");
    char variant[48], label[64];
    if (len > 0 && len < sizeof variant) {
      snprintf(variant, sizeof variant, "%.*s", (int)len, list);
      snprintf(label, sizeof label, "wgc:%s", variant);
      setenv("WGC_GEMM_VARIANT", variant, 1);
      gemm_case(ctx, s, label, 0);
      unsetenv("WGC_GEMM_VARIANT");
    }
    list += len + (list[len] == ',');
  }
}

/* ---- GEMM with typed weights ----------------------------------------------
 * y = x W^T with W [n, k] (a linear layer's weights, k contiguous) stored
 * f32, f16, bf16, Q8_0 or Q4_0 (weight_shapes), one case per shape with a
 * row per type ("wgc" is f32, so the ratios are each type's time over
 * f32's): decoding (m = 1) reads each weight once, where the narrower
 * types read 2-7x fewer bytes. */

typedef struct weights_run {
  wgc_context *ctx;
  const gemm_shape *s;
  wgc_ptr x, w, y;
  wgc_dtype t;
} weights_run;

static void run_weights(void *arg) {
  weights_run *g = arg;
  const gemm_shape *s = g->s;
  wgc_gemm_epilogue ep = {.b_type = g->t};
  OK(g->ctx,
     wgc_gemm_ex(g->ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, s->m, s->n,
                 s->k, 1.0f, g->x, s->k, g->w, s->k, 0.0f, g->y, s->n, &ep));
  OK(g->ctx, wgc_synchronize(g->ctx));
}

static void weights_cases(wgc_context *ctx, const char *system, where w) {
  static const wgc_dtype types[] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                    WGC_DTYPE_BF16, WGC_DTYPE_Q8_0,
                                    WGC_DTYPE_Q4_0};
  enum { NT = sizeof types / sizeof *types };
  size_t count;
  const gemm_shape *ws = weight_shapes(w, &count);
  size_t n = ws[0].n, k = ws[0].k, mmax = 0;
  for (size_t i = 0; i < count; i++)
    mmax = ws[i].m > mmax ? ws[i].m : mmax;
  float *h = malloc(n * k * sizeof *h);
  if (!h)
    bench_die("out of host memory");
  srand(3);
  for (size_t i = 0; i < n * k; i++)
    h[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  wgc_ptr wt[NT];
  for (size_t t = 0; t < NT; t++) {
    size_t bytes;
    OK(ctx, wgc_dtype_bytes(types[t], n * k, &bytes));
    void *q = malloc(bytes);
    if (!q)
      bench_die("out of host memory");
    OK(ctx, wgc_quantize(h, q, types[t], n * k));
    OK(ctx, wgc_alloc(ctx, bytes, &wt[t]));
    OK(ctx, wgc_upload(ctx, wt[t], q, bytes));
    free(q);
  }
  free(h);
  weights_run g = {.ctx = ctx, .x = random_buffer(ctx, mmax * k, 4)};
  OK(ctx, wgc_alloc(ctx, 4 * mmax * n, &g.y));
  for (size_t i = 0; i < count; i++)
    for (size_t t = 0; t < NT; t++) {
      char label[48];
      snprintf(label, sizeof label, "%s%s%s", system, t ? ":" : "",
               t ? wgc_dtype_name(types[t]) : "");
      g.s = &ws[i];
      g.w = wt[t];
      g.t = types[t];
      int reps = bench_reps();
      double sec = bench_median(run_weights, &g, reps);
      record("weights", ws[i].name, label, sec, reps, gemm_flops(&ws[i]),
             "GFLOP/s", 0);
    }
  for (size_t t = 0; t < NT; t++)
    wgc_free(ctx, wt[t]);
  wgc_free(ctx, g.x);
  wgc_free(ctx, g.y);
}

/* ---- 2-byte outputs ---------------------------------------------------------
 * Ops with f32 inputs writing an f32 output ("wgc"), an f16 one and a bf16
 * one: the ratios are each type's time over f32's. A 2-byte output shares
 * its 32-bit words between elements, so where invocations cannot own
 * whole words a kernel writes halves with atomic operations. */

enum {
  OUT_ELEMS = 1 << 20,
  OUT_ROWS = 128,
  OUT_COLS = 384,
  OUT_SQUARE = 512,
  OUT_WIDE_ROWS = 256,
  OUT_WIDE_COLS = 4096
};

typedef struct outputs_run {
  wgc_context *ctx;
  int kind;
  wgc_ptr x, y, s, out;
  wgc_dtype t;
} outputs_run;

static void run_outputs(void *arg) {
  outputs_run *o = arg;
  wgc_context *ctx = o->ctx;
  const wgc_dtype f = WGC_DTYPE_F32;
  size_t rows[2] = {OUT_ROWS, OUT_COLS}, sq[2] = {OUT_SQUARE, OUT_SQUARE},
         src_t[2] = {1, OUT_SQUARE}, dst_r[2] = {OUT_SQUARE, 1};
  wgc_attention_desc a = {.batch = 1,
                          .heads = 12,
                          .seq_q = OUT_ROWS,
                          .seq_kv = OUT_ROWS,
                          .head_dim = 32,
                          .scale = 0.17677669f,
                          .o_type = o->t};
  wgc_gemm_epilogue ep = {.c_type = o->t};
  size_t wide[2] = {OUT_WIDE_ROWS, OUT_WIDE_COLS};
  wgc_pool2d_desc pool = {.n = 1,
                          .c = 64,
                          .h = 112,
                          .w = 112,
                          .r = 3,
                          .s = 3,
                          .stride_h = 2,
                          .stride_w = 2,
                          .pad_h = 1,
                          .pad_w = 1,
                          .mode = WGC_POOL_MAX,
                          .output_type = o->t};
  switch (o->kind) {
  case 0:
    OK(ctx, wgc_unary_ex(ctx, WGC_UNARY_NEG, o->x, f, o->out, o->t, OUT_ELEMS));
    break;
  case 1:
    OK(ctx, wgc_binary_ex(ctx, WGC_BINARY_ADD, o->x, f, o->y, f, o->out, o->t,
                          OUT_ELEMS));
    break;
  case 2:
    OK(ctx, wgc_layer_norm_ex(ctx, o->x, f, o->s, f, o->y, f, o->out, o->t,
                              rows, 2, 1, 1e-5f));
    break;
  case 3:
    OK(ctx, wgc_softmax_ex(ctx, o->x, f, o->out, o->t, rows, 2, 1));
    break;
  case 4:
    OK(ctx,
       wgc_copy_strided_ex(ctx, o->out, o->t, dst_r, o->x, f, src_t, sq, 2));
    break;
  case 5:
    OK(ctx, wgc_attention(ctx, &a, o->x, o->y, o->s, o->out));
    break;
  case 6: /* rows past the one-launch form of CPU adapters */
    OK(ctx, wgc_layer_norm_ex(ctx, o->x, f, o->s, f, o->y, f, o->out, o->t,
                              wide, 2, 1, 1e-5f));
    break;
  case 7:
    OK(ctx, wgc_pool2d(ctx, &pool, o->x, o->out));
    break;
  default:
    OK(ctx, wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, OUT_ROWS,
                        4 * OUT_COLS, OUT_COLS, 1.0f, o->x, OUT_COLS, o->y,
                        OUT_COLS, 0.0f, o->out, 4 * OUT_COLS, &ep));
  }
  OK(ctx, wgc_synchronize(ctx));
}

static void outputs_cases(wgc_context *ctx, const char *system) {
  static const char *names[] = {"unary NEG, 1M floats",
                                "binary ADD, 1M floats",
                                "layer_norm 128x384",
                                "softmax 128x384",
                                "copy_strided transpose 512x512",
                                "attention 12 heads, 128x128, d 32",
                                "layer_norm 256x4096",
                                "max pool 3x3/2 over 64x112x112",
                                "gemm 128x1536x384 (x W^T)"};
  static const wgc_dtype types[] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                    WGC_DTYPE_BF16};
  outputs_run o = {.ctx = ctx,
                   .x = random_buffer(ctx, OUT_ELEMS, 11),
                   .y = random_buffer(ctx, OUT_ELEMS, 12),
                   .s = random_buffer(ctx, OUT_ELEMS, 13)};
  OK(ctx, wgc_alloc(ctx, 4 * OUT_ELEMS, &o.out));
  int reps = bench_reps();
  for (int k = 0; k < (int)(sizeof names / sizeof *names); k++)
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
      char label[48];
      snprintf(label, sizeof label, "%s%s%s", system, t ? ":" : "",
               t ? wgc_dtype_name(types[t]) : "");
      o.kind = k;
      o.t = types[t];
      record("outputs", names[k], label, bench_median(run_outputs, &o, reps),
             reps, 1, "ms", 0);
    }
  wgc_free(ctx, o.x);
  wgc_free(ctx, o.y);
  wgc_free(ctx, o.s);
  wgc_free(ctx, o.out);
}

/* ---- decoder tokens/s per weight type --------------------------------------
 * The demo's decoder (examples/gpt_model.c, build/gpt's config) decoding
 * one token at a time over its KV cache, with its linear layers' weights
 * f32, f16, Q8_0 and Q4_0 (gpt_model_init_typed), one model per type on
 * the same context, timed in turn (round-robin). A timed run decodes
 * DECODE_TOKENS positions after a prompt the setup ran once (the same
 * positions each run, so every run does the same work) and downloads each
 * token, as a streaming decoder must. "wgc" is f32, so each type's ratio
 * is its time per token over f32's: below 1 is faster. */

enum { DECODE_PROMPT = 16, DECODE_TOKENS = 32 };

static const gpt_config DECODER = {.vocab = 256,
                                   .d_model = 128,
                                   .heads = 4,
                                   .layers = 4,
                                   .d_ff = 512,
                                   .context = 128,
                                   .seed = 20240611};

static void run_decode(void *arg) {
  gpt_model *m = arg;
  for (size_t pos = DECODE_PROMPT; pos < DECODE_PROMPT + DECODE_TOKENS; pos++) {
    int32_t token;
    OK(m->ctx, gpt_forward(m, pos, 1, 1));
    OK(m->ctx, wgc_download(m->ctx, &token, m->tokens + 4 * (pos + 1), 4));
  }
}

static void decoder_cases(wgc_context *ctx, const char *system) {
  static const wgc_dtype types[] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                    WGC_DTYPE_Q8_0, WGC_DTYPE_Q4_0};
  enum { NT = sizeof types / sizeof *types, MAX_REPS = 64 };
  float *weights = gpt_weights_new(&DECODER);
  if (!weights)
    bench_die("out of host memory");
  int32_t prompt[DECODE_PROMPT];
  for (int i = 0; i < DECODE_PROMPT; i++)
    prompt[i] = "wgc decodes on a"[i];
  gpt_model m[NT];
  for (size_t t = 0; t < NT; t++) {
    OK(ctx, gpt_model_init_typed(&m[t], ctx, &DECODER, weights, types[t]));
    OK(ctx, gpt_set_tokens(&m[t], 0, prompt, DECODE_PROMPT));
    OK(ctx, gpt_forward(&m[t], 0, DECODE_PROMPT, 1));
    run_decode(&m[t]); /* warm-up: compiles the type's kernels */
  }
  free(weights);
  /* Round-robin, so that a change in the machine's load reaches every
   * type alike. */
  int reps = bench_reps() < MAX_REPS ? bench_reps() : MAX_REPS;
  double sec[NT][MAX_REPS];
  for (int r = 0; r < reps; r++)
    for (size_t t = 0; t < NT; t++) {
      double t0 = bench_now();
      run_decode(&m[t]);
      sec[t][r] = bench_now() - t0;
    }
  for (size_t t = 0; t < NT; t++) {
    char label[48];
    snprintf(label, sizeof label, "%s%s%s", system, t ? ":" : "",
             t ? wgc_dtype_name(types[t]) : "");
    record("decoder", "gpt d128 4 layers, 32 tokens one at a time", label,
           bench_median_of(sec[t], reps), reps, DECODE_TOKENS, "tokens/s",
           (double)m[t].dev.total);
    gpt_model_free(&m[t]);
  }
}

/* ---- conv2d, attention, reduce, element-wise ------------------------------
 */

typedef struct conv_run {
  wgc_context *ctx;
  wgc_conv2d_desc d;
  wgc_ptr in, f, out;
} conv_run;

static void run_conv(void *arg) {
  conv_run *c = arg;
  OK(c->ctx, wgc_conv2d(c->ctx, &c->d, c->in, c->f, 0, c->out));
  OK(c->ctx, wgc_synchronize(c->ctx));
}

static void conv_case(wgc_context *ctx, const conv_shape *s,
                      const char *system) {
  conv_run c = {ctx,
                {.n = 1,
                 .c = s->c,
                 .h = s->h,
                 .w = s->w,
                 .k = s->k,
                 .r = s->r,
                 .s = s->r,
                 .stride_h = s->stride,
                 .stride_w = s->stride,
                 .pad_h = s->pad,
                 .pad_w = s->pad},
                0,
                0,
                0};
  size_t p, q;
  OK(ctx, wgc_conv2d_output_size(&c.d, &p, &q));
  c.in = random_buffer(ctx, s->c * s->h * s->w, 3);
  c.f = random_buffer(ctx, s->k * s->c * s->r * s->r, 4);
  OK(ctx, wgc_alloc(ctx, 4 * s->k * p * q, &c.out));
  int reps = bench_reps();
  double t = bench_median(run_conv, &c, reps);
  record("conv2d", s->name, system, t, reps, conv_flops(s), "GFLOP/s", 0);
  wgc_free(ctx, c.in);
  wgc_free(ctx, c.f);
  wgc_free(ctx, c.out);
}

typedef struct attn_run {
  wgc_context *ctx;
  wgc_attention_desc d;
  wgc_ptr q, k, v, o;
} attn_run;

static void run_attn(void *arg) {
  attn_run *a = arg;
  OK(a->ctx, wgc_attention(a->ctx, &a->d, a->q, a->k, a->v, a->o));
  OK(a->ctx, wgc_synchronize(a->ctx));
}

static void attn_case(wgc_context *ctx, const attn_shape *s,
                      const char *system) {
  size_t n = ATTN_HEADS * s->seq * s->dim;
  size_t nq = ATTN_HEADS * attn_rows(s) * s->dim;
  attn_run a = {ctx,
                {.batch = 1,
                 .heads = ATTN_HEADS,
                 .seq_q = attn_rows(s),
                 .seq_kv = s->seq,
                 .head_dim = s->dim,
                 .scale = 1.0f / (s->dim == 64 ? 8.0f : 11.3137085f),
                 .causal = s->causal ? WGC_CAUSAL_TOP_LEFT : WGC_CAUSAL_NONE},
                random_buffer(ctx, nq, 5),
                random_buffer(ctx, n, 6),
                random_buffer(ctx, n, 7),
                0};
  OK(ctx, wgc_alloc(ctx, 4 * nq, &a.o));
  int reps = bench_reps();
  double t = bench_median(run_attn, &a, reps);
  char name[64];
  /* The fused kernel keeps no score matrix: its device memory is the four
   * tensors (its split path, which takes scratch, needs tensors beyond one
   * binding, far larger than these; decoding's key blocks on CPU adapters
   * take scratch for their states, 82 KB at d64, not counted here). */
  record("attention", attn_name(s, name, sizeof name), system, t, reps,
         attn_flops(s), "GFLOP/s", 4.0 * 2 * (double)(n + nq));
  wgc_free(ctx, a.q);
  wgc_free(ctx, a.k);
  wgc_free(ctx, a.v);
  wgc_free(ctx, a.o);
}

typedef struct stream_run {
  wgc_context *ctx;
  int kind; /* 0 reduce rows, 1 reduce columns, 2 unary, 3 binary */
  wgc_ptr x, y, out;
} stream_run;

static void run_stream(void *arg) {
  stream_run *r = arg;
  size_t shape[2] = {REDUCE_N, REDUCE_N};
  switch (r->kind) {
  case 0:
  case 1:
    OK(r->ctx, wgc_reduce(r->ctx, WGC_REDUCE_SUM, r->x, r->out, shape, 2,
                          r->kind == 0 ? 1 : 0));
    break;
  case 2:
    OK(r->ctx, wgc_unary(r->ctx, WGC_UNARY_RELU, r->x, r->out, ELEMENTWISE_N));
    break;
  default:
    OK(r->ctx,
       wgc_binary(r->ctx, WGC_BINARY_ADD, r->x, r->y, r->out, ELEMENTWISE_N));
  }
  OK(r->ctx, wgc_synchronize(r->ctx));
}

static void stream_cases(wgc_context *ctx, const char *system,
                         case_hook after) {
  static const char *names[] = {"reduce SUM over rows of 4096x4096",
                                "reduce SUM over columns of 4096x4096",
                                UNARY_CASE, BINARY_CASE};
  static const char *groups[] = {"reduce", "reduce", "elementwise",
                                 "elementwise"};
  /* bytes each run reads and writes */
  double n = (double)ELEMENTWISE_N;
  double bytes[] = {4 * n + 4 * REDUCE_N, 4 * n + 4 * REDUCE_N, 8 * n, 12 * n};
  stream_run r = {ctx, 0, random_buffer(ctx, ELEMENTWISE_N, 8),
                  random_buffer(ctx, ELEMENTWISE_N, 9), 0};
  OK(ctx, wgc_alloc(ctx, 4 * ELEMENTWISE_N, &r.out));
  int reps = bench_reps();
  for (int k = 0; k < 4; k++) {
    if (!bench_group_wanted(groups[k]))
      continue;
    r.kind = k;
    double t = bench_median(run_stream, &r, reps);
    record(groups[k], names[k], system, t, reps, bytes[k], "GB/s", 0);
    if (after && k >= 2)
      after("elementwise", (size_t)k - 2);
  }
  wgc_free(ctx, r.x);
  wgc_free(ctx, r.y);
  wgc_free(ctx, r.out);
}

/* ---- host cost per operation ------------------------------------------------
 */

typedef struct chain_run {
  wgc_context *ctx;
  wgc_ptr x;
  int mode; /* 0 one download, 1 download each, 2 synchronize each */
} chain_run;

static void run_chain(void *arg) {
  chain_run *c = arg;
  float out[TINY_N];
  for (int i = 0; i < TINY_OPS; i++) {
    OK(c->ctx, wgc_unary(c->ctx, WGC_UNARY_NEG, c->x, c->x, TINY_N));
    if (c->mode == 1)
      OK(c->ctx, wgc_download(c->ctx, out, c->x, sizeof out));
    else if (c->mode == 2)
      OK(c->ctx, wgc_synchronize(c->ctx));
  }
  OK(c->ctx, wgc_download(c->ctx, out, c->x, sizeof out));
}

static void host_cases(wgc_context *ctx, const char *system, int variants) {
  chain_run c = {ctx, random_buffer(ctx, TINY_N, 10), 0};
  int reps = bench_reps();
  double t = bench_median(run_chain, &c, reps);
  record("host", HOST_CHAIN, system, t, reps, TINY_OPS, "us/op", 0);
  if (variants) {
    /* The backend wgc replaced waited for the device after every op. */
    c.mode = 2;
    t = bench_median(run_chain, &c, reps);
    record("host", HOST_CHAIN, "wgc:sync-each", t, reps, TINY_OPS, "us/op", 0);
  }
  if (variants || !strcmp(system, "wgc-cpu")) {
    /* The same chain while timing records are kept: the price of
     * recording (each op submitted alone on WebGPU); the plain row above
     * is the price of having the feature while off. */
    c.mode = 0;
    OK(ctx, wgc_profile_start(ctx));
    t = bench_median(run_chain, &c, reps);
    OK(ctx, wgc_profile_stop(ctx));
    size_t n = 0;
    OK(ctx, wgc_profile_records(ctx, NULL, 0, &n));
    if (n != (size_t)TINY_OPS * (size_t)((reps < 64 ? reps : 64) + 1))
      bench_die("%s: %zu timing records for %d chains of %d ops", system, n,
                reps + 1, TINY_OPS);
    record("host", HOST_CHAIN, variants ? "wgc:profiled" : "wgc-cpu:profiled",
           t, reps, TINY_OPS, "us/op", 0);
  }
  c.mode = 1;
  t = bench_median(run_chain, &c, reps);
  record("host", HOST_ROUND_TRIP, system, t, reps, TINY_OPS, "us/op", 0);
  wgc_free(ctx, c.x);
}

/* The first call of a kernel compiles its pipeline; later calls reuse it.
 * Each first call gets a fresh context (created outside the timing). */
static double silu_call(wgc_context *ctx, wgc_ptr x) {
  double t0 = bench_now();
  OK(ctx, wgc_unary(ctx, WGC_UNARY_SILU, x, x, 1024));
  OK(ctx, wgc_synchronize(ctx));
  return bench_now() - t0;
}

/* A GEMM's first call on a new context (bench_wgc --gemm-first-call, in a
 * process of its own: the driver reads MESA_SHADER_CACHE_DISABLE once). */
double part_gemm_first_call(void) {
  enum { N = 256 };
  wgc_context *ctx = make(WGC_BACKEND_WEBGPU, NULL);
  wgc_ptr a = random_buffer(ctx, N * N, 11), c;
  OK(ctx, wgc_alloc(ctx, 4 * N * N, &c));
  OK(ctx, wgc_synchronize(ctx));
  double t0 = bench_now();
  OK(ctx, wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, N, N, N,
                   1.0f, a, N, a, N, 0.0f, c, N));
  OK(ctx, wgc_synchronize(ctx));
  double t = bench_now() - t0;
  wgc_destroy(ctx);
  return t;
}

/* That first call with the shader cache off, as on a new machine: by
 * default a block that compiles fast stands in for one that does not
 * (src/webgpu/gemm_select.c); eager compiles the best block at once. */
static double gemm_first_call(int eager) {
  char env[80];
  snprintf(env, sizeof env, "MESA_SHADER_CACHE_DISABLE=true WGC_GEMM_EAGER=%d",
           eager);
  FILE *f = bench_popen_self(env, "--gemm-first-call");
  double t = -1;
  if (fscanf(f, "%lf", &t) != 1 || pclose(f) != 0 || t < 0)
    bench_die("bench_wgc --gemm-first-call failed");
  return t;
}

static void pipeline_cases(void) {
  int reps = bench_reps();
  double first[64], again[64];
  for (int i = 0; i < reps && i < 64; i++) {
    wgc_context *ctx = make(WGC_BACKEND_WEBGPU, NULL);
    wgc_ptr x;
    OK(ctx, wgc_alloc(ctx, 4096, &x));
    OK(ctx, wgc_synchronize(ctx));
    first[i] = silu_call(ctx, x);
    again[i] = silu_call(ctx, x);
    wgc_destroy(ctx);
  }
  record("pipeline", PIPELINE_CASE, "wgc", bench_median_of(again, reps), reps,
         1, "ms", 0);
  record("pipeline", PIPELINE_CASE, "wgc:first-call",
         bench_median_of(first, reps), reps, 1, "ms", 0);
  for (int eager = 0; eager < 2; eager++) {
    for (int i = 0; i < reps && i < 64; i++)
      first[i] = gemm_first_call(eager);
    record("pipeline", GEMM_FIRST_CASE, eager ? "wgc:eager" : "wgc",
           bench_median_of(first, reps), reps, 1, "ms", 0);
  }
}

void part_wgc(wgc_backend backend, const char *adapter, case_hook after) {
  where w = where_from(adapter);
  int gpu = backend == WGC_BACKEND_WEBGPU;
  const char *system = gpu ? "wgc" : "wgc-cpu";
  wgc_context *ctx = make(backend, NULL);
  record_note(gpu ? "wgc adapter" : "wgc cpu backend", wgc_adapter_name(ctx));

  size_t n;
  const gemm_shape *gs = gemm_shapes(w, &n);
  for (size_t i = 0; i < n && bench_group_wanted("gemm"); i++) {
    gemm_case(ctx, &gs[i], system, 0);
    if (gpu && gs[i].batch > 1)
      gemm_case(ctx, &gs[i], "wgc:looped", 1);
    if (gpu)
      gemm_variant_cases(ctx, &gs[i]);
    if (after)
      after("gemm", i);
  }
  if (bench_group_wanted("weights"))
    weights_cases(ctx, system, w);
  const conv_shape *cs = conv_shapes(&n);
  for (size_t i = 0; i < n && bench_group_wanted("conv2d"); i++)
    conv_case(ctx, &cs[i], system);
  int forms_wanted = bench_group_wanted("gemm") || bench_group_wanted("conv2d");
  for (int f = 0; gpu && forms_wanted && f < 2; f++) {
    /* The two kernel forms (WGC_KERNELS at context creation): staged in
     * workgroup memory for GPUs, direct loads for CPU adapters. */
    const char *forms[] = {"gpu", "cpu"};
    char label[32];
    snprintf(label, sizeof label, "wgc:%s-form", forms[f]);
    wgc_context *fc = make(WGC_BACKEND_WEBGPU, forms[f]);
    /* SwiftShader runs the GPU form of 512^3 at a few dozen MFLOP/s */
    if (bench_group_wanted("gemm"))
      gemm_case(fc, &gs[w == ON_SWIFTSHADER || bench_quick() ? 0 : 1], label,
                0);
    if (bench_group_wanted("conv2d"))
      conv_case(fc, &cs[0], label);
    wgc_destroy(fc);
  }
  const attn_shape *as = attn_shapes(w, &n);
  for (size_t i = 0; i < n && bench_group_wanted("attention"); i++) {
    attn_case(ctx, &as[i], system);
    if (after)
      after("attention", i);
  }
  if (bench_group_wanted("reduce") || bench_group_wanted("elementwise"))
    stream_cases(ctx, system, after);
  if (bench_group_wanted("outputs"))
    outputs_cases(ctx, system);
  if (bench_group_wanted("host")) {
    host_cases(ctx, system, gpu);
    if (after)
      after("host", 0);
  }
  if (gpu && bench_group_wanted("pipeline"))
    pipeline_cases();
  if (gpu && bench_group_wanted("compile"))
    compile_cases();
  if (gpu && w == ON_LAVAPIPE && bench_group_wanted("decoder"))
    decoder_cases(ctx, system);
  wgc_destroy(ctx);
}
