/* all-MiniLM-L6-v2 with its real weights (third_party/minilm, from
 * tools/bootstrap.sh model) against sentence-transformers on PyTorch
 * (tests/data/minilm_reference.txt, from tools/minilm_reference.py): every
 * sentence's embedding within cosine 0.99999 and 1e-4 per element, on both
 * backends, as one padded batch and one sentence at a time. The model is
 * driven by the reference's own token ids, so this checks the model alone.
 * Then bad input: a missing folder, missing tensors, wrong shapes and
 * dtypes, bad token ids and lengths. */
#include "minilm_model.h"
#include "util.h"
#include "wordpiece.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MODEL_DIR "third_party/minilm"
#define REFERENCE "tests/data/minilm_reference.txt"

enum { DIM = 384, MAX_CASES = 64 };

typedef struct ref_case {
  char *text; /* the sentence, UTF-8, may hold NUL */
  size_t text_len;
  size_t n_ids;
  int32_t *ids;
  float emb[DIM];
} ref_case;

typedef struct reference {
  size_t n;
  ref_case c[MAX_CASES];
} reference;

static void reference_free(reference *r) {
  for (size_t i = 0; i < r->n; i++) {
    free(r->c[i].ids);
    free(r->c[i].text);
  }
  r->n = 0;
}

/* Reads the reference's records (see tools/minilm_reference.py); false
 * when the file is missing or malformed. */
static bool reference_read(reference *r) {
  memset(r, 0, sizeof *r);
  FILE *f = fopen(REFERENCE, "r");
  if (!f)
    return false;
  bool ok = true;
  char word[8];
  int ch;
  /* The header: comment lines. */
  while ((ch = getc(f)) == '#')
    while ((ch = getc(f)) != '\n' && ch != EOF)
      ;
  if (ch != EOF)
    ungetc(ch, f);
  size_t idx, n_ids;
  static char hex[16384];
  while (ok && fscanf(f, " case %zu %zu %16383s", &idx, &n_ids, hex) == 3) {
    size_t hl = strcmp(hex, "-") ? strlen(hex) : 0;
    ok = idx == r->n && r->n < MAX_CASES && n_ids >= 2 && n_ids <= 512 &&
         hl % 2 == 0;
    ref_case *c = &r->c[r->n];
    c->n_ids = n_ids;
    c->ids = ok ? xmalloc(n_ids * sizeof *c->ids) : NULL;
    c->text = ok ? xmalloc(hl / 2 + 1) : NULL;
    c->text_len = hl / 2;
    for (size_t j = 0; ok && j < hl / 2; j++) {
      unsigned byte;
      ok = sscanf(hex + 2 * j, "%2x", &byte) == 1;
      c->text[j] = (char)byte;
    }
    if (c->ids)
      r->n++;
    ok = ok && fscanf(f, " %7s", word) == 1 && !strcmp(word, "ids");
    for (size_t j = 0; ok && j < n_ids; j++)
      ok = fscanf(f, "%d", &c->ids[j]) == 1;
    ok = ok && fscanf(f, " %7s", word) == 1 && !strcmp(word, "emb");
    for (size_t j = 0; ok && j < DIM; j++)
      ok = fscanf(f, "%f", &c->emb[j]) == 1;
  }
  ok = ok && fscanf(f, " %1s", word) == EOF && r->n >= 10;
  fclose(f);
  if (!ok)
    reference_free(r);
  return ok;
}

typedef struct waiter {
  int fired;
  wgc_status status;
} waiter;

