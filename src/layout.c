/* Exact injectivity of strided layouts, as far as it is cheap to decide.
 * Taken by increasing stride, a dimension whose stride passes the last
 * element the smaller ones reach keeps every index distinct (nesting).
 * Where it does not, the dimensions so far interleave: two of them are
 * decided by their strides' gcd, more by visiting their elements when they
 * span at most WGC_LAYOUT_EXACT_SPAN (a bounded cost). The general problem
 * (a bounded non-zero vector in a lattice) has no cheap exact test. */
#include "layout.h"

#include "validate.h"

#include <stdbool.h>
#include <stdlib.h>

static uint64_t gcd64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Dimensions (n[0], s[0]) and (n[1], s[1]), strides > 0: two indices meet
 * exactly when d0*s0 = d1*s1 has a solution with 0 < |d0| < n0 or
 * 0 < |d1| < n1; the smallest is d0 = s1/g, d1 = s0/g. */
static bool pair_distinct(const size_t *n, const size_t *s) {
  uint64_t g = gcd64(s[0], s[1]);
  return s[1] / g >= n[0] || s[0] / g >= n[1];
}

/* Visits every index of the k dimensions (strides > 0) that reach span
 * elements, marking each element. */
static wgc_layout_verdict visit(const size_t *n, const size_t *s, size_t k,
                                uint64_t span) {
  uint64_t count = 1;
  for (size_t d = 0; d < k; d++)
    count = wgc_sat_mul(count, n[d]);
  if (count > span) /* more indices than elements */
    return WGC_LAYOUT_SHARED;
  if (span > WGC_LAYOUT_EXACT_SPAN)
    return WGC_LAYOUT_UNPROVEN;
  uint8_t *seen = calloc((size_t)(span + 7) / 8, 1);
  if (!seen)
    return WGC_LAYOUT_NO_MEMORY;
  size_t idx[8] = {0};
  uint64_t off = 0;
  wgc_layout_verdict v = WGC_LAYOUT_DISTINCT;
  for (;;) {
    if (seen[off / 8] >> (off % 8) & 1) {
      v = WGC_LAYOUT_SHARED;
      break;
    }
    seen[off / 8] |= (uint8_t)(1u << (off % 8));
    size_t d = k; /* odometer over the dimensions, the last one fastest */
    while (d > 0 && idx[d - 1] + 1 == n[d - 1]) {
      d--;
      off -= (uint64_t)idx[d] * s[d];
      idx[d] = 0;
    }
    if (d == 0)
      break;
    idx[d - 1]++;
    off += s[d - 1];
  }
  free(seen);
  return v;
}

wgc_layout_verdict wgc_layout_check(const size_t *shape, const size_t *stride,
                                    size_t rank, size_t *at, uint64_t *span) {
  uint64_t reach = 0; /* last offset reached by the smaller strides */
  for (size_t i = rank; i-- > 0;) {
    uint64_t next = wgc_sat_add(reach, wgc_sat_mul(shape[i] - 1, stride[i]));
    if (stride[i] > reach) {
      reach = next;
      continue;
    }
    /* dimensions i..rank-1 interleave */
    wgc_layout_verdict v = WGC_LAYOUT_SHARED; /* a stride of 0 */
    if (stride[i] > 0 && rank - i == 2)
      v = pair_distinct(shape + i, stride + i) ? WGC_LAYOUT_DISTINCT
                                               : WGC_LAYOUT_SHARED;
    else if (stride[i] > 0)
      v = visit(shape + i, stride + i, rank - i, wgc_sat_add(next, 1));
    if (v != WGC_LAYOUT_DISTINCT) {
      *at = i;
      *span = wgc_sat_add(next, 1);
      return v;
    }
    reach = next;
  }
  return WGC_LAYOUT_DISTINCT;
}
