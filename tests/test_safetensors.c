/* examples/common/safetensors.c: files built here byte by byte (a good one
 * read back exactly, and one malformed file per rule of the format, each
 * giving a message that names the file and the tensor), a file on disk, and
 * the real all-MiniLM-L6-v2 weights from third_party/minilm. */
#include "../examples/common/safetensors.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An exact-size buffer: 8-byte little-endian size (or size_override when
 * nonzero), the header, then data_len bytes of pattern. */
static unsigned char *build(const char *header, size_t data_len,
                            uint64_t size_override, size_t *len) {
  size_t n = strlen(header);
  *len = 8 + n + data_len;
  unsigned char *b = malloc(*len);
  uint64_t s = size_override ? size_override : n;
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char)(s >> (8 * i));
  memcpy(b + 8, header, n);
  for (size_t i = 0; i < data_len; i++)
    b[8 + n + i] = (unsigned char)(i * 7 + 1);
  return b;
}

TEST(safetensors_good) {
  /* Offsets out of name order, a scalar, an empty tensor, header padding. */
  const char *h = "{\"b.int\":{\"dtype\":\"I64\",\"shape\":[2],"
                  "\"data_offsets\":[24,40]},"
                  "\"__metadata__\":{\"format\":\"pt\",\"x\":\"\"},"
                  "\"a.w\":{\"shape\":[2,3],\"dtype\":\"F32\","
                  "\"data_offsets\":[0,24]},"
                  "\"c.empty\":{\"dtype\":\"BF16\",\"shape\":[0,7],"
                  "\"data_offsets\":[40,40]},"
                  "\"d.scalar\":{\"dtype\":\"U16\",\"shape\":[],"
                  "\"data_offsets\":[40,42]}}   ";
  size_t len;
  unsigned char *b = build(h, 42, 0, &len);
  st_file *f = NULL;
  char err[300] = "";
  CHECK(st_open_memory(b, len, "good.safetensors", &f, err, sizeof err) == 0,
        "%s", err);
  CHECK(st_count(f) == 4, "%zu tensors", st_count(f));
  const unsigned char *data = b + 8 + strlen(h);
  static const struct {
    const char *name;
    st_dtype dtype;
    size_t rank;
    uint64_t shape[2];
    size_t begin, bytes;
  } want[] = {{"a.w", ST_F32, 2, {2, 3}, 0, 24},
              {"c.empty", ST_BF16, 2, {0, 7}, 40, 0},
              {"b.int", ST_I64, 1, {2, 0}, 24, 16},
              {"d.scalar", ST_U16, 0, {0, 0}, 40, 2}};
  for (size_t i = 0; i < 4; i++) {
    const st_tensor *t = st_find(f, want[i].name);
    CHECK(t != NULL, "%s not found", want[i].name);
    if (!t)
      continue;
    CHECK(!strcmp(t->name, want[i].name) && t->dtype == want[i].dtype &&
              t->rank == want[i].rank && t->bytes == want[i].bytes &&
              (const unsigned char *)t->data == data + want[i].begin,
          "%s: dtype %s rank %zu bytes %llu at %td", want[i].name,
          st_dtype_name(t->dtype), t->rank, (unsigned long long)t->bytes,
          (const unsigned char *)t->data - data);
    for (size_t r = 0; r < want[i].rank; r++)
      CHECK(t->shape[r] == want[i].shape[r], "%s shape[%zu] = %llu",
            want[i].name, r, (unsigned long long)t->shape[r]);
  }
  /* Data order: a.w, then b.int at 24, then the two at 40 (empty first). */
  CHECK(!strcmp(st_tensor_at(f, 0)->name, "a.w") &&
            !strcmp(st_tensor_at(f, 1)->name, "b.int") &&
            !strcmp(st_tensor_at(f, 2)->name, "c.empty") &&
            !strcmp(st_tensor_at(f, 3)->name, "d.scalar") &&
            st_tensor_at(f, 4) == NULL,
        "order by offset");
  const st_tensor *bi = st_find(f, "b.int");
  CHECK(bi && !memcmp(bi->data, data + 24, 16) &&
            ((const unsigned char *)bi->data)[0] == (unsigned char)(24 * 7 + 1),
        "b.int bytes");
  CHECK(st_metadata(f, "format") && !strcmp(st_metadata(f, "format"), "pt"),
        "metadata format");
  CHECK(st_metadata(f, "x") && !st_metadata(f, "x")[0] &&
            !st_metadata(f, "y") && !st_find(f, "__metadata__") &&
            !st_find(f, "a"),
        "absent names");
  CHECK(st_dtype_size(ST_F64) == 8 && st_dtype_size(ST_BOOL) == 1 &&
            !strcmp(st_dtype_name(ST_F8_E4M3), "F8_E4M3"),
        "dtype table");
  st_close(f);
  free(b);

  /* No tensors: an empty object and an empty data area. */
  b = build("{}", 0, 0, &len);
  CHECK(st_open_memory(b, len, "empty.safetensors", &f, err, sizeof err) == 0 &&
            st_count(f) == 0,
        "empty file: %s", err);
  st_close(f);
  free(b);
}

