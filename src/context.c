/* Context lifetime, backend choice, callbacks and polling. */
#include "internal.h"

#include "table.h"

#include "gpu/gpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The lists below are process-wide; contexts may be created and destroyed
 * on different threads, so they are guarded by a short spin lock (held
 * only for list edits, never across a callback). */
static atomic_flag lists_lock = ATOMIC_FLAG_INIT;
static void lock(void) {
  while (atomic_flag_test_and_set_explicit(&lists_lock, memory_order_acquire))
    ;
}
static void unlock(void) {
  atomic_flag_clear_explicit(&lists_lock, memory_order_release);
}

static wgc_context *live_contexts;

/* A finished wgc_create_async waiting for wgc_poll(NULL). */
typedef struct create_request {
  struct create_request *next;
  void (*done)(wgc_status, wgc_context *, void *);
  void *user;
  wgc_context *ctx; /* NULL once failed */
  wgc_status status;
  bool ready;
  bool auto_fallback; /* AUTO: take the CPU when WebGPU has no adapter */
} create_request;

static create_request *create_requests;

static wgc_status resolve_backend(const wgc_options *opt, const char *fn,
                                  wgc_options *out) {
  *out = opt ? *opt : (wgc_options){0};
  if ((unsigned)out->backend > WGC_BACKEND_CPU)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "%s: opt->backend %d is not a wgc_backend", fn,
                    (int)out->backend);
  if ((unsigned)out->power > WGC_POWER_HIGH)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "%s: opt->power %d is not a wgc_power_preference", fn,
                    (int)out->power);
  if (out->backend == WGC_BACKEND_AUTO) {
    const char *env = getenv("WGC_BACKEND");
    if (env && *env) {
      if (!strcmp(env, "webgpu"))
        out->backend = WGC_BACKEND_WEBGPU;
      else if (!strcmp(env, "cpu"))
        out->backend = WGC_BACKEND_CPU;
      else
        return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                        "%s: environment WGC_BACKEND=\"%.40s\" is neither "
                        "\"webgpu\" nor \"cpu\"",
                        fn, env);
    }
  }
  return WGC_OK;
}

/* AUTO takes the CPU when WebGPU cannot start: no adapter, a failing
 * device, or too little memory for a device (the CPU backend needs far
 * less). */
static bool auto_falls_back(wgc_status s) {
  return s == WGC_ERR_NO_ADAPTER || s == WGC_ERR_DEVICE ||
         s == WGC_ERR_OUT_OF_MEMORY;
}

static wgc_context *context_new(const wgc_options *opt) {
  wgc_context *ctx = calloc(1, sizeof *ctx);
  if (ctx)
    ctx->opt = *opt;
  return ctx;
}

static void context_link(wgc_context *ctx) {
  lock();
  ctx->next_live = live_contexts;
  live_contexts = ctx;
  unlock();
}

/* Makes an initialised ctx live, recording from the start when its
 * options ask; on failure ctx is destroyed and the error text moves to
 * the thread slot. */
static wgc_status context_start(wgc_context *ctx) {
  ctx->opt.pipeline_cache = NULL; /* read by wgc_create only */
  context_link(ctx);
  wgc_status s = ctx->opt.profile ? wgc_profile_start(ctx) : WGC_OK;
  if (s != WGC_OK) {
    wgc_fail(NULL, s, "%s", ctx->last_error);
    wgc_destroy(ctx);
  }
  return s;
}

/* Initialises ctx on be; the error text moves to the thread slot. */
static wgc_status context_init(wgc_context *ctx, const wgc_backend_ops *be) {
  ctx->be = be;
  ctx->last_error[0] = 0;
  wgc_status s = be->init(ctx, &ctx->opt);
  if (s != WGC_OK) {
    wgc_fail(NULL, s, "%s", ctx->last_error);
    ctx->last_error[0] = 0;
    ctx->be = NULL;
  }
  return s;
}

wgc_status wgc_create(const wgc_options *opt, wgc_context **out) {
  if (!out)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "wgc_create: out is NULL");
  *out = NULL;
  wgc_options o;
  wgc_status s = resolve_backend(opt, "wgc_create", &o);
  if (s != WGC_OK)
    return s;
  wgc_context *ctx = context_new(&o);
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_create: cannot allocate the context");
  if (o.backend != WGC_BACKEND_CPU) {
    s = context_init(ctx, &wgc_backend_webgpu);
    bool fall_back = o.backend == WGC_BACKEND_AUTO && auto_falls_back(s);
    if (s != WGC_OK && !fall_back) {
      free(ctx);
      return s;
    }
  }
  if (!ctx->be) {
    s = context_init(ctx, &wgc_backend_cpu);
    if (s != WGC_OK) {
      free(ctx);
      return s;
    }
  }
  s = context_start(ctx);
  if (s == WGC_OK)
    *out = ctx;
  return s;
}

