/* gpu.h natively, over wgpu-native's webgpu.h (loaded at run time, see
 * native_load.c).
 *
 * Ids index a table of heap objects {kind, owning device, handles}; a slot
 * freed goes on a free list. One mutex guards the table, the per-device
 * error state and the completion lists; no wgpu function is ever called with
 * it held, so callbacks the runtime makes from inside its calls (errors,
 * device loss, completions) may take it.
 *
 * Completions (buffer maps, work-done) are never handed to the caller from
 * inside the runtime: the runtime's callback only marks the pending entry
 * done, and gpu_process_events delivers done entries in the order they were
 * registered. So a callback fires exactly once, from gpu_process_events (or
 * from gpu_device_release for what is still pending then), never inside
 * the call that registered it. */
#include "gpu/gpu.h"
#include "gpu/gpu_errors.h"
#include "gpu/native_wgpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* SwiftShader from Debian's chromium package: the fallback Vulkan driver
 * when the loader finds none by itself. */
#define NW_SWIFTSHADER_ICD "/usr/lib/chromium/vk_swiftshader_icd.json"

/* ---- objects and the id table ------------------------------------------ */

enum nw_kind { NW_DEVICE = 1, NW_BUFFER, NW_PIPELINE, NW_GROUP, NW_ENCODER };
enum { NW_UNMAPPED, NW_MAP_PENDING, NW_MAPPED };

/* A pending completion (buffer map or work-done) of one device. It sits on
 * the device's pending list until done, then on its done queue until
 * delivered; both are doubly linked so every step is O(1). */
typedef struct nw_op nw_op;
struct nw_op {
  nw_op *prev, *next;
  gpu_status_cb cb;
  void *user;
  wgc_status status;
  bool done;       /* the runtime called back: status is final */
  bool cancelled;  /* the device was released first: fires with CANCELLED
                      (or DEVICE_LOST) whatever the runtime says */
  bool held;       /* a queued command or the runtime still points at it */
  bool in_runtime; /* the runtime holds it: the submission thread polls */
  bool orphan;     /* cb fired while held: the holder only frees it */
  gpu_id buf;      /* a map: its buffer, 0 once that was released */
};

/* Work for the device's submission thread, done in order. */
enum nw_cmd_kind {
  NW_CMD_SUBMIT,   /* cmd */
  NW_CMD_WRITE,    /* buffer, offset, size bytes of data */
  NW_CMD_MAP,      /* buffer, offset, size, op */
  NW_CMD_WORKDONE, /* op */
  NW_CMD_RELEASE,  /* buffer: the last handle, dropped after earlier work */
  NW_CMD_DESTROY,  /* the test hook gpu_device_lose */
};

typedef struct nw_cmd nw_cmd;
struct nw_cmd {
  nw_cmd *next;
  enum nw_cmd_kind kind;
  WGPUCommandBuffer cmd;
  WGPUBuffer buffer;
  uint64_t offset, size;
  nw_op *op;
  unsigned char data[];
};

typedef struct nw_device {
  WGPUAdapter adapter;
  WGPUDevice device;
  WGPUQueue queue;
  uint64_t serial; /* tells callbacks of a released device from a new one */
  gpu_limits limits;
  char name[256];
  /* Everything below is under g_lock. */
  gpu_errors errors;
  nw_op *ops, *ops_tail;   /* pending completions, in registration order */
  nw_op *done, *done_tail; /* done, to deliver, in completion order */
  unsigned undone;         /* on the pending list */
  unsigned in_runtime;     /* map or work-done requests the runtime holds */
  /* The submission thread: every call that can wait behind queued GPU work
   * (queue submit and writes, maps, device polls) runs on it, so that the
   * caller's thread never does. */
  bool worker_started, stop;
  bool lose_requested, destroyed; /* gpu_device_lose */
  pthread_t worker;
  pthread_cond_t wake;    /* the worker: commands queued, or stop */
  pthread_cond_t settled; /* waiters: an op completed or the device was lost */
  nw_cmd *cmds, *cmds_tail;
} nw_device;

typedef struct nw_obj nw_obj;
struct nw_obj {
  enum nw_kind kind;
  gpu_id dev;   /* the owning device (a device: its own id) */
  nw_obj *next; /* chains the objects of a device being released */
  union {
    nw_device *device;
    struct {
      WGPUBuffer handle;
      uint64_t size;
      unsigned usage; /* gpu_usage bits */
      int map_state;  /* NW_UNMAPPED, NW_MAP_PENDING, NW_MAPPED */
      uint64_t map_offset, map_size; /* the range last mapped */
    } buffer;
    WGPUComputePipeline pipeline;
    WGPUBindGroup group;
    struct {
      WGPUCommandEncoder handle;
      WGPUComputePassEncoder pass; /* the open compute pass, if any */
      bool failed;                 /* recording reported an error */
      gpu_id *mappable;            /* MAP_READ buffers it copies */
      uint32_t nmappable, capmappable;
    } encoder;
  } u;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static nw_obj **g_slots;  /* g_slots[id - 1] */
static uint32_t g_nslots; /* slots in use or on the free list */
static uint32_t g_cap;    /* capacity of g_slots and g_free */
static uint32_t *g_free;  /* indices of free slots */
static uint32_t g_nfree;
static uint64_t g_serial; /* last device serial handed out */

static void nw_lock(void) { pthread_mutex_lock(&g_lock); }
static void nw_unlock(void) { pthread_mutex_unlock(&g_lock); }

/* Enters o into the table; 0 when out of memory. */
static gpu_id nw_id_alloc(nw_obj *o) {
  gpu_id id = 0;
  nw_lock();
  if (g_nfree) {
    uint32_t i = g_free[--g_nfree];
    g_slots[i] = o;
    id = i + 1;
  } else if (g_nslots < UINT32_MAX - 1) {
    if (g_nslots == g_cap && g_cap < (1u << 30)) {
      uint32_t cap = g_cap ? g_cap * 2 : 64;
      nw_obj **slots = realloc(g_slots, cap * sizeof *slots);
      if (slots)
        g_slots = slots;
      uint32_t *fr = slots ? realloc(g_free, cap * sizeof *fr) : NULL;
      if (fr) {
        g_free = fr;
        g_cap = cap;
      }
    }
    if (g_nslots < g_cap) {
      g_slots[g_nslots] = o;
      id = ++g_nslots;
    }
  }
  nw_unlock();
  return id;
}

/* With g_lock held. */
static nw_obj *nw_get_locked(gpu_id id, enum nw_kind kind) {
  if (id == 0 || id > g_nslots)
    return NULL;
  nw_obj *o = g_slots[id - 1];
  return o && o->kind == kind ? o : NULL;
}

static nw_obj *nw_get(gpu_id id, enum nw_kind kind) {
  nw_lock();
  nw_obj *o = nw_get_locked(id, kind);
  nw_unlock();
  return o;
}

/* With g_lock held: removes the entry (the object itself is the caller's). */
static void nw_id_free_locked(gpu_id id) {
  g_slots[id - 1] = NULL;
  g_free[g_nfree++] = id - 1;
}

/* Removes id of the given kind from the table and returns its object. */
static nw_obj *nw_take(gpu_id id, enum nw_kind kind) {
  nw_lock();
  nw_obj *o = nw_get_locked(id, kind);
  if (o)
    nw_id_free_locked(id);
  nw_unlock();
  return o;
}

/* A device whose runtime device exists (nw_open_device is done). */
static nw_device *nw_dev(gpu_id id) {
  nw_lock();
  nw_obj *o = nw_get_locked(id, NW_DEVICE);
  nw_device *d = o && o->u.device->device ? o->u.device : NULL;
  nw_unlock();
  return d;
}

/* As nw_dev, but NULL once the device is lost: nothing new is made on it. */
static nw_device *nw_live_dev(gpu_id id) {
  nw_lock();
  nw_obj *o = nw_get_locked(id, NW_DEVICE);
  nw_device *d = o && o->u.device->device && !o->u.device->errors.lost
                     ? o->u.device
                     : NULL;
  nw_unlock();
  return d;
}

/* The device a runtime callback belongs to (userdata1 = id, userdata2 =
 * serial), or NULL once it was released. With g_lock held. */
static nw_device *nw_dev_from_user_locked(void *u1, void *u2) {
  nw_obj *o = nw_get_locked((gpu_id)(uintptr_t)u1, NW_DEVICE);
  if (!o || o->u.device->serial != (uint64_t)(uintptr_t)u2)
    return NULL;
  return o->u.device;
}

/* ---- strings and errors ------------------------------------------------- */

static size_t sv_len(WGPUStringView s) {
  if (!s.data)
    return 0;
  return s.length == WGPU_STRLEN ? strlen(s.data) : s.length;
}

/* wgpu-native's messages span lines ("Validation Error\n\nCaused by:\n
 *   In wgpuDeviceCreateBuffer\n    Buffer size ..."): made one line, the
 * boilerplate dropped, whitespace runs collapsed. */
static void nw_tidy(char *s) {
  static const char *const drop[] = {"Validation Error", "Caused by:"};
  char *out = s;
  const char *in = s;
  bool space = false;
  while (*in) {
    bool dropped = false;
    for (size_t k = 0; k < sizeof drop / sizeof drop[0]; k++) {
      size_t n = strlen(drop[k]);
      if ((in == s || in[-1] == '\n') && strncmp(in, drop[k], n) == 0) {
        in += n;
        dropped = true;
      }
    }
    if (dropped)
      continue;
    char c = *in++;
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      space = out != s;
      continue;
    }
    if (space)
      *out++ = ' ';
    space = false;
    *out++ = c;
  }
  *out = '\0';
}

