/* examples/common/wordpiece*.c: the real all-MiniLM-L6-v2 tokenizer.json
 * against the ids Hugging Face tokenizers gives for the same texts
 * (tests/data/wordpiece_ids.json, written by tools/wordpiece_reference.py),
 * compared exactly; small tokenizers written here, whose ids follow by hand
 * from their vocabularies and settings; and bad files and bad input. */
#include "../examples/common/json.h"
#include "../examples/common/unicode.h"
#include "../examples/common/wordpiece.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MINILM_TOKENIZER "third_party/minilm/tokenizer.json"
#define EXPECTED_IDS "tests/data/wordpiece_ids.json"

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b)
    *len = (size_t)n;
  return b;
}

TEST(wordpiece_minilm) {
  wp_tokenizer *t = NULL;
  char err[300] = "";
  CHECK(wp_load(MINILM_TOKENIZER, &t, err, sizeof err) == 0,
        "%s (tools/bootstrap.sh model fetches it)", err);
  size_t len = 0;
  char *text = read_all(EXPECTED_IDS, &len);
  CHECK(text != NULL, "cannot read " EXPECTED_IDS);
  json_doc *doc = NULL;
  CHECK(!text || json_parse(text, len, &doc, err, sizeof err) == 0,
        EXPECTED_IDS ": %s", err);
  const json_value *cases = json_get(json_root(doc), "cases");
  CHECK(json_count(cases) >= 30, "%zu cases", json_count(cases));
  for (size_t c = 0; t && c < json_count(cases); c++) {
    const json_value *k = json_at(cases, c);
    const char *name = json_string(json_get(k, "name"), NULL);
    if (!case_begin("wordpiece_minilm(%s)", name ? name : "?"))
      continue;
    size_t tlen = 0;
    const char *s = json_string(json_get(k, "text"), &tlen);
    const json_value *want = json_get(k, "ids");
    int64_t max_len = 0;
    CHECK(s && json_int64(json_get(k, "max_len"), &max_len) && max_len > 0 &&
              json_count(want) <= (size_t)max_len,
          "malformed case");
    int32_t *ids = malloc((size_t)(max_len > 0 ? max_len : 1) * sizeof *ids);
    size_t n = 0;
    CHECK(wp_encode(t, s, tlen, (size_t)max_len, ids, &n, err, sizeof err) == 0,
          "%s", err);
    CHECK(n == json_count(want), "%zu ids, want %zu", n, json_count(want));
    for (size_t i = 0; i < n && i < json_count(want); i++) {
      int64_t w = -1;
      json_int64(json_at(want, i), &w);
      if (ids[i] != w) {
        CHECK(0, "id %zu is %d, want %lld", i, ids[i], (long long)w);
        break;
      }
    }
    case_note(" %zu ids", n);
    free(ids);
    case_end();
  }
  CHECK(wp_token_id(t, "[CLS]") == 101 && wp_token_id(t, "##ing") == 2075 &&
            wp_token_id(t, "no such token") == -1,
        "vocabulary lookups");
  json_free(doc);
  free(text);
  wp_free(t);
}

/* A small tokenizer.json with the settings a test changes spliced in. */
static int load_small(const char *model_extra, const char *normalizer,
                      const char *post, const char *added, wp_tokenizer **t,
                      char *err, size_t errlen) {
  char json[2048];
  snprintf(json, sizeof json,
           "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,"
           "\"added_tokens\":%s,\"normalizer\":%s,"
           "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
           "\"post_processor\":%s,\"decoder\":null,"
           "\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"<unk>\":0,"
           "\"<s>\":1,\"</s>\":2,\"un\":3,\"unb\":4,\"@@believ\":5,"
           "\"@@able\":6,\"@@ab\":7,\"@@le\":8,\"a\":9,\",\":10,\"cafe\":11,"
           "\"caf\":12,\"@@\\u00e9\":13,\"\\u4e2d\":14,\"$\":15,\"x\":16,\"@@"
           "a\":17}%s}}",
           added, normalizer, post, model_extra);
  return wp_load_memory(json, strlen(json), t, err, errlen);
}

static const char *model_ok = ",\"unk_token\":\"<unk>\","
                              "\"continuing_subword_prefix\":\"@@\","
                              "\"max_input_chars_per_word\":12";
static const char *bert_post =
    "{\"type\":\"BertProcessing\",\"sep\":[\"</s>\",2],\"cls\":[\"<s>\",1]}";

static void expect_ids(const wp_tokenizer *t, const char *text, size_t max_len,
                       const int32_t *want, size_t n_want) {
  int32_t ids[64];
  size_t n = 99;
  char err[200] = "";
  CHECK(wp_encode(t, text, strlen(text), max_len, ids, &n, err, sizeof err) ==
            0,
        "\"%s\": %s", text, err);
  bool same = n == n_want;
  for (size_t i = 0; same && i < n; i++)
    same = ids[i] == want[i];
  char got[256] = "";
  for (size_t i = 0, used = 0; i < n && used < sizeof got - 12; i++)
    used += (size_t)snprintf(got + used, sizeof got - used, " %d", ids[i]);
  CHECK(same, "\"%s\": got%s", text, got);
}

