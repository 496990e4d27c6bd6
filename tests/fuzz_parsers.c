/* Fuzzing the model loaders (examples/common): random and mutated bytes
 * into the JSON reader, safetensors reader, tokenizer.json reader and
 * wp_encode; the pipeline cache's header reader (src/gpu); and the
 * constant if folding of generated WGSL (src/webgpu). Each input lives
 * in a heap buffer of its exact size, so the ASan build (make fuzz-parsers)
 * catches any read past it. Every call must return; a failure must come with a
 * message and leave no output; a success must satisfy the reader's promises,
 * checked here:
 *
 *   build/test_wgc fuzz_parsers              fixed seeds (part of the suite)
 *   make fuzz-parsers SECONDS=300            fresh seeds, ASan build
 *   make fuzz-parsers SEED=1234              replays one seed */
#include "../examples/common/json.h"
#include "../examples/common/safetensors.h"
#include "../examples/common/wordpiece.h"
#include "gpu/native_cache.h"
#include "harness.h"
#include "webgpu/wgsl_fold.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { INPUTS_PER_SEED = 1000 };

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t next(rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}

static size_t below(rng *r, size_t n) { return n ? next(r) % n : 0; }

static const char *const json_seeds[] = {
    "{\"a\":[1,2.5e-3,-0,true,false,null],\"b\":{\"c\":\"d\\u00e9\\n\"}}",
    "[[[[]]],{},\"\\uD83D\\uDE00\",\"\xc3\xa9\",1e308,-9223372036854775808]",
    "{\"__metadata__\":{\"format\":\"pt\"},\"w\":{\"dtype\":\"F32\","
    "\"shape\":[2,2],\"data_offsets\":[0,16]}}",
    "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
};

