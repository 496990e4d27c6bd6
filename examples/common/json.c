/* The strict JSON reader of json.h: recursive descent over a bounded
 * buffer into one array of nodes, children stored contiguously, strings
 * decoded into one buffer, each object's members sorted once for lookup. */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct json_value {
  const json_doc *doc;
  json_type type;
  bool exact; /* number: ival holds its value exactly */
  int64_t ival;
  double num;
  size_t a; /* string: offset in strs; array/object: offset in kids */
  size_t n; /* string: bytes; array: elements; object: members */
  size_t o; /* object: offset of its sorted member order in ord */
};

struct json_doc {
  json_value *nodes;
  size_t n_nodes, cap_nodes;
  size_t *kids; /* arrays: element nodes; objects: key, value pairs */
  size_t n_kids, cap_kids;
  size_t *ord; /* per object: member indices sorted by key */
  size_t n_ord, cap_ord;
  char *strs;
  size_t n_strs, cap_strs;
};

typedef struct parser {
  const unsigned char *s;
  size_t len, pos;
  json_doc *d;
  size_t *stack; /* children of the containers being parsed */
  size_t top, cap_stack;
  char *err;
  size_t errlen;
  bool failed;
} parser;

enum { BAD = (size_t)-1 };

static void fail(parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fail(parser *p, const char *fmt, ...) {
  if (p->failed)
    return;
  p->failed = true;
  if (!p->err || !p->errlen)
    return;
  size_t line = 1, col = 1;
  for (size_t i = 0; i < p->pos && i < p->len; i++) {
    if (p->s[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  int k = snprintf(p->err, p->errlen, "line %zu, column %zu: ", line, col);
  if (k < 0 || (size_t)k >= p->errlen)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err + k, p->errlen - (size_t)k, fmt, ap);
  va_end(ap);
}

/* Makes room for need elements of size elem in *buf; false on overflow or
 * out of memory. */
static bool reserve(void **buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return true;
  size_t c = *cap ? *cap : 16;
  while (c < need) {
    if (c > SIZE_MAX / 2)
      return false;
    c *= 2;
  }
  if (c > SIZE_MAX / elem)
    return false;
  void *q = realloc(*buf, c * elem);
  if (!q)
    return false;
  *buf = q;
  *cap = c;
  return true;
}

static size_t new_node(parser *p, json_type t) {
  json_doc *d = p->d;
  if (!reserve((void **)&d->nodes, &d->cap_nodes, d->n_nodes + 1,
               sizeof *d->nodes)) {
    fail(p, "out of memory");
    return BAD;
  }
  json_value *v = &d->nodes[d->n_nodes];
  memset(v, 0, sizeof *v);
  v->doc = d;
  v->type = t;
  return d->n_nodes++;
}

static bool push(parser *p, size_t idx) {
  if (!reserve((void **)&p->stack, &p->cap_stack, p->top + 1,
               sizeof *p->stack)) {
    fail(p, "out of memory");
    return false;
  }
  p->stack[p->top++] = idx;
  return true;
}

static bool put_bytes(parser *p, const void *b, size_t n) {
  json_doc *d = p->d;
  if (n > SIZE_MAX - d->n_strs ||
      !reserve((void **)&d->strs, &d->cap_strs, d->n_strs + n, 1)) {
    fail(p, "out of memory");
    return false;
  }
  memcpy(d->strs + d->n_strs, b, n);
  d->n_strs += n;
  return true;
}

static void skip_ws(parser *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                             p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
    p->pos++;
}

static int hex4(const unsigned char *s) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    int c = s[i], h;
    if (c >= '0' && c <= '9')
      h = c - '0';
    else if (c >= 'a' && c <= 'f')
      h = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      h = c - 'A' + 10;
    else
      return -1;
    v = v * 16 + h;
  }
  return v;
}

static size_t utf8_put(unsigned char *b, unsigned cp) {
  if (cp < 0x80) {
    b[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    b[0] = (unsigned char)(0xC0 | cp >> 6);
    b[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    b[0] = (unsigned char)(0xE0 | cp >> 12);
    b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    b[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  b[0] = (unsigned char)(0xF0 | cp >> 18);
  b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
  b[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Length of the valid UTF-8 sequence at s[0..avail), 0 if invalid
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_valid(const unsigned char *s, size_t avail) {
  unsigned c = s[0];
  size_t n;
  unsigned lo = 0x80, hi = 0xBF; /* bounds of the second byte */
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0)
      lo = 0xA0;
    if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0)
      lo = 0x90;
    if (c == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  if (avail < n || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if ((s[i] & 0xC0) != 0x80)
      return 0;
  return n;
}

static size_t parse_string(parser *p) {
  size_t node = new_node(p, JSON_STRING);
  if (node == BAD)
    return BAD;
  size_t off = p->d->n_strs;
  p->pos++; /* the opening quote */
  for (;;) {
    if (p->pos >= p->len) {
      fail(p, "unterminated string");
      return BAD;
    }
    unsigned char c = p->s[p->pos];
    if (c == '"') {
      p->pos++;
      break;
    }
    if (c < 0x20) {
      fail(p, "control character 0x%02x in a string (must be escaped)", c);
      return BAD;
    }
    if (c == '\\') {
      if (p->pos + 1 >= p->len) {
        fail(p, "unterminated string");
        return BAD;
      }
      unsigned char e = p->s[p->pos + 1], out;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out = e;
        break;
      case 'b':
        out = '\b';
        break;
      case 'f':
        out = '\f';
        break;
      case 'n':
        out = '\n';
        break;
      case 'r':
        out = '\r';
        break;
      case 't':
        out = '\t';
        break;
      case 'u': {
        int u = p->pos + 6 <= p->len ? hex4(p->s + p->pos + 2) : -1;
        if (u < 0) {
          fail(p, "\\u needs four hexadecimal digits");
          return BAD;
        }
        unsigned cp = (unsigned)u;
        size_t used = 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          fail(p, "unpaired low surrogate \\u%04X", cp);
          return BAD;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          size_t q = p->pos + 6;
          int lo = q + 6 <= p->len && p->s[q] == '\\' && p->s[q + 1] == 'u'
                       ? hex4(p->s + q + 2)
                       : -1;
          if (lo < 0xDC00 || lo > 0xDFFF) {
            fail(p, "unpaired high surrogate \\u%04X", cp);
            return BAD;
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned)lo - 0xDC00);
          used = 12;
        }
        unsigned char b[4];
        if (!put_bytes(p, b, utf8_put(b, cp)))
          return BAD;
        p->pos += used;
        continue;
      }
      default:
        fail(p, "invalid escape \\%c", e >= 0x20 && e < 0x7F ? e : '?');
        return BAD;
      }
      if (!put_bytes(p, &out, 1))
        return BAD;
      p->pos += 2;
      continue;
    }
    size_t n = 1;
    if (c >= 0x80) {
      n = utf8_valid(p->s + p->pos, p->len - p->pos);
      if (!n) {
        fail(p, "invalid UTF-8 in a string");
        return BAD;
      }
    }
    /* Runs of plain bytes go in at once. */
    size_t end = p->pos + n;
    while (n == 1 && end < p->len && p->s[end] >= 0x20 && p->s[end] < 0x80 &&
           p->s[end] != '"' && p->s[end] != '\\')
      end++;
    if (!put_bytes(p, p->s + p->pos, end - p->pos))
      return BAD;
    p->pos = end;
  }
  if (!put_bytes(p, "", 1)) /* a terminator, outside the length */
    return BAD;
  json_value *v = &p->d->nodes[node];
  v->a = off;
  v->n = p->d->n_strs - 1 - off;
  return node;
}

static bool is_digit(const parser *p, size_t i) {
  return i < p->len && p->s[i] >= '0' && p->s[i] <= '9';
}

static size_t parse_number(parser *p) {
  size_t start = p->pos, i = p->pos;
  bool neg = false, integral = true;
  if (i < p->len && p->s[i] == '-') {
    neg = true;
    i++;
  }
  if (!is_digit(p, i)) {
    p->pos = i;
    fail(p, "invalid number: a digit must follow");
    return BAD;
  }
  /* Magnitude of an integer literal, up to 2^63 (for -2^63). */
  uint64_t mag = 0;
  bool fits = true;
  if (p->s[i] == '0') {
    i++;
  } else {
    while (is_digit(p, i)) {
      unsigned dgt = (unsigned)(p->s[i] - '0');
      if (mag > (UINT64_C(1) << 63) / 10 ||
          mag * 10 + dgt > (UINT64_C(1) << 63))
        fits = false;
      else
        mag = mag * 10 + dgt;
      i++;
    }
  }
  if (i < p->len && p->s[i] == '.') {
    integral = false;
    i++;
    if (!is_digit(p, i)) {
      p->pos = i;
      fail(p, "invalid number: a digit must follow '.'");
      return BAD;
    }
    while (is_digit(p, i))
      i++;
  }
  if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
    integral = false;
    i++;
    if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
      i++;
    if (!is_digit(p, i)) {
      p->pos = i;
      fail(p, "invalid number: a digit must follow the exponent");
      return BAD;
    }
    while (is_digit(p, i))
      i++;
  }
  /* strtod needs a terminated copy; the grammar above is strtod's subset
   * (no hex, inf or nan can reach it). */
  size_t n = i - start;
  char small[64], *buf = n < sizeof small ? small : malloc(n + 1);
  if (!buf) {
    fail(p, "out of memory");
    return BAD;
  }
  memcpy(buf, p->s + start, n);
  buf[n] = 0;
  double x = strtod(buf, NULL);
  if (buf != small)
    free(buf);
  if (!isfinite(x)) {
    fail(p, "number out of range");
    return BAD;
  }
  size_t node = new_node(p, JSON_NUMBER);
  if (node == BAD)
    return BAD;
  json_value *v = &p->d->nodes[node];
  v->num = x;
  if (integral && fits && (neg || mag < (UINT64_C(1) << 63))) {
    v->exact = true;
    v->ival = neg ? (mag == (UINT64_C(1) << 63) ? INT64_MIN : -(int64_t)mag)
                  : (int64_t)mag;
  } else if (!integral && x == floor(x) && fabs(x) <= 9007199254740992.0) {
    v->exact = true;
    v->ival = (int64_t)x;
  }
  p->pos = i;
  return node;
}

static size_t parse_value(parser *p, int depth);

/* Moves the children pushed since base into the kids array of node. */
static bool close_container(parser *p, size_t node, size_t base) {
  json_doc *d = p->d;
  size_t k = p->top - base;
  if (!reserve((void **)&d->kids, &d->cap_kids, d->n_kids + k,
               sizeof *d->kids)) {
    fail(p, "out of memory");
    return false;
  }
  if (k) /* an empty container may come before any kids array exists */
    memcpy(d->kids + d->n_kids, p->stack + base, k * sizeof *d->kids);
  d->nodes[node].a = d->n_kids;
  d->n_kids += k;
  p->top = base;
  return true;
}

typedef struct key_ref {
  const char *s;
  size_t len, member;
} key_ref;

static int key_cmp(const char *a, size_t la, const char *b, size_t lb) {
  int c = memcmp(a, b, la < lb ? la : lb);
  if (c)
    return c;
  return la < lb ? -1 : la > lb;
}

static int key_ref_cmp(const void *x, const void *y) {
  const key_ref *a = x, *b = y;
  return key_cmp(a->s, a->len, b->s, b->len);
}

/* Sorts an object's members by key for json_get; rejects duplicates. */
static bool index_object(parser *p, size_t node) {
  json_doc *d = p->d;
  size_t n = d->nodes[node].n, a = d->nodes[node].a;
  if (!reserve((void **)&d->ord, &d->cap_ord, d->n_ord + n, sizeof *d->ord)) {
    fail(p, "out of memory");
    return false;
  }
  key_ref *refs = malloc((n ? n : 1) * sizeof *refs);
  if (!refs) {
    fail(p, "out of memory");
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    const json_value *k = &d->nodes[d->kids[a + 2 * i]];
    refs[i] = (key_ref){d->strs + k->a, k->n, i};
  }
  qsort(refs, n, sizeof *refs, key_ref_cmp);
  for (size_t i = 0; i + 1 < n; i++) {
    if (!key_ref_cmp(&refs[i], &refs[i + 1])) {
      fail(p, "duplicate key \"%.*s\" in an object",
           (int)(refs[i].len > 64 ? 64 : refs[i].len), refs[i].s);
      free(refs);
      return false;
    }
  }
  for (size_t i = 0; i < n; i++)
    d->ord[d->n_ord + i] = refs[i].member;
  free(refs);
  d->nodes[node].o = d->n_ord;
  d->n_ord += n;
  return true;
}

static size_t parse_container(parser *p, int depth, bool object) {
  if (depth >= JSON_MAX_DEPTH) {
    fail(p, "nesting deeper than %d", JSON_MAX_DEPTH);
    return BAD;
  }
  size_t node = new_node(p, object ? JSON_OBJECT : JSON_ARRAY);
  if (node == BAD)
    return BAD;
  size_t base = p->top, count = 0;
  const char close = object ? '}' : ']';
  p->pos++;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == close) {
    p->pos++;
  } else {
    for (;;) {
      skip_ws(p);
      if (object) {
        if (p->pos >= p->len || p->s[p->pos] != '"') {
          fail(p, p->pos >= p->len ? "unexpected end of input"
                                   : "expected a string key");
          return BAD;
        }
        size_t key = parse_string(p);
        if (key == BAD || !push(p, key))
          return BAD;
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != ':') {
          fail(p, "expected ':' after a key");
          return BAD;
        }
        p->pos++;
      }
      size_t v = parse_value(p, depth + 1);
      if (v == BAD || !push(p, v))
        return BAD;
      count++;
      skip_ws(p);
      if (p->pos < p->len && p->s[p->pos] == ',') {
        p->pos++;
        continue;
      }
      if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        break;
      }
      if (p->pos >= p->len)
        fail(p, "unexpected end of input");
      else
        fail(p, "expected ',' or '%c'", close);
      return BAD;
    }
  }
  p->d->nodes[node].n = count;
  if (!close_container(p, node, base))
    return BAD;
  if (object && !index_object(p, node))
    return BAD;
  return node;
}

