/* minilm_model.h's config readers: config.json (BERT's sizes) and
 * sentence_bert_config.json (the truncation length). */
#include "json.h"
#include "minilm_model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return 1;
}

/* A positive integer member key of obj into *out (at most 2^30). */
static int size_field(const json_value *obj, const char *key, size_t *out,
                      const char *name, char *err, size_t errlen) {
  int64_t v;
  const json_value *x = json_get(obj, key);
  if (!x)
    return fail(err, errlen, "%s: \"%s\" is missing", name, key);
  if (!json_int64(x, &v) || v < 1 || v > (1 << 30))
    return fail(err, errlen, "%s: \"%s\" is not an integer from 1 to 2^30",
                name, key);
  *out = (size_t)v;
  return 0;
}

/* A string member that must equal want when present (absent: BERT's
 * default, which is want). */
static int string_is(const json_value *obj, const char *key, const char *want,
                     const char *name, char *err, size_t errlen) {
  const json_value *x = json_get(obj, key);
  if (!x)
    return 0;
  size_t len;
  const char *s = json_string(x, &len);
  if (!s || len != strlen(want) || memcmp(s, want, len))
    return fail(err, errlen, "%s: \"%s\" must be \"%s\"", name, key, want);
  return 0;
}

static int parse_root(const char *text, size_t len, const char *name,
                      json_doc **doc, char *err, size_t errlen) {
  char why[160];
  if (json_parse(text, len, doc, why, sizeof why))
    return fail(err, errlen, "%s: %s", name, why);
  if (json_kind(json_root(*doc)) != JSON_OBJECT) {
    json_free(*doc);
    return fail(err, errlen, "%s: not a JSON object", name);
  }
  return 0;
}

int minilm_config_parse(minilm_config *cfg, const char *text, size_t len,
                        const char *name, char *err, size_t errlen) {
  json_doc *doc;
  if (parse_root(text, len, name, &doc, err, errlen))
    return 1;
  const json_value *o = json_root(doc);
  minilm_config c = *cfg;
  int bad =
      size_field(o, "vocab_size", &c.vocab, name, err, errlen) ||
      size_field(o, "hidden_size", &c.hidden, name, err, errlen) ||
      size_field(o, "num_attention_heads", &c.heads, name, err, errlen) ||
      size_field(o, "num_hidden_layers", &c.layers, name, err, errlen) ||
      size_field(o, "intermediate_size", &c.ffn, name, err, errlen) ||
      size_field(o, "max_position_embeddings", &c.positions, name, err,
                 errlen) ||
      size_field(o, "type_vocab_size", &c.type_vocab, name, err, errlen) ||
      string_is(o, "hidden_act", "gelu", name, err, errlen) ||
      string_is(o, "position_embedding_type", "absolute", name, err, errlen);
  if (!bad) {
    const json_value *eps = json_get(o, "layer_norm_eps");
    double e = json_number(eps);
    if (json_kind(eps) != JSON_NUMBER || !(e >= 0.0) || e > 1.0)
      bad = fail(err, errlen,
                 "%s: \"layer_norm_eps\" is missing or not a "
                 "number from 0 to 1",
                 name);
    c.ln_eps = (float)e;
  }
  if (!bad && c.hidden % c.heads)
    bad = fail(err, errlen,
               "%s: hidden_size %zu is not a multiple of "
               "num_attention_heads %zu",
               name, c.hidden, c.heads);
  if (!bad && c.layers > MINILM_MAX_LAYERS)
    bad = fail(err, errlen, "%s: num_hidden_layers %zu, at most %d", name,
               c.layers, MINILM_MAX_LAYERS);
  json_free(doc);
  if (!bad)
    *cfg = c;
  return bad;
}

int minilm_seq_config_parse(minilm_config *cfg, const char *text, size_t len,
                            const char *name, char *err, size_t errlen) {
  json_doc *doc;
  if (parse_root(text, len, name, &doc, err, errlen))
    return 1;
  size_t max_seq;
  int bad =
      size_field(json_root(doc), "max_seq_length", &max_seq, name, err, errlen);
  json_free(doc);
  if (!bad)
    cfg->max_seq = max_seq;
  return bad;
}
