/* make demo-gpt: a small GPT-2-style decoder (examples/gpt_model.c) on the
 * default backend, prompted and then generating 64 tokens one at a time,
 * with the same model running on the CPU backend in lockstep: the logits
 * of every step are compared, and the run fails if they differ by more than
 * wgc.h's accuracy allows (gpt_logit_tolerance).
 *
 *   build/gpt [--weights f32|f16|bf16|q8_0|q4_0]
 *
 * --weights converts the linear layers' weights at load (the CPU check
 * uses the same typed weights, and its tolerance is computed on them). A
 * type other than f32 also runs the f32 model on the same backend in
 * lockstep, fed the typed run's tokens, and reports the largest logit
 * difference over every step (the prompt's and each generated token's),
 * at how many steps the two chose the same token, and both tokens/s. */
#include "gpt_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { GENERATE = 64, CONTEXT = 128 };

static const gpt_config CONFIG = {.vocab = 256,
                                  .d_model = 128,
                                  .heads = 4,
                                  .layers = 4,
                                  .d_ff = 512,
                                  .context = CONTEXT,
                                  .seed = 20240611};
static const char PROMPT[] =
    "wgc runs a decoder on WebGPU, one token at a time:";

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs positions pos..pos+n-1 and reads back the logits and the token
 * chosen by argmax. */
static wgc_status step(gpt_model *m, size_t pos, size_t n, float *logits,
                       int32_t *token) {
  wgc_status s = gpt_forward(m, pos, n, 1);
  if (s == WGC_OK)
    s = wgc_download(m->ctx, logits, m->logits, 4 * m->cfg.vocab);
  if (s == WGC_OK)
    s = wgc_download(m->ctx, token, m->tokens + 4 * (pos + n), 4);
  return s;
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

static void print_escaped(const int32_t *t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int c = t[i];
    if (c == '\\' || c == '"')
      printf("\\%c", c);
    else if (c >= 32 && c < 127)
      putchar(c);
    else if (c == '\n')
      printf("\\n");
    else
      printf("\\x%02x", (unsigned)c & 0xffu);
  }
}

static int fail(const char *what, wgc_context *ctx) {
  fprintf(stderr, "gpt: %s failed: %s\n", what, wgc_last_error(ctx));
  return 1;
}

static int usage(void) {
  fprintf(stderr, "usage: build/gpt [--weights f32|f16|bf16|q8_0|q4_0]\n");
  return 2;
}