/* Records an error on d unless one is pending. With g_lock held. */
static void nw_error_locked(nw_device *d, wgc_status st, const char *msg,
                            size_t len) {
  bool first = d->errors.error == WGC_OK;
  gpu_errors_note(&d->errors, st, msg, len);
  if (first)
    nw_tidy(d->errors.msg);
}

static void nw_error(nw_device *d, wgc_status st, const char *msg) {
  nw_lock();
  nw_error_locked(d, st, msg, strlen(msg));
  nw_unlock();
}

/* Host memory ran out in the call named what. */
static void nw_out_of_memory(nw_device *d, const char *what) {
  char msg[96];
  snprintf(msg, sizeof msg, "%s: out of host memory", what);
  nw_error(d, WGC_ERR_OUT_OF_MEMORY, msg);
}

static unsigned nw_error_count(nw_device *d) {
  nw_lock();
  unsigned n = d->errors.count;
  nw_unlock();
  return n;
}

static void nw_on_uncaptured_error(WGPUDevice const *device, WGPUErrorType type,
                                   WGPUStringView message, void *u1, void *u2) {
  (void)device;
  wgc_status st = gpu_errors_classify(type == WGPUErrorType_OutOfMemory,
                                      message.data, sv_len(message));
  nw_lock();
  nw_device *d = nw_dev_from_user_locked(u1, u2);
  if (d)
    nw_error_locked(d, st, message.data, sv_len(message));
  nw_unlock();
}

static void nw_on_device_lost(WGPUDevice const *device,
                              WGPUDeviceLostReason reason,
                              WGPUStringView message, void *u1, void *u2) {
  (void)device;
  if (reason == WGPUDeviceLostReason_CallbackCancelled)
    return;
  nw_lock();
  nw_device *d = nw_dev_from_user_locked(u1, u2);
  if (d) {
    gpu_errors_lost(&d->errors, message.data, sv_len(message));
    if (d->worker_started) /* waiters stop waiting */
      pthread_cond_broadcast(&d->settled);
  }
  nw_unlock();
}

wgc_status gpu_take_error(gpu_id dev, char *msg, size_t cap) {
  nw_device *d = nw_dev(dev);
  nw_lock();
  wgc_status st = gpu_errors_take(d ? &d->errors : NULL, msg, cap);
  nw_unlock();
  return st;
}

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

/* A new pending completion for cb on d; NULL, after cb fired with the
 * reason, when d is NULL (no such object) or host memory runs out (what
 * names the call). */
static nw_op *nw_op_new(nw_device *d, gpu_status_cb cb, void *user,
                        const char *what) {
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

/* Marks op done with st and moves it to the done queue; an orphan is only
 * freed. d is op's device (NULL once it was released). With g_lock held. */
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
 * lost, the first pending one: it fails with DEVICE_LOST). With g_lock
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

/* Fires op, which the caller unlinked and holds; g_lock is held on entry
 * and released before the callback runs. An entry cancelled, or not yet
 * done, fires with undone; one still held becomes an orphan, for its
 * holder to free. */
static void nw_op_fire(nw_op *op, wgc_status undone) {
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
 * g_lock held. */
static bool nw_worker_start_locked(nw_device *d) {
  if (d->worker_started)
    return true;
  pthread_cond_init(&d->wake, NULL);
  pthread_cond_init(&d->settled, NULL);
  if (pthread_create(&d->worker, NULL, nw_worker_main, d) != 0) {
    pthread_cond_destroy(&d->wake);
    pthread_cond_destroy(&d->settled);
    return false;
  }
  d->worker_started = true;
  return true;
}

/* Queues c for d's submission thread; false (c untouched) when the thread
 * cannot start. at_front: before everything queued (the test hook). */
static bool nw_enqueue(nw_device *d, nw_cmd *c, bool at_front) {
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

static nw_cmd *nw_cmd_new(enum nw_cmd_kind kind, size_t extra) {
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
  if (c->kind == NW_CMD_MAP) {
    WGPUBufferMapCallbackInfo cbi;
    memset(&cbi, 0, sizeof cbi);
    cbi.mode = WGPUCallbackMode_AllowProcessEvents;
    cbi.callback = nw_on_map;
    cbi.userdata1 = c->op;
    cbi.userdata2 = d;
    wgc_nw.BufferMapAsync(c->buffer, WGPUMapMode_Read, (size_t)c->offset,
                          (size_t)c->size, cbi);
  } else {
    WGPUQueueWorkDoneCallbackInfo cbi;
    memset(&cbi, 0, sizeof cbi);
    cbi.mode = WGPUCallbackMode_AllowProcessEvents;
    cbi.callback = nw_on_work_done;
    cbi.userdata1 = c->op;
    cbi.userdata2 = d;
    wgc_nw.QueueOnSubmittedWorkDone(d->queue, cbi);
  }
}

static bool nw_lost(nw_device *d) {
  nw_lock();
  bool lost = d->errors.lost;
  nw_unlock();
  return lost;
}

/* Runs a chain of commands in order. Consecutive submits go to the queue
 * as one (each queue submission costs a driver round trip, and lavapipe's
 * waits for the previous one); maps, work-done requests and releases that
 * follow them keep their order relative to them, and queue writes end a
 * run, since a write lands before the next submission. */
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
 * CPU time to them (software adapters run on the same cores). */
static void *nw_worker_main(void *arg) {
  nw_device *d = arg;
  long interval = 100000; /* ns */
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
      nw_unlock();
      wgc_nw.DevicePoll(d->device, false, NULL);
      nw_lock();
      if (d->in_runtime < before)
        interval = 100000;
      else if (interval < 2000000)
        interval *= 2;
      if (!d->cmds && d->in_runtime && !d->errors.lost) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += interval;
        if (ts.tv_nsec >= 1000000000) {
          ts.tv_sec++;
          ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&d->wake, &g_lock, &ts);
      }
      continue;
    }
    if (d->stop)
      break;
    pthread_cond_wait(&d->wake, &g_lock);
  }
  nw_unlock();
  return NULL;
}

