/* The WebGPU backend: device, memory, transfers, and the execution engine
 * (one command encoder per batch, a uniform arena, a pipeline cache). */
#include "webgpu.h"

#include "kernels.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Flush a batch after this many dispatches, so long chains reach the GPU
 * early without costing a submit per operation. */
#define WG_BATCH_DISPATCHES 64
#define WG_ARENA_BYTES (64u * 1024u)

typedef struct wg_pipeline {
  char *key;
  gpu_id id;
} wg_pipeline;

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

struct wg_state {
  gpu_id dev;
  gpu_limits lim;
  char name[256];
  /* the batch being recorded */
  gpu_id enc;
  unsigned dispatches;
  gpu_id arena;
  uint8_t *arena_host;
  size_t arena_used;
  wg_mem **scratch; /* released at the first flush after their op ends */
  size_t scratch_count, scratch_cap;
  bool in_op; /* an op is recording: its scratch must outlive flushes */
  /* pipeline cache */
  wg_pipeline *pipes;
  size_t pipe_count, pipe_cap;
  size_t compiled;
  /* completions in flight */
  wg_transfer *downloads;
  wg_work_done *works;
  /* device request (init) */
  bool request_done;
  bool abandoned; /* its wgc_create returned WGC_ERR_WOULD_BLOCK */
  wgc_status request_status;
  void (*init_done)(wgc_context *, wgc_status);
  wgc_context *ctx;
};

static wg_state *state(const wgc_context *ctx) { return ctx->impl; }

const gpu_limits *wg_limits(const wgc_context *ctx) {
  return &state(ctx)->lim;
}

/* Turns a device error, if any, into a status with a message. */
static wgc_status device_error(wgc_context *ctx, const char *fn) {
  char msg[400];
  wgc_status s = gpu_take_error(state(ctx)->dev, msg, sizeof msg);
  if (s != WGC_OK)
    return wgc_fail(ctx, s, "%s: %s: %s", fn,
                    s == WGC_ERR_DEVICE_LOST ? "the device was lost"
                                             : "the device reported an error",
                    msg);
  return WGC_OK;
}

/* ---- device ------------------------------------------------------------ */

static wgc_status finish_init(wgc_context *ctx) {
  wg_state *st = state(ctx);
  gpu_device_limits(st->dev, &st->lim);
  /* Kernels for CPU adapters or for GPUs, as detected unless overridden
   * (tests run each family on whatever adapter they have). */
  const char *kernels = getenv("WGC_KERNELS");
  if (kernels && !strcmp(kernels, "gpu"))
    st->lim.cpu_adapter = false;
  else if (kernels && !strcmp(kernels, "cpu"))
    st->lim.cpu_adapter = true;
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
    return wgc_fail(ctx, s, "wgc_create: no WebGPU runtime is available");
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

/* ---- batching ---------------------------------------------------------- */

/* Submits the batch being recorded, if any. Never waits. */
static void flush(wg_state *st) {
  if (st->enc) {
    if (st->arena_used)
      gpu_queue_write(st->dev, st->arena, 0, st->arena_host,
                      (st->arena_used + 3) & ~(size_t)3);
    gpu_encoder_submit(st->dev, st->enc);
    st->enc = 0;
    st->dispatches = 0;
    st->arena_used = 0;
  }
  if (st->in_op)
    return; /* the op records more launches that use its scratch */
  /* Submitted work keeps the buffers alive; only our handles go. */
  for (size_t i = 0; i < st->scratch_count; i++) {
    gpu_buffer_release(st->scratch[i]->buffer);
    free(st->scratch[i]);
  }
  st->scratch_count = 0;
}

static gpu_id encoder(wg_state *st) {
  if (!st->enc)
    st->enc = gpu_encoder_create(st->dev);
  return st->enc;
}

wgc_status wg_scratch(wgc_context *ctx, const char *fn, uint64_t bytes,
                      wgc_ref *out) {
  wg_state *st = state(ctx);
  if (st->scratch_count == st->scratch_cap) {
    size_t cap = st->scratch_cap ? 2 * st->scratch_cap : 8;
    wg_mem **grown = realloc(st->scratch, cap * sizeof *grown);
    if (!grown)
      return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st->scratch = grown;
    st->scratch_cap = cap;
  }
  wg_mem *m = calloc(1, sizeof *m);
  if (!m)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  m->size = bytes < 4 ? 4 : (bytes + 3) & ~(uint64_t)3;
  m->buffer = gpu_buffer_create(st->dev, m->size,
                                GPU_USAGE_STORAGE | GPU_USAGE_COPY_SRC |
                                    GPU_USAGE_COPY_DST);
  if (!m->buffer) {
    free(m);
    wgc_status s = device_error(ctx, fn);
    return s != WGC_OK ? s
                       : wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                                  "%s: cannot allocate %" PRIu64
                                  " bytes of scratch memory",
                                  fn, bytes);
  }
  st->scratch[st->scratch_count++] = m;
  *out = (wgc_ref){.mem = m, .offset = 0};
  return WGC_OK;
}

