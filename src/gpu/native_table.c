/* The native GPU layer's id table and per-device error state, under the
 * one lock (see native.h). */
#include "gpu/native.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static nw_obj **g_slots;  /* g_slots[id - 1] */
static uint32_t g_nslots; /* slots in use or on the free list */
static uint32_t g_cap;    /* capacity of g_slots and g_free */
static uint32_t *g_free;  /* indices of free slots */
static uint32_t g_nfree;

void nw_lock(void) { pthread_mutex_lock(&g_lock); }
void nw_unlock(void) { pthread_mutex_unlock(&g_lock); }
void nw_wait(pthread_cond_t *c) { pthread_cond_wait(c, &g_lock); }
void nw_wait_until(pthread_cond_t *c, const struct timespec *at) {
  pthread_cond_timedwait(c, &g_lock, at);
}

gpu_id nw_id_alloc(nw_obj *o) {
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

/* With the lock held. */
nw_obj *nw_get_locked(gpu_id id, enum nw_kind kind) {
  if (id == 0 || id > g_nslots)
    return NULL;
  nw_obj *o = g_slots[id - 1];
  return o && o->kind == kind ? o : NULL;
}

nw_obj *nw_get(gpu_id id, enum nw_kind kind) {
  nw_lock();
  nw_obj *o = nw_get_locked(id, kind);
  nw_unlock();
  return o;
}

void nw_id_free_locked(gpu_id id) {
  g_slots[id - 1] = NULL;
  g_free[g_nfree++] = id - 1;
}

nw_obj *nw_take(gpu_id id, enum nw_kind kind) {
  nw_lock();
  nw_obj *o = nw_get_locked(id, kind);
  if (o)
    nw_id_free_locked(id);
  nw_unlock();
  return o;
}

nw_device *nw_dev(gpu_id id) {
  nw_lock();
  nw_obj *o = nw_get_locked(id, NW_DEVICE);
  nw_device *d = o && o->u.device->device ? o->u.device : NULL;
  nw_unlock();
  return d;
}

nw_device *nw_live_dev(gpu_id id) {
  nw_lock();
  nw_obj *o = nw_get_locked(id, NW_DEVICE);
  nw_device *d = o && o->u.device->device && !o->u.device->errors.lost
                     ? o->u.device
                     : NULL;
  nw_unlock();
  return d;
}

/* The device a runtime callback belongs to (userdata1 = id, userdata2 =
 * serial), or NULL once it was released. With the lock held. */
nw_obj *nw_take_children_locked(gpu_id dev) {
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
  return children;
}

static nw_device *nw_dev_from_user_locked(void *u1, void *u2) {
  nw_obj *o = nw_get_locked((gpu_id)(uintptr_t)u1, NW_DEVICE);
  if (!o || o->u.device->serial != (uint64_t)(uintptr_t)u2)
    return NULL;
  return o->u.device;
}

/* ---- strings and errors ------------------------------------------------- */

size_t nw_sv_len(WGPUStringView s) {
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

void nw_error_locked(nw_device *d, wgc_status st, const char *msg, size_t len) {
  bool first = d->errors.error == WGC_OK;
  gpu_errors_note(&d->errors, st, msg, len);
  if (first)
    nw_tidy(d->errors.msg);
}

void nw_error(nw_device *d, wgc_status st, const char *msg) {
  nw_lock();
  nw_error_locked(d, st, msg, strlen(msg));
  nw_unlock();
}

void nw_out_of_memory(nw_device *d, const char *what) {
  char msg[96];
  snprintf(msg, sizeof msg, "%s: out of host memory", what);
  nw_error(d, WGC_ERR_OUT_OF_MEMORY, msg);
}

unsigned nw_error_count(nw_device *d) {
  nw_lock();
  unsigned n = d->errors.count;
  nw_unlock();
  return n;
}

void nw_on_uncaptured_error(WGPUDevice const *device, WGPUErrorType type,
                            WGPUStringView message, void *u1, void *u2) {
  (void)device;
  wgc_status st = gpu_errors_classify(type == WGPUErrorType_OutOfMemory,
                                      message.data, nw_sv_len(message));
  nw_lock();
  nw_device *d = nw_dev_from_user_locked(u1, u2);
  if (d)
    nw_error_locked(d, st, message.data, nw_sv_len(message));
  nw_unlock();
}

void nw_on_device_lost(WGPUDevice const *device, WGPUDeviceLostReason reason,
                       WGPUStringView message, void *u1, void *u2) {
  (void)device;
  if (reason == WGPUDeviceLostReason_CallbackCancelled)
    return;
  nw_lock();
  nw_device *d = nw_dev_from_user_locked(u1, u2);
  if (d) {
    gpu_errors_lost(&d->errors, message.data, nw_sv_len(message));
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

void nw_obj_drop(const nw_obj *o) {
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
    if (o->u.encoder.queries)
      wgc_nw.QuerySetRelease(o->u.encoder.queries);
    free(o->u.encoder.mappable);
    break;
  default:
    break;
  }
}

void nw_obj_release(nw_obj *o) {
  nw_obj_drop(o);
  free(o);
}

gpu_id nw_enter(nw_device *d, gpu_id dev, nw_obj o, unsigned errors,
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
