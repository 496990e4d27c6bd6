/* examples/common/json.c: documents that must parse, with every value
 * checked, and documents that must not, one case each, each giving a
 * message and no tree. Inputs are copied into buffers of their exact length,
 * so under ASan a read past the end is caught. */
#include "../examples/common/json.h"
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses bytes [0, len) from an exact-size heap copy. */
static int parse_exact(const char *text, size_t len, json_doc **out, char *err,
                       size_t errlen) {
  char *copy = malloc(len ? len : 1);
  if (!copy)
    return -1;
  memcpy(copy, text, len);
  int r = json_parse(copy, len, out, err, errlen);
  free(copy);
  return r;
}

typedef struct bad_case {
  const char *name, *text;
  size_t len; /* 0: strlen(text) */
} bad_case;

static const bad_case bad[] = {
    {"empty", "", 0},
    {"whitespace only", " \n\t", 0},
    {"trailing comma in array", "[1,]", 0},
    {"trailing comma in object", "{\"a\":1,}", 0},
    {"leading comma", "[,1]", 0},
    {"missing comma", "[1 2]", 0},
    {"missing colon", "{\"a\" 1}", 0},
    {"missing value", "{\"a\":}", 0},
    {"non-string key", "{1:2}", 0},
    {"single-quoted string", "['a']", 0},
    {"duplicate key", "{\"a\":1,\"b\":2,\"a\":3}", 0},
    {"unclosed array", "[1,2", 0},
    {"unclosed object", "{\"a\":1", 0},
    {"extra close", "[1]]", 0},
    {"two values", "1 2", 0},
    {"leading zero", "[01]", 0},
    {"negative leading zero", "-01", 0},
    {"bare dot fraction", "[.5]", 0},
    {"dot without digits", "[1.]", 0},
    {"plus sign", "[+1]", 0},
    {"exponent without digits", "[1e]", 0},
    {"exponent sign without digits", "[1e+]", 0},
    {"minus alone", "-", 0},
    {"hex number", "0x10", 0},
    {"NaN", "NaN", 0},
    {"Infinity", "[-Infinity]", 0},
    {"number out of range", "[1e999]", 0},
    {"truncated literal", "tru", 0},
    {"misspelled literal", "nul1", 0},
    {"capitalised literal", "True", 0},
    {"block comment", "/* c */ 1", 0},
    {"line comment", "[1] // c", 0},
    {"unterminated string", "\"abc", 0},
    {"unterminated escape", "\"abc\\", 0},
    {"unknown escape", "\"\\x41\"", 0},
    {"short \\u", "\"\\u12\"", 0},
    {"non-hex \\u", "\"\\u12G4\"", 0},
    {"lone high surrogate", "\"\\uD800\"", 0},
    {"lone low surrogate", "\"\\uDC00\"", 0},
    {"high surrogate then non-surrogate", "\"\\uD800\\u0041\"", 0},
    {"two high surrogates", "\"\\uD800\\uD800\"", 0},
    {"raw tab in string", "\"a\tb\"", 0},
    {"raw newline in string", "\"a\nb\"", 0},
    {"raw NUL in string", "\"a\0b\"", 5},
    {"NUL byte as document", "\0", 1},
    {"overlong slash", "\"\xC0\xAF\"", 0},
    {"overlong 3-byte", "\"\xE0\x80\xAF\"", 0},
    {"overlong 4-byte", "\"\xF0\x80\x80\xAF\"", 0},
    {"encoded surrogate", "\"\xED\xA0\x80\"", 0},
    {"above U+10FFFF", "\"\xF4\x90\x80\x80\"", 0},
    {"byte 0xFF", "\"\xFF\"", 0},
    {"lone continuation byte", "\"\x80\"", 0},
    {"truncated sequence", "\"\xE2\x82\"", 0},
    {"sequence cut by the end", "\"\xE2\x82", 0},
    {"byte order mark", "\xEF\xBB\xBF[1]", 0},
    {"invalid byte outside strings", "[1,\x80]", 0},
    {"form feed is not whitespace", "\f1", 0},
    {"value cut by the length", "[1,2]", 3},
};

static void bad_inputs(void) {
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (!case_begin("json_bad(%s)", bad[i].name))
      continue;
    size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
    json_doc *d = (json_doc *)1;
    char err[200] = "unset";
    int r = parse_exact(bad[i].text, len, &d, err, sizeof err);
    CHECK(r != 0, "parsed");
    CHECK(d == NULL, "output not cleared");
    CHECK(strncmp(err, "line ", 5) == 0 && strlen(err) > 20,
          "message \"%s\" has no position or reason", err);
    if (!r)
      json_free(d);
    case_end();
  }
}

TEST(json_bad_inputs) { bad_inputs(); }

