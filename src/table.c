/* The allocation table: a dense array of records with a free list, and an
 * open-addressing index (linear probing) from address id to record. */
#include "table.h"

#include <stdlib.h>

/* An odd multiplier permutes the low bits, so ids issued in a row (the
 * common case) land in distinct buckets. */
static uint32_t bucket(const wgc_table *t, uint32_t id) {
  return (id * 0x9E3779B1u) & (t->index_cap - 1);
}

static uint32_t *index_find(const wgc_table *t, uint32_t id) {
  if (!t->index_cap)
    return NULL;
  for (uint32_t b = bucket(t, id); t->index[b];
       b = (b + 1) & (t->index_cap - 1))
    if (t->slots[t->index[b] - 1].id == id)
      return &t->index[b];
  return NULL;
}

static void index_put(wgc_table *t, uint32_t rec) {
  uint32_t b = bucket(t, t->slots[rec].id);
  while (t->index[b])
    b = (b + 1) & (t->index_cap - 1);
  t->index[b] = rec + 1;
}

/* Backward-shift deletion keeps every probe run unbroken without
 * tombstones, so lookups stay short however many allocations come and go. */
static void index_erase(wgc_table *t, uint32_t *entry) {
  uint32_t mask = t->index_cap - 1;
  uint32_t hole = (uint32_t)(entry - t->index);
  for (uint32_t j = (hole + 1) & mask; t->index[j]; j = (j + 1) & mask) {
    uint32_t home = bucket(t, t->slots[t->index[j] - 1].id);
    /* The entry at j may fill the hole when the hole lies on its probe
     * path, from home to j. */
    if (((j - home) & mask) >= ((j - hole) & mask)) {
      t->index[hole] = t->index[j];
      hole = j;
    }
  }
  t->index[hole] = 0;
}

static bool index_grow(wgc_table *t) {
  uint32_t cap = t->index_cap ? t->index_cap * 2 : 64;
  uint32_t *grown = calloc(cap, sizeof *grown);
  if (!grown)
    return false;
  uint32_t *old = t->index, old_cap = t->index_cap;
  t->index = grown;
  t->index_cap = cap;
  for (uint32_t i = 0; i < old_cap; i++)
    if (old[i])
      index_put(t, old[i] - 1);
  free(old);
  return true;
}

static bool take_record(wgc_table *t, uint32_t *rec) {
  if (t->free_head) {
    *rec = t->free_head - 1;
    t->free_head = t->slots[*rec].next_free;
    return true;
  }
  if (t->count == t->capacity) {
    uint32_t cap = t->capacity ? t->capacity * 2 : 64;
    wgc_slot *grown = realloc(t->slots, (size_t)cap * sizeof *grown);
    if (!grown)
      return false;
    t->slots = grown;
    t->capacity = cap;
  }
  *rec = t->count++;
  return true;
}

bool wgc_table_add(wgc_table *t, void *mem, uint64_t bytes, wgc_ptr *base) {
  if (t->live >= WGC_MAX_LIVE)
    return false;
  if ((uint64_t)(t->live + 1) * 2 > t->index_cap && !index_grow(t))
    return false;
  uint32_t rec;
  if (!take_record(t, &rec))
    return false;
  /* The next id not in use; fewer than half the ids can be live, so the
   * search ends. */
  uint32_t id = t->next_id;
  do
    id = id >= WGC_ID_MAX ? 1 : id + 1;
  while (index_find(t, id));
  t->next_id = id;
  t->slots[rec] = (wgc_slot){.mem = mem, .bytes = bytes, .id = id};
  index_put(t, rec);
  t->live++;
  *base = wgc_ptr_make(id);
  return true;
}

wgc_slot *wgc_table_lookup(const wgc_table *t, wgc_ptr p) {
  uint32_t id = wgc_ptr_id(p);
  uint32_t *entry = id ? index_find(t, id) : NULL;
  return entry ? &t->slots[*entry - 1] : NULL;
}

void wgc_table_remove(wgc_table *t, wgc_slot *s) {
  uint32_t *entry = index_find(t, s->id);
  if (!entry)
    return;
  index_erase(t, entry);
  *s = (wgc_slot){.next_free = t->free_head};
  t->free_head = (uint32_t)(s - t->slots) + 1;
  t->live--;
}

void wgc_table_release(wgc_table *t) {
  free(t->slots);
  free(t->index);
  *t = (wgc_table){0};
}
