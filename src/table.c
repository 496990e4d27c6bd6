/* The allocation table: slots with generations and a FIFO free list. */
#include "table.h"

#include <stdlib.h>

bool wgc_table_take(wgc_table *t, uint32_t *slot) {
  if (t->free_head) {
    uint32_t s = t->free_head - 1;
    t->free_head = t->slots[s].next_free;
    if (!t->free_head)
      t->free_tail = 0;
    t->slots[s].next_free = 0;
    *slot = s;
    return true;
  }
  if (t->count == WGC_MAX_SLOTS)
    return false;
  if (t->count == t->capacity) {
    uint32_t cap = t->capacity ? t->capacity * 2 : 64;
    wgc_slot *grown = realloc(t->slots, cap * sizeof *grown);
    if (!grown)
      return false;
    t->slots = grown;
    t->capacity = cap;
  }
  *slot = t->count++;
  t->slots[*slot] = (wgc_slot){.gen = 1};
  return true;
}

void wgc_table_give_back(wgc_table *t, uint32_t slot) {
  wgc_slot *s = &t->slots[slot];
  s->mem = NULL;
  s->bytes = 0;
  if (s->gen == WGC_GEN_MAX)
    return; /* retired: reusing it would alias its oldest addresses */
  s->gen++;
  s->next_free = 0;
  if (t->free_tail)
    t->slots[t->free_tail - 1].next_free = slot + 1;
  else
    t->free_head = slot + 1;
  t->free_tail = slot + 1;
}

wgc_slot *wgc_table_lookup(const wgc_table *t, wgc_ptr p) {
  uint32_t slot = wgc_ptr_slot(p);
  if (slot >= t->count)
    return NULL;
  wgc_slot *s = &t->slots[slot];
  if (!s->mem || s->gen != wgc_ptr_gen(p))
    return NULL;
  return s;
}

void wgc_table_release(wgc_table *t) {
  free(t->slots);
  *t = (wgc_table){0};
}
