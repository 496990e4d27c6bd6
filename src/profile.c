/* Per-operation timing. While a context records, its backend table is
 * swapped for a copy whose op members time the real ones, so an operation
 * costs nothing more while recording is off (not even a branch). Each op
 * gets a slot in issue order; its time arrives with its completion (the
 * backend's time_op), and the done prefix of the slots becomes the public
 * records. */
#include "profile.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* web/wgc.js reads records out of wasm memory at these offsets. */
_Static_assert(offsetof(wgc_profile_record, launches) == 128 &&
                   offsetof(wgc_profile_record, source) == 132 &&
                   offsetof(wgc_profile_record, start_us) == 136 &&
                   offsetof(wgc_profile_record, duration_us) == 144 &&
                   sizeof(wgc_profile_record) == 152,
               "wgc.js's record layout");

typedef struct prof_slot {
  wgc_profile_record r;
  double begin, end, busy;
  bool gpu, gpu_timed;
  int state; /* 0 running, 1 done, 2 its work never completed */
} prof_slot;

typedef struct wgc_profile {
  wgc_backend_ops table; /* ctx->be while recording */
  const wgc_backend_ops *real;
  bool on;
  bool detached; /* replaced or its context gone: freed by its last ticket */
  double origin;
  prof_slot *slots;
  size_t count, cap, done;  /* slots issued, allocated, done in order */
  wgc_profile_record *recs; /* the done ones that completed */
  size_t nrecs;
  double queue_end; /* end of the last done GPU record */
  double trace_end; /* end of the last record as published */
  unsigned track;   /* the context's track in traces */
  size_t tickets;   /* timers a backend still holds */
} wgc_profile;

typedef struct prof_ticket {
  wgc_op_timer t; /* first: the backend hands this pointer back */
  wgc_profile *p;
  size_t index;
} prof_ticket;

static void prof_free(wgc_profile *p) {
  free(p->slots);
  free(p->recs);
  free(p);
}

/* Publishes the slots done in order. */
static void advance(wgc_profile *p) {
  while (p->done < p->count && p->slots[p->done].state != 0) {
    prof_slot *s = &p->slots[p->done++];
    if (s->state != 1)
      continue;
    double start = s->begin, dur;
    if (s->gpu_timed) {
      /* the GPU's own time, placed where it ended by the completion (or
       * right after the previous record, below) */
      dur = s->busy;
      start = s->end - dur;
      p->queue_end = s->end;
    } else if (s->gpu) {
      /* the queue runs one op at a time: waiting for earlier work is
       * not this op's time */
      if (start < p->queue_end)
        start = p->queue_end;
      dur = s->end - start;
      p->queue_end = s->end;
    } else {
      dur = s->busy > 0 ? s->busy : s->end - s->begin;
    }
    if (dur < 1e-3)
      dur = 1e-3; /* below the clock's grain */
    if (start < p->trace_end)
      start = p->trace_end; /* never before the previous record ends */
    p->trace_end = start + dur;
    s->r.start_us = start - p->origin;
    s->r.duration_us = dur;
    p->recs[p->nrecs++] = s->r;
  }
}

static void ticket_done(wgc_op_timer *t, wgc_status status) {
  prof_ticket *k = (prof_ticket *)t;
  wgc_profile *p = k->p;
  prof_slot *s = &p->slots[k->index];
  s->begin = t->split || !t->gpu ? t->begin_us : t->submit_us;
  s->end = t->end_us;
  s->busy = t->gpu_timed ? t->gpu_us : t->busy_us;
  s->gpu = t->gpu;
  s->gpu_timed = t->gpu_timed;
  s->r.source = t->gpu_timed ? WGC_TIME_GPU
                : t->gpu     ? WGC_TIME_SUBMIT_TO_DONE
                             : WGC_TIME_CPU;
  s->state = status == WGC_OK && s->end >= s->begin ? 1 : 2;
  free(k);
  p->tickets--;
  advance(p);
  if (p->detached && !p->tickets)
    prof_free(p);
}

/* Room for one more slot (and record) before the op runs, so that an op
 * that succeeds always gets its record. */
static wgc_status reserve(wgc_context *ctx, wgc_profile *p, const char *fn) {
  if (p->count < p->cap)
    return WGC_OK;
  size_t cap = p->cap ? 2 * p->cap : 64;
  prof_slot *s = realloc(p->slots, cap * sizeof *s);
  if (s)
    p->slots = s;
  wgc_profile_record *r = s ? realloc(p->recs, cap * sizeof *r) : NULL;
  if (r)
    p->recs = r;
  if (!s || !r)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory for %zu timing records", fn, cap);
  p->cap = cap;
  return WGC_OK;
}

typedef struct prof_call {
  uint64_t launches, submits;
  double t0;
  prof_ticket *k;
} prof_call;

static wgc_status call_begin(wgc_context *ctx, const char *fn, prof_call *c) {
  wgc_profile *p = ctx->profile;
  wgc_status s = reserve(ctx, p, fn);
  if (s != WGC_OK)
    return s;
  c->k = calloc(1, sizeof *c->k);
  if (!c->k)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory for a timing record", fn);
  c->launches = c->submits = 0;
  if (p->real->counters)
    p->real->counters(ctx, &c->launches, &c->submits);
  c->k->t = (wgc_op_timer){.done = ticket_done};
  if (p->real->time_op)
    p->real->time_op(ctx, &c->k->t, WGC_TIME_BEGIN);
  c->t0 = wgc_now_us();
  return WGC_OK;
}

