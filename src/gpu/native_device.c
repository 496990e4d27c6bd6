/* The native GPU layer's device start-up and release: the instance, the
 * choice of Vulkan driver (the loader's own, else SwiftShader), with the
 * environment set and restored under a lock, the adapter and device
 * requests and the device's limits and name. */
#include "gpu/native.h"
#include "gpu/native_cache.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* SwiftShader from Debian's chromium package: the fallback Vulkan driver
 * when the loader finds none by itself. */
#define NW_SWIFTSHADER_ICD "/usr/lib/chromium/vk_swiftshader_icd.json"

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
static uint64_t g_serial; /* last device serial handed out */

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

bool gpu_host_headroom(size_t bytes) {
  struct rlimit r;
  if (getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
    return true;
  /* VmSize in pages, read without allocating (no stdio buffer) */
  char buf[64];
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return false;
  buf[n] = 0;
  uint64_t used = strtoull(buf, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE);
  return used < r.rlim_cur && r.rlim_cur - used >= bytes;
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
  WGPUInstanceExtras extras = {
      .chain.sType = (WGPUSType)WGPUSType_InstanceExtras,
      .backends = WGPUInstanceBackend_Vulkan,
      .flags = WGPUInstanceFlag_Default,
  };
  return wgc_nw.CreateInstance(
      &(WGPUInstanceDescriptor){.nextInChain = &extras.chain});
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
  r->status = ok ? WGC_OK
                 : gpu_errors_classify(false, message.data, nw_sv_len(message));
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
  WGPURequestAdapterOptions opt = {
      .featureLevel = WGPUFeatureLevel_Core,
      /* A compute library wants the fastest device unless told otherwise. */
      .powerPreference = power == WGC_POWER_LOW
                             ? WGPUPowerPreference_LowPower
                             : WGPUPowerPreference_HighPerformance,
  };
  wgc_nw.InstanceRequestAdapter(inst, &opt,
                                (WGPURequestAdapterCallbackInfo){
                                    .mode = WGPUCallbackMode_AllowProcessEvents,
                                    .callback = nw_on_adapter,
                                    .userdata1 = r,
                                });
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
  WGPUAdapterInfo info = {0};
  if (wgc_nw.AdapterGetInfo(adapter, &info) != WGPUStatus_Success) {
    snprintf(buf, cap, "unknown adapter");
    return;
  }
  *cpu = info.adapterType == WGPUAdapterType_CPU;
  int dl = (int)(nw_sv_len(info.device) < 200 ? nw_sv_len(info.device) : 200);
  int ds = (int)(nw_sv_len(info.description) < 100 ? nw_sv_len(info.description)
                                                   : 100);
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

/* Tells the pipeline cache which adapter and driver it serves. own: the
 * adapter came from the instance made with the driver's cache directed. */
static void nw_cache_check(nw_cache *c, WGPUAdapter adapter, bool own) {
  if (!c->on)
    return;
  WGPUAdapterInfo info = {0};
  char dev[256] = "unknown device", drv[256] = "", ids[64] = "";
  if (wgc_nw.AdapterGetInfo(adapter, &info) == WGPUStatus_Success) {
    size_t dl = nw_sv_len(info.device), ds = nw_sv_len(info.description);
    if (dl)
      snprintf(dev, sizeof dev, "%.*s", (int)(dl < 255 ? dl : 255),
               info.device.data);
    if (ds)
      snprintf(drv, sizeof drv, "%.*s", (int)(ds < 255 ? ds : 255),
               info.description.data);
    snprintf(ids, sizeof ids, "%u %u %s %s", (unsigned)info.vendorID,
             (unsigned)info.deviceID, nw_backend_name(info.backendType),
             nw_adapter_type_name(info.adapterType));
    wgc_nw.AdapterInfoFreeMembers(info);
  }
  /* Mesa's Vulkan drivers name themselves "Mesa <version> ..." in their
   * driver info, and all of them keep Mesa's disk cache. */
  nw_cache_adapter(c, dev, drv, ids, own && !strncmp(drv, "Mesa ", 5));
}

static void nw_limits(const WGPULimits *l, gpu_limits *out) {
  *out = (gpu_limits){
      .max_buffer_size = l->maxBufferSize,
      .max_storage_binding_size = l->maxStorageBufferBindingSize,
      .min_storage_offset_alignment = l->minStorageBufferOffsetAlignment,
      .min_uniform_offset_alignment = l->minUniformBufferOffsetAlignment,
      .max_workgroups_per_dimension = l->maxComputeWorkgroupsPerDimension,
      .max_invocations_per_workgroup = l->maxComputeInvocationsPerWorkgroup,
      .max_workgroup_size_x = l->maxComputeWorkgroupSizeX,
      .max_workgroup_size_y = l->maxComputeWorkgroupSizeY,
      .max_workgroup_storage_size = l->maxComputeWorkgroupStorageSize,
      .max_storage_buffers_per_stage = l->maxStorageBuffersPerShaderStage,
  };
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
                                 unsigned features, gpu_id *out) {
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

  WGPULimits lim = {0};
  if (wgc_nw.AdapterGetLimits(adapter, &lim) != WGPUStatus_Success)
    return nw_open_failed(adapter, id, o, WGC_ERR_DEVICE);
  lim.nextInChain = NULL;
  bool cpu = false;
  nw_adapter_name(adapter, d->name, sizeof d->name, &cpu);

  void *uid = (void *)(uintptr_t)id, *userial = (void *)(uintptr_t)d->serial;
  /* Timestamps only when asked for (they may cost the device something);
   * shader-f16 wherever the adapter has it (API.md: f16 arithmetic where
   * the bounds allow; the kernels compute in f32 so far). */
  WGPUFeatureName want[2];
  size_t nwant = 0;
  bool want_ts =
      (features & GPU_FEATURE_TIMESTAMPS) &&
      wgc_nw.AdapterHasFeature(adapter, WGPUFeatureName_TimestampQuery);
  if (want_ts)
    want[nwant++] = WGPUFeatureName_TimestampQuery;
  if (wgc_nw.AdapterHasFeature(adapter, WGPUFeatureName_ShaderF16))
    want[nwant++] = WGPUFeatureName_ShaderF16;
  WGPUDeviceDescriptor desc = {
      .requiredFeatureCount = nwant,
      .requiredFeatures = nwant ? want : NULL,
      .requiredLimits = &lim,
      .deviceLostCallbackInfo = {.mode = WGPUCallbackMode_AllowSpontaneous,
                                 .callback = nw_on_device_lost,
                                 .userdata1 = uid,
                                 .userdata2 = userial},
      .uncapturedErrorCallbackInfo = {.callback = nw_on_uncaptured_error,
                                      .userdata1 = uid,
                                      .userdata2 = userial},
  };

  nw_request *r = calloc(1, sizeof *r);
  if (!r)
    return nw_open_failed(adapter, id, o, WGC_ERR_OUT_OF_MEMORY);
  r->is_device = true;
  wgc_nw.AdapterRequestDevice(adapter, &desc,
                              (WGPURequestDeviceCallbackInfo){
                                  .mode = WGPUCallbackMode_AllowProcessEvents,
                                  .callback = nw_on_device,
                                  .userdata1 = r,
                              });
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
  d->timestamps = want_ts;
  d->ts_period = want_ts ? wgc_nw.QueueGetTimestampPeriod(d->queue) : 1.0;
  if (!(d->ts_period > 0))
    d->ts_period = 1.0;
  nw_lock();
  d->device = device; /* now visible to nw_dev */
  nw_unlock();
  *out = id;
  return WGC_OK;
}

/* Mesa's cache variables, pointing at the pipeline cache's folder: Mesa
 * reads them when it opens the adapter (RADV, ANV: as an instance first
 * enumerates it) or the device (lavapipe), so they span all of a device
 * request. The user's own settings of them are overridden for this span:
 * the option asks for a cache. */
enum { NW_CACHE_VARS = 2 };
static void nw_cache_env_push(const nw_cache *c,
                              nw_env_saved saved[NW_CACHE_VARS]) {
  memset(saved, 0, NW_CACHE_VARS * sizeof *saved);
  if (!c || !c->redirect)
    return;
  nw_env_push(&saved[0], "MESA_SHADER_CACHE_DIR", c->dir, true);
  nw_env_push(&saved[1], "MESA_SHADER_CACHE_DISABLE", "false", true);
}

static void nw_cache_env_pop(nw_env_saved saved[NW_CACHE_VARS]) {
  for (int i = NW_CACHE_VARS; i-- > 0;)
    nw_env_pop(&saved[i]);
}

wgc_status gpu_request_device(int power, unsigned features,
                              const char *pipeline_cache, gpu_device_cb cb,
                              void *user) {
  if (!cb)
    return WGC_ERR_INVALID_ARGUMENT;
  if (!wgc_nw_load())
    return WGC_ERR_NO_ADAPTER;
  /* The cache is an optimisation: without memory for it, none. */
  nw_cache *cache =
      pipeline_cache && *pipeline_cache ? calloc(1, sizeof *cache) : NULL;
  pthread_mutex_lock(&g_instance_lock);
  nw_env_saved quiet[NW_QUIET_VARS], cvars[NW_CACHE_VARS];
  nw_quiet_push(quiet);
  if (cache)
    nw_cache_begin(cache, pipeline_cache);
  nw_cache_env_push(cache, cvars);
  WGPUInstance inst = NULL, own = NULL;
  WGPUAdapter adapter = NULL;
  /* With the driver's cache directed: an instance of the device's own (the
   * shared one opened its adapters without), dropped if it finds none. */
  if (cvars[0].changed && cvars[1].changed) {
    own = nw_create_instance();
    adapter = nw_request_adapter(own, power);
    if (adapter) {
      inst = own;
    } else if (own) {
      wgc_nw.InstanceRelease(own);
      own = NULL;
    }
  }
  if (!adapter)
    adapter = nw_adapter(power, &inst);
  wgc_status st = WGC_ERR_NO_ADAPTER;
  gpu_id id = 0;
  if (adapter) {
    if (cache)
      nw_cache_check(cache, adapter, own != NULL);
    st = nw_open_device(inst, adapter, features, &id);
    nw_device *d = st == WGC_OK ? nw_dev(id) : NULL;
    if (d) {
      g_live_devices++;
      d->own_instance = own;
      own = NULL;
      if (cache)
        snprintf(d->cache_msg, sizeof d->cache_msg, "%s", cache->msg);
    }
  }
  if (own)
    wgc_nw.InstanceRelease(own);
  nw_cache_env_pop(cvars);
  nw_quiet_pop(quiet);
  pthread_mutex_unlock(&g_instance_lock);
  free(cache);
  cb(st, id, user);
  return WGC_OK;
}

void gpu_device_cache_status(gpu_id dev, char *buf, size_t cap) {
  nw_device *d = nw_dev(dev);
  const char *msg = d ? d->cache_msg : "";
  gpu_copy_str(buf, cap, msg, strlen(msg));
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
  nw_obj *children = nw_take_children_locked(dev);
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
  /* the last reference: the driver finishes writing its cache */
  if (d->own_instance)
    wgc_nw.InstanceRelease(d->own_instance);
  free(d);
  free(o);
  pthread_mutex_lock(&g_instance_lock);
  g_live_devices--;
  pthread_mutex_unlock(&g_instance_lock);
}
