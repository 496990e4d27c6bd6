/* The wasm32 pool. A module linked with shared memory (README, "Threads in
 * the browser") and loaded in a cross-origin isolated page gets workers:
 * web/wgc.js starts each as a Web Worker that instantiates the same module
 * over the same memory and enters wgc_js_thread_main on a stack of its own.
 * Elsewhere (a module with memory of its own, no isolation, Node) wgc.js
 * reports one thread and this is a serial loop.
 *
 * The workers belong to the module, not to a pool: they start once, with
 * the first pool that asks for more than one thread, and live as long as
 * the page, because a worker cannot be joined from the page's thread (it
 * may not block) and one that has not started yet must never find its
 * state freed. Pools share them; only the page's thread calls into wgc, so
 * one job runs at a time.
 *
 * A worker may start long after it is asked for (a browser starts workers
 * from its event loop), so the caller never waits for one to join: tasks
 * are claimed one at a time from a counter, the caller claims too, and it
 * waits (spinning: the page's thread may not sleep on memory) only for
 * tasks a worker has claimed. The counter carries the job's generation in
 * its high half, so a worker still looping over a finished job cannot
 * claim a task of the next. Only this file is built with atomics.
 *
 * A task that traps on a worker (a bug: the same task would trap on the
 * page's thread in a module without threads) must not leave the page's
 * thread waiting for it forever: the worker's script reports the trap
 * (wgc_js_thread_trapped) and stops, the caller stops waiting for that
 * task, finishes the job's other tasks and traps in its turn, so the page
 * sees the error as it would without threads. */
#include "pool.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define JS(name) __attribute__((import_module("wgc_js"), import_name(#name)))
#define EXPORT __attribute__((visibility("default")))

/* The threads wgc.js can run this module on, the page's included: 1 unless
 * the memory is shared and workers can be started. */
JS(threads) unsigned js_threads(void);
/* Starts a worker that calls wgc_js_thread_main(index) with its stack
 * pointer at stack_top; 0 when the page refuses to start one. */
JS(spawn_thread) int js_spawn_thread(uintptr_t stack_top, unsigned index);

#define POOL_MAX_AUTO 16 /* as natively: threads == 0 means at most this */
#define WORKER_STACK (1u << 20) /* the page thread's own stack size */
/* A worker checks for the next job this many times (some 0.1-0.3 ms)
 * before it sleeps: a model's operations follow each other closely, and
 * waking a sleeping worker costs more than that (a millisecond or more in
 * Chromium on 2 cores). While the queue holds work for the next turn of
 * the event loop it checks longer (some 20-60 ms: a page whose loop is
 * held up must not keep a core busy for nothing). */
#define WORKER_SPINS 100000
#define WORKER_SPINS_EXPECTING 20000000

_Static_assert(sizeof(size_t) == 4, "a job's tasks are numbered in 32 bits");

static struct {
  unsigned started;  /* workers asked for, 0 until the first pool */
  atomic_uint limit; /* the job's pool's threads: workers >= it stay out */
  /* the current job, written before seq announces it (atomics only
   * because a worker late for the previous job may read them meanwhile) */
  _Atomic(cpu_task_fn) fn;
  _Atomic(void *) arg;
  atomic_uint n_tasks;
  _Atomic uint64_t claim; /* generation << 32 | next task */
  atomic_uint done;       /* tasks finished */
  atomic_uint trapped;    /* tasks whose worker trapped in them */
  /* the generation of the job whose task each worker is running, 0
   * between tasks */
  atomic_uint in_task[POOL_MAX_AUTO];
  atomic_uint seq; /* generation; workers sleep on it */
  atomic_uint worker_tasks;
  atomic_bool expecting; /* cpu_pool_expect_work */
  atomic_uint awake;     /* workers not asleep (cpu_pool_ready) */
} shared;

struct cpu_pool {
  unsigned threads;
};

static void run_tasks(uint32_t gen, cpu_task_fn fn, void *arg, uint32_t n,
                      unsigned worker) {
  for (;;) {
    uint64_t c = atomic_load(&shared.claim);
    if ((uint32_t)(c >> 32) != gen || (uint32_t)c >= n)
      return;
    if (!atomic_compare_exchange_weak(&shared.claim, &c, c + 1))
      continue;
    if (worker)
      atomic_store(&shared.in_task[worker], gen);
    fn(arg, (uint32_t)c, worker);
    if (worker) {
      atomic_store(&shared.in_task[worker], 0);
      atomic_fetch_add(&shared.worker_tasks, 1);
    }
    atomic_fetch_add(&shared.done, 1);
  }
}

