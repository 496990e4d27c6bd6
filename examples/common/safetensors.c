/* The safetensors reader of safetensors.h: the header checked entry by
 * entry, then the entries sorted by offset to prove the data area is tiled
 * exactly. */
#include "safetensors.h"

#include "json.h"
#include "read_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#if !defined(__wasi__)
#include <sys/mman.h>
#endif

struct st_file {
  json_doc *doc; /* tensor names and metadata point into it */
  const json_value *meta;
  st_tensor *tensors;
  size_t count;
  void *owned; /* bytes to release at close: a mapping or a heap copy */
  size_t owned_len;
  bool mapped;
};

static const struct {
  const char *name;
  size_t size;
} dtypes[] = {
    [ST_F64] = {"F64", 8},         [ST_F32] = {"F32", 4},
    [ST_F16] = {"F16", 2},         [ST_BF16] = {"BF16", 2},
    [ST_F8_E5M2] = {"F8_E5M2", 1}, [ST_F8_E4M3] = {"F8_E4M3", 1},
    [ST_F8_E8M0] = {"F8_E8M0", 1}, [ST_I64] = {"I64", 8},
    [ST_I32] = {"I32", 4},         [ST_I16] = {"I16", 2},
    [ST_I8] = {"I8", 1},           [ST_U64] = {"U64", 8},
    [ST_U32] = {"U32", 4},         [ST_U16] = {"U16", 2},
    [ST_U8] = {"U8", 1},           [ST_BOOL] = {"BOOL", 1},
};
_Static_assert(sizeof dtypes / sizeof dtypes[0] == ST_DTYPE_COUNT,
               "one dtypes[] entry per st_dtype");

const char *st_dtype_name(st_dtype t) {
  return (unsigned)t < ST_DTYPE_COUNT ? dtypes[t].name : "?";
}

size_t st_dtype_size(st_dtype t) {
  return (unsigned)t < ST_DTYPE_COUNT ? dtypes[t].size : 0;
}

/* Names printed in messages are cut short: a hostile header may hold long
 * ones. */
#define NAME_FMT "\"%.80s\""

static bool exact_u64(const json_value *v, uint64_t *out) {
  int64_t i;
  if (!json_int64(v, &i) || i < 0)
    return false;
  *out = (uint64_t)i;
  return true;
}

/* Fills t from the header entry v named name; 0 or a message. */
static int read_entry(const char *file, const char *name, const json_value *v,
                      uint64_t data_len, const unsigned char *data,
                      st_tensor *t, char *err, size_t errlen) {
  if (json_kind(v) != JSON_OBJECT)
    return read_fail(err, errlen,
                     "%s: tensor " NAME_FMT ": entry is not an object", file,
                     name);
  for (size_t i = 0; i < json_count(v); i++) {
    const char *k = json_key(v, i, NULL);
    if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets"))
      return read_fail(err, errlen,
                       "%s: tensor " NAME_FMT ": unknown field " NAME_FMT, file,
                       name, k);
  }
  const char *dt = json_string(json_get(v, "dtype"), NULL);
  if (!dt)
    return read_fail(err, errlen,
                     "%s: tensor " NAME_FMT ": no string \"dtype\"", file,
                     name);
  int found = -1;
  for (int d = 0; d < ST_DTYPE_COUNT; d++)
    if (!strcmp(dt, dtypes[d].name))
      found = d;
  if (found < 0)
    return read_fail(err, errlen,
                     "%s: tensor " NAME_FMT ": unknown dtype " NAME_FMT, file,
                     name, dt);
  t->dtype = (st_dtype)found;

  const json_value *shape = json_get(v, "shape");
  if (json_kind(shape) != JSON_ARRAY)
    return read_fail(err, errlen, "%s: tensor " NAME_FMT ": no array \"shape\"",
                     file, name);
  if (json_count(shape) > ST_MAX_RANK)
    return read_fail(err, errlen,
                     "%s: tensor " NAME_FMT ": rank %zu exceeds %d", file, name,
                     json_count(shape), ST_MAX_RANK);
  t->rank = json_count(shape);
  uint64_t elems = 1;
  bool overflow = false;
  for (size_t i = 0; i < t->rank; i++) {
    if (!exact_u64(json_at(shape, i), &t->shape[i]))
      return read_fail(err, errlen,
                       "%s: tensor " NAME_FMT
                       ": shape[%zu] is not a non-negative integer",
                       file, name, i);
    if (t->shape[i] && elems > UINT64_MAX / t->shape[i])
      overflow = true;
    else
      elems *= t->shape[i];
  }
  uint64_t size = dtypes[t->dtype].size;
  /* A zero dimension empties the tensor whatever the others are. */
  for (size_t i = 0; i < t->rank; i++) {
    if (!t->shape[i]) {
      overflow = false;
      elems = 0;
    }
  }
  if (overflow || elems > UINT64_MAX / size)
    return read_fail(err, errlen,
                     "%s: tensor " NAME_FMT ": shape's byte count overflows",
                     file, name);

  const json_value *offs = json_get(v, "data_offsets");
  uint64_t begin, end;
  if (json_kind(offs) != JSON_ARRAY || json_count(offs) != 2 ||
      !exact_u64(json_at(offs, 0), &begin) ||
      !exact_u64(json_at(offs, 1), &end))
    return read_fail(err, errlen,
                     "%s: tensor " NAME_FMT
                     ": \"data_offsets\" is not two non-negative integers",
                     file, name);
  if (begin > end)
    return read_fail(err, errlen,
                     "%s: tensor " NAME_FMT ": data_offsets [%llu, %llu] end "
                     "before they begin",
                     file, name, (unsigned long long)begin,
                     (unsigned long long)end);
  if (end > data_len)
    return read_fail(err, errlen,
                     "%s: tensor " NAME_FMT
                     ": data_offsets [%llu, %llu] run past "
                     "the data area (%llu bytes)",
                     file, name, (unsigned long long)begin,
                     (unsigned long long)end, (unsigned long long)data_len);
  if (end - begin != elems * size)
    return read_fail(err, errlen,
                     "%s: tensor " NAME_FMT
                     ": %llu bytes in the file, but shape "
                     "and dtype %s make %llu",
                     file, name, (unsigned long long)(end - begin), dt,
                     (unsigned long long)(elems * size));
  t->name = name;
  t->data = data + begin;
  t->bytes = end - begin;
  return 0;
}

