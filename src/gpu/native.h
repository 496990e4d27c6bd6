/* State shared by the files of the native GPU layer (gpu.h over webgpu.h):
 *
 *   native_table.c   the id table, its lock, the per-device error state
 *   native_submit.c  completions and the per-device submission thread
 *   native_device.c  instance, adapter and driver choice, device start-up
 *                    and release
 *   gpu_native.c     buffers, pipelines, bind groups, command recording
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
#ifndef WGC_GPU_NATIVE_H
#define WGC_GPU_NATIVE_H

#include "gpu/gpu.h"
#include "gpu/gpu_errors.h"
#include "gpu/native_wgpu.h"

#include <pthread.h>
#include <time.h>

/* ---- objects ------------------------------------------------------------ */

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
  double *stamp;   /* when set, gets the host clock at completion */
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
  bool timestamps;  /* created with timestamp queries */
  double ts_period; /* nanoseconds per timestamp tick */
  /* The instance made for this device alone, whose driver caches in the
   * pipeline cache's folder; released with the device, which makes the
   * driver finish writing its cache. */
  WGPUInstance own_instance;
  char cache_msg[768]; /* the pipeline cache's status sentence, or "" */
  /* Everything below is under g_lock. */
  gpu_errors errors;
  nw_op *ops, *ops_tail;   /* pending completions, in registration order */
  nw_op *done, *done_tail; /* done, to deliver, in completion order */
  unsigned undone;         /* on the pending list */
  unsigned in_runtime;     /* map or work-done requests the runtime holds */
  unsigned waiters;        /* threads in nw_wait_settled */
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
      WGPUQuerySet queries;        /* its timestamp pair, or NULL */
      gpu_id *mappable;            /* MAP_READ buffers it copies */
      uint32_t nmappable, capmappable;
    } encoder;
  } u;
};

/* ---- the id table (native_table.c) --------------------------------------- */

void nw_lock(void);
void nw_unlock(void);
/* Waits on c with the table lock held (released while waiting); the timed
 * form until the CLOCK_REALTIME time at. */
void nw_wait(pthread_cond_t *c);
void nw_wait_until(pthread_cond_t *c, const struct timespec *at);

/* Enters o into the table; 0 when out of memory. */
gpu_id nw_id_alloc(nw_obj *o);
/* With the lock held: the object id of the given kind, or NULL. */
nw_obj *nw_get_locked(gpu_id id, enum nw_kind kind);
nw_obj *nw_get(gpu_id id, enum nw_kind kind);
/* With the lock held: removes the entry (the object itself is the
 * caller's). */
void nw_id_free_locked(gpu_id id);
/* Removes id of the given kind from the table and returns its object. */
nw_obj *nw_take(gpu_id id, enum nw_kind kind);
/* With the lock held: removes every object of device dev (not the device
 * itself) from the table and returns them chained through next. */
nw_obj *nw_take_children_locked(gpu_id dev);
/* A device whose runtime device exists (nw_open_device is done). */
nw_device *nw_dev(gpu_id id);
/* As nw_dev, but NULL once the device is lost: nothing new is made on it. */
nw_device *nw_live_dev(gpu_id id);

/* Enters the runtime object that o describes (kind and handle set) into
 * the table as an object of device dev. It is released instead, and 0
 * returned, when creating it reported an error (d's error count moved past
 * errors) or host memory runs out (recorded on d; what names the call). */
gpu_id nw_enter(nw_device *d, gpu_id dev, nw_obj o, unsigned errors,
                const char *what);
/* Releases the runtime objects of an entry other than a device; the
 * second form frees the entry too. */
void nw_obj_drop(const nw_obj *o);
void nw_obj_release(nw_obj *o);

/* ---- errors (native_table.c) --------------------------------------------- */

size_t nw_sv_len(WGPUStringView s);
/* Records an error on d unless one is pending; the _locked form with the
 * lock held. */
void nw_error_locked(nw_device *d, wgc_status st, const char *msg, size_t len);
void nw_error(nw_device *d, wgc_status st, const char *msg);
/* Host memory ran out in the call named what. */
void nw_out_of_memory(nw_device *d, const char *what);
/* Errors recorded on d so far: a call that moved it reported one. */
unsigned nw_error_count(nw_device *d);
/* The device's runtime callbacks; userdata1 = its id, userdata2 = its
 * serial. */
void nw_on_uncaptured_error(WGPUDevice const *device, WGPUErrorType type,
                            WGPUStringView message, void *u1, void *u2);
void nw_on_device_lost(WGPUDevice const *device, WGPUDeviceLostReason reason,
                       WGPUStringView message, void *u1, void *u2);

/* ---- completions and the submission thread (native_submit.c) ------------ */

/* A new pending completion for cb on d; NULL, after cb fired with the
 * reason, when d is NULL (no such object) or host memory runs out (what
 * names the call). */
nw_op *nw_op_new(nw_device *d, gpu_status_cb cb, void *user, const char *what);
/* Moves a pending op of d straight to the done queue with status st: it
 * fails from gpu_process_events, as if the runtime said so. With the lock
 * held. */
void nw_op_fail_locked(nw_device *d, nw_op *op, wgc_status st);
/* Fires op, which the caller unlinked and holds; the lock is held on entry
 * and released before the callback runs. An entry cancelled, or not yet
 * done, fires with undone; one still held becomes an orphan, for its
 * holder to free. */
void nw_op_fire(nw_op *op, wgc_status undone);

nw_cmd *nw_cmd_new(enum nw_cmd_kind kind, size_t extra);
/* Queues c for d's submission thread; false (c untouched) when the thread
 * cannot start. at_front: before everything queued (the test hook). */
bool nw_enqueue(nw_device *d, nw_cmd *c, bool at_front);
/* Waits until every completion registered on d so far is done, or d is
 * lost. */
void nw_wait_settled(nw_device *d);

#endif /* WGC_GPU_NATIVE_H */