static size_t parse_literal(parser *p, const char *word, json_type t) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n)) {
    fail(p, "invalid literal (expected %s)", word);
    return BAD;
  }
  p->pos += n;
  return new_node(p, t);
}

static size_t parse_value(parser *p, int depth) {
  skip_ws(p);
  if (p->pos >= p->len) {
    fail(p, "unexpected end of input");
    return BAD;
  }
  unsigned char c = p->s[p->pos];
  switch (c) {
  case '{':
    return parse_container(p, depth, true);
  case '[':
    return parse_container(p, depth, false);
  case '"':
    return parse_string(p);
  case 't':
    return parse_literal(p, "true", JSON_TRUE);
  case 'f':
    return parse_literal(p, "false", JSON_FALSE);
  case 'n':
    return parse_literal(p, "null", JSON_NULL);
  default:
    if (c == '-' || (c >= '0' && c <= '9'))
      return parse_number(p);
    if (c >= 0x20 && c < 0x7F)
      fail(p, "unexpected character '%c'", c);
    else
      fail(p, "unexpected byte 0x%02x", c);
    return BAD;
  }
}

int json_parse(const char *text, size_t len, json_doc **out, char *err,
               size_t errlen) {
  if (err && errlen)
    err[0] = 0;
  if (!out) {
    if (err && errlen)
      snprintf(err, errlen, "no output pointer");
    return 1;
  }
  *out = NULL;
  if (!text && len) {
    if (err && errlen)
      snprintf(err, errlen, "no text");
    return 1;
  }
  json_doc *d = calloc(1, sizeof *d);
  parser p = {.s = (const unsigned char *)text,
              .len = text ? len : 0,
              .d = d,
              .err = err,
              .errlen = errlen};
  if (!d) {
    fail(&p, "out of memory");
    return 1;
  }
  if (p.len >= 3 && !memcmp(p.s, "\xEF\xBB\xBF", 3)) {
    fail(&p, "byte order mark before the value");
  } else if (parse_value(&p, 0) != BAD) {
    skip_ws(&p);
    if (p.pos != p.len)
      fail(&p, "unexpected data after the value");
  }
  free(p.stack);
  if (p.failed) {
    json_free(d);
    return 1;
  }
  *out = d;
  return 0;
}