/* Small tokenizer.json documents (the real one is fuzzed by encoding). */
static const char tok_seed[] =
    "{\"added_tokens\":[{\"id\":1,\"content\":\"[C]\",\"single_word\":false,"
    "\"lstrip\":false,\"rstrip\":false,\"normalized\":false}],"
    "\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,"
    "\"handle_chinese_chars\":true,\"strip_accents\":null,\"lowercase\":true},"
    "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":["
    "{\"SpecialToken\":{\"id\":\"[C]\",\"type_id\":0}},{\"Sequence\":{\"id\":"
    "\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"[S]\",\"type_id\":0}}],"
    "\"special_tokens\":{\"[C]\":{\"id\":\"[C]\",\"ids\":[1],\"tokens\":["
    "\"[C]\"]},\"[S]\":{\"id\":\"[S]\",\"ids\":[2],\"tokens\":[\"[S]\"]}}},"
    "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[U]\","
    "\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":10,"
    "\"vocab\":{\"[U]\":0,\"[C]\":1,\"[S]\":2,\"a\":3,\"##b\":4,\"ab\":5,"
    "\"\\u00e9\":6,\",\":7,\"##\\u4e2d\":8}}}";

static const unsigned char interesting[] = {
    '"', '{', '}', '[',  ']',  ',',  ':',  '\\', 'u', '0', '9', '-', '.',
    'e', ' ', 0,   0x80, 0xC3, 0xED, 0xF4, 0xFF, 'n', 't', 'D', '#'};

/* 1 to 8 random edits of b[0..*len) within cap bytes. */
static void mutate(rng *r, unsigned char *b, size_t *len, size_t cap) {
  for (size_t k = below(r, 2) ? 1 : 1 + below(r, 8); k > 0; k--) {
    size_t n = *len, at = below(r, n + 1);
    switch (below(r, 7)) {
    case 0: /* flip a bit */
      if (n)
        b[below(r, n)] ^= (unsigned char)(1u << below(r, 8));
      break;
    case 1: /* an interesting byte */
      if (n)
        b[below(r, n)] = interesting[below(r, sizeof interesting)];
      break;
    case 2: /* insert one */
      if (n < cap) {
        memmove(b + at + 1, b + at, n - at);
        b[at] = interesting[below(r, sizeof interesting)];
        (*len)++;
      }
      break;
    case 3: /* delete a run */
      if (at < n) {
        size_t d = 1 + below(r, n - at < 8 ? n - at : 8);
        memmove(b + at, b + at + d, n - at - d);
        *len -= d;
      }
      break;
    case 4: /* truncate */
      *len = below(r, n + 1);
      break;
    case 5: { /* copy a chunk elsewhere */
      size_t from = below(r, n + 1), m = below(r, 16);
      if (from + m <= n && n + m <= cap) {
        memmove(b + at + m, b + at, n - at);
        memmove(b + at, b + (from >= at ? from + m : from), m);
        *len += m;
      }
      break;
    }
    default: /* a random byte */
      if (n)
        b[below(r, n)] = (unsigned char)next(r);
    }
  }
}

/* An exact-size copy, so ASan sees reads past the end. */
static unsigned char *exact(const unsigned char *b, size_t n) {
  unsigned char *c = malloc(n ? n : 1);
  memcpy(c, b, n);
  return c;
}

static size_t walk(const json_value *v, int depth) {
  size_t nodes = 1;
  CHECK(depth <= JSON_MAX_DEPTH, "depth %d", depth);
  switch (json_kind(v)) {
  case JSON_STRING: {
    size_t len = 0;
    const char *s = json_string(v, &len);
    CHECK(s && s[len] == 0, "string not terminated");
    break;
  }
  case JSON_NUMBER:
    CHECK(isfinite(json_number(v)), "number not finite");
    break;
  case JSON_ARRAY:
  case JSON_OBJECT:
    for (size_t i = 0; i < json_count(v); i++) {
      if (json_kind(v) == JSON_OBJECT) {
        size_t klen = 0;
        const char *k = json_key(v, i, &klen);
        CHECK(k && k[klen] == 0, "key not terminated");
        if (k && strlen(k) == klen)
          CHECK(json_get(v, k) == json_at(v, i), "json_get(\"%s\") misses", k);
      }
      nodes += walk(json_at(v, i), depth + 1);
    }
    break;
  default:
    break;
  }
  return nodes;
}

static void fuzz_json(rng *r, size_t *ok) {
  unsigned char b[512];
  size_t len;
  if (below(r, 4)) {
    const char *s = json_seeds[below(r, 4)];
    len = strlen(s);
    memcpy(b, s, len);
    mutate(r, b, &len, sizeof b);
  } else {
    len = below(r, 64);
    for (size_t i = 0; i < len; i++)
      b[i] = interesting[below(r, sizeof interesting)];
  }
  unsigned char *in = exact(b, len);
  json_doc *d = (json_doc *)1;
  char err[200] = "";
  if (json_parse((const char *)in, len, &d, err, sizeof err) == 0) {
    walk(json_root(d), 0);
    json_free(d);
    (*ok)++;
  } else {
    CHECK(d == NULL && err[0], "failure without message or with output");
  }
  free(in);
}

static void fuzz_safetensors(rng *r, size_t *ok) {
  static const char *h = "{\"__metadata__\":{\"k\":\"v\"},"
                         "\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],"
                         "\"data_offsets\":[0,16]},"
                         "\"b\":{\"dtype\":\"I8\",\"shape\":[3],"
                         "\"data_offsets\":[16,19]},"
                         "\"c\":{\"dtype\":\"BF16\",\"shape\":[],"
                         "\"data_offsets\":[19,21]}}  ";
  unsigned char b[600];
  size_t hl = strlen(h), len = 8 + hl + 21;
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(b + 8, h, hl);
  for (size_t i = 0; i < 21; i++)
    b[8 + hl + i] = (unsigned char)i;
  if (below(r, 8)) {
    /* Mostly the header: mutate a copy of it, keep the size field. */
    unsigned char hb[520];
    size_t n = hl;
    memcpy(hb, h, hl);
    mutate(r, hb, &n, sizeof hb);
    for (int i = 0; i < 8; i++)
      b[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(b + 8, hb, n);
    size_t data = below(r, 4) ? 21 : below(r, 40);
    for (size_t i = 0; i < data; i++)
      b[8 + n + i] = (unsigned char)i;
    len = 8 + n + data;
  } else {
    mutate(r, b, &len, sizeof b);
  }
  unsigned char *in = exact(b, len);
  st_file *f = (st_file *)1;
  char err[300] = "";
  if (st_open_memory(in, len, "fuzz", &f, err, sizeof err) == 0) {
    (*ok)++;
    /* The promises: tensors inside the data area, in order, tiling it. */
    uint64_t hdr = 0;
    for (int i = 7; i >= 0; i--)
      hdr = hdr << 8 | in[i];
    const unsigned char *data = in + 8 + hdr, *at = data;
    for (size_t i = 0; i < st_count(f); i++) {
      const st_tensor *t = st_tensor_at(f, i);
      uint64_t elems = 1;
      for (size_t k = 0; k < t->rank; k++)
        elems *= t->shape[k];
      CHECK((const unsigned char *)t->data == at &&
                t->bytes == elems * st_dtype_size(t->dtype) &&
                t->rank <= ST_MAX_RANK && st_find(f, t->name) == t,
            "tensor %zu breaks the promises", i);
      at += t->bytes;
    }
    CHECK(at == in + len, "tensors do not end the file");
    st_close(f);
  } else {
    CHECK(f == NULL && strstr(err, "fuzz") == err,
          "failure without message or with output: %s", err);
  }
  free(in);
}

/* Random text: valid UTF-8 of random code points, or random bytes. */
static size_t random_text(rng *r, unsigned char *b, size_t cap) {
  size_t n = 0, want = below(r, cap / 4);
  bool raw = below(r, 5) == 0;
  while (n + 4 <= cap && n < want) {
    if (raw) {
      b[n++] = (unsigned char)next(r);
      continue;
    }
    uint32_t c;
    switch (below(r, 4)) {
    case 0:
      c = (uint32_t)below(r, 0x80);
      break;
    case 1:
      c = (uint32_t)below(r, 0x800);
      break;
    case 2:
      c = (uint32_t)below(r, 0x10000);
      break;
    default:
      c = (uint32_t)below(r, 0x110000);
    }
    if (c >= 0xD800 && c <= 0xDFFF)
      c = ' ';
    if (c < 0x80) {
      b[n++] = (unsigned char)c;
    } else if (c < 0x800) {
      b[n++] = (unsigned char)(0xC0 | c >> 6);
      b[n++] = (unsigned char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      b[n++] = (unsigned char)(0xE0 | c >> 12);
      b[n++] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
      b[n++] = (unsigned char)(0x80 | (c & 0x3F));
    } else {
      b[n++] = (unsigned char)(0xF0 | c >> 18);
      b[n++] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
      b[n++] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
      b[n++] = (unsigned char)(0x80 | (c & 0x3F));
    }
  }
  return n;
}

static void fuzz_encode(rng *r, const wp_tokenizer *t, int32_t first,
                        int32_t last, int32_t id_limit, size_t *ok) {
  unsigned char b[1200];
  size_t len = random_text(r, b, sizeof b);
  unsigned char *in = exact(b, len);
  size_t max_len = below(r, 4) ? 2 + below(r, 300) : below(r, 4);
  int32_t *ids = malloc((max_len ? max_len : 1) * sizeof *ids);
  size_t n = 12345;
  char err[200] = "";
  if (wp_encode(t, (const char *)in, len, max_len, ids, &n, err, sizeof err) ==
      0) {
    (*ok)++;
    CHECK(n >= 2 && n <= max_len && ids[0] == first && ids[n - 1] == last,
          "%zu ids for max_len %zu", n, max_len);
    for (size_t i = 0; i < n; i++)
      CHECK(ids[i] >= 0 && ids[i] < id_limit, "id %d", ids[i]);
  } else {
    CHECK(n == 12345 && err[0], "failure without message or with output");
  }
  free(ids);
  free(in);
}

static void fuzz_tokenizer_file(rng *r, size_t *ok) {
  unsigned char b[sizeof tok_seed + 64];
  size_t len = sizeof tok_seed - 1;
  memcpy(b, tok_seed, len);
  mutate(r, b, &len, sizeof b);
  unsigned char *in = exact(b, len);
  wp_tokenizer *t = (wp_tokenizer *)1;
  char err[300] = "";
  if (wp_load_memory((const char *)in, len, &t, err, sizeof err) == 0) {
    (*ok)++;
    /* A mutated file may change the specials or ids: only bound them. */
    unsigned char text[64];
    size_t tl = random_text(r, text, sizeof text);
    int32_t ids[16];
    size_t n = 0;
    if (wp_encode(t, (const char *)text, tl, 16, ids, &n, err, sizeof err) == 0)
      CHECK(n <= 16, "%zu ids", n);
    wp_free(t);
  } else {
    CHECK(t == NULL && strstr(err, "tokenizer.json: ") == err,
          "failure without message or with output: %s", err);
  }
  free(in);
}

/* A field of random bytes, mostly printable, sometimes longer than fits. */
static void random_field(rng *r, char *out, size_t cap) {
  size_t n = below(r, 4) ? below(r, cap) : below(r, 300);
  if (n >= cap)
    n = cap - 1;
  for (size_t i = 0; i < n; i++)
    out[i] = below(r, 16) ? (char)(0x20 + below(r, 0x5f))
                          : (char)interesting[below(r, sizeof interesting)];
  out[n] = '\0';
}

static bool printable(const char *s, size_t cap) {
  size_t n = strnlen(s, cap);
  if (n == cap)
    return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return false;
  return true;
}

/* The pipeline cache header: a header written from random fields, then
 * mutated or not. A success must hold printable fields that write back as
 * the same bytes; anything not starting as a wgc header is foreign. */
static void fuzz_cache_header(rng *r, size_t *ok) {
  nw_cache_header h;
  random_field(r, h.version, sizeof h.version);
  random_field(r, h.adapter, sizeof h.adapter);
  random_field(r, h.driver, sizeof h.driver);
  random_field(r, h.ids, sizeof h.ids);
  unsigned char b[3000];
  size_t len = nw_cache_format(&h, (char *)b, sizeof b);
  if (below(r, 4))
    mutate(r, b, &len, sizeof b);
  unsigned char *in = exact(b, len);
  nw_cache_header got;
  memset(&got, 0x5a, sizeof got);
  enum nw_cache_parsed p = nw_cache_parse((const char *)in, len, &got);
  static const char magic[] = "wgc pipeline cache 1\n";
  size_t head = len < sizeof magic - 1 ? len : sizeof magic - 1;
  bool ours = !memcmp(in, magic, head);
  CHECK(p == NW_CACHE_PARSED_OK || p == NW_CACHE_PARSED_FOREIGN ||
            p == NW_CACHE_PARSED_DAMAGED,
        "result %d", (int)p);
  CHECK((p == NW_CACHE_PARSED_FOREIGN) == !ours, "foreign %d, ours %d", (int)p,
        ours);
  if (p == NW_CACHE_PARSED_OK) {
    (*ok)++;
    CHECK(printable(got.version, sizeof got.version) &&
              printable(got.adapter, sizeof got.adapter) &&
              printable(got.driver, sizeof got.driver) &&
              printable(got.ids, sizeof got.ids),
          "a field is not printable or not terminated");
    char again[3000];
    size_t n = nw_cache_format(&got, again, sizeof again);
    CHECK(n == len && !memcmp(again, in, len),
          "the header does not write back as read");
  } else {
    unsigned char fresh[sizeof got];
    memset(fresh, 0x5a, sizeof fresh);
    CHECK(!memcmp(&got, fresh, sizeof got), "a failure wrote its output");
  }
  free(in);
}

/* ---- generated WGSL's constant if folding (src/webgpu/wgsl_fold.c) ---- */

static void wgsl_add(unsigned char *b, size_t *len, size_t cap,
                     const char *text) {
  size_t n = strlen(text);
  if (*len + n + 1 < cap) {
    memcpy(b + *len, text, n);
    b[*len + n] = '\n';
    *len += n + 1;
  }
}

/* Statements, ifs on constants or not and their else chains, to depth. */
static void wgsl_block(rng *r, unsigned char *b, size_t *len, size_t cap,
                       int depth) {
  static const char *const heads[] = {
      "if (TM > 1u) {",          "if (A4) {",
      "if (!A4 && TM < 9u) {",   "if (n > 1u) {",
      "if ((TM == 4u) || B4) {", "if (TV >= 2u && (A4 || TM != 3u)) {",
      "if (C > 1u) {",           "if (TM) {"};
  static const char *const stmts[] = {"a();", "let x = 1u;", "{", "}",
                                      "if (TM > 2u) { a(); }"};
  for (size_t k = 1 + below(r, 4); k > 0; k--) {
    if (depth < 4 && below(r, 2)) {
      wgsl_add(b, len, cap, heads[below(r, 8)]);
      wgsl_block(r, b, len, cap, depth + 1);
      for (size_t e = below(r, 3); e > 0; e--) {
        wgsl_add(b, len, cap,
                 below(r, 2) ? "} else if (TV < 3u) {" : "} else {");
        wgsl_block(r, b, len, cap, depth + 1);
      }
      wgsl_add(b, len, cap, "}");
    } else {
      wgsl_add(b, len, cap, stmts[below(r, below(r, 8) ? 2 : 5)]);
    }
  }
}

/* Whether line [s, s + n) is one of text's lines. */
static bool has_line(const unsigned char *text, size_t len, const char *s,
                     size_t n) {
  for (size_t at = 0; at <= len;) {
    const unsigned char *nl = memchr(text + at, '\n', len - at);
    size_t e = nl ? (size_t)(nl - text) : len;
    if (e - at == n && !memcmp(text + at, s, n))
      return true;
    at = e + 1;
  }
  return false;
}

/* Random kernels of constants and ifs, mutated or not. The result must be
 * no longer than the source, NUL-terminated, and made of the source's own
 * lines besides the braces of the blocks kept. */
static void fuzz_wgsl_fold(rng *r, size_t *ok) {
  unsigned char b[4096];
  size_t len = 0;
  char pre[160];
  snprintf(pre, sizeof pre,
           "const TM: u32 = %uu; const TV: u32 = %uu; const A4 = %s; "
           "const B4 = %s;%s",
           (unsigned)below(r, 6), (unsigned)below(r, 5),
           below(r, 2) ? "true" : "false", below(r, 2) ? "true" : "false",
           below(r, 4) ? "" : " const C: u32 = TM * 2u;");
  wgsl_add(b, &len, sizeof b, pre);
  if (!below(r, 8))
    wgsl_add(b, &len, sizeof b, "fn f(TV: u32) { let A4 = 1u; }");
  wgsl_add(b, &len, sizeof b, "fn main() {");
  wgsl_block(r, b, &len, sizeof b, 0);
  wgsl_add(b, &len, sizeof b, "}");
  if (!below(r, 3))
    mutate(r, b, &len, sizeof b);
  unsigned char *in = exact(b, len);
  char *out = malloc(len + 1);
  if (out) {
    size_t n = wg_wgsl_fold((const char *)in, len, out);
    CHECK(n <= len && out[n] == 0, "folded %zu bytes into %zu", len, n);
    *ok += n < len;
    for (size_t at = 0; n <= len && at < n;) {
      const char *nl = memchr(out + at, '\n', n - at);
      size_t e = nl ? (size_t)(nl - out) : n;
      bool brace = e - at == 1 && (out[at] == '{' || out[at] == '}');
      CHECK(brace || has_line(in, len, out + at, e - at),
            "line \"%.*s\" is not the source's", (int)(e - at), out + at);
      at = e + 1;
    }
  }
  free(out);
  free(in);
}

/* One seed: INPUTS_PER_SEED inputs of each kind. */
static void run_seed(unsigned long long seed, const wp_tokenizer *small,
                     const wp_tokenizer *minilm) {
  rng r = {seed * 0x9E3779B97F4A7C15ull + 1};
  size_t ok[7] = {0};
  for (int i = 0; i < INPUTS_PER_SEED; i++) {
    fuzz_wgsl_fold(&r, &ok[6]);
    fuzz_cache_header(&r, &ok[5]);
    fuzz_json(&r, &ok[0]);
    fuzz_safetensors(&r, &ok[1]);
    fuzz_tokenizer_file(&r, &ok[2]);
    fuzz_encode(&r, small, 1, 2, 9, &ok[3]);
    if (minilm)
      fuzz_encode(&r, minilm, 101, 102, 30522, &ok[4]);
  }
  case_note(" (accepted: json %zu, safetensors %zu, tokenizer.json %zu, "
            "encode %zu/%zu, cache header %zu, WGSL folded %zu)",
            ok[0], ok[1], ok[2], ok[3], ok[4], ok[5], ok[6]);
}

static void with_tokenizers(void (*body)(const wp_tokenizer *,
                                         const wp_tokenizer *)) {
  wp_tokenizer *small = NULL, *minilm = NULL;
  char err[300] = "";
  CHECK(wp_load_memory(tok_seed, sizeof tok_seed - 1, &small, err,
                       sizeof err) == 0,
        "seed tokenizer: %s", err);
  CHECK(wp_load("third_party/minilm/tokenizer.json", &minilm, err,
                sizeof err) == 0,
        "%s (tools/bootstrap.sh model fetches it)", err);
  if (small)
    body(small, minilm);
  wp_free(small);
  wp_free(minilm);
}

static void fixed(const wp_tokenizer *small, const wp_tokenizer *minilm) {
  static const unsigned long long seeds[] = {1, 2, 3, 4};
  for (size_t i = 0; i < 4; i++) {
    if (!case_begin("fuzz_parsers seed %llu", seeds[i]))
      continue;
    run_seed(seeds[i], small, minilm);
    case_end();
  }
}

TEST(fuzz_parsers) { with_tokenizers(fixed); }

static void timed(const wp_tokenizer *small, const wp_tokenizer *minilm) {
  const char *seed = getenv("FUZZ_SEED");
  if (seed && *seed) {
    unsigned long long s = strtoull(seed, NULL, 10);
    if (case_begin("fuzz_parsers seed %llu", s)) {
      run_seed(s, small, minilm);
      case_end();
    }
    return;
  }
  const char *secs = getenv("FUZZ_SECONDS");
  double limit = secs && *secs ? atof(secs) : 60;
  time_t t0 = time(NULL);
  unsigned long long s = (unsigned long long)t0 * 1000003ull % 1000000007ull;
  do {
    s = s * 6364136223846793005ull % 1000000000000ull + 1;
    /* A crash ends the process: the seed on stderr replays it. */
    fprintf(stderr, "fuzz_parsers seed %llu\n", s);
    if (case_begin("fuzz_parsers seed %llu", s)) {
      run_seed(s, small, minilm);
      case_end();
    }
  } while (difftime(time(NULL), t0) < limit);
}

/* make fuzz-parsers: fresh seeds for FUZZ_SECONDS, or FUZZ_SEED replayed. */
TEST(child_fuzz_parsers) { with_tokenizers(timed); }