/* Waits until every completion registered on d so far is done, or d is
 * lost. */
static void nw_wait_settled(nw_device *d) {
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
    while (d->undone && !d->errors.lost)
      pthread_cond_wait(&d->settled, &g_lock);
  }
  nw_unlock();
}

/* ---- instance, adapter, device ------------------------------------------ */

/* Serialises device requests, and with them the environment changes below.
 * The Vulkan loader and Mesa are steered only by environment variables
 * (which drivers to load, whether to print): they are set for the span of
 * one device request and restored before it returns, so programs that wgc
 * runs in see the environment they set. Another thread calling setenv or
 * getenv during wgc_create races with this, as with any setenv. */
static pthread_mutex_t g_instance_lock = PTHREAD_MUTEX_INITIALIZER;
/* The instance over the loader's own drivers. One that found no adapter is
 * dropped, so the next request starts afresh: a request that failed under a
 * transient memory shortage decides nothing for later ones. */
static WGPUInstance g_instance;
/* The instance over SwiftShader alone, kept once it found an adapter. */
static WGPUInstance g_swiftshader;
static unsigned g_live_devices;

static bool env_set(const char *name) {
  const char *v = getenv(name);
  return v && *v;
}

/* One variable set for a while, and how to put it back. */
typedef struct nw_env_saved {
  const char *name;
  char *old;    /* the value before, when there was one */
  bool had;     /* whether it was set before */
  bool changed; /* whether we set it */
} nw_env_saved;

/* Sets name to value, unless it is set already and !overwrite, or its old
 * value cannot be kept for the restore (host memory ran out). */
static void nw_env_push(nw_env_saved *s, const char *name, const char *value,
                        bool overwrite) {
  memset(s, 0, sizeof *s);
  s->name = name;
  const char *old = getenv(name);
  s->had = old != NULL;
  if (old && !overwrite)
    return;
  if (old && !(s->old = strdup(old)))
    return;
  s->changed = setenv(name, value, 1) == 0;
}

static void nw_env_pop(nw_env_saved *s) {
  if (s->changed) {
    if (s->had)
      setenv(s->name, s->old, 1);
    else
      unsetenv(s->name);
  }
  free(s->old);
  memset(s, 0, sizeof *s);
}

/* Whether the process can still map bytes of address space. When it
 * cannot, an adapter request that found nothing failed for want of memory,
 * not of a driver; SwiftShader is then not tried: it aborts the process
 * when it cannot start its threads. */
static bool nw_memory_to_spare(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return false;
  munmap(p, bytes);
  return true;
}

/* About what SwiftShader needs to start (it maps 300 MiB); lavapipe needs
 * more. */
#define NW_SPARE_BYTES ((size_t)512 << 20)

/* Mesa and the loader print nothing on our behalf with these set (during
 * a device request only; the user's own settings win):
 * - Mesa's lavapipe warns that it is not conformant unless told not to;
 * - Mesa's implicit device-select layer connects to Wayland, and
 *   libwayland prints an error when XDG_RUNTIME_DIR is not an absolute
 *   path (unset, typically in containers and CI). The layer only reorders
 *   devices (wgpu picks by its own rules), so it is left out then, unless
 *   the user asked for it with MESA_VK_DEVICE_SELECT. */
enum { NW_QUIET_VARS = 2 };
static void nw_quiet_push(nw_env_saved saved[NW_QUIET_VARS]) {
  nw_env_push(&saved[0], "MESA_VK_IGNORE_CONFORMANCE_WARNING", "1", false);
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  if ((!xdg || xdg[0] != '/') && !env_set("MESA_VK_DEVICE_SELECT"))
    nw_env_push(&saved[1], "NODEVICE_SELECT", "1", false);
  else
    memset(&saved[1], 0, sizeof saved[1]);
}

static void nw_quiet_pop(nw_env_saved saved[NW_QUIET_VARS]) {
  for (int i = NW_QUIET_VARS; i-- > 0;)
    nw_env_pop(&saved[i]);
}

static WGPUInstance nw_create_instance(void) {
  WGPUInstanceExtras extras;
  memset(&extras, 0, sizeof extras);
  extras.chain.sType = (WGPUSType)WGPUSType_InstanceExtras;
  extras.backends = WGPUInstanceBackend_Vulkan;
  extras.flags = WGPUInstanceFlag_Default;
  WGPUInstanceDescriptor desc;
  memset(&desc, 0, sizeof desc);
  desc.nextInChain = &extras.chain;
  return wgc_nw.CreateInstance(&desc);
}

/* An instance whose loader sees SwiftShader only: the loader reads
 * VK_DRIVER_FILES (VK_ICD_FILENAMES before 1.3.207) when the Vulkan
 * instance is created, which wgpu does in wgpuCreateInstance. */
static WGPUInstance nw_create_swiftshader_instance(void) {
  nw_env_saved files, names;
  nw_env_push(&files, "VK_DRIVER_FILES", NW_SWIFTSHADER_ICD, true);
  nw_env_push(&names, "VK_ICD_FILENAMES", NW_SWIFTSHADER_ICD, true);
  WGPUInstance inst =
      files.changed && names.changed ? nw_create_instance() : NULL;
  nw_env_pop(&names);
  nw_env_pop(&files);
  return inst;
}

static void nw_sleep_briefly(void) {
  struct timespec ts = {0, 1000000}; /* 1 ms */
  nanosleep(&ts, NULL);
}

/* A request (adapter or device) the runtime answers through a callback.
 * Heap-allocated: if the answer never came while we waited (it comes at
 * once in practice), the late callback frees it. */
typedef struct nw_request {
  bool is_device; /* else an adapter */
  bool done, abandoned;
  bool ok;
  wgc_status status; /* a device's: why it failed */
  void *handle;      /* WGPUAdapter or WGPUDevice */
} nw_request;