/* ---- pipeline cache ---------------------------------------------------- */

const wgc_kernel_source *wgc_kernel_find(const char *name) {
  for (const wgc_kernel_source *k = wgc_kernels; k->name; k++)
    if (!strcmp(k->name, name))
      return k;
  return NULL;
}

static gpu_id pipeline_lookup(wg_state *st, const char *key) {
  for (size_t i = 0; i < st->pipe_count; i++)
    if (!strcmp(st->pipes[i].key, key))
      return st->pipes[i].id;
  return 0;
}

static bool pipeline_store(wg_state *st, const char *key, gpu_id id) {
  if (st->pipe_count == st->pipe_cap) {
    size_t cap = st->pipe_cap ? 2 * st->pipe_cap : 32;
    wg_pipeline *grown = realloc(st->pipes, cap * sizeof *grown);
    if (!grown)
      return false;
    st->pipes = grown;
    st->pipe_cap = cap;
  }
  char *copy = strdup(key);
  if (!copy)
    return false;
  st->pipes[st->pipe_count++] = (wg_pipeline){copy, id};
  return true;
}

/* A growable string for generated WGSL. */
typedef struct text {
  char *buf;
  size_t len, cap;
  bool failed;
} text;

static void text_add(text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void text_add(text *t, const char *fmt, ...) {
  if (t->failed)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->failed = true;
      return;
    }
    if ((size_t)n < t->cap - t->len) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = t->cap ? 2 * t->cap + (size_t)n : 4096 + (size_t)n;
    char *grown = realloc(t->buf, cap);
    if (!grown) {
      t->failed = true;
      return;
    }
    t->buf = grown;
    t->cap = cap;
  }
}

/* ---- launches ---------------------------------------------------------- */

/* A binding: the window of one buffer that the launch's operands in that
 * buffer share (WebGPU forbids a writable binding that overlaps another
 * binding of the same buffer, so operands of one buffer share one). */
typedef struct binding {
  gpu_id buffer;
  uint64_t lo, hi; /* byte window */
  bool write;
} binding;

static uint64_t align_down(uint64_t x, uint64_t a) { return x - x % a; }

/* Plans the bindings of a launch. WebGPU allows a buffer to be bound
 * several times in one dispatch only if all its bindings are read-only or
 * all are read-write, and read-write bindings must not overlap. So every
 * binding of a buffer that an operand writes is read-write, and operands
 * whose (alignment-extended) windows overlap share one binding. */
static unsigned plan_bindings(const wg_launch *l, uint64_t align,
                              binding *binds, unsigned *op_bind) {
  unsigned nb = 0;
  for (unsigned i = 0; i < l->nops; i++) {
    const wg_operand *o = &l->ops[i];
    const wg_mem *m = o->ref.mem;
    /* A binding is never empty: an operand the kernel will not read (k ==
     * 0, alpha == 0) still binds 4 bytes, inside the buffer. */
    uint64_t lo = o->ref.offset, hi = lo + (o->bytes ? o->bytes : 4);
    if (hi > m->size) {
      hi = m->size;
      lo = hi - 4;
    }
    binds[nb] = (binding){m->buffer, align_down(lo, align), hi, o->write};
    op_bind[i] = nb++;
  }
  for (unsigned i = 0; i < nb; i++)
    for (unsigned j = 0; j < nb; j++)
      if (binds[i].buffer == binds[j].buffer && (binds[i].write || binds[j].write))
        binds[i].write = binds[j].write = true;
  /* Merge overlapping read-write windows until none overlap. */
  for (bool merged = true; merged;) {
    merged = false;
    for (unsigned i = 0; i < nb && !merged; i++)
      for (unsigned j = i + 1; j < nb && !merged; j++) {
        binding *x = &binds[i], *y = &binds[j];
        if (x->buffer != y->buffer || !x->write || x->lo >= y->hi ||
            y->lo >= x->hi)
          continue;
        x->lo = x->lo < y->lo ? x->lo : y->lo;
        x->hi = x->hi > y->hi ? x->hi : y->hi;
        for (unsigned k = 0; k < l->nops; k++)
          op_bind[k] = op_bind[k] == j ? i : op_bind[k] > j ? op_bind[k] - 1
                                                            : op_bind[k];
        memmove(&binds[j], &binds[j + 1], (nb - j - 1) * sizeof *binds);
        nb--;
        merged = true;
      }
  }
  return nb;
}

