/* The native GPU layer's completions and per-device submission thread:
 * queue submits and writes, map and work-done requests and device polls
 * all run on that thread, in the order they were made (see gpu.h). */
#include "clock.h"
#include "gpu/native.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- completions -------------------------------------------------------- */

/* Ops fired while a queued command or the runtime still held them: the
 * holder frees them when it lets go. Listed so that those of a lost device,
 * which the runtime never answers, stay reachable rather than leak. */
static nw_op *g_orphans;

static void nw_list_remove(nw_op **head, nw_op **tail, nw_op *op) {
  if (op->prev)
    op->prev->next = op->next;
  else
    *head = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else if (tail)
    *tail = op->prev;
  op->prev = op->next = NULL;
}

static void nw_list_append(nw_op **head, nw_op **tail, nw_op *op) {
  op->next = NULL;
  op->prev = *tail;
  if (*tail)
    (*tail)->next = op;
  else
    *head = op;
  *tail = op;
}

nw_op *nw_op_new(nw_device *d, gpu_status_cb cb, void *user, const char *what) {
  nw_op *op = d ? calloc(1, sizeof *op) : NULL;
  if (!op) {
    if (d)
      nw_out_of_memory(d, what);
    if (cb)
      cb(d ? WGC_ERR_OUT_OF_MEMORY : WGC_ERR_INVALID_ARGUMENT, user);
    return NULL;
  }
  op->cb = cb;
  op->user = user;
  nw_lock();
  nw_list_append(&d->ops, &d->ops_tail, op);
  d->undone++;
  nw_unlock();
  return op;
}

void nw_op_fail_locked(nw_device *d, nw_op *op, wgc_status st) {
  nw_list_remove(&d->ops, &d->ops_tail, op);
  d->undone--;
  op->done = true;
  op->status = st;
  nw_list_append(&d->done, &d->done_tail, op);
}

/* Marks op done with st and moves it to the done queue; an orphan is only
 * freed. d is op's device (NULL once it was released). With the lock held. */
static void nw_op_complete_locked(nw_device *d, nw_op *op, wgc_status st) {
  if (op->in_runtime && d)
    d->in_runtime--;
  op->in_runtime = false;
  op->held = false;
  if (op->buf) {
    nw_obj *b = nw_get_locked(op->buf, NW_BUFFER);
    if (b)
      b->u.buffer.map_state = st == WGC_OK ? NW_MAPPED : NW_UNMAPPED;
  }
  if (op->orphan) {
    nw_list_remove(&g_orphans, NULL, op);
    free(op);
    return;
  }
  if (op->done)
    return;
  if (op->stamp)
    *op->stamp = wgc_now_us();
  op->done = true;
  op->status = st;
  if (d) {
    nw_list_remove(&d->ops, &d->ops_tail, op);
    d->undone--;
    nw_list_append(&d->done, &d->done_tail, op);
    pthread_cond_broadcast(&d->settled);
  }
}

/* The runtime's side of a completion: userdata1 is the op, userdata2 its
 * device. Orphans never reach the device: its pointer may be stale. */
static void nw_op_complete(nw_op *op, nw_device *d, wgc_status st) {
  nw_lock();
  nw_op_complete_locked(op->orphan ? NULL : d, op, st);
  nw_unlock();
}

static void nw_on_map(WGPUMapAsyncStatus status, WGPUStringView message,
                      void *u1, void *u2) {
  (void)message;
  wgc_status st;
  switch (status) {
  case WGPUMapAsyncStatus_Success:
    st = WGC_OK;
    break;
  case WGPUMapAsyncStatus_CallbackCancelled:
  case WGPUMapAsyncStatus_Aborted:
    st = WGC_ERR_CANCELLED;
    break;
  default:
    st = WGC_ERR_DEVICE;
    break;
  }
  nw_op_complete(u1, u2, st);
}

static void nw_on_work_done(WGPUQueueWorkDoneStatus status,
                            WGPUStringView message, void *u1, void *u2) {
  (void)message;
  wgc_status st;
  switch (status) {
  case WGPUQueueWorkDoneStatus_Success:
    st = WGC_OK;
    break;
  case WGPUQueueWorkDoneStatus_CallbackCancelled:
    st = WGC_ERR_CANCELLED;
    break;
  default:
    st = WGC_ERR_DEVICE;
    break;
  }
  nw_op_complete(u1, u2, st);
}

/* Unlinks the first done completion of device id (or, once the device is
 * lost, the first pending one: it fails with DEVICE_LOST). With the lock
 * held. */
