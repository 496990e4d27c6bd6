/* build/minilm: sentence embeddings from all-MiniLM-L6-v2 (minilm_model.h)
 * with its real weights, and the cosine similarity of every pair.
 *
 *   build/minilm [--backend cpu|webgpu] [--weights f32|f16|q8_0]
 *                [--json FILE] [--model DIR] [--repeat N] [--check]
 *                [--ahead] [--cache FILE] "sentence" ...
 *
 * The sentences are tokenized (wordpiece.h, from the model's
 * tokenizer.json, truncated as sentence-transformers does) and embedded in
 * one pass. --weights converts the linear layers' weights and the
 * embedding tables at load (f16 halves their memory, q8_0 takes about a
 * quarter; bf16 and q4_0 work too); the device memory of the weights is
 * printed. --ahead compiles the pass's kernels ahead (wgc_compile_begin),
 * concurrently, and prints how long that took. --repeat runs the pass N more
 * times and reports their median; --cache names a pipeline cache file
 * (wgc_options.pipeline_cache), whose status is printed;
 * --json writes the embeddings; --check embeds again on the CPU backend
 * (with the same weights) and compares (every sentence within cosine 0.99999
 * and 1e-4 per element, the bound tests/test_minilm.c holds both backends to
 * against sentence-transformers), ending on "result: ok" (exit 0) or "result:
 * FAIL" (exit 1). make demo runs it with --check on WebGPU. */
#include "minilm_model.h"
#include "wordpiece.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_MODEL "third_party/minilm"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

typedef struct pass {
  int fired;
  wgc_status status;
} pass;

static void on_done(wgc_status s, void *user) {
  pass *p = user;
  p->fired = 1;
  p->status = s;
}

/* One embedding pass, waited for natively (the browser gets its callback
 * from the event loop instead); its time in *ms. */
static int embed(minilm_model *m, const int32_t *const *ids, const size_t *lens,
                 size_t n, float *out, double *ms) {
  char err[512];
  pass p = {0};
  double t0 = now_ms();
  wgc_status s =
      minilm_embed_async(m, ids, lens, n, out, on_done, &p, err, sizeof err);
  if (s == WGC_OK)
    s = wgc_synchronize(m->ctx);
  if (s == WGC_OK && (!p.fired || p.status != WGC_OK))
    s = p.fired ? p.status : WGC_ERR_DEVICE;
  *ms = now_ms() - t0;
  if (s != WGC_OK) {
    fprintf(stderr, "minilm: %s\n", err[0] ? err : wgc_last_error(m->ctx));
    return 1;
  }
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Loads the model on a new context of the backend; non-zero on failure. */
static int open_model(wgc_backend backend, const char *dir, wgc_dtype wtype,
                      const char *cache, minilm_model *m, wgc_context **ctx) {
  wgc_options opt = {.backend = backend, .pipeline_cache = cache};
  wgc_status s = wgc_create(&opt, ctx);
  if (s != WGC_OK) {
    fprintf(stderr, "minilm: wgc_create: %s: %s\n", wgc_status_string(s),
            wgc_last_error(NULL));
    return 1;
  }
  char err[512];
  if (minilm_model_load_dir(m, *ctx, dir, wtype, err, sizeof err)) {
    fprintf(stderr, "minilm: %s (tools/bootstrap.sh model fetches it)\n", err);
    wgc_destroy(*ctx);
    return 1;
  }
  return 0;
}

static void json_string_out(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static int write_json(const char *path, const char *backend, char **sentences,
                      const size_t *lens, size_t n, size_t dim,
                      const float *emb) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return 1;
  }
  fprintf(f,
          "{\"model\": \"all-MiniLM-L6-v2\", \"backend\": \"%s\", "
          "\"dim\": %zu,\n \"sentences\": [",
          backend, dim);
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "%s\n  {\"text\": ", i ? "," : "");
    json_string_out(f, sentences[i]);
    fprintf(f, ", \"tokens\": %zu, \"embedding\": [", lens[i]);
    for (size_t j = 0; j < dim; j++)
      fprintf(f, "%s%.9g", j ? ", " : "", (double)emb[i * dim + j]);
    fprintf(f, "]}");
  }
  fprintf(f, "\n ]}\n");
  if (fclose(f)) {
    perror(path);
    return 1;
  }
  return 0;
}