static create_request *request_of(wgc_context *ctx) {
  lock();
  create_request *r = create_requests;
  while (r && !(r->ctx == ctx && !r->ready))
    r = r->next;
  unlock();
  return r;
}

static void async_init_done(wgc_context *ctx, wgc_status s) {
  create_request *r = request_of(ctx);
  if (!r)
    return;
  if (s != WGC_OK) {
    wgc_fail(NULL, s, "%s", ctx->last_error);
    ctx->last_error[0] = 0;
    ctx->be = NULL;
    if (r->auto_fallback && auto_falls_back(s))
      s = context_init(ctx, &wgc_backend_cpu);
  }
  if (s == WGC_OK) {
    s = context_start(ctx);
    if (s != WGC_OK)
      r->ctx = NULL;
  } else {
    free(ctx);
    r->ctx = NULL;
  }
  r->status = s;
  r->ready = true;
}

wgc_status wgc_create_async(const wgc_options *opt,
                            void (*done)(wgc_status, wgc_context *, void *),
                            void *user) {
  if (!done)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_create_async: done is NULL");
  wgc_options o;
  wgc_status s = resolve_backend(opt, "wgc_create_async", &o);
  if (s != WGC_OK)
    return s;
  wgc_context *ctx = context_new(&o);
  create_request *r = calloc(1, sizeof *r);
  if (!ctx || !r) {
    free(ctx);
    free(r);
    return wgc_fail(NULL, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_create_async: cannot allocate the context");
  }
  r->done = done;
  r->user = user;
  r->ctx = ctx;
  r->auto_fallback = o.backend == WGC_BACKEND_AUTO;
  /* Append, so callbacks fire in request order. */
  lock();
  create_request **tail = &create_requests;
  while (*tail)
    tail = &(*tail)->next;
  *tail = r;
  unlock();
  gpu_request_poll(); /* in the browser: it may be due before any event */
  if (o.backend == WGC_BACKEND_CPU) {
    async_init_done(ctx, context_init(ctx, &wgc_backend_cpu));
  } else {
    ctx->be = &wgc_backend_webgpu;
    s = wgc_backend_webgpu.init_async(ctx, &ctx->opt, async_init_done);
    if (s != WGC_OK)
      async_init_done(ctx, s);
  }
  return WGC_OK;
}

static void pending_unlink(wgc_context *ctx, wgc_pending *p) {
  if (p->prev)
    p->prev->next = p->next;
  else
    ctx->pending_head = p->next;
  if (p->next)
    p->next->prev = p->prev;
  else
    ctx->pending_tail = p->prev;
}

/* Fires the due callbacks of ctx in registration order (all: every one,
 * those not due with status forced). Only records that existed when it
 * started are looked at, so a registration made by a callback never fires
 * in the same pass. Callbacks may register or drop records after that
 * boundary but never touch the ones before it (nested passes fire nothing),
 * so the walk's next pointer stays valid across each callback. */
static void fire_due(wgc_context *ctx, bool all, wgc_status forced) {
  if (ctx->firing)
    return;
  ctx->firing = true;
  wgc_pending *last = ctx->pending_tail;
  for (wgc_pending *p = ctx->pending_head, *next; last; p = next) {
    next = p->next;
    bool at_end = p == last;
    bool ready = atomic_load_explicit(&p->ready, memory_order_acquire);
    if (ready || all) {
      pending_unlink(ctx, p);
      wgc_status st = ready ? p->status : forced;
      void (*done)(wgc_status, void *) = p->done;
      void *user = p->user;
      free(p);
      done(st, user);
    }
    if (at_end)
      break;
  }
  ctx->firing = false;
}

wgc_status wgc_pending_new(wgc_context *ctx, const char *fn,
                           void (*done)(wgc_status, void *), void *user,
                           wgc_pending **out) {
  if (ctx->destroying)
    return wgc_fail(ctx, WGC_ERR_CANCELLED,
                    "%s: the context is being destroyed; the callback will "
                    "not fire",
                    fn);
  wgc_pending *p = calloc(1, sizeof *p);
  if (!p)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  p->done = done;
  p->user = user;
  p->prev = ctx->pending_tail;
  if (ctx->pending_tail)
    ctx->pending_tail->next = p;
  else
    ctx->pending_head = p;
  ctx->pending_tail = p;
  *out = p;
  return WGC_OK;
}

wgc_status wgc_pending_started(wgc_context *ctx, wgc_pending *p, wgc_status s) {
  if (s != WGC_OK)
    wgc_pending_drop(ctx, p);
  else if (atomic_load_explicit(&p->ready, memory_order_acquire))
    gpu_request_poll();
  return s;
}

void wgc_pending_drop(wgc_context *ctx, wgc_pending *p) {
  pending_unlink(ctx, p);
  free(p);
}

static void poll_creates(void) {
  for (;;) {
    lock();
    create_request **link = &create_requests;
    while (*link && !(*link)->ready)
      link = &(*link)->next;
    create_request *r = *link;
    if (r)
      *link = r->next;
    unlock();
    if (!r)
      return;
    r->done(r->status, r->ctx, r->user);
    free(r);
  }
}

static void destroy_now(wgc_context *ctx);

/* Runs a deferred wgc_destroy once the outermost callback returned; true
 * when ctx is gone. */
static bool finish_deferred_destroy(wgc_context *ctx) {
  if (!ctx->destroy_requested || ctx->firing)
    return false;
  destroy_now(ctx);
  return true;
}

wgc_status wgc_poll(wgc_context *ctx) {
  if (!ctx) {
    poll_creates();
    return WGC_OK;
  }
  wgc_status s = ctx->be->poll(ctx);
  fire_due(ctx, false, WGC_OK);
  finish_deferred_destroy(ctx);
  return s;
}

static bool is_live(wgc_context *ctx) {
  lock();
  wgc_context *c = live_contexts;
  while (c && c != ctx)
    c = c->next_live;
  unlock();
  return c != NULL;
}

/* For the browser's single thread: natively, contexts belong to their
 * threads and each polls its own. A callback may destroy any context, so
 * the live list is copied first and each entry checked before its poll. */
void wgc_poll_all(void) {
  poll_creates();
  size_t n = 0;
  lock();
  for (wgc_context *c = live_contexts; c; c = c->next_live)
    n++;
  wgc_context **list = n ? malloc(n * sizeof *list) : NULL;
  if (list) {
    n = 0;
    for (wgc_context *c = live_contexts; c; c = c->next_live)
      list[n++] = c;
  }
  unlock();
  if (!list)
    return;
  for (size_t i = 0; i < n; i++)
    if (is_live(list[i]))
      wgc_poll(list[i]);
  free(list);
}

wgc_status wgc_synchronize(wgc_context *ctx) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_synchronize: ctx is NULL");
  wgc_status s = ctx->be->synchronize(ctx);
  if (s == WGC_ERR_WOULD_BLOCK)
    return wgc_fail(ctx, s,
                    "wgc_synchronize: cannot wait here; use "
                    "wgc_synchronize_async");
  ctx->be->poll(ctx);
  fire_due(ctx, false, WGC_OK);
  finish_deferred_destroy(ctx);
  return s;
}

