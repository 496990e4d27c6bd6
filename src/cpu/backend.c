/* The CPU reference backend's table: host memory, and every operation
 * issued as a work value (work.h) that defer.h runs inside the call
 * natively, or in slices between events in the browser. The families
 * (<family>.c) and the pool's helpers (parallel.c) sit below it. */
#include "cpu.h"
#include "defer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CPU_ALIGN 64

static cpu_backend *impl_of(const wgc_context *ctx) { return ctx->impl; }

static wgc_status cpu_init(wgc_context *ctx, const wgc_options *opt) {
  cpu_backend *be = calloc(1, sizeof *be);
  if (!be)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_create: out of memory for the CPU backend");
  be->pool = cpu_pool_create(opt ? opt->cpu_threads : 0);
  be->queue = be->pool ? cpu_defer_create() : NULL;
  if (!be->queue) {
    cpu_pool_destroy(be->pool);
    free(be);
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_create: out of memory for the CPU thread pool");
  }
  be->threads = cpu_pool_threads(be->pool);
  snprintf(be->adapter, sizeof be->adapter, "cpu (%u thread%s)", be->threads,
           be->threads == 1 ? "" : "s");
  ctx->impl = be;
  return WGC_OK;
}

static void cpu_shutdown(wgc_context *ctx) {
  cpu_backend *be = impl_of(ctx);
  if (!be)
    return;
  cpu_defer_destroy(be->queue);
  cpu_pool_destroy(be->pool);
  free(be);
  ctx->impl = NULL;
}

static const char *cpu_adapter_name(const wgc_context *ctx) {
  return impl_of(ctx)->adapter;
}

static wgc_status cpu_alloc(wgc_context *ctx, size_t bytes, void **mem) {
  /* aligned_alloc wants a multiple of the alignment. */
  size_t rounded = (bytes + CPU_ALIGN - 1) & ~(size_t)(CPU_ALIGN - 1);
  void *p = rounded >= bytes ? aligned_alloc(CPU_ALIGN, rounded) : NULL;
  if (!p)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_alloc: %zu bytes of host memory are not available",
                    bytes);
  memset(p, 0, rounded);
  *mem = p;
  return WGC_OK;
}

/* Released once the work issued before it, which may use mem, has run. */
static void cpu_free(wgc_context *ctx, void *mem) {
  cpu_defer_submit(ctx, &(cpu_work){.kind = CPU_WORK_FREE, .u.mem.mem = mem});
}

static wgc_status cpu_upload(wgc_context *ctx, wgc_ref dst, const void *src,
                             size_t bytes) {
  return cpu_defer_submit(
      ctx, &(cpu_work){.kind = CPU_WORK_UPLOAD,
                       .u.mem = {.dst = dst, .host_src = src, .bytes = bytes}});
}

static wgc_status cpu_download(wgc_context *ctx, void *dst, wgc_ref src,
                               size_t bytes) {
  wgc_status s = cpu_defer_wait(ctx);
  if (s == WGC_OK)
    memcpy(dst, cpu_ptr(src), bytes);
  return s;
}

static wgc_status cpu_download_async(wgc_context *ctx, void *dst, wgc_ref src,
                                     size_t bytes, wgc_pending *p) {
  return cpu_defer_submit(
      ctx,
      &(cpu_work){
          .kind = CPU_WORK_DOWNLOAD,
          .u.mem = {.src = src, .host_dst = dst, .bytes = bytes, .done = p}});
}

static wgc_status cpu_copy(wgc_context *ctx, wgc_ref dst, wgc_ref src,
                           size_t bytes) {
  return cpu_defer_submit(
      ctx, &(cpu_work){.kind = CPU_WORK_COPY,
                       .u.mem = {.dst = dst, .src = src, .bytes = bytes}});
}

static wgc_status cpu_synchronize(wgc_context *ctx) {
  return cpu_defer_wait(ctx);
}

static wgc_status cpu_synchronize_async(wgc_context *ctx, wgc_pending *p) {
  return cpu_defer_submit(ctx,
                          &(cpu_work){.kind = CPU_WORK_SYNC, .u.mem.done = p});
}

/* Queued work advances from the event loop, never from a poll. */
static wgc_status cpu_poll(wgc_context *ctx) {
  (void)ctx;
  return WGC_OK;
}

static void cpu_time_op(wgc_context *ctx, wgc_op_timer *t,
                        enum wgc_time_phase phase) {
  if (phase == WGC_TIME_END)
    cpu_defer_time(ctx, t);
}

static size_t cpu_pipelines_compiled(const wgc_context *ctx) {
  (void)ctx;
  return 0;
}

/* Each op family is issued as a work value, in order with memory steps;
 * compiling ahead, there is nothing to compile and nothing runs. */
#define CPU_SUBMIT_(NAME, name)                                                \
  static wgc_status cpu_submit_##name(wgc_context *ctx,                        \
                                      const wgc_##name##_args *a) {            \
    if (ctx->compiling)                                                        \
      return WGC_OK;                                                           \
    return cpu_defer_submit(                                                   \
        ctx, &(cpu_work){.kind = CPU_WORK_##NAME, .u.name = *a});              \
  }
WGC_OP_FAMILIES(CPU_SUBMIT_)
#undef CPU_SUBMIT_

const wgc_backend_ops wgc_backend_cpu = {
    .name = "cpu",
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .adapter_name = cpu_adapter_name,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_upload,
    .download = cpu_download,
    .download_async = cpu_download_async,
    .copy = cpu_copy,
    .synchronize = cpu_synchronize,
    .synchronize_async = cpu_synchronize_async,
    .poll = cpu_poll,
#define CPU_MEMBER_(NAME, name) .name = cpu_submit_##name,
    WGC_OP_FAMILIES(CPU_MEMBER_)
#undef CPU_MEMBER_
        .pipelines_compiled = cpu_pipelines_compiled,
    .time_op = cpu_time_op,
};
