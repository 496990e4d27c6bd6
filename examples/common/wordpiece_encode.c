/* wp_encode: added tokens split out of the raw text, then, for the text
 * between them, the BERT normalizer, the BERT pre-tokenizer and WordPiece,
 * in the order wordpiece.h lists; ids are written as they come and the
 * work stops once max_len is reached. */
#include "read_file.h"
#include "wordpiece_internal.h"

#include "unicode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cpbuf {
  uint32_t *v;
  size_t n, cap;
} cpbuf;

typedef struct encoder {
  const wp_tokenizer *t;
  int32_t *body;   /* where text tokens go, after the leading specials */
  size_t n, cap;   /* text tokens written, and the most that fit */
  cpbuf seg, a, b; /* the segment's code points, two normalizer buffers */
  char *key;       /* prefix + a word's UTF-8 */
  size_t key_cap;
  size_t *offs;    /* byte offset of each character of the word */
  int32_t *pieces; /* a word's ids until it is known not to be [UNK] */
  size_t word_cap; /* characters offs and pieces hold */
  bool oom;
} encoder;

static bool push(encoder *e, cpbuf *b, uint32_t c) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 256;
    uint32_t *v = cap <= SIZE_MAX / 4 ? realloc(b->v, cap * 4) : NULL;
    if (!v) {
      e->oom = true;
      return false;
    }
    b->v = v;
    b->cap = cap;
  }
  b->v[b->n++] = c;
  return true;
}

/* CJK ideographs as BERT's reference code names them: blocks, not a
 * Unicode property, and (as in Hugging Face tokenizers) Extension E from
 * U+2B920, not U+2B820. */