#define IDS(...)                                                               \
  (const int32_t[]){__VA_ARGS__}, sizeof((int32_t[]){__VA_ARGS__}) / 4

TEST(wordpiece_settings) {
  wp_tokenizer *t = NULL;
  char err[300] = "";
  /* The prefix "@@", the unknown token "<unk>", the word limit 12 and the
   * specials <s> </s> all come from the file. */
  CHECK(load_small(model_ok,
                   "{\"type\":\"BertNormalizer\",\"clean_text\":true,"
                   "\"handle_chinese_chars\":true,\"strip_accents\":null,"
                   "\"lowercase\":true}",
                   bert_post, "[]", &t, err, sizeof err) == 0,
        "%s", err);
  if (t) {
    /* Longest match first, with no going back: "unb" then "@@able", "un"
     * then "@@able"; "unbelievable" takes "unb", and "elievable" has no
     * match, so the word is <unk> although "un" + "@@believ" + "@@able"
     * would spell it. */
    expect_ids(t, "Unbable unable", 64, IDS(1, 4, 6, 3, 6, 2));
    expect_ids(t, "unbelievable", 64, IDS(1, 0, 2));
    /* A word with a part that matches nothing is <unk> as a whole. */
    expect_ids(t, "unbz a unbabl", 64, IDS(1, 0, 9, 0, 2));
    /* 12 characters pass, 13 are <unk>. */
    expect_ids(t, "aaaaaaaaaaaa", 64,
               IDS(1, 9, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 2));
    expect_ids(t, "aaaaaaaaaaaaa", 64, IDS(1, 0, 2));
    /* Accents stripped (strip_accents null follows lowercase), CJK split,
     * punctuation and '$' on their own. */
    expect_ids(t, "CAF\xC3\x89,a\xE4\xB8\xADx$", 64,
               IDS(1, 11, 10, 9, 14, 16, 15, 2));
    /* Truncation keeps the specials. */
    expect_ids(t, "a a a a", 4, IDS(1, 9, 9, 2));
    expect_ids(t, "", 2, IDS(1, 2));
    wp_free(t);
  }
  /* strip_accents false: "é" stays and continues the word as "@@é". */
  CHECK(load_small(model_ok,
                   "{\"type\":\"BertNormalizer\",\"clean_text\":true,"
                   "\"handle_chinese_chars\":false,\"strip_accents\":false,"
                   "\"lowercase\":true}",
                   bert_post, "[]", &t, err, sizeof err) == 0,
        "%s", err);
  if (t) {
    expect_ids(t, "CAF\xC3\x89 \xE4\xB8\xAD", 64, IDS(1, 12, 13, 14, 2));
    /* No CJK handling: the ideograph joins the word, which has no match. */
    expect_ids(t, "a\xE4\xB8\xAD", 64, IDS(1, 0, 2));
    wp_free(t);
  }
  /* No normalizer, no post-processor, an added token. */
  CHECK(load_small(model_ok, "null", "null",
                   "[{\"id\":15,\"content\":\"<x>\",\"single_word\":false,"
                   "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"
                   "\"special\":true}]",
                   &t, err, sizeof err) == 0,
        "%s", err);
  if (t) {
    expect_ids(t, "a<x>A <X>", 64, IDS(9, 15, 0, 0, 0, 0));
    wp_free(t);
  }
}

typedef struct bad_file {
  const char *name, *model_extra, *normalizer, *post, *added, *must_say;
} bad_file;

static const char *bert_norm =
    "{\"type\":\"BertNormalizer\",\"clean_text\":true,"
    "\"handle_chinese_chars\":true,\"strip_accents\":null,\"lowercase\":true}";