static void nw_request_finish(nw_request *r, bool ok, void *handle) {
  nw_lock();
  bool abandoned = r->abandoned;
  if (!abandoned) {
    r->done = true;
    r->ok = ok;
    r->handle = handle;
  }
  nw_unlock();
  if (abandoned) { /* nobody waits any more: drop what came */
    if (handle && r->is_device)
      wgc_nw.DeviceRelease(handle);
    else if (handle)
      wgc_nw.AdapterRelease(handle);
    free(r);
  }
}

static void nw_on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter,
                          WGPUStringView message, void *u1, void *u2) {
  (void)message;
  (void)u2;
  nw_request_finish(u1, status == WGPURequestAdapterStatus_Success && adapter,
                    adapter);
}

static void nw_on_device(WGPURequestDeviceStatus status, WGPUDevice device,
                         WGPUStringView message, void *u1, void *u2) {
  (void)u2;
  nw_request *r = u1;
  bool ok = status == WGPURequestDeviceStatus_Success && device;
  /* set before the answer is published; only the waiter reads it */
  r->status =
      ok ? WGC_OK : gpu_errors_classify(false, message.data, sv_len(message));
  nw_request_finish(r, ok, device);
}

/* Waits (processing the instance's events) until r is answered; true if it
 * was, and r is the caller's to free. Otherwise r is abandoned to its
 * callback. wgpu-native answers requests before returning, so this does not
 * loop in practice. */
static bool nw_request_wait(WGPUInstance inst, nw_request *r) {
  for (int i = 0; i < 30000; i++) {
    nw_lock();
    bool done = r->done;
    nw_unlock();
    if (done)
      return true;
    if (inst)
      wgc_nw.InstanceProcessEvents(inst);
    if (i)
      nw_sleep_briefly();
  }
  nw_lock();
  bool done = r->done;
  r->abandoned = !done;
  nw_unlock();
  return done;
}

static WGPUAdapter nw_request_adapter(WGPUInstance inst, int power) {
  if (!inst)
    return NULL;
  nw_request *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  WGPURequestAdapterOptions opt;
  memset(&opt, 0, sizeof opt);
  opt.featureLevel = WGPUFeatureLevel_Core;
  /* A compute library wants the fastest device unless told otherwise. */
  opt.powerPreference = power == WGC_POWER_LOW
                            ? WGPUPowerPreference_LowPower
                            : WGPUPowerPreference_HighPerformance;
  WGPURequestAdapterCallbackInfo cbi;
  memset(&cbi, 0, sizeof cbi);
  cbi.mode = WGPUCallbackMode_AllowProcessEvents;
  cbi.callback = nw_on_adapter;
  cbi.userdata1 = r;
  wgc_nw.InstanceRequestAdapter(inst, &opt, cbi);
  if (!nw_request_wait(inst, r))
    return NULL;
  WGPUAdapter a = r->ok ? r->handle : NULL;
  free(r);
  return a;
}

/* An adapter (and the instance it came from, for waiting on the device
 * request) from the loader's own drivers, or else from SwiftShader: only
 * when the loader offers no adapter at all, the user chose no drivers
 * (VK_DRIVER_FILES, VK_ICD_FILENAMES), and memory is not what failed.
 * With g_instance_lock held. */
static WGPUAdapter nw_adapter(int power, WGPUInstance *inst) {
  if (!g_instance)
    g_instance = nw_create_instance();
  *inst = g_instance;
  WGPUAdapter a = nw_request_adapter(g_instance, power);
  if (a)
    return a;
  /* Nothing found: a later request creates a new instance. Devices and
   * adapters keep what they need of it alive. */
  if (g_instance)
    wgc_nw.InstanceRelease(g_instance);
  g_instance = NULL;
  if (env_set("VK_DRIVER_FILES") || env_set("VK_ICD_FILENAMES") ||
      access(NW_SWIFTSHADER_ICD, R_OK) != 0 ||
      !nw_memory_to_spare(NW_SPARE_BYTES)) {
    *inst = NULL;
    return NULL;
  }
  if (!g_swiftshader)
    g_swiftshader = nw_create_swiftshader_instance();
  *inst = g_swiftshader;
  a = nw_request_adapter(g_swiftshader, power);
  if (!a && g_swiftshader) {
    wgc_nw.InstanceRelease(g_swiftshader);
    g_swiftshader = NULL;
    *inst = NULL;
  }
  return a;
}

static const char *nw_backend_name(WGPUBackendType t) {
  switch (t) {
  case WGPUBackendType_Vulkan:
    return "Vulkan";
  case WGPUBackendType_Metal:
    return "Metal";
  case WGPUBackendType_D3D12:
    return "D3D12";
  case WGPUBackendType_D3D11:
    return "D3D11";
  case WGPUBackendType_OpenGL:
    return "OpenGL";
  case WGPUBackendType_OpenGLES:
    return "OpenGLES";
  default:
    return "unknown backend";
  }
}

static const char *nw_adapter_type_name(WGPUAdapterType t) {
  switch (t) {
  case WGPUAdapterType_DiscreteGPU:
    return "discrete GPU";
  case WGPUAdapterType_IntegratedGPU:
    return "integrated GPU";
  case WGPUAdapterType_CPU:
    return "CPU";
  default:
    return "unknown type";
  }
}

/* "<device> (<backend>, <type>[, <driver description>])"; cpu: whether
 * the adapter is a software one on the CPU. */
static void nw_adapter_name(WGPUAdapter adapter, char *buf, size_t cap,
                            bool *cpu) {
  WGPUAdapterInfo info;
  memset(&info, 0, sizeof info);
  if (wgc_nw.AdapterGetInfo(adapter, &info) != WGPUStatus_Success) {
    snprintf(buf, cap, "unknown adapter");
    return;
  }
  *cpu = info.adapterType == WGPUAdapterType_CPU;
  int dl = (int)(sv_len(info.device) < 200 ? sv_len(info.device) : 200);
  int ds =
      (int)(sv_len(info.description) < 100 ? sv_len(info.description) : 100);
  const char *dev = dl ? info.device.data : "unknown device";
  if (!dl)
    dl = (int)strlen(dev);
  if (ds)
    snprintf(buf, cap, "%.*s (%s, %s, %.*s)", dl, dev,
             nw_backend_name(info.backendType),
             nw_adapter_type_name(info.adapterType), ds, info.description.data);
  else
    snprintf(buf, cap, "%.*s (%s, %s)", dl, dev,
             nw_backend_name(info.backendType),
             nw_adapter_type_name(info.adapterType));
  wgc_nw.AdapterInfoFreeMembers(info);
}

