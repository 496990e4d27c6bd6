/* Native builds: every piece of work runs inside the call that issues it,
 * on the thread pool, so nothing is ever queued. */
#include "defer.h"

struct cpu_queue {
  char unused;
};

static struct cpu_queue none;

struct cpu_queue *cpu_defer_create(void) {
  return &none;
}

void cpu_defer_destroy(struct cpu_queue *q) { (void)q; }

wgc_status cpu_defer_submit(wgc_context *ctx, const cpu_work *w) {
  return cpu_work_run(ctx, w);
}

void cpu_defer_time(wgc_context *ctx, wgc_op_timer *t) {
  (void)ctx;
  t->done(t, WGC_OK);
}

wgc_status cpu_defer_wait(wgc_context *ctx) {
  (void)ctx;
  return WGC_OK;
}