const json_value *json_root(const json_doc *d) {
  return d && d->n_nodes ? &d->nodes[0] : NULL;
}

void json_free(json_doc *d) {
  if (!d)
    return;
  free(d->nodes);
  free(d->kids);
  free(d->ord);
  free(d->strs);
  free(d);
}

json_type json_kind(const json_value *v) { return v ? v->type : JSON_NULL; }

size_t json_count(const json_value *v) {
  return v && (v->type == JSON_ARRAY || v->type == JSON_OBJECT) ? v->n : 0;
}

const json_value *json_at(const json_value *v, size_t i) {
  if (!v || i >= json_count(v))
    return NULL;
  const json_doc *d = v->doc;
  size_t k = v->type == JSON_OBJECT ? v->a + 2 * i + 1 : v->a + i;
  return &d->nodes[d->kids[k]];
}

const char *json_key(const json_value *v, size_t i, size_t *len) {
  if (!v || v->type != JSON_OBJECT || i >= v->n)
    return NULL;
  return json_string(&v->doc->nodes[v->doc->kids[v->a + 2 * i]], len);
}

const json_value *json_get(const json_value *obj, const char *key) {
  if (!obj || obj->type != JSON_OBJECT || !key)
    return NULL;
  const json_doc *d = obj->doc;
  size_t klen = strlen(key), lo = 0, hi = obj->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2, m = d->ord[obj->o + mid];
    const json_value *k = &d->nodes[d->kids[obj->a + 2 * m]];
    int c = key_cmp(d->strs + k->a, k->n, key, klen);
    if (!c)
      return &d->nodes[d->kids[obj->a + 2 * m + 1]];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

const char *json_string(const json_value *v, size_t *len) {
  if (!v || v->type != JSON_STRING)
    return NULL;
  if (len)
    *len = v->n;
  return v->doc->strs + v->a;
}

bool json_int64(const json_value *v, int64_t *out) {
  if (!v || v->type != JSON_NUMBER || !v->exact)
    return false;
  if (out)
    *out = v->ival;
  return true;
}

double json_number(const json_value *v) {
  return v && v->type == JSON_NUMBER ? v->num : 0;
}
