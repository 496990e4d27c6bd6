/* Whether a strided layout gives every index its own element. */
#ifndef WGC_LAYOUT_H
#define WGC_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* Interleaved dimensions are checked element by element up to this span. */
#define WGC_LAYOUT_EXACT_SPAN ((uint64_t)1 << 20)

typedef enum wgc_layout_verdict {
  WGC_LAYOUT_DISTINCT, /* distinct indices address distinct elements */
  WGC_LAYOUT_SHARED,   /* two indices address one element */
  WGC_LAYOUT_UNPROVEN, /* interleaved over more than WGC_LAYOUT_EXACT_SPAN */
  WGC_LAYOUT_NO_MEMORY /* the element-by-element check had no memory */
} wgc_layout_verdict;

/* Checks the rank dimensions of shape (each > 1) and stride, sorted by
 * stride, largest first. On a verdict other than DISTINCT, *at is the
 * dimension where it was found and *span the elements it and the smaller
 * strides reach. */
wgc_layout_verdict wgc_layout_check(const size_t *shape, const size_t *stride,
                                    size_t rank, size_t *at, uint64_t *span);

#endif