wgc_status wgc_synchronize_async(wgc_context *ctx,
                                 void (*done)(wgc_status, void *), void *user) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_synchronize_async: ctx is NULL");
  if (!done)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_synchronize_async: done is NULL");
  wgc_pending *p;
  wgc_status s = wgc_pending_new(ctx, "wgc_synchronize_async", done, user, &p);
  if (s != WGC_OK)
    return s;
  return wgc_pending_started(ctx, p, ctx->be->synchronize_async(ctx, p));
}

static void destroy_now(wgc_context *ctx) {
  ctx->destroying = true;
  ctx->destroy_requested = false;
  /* Natively wait so pending callbacks report real statuses; where waiting
   * is impossible they are cancelled. */
  if (ctx->be->synchronize(ctx) == WGC_OK)
    ctx->be->poll(ctx);
  fire_due(ctx, true, WGC_ERR_CANCELLED);
  for (uint32_t i = 0; i < ctx->table.count; i++)
    if (ctx->table.slots[i].mem)
      ctx->be->free(ctx, ctx->table.slots[i].mem);
  ctx->be->shutdown(ctx);
  wgc_profile_release(ctx); /* the shutdown fired its completions */
  wgc_table_release(&ctx->table);
  lock();
  for (wgc_context **link = &live_contexts; *link; link = &(*link)->next_live)
    if (*link == ctx) {
      *link = ctx->next_live;
      break;
    }
  unlock();
  free(ctx);
}

void wgc_destroy(wgc_context *ctx) {
  if (!ctx || ctx->destroying)
    return;
  if (ctx->firing) { /* inside one of its callbacks: once that returns */
    ctx->destroy_requested = true;
    ctx->destroying = true; /* registrations from now on are cancelled */
    return;
  }
  destroy_now(ctx);
}

const char *wgc_backend_name(const wgc_context *ctx) {
  return ctx ? ctx->be->name : "";
}

const char *wgc_adapter_name(const wgc_context *ctx) {
  return ctx ? ctx->be->adapter_name(ctx) : "";
}

const char *wgc_pipeline_cache_status(const wgc_context *ctx) {
  return ctx && ctx->be->pipeline_cache_status
             ? ctx->be->pipeline_cache_status(ctx)
             : "";
}

size_t wgc_pipelines_compiled(const wgc_context *ctx) {
  return ctx && ctx->be->pipelines_compiled ? ctx->be->pipelines_compiled(ctx)
                                            : 0;
}
