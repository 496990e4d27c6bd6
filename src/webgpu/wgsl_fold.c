/* Constant `if` folding for generated WGSL (wgsl_fold.h). Kernels such as
 * gemm_rv.wgsl write every block size out, each under a condition on the
 * prelude's constants (`if (TM > 5u && TV > 1u) {`), and leave the rest
 * to the compiler: Chromium's took twice as long over the whole text as
 * over the blocks one launch keeps. Lines are the unit (the embedded
 * kernels keep one statement or brace a line, WGSL has no string
 * literals and the comments are gone); whatever this does not understand
 * is copied as it is, which the compiler folds as before. */
#include "wgsl_fold.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { MAX_CONSTS = 64, MAX_NAME = 32, MAX_BRANCHES = 16, MAX_DEPTH = 32 };

typedef struct fold_const {
  char name[MAX_NAME];
  int64_t value;
  bool is_bool, shadowed; /* shadowed: declared otherwise too; unused */
} fold_const;

typedef struct folder {
  const char *src;
  size_t len;
  fold_const c[MAX_CONSTS];
  size_t nc;
  char *out;
  size_t n;
} folder;

static bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool ident_char(char c) {
  return ident_start(c) || (c >= '0' && c <= '9');
}
static bool space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

static fold_const *find_const(folder *f, const char *name, size_t n) {
  for (size_t i = 0; i < f->nc; i++)
    if (strlen(f->c[i].name) == n && !memcmp(f->c[i].name, name, n))
      return &f->c[i];
  return NULL;
}

/* The identifier before position p (spaces skipped), as [*s, p'). */
static size_t word_before(const char *src, size_t p, size_t *s) {
  while (p > 0 && space(src[p - 1]))
    p--;
  size_t e = p;
  while (p > 0 && ident_char(src[p - 1]))
    p--;
  *s = p;
  return e - p;
}

/* An integer literal at *p (decimal, optional u or i suffix, not followed
 * by more of a name: 1.0f, 0x10) or a boolean one; moves *p past it. */
static bool parse_literal(const char **p, const char *end, int64_t *v,
                          bool *is_bool) {
  const char *b = *p, *q = b;
  while (q < end && ident_char(*q))
    q++;
  size_t n = (size_t)(q - b);
  *is_bool =
      (n == 4 && !memcmp(b, "true", 4)) || (n == 5 && !memcmp(b, "false", 5));
  *v = n == 4;
  if (!*is_bool) {
    int64_t x = 0;
    for (q = b; q < end && *q >= '0' && *q <= '9'; q++) {
      if (x > INT64_MAX / 16)
        return false;
      x = 10 * x + (*q - '0');
    }
    if (q == b)
      return false;
    if (q < end && (*q == 'u' || *q == 'i'))
      q++;
    if (q < end && ident_char(*q))
      return false;
    *v = x;
  }
  *p = q;
  return true;
}

/* The next identifier from *i on (numbers skipped): [*b, *i); false at
 * the end. */
static bool next_ident(const char *s, size_t n, size_t *i, size_t *b) {
  while (*i < n && (!ident_start(s[*i]) || (*i > 0 && ident_char(s[*i - 1]))))
    (*i)++;
  *b = *i;
  while (*i < n && ident_char(s[*i]))
    (*i)++;
  return *i > *b;
}

/* Every `const NAME[: type] = literal;`; a name declared twice, or as
 * anything else (let, var, a parameter, a function, a member), is not
 * used. */