typedef struct bad_case {
  const char *name, *header;
  size_t data_len;
  uint64_t size_override;
  const char *must_name; /* the tensor the message names, or NULL */
} bad_case;

#define T(dt, sh, off)                                                         \
  "{\"dtype\":\"" dt "\",\"shape\":" sh ",\"data_offsets\":" off "}"

static const bad_case bad[] = {
    {"bad JSON", "{\"a\":" T("F32", "[1]", "[0,4]") ",}", 4, 0, NULL},
    {"header not an object", "[1]", 0, 0, NULL},
    {"header size past the end", "{}", 0, 100, NULL},
    {"header size huge", "{}", 0, UINT64_C(1) << 63, NULL},
    {"header size one over the limit", "{}", 0, ST_MAX_HEADER + 1, NULL},
    {"offsets past the end", "{\"w\":" T("F32", "[4]", "[0,16]") "}", 12, 0,
     "w"},
    {"data truncated", "{\"w\":" T("F32", "[2]", "[0,8]") "}", 7, 0, "w"},
    {"begin after end", "{\"w\":" T("F32", "[0]", "[8,4]") "}", 8, 0, "w"},
    {"overlap",
     "{\"w\":" T("F32", "[2]", "[0,8]") ",\"v\":" T("F32", "[2]", "[4,12]") "}",
     12, 0, "v"},
    {"same range twice",
     "{\"w\":" T("F32", "[1]", "[0,4]") ",\"v\":" T("F32", "[1]", "[0,4]") "}",
     4, 0, "w"},
    {"hole", "{\"w\":" T("F32", "[1]", "[4,8]") "}", 8, 0, "w"},
    {"data past the last tensor", "{\"w\":" T("F32", "[1]", "[0,4]") "}", 5, 0,
     NULL},
    {"unknown dtype", "{\"w\":" T("F33", "[1]", "[0,4]") "}", 4, 0, "w"},
    {"sub-byte dtype", "{\"w\":" T("F4", "[2]", "[0,1]") "}", 1, 0, "w"},
    {"lower-case dtype", "{\"w\":" T("f32", "[1]", "[0,4]") "}", 4, 0, "w"},
    {"shape/byte mismatch", "{\"w\":" T("F32", "[3]", "[0,8]") "}", 8, 0, "w"},
    {"dtype/byte mismatch", "{\"w\":" T("F16", "[2]", "[0,8]") "}", 8, 0, "w"},
    {"shape overflow",
     "{\"w\":" T("F32", "[4294967296,4294967296]", "[0,0]") "}", 0, 0, "w"},
    {"byte count overflow",
     "{\"w\":" T("F64", "[4611686018427387904]", "[0,0]") "}", 0, 0, "w"},
    {"negative shape", "{\"w\":" T("F32", "[-1]", "[0,0]") "}", 0, 0, "w"},
    {"fractional shape", "{\"w\":" T("F32", "[1.5]", "[0,4]") "}", 4, 0, "w"},
    {"string shape", "{\"w\":" T("F32", "\"1\"", "[0,4]") "}", 4, 0, "w"},
    {"rank 9", "{\"w\":" T("U8", "[1,1,1,1,1,1,1,1,1]", "[0,1]") "}", 1, 0,
     "w"},
    {"negative offset", "{\"w\":" T("U8", "[1]", "[-1,0]") "}", 1, 0, "w"},
    {"three offsets", "{\"w\":" T("U8", "[1]", "[0,1,1]") "}", 1, 0, "w"},
    {"missing dtype", "{\"w\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1, 0,
     "w"},
    {"missing offsets", "{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, 0, "w"},
    {"unknown field",
     "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],"
     "\"x\":1}}",
     1, 0, "w"},
    {"entry not an object", "{\"w\":[1]}", 0, 0, "w"},
    {"duplicate name",
     "{\"w\":" T("U8", "[1]", "[0,1]") ",\"w\":" T("U8", "[1]", "[1,2]") "}", 2,
     0, "w"},
    {"name with NUL", "{\"w\\u0000x\":" T("U8", "[1]", "[0,1]") "}", 1, 0,
     NULL},
    {"metadata not an object", "{\"__metadata__\":[]}", 0, 0, NULL},
    {"metadata value not a string", "{\"__metadata__\":{\"k\":1}}", 0, 0, "k"},
    {"header padded before the brace", " {}", 0, 0, NULL},
};

TEST(safetensors_bad) {
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (!case_begin("safetensors_bad(%s)", bad[i].name))
      continue;
    size_t len;
    unsigned char *b =
        build(bad[i].header, bad[i].data_len, bad[i].size_override, &len);
    st_file *f = (st_file *)1;
    char err[300] = "";
    int r = st_open_memory(b, len, "bad.safetensors", &f, err, sizeof err);
    CHECK(r != 0, "opened");
    CHECK(f == NULL, "output not cleared");
    CHECK(strstr(err, "bad.safetensors: ") == err, "message \"%s\"", err);
    if (bad[i].must_name) {
      char quoted[64];
      snprintf(quoted, sizeof quoted, "\"%s\"", bad[i].must_name);
      CHECK(strstr(err, quoted) != NULL, "message \"%s\" does not name %s", err,
            quoted);
    }
    if (!r)
      st_close(f);
    free(b);
    case_end();
  }
  /* Shorter than the size field itself, at every length. */
  for (size_t n = 0; n < 8; n++) {
    unsigned char b[8] = {2, 0, 0, 0, 0, 0, 0, 0};
    st_file *f = NULL;
    char err[300] = "";
    unsigned char *exact = malloc(n ? n : 1);
    memcpy(exact, b, n);
    CHECK(st_open_memory(exact, n, "short", &f, err, sizeof err) != 0 &&
              strstr(err, "short: truncated"),
          "%zu bytes: %s", n, err);
    free(exact);
  }
}