wgc_status wg_launch_run(wgc_context *ctx, const char *fn, wg_launch *l) {
  wg_state *st = state(ctx);
  binding binds[WG_MAX_OPERANDS];
  unsigned op_bind[WG_MAX_OPERANDS];
  uint64_t align = st->lim.min_storage_offset_alignment
                       ? st->lim.min_storage_offset_alignment
                       : 256;
  unsigned nb = plan_bindings(l, align, binds, op_bind);
  uint32_t *off = l->params;
  for (unsigned b = 0; b < nb; b++) {
    if (binds[b].hi - binds[b].lo > st->lim.max_storage_binding_size)
      return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                      "%s: an operand window of %" PRIu64
                      " bytes exceeds the device's storage binding limit "
                      "(%" PRIu64 " bytes)",
                      fn, binds[b].hi - binds[b].lo,
                      st->lim.max_storage_binding_size);
  }
  for (unsigned i = 0; i < WG_MAX_OPERANDS; i++)
    off[i] = i < l->nops ? (uint32_t)((l->ops[i].ref.offset -
                                       binds[op_bind[i]].lo) /
                                      4)
                         : 0;

  /* The cache key names everything the generated source depends on. */
  char key[512];
  int kl = snprintf(key, sizeof key, "%s|%s|", l->kernel,
                    l->consts ? l->consts : "");
  for (unsigned i = 0; i < l->nops && kl > 0 && (size_t)kl < sizeof key; i++)
    kl += snprintf(key + kl, sizeof key - (size_t)kl, "%s%u%c,",
                   l->ops[i].name, op_bind[i],
                   binds[op_bind[i]].write ? 'w' : 'r');
  if (kl < 0 || (size_t)kl >= sizeof key)
    return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: kernel key too long", fn);

  gpu_id pipe = pipeline_lookup(st, key);
  if (!pipe) {
    text t = {0};
    for (unsigned b = 0; b < nb; b++)
      text_add(&t,
               "@group(0) @binding(%u) var<storage, %s> wgc_buf%u: "
               "array<f32>;\n",
               b, binds[b].write ? "read_write" : "read", b);
    text_add(&t, "@group(0) @binding(%u) var<uniform> P: Params;\n", nb);
    for (unsigned i = 0; i < l->nops; i++) {
      text_add(&t,
               "fn %s_ld(i: u32) -> f32 { return wgc_buf%u[P.off[%u] + i]; "
               "}\n",
               l->ops[i].name, op_bind[i], i);
      if (binds[op_bind[i]].write)
        text_add(&t,
                 "fn %s_st(i: u32, v: f32) { wgc_buf%u[P.off[%u] + i] = v; "
                 "}\n",
                 l->ops[i].name, op_bind[i], i);
    }
    text_add(&t,
             "fn wg_linear_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 "
             "{ return wid.x + wid.y * nwg.x; }\n%s\n",
             l->consts ? l->consts : "");
    /* "math+unary": the files are concatenated in order. */
    for (const char *name = l->kernel; *name;) {
      size_t len = strcspn(name, "+");
      char part[64];
      snprintf(part, sizeof part, "%.*s", (int)len, name);
      const wgc_kernel_source *src = wgc_kernel_find(part);
      if (!src) {
        free(t.buf);
        return wgc_fail(ctx, WGC_ERR_UNSUPPORTED, "%s: kernel %s is missing",
                        fn, part);
      }
      text_add(&t, "%.*s\n", (int)src->length, src->text);
      name += len + (name[len] == '+');
    }
    if (t.failed) {
      free(t.buf);
      return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    pipe = gpu_pipeline_create(st->dev, t.buf, t.len);
    free(t.buf);
    if (!pipe) {
      wgc_status s = device_error(ctx, fn);
      return s != WGC_OK ? s
                         : wgc_fail(ctx, WGC_ERR_DEVICE,
                                    "%s: kernel %s failed to compile", fn,
                                    l->kernel);
    }
    st->compiled++;
    if (!pipeline_store(st, key, pipe)) {
      gpu_pipeline_release(pipe);
      return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
  }

  /* Parameters go to the arena; a full arena ends the batch. */
  uint64_t ualign = st->lim.min_uniform_offset_alignment
                        ? st->lim.min_uniform_offset_alignment
                        : 256;
  size_t psize = (l->params_size + 15) & ~(size_t)15;
  size_t at = (size_t)((st->arena_used + ualign - 1) / ualign * ualign);
  if (at + psize > WG_ARENA_BYTES) {
    flush(st);
    at = 0;
  }
  memcpy(st->arena_host + at, l->params, l->params_size);
  memset(st->arena_host + at + l->params_size, 0, psize - l->params_size);
  st->arena_used = at + psize;

  gpu_binding gb[WG_MAX_OPERANDS + 1];
  for (unsigned b = 0; b < nb; b++)
    gb[b] = (gpu_binding){binds[b].buffer, binds[b].lo,
                          binds[b].hi - binds[b].lo};
  gb[nb] = (gpu_binding){st->arena, at, psize};
  gpu_id group = gpu_bind_group_create(st->dev, pipe, nb + 1, gb);
  if (!group) {
    wgc_status s = device_error(ctx, fn);
    return s != WGC_OK ? s
                       : wgc_fail(ctx, WGC_ERR_DEVICE,
                                  "%s: bind group creation failed", fn);
  }
  uint32_t x = l->x, y = l->y ? l->y : 1, z = l->z ? l->z : 1;
  if (l->groups) {
    uint64_t maxd = st->lim.max_workgroups_per_dimension
                        ? st->lim.max_workgroups_per_dimension
                        : 65535;
    x = (uint32_t)(l->groups < maxd ? l->groups : maxd);
    uint64_t yy = (l->groups + x - 1) / x;
    if (yy > maxd)
      return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                      "%s: %" PRIu64 " workgroups exceed the device's grid",
                      fn, l->groups);
    y = (uint32_t)yy;
    z = 1;
  }
  gpu_encoder_dispatch(encoder(st), pipe, group, x, y, z);
  gpu_bind_group_release(group);
  wgc_status s = device_error(ctx, fn);
  if (s != WGC_OK)
    return s;
  if (++st->dispatches >= WG_BATCH_DISPATCHES)
    flush(st);
  return WGC_OK;
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
  m->buffer = gpu_buffer_create(
      st->dev, bytes,
      GPU_USAGE_STORAGE | GPU_USAGE_COPY_SRC | GPU_USAGE_COPY_DST);
  if (!m->buffer) {
    free(m);
    wgc_status s = device_error(ctx, "wgc_alloc");
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
  flush(st);
  gpu_queue_write(st->dev, ((wg_mem *)dst.mem)->buffer, dst.offset, src,
                  bytes);
  return device_error(ctx, "wgc_upload");
}

static wgc_status wg_copy(wgc_context *ctx, wgc_ref dst, wgc_ref src,
                          size_t bytes) {
  wg_state *st = state(ctx);
  wg_mem *d = dst.mem, *s = src.mem;
  if (d->buffer == s->buffer)
    return wg_copy_kernel(ctx, dst, src, bytes);
  gpu_encoder_copy(encoder(st), s->buffer, src.offset, d->buffer, dst.offset,
                   bytes);
  if (++st->dispatches >= WG_BATCH_DISPATCHES)
    flush(st);
  return device_error(ctx, "wgc_copy");
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
    wgc_pending_complete(d->pending,
                         s == WGC_OK ? WGC_OK : WGC_ERR_DEVICE);
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
    wgc_status s = device_error(ctx, fn);
    return s != WGC_OK ? s
                       : wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                                  "%s: cannot allocate %zu bytes of staging "
                                  "memory",
                                  fn, bytes);
  }
  gpu_encoder_copy(encoder(st), ((wg_mem *)src.mem)->buffer, src.offset,
                   d->staging, 0, bytes);
  flush(st);
  wgc_status s = device_error(ctx, fn);
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
    wgc_status e = device_error(ctx, "wgc_download");
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
  flush(st);
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
  return device_error(ctx, "wgc_synchronize");
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
  flush(st);
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
  return device_error(ctx, "wgc_poll");
}

static void wg_shutdown(wgc_context *ctx) {
  wg_state *st = state(ctx);
  if (!st)
    return;
  if (st->dev) {
    flush(st);
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