static void nw_limits(const WGPULimits *l, gpu_limits *out) {
  out->max_buffer_size = l->maxBufferSize;
  out->max_storage_binding_size = l->maxStorageBufferBindingSize;
  out->min_storage_offset_alignment = l->minStorageBufferOffsetAlignment;
  out->min_uniform_offset_alignment = l->minUniformBufferOffsetAlignment;
  out->max_workgroups_per_dimension = l->maxComputeWorkgroupsPerDimension;
  out->max_invocations_per_workgroup = l->maxComputeInvocationsPerWorkgroup;
  out->max_workgroup_size_x = l->maxComputeWorkgroupSizeX;
  out->max_workgroup_size_y = l->maxComputeWorkgroupSizeY;
  out->max_workgroup_storage_size = l->maxComputeWorkgroupStorageSize;
  out->max_storage_buffers_per_stage = l->maxStorageBuffersPerShaderStage;
}

/* Undoes nw_open_device once the device has its id (o): returns st. */
static wgc_status nw_open_failed(WGPUAdapter adapter, gpu_id id, nw_obj *o,
                                 wgc_status st) {
  wgc_nw.AdapterRelease(adapter);
  nw_lock();
  nw_id_free_locked(id);
  nw_unlock();
  free(o->u.device);
  free(o);
  return st;
}

/* Opens a device on adapter (which it owns from here on). */
static wgc_status nw_open_device(WGPUInstance inst, WGPUAdapter adapter,
                                 gpu_id *out) {
  *out = 0;
  nw_obj *o = calloc(1, sizeof *o);
  nw_device *d = calloc(1, sizeof *d);
  gpu_id id = 0;
  if (o && d) {
    o->kind = NW_DEVICE;
    o->u.device = d;
    id = nw_id_alloc(o);
  }
  if (!id) {
    free(d);
    free(o);
    wgc_nw.AdapterRelease(adapter);
    return WGC_ERR_OUT_OF_MEMORY;
  }
  o->dev = id;
  d->adapter = adapter;
  nw_lock();
  d->serial = ++g_serial;
  nw_unlock();

  WGPULimits lim;
  memset(&lim, 0, sizeof lim);
  if (wgc_nw.AdapterGetLimits(adapter, &lim) != WGPUStatus_Success)
    return nw_open_failed(adapter, id, o, WGC_ERR_DEVICE);
  lim.nextInChain = NULL;
  bool cpu = false;
  nw_adapter_name(adapter, d->name, sizeof d->name, &cpu);

  WGPUDeviceDescriptor desc;
  memset(&desc, 0, sizeof desc);
  desc.requiredLimits = &lim;
  desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
  desc.deviceLostCallbackInfo.callback = nw_on_device_lost;
  desc.deviceLostCallbackInfo.userdata1 = (void *)(uintptr_t)id;
  desc.deviceLostCallbackInfo.userdata2 = (void *)(uintptr_t)d->serial;
  desc.uncapturedErrorCallbackInfo.callback = nw_on_uncaptured_error;
  desc.uncapturedErrorCallbackInfo.userdata1 = (void *)(uintptr_t)id;
  desc.uncapturedErrorCallbackInfo.userdata2 = (void *)(uintptr_t)d->serial;

  nw_request *r = calloc(1, sizeof *r);
  if (!r)
    return nw_open_failed(adapter, id, o, WGC_ERR_OUT_OF_MEMORY);
  r->is_device = true;
  WGPURequestDeviceCallbackInfo cbi;
  memset(&cbi, 0, sizeof cbi);
  cbi.mode = WGPUCallbackMode_AllowProcessEvents;
  cbi.callback = nw_on_device;
  cbi.userdata1 = r;
  wgc_nw.AdapterRequestDevice(adapter, &desc, cbi);
  WGPUDevice device = NULL;
  wgc_status why = WGC_ERR_DEVICE;
  if (nw_request_wait(inst, r)) {
    device = r->ok ? r->handle : NULL;
    if (r->status != WGC_OK)
      why = r->status;
    free(r);
  }
  if (!device)
    return nw_open_failed(adapter, id, o, why);
  nw_limits(&lim, &d->limits);
  d->limits.cpu_adapter = cpu;
  d->queue = wgc_nw.DeviceGetQueue(device);
  nw_lock();
  d->device = device; /* now visible to nw_dev */
  nw_unlock();
  *out = id;
  return WGC_OK;
}

wgc_status gpu_request_device(int power, gpu_device_cb cb, void *user) {
  if (!cb)
    return WGC_ERR_INVALID_ARGUMENT;
  if (!wgc_nw_load())
    return WGC_ERR_NO_ADAPTER;
  pthread_mutex_lock(&g_instance_lock);
  nw_env_saved quiet[NW_QUIET_VARS];
  nw_quiet_push(quiet);
  WGPUInstance inst = NULL;
  WGPUAdapter adapter = nw_adapter(power, &inst);
  wgc_status st = WGC_ERR_NO_ADAPTER;
  gpu_id id = 0;
  if (adapter) {
    st = nw_open_device(inst, adapter, &id);
    if (st == WGC_OK)
      g_live_devices++;
  }
  nw_quiet_pop(quiet);
  pthread_mutex_unlock(&g_instance_lock);
  cb(st, id, user);
  return WGC_OK;
}

void gpu_device_limits(gpu_id dev, gpu_limits *out) {
  if (!out)
    return;
  nw_device *d = nw_dev(dev);
  if (d)
    *out = d->limits;
  else
    memset(out, 0, sizeof *out);
}

void gpu_device_name(gpu_id dev, char *buf, size_t cap) {
  nw_device *d = nw_dev(dev);
  const char *name = d ? d->name : "";
  gpu_copy_str(buf, cap, name, strlen(name));
}

/* Releases the runtime objects of a table entry other than a device. */
static void nw_obj_drop(const nw_obj *o) {
  switch (o->kind) {
  case NW_BUFFER:
    wgc_nw.BufferRelease(o->u.buffer.handle);
    break;
  case NW_PIPELINE:
    wgc_nw.ComputePipelineRelease(o->u.pipeline);
    break;
  case NW_GROUP:
    wgc_nw.BindGroupRelease(o->u.group);
    break;
  case NW_ENCODER:
    if (o->u.encoder.pass)
      wgc_nw.ComputePassEncoderRelease(o->u.encoder.pass);
    wgc_nw.CommandEncoderRelease(o->u.encoder.handle);
    free(o->u.encoder.mappable);
    break;
  default:
    break;
  }
}

static void nw_obj_release(nw_obj *o) {
  nw_obj_drop(o);
  free(o);
}

