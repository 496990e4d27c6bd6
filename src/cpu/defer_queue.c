/* The browser build (wasm32, one thread): the CPU backend must never hold
 * the main thread for long, so work is issued into an ordered queue per
 * context, and wgc_js_cpu_pump, called by web/wgc.js from the event loop,
 * runs queued pieces (split.h) for a slice of SLICE_MS and returns to the
 * loop. Work that fits one piece runs inside the call when nothing is
 * queued ahead of it. Frees wait in the queue behind the work that may use
 * the memory; uploads are staged at call time (the caller may reuse its
 * buffer); a download writes its destination all at once, after the work
 * before it, so a destroyed context leaves destinations untouched. */
#include "defer.h"

#include "cpu.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JS(name) __attribute__((import_module("wgc_js"), import_name(#name)))
#define EXPORT __attribute__((visibility("default")))

/* Asks wgc.js to call wgc_js_cpu_pump from the event loop soon. */
JS(schedule_pump) void js_schedule_pump(void);

/* Milliseconds of queued work per turn of the event loop: well under the
 * 50 ms the contract allows, with room for one long piece. */
#define SLICE_MS 5.0

typedef struct cpu_job {
  struct cpu_job *next;
  cpu_work w;
  cpu_split s;
  size_t next_piece;
  wgc_op_timer *timer; /* timing the op, or NULL */
} cpu_job;

struct cpu_queue {
  wgc_context *ctx;
  cpu_job *head, *tail;
  wgc_status error; /* a failed piece; the next completion reports it */
  struct cpu_queue *next_busy;
};

static struct cpu_queue *busy_head, *busy_tail; /* queues with work */

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

struct cpu_queue *cpu_defer_create(void) {
  return calloc(1, sizeof(struct cpu_queue));
}

static void busy_append(struct cpu_queue *q) {
  q->next_busy = NULL;
  if (busy_tail)
    busy_tail->next_busy = q;
  else
    busy_head = q;
  busy_tail = q;
}

static void busy_remove(struct cpu_queue *q) {
  struct cpu_queue *prev = NULL;
  for (struct cpu_queue *x = busy_head; x; prev = x, x = x->next_busy)
    if (x == q) {
      if (prev)
        prev->next_busy = q->next_busy;
      else
        busy_head = q->next_busy;
      if (busy_tail == q)
        busy_tail = prev;
      return;
    }
}

static void job_release(cpu_job *j) {
  cpu_split_release(&j->s);
  free(j);
}

void cpu_defer_destroy(struct cpu_queue *q) {
  if (!q)
    return;
  busy_remove(q);
  /* The front end has cancelled the callbacks these jobs would complete. */
  while (q->head) {
    cpu_job *j = q->head;
    q->head = j->next;
    if (j->w.kind == CPU_WORK_FREE)
      free(j->w.u.mem.mem);
    if (j->timer)
      j->timer->done(j->timer, WGC_ERR_CANCELLED);
    job_release(j);
  }
  free(q);
}

static wgc_status take_error(struct cpu_queue *q) {
  wgc_status s = q->error;
  q->error = WGC_OK;
  return s;
}

/* Runs the next piece of the first job; true when that finished it. */
static bool run_piece(struct cpu_queue *q) {
  cpu_job *j = q->head;
  cpu_work *w = &j->w;
  double t0 = j->timer ? now_ms() : 0;
  if (j->timer && !j->next_piece)
    j->timer->begin_us = t0 * 1e3;
  if (w->kind == CPU_WORK_DOWNLOAD) {
    memcpy(w->u.mem.host_dst, cpu_ptr(w->u.mem.src), w->u.mem.bytes);
    j->next_piece = j->s.pieces;
  } else {
    wgc_status s = cpu_split_run(q->ctx, w, &j->s, j->next_piece++);
    if (s != WGC_OK) {
      if (q->error == WGC_OK)
        q->error = s;
      j->next_piece = j->s.pieces; /* the rest of a failed op is moot */
    }
  }
  if (j->timer)
    j->timer->busy_us += (now_ms() - t0) * 1e3;
  if (j->next_piece < j->s.pieces)
    return false;
  if (j->timer) {
    j->timer->end_us = now_ms() * 1e3;
    j->timer->done(j->timer, q->error);
  }
  if (w->kind == CPU_WORK_DOWNLOAD || w->kind == CPU_WORK_SYNC)
    wgc_pending_complete(w->u.mem.done, take_error(q));
  else if (w->kind == CPU_WORK_FREE)
    free(w->u.mem.mem);
  q->head = j->next;
  if (!q->head)
    q->tail = NULL;
  job_release(j);
  return true;
}