static void collect_consts(folder *f) {
  const char *s = f->src;
  size_t n = f->len;
  for (size_t i = 0, b; next_ident(s, n, &i, &b);) {
    if (i - b != 5 || memcmp(s + b, "const", 5))
      continue;
    size_t p = i;
    while (p < n && space(s[p]))
      p++;
    size_t nb = p;
    while (p < n && ident_char(s[p]))
      p++;
    size_t nlen = p - nb;
    if (!nlen || nlen >= MAX_NAME || !ident_start(s[nb]))
      continue;
    size_t eq = p;
    while (eq < n && s[eq] != '=' && s[eq] != ';' && s[eq] != '\n')
      eq++;
    size_t end = eq;
    while (end < n && s[end] != '\n')
      end++;
    int64_t v = 0;
    bool is_bool = false;
    bool literal = eq < n && s[eq] == '=';
    if (literal) {
      const char *q = s + eq + 1;
      while (q < s + end && space(*q))
        q++;
      literal = parse_literal(&q, s + end, &v, &is_bool);
      while (q < s + end && space(*q))
        q++;
      literal = literal && q < s + end && *q == ';';
    }
    fold_const *c = find_const(f, s + nb, nlen);
    if (c) {
      c->shadowed = true;
    } else if (f->nc < MAX_CONSTS) {
      c = &f->c[f->nc++];
      memcpy(c->name, s + nb, nlen);
      c->name[nlen] = 0;
      c->value = v;
      c->is_bool = is_bool;
      c->shadowed = !literal;
    }
  }
  /* declared otherwise: after let, var or fn, or followed by one ':' */
  for (size_t i = 0, b; next_ident(s, n, &i, &b);) {
    fold_const *c = find_const(f, s + b, i - b);
    if (!c)
      continue;
    size_t ws, wl = word_before(s, b, &ws);
    bool after_const = wl == 5 && !memcmp(s + ws, "const", 5);
    bool declared =
        (wl == 3 && (!memcmp(s + ws, "let", 3) || !memcmp(s + ws, "var", 3))) ||
        (wl == 2 && !memcmp(s + ws, "fn", 2));
    size_t q = i;
    while (q < n && space(s[q]))
      q++;
    bool colon = q < n && s[q] == ':' && !(q + 1 < n && s[q + 1] == ':');
    if (declared || (colon && !after_const))
      c->shadowed = true;
  }
}

/* ---- conditions ---------------------------------------------------------- */

typedef struct cond_value {
  int64_t v;
  bool is_bool;
} cond_value;

typedef struct cond {
  folder *f;
  const char *p, *end;
  bool ok;
} cond;

static void skip(cond *e) {
  while (e->p < e->end && space(*e->p))
    e->p++;
}

static bool take(cond *e, const char *op) {
  skip(e);
  size_t n = strlen(op);
  if ((size_t)(e->end - e->p) < n || memcmp(e->p, op, n))
    return false;
  /* "<" is not "<=", "!" is not "!=", "&" alone is no operator here */
  if (n == 1 && e->p + 1 < e->end && e->p[1] == '=' && op[0] != '(' &&
      op[0] != ')')
    return false;
  e->p += n;
  return true;
}

static cond_value cond_or(cond *e, int depth);

static cond_value cond_primary(cond *e, int depth) {
  cond_value r = {0, false};
  skip(e);
  if (depth > 16 || e->p >= e->end) {
    e->ok = false;
    return r;
  }
  if (take(e, "!")) {
    r = cond_primary(e, depth + 1);
    if (!r.is_bool)
      e->ok = false;
    r.v = !r.v;
    return r;
  }
  if (take(e, "(")) {
    r = cond_or(e, depth + 1);
    if (!take(e, ")"))
      e->ok = false;
    return r;
  }
  if (parse_literal(&e->p, e->end, &r.v, &r.is_bool))
    return r;
  const char *b = e->p;
  while (e->p < e->end && ident_char(*e->p))
    e->p++;
  fold_const *c =
      ident_start(*b) ? find_const(e->f, b, (size_t)(e->p - b)) : NULL;
  if (!c || c->shadowed)
    e->ok = false;
  else
    r = (cond_value){c->value, c->is_bool};
  return r;
}

static cond_value cond_cmp(cond *e, int depth) {
  cond_value a = cond_primary(e, depth);
  static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
  for (int i = 0; i < 6; i++) {
    if (!take(e, ops[i]))
      continue;
    cond_value b = cond_primary(e, depth);
    if (a.is_bool != b.is_bool || (a.is_bool && i > 1))
      e->ok = false;
    bool r = i == 0   ? a.v == b.v
             : i == 1 ? a.v != b.v
             : i == 2 ? a.v <= b.v
             : i == 3 ? a.v >= b.v
             : i == 4 ? a.v < b.v
                      : a.v > b.v;
    return (cond_value){r, true};
  }
  return a;
}

/* level 1: comparisons joined by &&; level 0: those joined by || */
static cond_value cond_join(cond *e, int depth, int level) {
  const char *op = level ? "&&" : "||";
  cond_value a = level ? cond_cmp(e, depth) : cond_join(e, depth, 1);
  while (take(e, op)) {
    cond_value b = level ? cond_cmp(e, depth) : cond_join(e, depth, 1);
    if (!a.is_bool || !b.is_bool)
      e->ok = false;
    a.v = level ? a.v && b.v : a.v || b.v;
  }
  return a;
}

static cond_value cond_or(cond *e, int depth) { return cond_join(e, depth, 0); }

