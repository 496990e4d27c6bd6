/* The WebGPU backend: device, memory, transfers, completions, and the
 * backend table; launches go through the engine (webgpu_engine.c). */
#include "webgpu.h"

#include "gpu/gpu_errors.h"
#include "kernels.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A download in flight; heap-allocated so that a completion arriving after
 * the context is gone (browser) finds it marked orphan and only frees it. */
typedef struct wg_transfer {
  struct wg_transfer *next;
  wg_state *st;
  gpu_id staging;
  void *dst;
  uint64_t bytes;
  wgc_pending *pending; /* NULL for the waiting form */
  bool done, orphan;
  wgc_status status;
} wg_transfer;

typedef struct wg_work_done {
  struct wg_work_done *next;
  wgc_pending *pending;
  bool orphan;
} wg_work_done;

static wg_state *state(const wgc_context *ctx) { return ctx->impl; }

const gpu_limits *wg_limits(const wgc_context *ctx) { return &state(ctx)->lim; }

/* ---- device ------------------------------------------------------------ */

static wgc_status finish_init(wgc_context *ctx) {
  wg_state *st = state(ctx);
  gpu_device_limits(st->dev, &st->lim);
  /* Half of llvmpipe's limit; it applies whichever kernel form runs. */
  st->lim.loop_budget = st->lim.cpu_adapter ? 32768u : 0u;
  /* Kernels for CPU adapters or for GPUs, as detected unless overridden
   * (tests run each family on whatever adapter they have). */
  const char *kernels = getenv("WGC_KERNELS");
  if (kernels && !strcmp(kernels, "gpu"))
    st->lim.cpu_adapter = false;
  else if (kernels && !strcmp(kernels, "cpu"))
    st->lim.cpu_adapter = true;
  /* Kernels index bindings with u32 element offsets. */
  if (st->lim.max_storage_binding_size > 0xFFFFFFFCu)
    st->lim.max_storage_binding_size = 0xFFFFFFFCu;
  size_t cap = ctx->opt.max_binding_bytes;
  if (cap && cap < st->lim.max_storage_binding_size)
    st->lim.max_storage_binding_size = cap < 4096 ? 4096 : cap & ~(size_t)255;
  gpu_device_name(st->dev, st->name, sizeof st->name);
  st->arena_host = calloc(1, WG_ARENA_BYTES);
  st->arena = gpu_buffer_create(st->dev, WG_ARENA_BYTES,
                                GPU_USAGE_UNIFORM | GPU_USAGE_COPY_DST);
  if (!st->arena_host || !st->arena)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_create: cannot allocate the parameter arena");
  return WGC_OK;
}

static void device_ready(wgc_status s, gpu_id dev, void *user) {
  wg_state *st = user;
  if (st->abandoned) { /* a wgc_create that could not wait returned */
    if (s == WGC_OK)
      gpu_device_release(dev);
    free(st);
    return;
  }
  st->request_done = true;
  st->request_status = s;
  st->dev = dev;
  if (st->init_done) { /* asynchronous creation */
    wgc_context *ctx = st->ctx;
    if (s == WGC_OK)
      s = finish_init(ctx);
    else
      wgc_fail(ctx, s, "wgc_create_async: %s",
               s == WGC_ERR_NO_ADAPTER ? "no WebGPU adapter was found"
                                       : "the WebGPU device request failed");
    void (*done)(wgc_context *, wgc_status) = st->init_done;
    if (s != WGC_OK)
      wgc_backend_webgpu.shutdown(ctx); /* frees st */
    done(ctx, s);
  }
}

static wgc_status wg_start(wgc_context *ctx, const wgc_options *opt,
                           void (*done)(wgc_context *, wgc_status)) {
  wg_state *st = calloc(1, sizeof *st);
  if (!st)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_create: cannot allocate the backend");
  ctx->impl = st;
  st->ctx = ctx;
  st->init_done = done;
  wgc_status s = gpu_request_device((int)opt->power, device_ready, st);
  if (s != WGC_OK) {
    free(st);
    ctx->impl = NULL;
    const char *why = gpu_runtime_problem();
    return wgc_fail(ctx, s, "wgc_create: no WebGPU runtime is available%s%s",
                    *why ? ": " : "", why);
  }
  return WGC_OK;
}