int main(int argc, char **argv) {
  const gpt_config *cfg = &CONFIG;
  wgc_dtype wtype = WGC_DTYPE_F32;
  for (int i = 1; i < argc; i++) {
    int found = 0;
    if (!strcmp(argv[i], "--weights") && i + 1 < argc) {
      const char *w = argv[++i];
      for (int t = 0; t < WGC_DTYPE_COUNT; t++)
        if (!strcmp(w, wgc_dtype_name((wgc_dtype)t)) &&
            gpt_weight_type_valid(cfg, (wgc_dtype)t, NULL)) {
          wtype = (wgc_dtype)t;
          found = 1;
        }
    }
    if (!found)
      return usage();
  }
  int typed = wtype != WGC_DTYPE_F32;
  size_t prompt_len = strlen(PROMPT), vocab = cfg->vocab;
  if (prompt_len + GENERATE > cfg->context) {
    fprintf(stderr, "gpt: the prompt and %d tokens exceed the context\n",
            GENERATE);
    return 1;
  }
  wgc_context *dev_ctx, *ref_ctx;
  if (wgc_create(NULL, &dev_ctx) != WGC_OK)
    return fail("wgc_create", NULL);
  wgc_options cpu = {.backend = WGC_BACKEND_CPU};
  if (wgc_create(&cpu, &ref_ctx) != WGC_OK)
    return fail("wgc_create(cpu)", NULL);
  float *weights = gpt_weights_new(cfg);
  /* The typed model computes the f32 model of its converted weights, so
   * the backends' tolerance is that model's. */
  float *converted = weights ? gpt_weights_typed(cfg, weights, wtype) : NULL;
  float *dev_logits = malloc(3 * vocab * sizeof *dev_logits);
  if (!weights || !converted || !dev_logits) {
    fprintf(stderr, "gpt: out of host memory\n");
    return 1;
  }
  double tol = gpt_logit_tolerance(cfg, converted, 0);

  printf("GPT-2-style decoder: byte vocabulary %zu, d_model %zu, %zu heads, "
         "%zu layers, MLP %zu, context %zu\n",
         vocab, cfg->d_model, cfg->heads, cfg->layers, cfg->d_ff, cfg->context);
  printf("The weights are random (fixed seed %u), so the text is meaningless;"
         "\nthe arithmetic is real and checked against the CPU backend at "
         "every token.\n",
         (unsigned)cfg->seed);
  printf("backend: %s (%s)\n", wgc_backend_name(dev_ctx),
         wgc_adapter_name(dev_ctx));

  gpt_model dev, ref, f32 = {0};
  if (gpt_model_init_typed(&dev, dev_ctx, cfg, weights, wtype) != WGC_OK)
    return fail("gpt_model_init", dev_ctx);
  if (gpt_model_init_typed(&ref, ref_ctx, cfg, weights, wtype) != WGC_OK)
    return fail("gpt_model_init(cpu)", ref_ctx);
  if (typed && gpt_model_init(&f32, dev_ctx, cfg, weights) != WGC_OK)
    return fail("gpt_model_init(f32)", dev_ctx);

  int32_t tokens[CONTEXT];
  for (size_t i = 0; i < prompt_len; i++)
    tokens[i] = (unsigned char)PROMPT[i];
  float *ref_logits = dev_logits + vocab, *f32_logits = ref_logits + vocab;
  int32_t dev_tok, ref_tok, f32_tok;

  /* A first pass compiles the kernels of the prompt and decode shapes;
   * the run below recomputes every cache row it touched. */
  double warm0 = now();
  if (gpt_set_tokens(&dev, 0, tokens, prompt_len) != WGC_OK ||
      step(&dev, 0, prompt_len, dev_logits, &dev_tok) != WGC_OK ||
      step(&dev, prompt_len, 1, dev_logits, &dev_tok) != WGC_OK)
    return fail("warm-up", dev_ctx);
  if (gpt_set_tokens(&dev, 0, tokens, prompt_len) != WGC_OK ||
      gpt_set_tokens(&ref, 0, tokens, prompt_len) != WGC_OK)
    return fail("gpt_set_tokens", dev_ctx);
  double warm_time = now() - warm0;
  size_t kernels = wgc_pipelines_compiled(dev_ctx);
  if (typed && (gpt_set_tokens(&f32, 0, tokens, prompt_len) != WGC_OK ||
                step(&f32, 0, prompt_len, f32_logits, &f32_tok) != WGC_OK ||
                step(&f32, prompt_len, 1, f32_logits, &f32_tok) != WGC_OK ||
                gpt_set_tokens(&f32, 0, tokens, prompt_len) != WGC_OK))
    return fail("the f32 model's warm-up", dev_ctx);

  double prompt_time = 0, decode_time = 0, ref_time = 0, worst = 0;
  double f32_decode_time = 0, f32_worst = 0;
  int failures = 0, ties = 0, f32_same = 0;
  size_t pos = 0, n = prompt_len;
  for (int i = 0; i < GENERATE; i++) {
    double t0 = now();
    if (step(&dev, pos, n, dev_logits, &dev_tok) != WGC_OK)
      return fail("the webgpu step", dev_ctx);
    double dt = now() - t0;
    *(i == 0 ? &prompt_time : &decode_time) += dt;
    t0 = now();
    if (step(&ref, pos, n, ref_logits, &ref_tok) != WGC_OK)
      return fail("the cpu step", ref_ctx);
    ref_time += now() - t0;

    double diff = max_diff(dev_logits, ref_logits, vocab);
    worst = diff > worst || diff != diff ? diff : worst;
    if (!(diff <= tol)) {
      printf("step %d: logits differ by %.3g, more than %.3g\n", i, diff, tol);
      failures++;
    }
    if (dev_tok != ref_tok) {
      /* Only a near-tie may choose differently: then both backends'
       * top two logits lie within the tolerance of each other. */
      double gap = fabs((double)dev_logits[dev_tok] - dev_logits[ref_tok]);
      double ref_gap = fabs((double)ref_logits[dev_tok] - ref_logits[ref_tok]);
      if (!(gap <= tol && ref_gap <= tol)) {
        printf("step %d: webgpu chose %d, cpu %d, logits %.6g apart\n", i,
               dev_tok, ref_tok, fmax(gap, ref_gap));
        failures++;
      }
      ties++;
      /* Both continue from the WebGPU text, so the comparison goes on. */
      if (wgc_upload(ref_ctx, ref.tokens + 4 * (pos + n), &dev_tok, 4) !=
          WGC_OK)
        return fail("wgc_upload", ref_ctx);
    }
    if (typed) {
      /* The f32 weights on the same backend, on the same tokens. */
      t0 = now();
      if (step(&f32, pos, n, f32_logits, &f32_tok) != WGC_OK)
        return fail("the f32 step", dev_ctx);
      if (i > 0)
        f32_decode_time += now() - t0;
      diff = max_diff(dev_logits, f32_logits, vocab);
      f32_worst = diff > f32_worst || diff != diff ? diff : f32_worst;
      f32_same += f32_tok == dev_tok;
      if (f32_tok != dev_tok && wgc_upload(dev_ctx, f32.tokens + 4 * (pos + n),
                                           &dev_tok, 4) != WGC_OK)
        return fail("wgc_upload", dev_ctx);
    }
    tokens[pos + n] = dev_tok;
    pos += n;
    n = 1;
  }

  printf("prompt: \"");
  print_escaped(tokens, prompt_len);
  printf("\"\ngenerated: \"");
  print_escaped(tokens + prompt_len, GENERATE);
  printf("\"\n");
  printf("%s: prompt of %zu tokens in one pass %.1f ms; %d tokens one at a "
         "time at %.1f tokens/s (CPU check excluded)\n",
         wgc_backend_name(dev_ctx), prompt_len, prompt_time * 1e3, GENERATE - 1,
         (GENERATE - 1) / decode_time);
  printf("first pass, compiling %zu kernels: %.1f s; the cpu backend's steps: "
         "%.1f s\n",
         kernels, warm_time, ref_time);
  printf("largest logit difference from the cpu backend: %.3g (allowed "
         "%.3g)%s\n",
         worst, tol, ties ? "" : "; every token agrees");
  if (ties)
    printf("%d near-tie(s) chose differently; the run kept the %s token\n",
           ties, wgc_backend_name(dev_ctx));

  if (typed) {
    printf("weights: %s, %.0f KB on the device (f32: %.0f KB)\n",
           wgc_dtype_name(wtype), dev.dev.total / 1e3, f32.dev.total / 1e3);
    printf("against the f32 weights on %s, both fed the %s run's tokens: "
           "largest logit difference %.3g over %d steps (the prompt and %d "
           "tokens); the same greedy token at %d of %d steps\n",
           wgc_backend_name(dev_ctx), wgc_dtype_name(wtype), f32_worst,
           GENERATE, GENERATE - 1, f32_same, GENERATE);
    printf("tokens/s one at a time: %s %.1f, f32 %.1f\n", wgc_dtype_name(wtype),
           (GENERATE - 1) / decode_time, (GENERATE - 1) / f32_decode_time);
    gpt_model_free(&f32);
  }
  gpt_model_free(&dev);
  gpt_model_free(&ref);
  wgc_destroy(dev_ctx);
  wgc_destroy(ref_ctx);
  free(dev_logits);
  free(converted);
  free(weights);
  printf("result: %s\n", failures ? "MISMATCH" : "ok");
  return failures ? 1 : 0;
}