static bool is_cjk(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Rust's char::is_ascii_punctuation, which BERT's pre-tokenizer adds to
 * category P* ('$', '+', '<', '=', '>', '^', '`', '|', '~' are symbols). */
static bool is_ascii_punct(uint32_t c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) ||
         (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

/* The BERT normalizer over e->seg; the result is left in *out. */
static bool normalize(encoder *e, cpbuf **out) {
  const wp_tokenizer *t = e->t;
  cpbuf *cur = &e->a, *next = &e->b;
  cur->n = 0;
  for (size_t i = 0; i < e->seg.n; i++) {
    uint32_t c = e->seg.v[i];
    bool tab_lf_cr = c == '\t' || c == '\n' || c == '\r';
    if (t->clean_text) {
      if (c == 0 || c == 0xFFFD || (!tab_lf_cr && uni_is_other(c)))
        continue;
      if (tab_lf_cr || uni_is_space(c))
        c = ' ';
    }
    if (t->chinese && is_cjk(c)) {
      if (!push(e, cur, ' ') || !push(e, cur, c) || !push(e, cur, ' '))
        return false;
    } else if (!push(e, cur, c)) {
      return false;
    }
  }
  if (t->strip_accents) {
    /* NFD: full decomposition, then canonical order (a stable sort of each
     * run of marks by combining class), then drop category Mn. */
    next->n = 0;
    for (size_t i = 0; i < cur->n; i++) {
      uint32_t d[UNI_MAX_MAP];
      size_t k = uni_nfd(cur->v[i], d);
      for (size_t j = 0; j < k; j++)
        if (!push(e, next, d[j]))
          return false;
    }
    for (size_t i = 1; i < next->n; i++) {
      unsigned ci = uni_ccc(next->v[i]);
      for (size_t j = i; ci && j > 0 && uni_ccc(next->v[j - 1]) > ci; j--) {
        uint32_t x = next->v[j - 1];
        next->v[j - 1] = next->v[j];
        next->v[j] = x;
      }
    }
    size_t kept = 0;
    for (size_t i = 0; i < next->n; i++)
      if (!uni_is_mn(next->v[i]))
        next->v[kept++] = next->v[i];
    next->n = kept;
    cpbuf *x = cur;
    cur = next;
    next = x;
  }
  if (t->lowercase) {
    next->n = 0;
    for (size_t i = 0; i < cur->n; i++) {
      uint32_t d[UNI_MAX_MAP];
      size_t k = uni_lower(cur->v[i], d);
      for (size_t j = 0; j < k; j++)
        if (!push(e, next, d[j]))
          return false;
    }
    cur = next;
  }
  *out = cur;
  return true;
}

static void emit(encoder *e, int32_t id) {
  if (e->n < e->cap)
    e->body[e->n++] = id;
}

static bool full(const encoder *e) { return e->n >= e->cap; }

/* Room for a word of n characters in the word buffers. */
static bool word_room(encoder *e, size_t n) {
  const wp_tokenizer *t = e->t;
  if (n > (SIZE_MAX - t->prefix_len) / 4 - 1) {
    e->oom = true;
    return false;
  }
  if (t->prefix_len + 4 * n > e->key_cap) {
    size_t cap = t->prefix_len + 4 * n;
    char *k = realloc(e->key, cap);
    if (!k) {
      e->oom = true;
      return false;
    }
    e->key = k;
    e->key_cap = cap;
  }
  if (n + 1 > e->word_cap) {
    size_t *o = realloc(e->offs, (n + 1) * sizeof *o);
    if (o)
      e->offs = o;
    int32_t *p = realloc(e->pieces, (n + 1) * sizeof *p);
    if (p)
      e->pieces = p;
    if (!o || !p) {
      e->oom = true;
      return false;
    }
    e->word_cap = n + 1;
  }
  return true;
}

/* WordPiece over the word w[0..n): greedy longest match from the left. */
static bool word(encoder *e, const uint32_t *w, size_t n) {
  const wp_tokenizer *t = e->t;
  if (n > t->max_chars) {
    emit(e, t->unk_id);
    return true;
  }
  if (!word_room(e, n))
    return false;
  /* key holds room for the prefix, then the word's UTF-8. A later piece
   * needs the prefix right before its first byte: it is written over the
   * bytes just before, which belong to pieces already matched. */
  char *bytes = e->key + t->prefix_len;
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    e->offs[i] = used;
    used += uni_utf8_encode(w[i], (unsigned char *)bytes + used);
  }
  e->offs[n] = used;
  size_t start = 0, np = 0;
  while (start < n) {
    char *piece = bytes + e->offs[start];
    size_t extra = 0;
    if (start > 0) {
      piece -= t->prefix_len;
      extra = t->prefix_len;
      memcpy(piece, t->prefix, t->prefix_len);
    }
    int32_t id = -1;
    size_t end = n;
    for (; end > start; end--)
      if ((id = wp_lookup(t, piece, extra + e->offs[end] - e->offs[start])) >=
          0)
        break;
    if (id < 0) {
      emit(e, t->unk_id);
      return true;
    }
    e->pieces[np++] = id;
    start = end;
  }
  for (size_t i = 0; i < np; i++)
    emit(e, e->pieces[i]);
  return true;
}

/* Normalizes, pre-tokenizes and tokenizes the text in e->seg. */
static bool segment(encoder *e) {
  cpbuf *norm;
  if (!normalize(e, &norm))
    return false;
  size_t w0 = 0;
  for (size_t i = 0; i <= norm->n && !full(e); i++) {
    uint32_t c = i < norm->n ? norm->v[i] : ' ';
    bool space = uni_is_space(c);
    bool punct = !space && (is_ascii_punct(c) || uni_is_punct(c));
    if (!space && !punct)
      continue;
    if (i > w0 && !word(e, norm->v + w0, i - w0))
      return false;
    if (punct && !full(e) && !word(e, norm->v + i, 1))
      return false;
    w0 = i + 1;
  }
  e->seg.n = 0;
  return true;
}

/* The longest added token at s[0..n), or NULL. */
static const wp_added *added_at(const wp_tokenizer *t, const char *s,
                                size_t n) {
  const wp_added *best = NULL;
  for (size_t i = 0; i < t->n_added; i++) {
    const wp_added *a = &t->added[i];
    if (a->len <= n && (!best || a->len > best->len) &&
        !memcmp(s, a->text, a->len))
      best = a;
  }
  return best;
}

int wp_encode(const wp_tokenizer *t, const char *utf8, size_t len,
              size_t max_len, int32_t *ids, size_t *n_ids, char *err,
              size_t errlen) {
  if (!t || !ids || !n_ids || (!utf8 && len))
    return read_fail(err, errlen, "wp_encode: NULL argument");
  size_t specials = t->n_before + t->n_after;
  if (max_len < specials)
    return read_fail(
        err, errlen,
        "wp_encode: max_len %zu is less than the %zu special tokens", max_len,
        specials);
  const unsigned char *s = (const unsigned char *)utf8;
  for (size_t i = 0; i < len;) {
    uint32_t c;
    size_t k = uni_utf8_decode(s + i, len - i, &c);
    if (!k)
      return read_fail(err, errlen, "wp_encode: invalid UTF-8 at byte %zu", i);
    i += k;
  }
  encoder e = {.t = t, .body = ids + t->n_before, .cap = max_len - specials};
  for (size_t i = 0; i < len && !full(&e) && !e.oom;) {
    const wp_added *a = added_at(t, utf8 + i, len - i);
    if (a) {
      if (!segment(&e))
        break;
      emit(&e, a->id);
      i += a->len;
      continue;
    }
    uint32_t c;
    i += uni_utf8_decode(s + i, len - i, &c);
    push(&e, &e.seg, c);
  }
  if (!e.oom && !full(&e))
    segment(&e);
  free(e.seg.v);
  free(e.a.v);
  free(e.b.v);
  free(e.key);
  free(e.offs);
  free(e.pieces);
  if (e.oom)
    return read_fail(err, errlen, "wp_encode: out of memory");
  memcpy(ids, t->before, t->n_before * sizeof *ids);
  memcpy(ids + t->n_before + e.n, t->after, t->n_after * sizeof *ids);
  *n_ids = t->n_before + e.n + t->n_after;
  return 0;
}
