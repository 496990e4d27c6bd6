/* read_file.h: messages and whole-file reads for the model readers. */
#include "read_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int read_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return 1;
}

char *read_file(const char *path, size_t max_bytes, size_t *len, char *err,
                size_t errlen) {
  if (!path) {
    read_fail(err, errlen, "no path");
    return NULL;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    read_fail(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  char *buf = NULL;
  size_t used = 0, cap = 0;
  for (;;) {
    if (used == cap) { /* room for the NUL too */
      if (cap > max_bytes) {
        read_fail(err, errlen, "%s: larger than %zu bytes", path, max_bytes);
        break;
      }
      size_t c = cap ? 2 * cap : 4096;
      char *b = c > cap ? realloc(buf, c + 1) : NULL;
      if (!b) {
        read_fail(err, errlen, "%s: out of memory", path);
        break;
      }
      buf = b;
      cap = c;
    }
    size_t got = fread(buf + used, 1, cap - used, f);
    used += got;
    if (got)
      continue;
    if (ferror(f)) {
      read_fail(err, errlen, "%s: read failed", path);
      break;
    }
    if (used > max_bytes) {
      read_fail(err, errlen, "%s: larger than %zu bytes", path, max_bytes);
      break;
    }
    fclose(f);
    buf[used] = 0;
    *len = used;
    return buf;
  }
  fclose(f);
  free(buf);
  return NULL;
}
