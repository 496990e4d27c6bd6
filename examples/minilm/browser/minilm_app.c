/* all-MiniLM-L6-v2 in the browser: the same model code as build/minilm
 * (minilm_model.c, wordpiece, safetensors), linked with wgc's wasm32
 * library into one module (make wasm: build/web/minilm.wasm) that
 * web/minilm.js drives. There is no JavaScript copy of the model: the page
 * only fetches the model's files into this module's memory, and calls the
 * exports below. Nothing here waits; each step ends in a callback that the
 * page gets through an import.
 *
 * A page holds up to MW_SLOTS models, each on its own context (the demo
 * runs WebGPU and the CPU backend side by side to check one against the
 * other). */
#include "minilm_model.h"
#include "wordpiece.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT(name) __attribute__((export_name(#name)))
#define IMPORT(name) __attribute__((import_module("env"), import_name(#name)))

/* wgc_create_async finished for slot: status is a wgc_status. */
IMPORT(mw_created) void mw_created(int slot, int status);
/* An embedding pass finished: n unit vectors of dim floats at out. */
IMPORT(mw_embedded)
void mw_embedded(int slot, int status, const float *out, int n, int dim);

#define MW_SLOTS 4

typedef struct mw_slot {
  wgc_context *ctx;
  minilm_model model;
  int loaded;
  float *out; /* the last pass's embeddings */
  int32_t **ids;
  size_t *lens, n;
  int busy; /* a pass is in flight: its buffers are in use */
} mw_slot;

static mw_slot slots[MW_SLOTS];
static wp_tokenizer *tokenizer;
static minilm_config config;
static int config_read;
static char error[512];

/* The last failure's message, for the page. */
EXPORT(mw_error) const char *mw_error(void) { return error; }

static mw_slot *slot_at(int slot) {
  if (slot < 0 || slot >= MW_SLOTS) {
    snprintf(error, sizeof error, "minilm: slot %d is not in [0, %d)", slot,
             MW_SLOTS);
    return NULL;
  }
  return &slots[slot];
}

static void created(wgc_status s, wgc_context *ctx, void *user) {
  int slot = (int)(intptr_t)user;
  slots[slot].ctx = ctx;
  if (s != WGC_OK)
    snprintf(error, sizeof error, "%s", wgc_last_error(NULL));
  mw_created(slot, s);
}

/* Opens a context of backend (a wgc_backend) for slot; mw_created fires. */
EXPORT(mw_create) int mw_create(int slot, int backend) {
  mw_slot *s = slot_at(slot);
  if (!s)
    return WGC_ERR_INVALID_ARGUMENT;
  if (s->ctx) {
    snprintf(error, sizeof error, "minilm: slot %d has a context", slot);
    return WGC_ERR_INVALID_ARGUMENT;
  }
  wgc_options opt = {.backend = (wgc_backend)backend};
  wgc_status st = wgc_create_async(&opt, created, (void *)(intptr_t)slot);
  if (st != WGC_OK)
    snprintf(error, sizeof error, "%s", wgc_last_error(NULL));
  return st;
}

EXPORT(mw_backend_name) const char *mw_backend_name(int slot) {
  mw_slot *s = slot_at(slot);
  return s && s->ctx ? wgc_backend_name(s->ctx) : "";
}

EXPORT(mw_adapter_name) const char *mw_adapter_name(int slot) {
  mw_slot *s = slot_at(slot);
  return s && s->ctx ? wgc_adapter_name(s->ctx) : "";
}

/* The model's configuration and tokenizer (the page fetched the files):
 * config.json, sentence_bert_config.json, tokenizer.json. Non-zero with
 * mw_error on failure. */
EXPORT(mw_configure)
int mw_configure(const char *cfg, size_t cfg_len, const char *sbert,
                 size_t sbert_len, const char *tok, size_t tok_len) {
  minilm_config c = minilm_config_default();
  if (minilm_config_parse(&c, cfg, cfg_len, "config.json", error,
                          sizeof error) ||
      minilm_seq_config_parse(&c, sbert, sbert_len, "sentence_bert_config.json",
                              error, sizeof error))
    return 1;
  wp_tokenizer *t;
  if (wp_load_memory(tok, tok_len, &t, error, sizeof error))
    return 1;
  wp_free(tokenizer);
  tokenizer = t;
  config = c;
  config_read = 1;
  return 0;
}

