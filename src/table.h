/* The allocation table and the device-address encoding:
 * bits 0..35 byte offset, 36..51 slot, 52..63 generation (never 0). */
#ifndef WGC_TABLE_H
#define WGC_TABLE_H

#include "internal.h"

#define WGC_OFFSET_BITS 36
#define WGC_SLOT_BITS 16
#define WGC_GEN_BITS 12
#define WGC_MAX_ALLOC_BYTES (1ull << WGC_OFFSET_BITS)
#define WGC_MAX_SLOTS (1u << WGC_SLOT_BITS)
#define WGC_GEN_MAX ((1u << WGC_GEN_BITS) - 1)

static inline wgc_ptr wgc_ptr_make(uint32_t slot, uint32_t gen) {
  return ((uint64_t)gen << (WGC_OFFSET_BITS + WGC_SLOT_BITS)) |
         ((uint64_t)slot << WGC_OFFSET_BITS);
}
static inline uint64_t wgc_ptr_offset(wgc_ptr p) {
  return p & (WGC_MAX_ALLOC_BYTES - 1);
}
static inline uint32_t wgc_ptr_slot(wgc_ptr p) {
  return (uint32_t)(p >> WGC_OFFSET_BITS) & (WGC_MAX_SLOTS - 1);
}
static inline uint32_t wgc_ptr_gen(wgc_ptr p) {
  return (uint32_t)(p >> (WGC_OFFSET_BITS + WGC_SLOT_BITS));
}

/* Takes a free slot (oldest freed first, so stale addresses stay detectable
 * as long as possible); returns false when the table is full. */
bool wgc_table_take(wgc_table *t, uint32_t *slot);
/* Returns a slot after its allocation is freed: bumps its generation, and
 * retires the slot for good when the generation is exhausted. */
void wgc_table_give_back(wgc_table *t, uint32_t slot);
/* The live slot that p's slot and generation name, or NULL. */
wgc_slot *wgc_table_lookup(const wgc_table *t, wgc_ptr p);
void wgc_table_release(wgc_table *t);

#endif