/* Nesting: JSON_MAX_DEPTH levels parse, one more does not. */
TEST(json_depth) {
  for (int extra = 0; extra < 2; extra++) {
    if (!case_begin("json_depth(%d)", JSON_MAX_DEPTH + extra))
      continue;
    size_t depth = JSON_MAX_DEPTH + (size_t)extra;
    char *t = malloc(2 * depth);
    memset(t, '[', depth);
    memset(t + depth, ']', depth);
    json_doc *d = NULL;
    char err[200] = "";
    int r = parse_exact(t, 2 * depth, &d, err, sizeof err);
    if (extra) {
      CHECK(r != 0 && strstr(err, "nesting"), "depth %zu: r=%d err=%s", depth,
            r, err);
    } else {
      CHECK(r == 0, "depth %zu: %s", depth, err);
      const json_value *v = json_root(d);
      size_t levels = 0;
      while (json_kind(v) == JSON_ARRAY) {
        levels++;
        v = json_at(v, 0);
      }
      CHECK(levels == depth, "%zu levels, want %zu", levels, depth);
    }
    json_free(d);
    free(t);
    case_end();
  }
}

static bool str_is(const json_value *v, const char *want, size_t want_len) {
  size_t len = 0;
  const char *s = json_string(v, &len);
  return s && len == want_len && !memcmp(s, want, len) && s[len] == 0;
}

TEST(json_values) {
  static const char doc[] =
      " {\"s\": \"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\",\n"
      "  \"u\": \"\\u00e9\\u20AC\\uD83D\\uDE00\xc3\xa9\xf0\x9f\x98\x80\",\n"
      "  \"nul\": \"x\\u0000y\", \"\\u0000\": 1, \"\": 2,\n"
      "  \"ints\": [0, -0, -12, 9223372036854775807, -9223372036854775808,\n"
      "           9223372036854775808, 1e2, 2.5e+3, 1.5, 1E-2, 1e300, 4e15],\n"
      "  \"lit\": [true, false, null, [], {}],\n"
      "  \"nested\": {\"b\": [1, {\"c\": \"d\"}], \"a\": null}\r\n} \t";
  json_doc *d = NULL;
  char err[200] = "";
  CHECK(parse_exact(doc, sizeof doc - 1, &d, err, sizeof err) == 0, "%s", err);
  const json_value *r = json_root(d);
  CHECK(json_kind(r) == JSON_OBJECT && json_count(r) == 8, "root: %d, %zu",
        json_kind(r), json_count(r));
  CHECK(str_is(json_get(r, "s"), "a\"b\\c/d\b\f\n\r\t", 12), "escapes");
  CHECK(str_is(json_get(r, "u"),
               "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc3\xa9\xf0\x9f\x98\x80",
               15),
        "\\u escapes and raw UTF-8");
  CHECK(str_is(json_get(r, "nul"), "x\0y", 3), "\\u0000 inside a string");
  /* "\u0000" and "" are different keys; a C-string lookup finds only "". */
  int64_t i = -1;
  CHECK(json_int64(json_get(r, ""), &i) && i == 2, "key \"\": %lld",
        (long long)i);
  size_t klen = 9;
  const char *k = json_key(r, 3, &klen);
  CHECK(k && klen == 1 && k[0] == 0, "key \\u0000: len %zu", klen);
  CHECK(json_int64(json_at(r, 3), &i) && i == 1, "value of key \\u0000");
  /* Document order for json_at and json_key. */
  static const char *order[] = {"s", "u",    "nul", "",
                                "",  "ints", "lit", "nested"};
  for (size_t m = 0; m < 8; m++) {
    if (m == 3)
      continue;
    CHECK(!strcmp(json_key(r, m, NULL), order[m]), "key %zu is %s", m,
          json_key(r, m, NULL));
  }
  CHECK(json_get(r, "t") == NULL && json_get(r, "ss") == NULL &&
            json_get(r, "S") == NULL,
        "absent keys found");

  const json_value *ints = json_get(r, "ints");
  CHECK(json_count(ints) == 12, "ints: %zu", json_count(ints));
  static const struct {
    bool exact;
    int64_t i;
    double x;
  } want[] = {{true, 0, 0},
              {true, 0, -0.0},
              {true, -12, -12},
              {true, INT64_MAX, 9223372036854775807.0},
              {true, INT64_MIN, -9223372036854775808.0},
              {false, 0, 9223372036854775808.0},
              {true, 100, 100},
              {true, 2500, 2500},
              {false, 0, 1.5},
              {false, 0, 0.01},
              {false, 0, 1e300},
              {true, 4000000000000000, 4e15}};
  for (size_t n = 0; n < 12; n++) {
    const json_value *v = json_at(ints, n);
    int64_t got = 0;
    bool exact = json_int64(v, &got);
    CHECK(json_kind(v) == JSON_NUMBER, "ints[%zu] kind", n);
    CHECK(exact == want[n].exact && (!exact || got == want[n].i),
          "ints[%zu]: exact %d value %lld", n, exact, (long long)got);
    CHECK(json_number(v) == want[n].x &&
              signbit(json_number(v)) == signbit(want[n].x),
          "ints[%zu] = %.17g, want %.17g", n, json_number(v), want[n].x);
  }
  const json_value *lit = json_get(r, "lit");
  CHECK(json_kind(json_at(lit, 0)) == JSON_TRUE &&
            json_kind(json_at(lit, 1)) == JSON_FALSE &&
            json_kind(json_at(lit, 2)) == JSON_NULL &&
            json_kind(json_at(lit, 3)) == JSON_ARRAY &&
            json_count(json_at(lit, 3)) == 0 &&
            json_kind(json_at(lit, 4)) == JSON_OBJECT &&
            json_count(json_at(lit, 4)) == 0 && json_at(lit, 5) == NULL,
        "literals and empty containers");
  const json_value *nested = json_get(r, "nested");
  CHECK(json_kind(json_get(nested, "a")) == JSON_NULL &&
            json_get(nested, "a") != NULL,
        "nested.a");
  CHECK(str_is(json_get(json_at(json_get(nested, "b"), 1), "c"), "d", 1),
        "nested.b[1].c");
  /* Accessors on the wrong kind or NULL. */
  CHECK(json_get(ints, "a") == NULL && json_string(ints, NULL) == NULL &&
            json_count(json_get(r, "s")) == 0 && json_at(NULL, 0) == NULL &&
            json_key(ints, 0, NULL) == NULL && json_number(lit) == 0 &&
            !json_int64(json_get(r, "s"), &i) && json_kind(NULL) == JSON_NULL,
        "wrong-kind accessors");
  json_free(d);
}

