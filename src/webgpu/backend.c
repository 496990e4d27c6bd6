/* The WebGPU backend: device, memory, transfers, completions, and the
 * backend table; launches go through the engine (webgpu/engine.c). */
#include "plan.h"

#include "gpu/gpu_errors.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A completion in flight: a download (slab != NULL) or a work-done
 * notification. Heap-allocated so that one arriving after the context is
 * gone (browser) finds it marked orphan and only frees it; doubly linked so
 * that finishing one costs O(1) however many are outstanding. */
typedef struct wg_transfer {
  struct wg_transfer *prev, *next;
  wg_state *st;
  struct wg_slab *slab; /* a download's staging; NULL for a work-done */
  struct wg_transfer *slab_next;
  uint64_t offset; /* in the slab */
  void *dst;
  uint64_t bytes;
  wgc_pending *pending; /* NULL for the waiting form */
  bool done, orphan;
  bool dropped; /* its call failed after the copy: only the slab holds it */
  wgc_status status;
} wg_transfer;

static void transfer_link(wg_state *st, wg_transfer *t) {
  t->prev = NULL;
  t->next = st->transfers;
  if (st->transfers)
    st->transfers->prev = t;
  st->transfers = t;
  st->outstanding++;
}

static void transfer_unlink(wg_state *st, wg_transfer *t) {
  if (t->prev)
    t->prev->next = t->next;
  else
    st->transfers = t->next;
  if (t->next)
    t->next->prev = t->prev;
  t->prev = t->next = NULL;
}

/* What a completion's status means to the user: loss stays loss. */
static wgc_status user_status(wgc_status s) {
  return s == WGC_OK || s == WGC_ERR_DEVICE_LOST ? s : WGC_ERR_DEVICE;
}

static wg_state *state(const wgc_context *ctx) { return ctx->impl; }

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
  gpu_device_cache_status(st->dev, st->cache_status, sizeof st->cache_status);
  wg_policy_init(st);
  /* GEMM blocks slow to compile start with a cheaper one standing in
   * (gemm_select.c); WGC_GEMM_EAGER=1 compiles the best block at once, for
   * long runs and benchmarks that measure the steady state. */
  const char *eager = getenv("WGC_GEMM_EAGER");
  st->gemm_compile_scale = eager && !strcmp(eager, "1") ? 0.0 : 1.0;
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
  wgc_status s = gpu_request_device((int)opt->power,
                                    opt->profile ? GPU_FEATURE_TIMESTAMPS : 0,
                                    opt->pipeline_cache, device_ready, st);
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

/* Address space a call into the runtime may need on the host. wgpu aborts
 * the process when a host allocation fails (seen under RLIMIT_AS with 32
 * MiB to spare), which no status can report, so transfers and operations
 * under a tighter cap fail first. Allocations need no check: a buffer the
 * driver cannot back fails cleanly. */
#define WG_HOST_HEADROOM ((size_t)64 << 20)

static wgc_status wg_headroom(wgc_context *ctx, const char *fn) {
  if (gpu_host_headroom(WG_HOST_HEADROOM))
    return WGC_OK;
  return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                  "%s: under the address-space cap (RLIMIT_AS) less than %zu "
                  "MiB is left, which the WebGPU runtime may need on the host "
                  "(it aborts the process when it cannot get it)",
                  fn, WG_HOST_HEADROOM >> 20);
}

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
  /* whole words: a kernel writing 2-byte elements (wgc_cast) binds the
   * word holding an allocation's last bytes */
  m->size = (bytes + 3) & ~(uint64_t)3;
  wgc_status s =
      wg_buffer_new(ctx, "wgc_alloc", m->size,
                    GPU_USAGE_STORAGE | GPU_USAGE_COPY_SRC | GPU_USAGE_COPY_DST,
                    "device memory", &m->buffer);
  if (s != WGC_OK) {
    free(m);
    return s;
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
  wgc_status hs = wg_headroom(ctx, "wgc_upload");
  if (hs != WGC_OK)
    return hs;
  wg_state *st = state(ctx);
  /* A queue write lands before every later submit: submit what is recorded
   * first, so the write cannot overtake earlier operations. */
  wg_flush(st);
  gpu_queue_write(st->dev, ((wg_mem *)dst.mem)->buffer, dst.offset, src, bytes);
  /* Uploads with no work between them would hold their staging memory
   * (and freed buffers) until some later submit: an empty one every batch
   * of writes releases it. */
  if (++st->writes >= WG_BATCH_DISPATCHES) {
    wg_encoder(st);
    wg_flush(st);
  }
  return wg_device_error(ctx, "wgc_upload");
}

