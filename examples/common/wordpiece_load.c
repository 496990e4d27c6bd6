/* Reads a tokenizer.json into the parts of wordpiece_internal.h, strictly:
 * every setting the tokenizer uses must be present with its type, and any
 * type or option not implemented by wordpiece_encode.c is refused. */
#include "wordpiece_internal.h"

#include "json.h"
#include "read_file.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Items named in messages are cut short: a hostile file may hold long
 * ones. */
#define ITEM "\"%.60s\""

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

int32_t wp_lookup(const wp_tokenizer *t, const char *s, size_t n) {
  for (size_t h = (size_t)hash(s, n) & t->mask; t->slots[h].len;
       h = (h + 1) & t->mask) {
    const wp_slot *e = &t->slots[h];
    if (e->len == n && !memcmp(t->pool + e->off, s, n))
      return e->id;
  }
  return -1;
}

int32_t wp_token_id(const wp_tokenizer *t, const char *token) {
  return t && token && *token ? wp_lookup(t, token, strlen(token)) : -1;
}

static bool get_int32(const json_value *v, int32_t *out) {
  int64_t i;
  if (!json_int64(v, &i) || i < 0 || i > INT32_MAX)
    return false;
  *out = (int32_t)i;
  return true;
}

/* A boolean member; false if absent or not a boolean. */
static bool get_bool(const json_value *obj, const char *key, bool *out) {
  json_type k = json_kind(json_get(obj, key));
  if (!json_get(obj, key) || (k != JSON_TRUE && k != JSON_FALSE))
    return false;
  *out = k == JSON_TRUE;
  return true;
}

static bool type_is(const json_value *obj, const char *type) {
  const char *s = json_string(json_get(obj, "type"), NULL);
  return s && !strcmp(s, type);
}

static const char *type_of(const json_value *obj) {
  const char *s = json_string(json_get(obj, "type"), NULL);
  return s ? s : "(none)";
}

static char *dup_bytes(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}

static int read_vocab(const char *name, const json_value *model,
                      wp_tokenizer *t, char *err, size_t errlen) {
  const json_value *vocab = json_get(model, "vocab");
  size_t n = json_count(vocab);
  if (json_kind(vocab) != JSON_OBJECT || !n)
    return read_fail(err, errlen, "%s: model.vocab is not a non-empty object",
                     name);
  if (n > (SIZE_MAX >> 2) || n > INT32_MAX)
    return read_fail(err, errlen, "%s: model.vocab too large", name);
  size_t bytes = 0;
  for (size_t i = 0; i < n; i++) {
    size_t klen;
    const char *key = json_key(vocab, i, &klen);
    int32_t id;
    if (!klen)
      return read_fail(err, errlen, "%s: model.vocab holds an empty token",
                       name);
    if (!get_int32(json_at(vocab, i), &id))
      return read_fail(err, errlen,
                       "%s: model.vocab " ITEM ": id is not an integer in [0, "
                       "2^31)",
                       name, key);
    if (klen > UINT32_MAX || bytes > UINT32_MAX - klen)
      return read_fail(err, errlen, "%s: model.vocab too large", name);
    bytes += klen;
  }
  size_t slots = 16;
  while (slots < 2 * n)
    slots *= 2;
  t->pool = malloc(bytes);
  t->slots = calloc(slots, sizeof *t->slots);
  if (!t->pool || !t->slots)
    return read_fail(err, errlen, "%s: out of memory", name);
  t->mask = slots - 1;
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    size_t klen;
    const char *key = json_key(vocab, i, &klen);
    int32_t id = 0;
    get_int32(json_at(vocab, i), &id);
    memcpy(t->pool + off, key, klen);
    size_t h = (size_t)hash(key, klen) & t->mask;
    while (t->slots[h].len)
      h = (h + 1) & t->mask;
    t->slots[h] = (wp_slot){(uint32_t)off, (uint32_t)klen, id};
    off += klen;
  }
  return 0;
}

static int read_model(const char *name, const json_value *root, wp_tokenizer *t,
                      char *err, size_t errlen) {
  const json_value *model = json_get(root, "model");
  if (!type_is(model, "WordPiece"))
    return read_fail(err, errlen, "%s: model type " ITEM " is not WordPiece",
                     name, type_of(model));
  if (read_vocab(name, model, t, err, errlen))
    return 1;
  size_t n;
  const char *unk = json_string(json_get(model, "unk_token"), &n);
  if (!unk)
    return read_fail(err, errlen, "%s: model.unk_token is not a string", name);
  if ((t->unk_id = wp_lookup(t, unk, n)) < 0)
    return read_fail(err, errlen,
                     "%s: model.unk_token " ITEM " is not in the vocabulary",
                     name, unk);
  const char *prefix =
      json_string(json_get(model, "continuing_subword_prefix"), &n);
  if (!prefix)
    return read_fail(err, errlen,
                     "%s: model.continuing_subword_prefix is not a string",
                     name);
  if (!(t->prefix = dup_bytes(prefix, n)))
    return read_fail(err, errlen, "%s: out of memory", name);
  t->prefix_len = n;
  int32_t max_chars;
  if (!get_int32(json_get(model, "max_input_chars_per_word"), &max_chars) ||
      !max_chars)
    return read_fail(err, errlen,
                     "%s: model.max_input_chars_per_word is not a positive "
                     "integer",
                     name);
  t->max_chars = (size_t)max_chars;
  return 0;
}

