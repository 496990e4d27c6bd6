/* The Unicode character data the BERT tokenizer needs (wordpiece.c), from
 * tables that tools/gen_unicode.py writes at build time from Python's
 * unicodedata (UNI_VERSION in the generated header; uni_version() here). */
#ifndef WGC_EXAMPLES_UNICODE_H
#define WGC_EXAMPLES_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most code points one mapping below writes. */
enum { UNI_MAX_MAP = 4 };

const char *uni_version(void);
/* General categories Cc, Cf, Cs and Co (not unassigned Cn: the reference
 * BERT normalizer keeps unassigned code points). */
bool uni_is_other(uint32_t c);
/* The White_Space property. */
bool uni_is_space(uint32_t c);
/* General category P*. */
bool uni_is_punct(uint32_t c);
/* General category Mn. */
bool uni_is_mn(uint32_t c);
/* Canonical combining class. */
unsigned uni_ccc(uint32_t c);
/* Full canonical decomposition of c into out; returns its length (1 and c
 * itself when it has none). */
size_t uni_nfd(uint32_t c, uint32_t out[UNI_MAX_MAP]);
/* Full lowercase mapping of c, without context. */
size_t uni_lower(uint32_t c, uint32_t out[UNI_MAX_MAP]);

/* Decodes one UTF-8 character of s[0..n) into *c; returns its length, 0
 * when the bytes are not valid UTF-8 (RFC 3629). */
size_t uni_utf8_decode(const unsigned char *s, size_t n, uint32_t *c);
/* Encodes c (a scalar value) into b; returns 1 to 4. */
size_t uni_utf8_encode(uint32_t c, unsigned char b[4]);

#endif
