/* The demo's decoder (examples/gpt_model.c, compiled into this test so that
 * the test covers exactly the code make demo runs) on a tiny config: a
 * prompt and a few decode steps over the KV cache on each backend, every
 * step's logits against the float64 model of tests/decoder_ref.c, each
 * token against the argmax of its own logits, and the two backends against
 * each other.
 *
 * With typed weights (f16, q8_0, q4_0: the linear layers' matrices
 * converted at load) the same checks hold against the float64 model of the
 * converted weights (gpt_weights_typed), with the tolerance computed on
 * them: a typed GEMM is the f32 GEMM on the exactly converted B, so the
 * typed model must compute that model as closely as the f32 one computes
 * its own. Against the f32 model, run beside it on the same backend and
 * fed the typed run's tokens, the logits may differ by the quantization's
 * own effect on them (measured exactly in float64, on the same tokens) plus
 * each run's tolerance: the triangle inequality through the two float64
 * models, so the bound is exact rather than a worst case many times the
 * logits. */
#include "../examples/gpt_model.c"
#include "decoder_ref.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const gpt_config TINY = {.vocab = 64,
                                .d_model = 32,
                                .heads = 4,
                                .layers = 2,
                                .d_ff = 64,
                                .context = 16,
                                .seed = 7};
enum { PROMPT = 5, STEPS = 6, VOCAB = 64 };
static const int32_t PROMPT_IDS[PROMPT] = {40, 2, 63, 17, 33};

/* The first index of the largest value (no NaN here: checked first). */
static int32_t first_argmax(const float *x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (x[i] > x[best])
      best = i;
  return (int32_t)best;
}

/* The logits and the token history one backend produced. */
typedef struct decoder_run {
  int ran;
  int32_t ids[PROMPT + STEPS];
  float logits[STEPS][VOCAB];
} decoder_run;

static double max_diff(const float *a, const double *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs(a[i] - b[i]);
    if (!(e <= m))
      m = e; /* NaN wins */
  }
  return m;
}

/* Runs the prompt (in one pass, or in chunks of 3 and 2 positions, the
 * second attending to the first through the cache) and STEPS - 1 decode
 * steps on backend bi, with the linear weights of type wtype; a type other
 * than f32 also runs the f32 model in lockstep on the typed run's tokens. */
static void run_decoder(int bi, int chunked, const float *weights,
                        wgc_dtype wtype, decoder_run *run) {
  wgc_context *ctx;
  int typed = wtype != WGC_DTYPE_F32;
  if (!backend_case(bi, &ctx,
                    "decoder(vocab=64,d=32,heads=4,layers=2,"
                    "prompt=%s,steps=%d%s%s)",
                    chunked ? "3+2" : "5", STEPS, typed ? ",weights=" : "",
                    typed ? wgc_dtype_name(wtype) : ""))
    return;
  /* The model the typed one computes: the converted weights in f32. */
  float *conv = typed ? gpt_weights_typed(&TINY, weights, wtype) : NULL;
  const float *exact = typed ? conv : weights;
  CHECK(exact != NULL, "gpt_weights_typed(%s) failed", wgc_dtype_name(wtype));
  if (!exact) {
    case_end();
    return;
  }
  double tol = gpt_logit_tolerance(&TINY, exact, 1), worst = 0;
  double tol_f32 = gpt_logit_tolerance(&TINY, weights, 1), f32_worst = 0;
  double f32_allowed = 0;
  gpt_model m, f32 = {0};
  wgc_status s = gpt_model_init_typed(&m, ctx, &TINY, weights, wtype);
  CHECK(s == WGC_OK, "gpt_model_init: %s", wgc_last_error(ctx));
  if (s == WGC_OK && typed) {
    s = gpt_model_init(&f32, ctx, &TINY, weights);
    CHECK(s == WGC_OK, "gpt_model_init(f32): %s", wgc_last_error(ctx));
    if (s != WGC_OK)
      gpt_model_free(&m);
    else
      CHECK_OK(ctx, gpt_set_tokens(&f32, 0, PROMPT_IDS, PROMPT));
  }
  if (s != WGC_OK) {
    free(conv);
    case_end();
    return;
  }
  memcpy(run->ids, PROMPT_IDS, sizeof PROMPT_IDS);
  CHECK_OK(ctx, gpt_set_tokens(&m, 0, PROMPT_IDS, PROMPT));
  size_t pos = 0, n = PROMPT;
  for (int st = 0; st < STEPS; st++) {
    if (st == 0 && chunked) {
      CHECK_OK(ctx, gpt_forward(&m, 0, 3, 0));
      CHECK_OK(ctx, gpt_forward(&m, 3, 2, 1));
    } else {
      CHECK_OK(ctx, gpt_forward(&m, pos, n, 1));
    }
    float *got = run->logits[st];
    int32_t token = -1;
    dev_read(ctx, got, m.logits, VOCAB);
    CHECK_OK(ctx, wgc_download(ctx, &token, m.tokens + 4 * (pos + n), 4));
    double want[VOCAB];
    ref_decoder_logits(&TINY, exact, run->ids, pos + n, want);
    for (size_t v = 0; v < VOCAB; v++) {
      double e = fabs(got[v] - want[v]);
      if (!(e <= worst))
        worst = e;
    }
    CHECK(worst <= tol, "step %d: logits %.3g from float64, allowed %.3g", st,
          worst, tol);
    /* The token is the argmax of the logits read back, first on ties. */
    CHECK(token == first_argmax(got, VOCAB), "step %d: token %d, argmax %d", st,
          (int)token, (int)first_argmax(got, VOCAB));
    /* ... and the exact model's choice, unless that was a near-tie. */
    size_t best = 0;
    for (size_t v = 1; v < VOCAB; v++)
      best = want[v] > want[best] ? v : best;
    CHECK(token >= 0 && token < VOCAB &&
              (token == (int32_t)best || want[best] - want[token] <= 2 * tol),
          "step %d: token %d, the float64 model chose %zu", st, (int)token,
          best);
    if (token < 0 || token >= VOCAB)
      break;
    if (typed) {
      /* The f32 model on the same tokens, within the quantization's exact
       * effect (float64, the same tokens) and both runs' tolerances. */
      float f32_got[VOCAB];
      double f32_want[VOCAB];
      CHECK_OK(ctx, gpt_forward(&f32, pos, n, 1));
      dev_read(ctx, f32_got, f32.logits, VOCAB);
      CHECK_OK(ctx, wgc_upload(ctx, f32.tokens + 4 * (pos + n), &token, 4));
      ref_decoder_logits(&TINY, weights, run->ids, pos + n, f32_want);
      double q = 0;
      for (size_t v = 0; v < VOCAB; v++)
        q = fmax(q, fabs(want[v] - f32_want[v]));
      double allowed = q + tol + tol_f32, e = 0;
      for (size_t v = 0; v < VOCAB; v++)
        e = fmax(e, fabs((double)got[v] - (double)f32_got[v]));
      CHECK(e <= allowed,
            "step %d: logits %.3g from the f32 run, allowed %.3g (the "
            "quantization's effect %.3g)",
            st, e, allowed, q);
      f32_worst = fmax(f32_worst, e);
      f32_allowed = fmax(f32_allowed, allowed);
      CHECK(max_diff(f32_got, f32_want, VOCAB) <= tol_f32,
            "step %d: the f32 run is %.3g from float64, allowed %.3g", st,
            max_diff(f32_got, f32_want, VOCAB), tol_f32);
    }
    run->ids[pos + n] = token;
    pos += n;
    n = 1;
  }
  run->ran = 1;
  gpt_model_free(&m);
  if (typed)
    gpt_model_free(&f32);
  free(conv);
  case_note(" worst %.2g (allowed %.2g)", worst, tol);
  if (typed)
    case_note("; from f32 %.2g (allowed %.2g)", f32_worst, f32_allowed);
  case_end();
}