static wgc_status wg_init(wgc_context *ctx, const wgc_options *opt) {
  wgc_status s = wg_start(ctx, opt, NULL);
  if (s != WGC_OK)
    return s;
  wg_state *st = state(ctx);
  if (!st->request_done && !gpu_can_wait()) {
    /* The request stays in flight; its completion frees the state. */
    st->abandoned = true;
    ctx->impl = NULL;
    return wgc_fail(ctx, WGC_ERR_WOULD_BLOCK,
                    "wgc_create: creating a WebGPU context here needs "
                    "wgc_create_async");
  }
  while (!st->request_done)
    gpu_process_events(0, true);
  s = st->request_status;
  if (s != WGC_OK) {
    free(st);
    ctx->impl = NULL;
    return wgc_fail(ctx, s, "wgc_create: %s",
                    s == WGC_ERR_NO_ADAPTER ? "no WebGPU adapter was found"
                                            : "the WebGPU device request "
                                              "failed");
  }
  s = finish_init(ctx);
  if (s != WGC_OK)
    wgc_backend_webgpu.shutdown(ctx);
  return s;
}

static wgc_status wg_init_async(wgc_context *ctx, const wgc_options *opt,
                                void (*done)(wgc_context *, wgc_status)) {
  return wg_start(ctx, opt, done);
}

static const char *wg_adapter_name(const wgc_context *ctx) {
  return state(ctx)->name;
}

/* ---- memory ------------------------------------------------------------ */

static wgc_status wg_alloc(wgc_context *ctx, size_t bytes, void **out) {
  wg_state *st = state(ctx);
  if (bytes > st->lim.max_buffer_size)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_alloc: bytes %zu exceeds the device's largest buffer "
                    "(%" PRIu64 " bytes)",
                    bytes, st->lim.max_buffer_size);
  wg_mem *m = calloc(1, sizeof *m);
  if (!m)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "wgc_alloc: out of memory");
  m->size = bytes;
  m->buffer = gpu_buffer_create(st->dev, bytes,
                                GPU_USAGE_STORAGE | GPU_USAGE_COPY_SRC |
                                    GPU_USAGE_COPY_DST);
  if (!m->buffer) {
    free(m);
    wgc_status s = wg_device_error(ctx, "wgc_alloc");
    return s != WGC_OK ? s
                       : wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                                  "wgc_alloc: the device cannot allocate %zu "
                                  "bytes",
                                  bytes);
  }
  *out = m;
  return WGC_OK;
}

static void wg_free(wgc_context *ctx, void *mem) {
  (void)ctx;
  wg_mem *m = mem;
  /* Work recorded or submitted keeps the buffer alive until it is done. */
  gpu_buffer_release(m->buffer);
  free(m);
}

static wgc_status wg_upload(wgc_context *ctx, wgc_ref dst, const void *src,
                            size_t bytes) {
  wg_state *st = state(ctx);
  /* A queue write lands before every later submit: submit what is recorded
   * first, so the write cannot overtake earlier operations. */
  wg_flush(st);
  gpu_queue_write(st->dev, ((wg_mem *)dst.mem)->buffer, dst.offset, src, bytes);
  return wg_device_error(ctx, "wgc_upload");
}

static wgc_status wg_copy(wgc_context *ctx, wgc_ref dst, wgc_ref src,
                          size_t bytes) {
  wg_state *st = state(ctx);
  wg_mem *d = dst.mem, *s = src.mem;
  if (d->buffer == s->buffer)
    return wg_copy_kernel(ctx, dst, src, bytes);
  gpu_encoder_copy(wg_encoder(st), s->buffer, src.offset, d->buffer, dst.offset,
                   bytes);
  if (++st->dispatches >= WG_BATCH_DISPATCHES)
    wg_flush(st);
  return wg_device_error(ctx, "wgc_copy");
}

/* Records a copy of src into a fresh staging buffer and submits it. */
static wgc_status start_download(wgc_context *ctx, const char *fn, void *dst,
                                 wgc_ref src, size_t bytes, wgc_pending *p,
                                 wg_transfer **out);