static int read_normalizer(const char *name, const json_value *root,
                           wp_tokenizer *t, char *err, size_t errlen) {
  const json_value *norm = json_get(root, "normalizer");
  if (json_kind(norm) == JSON_NULL)
    return 0; /* absent or null: no normalization */
  if (!type_is(norm, "BertNormalizer"))
    return read_fail(err, errlen,
                     "%s: normalizer type " ITEM " is not BertNormalizer", name,
                     type_of(norm));
  if (!get_bool(norm, "clean_text", &t->clean_text) ||
      !get_bool(norm, "handle_chinese_chars", &t->chinese) ||
      !get_bool(norm, "lowercase", &t->lowercase))
    return read_fail(err, errlen,
                     "%s: normalizer needs booleans clean_text, "
                     "handle_chinese_chars and lowercase",
                     name);
  /* null (or absent) strip_accents follows lowercase, as in BERT. */
  const json_value *strip = json_get(norm, "strip_accents");
  if (json_kind(strip) == JSON_NULL)
    t->strip_accents = t->lowercase;
  else if (!get_bool(norm, "strip_accents", &t->strip_accents))
    return read_fail(err, errlen,
                     "%s: normalizer.strip_accents is not null or a boolean",
                     name);
  return 0;
}

/* The ids of special token key in a TemplateProcessing's special_tokens,
 * appended to list. */
static int add_special(const char *name, const json_value *specials,
                       const char *key, int32_t *list, size_t *n, char *err,
                       size_t errlen) {
  const json_value *ids = json_get(json_get(specials, key), "ids");
  if (json_kind(ids) != JSON_ARRAY)
    return read_fail(err, errlen,
                     "%s: post_processor.special_tokens has no ids for " ITEM,
                     name, key);
  for (size_t i = 0; i < json_count(ids); i++) {
    if (*n == WP_MAX_SPECIALS)
      return read_fail(err, errlen, "%s: post_processor: more than %d specials",
                       name, WP_MAX_SPECIALS);
    if (!get_int32(json_at(ids, i), &list[(*n)++]))
      return read_fail(
          err, errlen,
          "%s: post_processor: special token " ITEM " has a bad id", name, key);
  }
  return 0;
}

static int read_template(const char *name, const json_value *post,
                         wp_tokenizer *t, char *err, size_t errlen) {
  const json_value *single = json_get(post, "single");
  const json_value *specials = json_get(post, "special_tokens");
  if (json_kind(single) != JSON_ARRAY)
    return read_fail(err, errlen, "%s: post_processor.single is not an array",
                     name);
  size_t sequences = 0;
  for (size_t i = 0; i < json_count(single); i++) {
    const json_value *item = json_at(single, i);
    const json_value *sp = json_get(item, "SpecialToken");
    const json_value *seq = json_get(item, "Sequence");
    if (sp && json_count(item) == 1) {
      const char *id = json_string(json_get(sp, "id"), NULL);
      if (!id)
        return read_fail(err, errlen,
                         "%s: post_processor.single[%zu] has no string id",
                         name, i);
      if (add_special(name, specials, id, sequences ? t->after : t->before,
                      sequences ? &t->n_after : &t->n_before, err, errlen))
        return 1;
    } else if (seq && json_count(item) == 1) {
      const char *id = json_string(json_get(seq, "id"), NULL);
      if (!id || strcmp(id, "A"))
        return read_fail(err, errlen,
                         "%s: post_processor.single[%zu] is not sequence A",
                         name, i);
      sequences++;
    } else {
      return read_fail(err, errlen,
                       "%s: post_processor.single[%zu] is neither SpecialToken "
                       "nor Sequence",
                       name, i);
    }
  }
  if (sequences != 1)
    return read_fail(err, errlen,
                     "%s: post_processor.single holds sequence A %zu times",
                     name, sequences);
  return 0;
}

/* BertProcessing: "cls": ["[CLS]", 101], "sep": ["[SEP]", 102]. */
static int read_bert_processing(const char *name, const json_value *post,
                                wp_tokenizer *t, char *err, size_t errlen) {
  const json_value *cls = json_get(post, "cls"), *sep = json_get(post, "sep");
  if (json_count(cls) != 2 || json_kind(cls) != JSON_ARRAY ||
      json_count(sep) != 2 || json_kind(sep) != JSON_ARRAY ||
      !get_int32(json_at(cls, 1), &t->before[0]) ||
      !get_int32(json_at(sep, 1), &t->after[0]))
    return read_fail(err, errlen,
                     "%s: post_processor cls and sep are not [token, id]",
                     name);
  t->n_before = t->n_after = 1;
  return 0;
}

