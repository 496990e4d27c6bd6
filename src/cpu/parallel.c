/* The thread pool as the families use it: small work stays on the calling
 * thread, the rest is spread over the context's workers. Below every
 * family, above only the pool itself. */
#include "cpu.h"

unsigned cpu_workers(const wgc_context *ctx, size_t n_tasks, double work) {
  const cpu_backend *be = ctx->impl;
  if (work < CPU_SERIAL_WORK || n_tasks <= 1 || be->threads <= 1)
    return 1;
  return n_tasks < be->threads ? (unsigned)n_tasks : be->threads;
}

void cpu_parallel(wgc_context *ctx, size_t n_tasks, double work, cpu_task_fn fn,
                  void *arg) {
  if (cpu_workers(ctx, n_tasks, work) == 1) {
    for (size_t t = 0; t < n_tasks; t++)
      fn(arg, t, 0);
    return;
  }
  cpu_pool_for(((cpu_backend *)ctx->impl)->pool, n_tasks, fn, arg);
}