/* Tests of web/wgc.js's handling of a trap: the next wgc_js_cpu_pump
 * traps, and one is asked for; with now set, this call traps. */
static bool trap_next_pump;
EXPORT void wgc_js_trap_test(int now) {
  if (now)
    __builtin_trap();
  trap_next_pump = true;
  js_schedule_pump();
}

/* Runs queued work for about SLICE_MS; 1 while work remains. */
EXPORT int wgc_js_cpu_pump(void) {
  if (trap_next_pump) {
    trap_next_pump = false;
    __builtin_trap();
  }
  double start = now_ms();
  while (busy_head) {
    struct cpu_queue *q = busy_head;
    run_piece(q);
    /* round robin between contexts, one piece at a time */
    busy_remove(q);
    if (q->head)
      busy_append(q);
    if (now_ms() - start >= SLICE_MS)
      break;
  }
  cpu_pool_expect_work(busy_head != NULL);
  return busy_head != NULL;
}

/* Finishes everything queued on q now: only when memory to queue a free
 * has run out, where holding the thread beats leaking or a fault. */
static void drain(struct cpu_queue *q) {
  while (q->head)
    run_piece(q);
  busy_remove(q);
}

static wgc_status enqueue(wgc_context *ctx, struct cpu_queue *q,
                          const cpu_work *w, const cpu_split *plan) {
  size_t staged = w->kind == CPU_WORK_UPLOAD ? w->u.mem.bytes : 0;
  cpu_job *j =
      staged <= SIZE_MAX - sizeof *j ? malloc(sizeof *j + staged) : NULL;
  if (!j)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory to queue %zu bytes of work",
                    cpu_work_fn(w), sizeof *j + staged);
  *j = (cpu_job){.w = *w, .s = *plan};
  if (staged) {
    memcpy(j + 1, w->u.mem.host_src, staged);
    j->w.u.mem.host_src = j + 1;
  }
  if (q->tail)
    q->tail->next = j;
  else
    q->head = j;
  q->tail = j;
  if (!q->head->next) {
    bool idle = busy_head == NULL;
    busy_append(q);
    if (idle) {
      cpu_pool_expect_work(true);
      js_schedule_pump();
    }
  }
  return WGC_OK;
}

wgc_status cpu_defer_submit(wgc_context *ctx, const cpu_work *w) {
  const cpu_backend *be = ctx->impl;
  struct cpu_queue *q = be->queue;
  q->ctx = ctx;
  cpu_split plan;
  /* a piece's work is shared by the pool's threads: with more of them a
   * piece takes as long with more in it (and fewer pieces meet fewer
   * times) */
  if (cpu_split_plan(w, CPU_PIECE_WORK * be->threads, &plan) != WGC_OK)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory for partial results",
                    cpu_work_fn(w));
  /* an upload costs one copy either way: straight to its place if it can */
  if (!q->head && (plan.pieces == 1 || w->kind == CPU_WORK_UPLOAD)) {
    wgc_status s = WGC_OK;
    if (w->kind == CPU_WORK_DOWNLOAD || w->kind == CPU_WORK_SYNC) {
      if (w->kind == CPU_WORK_DOWNLOAD)
        memcpy(w->u.mem.host_dst, cpu_ptr(w->u.mem.src), w->u.mem.bytes);
      wgc_pending_complete(w->u.mem.done, take_error(q)); /* fired later */
    } else {
      s = cpu_work_run(ctx, w);
    }
    cpu_split_release(&plan);
    return s;
  }
  wgc_status s = enqueue(ctx, q, w, &plan);
  if (s != WGC_OK) {
    cpu_split_release(&plan);
    if (w->kind == CPU_WORK_FREE) {
      drain(q);
      free(w->u.mem.mem);
      return WGC_OK;
    }
  }
  return s;
}

void cpu_defer_time(wgc_context *ctx, wgc_op_timer *t) {
  struct cpu_queue *q = ((cpu_backend *)ctx->impl)->queue;
  /* an op that was queued is the last job; one that ran in the call left
   * nothing queued behind the work ahead of it */
  cpu_job *j = q->tail;
  if (j && !j->timer && cpu_work_is_op(j->w.kind)) {
    t->busy_us = 0;
    j->timer = t;
    return;
  }
  t->done(t, WGC_OK);
}

wgc_status cpu_defer_wait(wgc_context *ctx) {
  (void)ctx;
  return WGC_ERR_WOULD_BLOCK;
}