static nw_op *nw_op_pop_done_locked(gpu_id id) {
  nw_obj *o = nw_get_locked(id, NW_DEVICE);
  if (!o)
    return NULL;
  nw_device *d = o->u.device;
  nw_op *op = d->done;
  if (op) {
    nw_list_remove(&d->done, &d->done_tail, op);
    /* Once lost, nothing undelivered reports success: the caller cannot
     * tell work done before the loss from work it took down. */
    if (d->errors.lost)
      op->status = WGC_ERR_DEVICE_LOST;
    return op;
  }
  if (!d->errors.lost || !d->ops)
    return NULL;
  op = d->ops;
  nw_list_remove(&d->ops, &d->ops_tail, op);
  d->undone--;
  return op;
}

void nw_op_fire(nw_op *op, wgc_status undone) {
  gpu_status_cb cb = op->cb;
  void *user = op->user;
  wgc_status st = op->done && !op->cancelled ? op->status : undone;
  op->done = true;
  if (op->held) {
    op->orphan = true;
    op->buf = 0;
    op->prev = NULL;
    op->next = g_orphans;
    if (g_orphans)
      g_orphans->prev = op;
    g_orphans = op;
    op = NULL;
  }
  nw_unlock();
  free(op);
  if (cb)
    cb(st, user);
}

/* Fires the done completions of device id. Each is unlinked before its
 * callback runs, and the device is looked up again after each, so callbacks
 * may call anything here, the release of the device included. */
static void nw_deliver(gpu_id id) {
  for (;;) {
    nw_lock();
    nw_op *op = nw_op_pop_done_locked(id);
    if (!op) {
      nw_unlock();
      return;
    }
    nw_op_fire(op, WGC_ERR_DEVICE_LOST); /* undone: the device is lost */
  }
}

/* ---- the submission thread ---------------------------------------------- */

static void *nw_worker_main(void *arg);

/* Starts d's submission thread on first use; false when it cannot. With
 * the lock held. */
static bool nw_worker_start_locked(nw_device *d) {
  if (d->worker_started)
    return true;
  /* The worker's timed waits run on the monotonic clock: a step of the
   * wall clock (a VM's clock resynchronised) must not stretch them. */
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&d->wake, &attr);
  pthread_condattr_destroy(&attr);
  pthread_cond_init(&d->settled, NULL);
  if (pthread_create(&d->worker, NULL, nw_worker_main, d) != 0) {
    pthread_cond_destroy(&d->wake);
    pthread_cond_destroy(&d->settled);
    return false;
  }
  d->worker_started = true;
  return true;
}

bool nw_enqueue(nw_device *d, nw_cmd *c, bool at_front) {
  nw_lock();
  bool ok = nw_worker_start_locked(d);
  if (ok) {
    if (c->op)
      c->op->held = true;
    if (at_front) {
      c->next = d->cmds;
      d->cmds = c;
      if (!d->cmds_tail)
        d->cmds_tail = c;
    } else {
      c->next = NULL;
      if (d->cmds_tail)
        d->cmds_tail->next = c;
      else
        d->cmds = c;
      d->cmds_tail = c;
    }
    pthread_cond_signal(&d->wake);
  }
  nw_unlock();
  return ok;
}

nw_cmd *nw_cmd_new(enum nw_cmd_kind kind, size_t extra) {
  nw_cmd *c = calloc(1, sizeof *c + extra);
  if (c)
    c->kind = kind;
  return c;
}

/* Hands the runtime a map or work-done request (on the worker). */
static void nw_issue(nw_device *d, nw_cmd *c) {
  nw_lock();
  c->op->in_runtime = true;
  d->in_runtime++;
  nw_unlock();
  if (c->kind == NW_CMD_MAP)
    wgc_nw.BufferMapAsync(
        c->buffer, WGPUMapMode_Read, (size_t)c->offset, (size_t)c->size,
        (WGPUBufferMapCallbackInfo){.mode = WGPUCallbackMode_AllowProcessEvents,
                                    .callback = nw_on_map,
                                    .userdata1 = c->op,
                                    .userdata2 = d});
  else
    wgc_nw.QueueOnSubmittedWorkDone(
        d->queue, (WGPUQueueWorkDoneCallbackInfo){
                      .mode = WGPUCallbackMode_AllowProcessEvents,
                      .callback = nw_on_work_done,
                      .userdata1 = c->op,
                      .userdata2 = d});
}

static bool nw_lost(nw_device *d) {
  nw_lock();
  bool lost = d->errors.lost;
  nw_unlock();
  return lost;
}

/* Destroys d's runtime device for gpu_device_lose, once. On the worker. */
static void nw_destroy_now(nw_device *d) {
  nw_lock();
  bool done = d->destroyed, lost = d->errors.lost;
  nw_unlock();
  if (done)
    return;
  if (!lost)
    wgc_nw.DeviceDestroy(d->device);
  const char *why = "the device was destroyed";
  nw_lock();
  if (!d->errors.lost)
    gpu_errors_lost(&d->errors, why, strlen(why));
  d->destroyed = true;
  pthread_cond_broadcast(&d->settled);
  nw_unlock();
}

