/* Lookups over the generated tables of unicode.h: every table is sorted
 * by code point and searched by bisection. */
#include "unicode.h"

typedef struct uni_range {
  uint32_t lo, hi;
} uni_range;
typedef struct uni_value_range {
  uint32_t lo, hi;
  uint8_t value;
} uni_value_range;
typedef struct uni_map {
  uint32_t c;
  uint16_t off;
  uint8_t len;
} uni_map;

#include "unicode_tables.h"

_Static_assert(UNI_TABLE_MAX_MAP <= UNI_MAX_MAP, "UNI_MAX_MAP too small");

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool in_ranges(const uni_range *r, size_t n, uint32_t c) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c < r[mid].lo)
      hi = mid;
    else if (c > r[mid].hi)
      lo = mid + 1;
    else
      return true;
  }
  return false;
}

const char *uni_version(void) { return UNI_VERSION; }
bool uni_is_other(uint32_t c) {
  return in_ranges(tab_other, COUNT(tab_other), c);
}
bool uni_is_space(uint32_t c) {
  return in_ranges(tab_space, COUNT(tab_space), c);
}
bool uni_is_punct(uint32_t c) {
  return in_ranges(tab_punct, COUNT(tab_punct), c);
}
bool uni_is_mn(uint32_t c) { return in_ranges(tab_mn, COUNT(tab_mn), c); }

unsigned uni_ccc(uint32_t c) {
  size_t lo = 0, hi = COUNT(tab_ccc);
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c < tab_ccc[mid].lo)
      hi = mid;
    else if (c > tab_ccc[mid].hi)
      lo = mid + 1;
    else
      return tab_ccc[mid].value;
  }
  return 0;
}

static size_t map_one(const uni_map *m, size_t n, const uint32_t *pool,
                      uint32_t c, uint32_t out[UNI_MAX_MAP]) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c < m[mid].c) {
      hi = mid;
    } else if (c > m[mid].c) {
      lo = mid + 1;
    } else {
      for (size_t i = 0; i < m[mid].len; i++)
        out[i] = pool[m[mid].off + i];
      return m[mid].len;
    }
  }
  out[0] = c;
  return 1;
}

size_t uni_nfd(uint32_t c, uint32_t out[UNI_MAX_MAP]) {
  /* Hangul syllables: the arithmetic of the Unicode standard, 3.12. */
  enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7 };
  if (c >= SBASE && c < SBASE + 11172) {
    uint32_t s = c - SBASE;
    out[0] = LBASE + s / 588;
    out[1] = VBASE + s % 588 / 28;
    if (s % 28) {
      out[2] = TBASE + s % 28;
      return 3;
    }
    return 2;
  }
  return map_one(tab_nfd, COUNT(tab_nfd), tab_nfd_pool, c, out);
}

size_t uni_lower(uint32_t c, uint32_t out[UNI_MAX_MAP]) {
  return map_one(tab_lower, COUNT(tab_lower), tab_lower_pool, c, out);
}

size_t uni_utf8_decode(const unsigned char *s, size_t n, uint32_t *c) {
  if (!n)
    return 0;
  unsigned b = s[0];
  if (b < 0x80) {
    *c = b;
    return 1;
  }
  size_t len;
  unsigned lo = 0x80, hi = 0xBF; /* bounds of the second byte */
  uint32_t v;
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
    v = b & 0x1F;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    v = b & 0x0F;
    if (b == 0xE0)
      lo = 0xA0;
    if (b == 0xED)
      hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    v = b & 0x07;
    if (b == 0xF0)
      lo = 0x90;
    if (b == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    v = v << 6 | (s[i] & 0x3F);
  }
  *c = v;
  return len;
}

size_t uni_utf8_encode(uint32_t c, unsigned char b[4]) {
  if (c < 0x80) {
    b[0] = (unsigned char)c;
    return 1;
  }
  if (c < 0x800) {
    b[0] = (unsigned char)(0xC0 | c >> 6);
    b[1] = (unsigned char)(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    b[0] = (unsigned char)(0xE0 | c >> 12);
    b[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
    b[2] = (unsigned char)(0x80 | (c & 0x3F));
    return 3;
  }
  b[0] = (unsigned char)(0xF0 | c >> 18);
  b[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
  b[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
  b[3] = (unsigned char)(0x80 | (c & 0x3F));
  return 4;
}
