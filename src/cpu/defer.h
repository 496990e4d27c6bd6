/* When the CPU backend's work runs. Two implementations exist and the
 * build links exactly one: defer_none.c (native: inside the call, on the
 * thread pool) and defer_queue.c (wasm32: the browser's main thread must
 * never be held for long, so work is queued in order and run in slices of
 * a few milliseconds from the event loop). */
#ifndef WGC_CPU_DEFER_H
#define WGC_CPU_DEFER_H

#include "work.h"

/* Per-context state (ctx->impl's queue); NULL when out of memory. */
struct cpu_queue *cpu_defer_create(void);
/* Discards queued work without running it, releasing the memory of queued
 * frees and staged uploads, then the queue. NULL is a no-op. */
void cpu_defer_destroy(struct cpu_queue *q);

/* Issues w after everything issued before it. A host source (upload) is
 * read before this returns; a download's host destination is written
 * before its callback is completed. Fails (out of memory) with nothing
 * issued. */
wgc_status cpu_defer_submit(wgc_context *ctx, const cpu_work *w);
/* Times the operation just issued (wgc_op_timer): natively, and where it
 * ran inside the call, t's times are already its own and t->done fires at
 * once; work still queued (the browser) is timed over the slices it runs
 * in, and t->done fires when it is done (WGC_ERR_CANCELLED when the queue
 * is destroyed first). */
void cpu_defer_time(wgc_context *ctx, wgc_op_timer *t);
/* Waits for every issued piece of work: WGC_OK, or WGC_ERR_WOULD_BLOCK
 * where waiting is impossible (the browser). */
wgc_status cpu_defer_wait(wgc_context *ctx);

#endif /* WGC_CPU_DEFER_H */