static wgc_status wg_copy(wgc_context *ctx, wgc_ref dst, wgc_ref src,
                          size_t bytes) {
  wgc_status hs = wg_headroom(ctx, "wgc_copy");
  if (hs != WGC_OK)
    return hs;
  wg_plan plan;
  wg_plan_init(&plan, ctx, "wgc_copy");
  return wg_plan_finish(&plan, wg_plan_copy(&plan, dst, src, bytes));
}

/* ---- downloads ----------------------------------------------------------- */

/* Downloads go through staging slabs. Natively, small downloads share one
 * MAP_READ buffer, recorded into the current batch, until that batch is
 * submitted (wg_flush seals the slab and maps it once, calling
 * slab_mapped): N downloads cost a
 * few buffers and maps rather than N of each. One buffer per download made
 * N outstanding downloads cost O(N^2), as the runtime sizes each command
 * buffer's resource tracking by the number of live buffers. Large
 * downloads, and every download in the browser (where nothing may be left
 * for a later poll to submit), get a slab of their own, mapped at once.
 * Slabs of WG_SLAB_BYTES (small downloads' own ones too) hand their buffer
 * to the next once read: making and releasing one for each small download
 * cost the browser's round trip some microseconds at both ends. */
#define WG_SLAB_BYTES (4u * 1024u)

static void slab_unlink(wg_state *st, wg_slab *sl) {
  if (sl->prev)
    sl->prev->next = sl->next;
  else
    st->slabs = sl->next;
  if (sl->next)
    sl->next->prev = sl->prev;
  if (st->open == sl)
    st->open = NULL;
}

static void slab_mapped(wgc_status s, void *user) {
  wg_slab *sl = user;
  if (!sl->orphan && s == WGC_OK) {
    size_t n = 0;
    for (wg_transfer *t = sl->first; t; t = t->slab_next)
      n += !t->dropped;
    gpu_read *r = calloc(n ? n : 1, sizeof *r);
    if (r) {
      size_t i = 0;
      for (wg_transfer *t = sl->first; t; t = t->slab_next)
        if (!t->dropped)
          r[i++] = (gpu_read){t->offset, t->dst, t->bytes};
      gpu_buffer_read_many(sl->buf, r, n);
      free(r);
    } else {
      s = WGC_ERR_OUT_OF_MEMORY;
      gpu_buffer_read_many(sl->buf, NULL, 0); /* unmaps */
    }
  }
  if (!sl->orphan && s == WGC_OK && sl->size == WG_SLAB_BYTES &&
      !sl->st->spare_staging)
    sl->st->spare_staging = sl->buf;
  else
    gpu_buffer_release(sl->buf);
  if (!sl->orphan) {
    wg_state *st = sl->st;
    slab_unlink(st, sl);
    for (wg_transfer *t = sl->first, *next; t; t = next) {
      next = t->slab_next;
      if (t->dropped) {
        free(t);
        continue;
      }
      t->done = true;
      t->status = s;
      st->outstanding--;
      if (t->pending) { /* the waiting form frees its own */
        wgc_pending_complete(t->pending, user_status(s));
        transfer_unlink(st, t);
        free(t);
      }
    }
  }
  free(sl);
}

void wg_describe(const wgc_context *ctx, char *out, size_t size) {
  const wg_state *st = state(ctx);
  unsigned slabs = 0, unsealed = 0;
  for (const wg_slab *sl = st->slabs; sl; sl = sl->next) {
    slabs++;
    unsealed += !sl->sealed;
  }
  char gpu[256];
  gpu_describe(st->dev, gpu, sizeof gpu);
  snprintf(out, size,
           "outstanding %zu, staging slabs %u (%u not sealed), batch %s; "
           "%s",
           st->outstanding, slabs, unsealed, st->enc ? "open" : "empty", gpu);
}