static int by_offset(const void *x, const void *y) {
  const st_tensor *a = x, *b = y;
  if (a->data != b->data)
    return (const char *)a->data < (const char *)b->data ? -1 : 1;
  return a->bytes < b->bytes ? -1 : a->bytes > b->bytes;
}

static int parse(const unsigned char *bytes, size_t len, const char *name,
                 st_file *f, char *err, size_t errlen) {
  if (len < 8)
    return read_fail(err, errlen,
                     "%s: truncated: %zu bytes, the header size alone needs 8",
                     name, len);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--)
    n = n << 8 | bytes[i];
  if (n > ST_MAX_HEADER)
    return read_fail(err, errlen,
                     "%s: header size %llu exceeds the limit of %d bytes", name,
                     (unsigned long long)n, ST_MAX_HEADER);
  if (n > len - 8)
    return read_fail(
        err, errlen,
        "%s: truncated: header size %llu, but only %zu bytes follow", name,
        (unsigned long long)n, len - 8);
  if (n == 0 || bytes[8] != '{')
    return read_fail(err, errlen, "%s: the header does not start with '{'",
                     name);
  char jerr[160];
  if (json_parse((const char *)bytes + 8, (size_t)n, &f->doc, jerr,
                 sizeof jerr))
    return read_fail(err, errlen, "%s: header: %s", name, jerr);
  const json_value *root = json_root(f->doc);
  const unsigned char *data = bytes + 8 + n;
  uint64_t data_len = len - 8 - n;
  size_t members = json_count(root);
  f->tensors = calloc(members ? members : 1, sizeof *f->tensors);
  if (!f->tensors)
    return read_fail(err, errlen, "%s: out of memory", name);
  for (size_t i = 0; i < members; i++) {
    size_t klen;
    const char *key = json_key(root, i, &klen);
    const json_value *v = json_at(root, i);
    if (klen != strlen(key))
      return read_fail(err, errlen, "%s: a tensor name holds U+0000", name);
    if (!strcmp(key, "__metadata__")) {
      if (json_kind(v) != JSON_OBJECT)
        return read_fail(err, errlen, "%s: __metadata__ is not an object",
                         name);
      for (size_t j = 0; j < json_count(v); j++)
        if (json_kind(json_at(v, j)) != JSON_STRING)
          return read_fail(err, errlen,
                           "%s: __metadata__ " NAME_FMT " is not a string",
                           name, json_key(v, j, NULL));
      f->meta = v;
      continue;
    }
    if (read_entry(name, key, v, data_len, data, &f->tensors[f->count], err,
                   errlen))
      return 1;
    f->count++;
  }
  /* The format forbids holes and overlaps: sorted by offset, each tensor
   * begins where the one before ends, and the last ends the file. */
  qsort(f->tensors, f->count, sizeof *f->tensors, by_offset);
  uint64_t at = 0;
  for (size_t i = 0; i < f->count; i++) {
    const st_tensor *t = &f->tensors[i];
    uint64_t b = (uint64_t)((const unsigned char *)t->data - data);
    if (b < at)
      return read_fail(
          err, errlen,
          "%s: tensor " NAME_FMT " (bytes %llu..%llu) overlaps " NAME_FMT, name,
          t->name, (unsigned long long)b, (unsigned long long)(b + t->bytes),
          f->tensors[i - 1].name);
    if (b > at)
      return read_fail(err, errlen,
                       "%s: tensor " NAME_FMT
                       " begins at byte %llu, leaving bytes %llu..%llu unused",
                       name, t->name, (unsigned long long)b,
                       (unsigned long long)at, (unsigned long long)b);
    at = b + t->bytes;
  }
  if (at != data_len)
    return read_fail(
        err, errlen,
        "%s: the tensors end at byte %llu of a %llu-byte data area", name,
        (unsigned long long)at, (unsigned long long)data_len);
  return 0;
}