static int check_unloaded(const mw_slot *s, int slot) {
  if (s->ctx && config_read && !s->loaded && !s->busy)
    return 0;
  snprintf(error, sizeof error,
           "minilm: slot %d needs a context and the configuration, and no "
           "model yet",
           slot);
  return 1;
}

/* Tokenizes n sentences (UTF-8, text_lens[i] bytes each, one after the
 * other in texts) into lens[i] tokens at ids[i] (max_seq each). */
static int tokenize(const char *texts, const uint32_t *text_lens, size_t n,
                    int32_t **ids, size_t *lens) {
  const char *t = texts;
  for (size_t i = 0; i < n; i++) {
    ids[i] = malloc(config.max_seq * sizeof *ids[i]);
    if (!ids[i]) {
      snprintf(error, sizeof error, "minilm: out of memory");
      return 1;
    }
    if (wp_encode(tokenizer, t, text_lens[i], config.max_seq, ids[i], &lens[i],
                  error, sizeof error))
      return 1;
    t += text_lens[i];
  }
  return 0;
}

/* Before the weights arrive: allocates slot's model for wtype (a
 * wgc_dtype: f32, f16, bf16, q8_0 or q4_0) and compiles ahead the kernels
 * of a first pass over n sentences (as mw_embed takes them), which then
 * compile while the page fetches the weights. Non-zero with mw_error on
 * failure. */
EXPORT(mw_prepare)
int mw_prepare(int slot, int wtype, const char *texts,
               const uint32_t *text_lens, size_t n) {
  mw_slot *s = slot_at(slot);
  if (!s || check_unloaded(s, slot))
    return 1;
  if (s->model.weights && s->model.wtype != (wgc_dtype)wtype)
    minilm_model_free(&s->model);
  if (!s->model.weights &&
      minilm_model_alloc(&s->model, s->ctx, &config, (wgc_dtype)wtype, error,
                         sizeof error))
    return 1;
  int32_t **ids = calloc(n ? n : 1, sizeof *ids);
  size_t *lens = calloc(n ? n : 1, sizeof *lens), seq = 1;
  int rc = !ids || !lens;
  if (rc)
    snprintf(error, sizeof error, "minilm: out of memory");
  else
    rc = tokenize(texts, text_lens, n, ids, lens);
  for (size_t i = 0; i < n && !rc; i++)
    seq = lens[i] > seq ? lens[i] : seq;
  if (!rc)
    rc = minilm_compile_ahead(&s->model, n ? n : 1, seq, NULL, NULL, error,
                              sizeof error) != WGC_OK;
  for (size_t i = 0; ids && i < n; i++)
    free(ids[i]);
  free(ids);
  free(lens);
  return rc;
}

/* Checks and uploads the weights (model.safetensors, len bytes at data)
 * into slot's context, the linear weights and embedding tables converted
 * to wtype (as mw_prepare's, if it ran); data may be freed on return.
 * Non-zero with mw_error on failure. */
EXPORT(mw_load) int mw_load(int slot, const void *data, size_t len, int wtype) {
  mw_slot *s = slot_at(slot);
  if (!s || check_unloaded(s, slot))
    return 1;
  if (s->model.weights && s->model.wtype != (wgc_dtype)wtype)
    minilm_model_free(&s->model);
  st_file *f;
  if (st_open_memory(data, len, "model.safetensors", &f, error, sizeof error))
    return 1;
  int rc = s->model.weights
               ? minilm_model_upload(&s->model, f, "model.safetensors", error,
                                     sizeof error)
               : minilm_model_load(&s->model, s->ctx, &config, f,
                                   "model.safetensors", (wgc_dtype)wtype, error,
                                   sizeof error);
  st_close(f);
  s->loaded = rc == 0;
  return rc;
}

static void release_batch(mw_slot *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->ids[i]);
  free(s->ids);
  free(s->lens);
  free(s->out);
  s->ids = NULL;
  s->lens = NULL;
  s->out = NULL;
  s->n = 0;
}

static void embedded(wgc_status st, void *user) {
  mw_slot *s = user;
  s->busy = 0;
  if (st != WGC_OK)
    snprintf(error, sizeof error, "%s", wgc_last_error(s->ctx));
  mw_embedded((int)(s - slots), st, s->out, (int)s->n,
              (int)s->model.cfg.hidden);
}

