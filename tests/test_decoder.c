/* The demo's decoder (examples/gpt_model.c, compiled into this test so that
 * the test covers exactly the code make demo runs) on a tiny config: a
 * prompt and a few decode steps over the KV cache on each backend, every
 * step's logits against the float64 model of tests/decoder_ref.c, each
 * token against the argmax of its own logits, and the two backends against
 * each other. */
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

/* Runs the prompt (in one pass, or in chunks of 3 and 2 positions, the
 * second attending to the first through the cache) and STEPS - 1 decode
 * steps on backend bi. */
static void run_decoder(int bi, int chunked, const float *weights,
                        decoder_run *run) {
  wgc_context *ctx;
  if (!backend_case(bi, &ctx,
                    "decoder(vocab=64,d=32,heads=4,layers=2,"
                    "prompt=%s,steps=%d)",
                    chunked ? "3+2" : "5", STEPS))
    return;
  double tol = gpt_logit_tolerance(&TINY, weights, 1), worst = 0;
  gpt_model m;
  wgc_status s = gpt_model_init(&m, ctx, &TINY, weights);
  CHECK(s == WGC_OK, "gpt_model_init: %s", wgc_last_error(ctx));
  if (s != WGC_OK) {
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
    ref_decoder_logits(&TINY, weights, run->ids, pos + n, want);
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
    run->ids[pos + n] = token;
    pos += n;
    n = 1;
  }
  run->ran = 1;
  gpt_model_free(&m);
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
      run_decoder(bi, chunked, weights, &runs[bi]);
    if (!runs[0].ran || !runs[1].ran ||
        !case_begin("decoder(prompt=%s) webgpu vs cpu", chunked ? "3+2" : "5"))
      continue;
    /* Each backend within tol of float64: at most 2*tol apart, compared
     * while both decoded the same text. */
    double tol = gpt_logit_tolerance(&TINY, weights, 0), worst = 0;
    for (int st = 0; st < STEPS; st++) {
      if (memcmp(runs[0].ids, runs[1].ids, 4 * (size_t)(PROMPT + st)))
        break;
      for (size_t v = 0; v < VOCAB; v++) {
        double e = fabs(runs[0].logits[st][v] - runs[1].logits[st][v]);
        if (!(e <= worst))
          worst = e;
      }
    }
    CHECK(worst <= tol, "logits %.3g apart, allowed %.3g", worst, tol);
    case_note(" worst %.2g (allowed %.2g)", worst, tol);
    case_end();
  }
  free(weights);
}