static void on_done(wgc_status s, void *user) {
  waiter *w = user;
  w->fired++;
  w->status = s;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Embeds the n cases sel[] in one pass; true when it ran. */
static bool embed(minilm_model *m, const reference *r, const size_t *sel,
                  size_t n, float *out) {
  const int32_t *ids[MAX_CASES];
  size_t lens[MAX_CASES];
  for (size_t i = 0; i < n; i++) {
    ids[i] = r->c[sel[i]].ids;
    lens[i] = r->c[sel[i]].n_ids;
  }
  char err[256] = "";
  waiter w = {0};
  wgc_status s =
      minilm_embed_async(m, ids, lens, n, out, on_done, &w, err, sizeof err);
  CHECK(s == WGC_OK, "minilm_embed_async: %s", err);
  if (s != WGC_OK)
    return false;
  CHECK(w.fired == 0, "the callback fired inside the call");
  CHECK_OK(m->ctx, wgc_synchronize(m->ctx));
  CHECK(w.fired == 1 && w.status == WGC_OK, "callback fired %d times, %s",
        w.fired, wgc_status_name(w.status));
  return w.fired == 1 && w.status == WGC_OK;
}

/* Cosine and largest difference of got against want, held to min_cos and
 * max_diff; records the worst. */
static void compare_within(const float *got, const float *want, size_t idx,
                           double min_cos, double max_diff, double *worst_cos,
                           double *worst_diff) {
  double dot = 0, ng = 0, nw = 0, diff = 0;
  for (size_t j = 0; j < DIM; j++) {
    dot += (double)got[j] * want[j];
    ng += (double)got[j] * got[j];
    nw += (double)want[j] * want[j];
    double d = fabs((double)got[j] - want[j]);
    diff = d > diff || isnan(d) ? d : diff;
  }
  double cosv = dot / sqrt(ng * nw);
  CHECK(cosv >= min_cos && diff <= max_diff,
        "sentence %zu: cosine %.7f, max abs diff %.2e (bound %g, %g)", idx,
        cosv, diff, min_cos, max_diff);
  if (!(cosv >= *worst_cos))
    *worst_cos = cosv;
  if (!(diff <= *worst_diff))
    *worst_diff = diff;
}

static void compare(const float *got, const float *want, size_t idx,
                    double *worst_cos, double *worst_diff) {
  compare_within(got, want, idx, 0.99999, 1e-4, worst_cos, worst_diff);
}

static bool load_typed(wgc_context *ctx, minilm_model *m, wgc_dtype wtype) {
  char err[512] = "";
  int bad = minilm_model_load_dir(m, ctx, MODEL_DIR, wtype, err, sizeof err);
  CHECK(!bad, "%s (tools/bootstrap.sh model fetches it)", err);
  return !bad;
}

static bool load_model(wgc_context *ctx, minilm_model *m) {
  return load_typed(ctx, m, WGC_DTYPE_F32);
}

TEST(minilm_against_sentence_transformers) {
  reference r;
  /* Read whatever the filter, so that the cases below can run; a missing
   * or malformed file fails this case (and the filtered-out ones stay
   * out). */
  bool have = reference_read(&r);
  if (case_begin("minilm_reference_file")) {
    CHECK(have, "%s is missing or malformed (run from the repository root)",
          REFERENCE);
    case_end();
  }
  if (!have)
    return;
  /* The pipeline's first half: the tokenizer gives the model the ids
   * sentence-transformers gave it. */
  if (case_begin("minilm_tokens(sentences=%zu)", r.n)) {
    wp_tokenizer *t;
    char err[512] = "";
    int bad = wp_load(MODEL_DIR "/tokenizer.json", &t, err, sizeof err);
    CHECK(!bad, "%s (tools/bootstrap.sh model fetches it)", err);
    for (size_t i = 0; !bad && i < r.n; i++) {
      int32_t ids[256];
      size_t n = 0;
      int e = wp_encode(t, r.c[i].text, r.c[i].text_len, 256, ids, &n, err,
                        sizeof err);
      CHECK(!e, "sentence %zu: %s", i, err);
      bool same =
          !e && n == r.c[i].n_ids && !memcmp(ids, r.c[i].ids, n * sizeof *ids);
      CHECK(e || same, "sentence %zu: %zu ids, want %zu (first %d)", i, n,
            r.c[i].n_ids, n ? ids[0] : -1);
    }
    if (!bad)
      wp_free(t);
    case_end();
  }
  /* The batch holds the sentences of at most 16 tokens (2 to 15 here, so
   * padding still varies from none to most of a row): padding all of them
   * to the longest would make the batch several times the work of its
   * tokens on the slow software adapters, where make test runs it twice
   * (both kernel forms). The one-by-one pass takes every sentence. Under
   * ASan, TSan or valgrind (make test runs the CPU cases there too) the
   * batch shrinks to the sentences of at most 12 tokens and the
   * one-by-one pass to two of them. */
  size_t batch[MAX_CASES], single[MAX_CASES], nb = 0, ns = 0;
  bool small = instrumented();
  for (size_t i = 0; i < r.n; i++) {
    if (r.c[i].n_ids <= (small ? 12u : 16u))
      batch[nb++] = i;
    if (!small || (r.c[i].n_ids <= 12 && ns < 2))
      single[ns++] = i;
  }
  for (int bi = 0; bi < 2; bi++) {
    for (int one_by_one = 0; one_by_one < 2; one_by_one++) {
      const size_t *sel = one_by_one ? single : batch;
      size_t n = one_by_one ? ns : nb;
      wgc_context *ctx;
      if (!backend_case(bi, &ctx, "minilm(sentences=%zu,%s)", n,
                        one_by_one ? "one_by_one" : "one_batch"))
        continue;
      minilm_model m;
      if (!load_model(ctx, &m)) {
        case_end();
        continue;
      }
      float *out = falloc(n * DIM);
      double worst_cos = 1, worst_diff = 0, t0 = now_ms();
      bool ran = true;
      if (one_by_one)
        for (size_t i = 0; ran && i < n; i++)
          ran = embed(&m, &r, sel + i, 1, out + i * DIM);
      else
        ran = embed(&m, &r, sel, n, out);
      double ms = now_ms() - t0;
      for (size_t i = 0; ran && i < n; i++)
        compare(out + i * DIM, r.c[sel[i]].emb, sel[i], &worst_cos,
                &worst_diff);
      case_note(" worst 1 - cosine %.1e, max abs diff %.2e, %.0f ms",
                1 - worst_cos, worst_diff, ms);
      free(out);
      minilm_model_free(&m);
      case_end();
    }
  }
  reference_free(&r);
}

/* The model with its linear weights and embedding tables converted at load
 * (f16, Q8_0), against the same sentence-transformers reference: cosine
 * >= 0.9999 with f16 weights and >= 0.999 with Q8_0, for every sentence
 * (the short ones as one batch, the others one at a time, so that padding
 * stays small), on both backends. The device memory of the weights is
 * noted. */
TEST(minilm_weight_types) {
  reference r;
  if (!reference_read(&r))
    return; /* minilm_reference_file reports it */
  static const struct {
    wgc_dtype t;
    double min_cos;
  } types[] = {{WGC_DTYPE_F16, 0.9999}, {WGC_DTYPE_Q8_0, 0.999}};
  bool small = instrumented();
  size_t batch[MAX_CASES], single[MAX_CASES], nb = 0, ns = 0;
  for (size_t i = 0; i < r.n; i++) {
    if (r.c[i].n_ids <= (small ? 12u : 16u))
      batch[nb++] = i;
    else if (!small)
      single[ns++] = i;
  }
  for (size_t ti = 0; ti < 2; ti++)
    for (int bi = 0; bi < 2; bi++) {
      wgc_context *ctx;
      if (!backend_case(bi, &ctx, "minilm_weights(%s,sentences=%zu)",
                        wgc_dtype_name(types[ti].t), nb + ns))
        continue;
      minilm_model m;
      if (!load_typed(ctx, &m, types[ti].t)) {
        case_end();
        continue;
      }
      float *out = falloc((nb + ns) * DIM);
      double worst_cos = 1, worst_diff = 0, t0 = now_ms();
      bool ran = embed(&m, &r, batch, nb, out);
      for (size_t i = 0; ran && i < ns; i++)
        ran = embed(&m, &r, single + i, 1, out + (nb + i) * DIM);
      double ms = now_ms() - t0;
      for (size_t i = 0; ran && i < nb + ns; i++) {
        size_t c = i < nb ? batch[i] : single[i - nb];
        compare_within(out + i * DIM, r.c[c].emb, c, types[ti].min_cos, 1.0,
                       &worst_cos, &worst_diff);
      }
      case_note(" %.1f MB of weights, worst cosine %.7f (bound %g), max abs "
                "diff %.2e, %.0f ms",
                (double)m.total / 1e6, worst_cos, types[ti].min_cos, worst_diff,
                ms);
      free(out);
      minilm_model_free(&m);
      case_end();
    }
  reference_free(&r);
}

/* ---- bad input ---------------------------------------------------------- */

/* A tiny model's safetensors file in memory, built from the names and
 * shapes the model asks for, with one tensor changed by the caller. */
typedef struct fake_tensor {
  char name[96];
  const char *dtype;
  size_t rank;
  size_t shape[2];
} fake_tensor;

static const minilm_config TINY = {.vocab = 5,
                                   .hidden = 4,
                                   .heads = 2,
                                   .layers = 1,
                                   .ffn = 8,
                                   .positions = 6,
                                   .type_vocab = 2,
                                   .max_seq = 6,
                                   .ln_eps = 1e-12f};

static size_t tiny_tensors(fake_tensor *t) {
  size_t n = 0, h = TINY.hidden, f = TINY.ffn;
#define T(nm, r, d0, d1)                                                       \
  (snprintf(t[n].name, sizeof t[n].name, "%s", nm), t[n].dtype = "F32",        \
   t[n].rank = r, t[n].shape[0] = d0, t[n].shape[1] = d1, n++)
  T("embeddings.word_embeddings.weight", 2, TINY.vocab, h);
  T("embeddings.position_embeddings.weight", 2, TINY.positions, h);
  T("embeddings.token_type_embeddings.weight", 2, TINY.type_vocab, h);
  T("embeddings.LayerNorm.weight", 1, h, 0);
  T("embeddings.LayerNorm.bias", 1, h, 0);
  static const char *const part[] = {
      "attention.self.query",   "attention.self.key", "attention.self.value",
      "attention.output.dense", "intermediate.dense", "output.dense"};
  for (int p = 0; p < 6; p++) {
    char nm[96];
    size_t out = p == 4 ? f : h, in = p == 5 ? f : h;
    snprintf(nm, sizeof nm, "encoder.layer.0.%s.weight", part[p]);
    T(nm, 2, out, in);
    snprintf(nm, sizeof nm, "encoder.layer.0.%s.bias", part[p]);
    T(nm, 1, out, 0);
  }
  T("encoder.layer.0.attention.output.LayerNorm.weight", 1, h, 0);
  T("encoder.layer.0.attention.output.LayerNorm.bias", 1, h, 0);
  T("encoder.layer.0.output.LayerNorm.weight", 1, h, 0);
  T("encoder.layer.0.output.LayerNorm.bias", 1, h, 0);
#undef T
  return n;
}

/* Serialises tensors (zeros) as a safetensors file; returns its size. */
static size_t write_safetensors(const fake_tensor *t, size_t n,
                                unsigned char **out) {
  char *hdr = xmalloc(16384);
  size_t at = 0, off = 0;
  at += (size_t)snprintf(hdr + at, 16384 - at, "{");
  for (size_t i = 0; i < n; i++) {
    size_t elems =
        t[i].rank == 1 ? t[i].shape[0] : t[i].shape[0] * t[i].shape[1];
    size_t bytes = elems * (strcmp(t[i].dtype, "F16") ? 4 : 2);
    at += (size_t)snprintf(hdr + at, 16384 - at,
                           "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%zu",
                           i ? "," : "", t[i].name, t[i].dtype, t[i].shape[0]);
    if (t[i].rank == 2)
      at += (size_t)snprintf(hdr + at, 16384 - at, ",%zu", t[i].shape[1]);
    at += (size_t)snprintf(hdr + at, 16384 - at,
                           "],\"data_offsets\":[%zu,%zu]}", off, off + bytes);
    off += bytes;
  }
  at += (size_t)snprintf(hdr + at, 16384 - at, "}");
  size_t total = 8 + at + off;
  unsigned char *f = calloc(total, 1);
  for (int b = 0; b < 8; b++)
    f[b] = (unsigned char)((uint64_t)at >> (8 * b));
  memcpy(f + 8, hdr, at);
  free(hdr);
  *out = f;
  return total;
}

/* Loading a file changed by edit fails with a message holding want, and
 * leaves the model untouched. */
static void expect_load_error(int bi, const char *label,
                              void (*edit)(fake_tensor *t, size_t *n),
                              const char *want) {
  wgc_context *ctx;
  if (!backend_case(bi, &ctx, "minilm_bad_weights(%s)", label))
    return;
  fake_tensor t[64];
  size_t n = tiny_tensors(t);
  edit(t, &n);
  unsigned char *bytes;
  size_t len = write_safetensors(t, n, &bytes);
  st_file *f = NULL;
  char err[512] = "";
  int bad = st_open_memory(bytes, len, "fake.safetensors", &f, err, sizeof err);
  CHECK(!bad, "st_open_memory: %s", err);
  if (!bad) {
    minilm_model m;
    memset(&m, 0xab, sizeof m);
    unsigned char before[sizeof m];
    memcpy(before, &m, sizeof m);
    bad = minilm_model_load(&m, ctx, &TINY, f, "fake.safetensors",
                            WGC_DTYPE_F32, err, sizeof err);
    CHECK(bad, "a file with %s loaded", label);
    CHECK(strstr(err, want) && strstr(err, "fake.safetensors"),
          "message '%s' lacks '%s' or the file name", err, want);
    CHECK(!memcmp(before, &m, sizeof m), "the model was changed");
    if (!bad)
      minilm_model_free(&m);
    st_close(f);
  }
  free(bytes);
  case_end();
}

static void drop_key(fake_tensor *t, size_t *n) {
  for (size_t i = 0; i < *n; i++)
    if (strstr(t[i].name, "self.key.weight"))
      t[i] = t[--*n];
}
static void wrong_shape(fake_tensor *t, size_t *n) {
  for (size_t i = 0; i < *n; i++)
    if (strstr(t[i].name, "intermediate.dense.weight")) {
      size_t s = t[i].shape[0];
      t[i].shape[0] = t[i].shape[1];
      t[i].shape[1] = s;
    }
}
static void wrong_rank(fake_tensor *t, size_t *n) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp(t[i].name, "embeddings.LayerNorm.bias")) {
      t[i].rank = 2;
      t[i].shape[1] = 1;
    }
}
static void wrong_dtype(fake_tensor *t, size_t *n) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp(t[i].name, "embeddings.word_embeddings.weight"))
      t[i].dtype = "F16";
}