static int read_post(const char *name, const json_value *root, wp_tokenizer *t,
                     char *err, size_t errlen) {
  const json_value *post = json_get(root, "post_processor");
  if (json_kind(post) == JSON_NULL)
    return 0;
  if (type_is(post, "TemplateProcessing"))
    return read_template(name, post, t, err, errlen);
  if (type_is(post, "BertProcessing"))
    return read_bert_processing(name, post, t, err, errlen);
  return read_fail(err, errlen,
                   "%s: post_processor type " ITEM
                   " is not TemplateProcessing or BertProcessing",
                   name, type_of(post));
}

static int read_added(const char *name, const json_value *root, wp_tokenizer *t,
                      char *err, size_t errlen) {
  const json_value *added = json_get(root, "added_tokens");
  if (json_kind(added) == JSON_NULL)
    return 0;
  if (json_kind(added) != JSON_ARRAY)
    return read_fail(err, errlen, "%s: added_tokens is not an array", name);
  size_t n = json_count(added);
  t->added = calloc(n ? n : 1, sizeof *t->added);
  if (!t->added)
    return read_fail(err, errlen, "%s: out of memory", name);
  for (size_t i = 0; i < n; i++) {
    const json_value *a = json_at(added, i);
    size_t len;
    const char *text = json_string(json_get(a, "content"), &len);
    wp_added *w = &t->added[t->n_added];
    if (!text || !len)
      return read_fail(
          err, errlen,
          "%s: added_tokens[%zu].content is not a non-empty string", name, i);
    if (!get_int32(json_get(a, "id"), &w->id))
      return read_fail(err, errlen, "%s: added token " ITEM ": bad id", name,
                       text);
    static const char *const unsupported[] = {"normalized", "single_word",
                                              "lstrip", "rstrip"};
    for (size_t k = 0; k < 4; k++) {
      bool on = true;
      if (!get_bool(a, unsupported[k], &on) || on)
        return read_fail(err, errlen,
                         "%s: added token " ITEM ": %s is not false (not "
                         "supported)",
                         name, text, unsupported[k]);
    }
    if (!(w->text = dup_bytes(text, len)))
      return read_fail(err, errlen, "%s: out of memory", name);
    w->len = len;
    t->n_added++;
  }
  return 0;
}

static int load(const char *name, const char *json, size_t len,
                wp_tokenizer **out, char *err, size_t errlen) {
  if (!out)
    return read_fail(err, errlen, "%s: no output pointer", name);
  *out = NULL;
  json_doc *doc = NULL;
  char jerr[160];
  if (json_parse(json, len, &doc, jerr, sizeof jerr))
    return read_fail(err, errlen, "%s: %s", name, jerr);
  const json_value *root = json_root(doc);
  wp_tokenizer *t = calloc(1, sizeof *t);
  int r;
  if (!t) {
    r = read_fail(err, errlen, "%s: out of memory", name);
  } else if (json_kind(root) != JSON_OBJECT) {
    r = read_fail(err, errlen, "%s: not a JSON object", name);
  } else {
    r = read_model(name, root, t, err, errlen) ||
        read_normalizer(name, root, t, err, errlen) ||
        read_post(name, root, t, err, errlen) ||
        read_added(name, root, t, err, errlen);
    const json_value *pre = json_get(root, "pre_tokenizer");
    if (!r && !type_is(pre, "BertPreTokenizer"))
      r = read_fail(err, errlen,
                    "%s: pre_tokenizer type " ITEM " is not BertPreTokenizer",
                    name, type_of(pre));
  }
  json_free(doc);
  if (r) {
    wp_free(t);
    return 1;
  }
  *out = t;
  return 0;
}

int wp_load_memory(const char *json, size_t len, wp_tokenizer **out, char *err,
                   size_t errlen) {
  return load("tokenizer.json", json, len, out, err, errlen);
}

int wp_load(const char *path, wp_tokenizer **out, char *err, size_t errlen) {
  if (out)
    *out = NULL;
  size_t len = 0;
  char *text = read_file(path, (size_t)1 << 30, &len, err, errlen);
  if (!text)
    return 1;
  int r = load(path, text, len, out, err, errlen);
  free(text);
  return r;
}

void wp_free(wp_tokenizer *t) {
  if (!t)
    return;
  for (size_t i = 0; i < t->n_added; i++)
    free(t->added[i].text);
  free(t->added);
  free(t->prefix);
  free(t->slots);
  free(t->pool);
  free(t);
}