/* The largest logit difference between two runs over the steps where
 * both had decoded the same text (NaN wins). */
static double logits_apart(const decoder_run runs[2]) {
  double worst = 0;
  for (int st = 0; st < STEPS; st++) {
    if (memcmp(runs[0].ids, runs[1].ids, 4 * (size_t)(PROMPT + st)))
      break;
    for (size_t v = 0; v < VOCAB; v++) {
      double e = fabs(runs[0].logits[st][v] - runs[1].logits[st][v]);
      if (!(e <= worst))
        worst = e;
    }
  }
  return worst;
}

/* Ends the open case: the runs' logits (logits_apart) within tol. */
static void check_apart(const decoder_run runs[2], double tol) {
  double worst = logits_apart(runs);
  CHECK(worst <= tol, "logits %.3g apart, allowed %.3g", worst, tol);
  case_note(" worst %.2g (allowed %.2g)", worst, tol);
  case_end();
}

TEST(decoder_steps_both_backends) {
  float *weights = gpt_weights_new(&TINY);
  CHECK(weights != NULL, "out of host memory");
  if (!weights)
    return;
  static decoder_run runs[2];
  for (int chunked = 0; chunked < 2; chunked++) {
    memset(runs, 0, sizeof runs);
    for (int bi = 0; bi < 2; bi++)
      run_decoder(bi, chunked, weights, WGC_DTYPE_F32, &runs[bi]);
    if (!runs[0].ran || !runs[1].ran ||
        !case_begin("decoder(prompt=%s) webgpu vs cpu", chunked ? "3+2" : "5"))
      continue;
    /* Each backend within tol of float64: at most 2*tol apart, compared
     * while both decoded the same text. */
    check_apart(runs, gpt_logit_tolerance(&TINY, weights, 0));
  }
  free(weights);
}

/* The two backends on the same typed weights agree as the f32 ones do, the
 * tolerance computed on the converted weights. */
TEST(decoder_typed_weights_both_backends) {
  static const wgc_dtype types[] = {WGC_DTYPE_F16, WGC_DTYPE_Q8_0,
                                    WGC_DTYPE_Q4_0};
  float *weights = gpt_weights_new(&TINY);
  CHECK(weights != NULL, "out of host memory");
  if (!weights)
    return;
  static decoder_run runs[2];
  for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
    wgc_dtype t = types[ti];
    memset(runs, 0, sizeof runs);
    for (int bi = 0; bi < 2; bi++)
      run_decoder(bi, 0, weights, t, &runs[bi]);
    float *conv = gpt_weights_typed(&TINY, weights, t);
    if (!conv || !runs[0].ran || !runs[1].ran ||
        !case_begin("decoder(weights=%s) webgpu vs cpu", wgc_dtype_name(t))) {
      free(conv);
      continue;
    }
    check_apart(runs, gpt_logit_tolerance(&TINY, conv, 0));
    free(conv);
  }
  free(weights);
}