/* 1 or 0: the condition at [p, end) and its value; -1: not a constant. */
static int evaluate(folder *f, const char *p, const char *end) {
  cond e = {f, p, end, true};
  cond_value v = cond_or(&e, 0);
  skip(&e);
  return e.ok && e.p == e.end && v.is_bool ? (int)(v.v != 0) : -1;
}

/* ---- lines --------------------------------------------------------------- */

typedef struct line {
  const char *s, *e; /* trimmed of blanks, without the line break */
  size_t next;       /* offset of the next line */
} line;

static line line_at(const folder *f, size_t at) {
  const char *s = f->src + at, *end = f->src + f->len;
  const char *nl = memchr(s, '\n', (size_t)(end - s));
  line l = {s, nl ? nl : end, nl ? (size_t)(nl + 1 - f->src) : f->len};
  while (l.s < l.e && space(*l.s))
    l.s++;
  while (l.e > l.s && space(l.e[-1]))
    l.e--;
  return l;
}

/* Whether [s, e) is `PREFIX(cond) {`; the condition's bounds if so. */
static bool if_line(const char *s, const char *e, const char *prefix,
                    const char **cs, const char **ce) {
  size_t n = strlen(prefix);
  if ((size_t)(e - s) < n + 3 || memcmp(s, prefix, n) ||
      memcmp(e - 3, ") {", 3))
    return false;
  *cs = s + n;
  *ce = e - 3;
  for (const char *p = *cs; p < *ce; p++)
    if (*p == '{' || *p == '}')
      return false;
  return true;
}

/* The line closing the block opened at the end of the line before at:
 * its offset; the text after its leading '}' in [*rs, *re). SIZE_MAX when
 * the closing brace does not begin its line. */
static size_t block_end(const folder *f, size_t at, const char **rs,
                        const char **re) {
  int depth = 1;
  while (at < f->len) {
    line l = line_at(f, at);
    for (const char *p = l.s; p < l.e; p++) {
      if (*p == '{')
        depth++;
      else if (*p == '}' && --depth == 0) {
        if (p != l.s)
          return SIZE_MAX;
        *rs = p + 1;
        *re = l.e;
        while (*rs < *re && space(**rs))
          (*rs)++;
        return at;
      }
    }
    at = l.next;
  }
  return SIZE_MAX;
}

static void emit(folder *f, const char *s, size_t n) {
  memcpy(f->out + f->n, s, n);
  f->n += n;
}

static void fold_lines(folder *f, size_t at, size_t end, int depth);

/* Folds the if chain beginning at the line at (cond [cs, ce)) when every
 * condition is constant and the chain ends by end; returns the offset
 * after it, or SIZE_MAX to copy the line as it is. */
static size_t fold_chain(folder *f, size_t at, size_t end, const char *cs,
                         const char *ce, int depth) {
  struct {
    size_t body, close;
    int taken;
  } br[MAX_BRANCHES];
  size_t nb = 0, body = line_at(f, at).next;
  int value = evaluate(f, cs, ce);
  for (;;) {
    const char *rs, *re;
    if (value < 0 || nb == MAX_BRANCHES)
      return SIZE_MAX;
    size_t close = block_end(f, body, &rs, &re);
    if (close == SIZE_MAX || close >= end)
      return SIZE_MAX;
    br[nb].body = body;
    br[nb].close = close;
    br[nb++].taken = value;
    body = line_at(f, close).next;
    if (rs == re)
      break;
    if (re - rs == 6 && !memcmp(rs, "else {", 6))
      value = 1;
    else if (if_line(rs, re, "else if (", &cs, &ce))
      value = evaluate(f, cs, ce);
    else
      return SIZE_MAX;
  }
  for (size_t i = 0; i < nb; i++)
    if (br[i].taken) {
      emit(f, "{\n", 2);
      fold_lines(f, br[i].body, br[i].close, depth + 1);
      emit(f, "}\n", 2);
      break;
    }
  return body;
}

static void fold_lines(folder *f, size_t at, size_t end, int depth) {
  while (at < end) {
    line l = line_at(f, at);
    const char *cs, *ce;
    size_t next = SIZE_MAX;
    if (depth < MAX_DEPTH && if_line(l.s, l.e, "if (", &cs, &ce))
      next = fold_chain(f, at, end, cs, ce, depth);
    if (next == SIZE_MAX) {
      emit(f, f->src + at, l.next - at);
      next = l.next;
    }
    at = next;
  }
}

size_t wg_wgsl_fold(const char *src, size_t len, char *out) {
  folder f = {.src = src, .len = len, .out = out};
  collect_consts(&f);
  fold_lines(&f, 0, len, 0);
  out[f.n] = 0;
  return f.n;
}