TEST(json_scalars_and_length) {
  static const struct {
    const char *text;
    size_t len;
    json_type kind;
  } cases[] = {{"true", 4, JSON_TRUE},      {"null", 4, JSON_NULL},
               {"\"x\"", 3, JSON_STRING},   {" -7 ", 4, JSON_NUMBER},
               {"[1] junk", 3, JSON_ARRAY}, {"[\"a\"]\0x", 5, JSON_ARRAY}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    json_doc *d = NULL;
    char err[200] = "";
    CHECK(parse_exact(cases[c].text, cases[c].len, &d, err, sizeof err) == 0,
          "case %zu: %s", c, err);
    CHECK(json_kind(json_root(d)) == cases[c].kind, "case %zu kind %d", c,
          json_kind(json_root(d)));
    json_free(d);
  }
  /* Bad arguments: a status and a message, no crash. */
  char err[200] = "";
  CHECK(json_parse("1", 1, NULL, err, sizeof err) != 0 && err[0],
        "NULL output accepted");
  json_doc *d = (json_doc *)1;
  CHECK(json_parse(NULL, 3, &d, err, sizeof err) != 0 && d == NULL,
        "NULL text accepted");
  CHECK(json_parse("[1,]", 4, &d, NULL, 0) != 0, "no error buffer");
  CHECK(json_parse("[1,]", 4, &d, err, 8) != 0 && strlen(err) == 7,
        "short error buffer not truncated: %s", err);
}

/* A large object, as tokenizer.json's vocabulary: every key found with its
 * own value by json_get, in any order of insertion. */
TEST(json_large_object) {
  const size_t n = 5000;
  size_t cap = n * 32 + 16, used = 0;
  char *t = malloc(cap);
  used += (size_t)snprintf(t + used, cap - used, "{");
  for (size_t i = 0; i < n; i++) {
    size_t k = (i * 2654435761u) % n; /* a permutation: n is not a factor */
    used += (size_t)snprintf(t + used, cap - used, "%s\"k%zu\":%zu",
                             i ? "," : "", k, k * 3);
  }
  used += (size_t)snprintf(t + used, cap - used, "}");
  json_doc *d = NULL;
  char err[200] = "";
  CHECK(parse_exact(t, used, &d, err, sizeof err) == 0, "%s", err);
  const json_value *r = json_root(d);
  CHECK(json_count(r) == n, "%zu members", json_count(r));
  size_t bad_n = 0;
  for (size_t k = 0; k < n; k++) {
    char key[32];
    snprintf(key, sizeof key, "k%zu", k);
    int64_t v = -1;
    if (!json_int64(json_get(r, key), &v) || v != (int64_t)(k * 3))
      bad_n++;
  }
  CHECK(bad_n == 0, "%zu keys not found with their values", bad_n);
  CHECK(json_get(r, "k5000") == NULL && json_get(r, "k") == NULL,
        "absent key found");
  json_free(d);
  free(t);
}
