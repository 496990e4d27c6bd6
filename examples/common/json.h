/* A strict JSON reader (RFC 8259) for the model files: safetensors headers
 * and tokenizer.json.
 *
 * It is written here rather than taken from a library because the same C
 * must build unchanged natively and for wasm32 (wasi-libc), and no package
 * registry ships a wasm32 build of a C JSON library.
 *
 * Strict means: one value with optional surrounding whitespace (space, tab,
 * LF, CR) and nothing else; no byte order mark, comments, trailing commas,
 * single quotes, NaN or Infinity; numbers by the RFC's grammar (no leading
 * zeros, no "+", no "1." or ".5"); strings of valid UTF-8 (no overlong
 * forms, no encoded surrogates, nothing above U+10FFFF) with no raw control
 * characters, escapes by the RFC, \u surrogates only in pairs; duplicate
 * keys in one object rejected; nesting at most JSON_MAX_DEPTH deep. The
 * parser never reads past the given length and never aborts: a bad input
 * gives a nonzero status and a message with its line and column.
 *
 * The parsed tree belongs to its json_doc; every pointer into it (values,
 * keys, strings) lives until json_free. Accessors take NULL or a value of
 * the wrong kind and return NULL, 0 or false, so lookups chain safely. */
#ifndef WGC_EXAMPLES_JSON_H
#define WGC_EXAMPLES_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { JSON_MAX_DEPTH = 128 };

typedef enum {
  JSON_NULL,
  JSON_FALSE,
  JSON_TRUE,
  JSON_NUMBER,
  JSON_STRING,
  JSON_ARRAY,
  JSON_OBJECT
} json_type;

typedef struct json_value json_value;
typedef struct json_doc json_doc;

/* Parses text[0..len) (need not be NUL-terminated). 0 and *out set on
 * success; otherwise nonzero, *out NULL and err holds the reason
 * ("line 3, column 7: ..."). Out of memory is an error like any other. */
int json_parse(const char *text, size_t len, json_doc **out, char *err,
               size_t errlen);
const json_value *json_root(const json_doc *d);
void json_free(json_doc *d);

/* JSON_NULL for NULL. */
json_type json_kind(const json_value *v);
/* Elements of an array, members of an object; 0 for anything else. */
size_t json_count(const json_value *v);
/* The i-th element of an array or the i-th member's value of an object, in
 * document order; NULL when i is out of range. */
const json_value *json_at(const json_value *v, size_t i);
/* The i-th member's key of an object (NUL-terminated; *len, if given, may be
 * shorter than strlen when the key holds U+0000 as "\u0000"). */
const char *json_key(const json_value *v, size_t i, size_t *len);
/* The member of obj whose key equals the NUL-terminated key; NULL if absent
 * or obj is not an object. Binary search: O(log members). */
const json_value *json_get(const json_value *obj, const char *key);
/* The decoded UTF-8 of a string, NUL-terminated; it may hold NUL bytes, so
 * use *len (if given). NULL for a non-string. */
const char *json_string(const json_value *v, size_t *len);
/* True and *out set when v is a number that is an integer exactly
 * representable in int64 (written as an integer literal, or a literal with a
 * fraction or exponent whose value is integral and at most 2^53). */
bool json_int64(const json_value *v, int64_t *out);
/* A number's value (nearest double); 0 for a non-number. */
double json_number(const json_value *v);

#endif