void gpu_device_release(gpu_id dev) {
  nw_device *d = nw_dev(dev);
  if (!d)
    return;
  /* Let submitted work finish so pending completions get real statuses;
   * then the submission thread runs what is still queued (failing it, once
   * the device is lost) and ends. */
  nw_wait_settled(d);
  nw_lock();
  bool started = d->worker_started;
  d->stop = true;
  if (started)
    pthread_cond_signal(&d->wake);
  nw_unlock();
  if (started) {
    pthread_join(d->worker, NULL);
    pthread_cond_destroy(&d->wake);
    pthread_cond_destroy(&d->settled);
  }

  /* Unlink the device and everything created on it. */
  nw_lock();
  nw_obj *o = nw_get_locked(dev, NW_DEVICE);
  if (!o || o->u.device != d) { /* released meanwhile */
    nw_unlock();
    return;
  }
  bool lost = d->errors.lost;
  nw_id_free_locked(dev);
  nw_obj *children = NULL, **tail = &children;
  for (uint32_t i = 0; i < g_nslots; i++) {
    nw_obj *c = g_slots[i];
    if (c && c->dev == dev) {
      nw_id_free_locked(i + 1);
      c->next = NULL;
      *tail = c;
      tail = &c->next;
    }
  }
  /* the done ones first, then those pending */
  nw_op *ops = d->done;
  if (d->done_tail) {
    d->done_tail->next = d->ops;
    if (d->ops)
      d->ops->prev = d->done_tail;
  } else {
    ops = d->ops;
  }
  d->done = d->done_tail = d->ops = d->ops_tail = NULL;
  d->undone = 0;
  /* Completions not done by now never will be for the caller: they fire
   * CANCELLED (DEVICE_LOST) below, whatever the runtime says later. */
  for (nw_op *op = ops; op; op = op->next) {
    op->buf = 0;
    op->cancelled = !op->done;
    if (lost && op->done)
      op->status = WGC_ERR_DEVICE_LOST;
  }
  nw_unlock();

  /* Fire what is still pending, in order. */
  while (ops) {
    nw_lock();
    nw_op *op = ops;
    ops = op->next;
    op->prev = op->next = NULL;
    nw_op_fire(op, lost ? WGC_ERR_DEVICE_LOST : WGC_ERR_CANCELLED);
  }

  while (children) {
    nw_obj *c = children;
    children = c->next;
    nw_obj_release(c);
  }
  /* Dropping the last reference to a device makes wgpu-native wait for it,
   * which aborts the process on a device the driver lost: that one is
   * leaked. One destroyed through wgpuDeviceDestroy drops cleanly. */
  if (!lost || d->destroyed) {
    wgc_nw.QueueRelease(d->queue);
    wgc_nw.DeviceRelease(d->device);
  }
  wgc_nw.AdapterRelease(d->adapter);
  free(d);
  free(o);
  pthread_mutex_lock(&g_instance_lock);
  g_live_devices--;
  pthread_mutex_unlock(&g_instance_lock);
}

/* ---- buffers ------------------------------------------------------------ */

/* Enters the runtime object that o describes (kind and handle set) into
 * the table as an object of device dev. It is released instead, and 0
 * returned, when creating it reported an error (d's error count moved past
 * errors) or host memory runs out (recorded on d; what names the call). */
static gpu_id nw_enter(nw_device *d, gpu_id dev, nw_obj o, unsigned errors,
                       const char *what) {
  if (nw_error_count(d) != errors) {
    nw_obj_drop(&o);
    return 0;
  }
  o.dev = dev;
  nw_obj *p = malloc(sizeof *p);
  if (p)
    *p = o;
  gpu_id id = p ? nw_id_alloc(p) : 0;
  if (!id) {
    free(p);
    nw_obj_drop(&o);
    nw_out_of_memory(d, what);
  }
  return id;
}

gpu_id gpu_buffer_create(gpu_id dev, uint64_t size, unsigned usage) {
  nw_device *d = nw_live_dev(dev);
  if (!d)
    return 0;
  WGPUBufferDescriptor desc;
  memset(&desc, 0, sizeof desc);
  desc.size = size;
  desc.usage = WGPUBufferUsage_None;
  if (usage & GPU_USAGE_STORAGE)
    desc.usage |= WGPUBufferUsage_Storage;
  if (usage & GPU_USAGE_UNIFORM)
    desc.usage |= WGPUBufferUsage_Uniform;
  if (usage & GPU_USAGE_COPY_SRC)
    desc.usage |= WGPUBufferUsage_CopySrc;
  if (usage & GPU_USAGE_COPY_DST)
    desc.usage |= WGPUBufferUsage_CopyDst;
  if (usage & GPU_USAGE_MAP_READ)
    desc.usage |= WGPUBufferUsage_MapRead;
  unsigned errors = nw_error_count(d);
  WGPUBuffer b = wgc_nw.DeviceCreateBuffer(d->device, &desc);
  if (!b) {
    if (nw_error_count(d) == errors) {
      char msg[96];
      snprintf(msg, sizeof msg, "gpu_buffer_create: %llu bytes not allocated",
               (unsigned long long)size);
      nw_error(d, WGC_ERR_OUT_OF_MEMORY, msg);
    }
    return 0;
  }
  nw_obj o = {.kind = NW_BUFFER,
              .u.buffer = {.handle = b, .size = size, .usage = usage}};
  return nw_enter(d, dev, o, errors, "gpu_buffer_create");
}

