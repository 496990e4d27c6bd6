/* The pthread pool: threads-1 workers sleep on a condition variable; the
 * caller of cpu_pool_for joins in as worker 0. Tasks are claimed from an
 * atomic counter, so uneven tasks balance themselves. */
/* pthreads and sysconf are POSIX; the build defines _GNU_SOURCE. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define POOL_MAX_AUTO 16     /* threads == 0: online cores, at most this */
#define POOL_MAX_THREADS 256 /* an explicit count is clamped to this */

typedef struct pool_worker {
  cpu_pool *pool;
  unsigned index;
  pthread_t thread;
} pool_worker;

struct cpu_pool {
  unsigned threads;     /* including the caller */
  pool_worker *workers; /* threads - 1 of them */

  pthread_mutex_t lock;
  pthread_cond_t wake;      /* a new job or quit */
  pthread_cond_t idle;      /* busy dropped to 0 */
  unsigned long generation; /* bumped per job; workers wait for a change */
  bool quit;
  unsigned busy; /* workers still inside the current job */

  /* the current job, written under lock before generation changes */
  cpu_task_fn fn;
  void *arg;
  size_t n_tasks;
  atomic_size_t next; /* next unclaimed task */
};

static void run_tasks(cpu_pool *pool, unsigned worker) {
  for (;;) {
    size_t t = atomic_fetch_add_explicit(&pool->next, 1, memory_order_relaxed);
    if (t >= pool->n_tasks)
      return;
    pool->fn(pool->arg, t, worker);
  }
}

static void *worker_main(void *p) {
  pool_worker *w = p;
  cpu_pool *pool = w->pool;
  unsigned long seen = 0;
  pthread_mutex_lock(&pool->lock);
  for (;;) {
    while (!pool->quit && pool->generation == seen)
      pthread_cond_wait(&pool->wake, &pool->lock);
    if (pool->quit)
      break;
    seen = pool->generation;
    /* Workers beyond the task count stay out, keeping indices < n_tasks. */
    bool join = w->index < pool->n_tasks;
    pthread_mutex_unlock(&pool->lock);
    if (join)
      run_tasks(pool, w->index);
    pthread_mutex_lock(&pool->lock);
    if (--pool->busy == 0)
      pthread_cond_signal(&pool->idle);
  }
  pthread_mutex_unlock(&pool->lock);
  return NULL;
}

static unsigned online_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1)
    return 1;
  return n > POOL_MAX_AUTO ? POOL_MAX_AUTO : (unsigned)n;
}

cpu_pool *cpu_pool_create(unsigned threads) {
  if (threads == 0)
    threads = online_cores();
  if (threads > POOL_MAX_THREADS)
    threads = POOL_MAX_THREADS;
  cpu_pool *pool = calloc(1, sizeof *pool);
  if (!pool)
    return NULL;
  pool->threads = 1;
  atomic_init(&pool->next, 0);
  if (threads > 1) {
    pool->workers = calloc(threads - 1, sizeof *pool->workers);
    if (!pool->workers)
      goto fail_workers;
  }
  if (pthread_mutex_init(&pool->lock, NULL) != 0)
    goto fail_workers;
  if (pthread_cond_init(&pool->wake, NULL) != 0)
    goto fail_lock;
  if (pthread_cond_init(&pool->idle, NULL) != 0)
    goto fail_wake;
  /* A thread that fails to start just leaves the pool smaller. */
  for (unsigned i = 1; i < threads; i++) {
    pool_worker *w = &pool->workers[i - 1];
    w->pool = pool;
    w->index = i;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
      break;
    pool->threads++;
  }
  return pool;

fail_wake:
  pthread_cond_destroy(&pool->wake);
fail_lock:
  pthread_mutex_destroy(&pool->lock);
fail_workers:
  free(pool->workers);
  free(pool);
  return NULL;
}

void cpu_pool_destroy(cpu_pool *pool) {
  if (!pool)
    return;
  pthread_mutex_lock(&pool->lock);
  pool->quit = true;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  for (unsigned i = 1; i < pool->threads; i++)
    pthread_join(pool->workers[i - 1].thread, NULL);
  pthread_cond_destroy(&pool->idle);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->lock);
  free(pool->workers);
  free(pool);
}

unsigned cpu_pool_threads(const cpu_pool *pool) { return pool->threads; }

unsigned cpu_pool_ready(const cpu_pool *pool) { return pool->threads; }

void cpu_pool_for(cpu_pool *pool, size_t n_tasks, cpu_task_fn fn, void *arg) {
  if (n_tasks == 0)
    return;
  if (pool->threads == 1 || n_tasks == 1) {
    for (size_t t = 0; t < n_tasks; t++)
      fn(arg, t, 0);
    return;
  }
  pthread_mutex_lock(&pool->lock);
  pool->fn = fn;
  pool->arg = arg;
  pool->n_tasks = n_tasks;
  atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
  pool->busy = pool->threads - 1;
  pool->generation++;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);

  run_tasks(pool, 0);

  /* Workers' writes are visible to the caller through the mutex. */
  pthread_mutex_lock(&pool->lock);
  while (pool->busy > 0)
    pthread_cond_wait(&pool->idle, &pool->lock);
  pthread_mutex_unlock(&pool->lock);
}

void cpu_pool_expect_work(bool more) { (void)more; }