static wgc_status slab_new(wgc_context *ctx, const char *fn, uint64_t size,
                           wg_slab **out) {
  wg_state *st = state(ctx);
  wg_slab *sl = calloc(1, sizeof *sl);
  if (!sl)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  sl->st = st;
  sl->size = size;
  sl->mapped = slab_mapped;
  if (size == WG_SLAB_BYTES && st->spare_staging) {
    sl->buf = st->spare_staging;
    st->spare_staging = 0;
  } else {
    wgc_status s =
        wg_buffer_new(ctx, fn, size, GPU_USAGE_MAP_READ | GPU_USAGE_COPY_DST,
                      "staging memory", &sl->buf);
    if (s != WGC_OK) {
      free(sl);
      return s;
    }
  }
  sl->next = st->slabs;
  if (st->slabs)
    st->slabs->prev = sl;
  st->slabs = sl;
  *out = sl;
  return WGC_OK;
}

/* Records a copy of src into a staging slab; the slab is mapped once the
 * batch holding the copy is submitted. */
static wgc_status start_download(wgc_context *ctx, const char *fn, void *dst,
                                 wgc_ref src, size_t bytes, wgc_pending *p,
                                 wg_transfer **out) {
  wg_state *st = state(ctx);
  /* a lost device never maps: refuse rather than owe a callback */
  wgc_status s = wg_device_error(ctx, fn);
  if (s == WGC_OK)
    s = wg_headroom(ctx, fn);
  if (s != WGC_OK)
    return s;
  wg_transfer *t = calloc(1, sizeof *t);
  if (!t)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  t->st = st;
  t->dst = dst;
  t->bytes = bytes;
  t->pending = p;
  bool own = !gpu_can_wait() || bytes > WG_SLAB_BYTES / 4;
  wg_slab *sl = own ? NULL : st->open;
  if (sl && sl->used + bytes > sl->size) {
    wg_flush(st); /* submits and seals it */
    sl = NULL;
  }
  if (!sl) {
    s = slab_new(ctx, fn, own && bytes > WG_SLAB_BYTES ? bytes : WG_SLAB_BYTES,
                 &sl);
    if (s != WGC_OK) {
      free(t);
      return s;
    }
    if (!own)
      st->open = sl;
  }
  t->slab = sl;
  t->offset = sl->used;
  sl->used += bytes;
  if (sl->last)
    sl->last->slab_next = t;
  else
    sl->first = t;
  sl->last = t;
  gpu_encoder_copy(wg_encoder(st), ((wg_mem *)src.mem)->buffer, src.offset,
                   sl->buf, t->offset, bytes);
  s = wg_device_error(ctx, fn);
  if (s != WGC_OK) { /* the slab frees it; nothing is owed */
    t->dropped = true;
    t->pending = NULL;
    return s;
  }
  transfer_link(st, t);
  if (own)
    wg_flush(st);
  *out = t;
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
  wg_flush(st);
  while (!d->done)
    gpu_process_events(st->dev, true);
  s = d->status;
  transfer_unlink(st, d);
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
  if (st->writes)
    wg_encoder(st); /* a submit carries the writes, so they complete */
  wg_flush(st);
  /* One wait covers every completion registered so far (the GPU layer
   * waits for all of them); a callback run meanwhile may add more. */
  size_t before;
  do {
    before = st->outstanding;
    gpu_process_events(st->dev, true);
  } while (st->outstanding && st->outstanding < before);
  return wg_device_error(ctx, "wgc_synchronize");
}

static void work_done(wgc_status s, void *user) {
  wg_transfer *w = user;
  if (w->orphan) {
    free(w);
    return;
  }
  w->st->outstanding--;
  wgc_pending_complete(w->pending, user_status(s));
  transfer_unlink(w->st, w);
  free(w);
}