/* Every prefix of a good file fails cleanly (the header cut, then the data
 * cut), and the whole file opens. */
TEST(safetensors_truncated_prefixes) {
  const char *h = "{\"a\":" T("F32", "[3]",
                              "[0,12]") ",\"b\":" T("I8", "[5]", "[12,17]") "}";
  size_t len;
  unsigned char *b = build(h, 17, 0, &len);
  size_t opened = 0;
  for (size_t n = 0; n <= len; n++) {
    unsigned char *p = malloc(n ? n : 1);
    memcpy(p, b, n);
    st_file *f = NULL;
    char err[300] = "";
    if (!st_open_memory(p, n, "cut", &f, err, sizeof err)) {
      opened++;
      CHECK(n == len, "a %zu-byte prefix of %zu opened", n, len);
      st_close(f);
    } else {
      CHECK(strstr(err, "cut: ") == err, "prefix %zu: %s", n, err);
    }
    free(p);
  }
  CHECK(opened == 1, "%zu prefixes opened", opened);
  free(b);
}

TEST(safetensors_file) {
  char path[] = "/tmp/wgc_st_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd < 0)
    return;
  const char *h = "{\"x\":" T("F32", "[2]", "[0,8]") "}";
  size_t len;
  unsigned char *b = build(h, 8, 0, &len);
  CHECK(write(fd, b, len) == (ssize_t)len, "write");
  close(fd);
  st_file *f = NULL;
  char err[300] = "";
  CHECK(st_open(path, &f, err, sizeof err) == 0, "%s", err);
  const st_tensor *t = st_find(f, "x");
  CHECK(t && t->bytes == 8 && !memcmp(t->data, b + 8 + strlen(h), 8),
        "x read back");
  st_close(f);
  /* Truncated on disk: the message names the path and the tensor. */
  CHECK(truncate(path, (off_t)len - 1) == 0, "truncate");
  CHECK(st_open(path, &f, err, sizeof err) != 0 && strstr(err, path) &&
            strstr(err, "\"x\""),
        "truncated file: %s", err);
  CHECK(truncate(path, 0) == 0, "truncate");
  CHECK(st_open(path, &f, err, sizeof err) != 0 && strstr(err, "truncated"),
        "empty file: %s", err);
  unlink(path);
  CHECK(st_open(path, &f, err, sizeof err) != 0 && strstr(err, path) &&
            f == NULL,
        "missing file: %s", err);
  CHECK(st_open("/tmp", &f, err, sizeof err) != 0, "a folder opened");
  free(b);
}

/* The real weights (tools/bootstrap.sh model puts them there). */
TEST(safetensors_minilm) {
  const char *path = "third_party/minilm/model.safetensors";
  st_file *f = NULL;
  char err[300] = "";
  CHECK(st_open(path, &f, err, sizeof err) == 0,
        "%s (tools/bootstrap.sh model fetches it)", err);
  if (!f)
    return;
  CHECK(st_count(f) == 104, "%zu tensors", st_count(f));
  const st_tensor *w = st_find(f, "embeddings.word_embeddings.weight");
  CHECK(w && w->dtype == ST_F32 && w->rank == 2 && w->shape[0] == 30522 &&
            w->shape[1] == 384 && w->bytes == 30522ull * 384 * 4,
        "word embeddings");
  const st_tensor *q = st_find(f, "encoder.layer.5.intermediate.dense.weight");
  CHECK(q && q->dtype == ST_F32 && q->rank == 2 && q->shape[0] == 1536 &&
            q->shape[1] == 384,
        "layer 5 FFN weight");
  uint64_t total = 0;
  for (size_t i = 0; i < st_count(f); i++)
    total += st_tensor_at(f, i)->bytes;
  CHECK(total > 90000000 && total < 91000000, "%llu bytes of tensors",
        (unsigned long long)total);
  CHECK(st_metadata(f, "format") && !strcmp(st_metadata(f, "format"), "pt"),
        "metadata");
  st_close(f);
}