/* Runs a chain of commands in order. Consecutive submits go to the queue
 * as one (each queue submission costs a driver round trip, and lavapipe's
 * waits for the previous one); maps, work-done requests and releases that
 * follow them keep their order relative to them, and queue writes end a
 * run, since a write lands before the next submission. */
static void nw_run(nw_device *d, nw_cmd *c) {
  enum { RUN = 256 };
  WGPUCommandBuffer run[RUN];
  while (c) {
    nw_lock();
    bool lose = d->lose_requested;
    nw_unlock();
    if (lose) /* under what this chain still holds */
      nw_destroy_now(d);
    bool lost = nw_lost(d);
    /* gather submits, up to a write or a destroy */
    size_t n = 0;
    nw_cmd *end = c;
    while (end && n < RUN && end->kind != NW_CMD_WRITE &&
           end->kind != NW_CMD_DESTROY) {
      if (end->kind == NW_CMD_SUBMIT)
        run[n++] = end->cmd;
      end = end->next;
    }
    if (n && !lost)
      wgc_nw.QueueSubmit(d->queue, n, run);
    for (size_t i = 0; i < n; i++)
      wgc_nw.CommandBufferRelease(run[i]);
    lost = lost || nw_lost(d);
    /* then what followed them, in order */
    while (c != end) {
      nw_cmd *next = c->next;
      if (c->kind == NW_CMD_MAP || c->kind == NW_CMD_WORKDONE) {
        if (lost) {
          nw_lock();
          nw_op_complete_locked(c->op->orphan ? NULL : d, c->op,
                                WGC_ERR_DEVICE_LOST);
          nw_unlock();
        } else {
          nw_issue(d, c);
        }
      } else if (c->kind == NW_CMD_RELEASE) {
        wgc_nw.BufferRelease(c->buffer);
      }
      free(c);
      c = next;
    }
    if (!c || (c->kind != NW_CMD_WRITE && c->kind != NW_CMD_DESTROY))
      continue; /* the run was full */
    nw_cmd *next = c->next;
    if (c->kind == NW_CMD_DESTROY)
      nw_destroy_now(d);
    else if (!lost) /* a write; dropped once the device is gone */
      wgc_nw.QueueWriteBuffer(d->queue, c->buffer, c->offset, c->data,
                              (size_t)c->size);
    free(c);
    c = next;
  }
}

/* The submission thread: runs queued commands, and while the runtime holds
 * requests, polls the device without waiting (a waiting poll would hold
 * back the next submission until the GPU idles). Polls back off from 0.1 to
 * 2 ms while nothing completes, so that a long queue of work does not lose
 * CPU time to them (software adapters run on the same cores). While a
 * thread waits for everything to settle, nothing new can come from it (a
 * context is used by one thread at a time), so the poll waits for the GPU
 * itself and returns the moment the work ends; when such a poll brings
 * nothing (a request the GPU's queue does not answer), the backoff takes
 * over until something completes. */
static void *nw_worker_main(void *arg) {
  nw_device *d = arg;
  long interval = 100000; /* ns */
  bool waited_in_vain = false;
  nw_lock();
  for (;;) {
    if (d->cmds) {
      nw_cmd *c = d->cmds;
      d->cmds = d->cmds_tail = NULL;
      nw_unlock();
      nw_run(d, c);
      /* a submit may have waited long: what finished meanwhile is due
       * now, not after the next one */
      nw_lock();
      if (d->in_runtime && !d->errors.lost) {
        nw_unlock();
        wgc_nw.DevicePoll(d->device, false, NULL);
        nw_lock();
      }
      interval = 100000;
      continue;
    }
    if (d->in_runtime && !d->errors.lost) {
      unsigned before = d->in_runtime;
      bool wait = d->waiters > 0 && !waited_in_vain;
      nw_unlock();
      wgc_nw.DevicePoll(d->device, wait, NULL);
      nw_lock();
      if (d->in_runtime < before) {
        interval = 100000;
        waited_in_vain = false;
      } else {
        waited_in_vain = wait;
        if (interval < 2000000)
          interval *= 2;
      }
      /* a thread may have begun to wait during the poll (its signal found
       * no one waiting): then wait on the GPU, not on the timer */
      bool waiter = d->waiters > 0 && !waited_in_vain;
      if (!wait && !waiter && !d->cmds && d->in_runtime && !d->errors.lost) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += interval;
        if (ts.tv_nsec >= 1000000000) {
          ts.tv_sec++;
          ts.tv_nsec -= 1000000000;
        }
        nw_wait_until(&d->wake, &ts);
      }
      continue;
    }
    if (d->stop)
      break;
    nw_wait(&d->wake);
  }
  nw_unlock();
  return NULL;
}