static wgc_status wg_synchronize_async(wgc_context *ctx, wgc_pending *p) {
  wg_state *st = state(ctx);
  /* a lost device never finishes anything: refuse rather than owe */
  wgc_status s = wg_device_error(ctx, "wgc_synchronize_async");
  if (s != WGC_OK)
    return s;
  wg_transfer *w = calloc(1, sizeof *w);
  if (!w)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_synchronize_async: out of memory");
  w->st = st;
  w->pending = p;
  wg_flush(st);
  transfer_link(st, w);
  gpu_on_work_done(st->dev, work_done, w);
  return WGC_OK;
}

static wgc_status wg_compile_ahead(wgc_context *ctx, const char *fn,
                                   wgc_pending *p) {
  wg_state *st = state(ctx);
  wgc_status s = wg_pipelines_compile_ahead(ctx, fn);
  if (s != WGC_OK || !p)
    return s;
  wg_transfer *w = calloc(1, sizeof *w);
  if (!w)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  w->st = st;
  w->pending = p;
  transfer_link(st, w);
  gpu_pipelines_ready(st->dev, work_done, w);
  return WGC_OK;
}

static void wg_counters(const wgc_context *ctx, uint64_t *launches,
                        uint64_t *submits) {
  *launches = state(ctx)->launch_total;
  *submits = state(ctx)->submit_total;
}

/* A timed op's completions: the work-done one, which the GPU layer stamps
 * with the host clock when the runtime reports it (a late poll does not
 * lengthen the op), and, with timestamp queries, the map of the two GPU
 * clock readings; done fires once both arrived. */
typedef struct wg_timed {
  wgc_op_timer *t;
  wg_state *st;
  double end;
  gpu_id enc;          /* the encoder holding the first timestamp */
  uint64_t submits;    /* st->submit_total when it was written */
  gpu_id resolve, map; /* the readings: resolved, then copied to map */
  unsigned waiting;    /* completions still to come */
  wgc_status status;
} wg_timed;

static void timed_finish(wg_timed *w, wgc_status s) {
  if (s != WGC_OK && w->status == WGC_OK)
    w->status = s;
  if (--w->waiting)
    return;
  wgc_op_timer *t = w->t;
  t->end_us = w->end;
  wgc_status status = w->status;
  free(w);
  t->done(t, status);
}

static void timed_done(wgc_status s, void *user) {
  timed_finish(user, user_status(s));
}

static void timed_mapped(wgc_status s, void *user) {
  wg_timed *w = user;
  if (s == WGC_OK) {
    uint64_t ticks[2];
    gpu_buffer_read(w->map, 0, ticks, sizeof ticks);
    double period = gpu_timestamp_period(w->st->dev);
    /* a reading the GPU did not order (or a wrapped clock) is no time */
    if (ticks[1] >= ticks[0]) {
      w->t->gpu_timed = true;
      w->t->gpu_us = (double)(ticks[1] - ticks[0]) * period / 1e3;
    }
  }
  gpu_buffer_release(w->map);
  timed_finish(w, WGC_OK); /* the op's status is the work-done one's */
}

/* Records the second timestamp and its readback when the op's work all
 * went into the encoder holding the first; false leaves it to
 * submit-to-done. */
static bool timed_readback(wg_state *st, wg_timed *w) {
  if (!w->enc || st->enc != w->enc || st->submit_total != w->submits)
    return false;
  w->resolve = gpu_buffer_create(st->dev, 256,
                                 GPU_USAGE_QUERY_RESOLVE | GPU_USAGE_COPY_SRC);
  w->map = w->resolve
               ? gpu_buffer_create(st->dev, 16,
                                   GPU_USAGE_MAP_READ | GPU_USAGE_COPY_DST)
               : 0;
  if (!w->map) {
    if (w->resolve)
      gpu_buffer_release(w->resolve);
    char why[8];
    gpu_take_error(st->dev, why, sizeof why); /* timing is best effort */
    return false;
  }
  gpu_encoder_timestamp(w->enc, 1);
  gpu_encoder_resolve_timestamps(w->enc, w->resolve, 0);
  gpu_encoder_copy(w->enc, w->resolve, 0, w->map, 0, 16);
  return true;
}

/* BEGIN writes the GPU's clock before the op's first launch (timestamp
 * queries); END submits the op alone and waits, through completions, for
 * the queue to report it done (and for the clock readings). */
