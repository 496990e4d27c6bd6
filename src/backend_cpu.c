/* The CPU reference backend: host memory, synchronous work, a thread pool
 * for the operations (cpu_*.c). */
#include "cpu_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CPU_ALIGN 64

static cpu_backend *impl_of(const wgc_context *ctx) { return ctx->impl; }

unsigned cpu_workers(const wgc_context *ctx, size_t n_tasks, double work) {
  unsigned threads = impl_of(ctx)->threads;
  if (work < CPU_SERIAL_WORK || n_tasks <= 1 || threads <= 1)
    return 1;
  return n_tasks < threads ? (unsigned)n_tasks : threads;
}

void cpu_parallel(wgc_context *ctx, size_t n_tasks, double work, cpu_task_fn fn,
                  void *arg) {
  if (cpu_workers(ctx, n_tasks, work) == 1) {
    for (size_t t = 0; t < n_tasks; t++)
      fn(arg, t, 0);
    return;
  }
  cpu_pool_for(impl_of(ctx)->pool, n_tasks, fn, arg);
}

static wgc_status cpu_init(wgc_context *ctx, const wgc_options *opt) {
  cpu_backend *be = calloc(1, sizeof *be);
  if (!be)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_create: out of memory for the CPU backend");
  be->pool = cpu_pool_create(opt ? opt->cpu_threads : 0);
  if (!be->pool) {
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

/* Work is synchronous, so nothing queued can still use mem. */
static void cpu_free(wgc_context *ctx, void *mem) {
  (void)ctx;
  free(mem);
}

static wgc_status cpu_upload(wgc_context *ctx, wgc_ref dst, const void *src,
                             size_t bytes) {
  (void)ctx;
  memcpy(cpu_ptr(dst), src, bytes);
  return WGC_OK;
}

static wgc_status cpu_download(wgc_context *ctx, void *dst, wgc_ref src,
                               size_t bytes) {
  (void)ctx;
  memcpy(dst, cpu_ptr(src), bytes);
  return WGC_OK;
}

static wgc_status cpu_download_async(wgc_context *ctx, void *dst, wgc_ref src,
                                     size_t bytes, wgc_pending *p) {
  (void)ctx;
  memcpy(dst, cpu_ptr(src), bytes);
  wgc_pending_complete(p, WGC_OK); /* the front end fires it later */
  return WGC_OK;
}

static wgc_status cpu_copy(wgc_context *ctx, wgc_ref dst, wgc_ref src,
                           size_t bytes) {
  (void)ctx;
  /* The front end rejects overlap; memmove costs nothing extra anyway. */
  memmove(cpu_ptr(dst), cpu_ptr(src), bytes);
  return WGC_OK;
}

static wgc_status cpu_synchronize(wgc_context *ctx) {
  (void)ctx;
  return WGC_OK;
}

static wgc_status cpu_synchronize_async(wgc_context *ctx, wgc_pending *p) {
  (void)ctx;
  wgc_pending_complete(p, WGC_OK);
  return WGC_OK;
}

static wgc_status cpu_poll(wgc_context *ctx) {
  (void)ctx;
  return WGC_OK;
}

static size_t cpu_pipelines_compiled(const wgc_context *ctx) {
  (void)ctx;
  return 0;
}

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
    .gemm = cpu_gemm,
    .conv2d = cpu_conv2d,
    .attention = cpu_attention,
    .reduce = cpu_reduce,
    .unary = cpu_unary,
    .binary = cpu_binary,
    .pipelines_compiled = cpu_pipelines_compiled,
};
