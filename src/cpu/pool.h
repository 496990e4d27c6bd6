/* A tiny parallel-for for the CPU backend. Two implementations exist and the
 * build links exactly one: pool_threads.c (pthreads, native) and
 * pool_wasm.c (wasm32: Web Workers where the module's memory is shared,
 * else serial). */
#ifndef WGC_CPU_POOL_H
#define WGC_CPU_POOL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cpu_pool cpu_pool;

/* One task. worker identifies the thread that runs it, in
 * [0, min(cpu_pool_threads(pool), n_tasks)), so callers can index per-worker
 * scratch; no two tasks run on one worker at the same time. */
typedef void (*cpu_task_fn)(void *arg, size_t task, unsigned worker);

/* threads == 0 picks the number of online cores, at most 16. Returns NULL
 * when out of memory. Fewer threads than asked may be started (wasm32 without
 * shared memory always has 1); cpu_pool_threads says how many. */
cpu_pool *cpu_pool_create(unsigned threads);
/* Joins the workers. NULL is a no-op. */
void cpu_pool_destroy(cpu_pool *pool);
unsigned cpu_pool_threads(const cpu_pool *pool);
/* The threads that would take a task of a job started now: the caller and
 * the workers awake. wasm32: a sleeping worker takes a millisecond or more
 * to wake, so a short job is better cut for those awake alone. Natively
 * all of them. */
unsigned cpu_pool_ready(const cpu_pool *pool);
/* Runs fn(arg, task, worker) for every task in [0, n_tasks), the calling
 * thread included, and returns once all have finished. Not re-entrant: a
 * task must not call cpu_pool_for on the same pool, and one pool serves one
 * caller at a time. */
void cpu_pool_for(cpu_pool *pool, size_t n_tasks, cpu_task_fn fn, void *arg);
/* Whether more jobs will follow soon (wasm32: the CPU backend's queue holds
 * work for the next turn of the event loop): the workers then stay awake
 * between them rather than sleep. Natively a no-op: work runs inside the
 * call that issues it. */
void cpu_pool_expect_work(bool more);

#endif /* WGC_CPU_POOL_H */
