/* The allocation table and the device-address encoding:
 * bits 0..34 byte offset, 35..63 the allocation's id (never 0).
 *
 * Ids come from a counter that runs through 1 .. 2^29-1 and wraps, skipping
 * ids still live, so a freed id comes back only after the counter has gone
 * all the way round: at least 2^29 - 2 - L later allocations, where L (the
 * live allocations, at most WGC_MAX_LIVE) stays below 2^28. The table itself
 * never runs out: allocation fails only when memory does. */
#ifndef WGC_TABLE_H
#define WGC_TABLE_H

#include "internal.h"

#define WGC_OFFSET_BITS 35
#define WGC_ID_BITS 29
#define WGC_MAX_ALLOC_BYTES (1ull << WGC_OFFSET_BITS)
#define WGC_ID_MAX ((1u << WGC_ID_BITS) - 1)
/* Live allocations at once: keeps every freed id stale for at least 2^28
 * later allocations. */
#define WGC_MAX_LIVE ((1u << 28) - 2)

static inline wgc_ptr wgc_ptr_make(uint32_t id) {
  return (uint64_t)id << WGC_OFFSET_BITS;
}
static inline uint64_t wgc_ptr_offset(wgc_ptr p) {
  return p & (WGC_MAX_ALLOC_BYTES - 1);
}
static inline uint32_t wgc_ptr_id(wgc_ptr p) {
  return (uint32_t)(p >> WGC_OFFSET_BITS);
}

/* Records a live allocation and gives its base address; false when the host
 * is out of memory (or WGC_MAX_LIVE allocations are live). */
bool wgc_table_add(wgc_table *t, void *mem, uint64_t bytes, wgc_ptr *base);
/* The live allocation that p points into, or NULL. */
wgc_slot *wgc_table_lookup(const wgc_table *t, wgc_ptr p);
/* Forgets the live allocation whose record is s (from wgc_table_lookup). */
void wgc_table_remove(wgc_table *t, wgc_slot *s);
void wgc_table_release(wgc_table *t);

#endif