static void download_mapped(wgc_status s, void *user) {
  wg_transfer *d = user;
  d->done = true;
  d->status = s;
  if (!d->orphan && s == WGC_OK)
    gpu_buffer_read(d->staging, 0, d->dst, d->bytes);
  gpu_buffer_release(d->staging);
  d->staging = 0;
  if (d->orphan) {
    free(d);
    return;
  }
  if (d->pending) {
    wg_state *st = d->st;
    wgc_pending_complete(d->pending, s == WGC_OK ? WGC_OK : WGC_ERR_DEVICE);
    /* unlink and free */
    for (wg_transfer **link = &st->downloads; *link; link = &(*link)->next)
      if (*link == d) {
        *link = d->next;
        break;
      }
    free(d);
  }
}

static wgc_status start_download(wgc_context *ctx, const char *fn, void *dst,
                                 wgc_ref src, size_t bytes, wgc_pending *p,
                                 wg_transfer **out) {
  wg_state *st = state(ctx);
  wg_transfer *d = calloc(1, sizeof *d);
  if (!d)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  d->st = st;
  d->dst = dst;
  d->bytes = bytes;
  d->pending = p;
  d->staging = gpu_buffer_create(st->dev, bytes,
                                 GPU_USAGE_MAP_READ | GPU_USAGE_COPY_DST);
  if (!d->staging) {
    free(d);
    wgc_status s = wg_device_error(ctx, fn);
    return s != WGC_OK ? s
                       : wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                                  "%s: cannot allocate %zu bytes of staging "
                                  "memory",
                                  fn, bytes);
  }
  gpu_encoder_copy(wg_encoder(st), ((wg_mem *)src.mem)->buffer, src.offset,
                   d->staging, 0, bytes);
  wg_flush(st);
  wgc_status s = wg_device_error(ctx, fn);
  if (s != WGC_OK) {
    gpu_buffer_release(d->staging);
    free(d);
    return s;
  }
  d->next = st->downloads;
  st->downloads = d;
  gpu_buffer_map_read(d->staging, 0, bytes, download_mapped, d);
  *out = d;
  return WGC_OK;
}

static wgc_status wg_download(wgc_context *ctx, void *dst, wgc_ref src,
                              size_t bytes) {
  if (!gpu_can_wait())
    return WGC_ERR_WOULD_BLOCK;
  wg_state *st = state(ctx);
  wg_transfer *d;
  wgc_status s = start_download(ctx, "wgc_download", dst, src, bytes, NULL, &d);
  if (s != WGC_OK)
    return s;
  while (!d->done)
    gpu_process_events(st->dev, true);
  s = d->status;
  for (wg_transfer **link = &st->downloads; *link; link = &(*link)->next)
    if (*link == d) {
      *link = d->next;
      break;
    }
  free(d);
  if (s != WGC_OK) {
    wgc_status e = wg_device_error(ctx, "wgc_download");
    return e != WGC_OK ? e
                       : wgc_fail(ctx, WGC_ERR_DEVICE,
                                  "wgc_download: mapping the result failed");
  }
  return WGC_OK;
}

static wgc_status wg_download_async(wgc_context *ctx, void *dst, wgc_ref src,
                                    size_t bytes, wgc_pending *p) {
  wg_transfer *d;
  return start_download(ctx, "wgc_download_async", dst, src, bytes, p, &d);
}

static wgc_status wg_synchronize(wgc_context *ctx) {
  if (!gpu_can_wait())
    return WGC_ERR_WOULD_BLOCK;
  wg_state *st = state(ctx);
  wg_flush(st);
  gpu_process_events(st->dev, true);
  /* Maps requested before complete once their copies are done. */
  for (;;) {
    bool waiting = false;
    for (wg_transfer *d = st->downloads; d; d = d->next)
      waiting |= !d->done;
    for (wg_work_done *w = st->works; w; w = w->next)
      waiting |= w->pending != NULL;
    if (!waiting)
      break;
    gpu_process_events(st->dev, true);
  }
  return wg_device_error(ctx, "wgc_synchronize");
}