TEST(wordpiece_bad_files) {
  static const bad_file bad[] = {
      {"unk not in vocab",
       ",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"@@\","
       "\"max_input_chars_per_word\":8",
       NULL, NULL, NULL, "[UNK]"},
      {"no prefix", ",\"unk_token\":\"<unk>\",\"max_input_chars_per_word\":8",
       NULL, NULL, NULL, "continuing_subword_prefix"},
      {"no word limit",
       ",\"unk_token\":\"<unk>\",\"continuing_subword_prefix\":\"@@\"", NULL,
       NULL, NULL, "max_input_chars_per_word"},
      {"zero word limit",
       ",\"unk_token\":\"<unk>\",\"continuing_subword_prefix\":\"@@\","
       "\"max_input_chars_per_word\":0",
       NULL, NULL, NULL, "max_input_chars_per_word"},
      {"other normalizer", NULL, "{\"type\":\"NFC\"}", NULL, NULL, "NFC"},
      {"normalizer flag missing", NULL,
       "{\"type\":\"BertNormalizer\",\"clean_text\":true,\"lowercase\":true}",
       NULL, NULL, "handle_chinese_chars"},
      {"normalizer flag not boolean", NULL,
       "{\"type\":\"BertNormalizer\",\"clean_text\":1,"
       "\"handle_chinese_chars\":true,\"lowercase\":true}",
       NULL, NULL, "clean_text"},
      {"other post-processor", NULL, NULL, "{\"type\":\"ByteLevel\"}", NULL,
       "ByteLevel"},
      {"template without sequence", NULL, NULL,
       "{\"type\":\"TemplateProcessing\",\"single\":[],\"special_tokens\":{}}",
       NULL, "sequence A"},
      {"template special without ids", NULL, NULL,
       "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":"
       "{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\","
       "\"type_id\":0}}],\"special_tokens\":{}}",
       NULL, "<s>"},
      {"added token lstrip", NULL, NULL, NULL,
       "[{\"id\":1,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":true,"
       "\"rstrip\":false,\"normalized\":false}]",
       "lstrip"},
      {"added token normalized", NULL, NULL, NULL,
       "[{\"id\":1,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":false,"
       "\"rstrip\":false,\"normalized\":true}]",
       "normalized"},
      {"added token without id", NULL, NULL, NULL,
       "[{\"content\":\"<s>\",\"single_word\":false,\"lstrip\":false,"
       "\"rstrip\":false,\"normalized\":false}]",
       "<s>"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (!case_begin("wordpiece_bad_file(%s)", bad[i].name))
      continue;
    wp_tokenizer *t = (wp_tokenizer *)1;
    char err[300] = "";
    int r = load_small(bad[i].model_extra ? bad[i].model_extra : model_ok,
                       bad[i].normalizer ? bad[i].normalizer : bert_norm,
                       bad[i].post ? bad[i].post : bert_post,
                       bad[i].added ? bad[i].added : "[]", &t, err, sizeof err);
    CHECK(r != 0 && t == NULL, "loaded");
    CHECK(strstr(err, "tokenizer.json: ") == err &&
              strstr(err, bad[i].must_say),
          "message \"%s\" does not say %s", err, bad[i].must_say);
    case_end();
  }
  /* Files that are not tokenizers at all. */
  static const char *not_tok[] = {"", "[]", "{\"model\":{\"type\":\"BPE\"}}",
                                  "{\"model\":{\"type\":\"WordPiece\"}}",
                                  "{\"model\":{\"type\":\"WordPiece\","
                                  "\"vocab\":{\"a\":-1}}}"};
  for (size_t i = 0; i < sizeof not_tok / sizeof not_tok[0]; i++) {
    wp_tokenizer *t = NULL;
    char err[300] = "";
    CHECK(wp_load_memory(not_tok[i], strlen(not_tok[i]), &t, err, sizeof err) !=
                  0 &&
              t == NULL && err[0],
          "file %zu loaded", i);
  }
  wp_tokenizer *t = NULL;
  char err[300] = "";
  CHECK(wp_load("/nonexistent/tokenizer.json", &t, err, sizeof err) != 0 &&
            strstr(err, "/nonexistent/tokenizer.json"),
        "missing file: %s", err);
}

TEST(wordpiece_bad_input) {
  wp_tokenizer *t = NULL;
  char err[300] = "";
  CHECK(load_small(model_ok, bert_norm, bert_post, "[]", &t, err, sizeof err) ==
            0,
        "%s", err);
  if (!t)
    return;
  static const struct {
    const char *text;
    size_t len, at;
  } bad_utf8[] = {
      {"a\x80", 2, 1},         {"ab\xC3", 3, 2},           {"\xC0\xAF", 2, 0},
      {"x\xED\xA0\x80", 4, 1}, {"\xF4\x90\x80\x80", 4, 0}, {"abc\xFF", 4, 3}};
  for (size_t i = 0; i < sizeof bad_utf8 / sizeof bad_utf8[0]; i++) {
    int32_t ids[8];
    size_t n = 77;
    char want[64];
    snprintf(want, sizeof want, "invalid UTF-8 at byte %zu", bad_utf8[i].at);
    CHECK(wp_encode(t, bad_utf8[i].text, bad_utf8[i].len, 8, ids, &n, err,
                    sizeof err) != 0 &&
              n == 77 && strstr(err, want),
          "case %zu: n=%zu err=%s", i, n, err);
  }
  int32_t ids[8];
  size_t n = 77;
  CHECK(wp_encode(t, "a", 1, 1, ids, &n, err, sizeof err) != 0 && n == 77 &&
            strstr(err, "max_len"),
        "max_len below the specials: %s", err);
  CHECK(wp_encode(NULL, "a", 1, 8, ids, &n, err, sizeof err) != 0 &&
            wp_encode(t, NULL, 1, 8, ids, &n, err, sizeof err) != 0 &&
            wp_encode(t, "a", 1, 8, NULL, &n, err, sizeof err) != 0 &&
            wp_encode(t, "a", 1, 8, ids, NULL, err, sizeof err) != 0 && n == 77,
        "NULL arguments accepted");
  /* A NUL byte inside the text is a character (dropped by clean_text). */
  expect_ids(t, "a", 8, IDS(1, 9, 2));
  CHECK(wp_encode(t, "a\0a", 3, 8, ids, &n, err, sizeof err) == 0 && n == 4 &&
            ids[1] == 9 && ids[2] == 17,
        "NUL inside a word: n=%zu", n);
  wp_free(t);
}

/* Spot checks of the generated tables against values from the Unicode
 * Character Database, and of the UTF-8 codec at its boundaries. */
TEST(unicode_tables) {
  uint32_t m[UNI_MAX_MAP];
  CHECK(uni_nfd(0xE9, m) == 2 && m[0] == 'e' && m[1] == 0x301,
        "NFD of e-acute");
  CHECK(uni_nfd(0x1E69, m) == 3 && m[0] == 's' && m[1] == 0x323 &&
            m[2] == 0x307,
        "NFD of s with dots below and above");
  CHECK(uni_nfd(0xAC01, m) == 3 && m[0] == 0x1100 && m[1] == 0x1161 &&
            m[2] == 0x11A8,
        "NFD of Hangul GAG");
  CHECK(uni_nfd(0xD7A3, m) == 3 && m[2] == 0x11C2 && uni_nfd(0xAC00, m) == 2,
        "NFD at the ends of the Hangul syllables");
  CHECK(uni_nfd('a', m) == 1 && m[0] == 'a' && uni_nfd(0xFB01, m) == 1,
        "no canonical decomposition (fi ligature is compatibility only)");
  CHECK(uni_lower(0x130, m) == 2 && m[0] == 'i' && m[1] == 0x307,
        "lowercase of I with dot above");
  CHECK(uni_lower(0x3A3, m) == 1 && m[0] == 0x3C3 && uni_lower('A', m) == 1 &&
            m[0] == 'a' && uni_lower(0x1C5, m) == 1 && m[0] == 0x1C6,
        "lowercase of Sigma, A, Dz with caron");
  CHECK(uni_ccc(0x301) == 230 && uni_ccc(0x323) == 220 && uni_ccc('a') == 0,
        "combining classes");
  CHECK(uni_is_mn(0x301) && !uni_is_mn('a') && uni_is_punct(0x3002) &&
            uni_is_punct('!') && !uni_is_punct('$') && uni_is_space(0x3000) &&
            uni_is_space(0x85) && !uni_is_space(0x1C) && !uni_is_space(0x200B),
        "categories");
  CHECK(uni_is_other(0x7) && uni_is_other(0x200B) && uni_is_other(0xE000) &&
            !uni_is_other(0x378) && !uni_is_other('a'),
        "Cc, Cf and Co, not Cn");
  static const struct {
    const char *s;
    size_t n, len;
    uint32_t c;
  } utf8[] = {{"\x7F", 1, 1, 0x7F},
              {"\xC2\x80", 2, 2, 0x80},
              {"\xDF\xBF", 2, 2, 0x7FF},
              {"\xE0\xA0\x80", 3, 3, 0x800},
              {"\xED\x9F\xBF", 3, 3, 0xD7FF},
              {"\xEE\x80\x80", 3, 3, 0xE000},
              {"\xF0\x90\x80\x80", 4, 4, 0x10000},
              {"\xF4\x8F\xBF\xBF", 4, 4, 0x10FFFF},
              {"\xC1\xBF", 2, 0, 0},
              {"\xE0\x9F\xBF", 3, 0, 0},
              {"\xED\xA0\x80", 3, 0, 0},
              {"\xF4\x90\x80\x80", 4, 0, 0},
              {"\xF5\x80\x80\x80", 4, 0, 0},
              {"\xE2\x82", 2, 0, 0}};
  for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++) {
    uint32_t c = 0;
    size_t len =
        uni_utf8_decode((const unsigned char *)utf8[i].s, utf8[i].n, &c);
    CHECK(len == utf8[i].len && (!len || c == utf8[i].c), "UTF-8 case %zu", i);
    unsigned char b[4];
    if (len)
      CHECK(uni_utf8_encode(c, b) == len && !memcmp(b, utf8[i].s, len),
            "UTF-8 encode of case %zu", i);
  }
  case_note(" (Unicode %s)", uni_version());
}