static double dot(const float *a, const float *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += (double)a[i] * b[i];
  return s;
}

static int usage(void) {
  fprintf(stderr, "usage: build/minilm [--backend cpu|webgpu] [--weights "
                  "f32|f16|q8_0] [--json FILE] [--model DIR] [--repeat N] "
                  "[--ahead] [--cache FILE] "
                  "[--check] \"sentence\" ...\n");
  return 2;
}

int main(int argc, char **argv) {
  wgc_backend backend = WGC_BACKEND_AUTO;
  wgc_dtype wtype = WGC_DTYPE_F32;
  const char *json = NULL, *dir = DEFAULT_MODEL, *cache = NULL;
  int check = 0, ahead = 0, repeat = 0, first = argc;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
      const char *b = argv[++i];
      if (!strcmp(b, "cpu"))
        backend = WGC_BACKEND_CPU;
      else if (!strcmp(b, "webgpu"))
        backend = WGC_BACKEND_WEBGPU;
      else
        return usage();
    } else if (!strcmp(argv[i], "--weights") && i + 1 < argc) {
      const char *w = argv[++i];
      int found = 0;
      for (int t = 0; t < WGC_DTYPE_COUNT; t++)
        if (t != WGC_DTYPE_I32 && !strcmp(w, wgc_dtype_name((wgc_dtype)t))) {
          wtype = (wgc_dtype)t;
          found = 1;
        }
      if (!found)
        return usage();
    } else if (!strcmp(argv[i], "--json") && i + 1 < argc)
      json = argv[++i];
    else if (!strcmp(argv[i], "--cache") && i + 1 < argc)
      cache = argv[++i];
    else if (!strcmp(argv[i], "--model") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = atoi(argv[++i]);
      if (repeat < 0 || repeat > 1000)
        return usage();
    } else if (!strcmp(argv[i], "--check"))
      check = 1;
    else if (!strcmp(argv[i], "--ahead"))
      ahead = 1;
    else if (!strcmp(argv[i], "--") || argv[i][0] != '-' || !argv[i][1]) {
      first = i + (argv[i][0] == '-' && argv[i][1] == '-');
      break;
    } else
      return usage();
  }
  size_t n = (size_t)(argc - first);
  if (n == 0)
    return usage();
  char **sentences = argv + first;

  char err[512], path[4096];
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  wp_tokenizer *tok;
  if (wp_load(path, &tok, err, sizeof err)) {
    fprintf(stderr, "minilm: %s (tools/bootstrap.sh model fetches it)\n", err);
    return 1;
  }
  minilm_model m;
  wgc_context *ctx;
  if (open_model(backend, dir, wtype, cache, &m, &ctx)) {
    wp_free(tok);
    return 1;
  }
  size_t dim = m.cfg.hidden, max_seq = m.cfg.max_seq, tokens = 0, longest = 0;
  int32_t **ids = calloc(n, sizeof *ids);
  size_t *lens = calloc(n, sizeof *lens);
  float *emb = calloc(n * dim, sizeof *emb), *ref = NULL;
  int rc = !ids || !lens || !emb;
  for (size_t i = 0; !rc && i < n; i++) {
    ids[i] = malloc(max_seq * sizeof **ids);
    rc = !ids[i] || wp_encode(tok, sentences[i], strlen(sentences[i]), max_seq,
                              ids[i], &lens[i], err, sizeof err);
    if (rc)
      fprintf(stderr, "minilm: sentence %zu: %s\n", i + 1,
              ids[i] ? err : "out of memory");
    else {
      tokens += lens[i];
      longest = lens[i] > longest ? lens[i] : longest;
    }
  }
  wp_free(tok);
  double cold = 0, *times = calloc((size_t)repeat + 1, sizeof *times);
  double ahead_ms = 0;
  size_t compiled = 0;
  if (!rc && ahead) {
    double t0 = now_ms();
    rc = minilm_compile_ahead(&m, n, longest, NULL, NULL, err, sizeof err) !=
         WGC_OK;
    ahead_ms = now_ms() - t0;
    compiled = wgc_pipelines_compiled(ctx);
    if (rc)
      fprintf(stderr, "minilm: %s\n", err);
  }
  const int32_t *const *cids = (const int32_t *const *)ids;
  rc = rc || !times || embed(&m, cids, lens, n, emb, &cold);
  for (int r = 0; !rc && r < repeat; r++)
    rc = embed(&m, cids, lens, n, emb, &times[r]);
  if (!rc) {
    /* the CPU backend's adapter name already says "cpu (N threads)" */
    const char *backend = wgc_backend_name(ctx),
               *adapter = wgc_adapter_name(ctx);
    if (!strncmp(adapter, backend, strlen(backend)))
      printf("all-MiniLM-L6-v2 on %s", adapter);
    else
      printf("all-MiniLM-L6-v2 on %s (%s)", backend, adapter);
    printf(": %zu sentences, %zu tokens (padded to %zu)\n", n, tokens, longest);
    printf("weights: %s, %.1f MB on the device\n", wgc_dtype_name(wtype),
           (double)m.total / 1e6);
    if (*wgc_pipeline_cache_status(ctx))
      printf("%s\n", wgc_pipeline_cache_status(ctx));
    if (ahead)
      printf("kernels compiled ahead: %zu in %.1f ms\n", compiled, ahead_ms);
    printf("first pass (%s): %.1f ms\n",
           ahead ? "kernels compiled ahead" : "kernels compiled on first use",
           cold);
    if (repeat) {
      qsort(times, (size_t)repeat, sizeof *times, cmp_double);
      printf("median of %d more passes: %.1f ms (min %.1f, max %.1f)\n", repeat,
             times[repeat / 2], times[0], times[repeat - 1]);
    }
    printf("\ncosine similarity\n");
    for (size_t i = 0; i < n; i++) {
      printf("%2zu ", i + 1);
      for (size_t j = 0; j < n; j++)
        printf(" %6.3f", dot(emb + i * dim, emb + j * dim, dim));
      printf("   %.60s%s\n", sentences[i],
             strlen(sentences[i]) > 60 ? "..." : "");
    }
  }
  if (!rc && json)
    rc = write_json(json, wgc_backend_name(ctx), sentences, lens, n, dim, emb);
  if (!rc && check) {
    /* The same sentences on the CPU backend, the reference. */
    minilm_model mc;
    wgc_context *cc;
    double t;
    ref = calloc(n * dim, sizeof *ref);
    rc = !ref || open_model(WGC_BACKEND_CPU, dir, wtype, NULL, &mc, &cc);
    if (!rc) {
      rc = embed(&mc, cids, lens, n, ref, &t);
      minilm_model_free(&mc);
      wgc_destroy(cc);
    }
    double worst_cos = 1, worst_diff = 0;
    for (size_t i = 0; !rc && i < n; i++) {
      const float *a = emb + i * dim, *b = ref + i * dim;
      double c = dot(a, b, dim) / sqrt(dot(a, a, dim) * dot(b, b, dim)), d = 0;
      for (size_t j = 0; j < dim; j++)
        d = fmax(d, fabs((double)a[j] - b[j]));
      if (!(c >= worst_cos))
        worst_cos = c;
      if (!(d <= worst_diff))
        worst_diff = isnan(d) ? NAN : fmax(worst_diff, d);
    }
    if (!rc) {
      printf("\n%s against the CPU backend: worst cosine %.8f, max abs "
             "difference %.2e (bound: 0.99999, 1e-4)\n",
             wgc_backend_name(ctx), worst_cos, worst_diff);
      rc = !(worst_cos >= 0.99999 && worst_diff <= 1e-4);
    }
  }
  /* Every failure, of the run or of the check, ends the same way. */
  if (check)
    printf("result: %s\n", rc ? "FAIL" : "ok");
  for (size_t i = 0; ids && i < n; i++)
    free(ids[i]);
  free(ids);
  free(lens);
  free(emb);
  free(ref);
  free(times);
  minilm_model_free(&m);
  wgc_destroy(ctx);
  return rc;
}
