/* Typed test operands shared by the typed-op tests: n elements of an
 * F32, F16 or BF16 operand at a byte offset of a device buffer (a 2-byte
 * type 2 bytes into a word, or at its start: tbuf_half_offset), guard
 * bytes around it, and the check of a
 * result against float64 within the op's bound plus half an ulp of the
 * output type. */
#ifndef WGC_TESTS_TBUF_H
#define WGC_TESTS_TBUF_H

#include "cpu/work.h"
#include "wgc.h"

#include <stddef.h>
#include <stdint.h>

#define GUARD_BYTE 0xA5

/* A typed operand: n elements at byte off of a device buffer, its host
 * image (guards included) in host. */
typedef struct tbuf {
  wgc_dtype t;
  size_t n, off, bytes;
  uint8_t *host;
  wgc_ptr dev;
} tbuf;

/* x (n floats, or none) converted to t, guard bytes around it, uploaded. */
tbuf tbuf_make(wgc_context *ctx, wgc_dtype t, const float *x, size_t n);
/* Where tbuf_make puts 2-byte operands from now on: 6 bytes in (the
 * default, 2 bytes into a word) or 8 (a word's start); the previous. */
size_t tbuf_half_offset(size_t off);
/* Element i of the host image, decoded exactly. */
double tbuf_val(const tbuf *b, size_t i);
void tbuf_free(wgc_context *ctx, tbuf *b);
/* Half a unit in the last place of t at |w| (0 for f32). */
double half_ulp(wgc_dtype t, double w);
/* Reads out and checks it against want[] within rel*|w| + abs + half an
 * ulp of its type (NaN for NaN, infinities and f16 overflow exactly), and
 * its guard bytes unchanged. Returns the largest error of a finite element
 * as a fraction of its bound. */
double check_out(wgc_context *ctx, const tbuf *out, const double *want,
                 double rel, double abs_tol, const char *what);
/* As check_out with element i's bound tol[i] (plus half an ulp). */
double check_out_tol(wgc_context *ctx, const tbuf *out, const double *want,
                     const double *tol, const char *what);

/* Runs w on the CPU backend in pieces under each of the budgets, into
 * part (n 2-byte elements 2 bytes in, *output pointing there), and checks
 * each result against whole's bytes and part's padding unchanged; returns
 * the most pieces a budget made. */
size_t check_pieces(wgc_context *ctx, cpu_work *w, wgc_ref *output,
                    uint16_t *part, const uint16_t *whole, size_t n);
#endif
