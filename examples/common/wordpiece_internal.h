/* The tokenizer's parts shared by wordpiece_load.c, which fills them from
 * tokenizer.json, and wordpiece_encode.c, which uses them. */
#ifndef WGC_EXAMPLES_WORDPIECE_INTERNAL_H
#define WGC_EXAMPLES_WORDPIECE_INTERNAL_H

#include "wordpiece.h"

#include <stdbool.h>

enum { WP_MAX_SPECIALS = 8 };

/* One vocabulary entry in the open-addressing table; len 0 marks a free
 * slot (the vocabulary has no empty token). */
typedef struct wp_slot {
  uint32_t off, len; /* bytes in pool */
  int32_t id;
} wp_slot;

typedef struct wp_added {
  char *text;
  size_t len;
  int32_t id;
} wp_added;

struct wp_tokenizer {
  char *pool; /* the vocabulary's bytes */
  wp_slot *slots;
  size_t mask; /* slots - 1, a power of two minus one */
  int32_t unk_id;
  char *prefix; /* continuing subword prefix */
  size_t prefix_len;
  size_t max_chars; /* max_input_chars_per_word */
  bool clean_text, chinese, strip_accents, lowercase;
  int32_t before[WP_MAX_SPECIALS], after[WP_MAX_SPECIALS];
  size_t n_before, n_after;
  wp_added *added;
  size_t n_added;
};

/* The id of the bytes s[0..n), -1 if absent. */
int32_t wp_lookup(const wp_tokenizer *t, const char *s, size_t n);

#endif