/* Tokenizes n sentences (UTF-8, text_lens[i] bytes each, one after the
 * other in texts) and embeds them in one pass on slot's model; mw_embedded
 * fires with the vectors, which stay valid until the slot's next pass.
 * Non-zero with mw_error when nothing was started. */
EXPORT(mw_embed)
int mw_embed(int slot, const char *texts, const uint32_t *text_lens, size_t n) {
  mw_slot *s = slot_at(slot);
  if (!s)
    return 1;
  if (!s->loaded || s->busy || n == 0) {
    snprintf(error, sizeof error, "minilm: slot %d has %s", slot,
             !s->loaded ? "no model"
             : s->busy  ? "a pass in flight"
                        : "no sentence to embed");
    return 1;
  }
  release_batch(s);
  s->ids = calloc(n, sizeof *s->ids);
  s->lens = calloc(n, sizeof *s->lens);
  s->out = malloc(n * s->model.cfg.hidden * sizeof *s->out);
  if (!s->ids || !s->lens || !s->out) {
    release_batch(s);
    snprintf(error, sizeof error, "minilm: out of memory for %zu sentences", n);
    return 1;
  }
  s->n = n;
  if (tokenize(texts, text_lens, n, s->ids, s->lens)) {
    release_batch(s);
    return 1;
  }
  wgc_status st =
      minilm_embed_async(&s->model, (const int32_t *const *)s->ids, s->lens, n,
                         s->out, embedded, s, error, sizeof error);
  if (st != WGC_OK) {
    release_batch(s);
    return 1;
  }
  s->busy = 1;
  return 0;
}

/* Tokens of sentence i of slot's last pass (with [CLS] and [SEP]), and
 * their ids. */
EXPORT(mw_tokens) int mw_tokens(int slot, int i) {
  mw_slot *s = slot_at(slot);
  return s && i >= 0 && (size_t)i < s->n ? (int)s->lens[i] : 0;
}

EXPORT(mw_token_ids) const int32_t *mw_token_ids(int slot, int i) {
  mw_slot *s = slot_at(slot);
  return s && i >= 0 && (size_t)i < s->n ? s->ids[i] : NULL;
}

/* Timing records on slot's context (wgc_profile_start / _stop): on 1
 * starts recording afresh, 0 stops. Non-zero with mw_error on failure. */
EXPORT(mw_profile) int mw_profile(int slot, int on) {
  mw_slot *s = slot_at(slot);
  if (!s)
    return 1;
  wgc_status st = !s->ctx ? WGC_ERR_INVALID_ARGUMENT
                  : on    ? wgc_profile_start(s->ctx)
                          : wgc_profile_stop(s->ctx);
  if (st != WGC_OK)
    snprintf(error, sizeof error, "minilm: slot %d: %s", slot,
             s->ctx ? wgc_last_error(s->ctx) : "no context");
  return st != WGC_OK;
}

/* The records so far as Chrome trace-event JSON (wgc_profile_trace), valid
 * until the next call; NULL with mw_error on failure. */
EXPORT(mw_trace) const char *mw_trace(int slot) {
  static char *text;
  mw_slot *s = slot_at(slot);
  size_t len = 0;
  if (!s || !s->ctx || wgc_profile_trace(s->ctx, NULL, 0, &len) != WGC_OK) {
    if (s)
      snprintf(error, sizeof error, "minilm: slot %d: %s", slot,
               s->ctx ? wgc_last_error(s->ctx) : "no context");
    return NULL;
  }
  free(text);
  text = malloc(len + 1);
  if (!text || wgc_profile_trace(s->ctx, text, len + 1, &len) != WGC_OK) {
    snprintf(error, sizeof error, "minilm: the trace: out of memory");
    return NULL;
  }
  return text;
}

EXPORT(mw_destroy) void mw_destroy(int slot) {
  mw_slot *s = slot_at(slot);
  if (!s || !s->ctx)
    return;
  minilm_model_free(&s->model); /* loaded, or only prepared */
  wgc_destroy(s->ctx);          /* a pass in flight fires as CANCELLED first */
  release_batch(s);
  memset(s, 0, sizeof *s);
}