static void work_done(wgc_status s, void *user) {
  wg_work_done *w = user;
  if (w->orphan) {
    free(w);
    return;
  }
  wgc_pending_complete(w->pending, s == WGC_OK ? WGC_OK : WGC_ERR_DEVICE);
  w->pending = NULL; /* wg_poll unlinks and frees it */
}

static wgc_status wg_synchronize_async(wgc_context *ctx, wgc_pending *p) {
  wg_state *st = state(ctx);
  wg_work_done *w = calloc(1, sizeof *w);
  if (!w)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_synchronize_async: out of memory");
  w->pending = p;
  wg_flush(st);
  w->next = st->works;
  st->works = w;
  gpu_on_work_done(st->dev, work_done, w);
  return WGC_OK;
}

static wgc_status wg_poll(wgc_context *ctx) {
  wg_state *st = state(ctx);
  gpu_process_events(st->dev, false);
  for (wg_work_done **link = &st->works; *link;) {
    wg_work_done *w = *link;
    if (!w->pending) {
      *link = w->next;
      free(w);
    } else {
      link = &w->next;
    }
  }
  return wg_device_error(ctx, "wgc_poll");
}

static void wg_shutdown(wgc_context *ctx) {
  wg_state *st = state(ctx);
  if (!st)
    return;
  if (st->dev) {
    wg_flush(st);
    if (gpu_can_wait())
      gpu_process_events(st->dev, true);
  }
  /* Completions still in flight (browser) find their records orphaned. */
  for (wg_transfer *d = st->downloads, *next; d; d = next) {
    next = d->next;
    if (d->done)
      free(d);
    else
      d->orphan = true;
  }
  for (wg_work_done *w = st->works, *next; w; w = next) {
    next = w->next;
    if (!w->pending)
      free(w);
    else
      w->orphan = true;
  }
  for (size_t i = 0; i < st->pipe_count; i++) {
    gpu_pipeline_release(st->pipes[i].id);
    free(st->pipes[i].key);
  }
  free(st->pipes);
  if (st->arena)
    gpu_buffer_release(st->arena);
  free(st->arena_host);
  free(st->scratch);
  if (st->dev)
    gpu_device_release(st->dev);
  free(st);
  ctx->impl = NULL;
}

static size_t wg_pipelines_compiled(const wgc_context *ctx) {
  return state(ctx)->compiled;
}

/* Each op runs inside a scope so that a flush in the middle of it (a full
 * batch) keeps the scratch memory its later launches use. */
#define WG_OP_SCOPE(op, args_type)                                             \
  static wgc_status scoped_##op(wgc_context *ctx, const args_type *a) {        \
    wg_state *st = state(ctx);                                                 \
    st->in_op = true;                                                          \
    wgc_status s = wg_##op(ctx, a);                                            \
    st->in_op = false;                                                         \
    return s;                                                                  \
  }
WG_OP_SCOPE(gemm, wgc_gemm_args)
WG_OP_SCOPE(conv2d, wgc_conv2d_args)
WG_OP_SCOPE(attention, wgc_attention_args)
WG_OP_SCOPE(reduce, wgc_reduce_args)
WG_OP_SCOPE(unary, wgc_unary_args)
WG_OP_SCOPE(binary, wgc_binary_args)

const wgc_backend_ops wgc_backend_webgpu = {
    .name = "webgpu",
    .init = wg_init,
    .init_async = wg_init_async,
    .shutdown = wg_shutdown,
    .adapter_name = wg_adapter_name,
    .alloc = wg_alloc,
    .free = wg_free,
    .upload = wg_upload,
    .download = wg_download,
    .download_async = wg_download_async,
    .copy = wg_copy,
    .synchronize = wg_synchronize,
    .synchronize_async = wg_synchronize_async,
    .poll = wg_poll,
    .gemm = scoped_gemm,
    .conv2d = scoped_conv2d,
    .attention = scoped_attention,
    .reduce = scoped_reduce,
    .unary = scoped_unary,
    .binary = scoped_binary,
    .pipelines_compiled = wg_pipelines_compiled,
};