static void wg_time_op(wgc_context *ctx, wgc_op_timer *t,
                       enum wgc_time_phase phase) {
  wg_state *st = state(ctx);
  wg_timed *w = t->backend;
  if (phase == WGC_TIME_BEGIN) {
    if (!gpu_device_timestamps(st->dev) || !(w = calloc(1, sizeof *w)))
      return;
    w->enc = wg_encoder(st);
    w->submits = st->submit_total;
    gpu_encoder_timestamp(w->enc, 0);
    t->backend = w;
    return;
  }
  if (phase == WGC_TIME_ABANDON) {
    free(w);
    t->backend = NULL;
    return;
  }
  if (!w && !(w = calloc(1, sizeof *w))) {
    t->done(t, WGC_ERR_OUT_OF_MEMORY);
    return;
  }
  w->t = t;
  w->st = st;
  t->gpu = true;
  bool readback = timed_readback(st, w);
  w->waiting = readback ? 2 : 1;
  t->submit_us = wgc_now_us();
  wg_flush(st);
  if (readback) {
    gpu_buffer_release(w->resolve);
    gpu_buffer_map_read(w->map, 0, 16, timed_mapped, w);
  }
  gpu_on_work_done_stamped(st->dev, &w->end, timed_done, w);
}

static wgc_status wg_poll(wgc_context *ctx) {
  wg_state *st = state(ctx);
  /* downloads recorded but not yet submitted: they are what a poll waits
   * for, and submitting never waits here */
  if (st->slabs && !st->slabs->sealed)
    wg_flush(st);
  gpu_process_events(st->dev, false);
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
  /* Completions still in flight (browser) find their records orphaned;
   * a slab's downloads go with it. The list of transfers is walked before
   * the slabs free theirs, which it also links. */
  for (wg_transfer *d = st->transfers, *next; d; d = next) {
    next = d->next;
    if (d->slab)
      continue; /* freed with its slab */
    if (d->done)
      free(d);
    else
      d->orphan = true;
  }
  for (wg_slab *sl = st->slabs, *next; sl; sl = next) {
    next = sl->next;
    for (wg_transfer *t = sl->first, *tn; t; t = tn) {
      tn = t->slab_next;
      free(t);
    }
    sl->orphan = true;
    if (!sl->sealed) { /* never mapped: nothing will call back */
      gpu_buffer_release(sl->buf);
      free(sl);
    }
  }
  wg_pipelines_release(st);
  gpu_buffer_release(st->spare_staging);
  if (st->arena)
    gpu_buffer_release(st->arena);
  free(st->arena_host);
  free(st->scratch);
  free(st->plan_spare);
  if (st->dev)
    gpu_device_release(st->dev);
  free(st);
  ctx->impl = NULL;
}

static size_t wg_pipelines_compiled(const wgc_context *ctx) {
  return state(ctx)->compiled;
}

static const char *wg_pipeline_cache_status(const wgc_context *ctx) {
  return state(ctx)->cache_status;
}

/* Each op runs inside a scope so that a flush in the middle of it (a full
 * batch) keeps the scratch memory its later launches use. */
#define WG_OP_SCOPE_(NAME, name)                                               \
  static wgc_status scoped_##name(wgc_context *ctx,                            \
                                  const wgc_##name##_args *a) {                \
    wgc_status hs = wg_headroom(ctx, a->fn);                                   \
    if (hs != WGC_OK)                                                          \
      return hs;                                                               \
    wg_state *st = state(ctx);                                                 \
    st->in_op = true;                                                          \
    wgc_status s = wg_##name(ctx, a);                                          \
    st->in_op = false;                                                         \
    return s;                                                                  \
  }
WGC_OP_FAMILIES(WG_OP_SCOPE_)
#undef WG_OP_SCOPE_

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
#define WG_MEMBER_(NAME, name) .name = scoped_##name,
    WGC_OP_FAMILIES(WG_MEMBER_)
#undef WG_MEMBER_
        .compile_ahead = wg_compile_ahead,
    .pipelines_compiled = wg_pipelines_compiled,
    .pipeline_cache_status = wg_pipeline_cache_status,
    .counters = wg_counters,
    .time_op = wg_time_op,
};
