/* What the model readers share: their error sentences, and reading a
 * whole (small) file into memory. */
#ifndef WGC_EXAMPLES_READ_FILE_H
#define WGC_EXAMPLES_READ_FILE_H

#include <stddef.h>

/* Formats a message into err (errlen bytes; NULL or 0: none) and returns 1,
 * the readers' failure value. */
int read_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The whole file at path in a malloc'ed buffer (with a NUL after its len
 * bytes, which len does not count), or NULL with a message naming path:
 * it cannot be opened or read, or is larger than max_bytes. */
char *read_file(const char *path, size_t max_bytes, size_t *len, char *err,
                size_t errlen);

#endif