int st_open_memory(const void *data, size_t len, const char *name,
                   st_file **out, char *err, size_t errlen) {
  if (!name)
    name = "(memory)";
  if (!out)
    return read_fail(err, errlen, "%s: no output pointer", name);
  *out = NULL;
  if (!data && len)
    return read_fail(err, errlen, "%s: no data", name);
  st_file *f = calloc(1, sizeof *f);
  if (!f)
    return read_fail(err, errlen, "%s: out of memory", name);
  if (parse(data, data ? len : 0, name, f, err, errlen)) {
    st_close(f);
    return 1;
  }
  *out = f;
  return 0;
}

int st_open(const char *path, st_file **out, char *err, size_t errlen) {
  if (!out)
    return read_fail(err, errlen, "%s: no output pointer", path ? path : "?");
  *out = NULL;
  if (!path)
    return read_fail(err, errlen, "no path");
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return read_fail(err, errlen, "%s: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
    close(fd);
    return read_fail(err, errlen, "%s: not a regular file", path);
  }
  if ((uint64_t)sb.st_size > SIZE_MAX) {
    close(fd);
    return read_fail(err, errlen, "%s: too large to map", path);
  }
  size_t len = (size_t)sb.st_size;
  void *bytes = NULL;
  bool mapped = false;
  if (len) {
#if !defined(__wasi__)
    bytes = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (bytes == MAP_FAILED)
      bytes = NULL;
    mapped = bytes != NULL;
#endif
    /* wasi-libc has no mmap: read the file instead. */
    if (!bytes && (bytes = malloc(len))) {
      size_t got = 0;
      while (got < len) {
        ssize_t r = read(fd, (char *)bytes + got, len - got);
        if (r <= 0)
          break;
        got += (size_t)r;
      }
      if (got != len) {
        free(bytes);
        close(fd);
        return read_fail(err, errlen, "%s: read failed", path);
      }
    }
    if (!bytes) {
      close(fd);
      return read_fail(err, errlen, "%s: out of memory", path);
    }
  }
  close(fd);
  st_file *f = NULL;
  if (st_open_memory(bytes, len, path, &f, err, errlen)) {
#if !defined(__wasi__)
    if (mapped)
      munmap(bytes, len);
    else
#endif
      free(bytes);
    return 1;
  }
  f->owned = bytes;
  f->owned_len = len;
  f->mapped = mapped;
  *out = f;
  return 0;
}

size_t st_count(const st_file *f) { return f ? f->count : 0; }

const st_tensor *st_tensor_at(const st_file *f, size_t i) {
  return f && i < f->count ? &f->tensors[i] : NULL;
}

const st_tensor *st_find(const st_file *f, const char *name) {
  if (!f || !name)
    return NULL;
  for (size_t i = 0; i < f->count; i++)
    if (!strcmp(f->tensors[i].name, name))
      return &f->tensors[i];
  return NULL;
}

const char *st_metadata(const st_file *f, const char *key) {
  return f ? json_string(json_get(f->meta, key), NULL) : NULL;
}

void st_close(st_file *f) {
  if (!f)
    return;
#if !defined(__wasi__)
  if (f->mapped)
    munmap(f->owned, f->owned_len);
  else
#endif
    free(f->owned);
  free(f->tensors);
  json_free(f->doc);
  free(f);
}