TEST(minilm_bad_input) {
  for (int bi = 0; bi < 2; bi++) {
    /* Contexts come from backend_case, so that a filtered run (the CPU
     * cases under valgrind) starts no adapter. */
    wgc_context *ctx;
    expect_load_error(bi, "missing_tensor", drop_key,
                      "encoder.layer.0.attention.self.key.weight is missing");
    expect_load_error(bi, "wrong_shape", wrong_shape,
                      "encoder.layer.0.intermediate.dense.weight is F32 [4, "
                      "8], want F32 [8, 4]");
    expect_load_error(bi, "wrong_rank", wrong_rank,
                      "embeddings.LayerNorm.bias is F32 [4, 1], want F32 [4]");
    expect_load_error(bi, "wrong_dtype", wrong_dtype,
                      "embeddings.word_embeddings.weight is F16 [5, 4]");

    if (backend_case(bi, &ctx, "minilm_bad_input(missing_folder)")) {
      minilm_model m;
      char err[512] = "";
      int bad = minilm_model_load_dir(&m, ctx, "no/such/folder", WGC_DTYPE_F32,
                                      err, sizeof err);
      CHECK(bad && strstr(err, "no/such/folder/config.json"),
            "status %d, message '%s'", bad, err);
      case_end();
    }

    /* Weight types the tiny model's sizes cannot take, or no weight type:
     * refused before the file is read, the model untouched. */
    if (backend_case(bi, &ctx, "minilm_bad_input(weight_types)")) {
      fake_tensor t[64];
      unsigned char *bytes;
      size_t len = write_safetensors(t, tiny_tensors(t), &bytes);
      st_file *f = NULL;
      char err[512] = "";
      if (!st_open_memory(bytes, len, "tiny", &f, err, sizeof err)) {
        static const struct {
          wgc_dtype t;
          const char *want;
        } bad[] = {{WGC_DTYPE_Q8_0, "q8_0 weights need hidden (4) and ffn "
                                    "(8) multiples of 32"},
                   {WGC_DTYPE_I32, "weight type 3 (i32) is not"},
                   {(wgc_dtype)9, "weight type 9"}};
        for (size_t i = 0; i < 3; i++) {
          minilm_model m;
          memset(&m, 0xab, sizeof m);
          err[0] = 0;
          int rc = minilm_model_load(&m, ctx, &TINY, f, "tiny", bad[i].t, err,
                                     sizeof err);
          CHECK(rc && strstr(err, bad[i].want), "status %d, message '%s'", rc,
                err);
          CHECK(m.total == (size_t)0xababababababababull,
                "the model was changed");
        }
        st_close(f);
      }
      free(bytes);
      case_end();
    }

    /* The tiny model loads (all zeros), and bad token input is refused
     * before anything is enqueued; the callback never fires. */
    if (!backend_case(bi, &ctx, "minilm_bad_input(tokens)"))
      continue;
    fake_tensor t[64];
    size_t n = tiny_tensors(t);
    unsigned char *bytes;
    size_t len = write_safetensors(t, n, &bytes);
    st_file *f = NULL;
    char err[512] = "";
    minilm_model m;
    int bad = st_open_memory(bytes, len, "tiny", &f, err, sizeof err) ||
              minilm_model_load(&m, ctx, &TINY, f, "tiny", WGC_DTYPE_F32, err,
                                sizeof err);
    CHECK(!bad, "the tiny model does not load: %s", err);
    if (f)
      st_close(f);
    free(bytes);
    if (!bad) {
      int32_t good[3] = {1, 2, 3}, high[3] = {1, 5, 3}, neg[3] = {1, -1, 3};
      int32_t long_ids[7] = {1, 1, 1, 1, 1, 1, 1};
      struct {
        const int32_t *ids;
        size_t len;
        const char *want;
      } bads[] = {
          {high, 3, "token 1 is 5, outside the vocabulary of 5"},
          {neg, 3, "token 1 is -1"},
          {good, 0, "has 0 tokens, want 1 to 6"},
          {long_ids, 7, "has 7 tokens, want 1 to 6"},
      };
      float out[2 * 4] = {0};
      for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        const int32_t *ids[2] = {good, bads[i].ids};
        size_t lens[2] = {3, bads[i].len};
        waiter w = {0};
        err[0] = 0;
        wgc_status s = minilm_embed_async(&m, ids, lens, 2, out, on_done, &w,
                                          err, sizeof err);
        CHECK(s == WGC_ERR_INVALID_ARGUMENT, "case %zu: %s", i,
              wgc_status_name(s));
        CHECK(strstr(err, bads[i].want) && strstr(err, "sentence 1"),
              "case %zu: message '%s' lacks '%s'", i, err, bads[i].want);
        CHECK_OK(ctx, wgc_synchronize(ctx));
        CHECK(w.fired == 0, "case %zu: the callback fired", i);
      }
      /* All-zero weights: LayerNorm gives its zero bias everywhere, so the
       * pooled vector is 0, and normalising it gives 0 (torch's
       * F.normalize divides by max(|x|, 1e-12)), not 0/0. */
      for (size_t i = 0; i < 8; i++)
        out[i] = NAN;
      waiter w = {0};
      const int32_t *ids[1] = {good};
      size_t lens[1] = {3};
      CHECK(minilm_embed_async(&m, ids, lens, 1, out, on_done, &w, err,
                               sizeof err) == WGC_OK,
            "a valid call failed: %s", err);
      CHECK_OK(ctx, wgc_synchronize(ctx));
      CHECK(w.fired == 1 && w.status == WGC_OK, "fired %d, %s", w.fired,
            wgc_status_name(w.status));
      for (size_t i = 0; i < 4; i++)
        CHECK(out[i] == 0.0f, "out[%zu] = %g, want 0", i, out[i]);
      CHECK(isnan(out[4]), "the second row of out was written");
      minilm_model_free(&m);
    }
    case_end();
  }
}