/* A worker's life: wait until a job is announced, help with it, repeat. */
EXPORT void wgc_js_thread_main(unsigned index) {
  uint32_t seen = 0;
  atomic_fetch_add(&shared.awake, 1);
  for (;;) {
    uint32_t gen;
    for (unsigned spin = 0; (gen = atomic_load(&shared.seq)) == seen;)
      if (++spin > (atomic_load(&shared.expecting) ? WORKER_SPINS_EXPECTING
                                                   : WORKER_SPINS)) {
        atomic_fetch_sub(&shared.awake, 1);
        __builtin_wasm_memory_atomic_wait32((int *)&shared.seq, (int)seen, -1);
        atomic_fetch_add(&shared.awake, 1);
        spin = 0;
      }
    seen = gen;
    cpu_task_fn fn = shared.fn;
    void *arg = shared.arg;
    uint32_t n = shared.n_tasks;
    if (index < shared.limit && index < n)
      run_tasks(gen, fn, arg, n, index);
  }
}

/* Called by worker index's script once its wgc_js_thread_main trapped; the
 * worker runs nothing more. A task it was running counts as trapped, so
 * the caller waiting for it stops waiting. */
EXPORT void wgc_js_thread_trapped(unsigned index) {
  if (index == 0 || index >= POOL_MAX_AUTO)
    return;
  atomic_fetch_sub(&shared.awake, 1);
  uint32_t gen = atomic_exchange(&shared.in_task[index], 0);
  if (gen && gen == atomic_load(&shared.seq))
    atomic_fetch_add(&shared.trapped, 1);
}

/* Tests: a job of n tasks of some 0.2 ms each on any thread but worker 1,
 * which traps in any it takes (the job's caller then traps too). Returns
 * the tasks finished. */
static void trap_test_task(void *arg, size_t task, unsigned worker) {
  (void)task;
  if (worker == 1)
    __builtin_trap();
  for (volatile unsigned spin = 0; spin < 100000; spin++)
    ;
  atomic_fetch_add((atomic_uint *)arg, 1);
}

EXPORT unsigned wgc_js_thread_trap_test(unsigned n) {
  cpu_pool *pool = cpu_pool_create(0);
  if (!pool)
    return 0;
  atomic_uint finished = 0;
  cpu_pool_for(pool, n, trap_test_task, &finished);
  cpu_pool_destroy(pool);
  return atomic_load(&finished);
}

/* Tasks that workers have run since the module started: whether threads
 * actually took part (tests, and a page checking its isolation). */
EXPORT unsigned wgc_js_thread_tasks(void) {
  return atomic_load(&shared.worker_tasks);
}

static void start_workers(unsigned want) {
  unsigned have = js_threads();
  if (want > have)
    want = have;
  while (shared.started + 1 < want) {
    /* never freed: the worker runs on it for the page's life */
    char *stack = aligned_alloc(16, WORKER_STACK);
    if (!stack)
      return;
    if (!js_spawn_thread((uintptr_t)(stack + WORKER_STACK),
                         shared.started + 1)) {
      free(stack);
      return;
    }
    shared.started++;
  }
}

cpu_pool *cpu_pool_create(unsigned threads) {
  cpu_pool *pool = malloc(sizeof *pool);
  if (!pool)
    return NULL;
  if (threads == 0 || threads > POOL_MAX_AUTO)
    threads = POOL_MAX_AUTO;
  if (threads > 1)
    start_workers(threads);
  pool->threads = threads < shared.started + 1 ? threads : shared.started + 1;
  return pool;
}

void cpu_pool_destroy(cpu_pool *pool) { free(pool); }

void cpu_pool_expect_work(bool more) { atomic_store(&shared.expecting, more); }

unsigned cpu_pool_threads(const cpu_pool *pool) { return pool->threads; }

unsigned cpu_pool_ready(const cpu_pool *pool) {
  unsigned awake = atomic_load(&shared.awake);
  return awake + 1 < pool->threads ? awake + 1 : pool->threads;
}

void cpu_pool_for(cpu_pool *pool, size_t n_tasks, cpu_task_fn fn, void *arg) {
  if (pool->threads == 1 || n_tasks <= 1) {
    for (size_t t = 0; t < n_tasks; t++)
      fn(arg, t, 0);
    return;
  }
  uint32_t n = (uint32_t)n_tasks;
  uint32_t gen = atomic_load(&shared.seq) + 1;
  if (gen == 0)
    gen = 1; /* workers start having seen generation 0 */
  shared.fn = fn;
  shared.arg = arg;
  shared.n_tasks = n;
  shared.limit = pool->threads;
  atomic_store(&shared.done, 0);
  atomic_store(&shared.trapped, 0);
  atomic_store(&shared.claim, (uint64_t)gen << 32);
  atomic_store(&shared.seq, gen);
  __builtin_wasm_memory_atomic_notify((int *)&shared.seq, shared.started);

  run_tasks(gen, fn, arg, n, 0);
  /* the rest are running on workers (both counts only grow) */
  while (atomic_load(&shared.done) + atomic_load(&shared.trapped) < n)
    ;
  if (atomic_load(&shared.trapped)) {
    fputs("wgc: a CPU backend task trapped on a worker thread (its error is "
          "the worker's)\n",
          stderr);
    __builtin_trap();
  }
}
