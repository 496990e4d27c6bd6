/* Private interface of the CPU reference backend (backend.c and one file
 * per op family in this folder). */
#ifndef WGC_CPU_H
#define WGC_CPU_H

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

/* How many workers cpu_parallel will use for n_tasks tasks of work total
 * flops: per-worker scratch needs this many slots. */
unsigned cpu_workers(const wgc_context *ctx, size_t n_tasks, double work);
/* Runs fn over [0, n_tasks) on cpu_workers(ctx, n_tasks, work) workers. */
void cpu_parallel(wgc_context *ctx, size_t n_tasks, double work, cpu_task_fn fn,
                  void *arg);

wgc_status cpu_gemm(wgc_context *ctx, const wgc_gemm_args *g);
wgc_status cpu_conv2d(wgc_context *ctx, const wgc_conv2d_args *c);
wgc_status cpu_attention(wgc_context *ctx, const wgc_attention_args *a);
wgc_status cpu_reduce(wgc_context *ctx, const wgc_reduce_args *r);
wgc_status cpu_unary(wgc_context *ctx, const wgc_unary_args *u);
wgc_status cpu_binary(wgc_context *ctx, const wgc_binary_args *b);
wgc_status cpu_copy_strided(wgc_context *ctx, const wgc_copy_strided_args *c);
wgc_status cpu_gather(wgc_context *ctx, const wgc_gather_args *g);
wgc_status cpu_where(wgc_context *ctx, const wgc_where_args *w);
wgc_status cpu_norm(wgc_context *ctx, const wgc_norm_args *n);
wgc_status cpu_rotary(wgc_context *ctx, const wgc_rotary_args *r);
wgc_status cpu_pool2d(wgc_context *ctx, const wgc_pool2d_args *a);

#endif /* WGC_CPU_H */
