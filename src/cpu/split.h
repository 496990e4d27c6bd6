/* How one piece of work (work.h) is cut into pieces small enough that each
 * runs in a few milliseconds on one wasm32 thread, so a queue can stop
 * between any two of them. Each operation's piece is a smaller call of the same
 * cpu_*() function on a window of its operands (rows of C, output planes or
 * their rows, query blocks of one head, outer blocks, element ranges), so
 * the pieces compute exactly what the whole call does. Only a reduction
 * whose one output line is too long is summed here, in chunks, with double
 * partials as the whole call keeps them. */
#ifndef WGC_CPU_SPLIT_H
#define WGC_CPU_SPLIT_H

#include "internal.h"

#include <stddef.h>

/* About this many flops (or element visits) per piece: 1-3 ms in wasm32;
 * a memory copy moves twice as many bytes per piece. */
#define CPU_PIECE_WORK 2097152.0

typedef struct cpu_split {
  double piece_work; /* the budget of one piece */
  size_t pieces;     /* >= 1 */
  double work;       /* estimate for the whole, in CPU_PIECE_WORK units */
  size_t group;      /* items (batches, images, rows ...) per piece */
  size_t blocks[3];
  size_t block_size[3];
  double *acc; /* partials of a split reduction line; owned */
} cpu_split;

/* Each family's pieces, beside its reference (cpu/<family>.c): plan fills
 * s for the whole call (it may fail, out of memory for partials, with
 * nothing to release beyond s->acc); run computes piece i (pieces run in
 * order, each once). */
#define CPU_SPLIT_DECLARE_(NAME, name)                                         \
  wgc_status cpu_split_##name##_plan(const wgc_##name##_args *a,               \
                                     cpu_split *s);                            \
  wgc_status cpu_split_##name##_run(                                           \
      wgc_context *ctx, const wgc_##name##_args *a, cpu_split *s, size_t i);
WGC_OP_FAMILIES(CPU_SPLIT_DECLARE_)
#undef CPU_SPLIT_DECLARE_

static inline wgc_ref cpu_ref_at(wgc_ref r, size_t elems) {
  r.offset += (uint64_t)elems * 4;
  return r;
}
/* r moved on by elems elements of t (F32, F16 or BF16). */
static inline wgc_ref cpu_ref_typed(wgc_ref r, wgc_dtype t, size_t elems) {
  bool two = t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16;
  r.offset += (uint64_t)elems * (two ? 2 : 4);
  return r;
}
static inline size_t cpu_div_up(size_t x, size_t by) {
  return (x + by - 1) / by;
}
static inline size_t cpu_min(size_t a, size_t b) { return a < b ? a : b; }
/* How many items of cost each fit a piece of s: at least 1, at most most. */
static inline size_t cpu_fit(const cpu_split *s, double each, size_t most) {
  double n = s->piece_work / (each > 1.0 ? each : 1.0);
  return n < 1.0 ? 1 : n >= (double)most ? most : (size_t)n;
}

#endif /* WGC_CPU_SPLIT_H */
