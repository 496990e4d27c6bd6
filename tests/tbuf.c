/* Typed test operands (tbuf.h). */
#include "tbuf.h"

#include "dtype_ref.h"
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x (n floats) converted to t, placed 2 bytes into a word for a 2-byte
 * type, guard bytes around it, uploaded. */
static size_t half_off = 6;

size_t tbuf_half_offset(size_t off) {
  size_t was = half_off;
  half_off = off;
  return was;
}

tbuf tbuf_make(wgc_context *ctx, wgc_dtype t, const float *x, size_t n) {
  tbuf b = {.t = t, .n = n, .off = t == WGC_DTYPE_F32 ? 4 : half_off};
  b.bytes = (b.off + dref_bytes(t, n) + 8) & ~(size_t)3;
  b.host = xmalloc(b.bytes);
  memset(b.host, GUARD_BYTE, b.bytes);
  if (x)
    CHECK_STATUS(wgc_quantize(x, b.host + b.off, t, n), WGC_OK);
  b.dev = dev_alloc(ctx, b.bytes);
  if (b.dev)
    dev_write(ctx, b.dev, (const float *)(const void *)b.host, b.bytes / 4);
  return b;
}

double tbuf_val(const tbuf *b, size_t i) {
  dref_val v = dref_load(b->host + b->off, b->t, i);
  return v.nan ? NAN : v.v;
}

void tbuf_free(wgc_context *ctx, tbuf *b) {
  dev_free(ctx, b->dev);
  free(b->host);
}

/* Half a unit in the last place of t at |w| (0 for f32: the op's own
 * bound holds its rounding). */
double half_ulp(wgc_dtype t, double w) {
  if (t == WGC_DTYPE_F32)
    return 0.0;
  int mant = t == WGC_DTYPE_F16 ? 10 : 7,
      emin = t == WGC_DTYPE_F16 ? -14 : -126;
  int e = w == 0.0 ? emin : ilogb(w);
  if (e < emin)
    e = emin;
  return ldexp(1.0, e - mant - 1);
}

/* Reads out and checks it against want[] within rel*|w| + abs + half an
 * ulp of its type (NaN for NaN, infinities and f16 overflow exactly), and
 * its guard bytes unchanged. */
double check_out(wgc_context *ctx, const tbuf *out, const double *want,
                 double rel, double abs_tol, const char *what) {
  double *tol = xmalloc(out->n * sizeof *tol + 1);
  for (size_t i = 0; i < out->n; i++)
    tol[i] = rel * fabs(want[i]) + abs_tol;
  double worst = check_out_tol(ctx, out, want, tol, what);
  free(tol);
  return worst;
}

double check_out_tol(wgc_context *ctx, const tbuf *out, const double *want,
                     const double *tol_of, const char *what) {
  uint8_t *got = xmalloc(out->bytes);
  double worst = 0;
  if (!dev_read(ctx, (float *)(void *)got, out->dev, out->bytes / 4)) {
    free(got);
    return worst;
  }
  size_t eb = dref_bytes(out->t, 1), end = out->off + out->n * eb;
  for (size_t i = 0; i < out->bytes; i++)
    if ((i < out->off || i >= end) && got[i] != GUARD_BYTE) {
      CHECK(false, "%s: guard byte %zu changed to 0x%02x", what, i, got[i]);
      break;
    }
  size_t bad = 0;
  for (size_t i = 0; i < out->n && bad < 3; i++) {
    dref_val gv = dref_load(got + out->off, out->t, i);
    double g = gv.nan ? NAN : gv.v, w = want[i];
    bool ok;
    if (isnan(w))
      ok = isnan(g);
    else if (isinf(w))
      ok = g == w;
    else {
      double tol = tol_of[i] + half_ulp(out->t, fabs(w));
      /* beyond the type's largest finite value plus half an ulp: inf */
      dref_val wv = {w, 0};
      uint16_t h = dref_enc16(wv, out->t == WGC_DTYPE_BF16);
      double r = out->t == WGC_DTYPE_F32
                     ? w
                     : dref_dec16(h, out->t == WGC_DTYPE_BF16).v;
      if (isinf(r) && fabs(w) - 4 * tol_of[i] > 65520.0 &&
          out->t == WGC_DTYPE_F16)
        ok = g == r;
      else {
        ok = fabs(g - w) <= tol;
        if (tol > 0 && fabs(g - w) / tol > worst)
          worst = fabs(g - w) / tol;
      }
    }
    if (!ok) {
      bad++;
      CHECK(false, "%s: element %zu is %.9g, want %.9g", what, i, g, w);
    }
  }
  free(got);
  /* kept per op (the case's name to its bracket, and the backend's word
   * in it) and output type */
  const char *c = case_current();
  size_t op = strcspn(c, "["), be = c[op] ? strcspn(c + op + 1, " ]") : 0;
  char key[64];
  snprintf(key, sizeof key, "%.*s[%.*s] %s", (int)op, c, (int)be,
           c + op + (c[op] != 0), wgc_dtype_name(out->t));
  accuracy_record(key, worst);
  return worst;
}

size_t check_pieces(wgc_context *ctx, cpu_work *w, wgc_ref *output,
                    uint16_t *part, const uint16_t *whole, size_t n) {
  static const double budgets[] = {1e12, 1e4, 300, 1};
  size_t most = 0;
  for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
    memset(part, 0xA5, 2 * n + 2);
    *output = (wgc_ref){.mem = part, .offset = 2};
    cpu_split s;
    CHECK_STATUS(cpu_split_plan(w, budgets[b], &s), WGC_OK);
    for (size_t i = 0; i < s.pieces; i++)
      CHECK_STATUS(cpu_split_run(ctx, w, &s, i), WGC_OK);
    most = s.pieces > most ? s.pieces : most;
    cpu_split_release(&s);
    CHECK(part[0] == 0xA5A5, "budget %g: the padding changed", budgets[b]);
    CHECK(!memcmp(part + 1, whole + 1, 2 * n),
          "budget %g: the pieces differ from the whole call", budgets[b]);
  }
  return most;
}