static wgc_status call_end(wgc_context *ctx, prof_call *c, wgc_status s,
                           const char *fn, const char *shape) {
  wgc_profile *p = ctx->profile;
  double t1 = wgc_now_us();
  if (s != WGC_OK) {
    if (p->real->time_op)
      p->real->time_op(ctx, &c->k->t, WGC_TIME_ABANDON);
    free(c->k);
    return s;
  }
  uint64_t launches = 0, submits = 0;
  if (p->real->counters)
    p->real->counters(ctx, &launches, &submits);
  prof_slot *slot = &p->slots[p->count];
  memset(slot, 0, sizeof *slot);
  snprintf(slot->r.name, sizeof slot->r.name, "%s", fn);
  snprintf(slot->r.shape, sizeof slot->r.shape, "%s", shape);
  slot->r.launches = (uint32_t)(launches - c->launches);
  prof_ticket *k = c->k;
  k->p = p;
  k->index = p->count++;
  k->t.begin_us = c->t0;
  k->t.end_us = t1;
  k->t.split = submits != c->submits;
  p->tickets++;
  if (p->real->time_op)
    p->real->time_op(ctx, &k->t, WGC_TIME_END);
  else
    ticket_done(&k->t, WGC_OK);
  return WGC_OK;
}

#define PROF_OP_(NAME, name)                                                   \
  static wgc_status prof_##name(wgc_context *ctx,                              \
                                const wgc_##name##_args *a) {                  \
    if (ctx->compiling) /* nothing runs: nothing to time */                    \
      return ctx->profile->real->name(ctx, a);                                 \
    prof_call c;                                                               \
    wgc_status s = call_begin(ctx, a->fn, &c);                                 \
    if (s != WGC_OK)                                                           \
      return s;                                                                \
    s = ctx->profile->real->name(ctx, a);                                      \
    char shape[sizeof c.k->p->slots->r.shape];                                 \
    if (s == WGC_OK)                                                           \
      wgc_shape_##name(a, shape, sizeof shape);                                \
    return call_end(ctx, &c, s, a->fn, shape);                                 \
  }
WGC_OP_FAMILIES(PROF_OP_)
#undef PROF_OP_

/* A context's recording, or an error naming fn when it has none. */
static wgc_status recording(wgc_context *ctx, const char *fn) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (!ctx->profile)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: recording was never started on this context "
                    "(wgc_profile_start)",
                    fn);
  return WGC_OK;
}

wgc_status wgc_profile_start(wgc_context *ctx) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_profile_start: ctx is NULL");
  wgc_profile *p = calloc(1, sizeof *p);
  if (!p)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_profile_start: out of host memory");
  wgc_profile *old = ctx->profile;
  p->real = old ? old->real : ctx->be;
  p->table = *p->real;
#define PROF_MEMBER_(NAME, name) p->table.name = prof_##name;
  WGC_OP_FAMILIES(PROF_MEMBER_)
#undef PROF_MEMBER_
  static atomic_uint tracks;
  p->track = old ? old->track : atomic_fetch_add(&tracks, 1) + 1;
  p->on = true;
  p->origin = wgc_now_us();
  if (old) {
    old->detached = true;
    if (!old->tickets)
      prof_free(old);
  }
  ctx->profile = p;
  ctx->be = &p->table;
  return WGC_OK;
}

wgc_status wgc_profile_stop(wgc_context *ctx) {
  wgc_status s = recording(ctx, "wgc_profile_stop");
  if (s != WGC_OK)
    return s;
  ctx->be = ctx->profile->real;
  ctx->profile->on = false;
  return WGC_OK;
}

wgc_status wgc_profile_view(wgc_context *ctx, const char *fn,
                            const wgc_profile_record **recs, size_t *count,
                            unsigned *track) {
  wgc_status s = recording(ctx, fn);
  if (s != WGC_OK)
    return s;
  if (track)
    *track = ctx->profile->track;
  *recs = ctx->profile->recs;
  *count = ctx->profile->nrecs;
  return WGC_OK;
}

wgc_status wgc_profile_records(wgc_context *ctx, wgc_profile_record *out,
                               size_t cap, size_t *count) {
  const char *fn = "wgc_profile_records";
  const wgc_profile_record *recs = NULL;
  size_t n = 0;
  wgc_status s = recording(ctx, fn);
  if (s != WGC_OK)
    return s;
  if (!count)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: count is NULL", fn);
  if (!out && cap)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: out is NULL with cap %zu", fn, cap);
  wgc_profile_view(ctx, fn, &recs, &n, NULL);
  if (n && cap)
    memcpy(out, recs, (cap < n ? cap : n) * sizeof *recs);
  *count = n;
  return WGC_OK;
}

void wgc_profile_release(wgc_context *ctx) {
  wgc_profile *p = ctx->profile;
  if (!p)
    return;
  ctx->be = p->real;
  ctx->profile = NULL;
  p->detached = true;
  if (!p->tickets)
    prof_free(p);
}
