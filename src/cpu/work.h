/* One unit of CPU-backend work as a value: an operation with its resolved
 * arguments, or a memory step (upload, copy, download, synchronize, free).
 * Natively each runs whole inside the call that issues it; the wasm32
 * build queues them and runs them in pieces between events (defer.h).
 * work.c dispatches over the kinds. */
#ifndef WGC_CPU_WORK_H
#define WGC_CPU_WORK_H

#include "split.h"

typedef enum cpu_work_kind {
#define CPU_WORK_KIND_(NAME, name) CPU_WORK_##NAME,
  WGC_OP_FAMILIES(CPU_WORK_KIND_)
#undef CPU_WORK_KIND_
      CPU_WORK_UPLOAD, /* dst <- host src */
  CPU_WORK_COPY,       /* dst <- src */
  CPU_WORK_DOWNLOAD,   /* host dst <- src, then completes done */
  CPU_WORK_SYNC,       /* completes done */
  CPU_WORK_FREE,       /* releases mem */
} cpu_work_kind;

/* Whether kind is an operation (the families come first), not a memory
 * step. */
static inline bool cpu_work_is_op(cpu_work_kind kind) {
  return kind < CPU_WORK_UPLOAD;
}

typedef struct cpu_work {
  cpu_work_kind kind;
  union {
#define CPU_WORK_ARGS_(NAME, name) wgc_##name##_args name;
    WGC_OP_FAMILIES(CPU_WORK_ARGS_)
#undef CPU_WORK_ARGS_
    struct {
      wgc_ref dst, src; /* device side; unused ones are {0} */
      const void *host_src;
      void *host_dst;
      size_t bytes;
      wgc_pending *done; /* DOWNLOAD, SYNC */
      void *mem;         /* FREE */
    } mem;
  } u;
} cpu_work;

/* Runs w whole on the calling thread (the thread pool helps with the
 * operations). Returns an operation's own failure (out of memory). */
wgc_status cpu_work_run(wgc_context *ctx, const cpu_work *w);
/* The entry point that issued w: operations carry theirs from the front
 * end. */
const char *cpu_work_fn(const cpu_work *w);

/* Plans w in pieces of about piece_work (CPU_PIECE_WORK; tests use less).
 * Fails (out of memory, for a long reduction's partials) with nothing to
 * release. */
wgc_status cpu_split_plan(const cpu_work *w, double piece_work, cpu_split *s);
/* Runs piece i of w (pieces run in order, each once). Memory kinds only
 * move bytes: completing callbacks and freeing are the caller's. */
wgc_status cpu_split_run(wgc_context *ctx, const cpu_work *w, cpu_split *s,
                         size_t i);
void cpu_split_release(cpu_split *s);

#endif /* WGC_CPU_WORK_H */
