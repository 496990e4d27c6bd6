/* Private interface of the CPU reference backend: its state, the pool's
 * helpers (parallel.c) and each family's reference (one file per op family
 * in this folder). backend.c holds the backend table above them. */
#ifndef WGC_CPU_H
#define WGC_CPU_H

#include "dtype.h"
#include "internal.h"
#include "pool.h"

struct cpu_queue;

#include <stddef.h>

/* ctx->impl of a CPU context. */
typedef struct cpu_backend {
  cpu_pool *pool;
  struct cpu_queue *queue; /* work not yet run (cpu/defer.h) */
  unsigned threads;
  char adapter[40];
} cpu_backend;

/* Below this many flops (or element visits) an operation runs on the calling
 * thread: waking the pool would cost more than it saves. */
#define CPU_SERIAL_WORK 65536.0

/* The float at element 0 of a resolved operand; NULL for a NULL handle
 * (an operand with no elements, never read), which must not be offset. */
static inline float *cpu_ptr(wgc_ref r) {
  return r.mem ? (float *)((char *)r.mem + (size_t)r.offset) : NULL;
}

/* Element i of an F32, F16 or BF16 operand as a float, exactly; and
 * element i of one set to v, rounded once (wgc_dtype_store). The f32
 * case stays a plain access. */
static inline float cpu_load(const void *p, wgc_dtype t, size_t i) {
  return t == WGC_DTYPE_F32 ? ((const float *)p)[i] : wgc_dtype_load(p, t, i);
}
static inline void cpu_store(void *p, wgc_dtype t, size_t i, double v) {
  if (t == WGC_DTYPE_F32)
    ((float *)p)[i] = (float)v;
  else
    wgc_dtype_store(p, t, i, v);
}

/* How many workers cpu_parallel will use for n_tasks tasks of work total
 * flops: per-worker scratch needs this many slots (parallel.c). */
unsigned cpu_workers(const wgc_context *ctx, size_t n_tasks, double work);
/* Runs fn over [0, n_tasks) on cpu_workers(ctx, n_tasks, work) workers. */
void cpu_parallel(wgc_context *ctx, size_t n_tasks, double work, cpu_task_fn fn,
                  void *arg);

/* Each family's reference, run whole on the pool (cpu/<family>.c). */
#define CPU_OP_DECLARE_(NAME, name)                                            \
  wgc_status cpu_##name(wgc_context *ctx, const wgc_##name##_args *a);
WGC_OP_FAMILIES(CPU_OP_DECLARE_)
#undef CPU_OP_DECLARE_

#endif /* WGC_CPU_H */