void nw_wait_settled(nw_device *d) {
  nw_op *fence = nw_op_new(d, NULL, NULL, "gpu_process_events");
  nw_cmd *c = fence ? nw_cmd_new(NW_CMD_WORKDONE, 0) : NULL;
  if (c) {
    c->op = fence;
    if (!nw_enqueue(d, c, false)) {
      free(c);
      c = NULL;
    }
  }
  nw_lock();
  if (fence && !c) { /* no thread: nothing can complete */
    nw_list_remove(&d->ops, &d->ops_tail, fence);
    d->undone--;
    free(fence);
  } else {
    d->waiters++;
    pthread_cond_signal(&d->wake); /* a worker in its backoff waits on now */
    while (d->undone && !d->errors.lost)
      nw_wait(&d->settled);
    d->waiters--;
  }
  nw_unlock();
}

void gpu_queue_write(gpu_id dev, gpu_id buf, uint64_t offset, const void *data,
                     uint64_t size) {
  nw_device *d = nw_live_dev(dev);
  nw_obj *b = nw_get(buf, NW_BUFFER);
  if (!d || !b || size == 0 || !data)
    return;
  /* The submission thread writes a copy, in order with the submits around
   * it: the caller's data may change as soon as this returns. */
  nw_cmd *c =
      size <= SIZE_MAX - sizeof *c ? nw_cmd_new(NW_CMD_WRITE, size) : NULL;
  if (!c) {
    nw_out_of_memory(d, "gpu_queue_write");
    return;
  }
  c->buffer = b->u.buffer.handle;
  c->offset = offset;
  c->size = size;
  memcpy(c->data, data, (size_t)size);
  if (!nw_enqueue(d, c, false)) {
    free(c);
    nw_error(d, WGC_ERR_DEVICE, "gpu_queue_write: no submission thread");
  }
}

/* ---- completions and events --------------------------------------------- */

void gpu_on_work_done(gpu_id dev, gpu_status_cb cb, void *user) {
  gpu_on_work_done_stamped(dev, NULL, cb, user);
}

void gpu_on_work_done_stamped(gpu_id dev, double *done_us, gpu_status_cb cb,
                              void *user) {
  nw_device *d = nw_dev(dev);
  nw_op *op = nw_op_new(d, cb, user, "gpu_on_work_done");
  if (!op)
    return;
  op->stamp = done_us; /* before the submission thread can see op */
  nw_cmd *c = nw_cmd_new(NW_CMD_WORKDONE, 0);
  if (c) {
    c->op = op;
    if (nw_enqueue(d, c, false))
      return;
    free(c);
  }
  nw_lock();
  nw_op_fail_locked(d, op, WGC_ERR_OUT_OF_MEMORY);
  nw_unlock();
}

bool gpu_process_events(gpu_id dev, bool wait) {
  nw_device *d = nw_dev(dev);
  if (!d)
    return true;
  /* The submission thread polls the device and marks completions; here
   * they are only delivered, so this never waits behind queued work unless
   * asked to. */
  if (wait)
    nw_wait_settled(d);
  nw_deliver(dev);
  return true;
}

void gpu_device_lose(gpu_id dev) {
  nw_device *d = nw_dev(dev);
  nw_cmd *c = d ? nw_cmd_new(NW_CMD_DESTROY, 0) : NULL;
  if (!c)
    return;
  /* On the submission thread, ahead of what is queued, so that no runtime
   * call races with it and the queued work is what gets lost. */
  nw_lock();
  d->lose_requested = true;
  nw_unlock();
  if (!nw_enqueue(d, c, true)) {
    free(c);
    return;
  }
  nw_lock();
  while (!d->destroyed)
    nw_wait(&d->settled);
  nw_unlock();
}

void gpu_describe(gpu_id dev, char *out, size_t size) {
  nw_device *d = nw_dev(dev);
  if (!d) {
    snprintf(out, size, "no device %u", (unsigned)dev);
    return;
  }
  nw_lock();
  unsigned cmds = 0, done = 0, held = 0;
  for (nw_cmd *c = d->cmds; c; c = c->next)
    cmds++;
  for (nw_op *o = d->done; o; o = o->next)
    done++;
  for (nw_op *o = d->ops; o; o = o->next)
    held += o->held;
  snprintf(out, size,
           "pending %u (%u held by commands), in the runtime %u, done %u, "
           "commands queued %u, waiters %u, worker %s, lost %d",
           d->undone, held, d->in_runtime, done, cmds, d->waiters,
           d->worker_started ? "started" : "not started", d->errors.lost);
  nw_unlock();
}