void gpu_buffer_release(gpu_id buf) {
  nw_lock();
  nw_obj *o = nw_get_locked(buf, NW_BUFFER);
  if (o) {
    nw_id_free_locked(buf);
    /* a map still pending must not touch a later buffer in this slot */
    nw_obj *od = o->u.buffer.map_state == NW_MAP_PENDING
                     ? nw_get_locked(o->dev, NW_DEVICE)
                     : NULL;
    for (nw_op *op = od ? od->u.device->ops : NULL; op; op = op->next)
      if (op->buf == buf)
        op->buf = 0;
  }
  nw_unlock();
  if (!o)
    return;
  /* Writes and maps still queued use the handle: it goes after them. */
  nw_device *d = nw_dev(o->dev);
  nw_cmd *c = d ? nw_cmd_new(NW_CMD_RELEASE, 0) : NULL;
  if (c) {
    c->buffer = o->u.buffer.handle;
    if (nw_enqueue(d, c, false)) {
      free(o);
      return;
    }
    free(c);
  }
  nw_obj_release(o);
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

void gpu_buffer_map_read(gpu_id buf, uint64_t offset, uint64_t size,
                         gpu_status_cb cb, void *user) {
  nw_obj *b = nw_get(buf, NW_BUFFER);
  nw_device *d = b ? nw_dev(b->dev) : NULL;
  nw_op *op = nw_op_new(d, cb, user, "gpu_buffer_map_read");
  if (!op)
    return;
  /* WebGPU maps from a multiple of 8, a size multiple of 4: map the aligned
   * range around the request (gpu_buffer_read copies out of it). */
  uint64_t bsize = b->u.buffer.size;
  uint64_t start = offset & ~(uint64_t)7;
  uint64_t end = (offset + size + 3) & ~(uint64_t)3;
  const char *why = NULL;
  if (!(b->u.buffer.usage & GPU_USAGE_MAP_READ))
    why = "the buffer lacks MAP_READ usage";
  else if (offset > bsize || size > bsize - offset || end > bsize)
    why = "the range overruns the buffer";
  nw_lock();
  if (!why && b->u.buffer.map_state != NW_UNMAPPED)
    why = "the buffer is already mapped or being mapped";
  if (!why) {
    op->buf = buf;
    b->u.buffer.map_state = NW_MAP_PENDING;
    b->u.buffer.map_offset = start;
    b->u.buffer.map_size = end - start;
  }
  nw_unlock();
  nw_cmd *c = why ? NULL : nw_cmd_new(NW_CMD_MAP, 0);
  if (!why && !c)
    why = "out of host memory";
  if (c) {
    c->buffer = b->u.buffer.handle;
    c->offset = start;
    c->size = end - start;
    c->op = op;
    if (!nw_enqueue(d, c, false)) {
      free(c);
      why = "no submission thread";
    }
  }
  if (why) {
    char msg[128];
    snprintf(msg, sizeof msg, "gpu_buffer_map_read: %s", why);
    nw_lock();
    b->u.buffer.map_state = NW_UNMAPPED;
    op->buf = 0;
    /* fails from gpu_process_events, as if the runtime said so */
    nw_list_remove(&d->ops, &d->ops_tail, op);
    d->undone--;
    op->done = true;
    op->status = WGC_ERR_INVALID_ARGUMENT;
    nw_list_append(&d->done, &d->done_tail, op);
    nw_error_locked(d, WGC_ERR_DEVICE, msg, strlen(msg));
    nw_unlock();
  }
}

void gpu_buffer_read_many(gpu_id buf, const gpu_read *reads, size_t n) {
  nw_obj *b = nw_get(buf, NW_BUFFER);
  if (!b)
    return;
  nw_lock();
  bool mapped = b->u.buffer.map_state == NW_MAPPED;
  uint64_t mo = b->u.buffer.map_offset, ms = b->u.buffer.map_size;
  nw_obj *od = nw_get_locked(b->dev, NW_DEVICE);
  bool lost = od && od->u.device->errors.lost;
  if (lost)
    b->u.buffer.map_state = NW_UNMAPPED;
  nw_unlock();
  /* A destroyed device's buffers are gone: wgpu-native aborts the process
   * when one is read or unmapped. */
  if (lost)
    return;
  /* wgpu-native aborts the process when asked for a range not mapped */
  if (!mapped) {
    nw_device *d = nw_dev(b->dev);
    if (d)
      nw_error(d, WGC_ERR_DEVICE, "gpu_buffer_read: the buffer is not mapped");
    return;
  }
  const void *p = wgc_nw.BufferGetConstMappedRange(b->u.buffer.handle,
                                                   (size_t)mo, (size_t)ms);
  for (size_t i = 0; p && i < n; i++) {
    uint64_t offset = reads[i].offset, size = reads[i].size;
    if (size && reads[i].dst && offset >= mo && offset - mo <= ms &&
        size <= ms - (offset - mo))
      memcpy(reads[i].dst, (const char *)p + (offset - mo), (size_t)size);
  }
  nw_lock();
  b->u.buffer.map_state = NW_UNMAPPED;
  nw_unlock();
  wgc_nw.BufferUnmap(b->u.buffer.handle);
}

void gpu_buffer_read(gpu_id buf, uint64_t offset, void *dst, uint64_t size) {
  gpu_read r = {offset, dst, size};
  gpu_buffer_read_many(buf, &r, 1);
}

/* ---- pipelines and bind groups ------------------------------------------ */

gpu_id gpu_pipeline_create(gpu_id dev, const char *wgsl, size_t len) {
  nw_device *d = nw_live_dev(dev);
  if (!d || !wgsl)
    return 0;
  unsigned errors = nw_error_count(d);
  WGPUShaderSourceWGSL src;
  memset(&src, 0, sizeof src);
  src.chain.sType = WGPUSType_ShaderSourceWGSL;
  src.code.data = wgsl;
  src.code.length = len;
  WGPUShaderModuleDescriptor smd;
  memset(&smd, 0, sizeof smd);
  smd.nextInChain = &src.chain;
  WGPUShaderModule sm = wgc_nw.DeviceCreateShaderModule(d->device, &smd);
  if (!sm || nw_error_count(d) != errors) {
    if (sm)
      wgc_nw.ShaderModuleRelease(sm);
    return 0;
  }
  WGPUComputePipelineDescriptor pd;
  memset(&pd, 0, sizeof pd);
  pd.layout = NULL; /* automatic */
  pd.compute.module = sm;
  pd.compute.entryPoint.data = "main";
  pd.compute.entryPoint.length = WGPU_STRLEN;
  WGPUComputePipeline p = wgc_nw.DeviceCreateComputePipeline(d->device, &pd);
  wgc_nw.ShaderModuleRelease(sm);
  if (!p)
    return 0;
  nw_obj o = {.kind = NW_PIPELINE, .u.pipeline = p};
  return nw_enter(d, dev, o, errors, "gpu_pipeline_create");
}

void gpu_pipeline_release(gpu_id pipeline) {
  nw_obj *o = nw_take(pipeline, NW_PIPELINE);
  if (o)
    nw_obj_release(o);
}

gpu_id gpu_bind_group_create(gpu_id dev, gpu_id pipeline, uint32_t count,
                             const gpu_binding *bindings) {
  nw_device *d = nw_live_dev(dev);
  nw_obj *p = nw_get(pipeline, NW_PIPELINE);
  if (!d || !p || (count && !bindings))
    return 0;
  enum { SMALL = 16 };
  WGPUBindGroupEntry small[SMALL];
  WGPUBindGroupEntry *e = count <= SMALL ? small : calloc(count, sizeof *e);
  if (!e) {
    nw_out_of_memory(d, "gpu_bind_group_create");
    return 0;
  }
  for (uint32_t i = 0; i < count; i++) {
    nw_obj *b = nw_get(bindings[i].buffer, NW_BUFFER);
    /* wgpu-native aborts the process on a zero-size binding */
    if (!b || bindings[i].size == 0) {
      if (e != small)
        free(e);
      char msg[96];
      snprintf(msg, sizeof msg, "gpu_bind_group_create: binding %u: %s",
               (unsigned)i, b ? "size 0" : "no such buffer");
      nw_error(d, WGC_ERR_DEVICE, msg);
      return 0;
    }
    memset(&e[i], 0, sizeof e[i]);
    e[i].binding = i;
    e[i].buffer = b->u.buffer.handle;
    e[i].offset = bindings[i].offset;
    e[i].size = bindings[i].size;
  }
  unsigned errors = nw_error_count(d);
  WGPUBindGroupLayout layout =
      wgc_nw.ComputePipelineGetBindGroupLayout(p->u.pipeline, 0);
  WGPUBindGroup g = NULL;
  if (layout && nw_error_count(d) == errors) {
    WGPUBindGroupDescriptor desc;
    memset(&desc, 0, sizeof desc);
    desc.layout = layout;
    desc.entryCount = count;
    desc.entries = e;
    g = wgc_nw.DeviceCreateBindGroup(d->device, &desc);
  }
  if (layout)
    wgc_nw.BindGroupLayoutRelease(layout);
  if (e != small)
    free(e);
  if (!g)
    return 0;
  nw_obj o = {.kind = NW_GROUP, .u.group = g};
  return nw_enter(d, dev, o, errors, "gpu_bind_group_create");
}

void gpu_bind_group_release(gpu_id group) {
  nw_obj *o = nw_take(group, NW_GROUP);
  if (o)
    nw_obj_release(o);
}

/* ---- command recording -------------------------------------------------- */

gpu_id gpu_encoder_create(gpu_id dev) {
  nw_device *d = nw_live_dev(dev);
  if (!d)
    return 0;
  unsigned errors = nw_error_count(d);
  WGPUCommandEncoder enc = wgc_nw.DeviceCreateCommandEncoder(d->device, NULL);
  if (!enc) {
    nw_error(d, WGC_ERR_DEVICE, "gpu_encoder_create: no command encoder");
    return 0;
  }
  nw_obj o = {.kind = NW_ENCODER, .u.encoder.handle = enc};
  return nw_enter(d, dev, o, errors, "gpu_encoder_create");
}

/* Encoder calls report recording errors at once or at finish; a command
 * buffer with an error must not be submitted (wgpu-native aborts the
 * process on a failed submit), so each call notes whether one came. */
static void nw_end_pass(nw_obj *e) {
  if (!e->u.encoder.pass)
    return;
  wgc_nw.ComputePassEncoderEnd(e->u.encoder.pass);
  wgc_nw.ComputePassEncoderRelease(e->u.encoder.pass);
  e->u.encoder.pass = NULL;
}

void gpu_encoder_dispatch(gpu_id enc, gpu_id pipeline, gpu_id group, uint32_t x,
                          uint32_t y, uint32_t z) {
  nw_lock();
  nw_obj *e = nw_get_locked(enc, NW_ENCODER);
  nw_obj *p = nw_get_locked(pipeline, NW_PIPELINE);
  nw_obj *g = group ? nw_get_locked(group, NW_GROUP) : NULL;
  nw_obj *od = e ? nw_get_locked(e->dev, NW_DEVICE) : NULL;
  nw_unlock();
  if (!e || !od)
    return;
  nw_device *d = od->u.device;
  if (!p || (group && !g)) {
    e->u.encoder.failed = true;
    nw_error(d, WGC_ERR_DEVICE,
             "gpu_encoder_dispatch: no such pipeline or bind group");
    return;
  }
  unsigned errors = nw_error_count(d);
  if (!e->u.encoder.pass)
    e->u.encoder.pass =
        wgc_nw.CommandEncoderBeginComputePass(e->u.encoder.handle, NULL);
  WGPUComputePassEncoder pass = e->u.encoder.pass;
  if (pass) {
    wgc_nw.ComputePassEncoderSetPipeline(pass, p->u.pipeline);
    if (g)
      wgc_nw.ComputePassEncoderSetBindGroup(pass, 0, g->u.group, 0, NULL);
    wgc_nw.ComputePassEncoderDispatchWorkgroups(pass, x, y, z);
  }
  if (!pass || nw_error_count(d) != errors)
    e->u.encoder.failed = true;
}

void gpu_encoder_copy(gpu_id enc, gpu_id src, uint64_t src_offset, gpu_id dst,
                      uint64_t dst_offset, uint64_t size) {
  nw_lock();
  nw_obj *e = nw_get_locked(enc, NW_ENCODER);
  nw_obj *s = nw_get_locked(src, NW_BUFFER);
  nw_obj *t = nw_get_locked(dst, NW_BUFFER);
  nw_obj *od = e ? nw_get_locked(e->dev, NW_DEVICE) : NULL;
  nw_unlock();
  if (!e || !od)
    return;
  nw_device *d = od->u.device;
  if (!s || !t) {
    e->u.encoder.failed = true;
    nw_error(d, WGC_ERR_DEVICE, "gpu_encoder_copy: no such buffer");
    return;
  }
  /* remember mappable buffers: submitting while one is mapped is fatal */
  for (int k = 0; k < 2; k++) {
    nw_obj *b = k ? t : s;
    gpu_id id = k ? dst : src;
    if (!(b->u.buffer.usage & GPU_USAGE_MAP_READ))
      continue;
    if (e->u.encoder.nmappable == e->u.encoder.capmappable) {
      uint32_t cap =
          e->u.encoder.capmappable ? e->u.encoder.capmappable * 2 : 4;
      gpu_id *m = realloc(e->u.encoder.mappable, cap * sizeof *m);
      if (!m) {
        e->u.encoder.failed = true;
        nw_out_of_memory(d, "gpu_encoder_copy");
        return;
      }
      e->u.encoder.mappable = m;
      e->u.encoder.capmappable = cap;
    }
    e->u.encoder.mappable[e->u.encoder.nmappable++] = id;
  }
  unsigned errors = nw_error_count(d);
  nw_end_pass(e);
  wgc_nw.CommandEncoderCopyBufferToBuffer(e->u.encoder.handle,
                                          s->u.buffer.handle, src_offset,
                                          t->u.buffer.handle, dst_offset, size);
  if (nw_error_count(d) != errors)
    e->u.encoder.failed = true;
}

void gpu_encoder_submit(gpu_id dev, gpu_id enc) {
  nw_device *d = nw_dev(dev);
  nw_obj *e = nw_take(enc, NW_ENCODER);
  if (!e)
    return;
  if (!d || e->dev != dev) {
    nw_obj_release(e);
    return;
  }
  unsigned errors = nw_error_count(d);
  nw_end_pass(e);
  WGPUCommandBuffer cmd =
      wgc_nw.CommandEncoderFinish(e->u.encoder.handle, NULL);
  bool failed = e->u.encoder.failed || !cmd || nw_error_count(d) != errors;
  const char *why = NULL;
  nw_lock();
  for (uint32_t i = 0; !failed && i < e->u.encoder.nmappable; i++) {
    nw_obj *b = nw_get_locked(e->u.encoder.mappable[i], NW_BUFFER);
    if (b && b->u.buffer.map_state != NW_UNMAPPED) {
      failed = true;
      why = "gpu_encoder_submit: a buffer it copies to or from is mapped";
    }
  }
  nw_unlock();
  if (why)
    nw_error(d, WGC_ERR_DEVICE, why);
  /* A failed command buffer is dropped; its error is in gpu_take_error.
   * The submission thread submits (and releases) the others. */
  nw_cmd *c = cmd && !failed ? nw_cmd_new(NW_CMD_SUBMIT, 0) : NULL;
  if (c) {
    c->cmd = cmd;
    if (nw_enqueue(d, c, false))
      cmd = NULL;
    else
      free(c);
  }
  if (cmd && !failed)
    nw_error(d, WGC_ERR_DEVICE, "gpu_encoder_submit: not submitted");
  if (cmd)
    wgc_nw.CommandBufferRelease(cmd);
  nw_obj_release(e);
}

/* ---- completions and events --------------------------------------------- */

void gpu_on_work_done(gpu_id dev, gpu_status_cb cb, void *user) {
  nw_device *d = nw_dev(dev);
  nw_op *op = nw_op_new(d, cb, user, "gpu_on_work_done");
  if (!op)
    return;
  nw_cmd *c = nw_cmd_new(NW_CMD_WORKDONE, 0);
  if (c) {
    c->op = op;
    if (nw_enqueue(d, c, false))
      return;
    free(c);
  }
  /* fails from gpu_process_events */
  nw_lock();
  nw_list_remove(&d->ops, &d->ops_tail, op);
  d->undone--;
  op->done = true;
  op->status = WGC_ERR_OUT_OF_MEMORY;
  nw_list_append(&d->done, &d->done_tail, op);
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
    pthread_cond_wait(&d->settled, &g_lock);
  nw_unlock();
}

bool gpu_can_wait(void) { return true; }
