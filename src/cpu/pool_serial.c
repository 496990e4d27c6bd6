/* The single-threaded pool, for targets without threads (wasm32-wasi). */
#include "pool.h"

#include <stdlib.h>

struct cpu_pool {
  unsigned threads;
};

cpu_pool *cpu_pool_create(unsigned threads) {
  (void)threads; /* one thread is all there is */
  cpu_pool *pool = malloc(sizeof *pool);
  if (pool)
    pool->threads = 1;
  return pool;
}

void cpu_pool_destroy(cpu_pool *pool) { free(pool); }

unsigned cpu_pool_threads(const cpu_pool *pool) { return pool->threads; }

void cpu_pool_for(cpu_pool *pool, size_t n_tasks, cpu_task_fn fn, void *arg) {
  (void)pool;
  for (size_t t = 0; t < n_tasks; t++)
    fn(arg, t, 0);
}
