/* The CPU reference backend: host memory, a thread pool for the operations
 * (<family>.c), and work issued as values (work.h) that defer.h runs
 * inside the call natively, or in slices between events in the browser. */
#include "cpu.h"
#include "defer.h"

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

wgc_status cpu_work_run(wgc_context *ctx, const cpu_work *w) {
  switch (w->kind) {
  case CPU_WORK_GEMM:
    return cpu_gemm(ctx, &w->u.gemm);
  case CPU_WORK_CONV2D:
    return cpu_conv2d(ctx, &w->u.conv);
  case CPU_WORK_ATTENTION:
    return cpu_attention(ctx, &w->u.attn);
  case CPU_WORK_REDUCE:
    return cpu_reduce(ctx, &w->u.reduce);
  case CPU_WORK_UNARY:
    return cpu_unary(ctx, &w->u.unary);
  case CPU_WORK_BINARY:
    return cpu_binary(ctx, &w->u.binary);
  case CPU_WORK_COPY_STRIDED:
    return cpu_copy_strided(ctx, &w->u.copy_strided);
  case CPU_WORK_GATHER:
    return cpu_gather(ctx, &w->u.gather);
  case CPU_WORK_WHERE:
    return cpu_where(ctx, &w->u.where);
  case CPU_WORK_NORM:
    return cpu_norm(ctx, &w->u.norm);
  case CPU_WORK_ROTARY:
    return cpu_rotary(ctx, &w->u.rotary);
  case CPU_WORK_POOL2D:
    return cpu_pool2d(ctx, &w->u.pool2d);
  case CPU_WORK_UPLOAD:
    memcpy(cpu_ptr(w->u.mem.dst), w->u.mem.host_src, w->u.mem.bytes);
    return WGC_OK;
  case CPU_WORK_COPY:
    /* The front end rejects overlap; memmove costs nothing extra anyway. */
    memmove(cpu_ptr(w->u.mem.dst), cpu_ptr(w->u.mem.src), w->u.mem.bytes);
    return WGC_OK;
  case CPU_WORK_DOWNLOAD:
    memcpy(w->u.mem.host_dst, cpu_ptr(w->u.mem.src), w->u.mem.bytes);
    wgc_pending_complete(w->u.mem.done, WGC_OK); /* fired later */
    return WGC_OK;
  case CPU_WORK_SYNC:
    wgc_pending_complete(w->u.mem.done, WGC_OK);
    return WGC_OK;
  case CPU_WORK_FREE:
    free(w->u.mem.mem);
    return WGC_OK;
  }
  return WGC_OK;
}

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

static size_t cpu_pipelines_compiled(const wgc_context *ctx) {
  (void)ctx;
  return 0;
}

#define CPU_OP(name, work_kind, type, field)                                   \
  static wgc_status cpu_submit_##name(wgc_context *ctx, const type *a) {       \
    return cpu_defer_submit(ctx,                                               \
                            &(cpu_work){.kind = work_kind, .u.field = *a});    \
  }
CPU_OP(gemm, CPU_WORK_GEMM, wgc_gemm_args, gemm)
CPU_OP(conv2d, CPU_WORK_CONV2D, wgc_conv2d_args, conv)
CPU_OP(attention, CPU_WORK_ATTENTION, wgc_attention_args, attn)
CPU_OP(reduce, CPU_WORK_REDUCE, wgc_reduce_args, reduce)
CPU_OP(unary, CPU_WORK_UNARY, wgc_unary_args, unary)
CPU_OP(binary, CPU_WORK_BINARY, wgc_binary_args, binary)
CPU_OP(copy_strided, CPU_WORK_COPY_STRIDED, wgc_copy_strided_args, copy_strided)
CPU_OP(gather, CPU_WORK_GATHER, wgc_gather_args, gather)
CPU_OP(where, CPU_WORK_WHERE, wgc_where_args, where)
CPU_OP(norm, CPU_WORK_NORM, wgc_norm_args, norm)
CPU_OP(rotary, CPU_WORK_ROTARY, wgc_rotary_args, rotary)
CPU_OP(pool2d, CPU_WORK_POOL2D, wgc_pool2d_args, pool2d)
#undef CPU_OP

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
    .gemm = cpu_submit_gemm,
    .conv2d = cpu_submit_conv2d,
    .attention = cpu_submit_attention,
    .reduce = cpu_submit_reduce,
    .unary = cpu_submit_unary,
    .binary = cpu_submit_binary,
    .copy_strided = cpu_submit_copy_strided,
    .gather = cpu_submit_gather,
    .where = cpu_submit_where,
    .norm = cpu_submit_norm,
    .rotary = cpu_submit_rotary,
    .pool2d = cpu_submit_pool2d,
    .pipelines_compiled = cpu_pipelines_compiled,
};
