/* wgc_cast: the element conversions of dtype.c over runs of whole blocks,
 * on the pool natively and in pieces in the browser's queue. */
#include "cpu.h"
#include "split.h"

#include "dtype.h"

#define TASK_ELEMS 4096 /* a multiple of every block size */

static void cast_range(const wgc_cast_args *a, size_t i0, size_t i1) {
  wgc_dtype_convert((const char *)a->src.mem + a->src.offset, a->src_type,
                    (char *)a->dst.mem + a->dst.offset, a->dst_type, i0,
                    i1 - i0);
}

static void cast_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const wgc_cast_args *a = arg;
  size_t i0 = task * TASK_ELEMS;
  cast_range(a, i0, cpu_min(a->n, i0 + TASK_ELEMS));
}

/* element visits; quantizing reads each value a few times */
static double cast_cost(const wgc_cast_args *a) {
  return wgc_dtype_block(a->dst_type) > 1 ? 8.0 : 2.0;
}

wgc_status cpu_cast(wgc_context *ctx, const wgc_cast_args *a) {
  cpu_parallel(ctx, cpu_div_up(a->n, TASK_ELEMS), cast_cost(a) * (double)a->n,
               cast_task, (void *)a);
  return WGC_OK;
}

/* ---- pieces for the wasm32 queue (split.h): runs of whole blocks -------- */
wgc_status cpu_split_cast_plan(const wgc_cast_args *a, cpu_split *s) {
  s->work = cast_cost(a) * (double)a->n;
  /* runs of 32 elements: whole blocks of any type */
  s->group = 32 * cpu_fit(s, 32 * cast_cost(a), cpu_div_up(a->n, 32));
  s->pieces = cpu_div_up(a->n, s->group);
  return WGC_OK;
}

wgc_status cpu_split_cast_run(wgc_context *ctx, const wgc_cast_args *a,
                              cpu_split *s, size_t i) {
  (void)ctx;
  cast_range(a, i * s->group, cpu_min(a->n, (i + 1) * s->group));
  return WGC_OK;
}
