/* Cuts one piece of work (work.h) into pieces small enough that each runs
 * in a few milliseconds on one wasm32 thread, so a queue can stop between
 * any two of them. Each operation's piece is a smaller call of the same
 * cpu_*() function on a window of its operands (rows of C, output planes or
 * their rows, query blocks of one head, outer blocks, element ranges), so
 * the pieces compute exactly what the whole call does. Only a reduction
 * whose one output line is too long is summed here, in chunks, with double
 * partials as the whole call keeps them. */
#ifndef WGC_CPU_SPLIT_H
#define WGC_CPU_SPLIT_H

#include "work.h"

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

/* Plans w in pieces of about piece_work (CPU_PIECE_WORK; tests use less).
 * Fails (out of memory, for a long reduction's partials) with nothing to
 * release. */
wgc_status cpu_split_plan(const cpu_work *w, double piece_work, cpu_split *s);
/* Runs piece i of w (pieces run in order, each once). Memory kinds only
 * move bytes: completing callbacks and freeing are the caller's. */
wgc_status cpu_split_run(wgc_context *ctx, const cpu_work *w, cpu_split *s,
                         size_t i);
void cpu_split_release(cpu_split *s);

/* The long-line reduction (split_reduce.c). */
wgc_status cpu_split_reduce_plan(const wgc_reduce_args *r, cpu_split *s);
void cpu_split_reduce_run(const wgc_reduce_args *r, cpu_split *s, size_t i);
/* softmax and the norms (norm.c): runs of outer slabs, or a long slab in
 * chunks with its statistics kept in s->acc. */
wgc_status cpu_split_norm_plan(const wgc_norm_args *n, cpu_split *s);
wgc_status cpu_split_norm_run(wgc_context *ctx, const wgc_norm_args *n,
                              cpu_split *s, size_t i);
/* Rows [r0, r1) of a rotary embedding (rotary.c). */
void cpu_rotary_rows(const wgc_rotary_args *r, size_t r0, size_t r1);
/* Output rows [g0, g1) of a pooling, rows of all planes in order, and the
 * work of one (pool2d.c). */
void cpu_pool2d_rows(const wgc_pool2d_args *a, size_t g0, size_t g1);
double cpu_pool2d_row_work(const wgc_pool2d_args *a);

/* Strided copy, gather and where in ranges of output elements
 * (movement.c). */
void cpu_split_movement_plan(const cpu_work *w, cpu_split *s);
void cpu_split_movement_run(const cpu_work *w, const cpu_split *s, size_t i);

static inline wgc_ref cpu_ref_at(wgc_ref r, size_t elems) {
  r.offset += (uint64_t)elems * 4;
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
