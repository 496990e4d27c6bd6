/* The GPU layer in the browser (wasm32): every call goes to web/gpu.js
 * through a wasm import of module "wgc_gpu"; gpu.js holds the WebGPU
 * objects in a table keyed by the same ids. Completions come back through
 * the exported wgc_gpu_* functions below, called from the event loop, and
 * gpu.js then calls wgc_poll_all so user callbacks fire.
 *
 * The logic lives here: callback bookkeeping, the per-device error state
 * (first error kept, loss sticky), usage flags, mapping ranges. 64-bit
 * quantities cross as doubles (exact below 2^53), so the JS side never sees
 * BigInt.
 *
 * What each launch costs on the host is kept down here, where a call stays
 * in wasm: bind groups are cached by their pipeline and bindings (the
 * engine makes one per launch, mostly the same few again: the same buffers,
 * and uniform arena offsets that repeat batch after batch), and dispatches
 * are recorded into wasm memory and handed to gpu.js in one call per run,
 * not one each. */
#include "clock.h"
#include "gpu.h"
#include "gpu_errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JS(name) __attribute__((import_module("wgc_gpu"), import_name(#name)))
#define EXPORT __attribute__((visibility("default")))

JS(has_gpu) int js_has_gpu(void);
JS(request_device)
void js_request_device(int power, unsigned features, uint32_t token);
JS(device_timestamps) int js_device_timestamps(gpu_id dev);
JS(encoder_timestamp) void js_encoder_timestamp(gpu_id enc, uint32_t index);
JS(encoder_resolve)
void js_encoder_resolve(gpu_id enc, gpu_id buf, double offset);
JS(device_release) void js_device_release(gpu_id dev);
JS(device_limit) double js_device_limit(gpu_id dev, int which);
JS(device_cpu) int js_device_cpu(gpu_id dev);
JS(device_name) size_t js_device_name(gpu_id dev, char *buf, size_t cap);
JS(buffer_create)
gpu_id js_buffer_create(gpu_id dev, double size, uint32_t usage);
JS(buffer_release) void js_buffer_release(gpu_id buf);
JS(queue_write)
void js_queue_write(gpu_id dev, gpu_id buf, double offset, const void *data,
                    double size);
JS(pipeline_create)
gpu_id js_pipeline_create(gpu_id dev, const char *wgsl, size_t len,
                          uint32_t bindings, uint32_t writable);
JS(pipelines_ready) void js_pipelines_ready(gpu_id dev, uint32_t token);
JS(release) void js_release(gpu_id id);
JS(bind_group_create)
gpu_id js_bind_group_create(gpu_id dev, gpu_id pipeline, uint32_t count,
                            const double *entries);
JS(encoder_create) gpu_id js_encoder_create(gpu_id dev);
JS(encoder_run)
void js_encoder_run(gpu_id enc, const uint32_t *cmds, uint32_t count);
JS(encoder_copy)
void js_encoder_copy(gpu_id enc, gpu_id src, double src_offset, gpu_id dst,
                     double dst_offset, double size);
JS(encoder_submit) void js_encoder_submit(gpu_id dev, gpu_id enc);
JS(buffer_map_read)
void js_buffer_map_read(gpu_id buf, double offset, double size, uint32_t token);
JS(buffer_read)
int js_buffer_read(gpu_id buf, double offset, void *dst, double size);
JS(work_done) void js_work_done(gpu_id dev, uint32_t token);
JS(device_of) gpu_id js_device_of(gpu_id id);

/* WebGPU's GPUBufferUsage bits. */
enum {
  WEBGPU_MAP_READ = 0x0001,
  WEBGPU_COPY_SRC = 0x0004,
  WEBGPU_COPY_DST = 0x0008,
  WEBGPU_UNIFORM = 0x0040,
  WEBGPU_STORAGE = 0x0080,
  WEBGPU_QUERY_RESOLVE = 0x0200,
};

/* The order of gpu.js's LIMITS table. */
enum {
  LIM_MAX_BUFFER_SIZE,
  LIM_MAX_STORAGE_BINDING_SIZE,
  LIM_MIN_STORAGE_OFFSET_ALIGNMENT,
  LIM_MIN_UNIFORM_OFFSET_ALIGNMENT,
  LIM_MAX_WORKGROUPS_PER_DIMENSION,
  LIM_MAX_INVOCATIONS_PER_WORKGROUP,
  LIM_MAX_WORKGROUP_SIZE_X,
  LIM_MAX_WORKGROUP_SIZE_Y,
  LIM_MAX_WORKGROUP_STORAGE_SIZE,
  LIM_MAX_STORAGE_BUFFERS_PER_STAGE,
};

/* A device's error state, fed by gpu.js (uncaptured errors, loss). */
typedef struct br_device {
  struct br_device *next;
  gpu_id id;
  gpu_errors errors;
} br_device;

/* A completion owed to the C side; gpu.js knows it by its token. */
typedef struct br_op {
  struct br_op *next;
  uint32_t token;
  gpu_id dev;
  gpu_status_cb cb;
  gpu_device_cb device_cb;
  void *user;
  double *stamp; /* when set, gets the host clock at completion */
} br_op;

static br_device *devices;
static br_op *ops;
static uint32_t last_token;

static br_device *find_device(gpu_id id) {
  for (br_device *d = devices; d; d = d->next)
    if (d->id == id)
      return d;
  return NULL;
}

/* Records a host-side failure (one the JS side never sees) on d, if any. */
static void host_error(br_device *d, wgc_status st, const char *msg) {
  if (d)
    gpu_errors_note(&d->errors, st, msg, strlen(msg));
}

/* A new completion, or NULL when out of memory. Tokens are never 0 and
 * never reused while an op holds them. */
static br_op *op_new(gpu_id dev, gpu_status_cb cb, gpu_device_cb device_cb,
                     void *user) {
  br_op *op = calloc(1, sizeof *op);
  if (!op)
    return NULL;
  do
    last_token++;
  while (last_token == 0);
  op->token = last_token;
  op->dev = dev;
  op->cb = cb;
  op->device_cb = device_cb;
  op->user = user;
  op->next = ops;
  ops = op;
  return op;
}

/* A completion for cb on device dev; NULL, after cb fired with the reason,
 * when there is no such device or host memory runs out (oom: the message). */
static br_op *op_on_device(gpu_id dev, gpu_status_cb cb, void *user,
                           const char *oom) {
  br_device *d = find_device(dev);
  br_op *op = d ? op_new(dev, cb, NULL, user) : NULL;
  if (!op) {
    host_error(d, WGC_ERR_OUT_OF_MEMORY, oom);
    if (cb)
      cb(d ? WGC_ERR_OUT_OF_MEMORY : WGC_ERR_INVALID_ARGUMENT, user);
  }
  return op;
}

static br_op *op_take(uint32_t token) {
  for (br_op **link = &ops; *link; link = &(*link)->next)
    if ((*link)->token == token) {
      br_op *op = *link;
      *link = op->next;
      return op;
    }
  return NULL;
}

/* ---- completions, called by gpu.js -------------------------------------- */

/* A device request finished: status is WGC_OK with dev, or an error. */
EXPORT void wgc_gpu_device_ready(uint32_t token, int status, gpu_id dev) {
  br_op *op = op_take(token);
  if (!op)
    return;
  wgc_status st = (wgc_status)status;
  if (st == WGC_OK) {
    br_device *d = calloc(1, sizeof *d);
    if (!d) {
      js_device_release(dev);
      st = WGC_ERR_OUT_OF_MEMORY;
      dev = 0;
    } else {
      d->id = dev;
      d->next = devices;
      devices = d;
    }
  } else {
    dev = 0;
  }
  gpu_device_cb cb = op->device_cb;
  void *user = op->user;
  free(op);
  cb(st, dev, user);
}

/* A map or work-done completion. A device that reported an error or was
 * lost meanwhile fails it: the work it waited for may not have run. */
EXPORT void wgc_gpu_complete(uint32_t token, int status) {
  br_op *op = op_take(token);
  if (!op)
    return;
  wgc_status st = (wgc_status)status;
  br_device *d = find_device(op->dev);
  if (d && d->errors.lost)
    st = WGC_ERR_DEVICE_LOST;
  else if (d && d->errors.error != WGC_OK && st == WGC_OK)
    st = d->errors.error;
  if (op->stamp)
    *op->stamp = wgc_now_us();
  gpu_status_cb cb = op->cb;
  void *user = op->user;
  free(op);
  if (cb)
    cb(st, user);
}

/* An uncaptured error (status WGC_ERR_DEVICE or WGC_ERR_OUT_OF_MEMORY). */
EXPORT void wgc_gpu_device_error(gpu_id dev, int status, const char *msg,
                                 size_t len) {
  br_device *d = find_device(dev);
  if (d)
    gpu_errors_note(&d->errors, (wgc_status)status, msg, len);
}

EXPORT void wgc_gpu_device_lost(gpu_id dev, const char *msg, size_t len) {
  br_device *d = find_device(dev);
  if (d)
    gpu_errors_lost(&d->errors, msg, len);
}

/* ---- recorded dispatches ------------------------------------------------ */

/* Dispatches of one encoder not yet handed to gpu.js: [pipeline, group, x,
 * y, z] each, group as gpu.js knows it. Handed over (run) before anything
 * else reaches that encoder, before an object they name is released, and
 * when full. */
enum { REC_MAX = 256, REC_WORDS = 5 };
static struct {
  gpu_id enc;
  uint32_t count;
  uint32_t cmds[REC_MAX * REC_WORDS];
} rec;

static void rec_run(void) {
  if (rec.count)
    js_encoder_run(rec.enc, rec.cmds, rec.count);
  rec.count = 0;
  rec.enc = 0;
}

/* Releases a pipeline or bind group of gpu.js: recorded dispatches may name
 * it. */
static void js_release_after_run(gpu_id id) {
  rec_run();
  js_release(id);
}

/* ---- the bind group cache ----------------------------------------------- */

/* Set-associative: a key's hash picks a set of GC_WAYS entries; a full set
 * gives up its least recently used entry that no handle holds. Handles of
 * cached groups are GC_HANDLE | (index + 1) (gpu.js's ids stay below
 * GC_HANDLE); others are gpu.js's own ids. */
enum { GC_SETS = 64, GC_WAYS = 4, GC_BINDINGS = 8 };
#define GC_HANDLE 0x80000000u

typedef struct gc_entry {
  gpu_id group; /* gpu.js's; 0: a free entry */
  gpu_id dev, pipeline;
  uint32_t count, hash;
  uint32_t refs;  /* handles given out and not yet released */
  bool dead;      /* found no more: a buffer or the pipeline went */
  uint64_t stamp; /* last use, for eviction */
  gpu_binding bindings[GC_BINDINGS];
} gc_entry;

static gc_entry gc[GC_SETS * GC_WAYS];
static uint64_t gc_clock;

static uint32_t gc_hash(gpu_id pipeline, uint32_t count, const gpu_binding *b) {
  uint64_t h = 0x9e3779b97f4a7c15u ^ pipeline ^ ((uint64_t)count << 32);
  for (uint32_t i = 0; i < count; i++) {
    h = (h ^ b[i].buffer) * 0xff51afd7ed558ccdu;
    h = (h ^ b[i].offset) * 0xc4ceb9fe1a85ec53u;
    h = (h ^ b[i].size) * 0xff51afd7ed558ccdu;
  }
  return (uint32_t)(h ^ (h >> 32));
}

static void gc_free_entry(gc_entry *e) {
  js_release_after_run(e->group);
  memset(e, 0, sizeof *e);
}

/* No later lookup finds e; its group goes once no handle holds it. */
static void gc_kill(gc_entry *e) {
  if (e->refs)
    e->dead = true;
  else
    gc_free_entry(e);
}

/* Drops every entry that match says must go. */
static void gc_drop_if(bool (*match)(const gc_entry *, gpu_id), gpu_id id) {
  for (size_t i = 0; i < sizeof gc / sizeof gc[0]; i++)
    if (gc[i].group && !gc[i].dead && match(&gc[i], id))
      gc_kill(&gc[i]);
}

static bool gc_uses_buffer(const gc_entry *e, gpu_id buf) {
  for (uint32_t i = 0; i < e->count; i++)
    if (e->bindings[i].buffer == buf)
      return true;
  return false;
}
static bool gc_uses_pipeline(const gc_entry *e, gpu_id p) {
  return e->pipeline == p;
}
static bool gc_on_device(const gc_entry *e, gpu_id dev) {
  return e->dev == dev;
}

/* A handle to a group for these bindings: cached, else made by gpu.js and
 * entered into the cache; 0 on failure. */
static gpu_id gc_get(gpu_id dev, gpu_id pipeline, uint32_t count,
                     const gpu_binding *b, gpu_id (*make)(void)) {
  uint32_t h = gc_hash(pipeline, count, b);
  gc_entry *set = &gc[(h % GC_SETS) * GC_WAYS], *victim = NULL;
  for (int w = 0; w < GC_WAYS; w++) {
    gc_entry *e = &set[w];
    if (e->group && !e->dead && e->hash == h && e->pipeline == pipeline &&
        e->dev == dev && e->count == count &&
        !memcmp(e->bindings, b, count * sizeof *b)) {
      e->refs++;
      e->stamp = ++gc_clock;
      return GC_HANDLE | (uint32_t)(e - gc + 1);
    }
    if (!e->group)
      victim = victim && !victim->group ? victim : e;
    else if (!e->refs &&
             (!victim || (victim->group && e->stamp < victim->stamp)))
      victim = e;
  }
  gpu_id g = make();
  if (!g || !victim) /* every entry of the set is held: not cached */
    return g;
  if (victim->group)
    gc_free_entry(victim);
  *victim = (gc_entry){.group = g,
                       .dev = dev,
                       .pipeline = pipeline,
                       .count = count,
                       .hash = h,
                       .refs = 1,
                       .stamp = ++gc_clock};
  memcpy(victim->bindings, b, count * sizeof *b);
  return GC_HANDLE | (uint32_t)(victim - gc + 1);
}

/* The entry of a cache handle, or NULL for one of gpu.js's own ids. */
static gc_entry *gc_of(gpu_id handle) {
  if (!(handle & GC_HANDLE))
    return NULL;
  uint32_t i = (handle & ~GC_HANDLE) - 1;
  return i < sizeof gc / sizeof gc[0] && gc[i].group ? &gc[i] : NULL;
}

/* ---- device ------------------------------------------------------------- */

wgc_status gpu_request_device(int power, unsigned features,
                              const char *pipeline_cache, gpu_device_cb cb,
                              void *user) {
  (void)pipeline_cache; /* the browser keeps its own cache */
  if (!cb)
    return WGC_ERR_INVALID_ARGUMENT;
  if (!js_has_gpu())
    return WGC_ERR_NO_ADAPTER;
  br_op *op = op_new(0, NULL, cb, user);
  if (!op)
    return WGC_ERR_OUT_OF_MEMORY;
  js_request_device(power, features, op->token);
  return WGC_OK;
}

void gpu_device_release(gpu_id dev) {
  br_device *d = NULL;
  for (br_device **link = &devices; *link; link = &(*link)->next)
    if ((*link)->id == dev) {
      d = *link;
      *link = d->next;
      break;
    }
  if (!d)
    return;
  /* Completions still pending fire now, in order of registration; the JS
   * side's late answers find no token and are dropped. */
  wgc_status st = d->errors.lost ? WGC_ERR_DEVICE_LOST : WGC_ERR_CANCELLED;
  for (;;) {
    br_op *last = NULL;
    for (br_op *op = ops; op; op = op->next)
      if (op->dev == dev)
        last = op; /* the list is newest first */
    if (!last)
      break;
    op_take(last->token);
    gpu_status_cb cb = last->cb;
    void *user = last->user;
    free(last);
    if (cb)
      cb(st, user);
  }
  free(d);
  gc_drop_if(gc_on_device, dev);
  rec_run();
  js_device_release(dev);
}

void gpu_device_limits(gpu_id dev, gpu_limits *out) {
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  if (!find_device(dev))
    return;
  out->max_buffer_size = (uint64_t)js_device_limit(dev, LIM_MAX_BUFFER_SIZE);
  out->max_storage_binding_size =
      (uint64_t)js_device_limit(dev, LIM_MAX_STORAGE_BINDING_SIZE);
  out->min_storage_offset_alignment =
      (uint32_t)js_device_limit(dev, LIM_MIN_STORAGE_OFFSET_ALIGNMENT);
  out->min_uniform_offset_alignment =
      (uint32_t)js_device_limit(dev, LIM_MIN_UNIFORM_OFFSET_ALIGNMENT);
  out->max_workgroups_per_dimension =
      (uint32_t)js_device_limit(dev, LIM_MAX_WORKGROUPS_PER_DIMENSION);
  out->max_invocations_per_workgroup =
      (uint32_t)js_device_limit(dev, LIM_MAX_INVOCATIONS_PER_WORKGROUP);
  out->max_workgroup_size_x =
      (uint32_t)js_device_limit(dev, LIM_MAX_WORKGROUP_SIZE_X);
  out->max_workgroup_size_y =
      (uint32_t)js_device_limit(dev, LIM_MAX_WORKGROUP_SIZE_Y);
  out->max_workgroup_storage_size =
      (uint32_t)js_device_limit(dev, LIM_MAX_WORKGROUP_STORAGE_SIZE);
  out->max_storage_buffers_per_stage =
      (uint32_t)js_device_limit(dev, LIM_MAX_STORAGE_BUFFERS_PER_STAGE);
  out->cpu_adapter = js_device_cpu(dev) != 0;
}

void gpu_device_cache_status(gpu_id dev, char *buf, size_t cap) {
  (void)dev;
  if (cap)
    buf[0] = '\0';
}

void gpu_device_name(gpu_id dev, char *buf, size_t cap) {
  if (!buf || cap == 0)
    return;
  size_t n = find_device(dev) ? js_device_name(dev, buf, cap - 1) : 0;
  buf[n < cap ? n : cap - 1] = '\0';
}

wgc_status gpu_take_error(gpu_id dev, char *msg, size_t cap) {
  br_device *d = find_device(dev);
  return gpu_errors_take(d ? &d->errors : NULL, msg, cap);
}

/* ---- buffers ------------------------------------------------------------ */

gpu_id gpu_buffer_create(gpu_id dev, uint64_t size, unsigned usage) {
  if (!find_device(dev))
    return 0;
  uint32_t u = 0;
  if (usage & GPU_USAGE_STORAGE)
    u |= WEBGPU_STORAGE;
  if (usage & GPU_USAGE_QUERY_RESOLVE)
    u |= WEBGPU_QUERY_RESOLVE;
  if (usage & GPU_USAGE_UNIFORM)
    u |= WEBGPU_UNIFORM;
  if (usage & GPU_USAGE_COPY_SRC)
    u |= WEBGPU_COPY_SRC;
  if (usage & GPU_USAGE_COPY_DST)
    u |= WEBGPU_COPY_DST;
  if (usage & GPU_USAGE_MAP_READ)
    u |= WEBGPU_MAP_READ;
  return js_buffer_create(dev, (double)size, u);
}

void gpu_buffer_release(gpu_id buf) {
  if (!buf)
    return;
  gc_drop_if(gc_uses_buffer, buf);
  js_buffer_release(buf);
}

void gpu_queue_write(gpu_id dev, gpu_id buf, uint64_t offset, const void *data,
                     uint64_t size) {
  if (!find_device(dev) || !buf || size == 0)
    return;
  js_queue_write(dev, buf, (double)offset, data, (double)size);
}

void gpu_buffer_map_read(gpu_id buf, uint64_t offset, uint64_t size,
                         gpu_status_cb cb, void *user) {
  br_op *op = op_on_device(buf ? js_device_of(buf) : 0, cb, user,
                           "gpu_buffer_map_read: out of host memory");
  if (!op)
    return;
  /* WebGPU maps from a multiple of 8, a size multiple of 4: map the aligned
   * range around the request (gpu_buffer_read copies out of it). */
  uint64_t start = offset & ~(uint64_t)7;
  uint64_t end = (offset + size + 3) & ~(uint64_t)3;
  js_buffer_map_read(buf, (double)start, (double)(end - start), op->token);
}

void gpu_buffer_read(gpu_id buf, uint64_t offset, void *dst, uint64_t size) {
  if (!buf)
    return;
  if (!js_buffer_read(buf, (double)offset, dst, (double)size))
    host_error(find_device(js_device_of(buf)), WGC_ERR_DEVICE,
               "gpu_buffer_read: the buffer is not mapped");
}

void gpu_buffer_read_many(gpu_id buf, const gpu_read *reads, size_t n) {
  /* The mapping is read once (which unmaps it): the span of all ranges
   * into host memory, then each range out of that. */
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < n; i++) {
    if (reads[i].offset < lo)
      lo = reads[i].offset;
    if (reads[i].offset + reads[i].size > hi)
      hi = reads[i].offset + reads[i].size;
  }
  if (n == 0 || hi <= lo) {
    gpu_buffer_read(buf, 0, NULL, 0);
    return;
  }
  unsigned char *tmp = malloc((size_t)(hi - lo));
  if (!tmp) {
    gpu_buffer_read(buf, 0, NULL, 0);
    host_error(find_device(js_device_of(buf)), WGC_ERR_OUT_OF_MEMORY,
               "gpu_buffer_read: out of host memory");
    return;
  }
  gpu_buffer_read(buf, lo, tmp, hi - lo);
  for (size_t i = 0; i < n; i++)
    if (reads[i].dst)
      memcpy(reads[i].dst, tmp + (reads[i].offset - lo), (size_t)reads[i].size);
  free(tmp);
}

/* ---- pipelines and bind groups ------------------------------------------ */

gpu_id gpu_pipeline_create(gpu_id dev, const gpu_shader *s) {
  if (!find_device(dev) || !s || !s->wgsl)
    return 0;
  return js_pipeline_create(dev, s->wgsl, s->len, s->bindings, s->writable);
}

/* Each creation is asynchronous in web/gpu.js: they compile concurrently. */
void gpu_pipelines_create(gpu_id dev, const gpu_shader *s, size_t n,
                          gpu_id *out) {
  for (size_t i = 0; i < n; i++)
    out[i] = gpu_pipeline_create(dev, &s[i]);
}

void gpu_pipelines_ready(gpu_id dev, gpu_status_cb cb, void *user) {
  br_op *op =
      op_on_device(dev, cb, user, "gpu_pipelines_ready: out of host memory");
  if (op)
    js_pipelines_ready(dev, op->token);
}

void gpu_pipeline_release(gpu_id pipeline) {
  if (!pipeline)
    return;
  gc_drop_if(gc_uses_pipeline, pipeline);
  js_release_after_run(pipeline);
}

/* What gc_get's make callback needs (wasm has no closures). */
static struct {
  br_device *d;
  gpu_id dev, pipeline;
  uint32_t count;
  const gpu_binding *bindings;
} bg_args;

static gpu_id bind_group_make(void) {
  uint32_t count = bg_args.count;
  const gpu_binding *bindings = bg_args.bindings;
  /* [buffer, offset, size] per binding, as doubles */
  enum { SMALL = 16 };
  double small[3 * SMALL];
  double *e = count <= SMALL ? small : calloc(3 * (size_t)count, sizeof *e);
  if (!e) {
    host_error(bg_args.d, WGC_ERR_OUT_OF_MEMORY,
               "gpu_bind_group_create: out of host memory");
    return 0;
  }
  for (uint32_t i = 0; i < count; i++) {
    e[3 * i] = bindings[i].buffer;
    e[3 * i + 1] = (double)bindings[i].offset;
    e[3 * i + 2] = (double)bindings[i].size;
  }
  gpu_id g = js_bind_group_create(bg_args.dev, bg_args.pipeline, count, e);
  if (e != small)
    free(e);
  return g;
}

gpu_id gpu_bind_group_create(gpu_id dev, gpu_id pipeline, uint32_t count,
                             const gpu_binding *bindings) {
  br_device *d = find_device(dev);
  if (!d || !pipeline || (count && !bindings))
    return 0;
  bg_args.d = d;
  bg_args.dev = dev;
  bg_args.pipeline = pipeline;
  bg_args.count = count;
  bg_args.bindings = bindings;
  /* one with more bindings than an entry holds is not cached */
  return count <= GC_BINDINGS
             ? gc_get(dev, pipeline, count, bindings, bind_group_make)
             : bind_group_make();
}

void gpu_bind_group_release(gpu_id group) {
  gc_entry *e = gc_of(group);
  if (!e) {
    if (group && !(group & GC_HANDLE))
      js_release_after_run(group);
    return;
  }
  if (e->refs)
    e->refs--;
  if (!e->refs && e->dead)
    gc_free_entry(e);
}

/* ---- command recording -------------------------------------------------- */

gpu_id gpu_encoder_create(gpu_id dev) {
  return find_device(dev) ? js_encoder_create(dev) : 0;
}

void gpu_encoder_dispatch(gpu_id enc, gpu_id pipeline, gpu_id group, uint32_t x,
                          uint32_t y, uint32_t z) {
  if (!enc)
    return;
  gc_entry *e = gc_of(group);
  if (group & GC_HANDLE && !e)
    group = 0xffffffffu; /* no such group: gpu.js reports it */
  else if (e)
    group = e->group;
  if (rec.enc != enc || rec.count == REC_MAX)
    rec_run();
  rec.enc = enc;
  uint32_t *c = &rec.cmds[REC_WORDS * rec.count++];
  c[0] = pipeline;
  c[1] = group;
  c[2] = x;
  c[3] = y;
  c[4] = z;
}

void gpu_encoder_copy(gpu_id enc, gpu_id src, uint64_t src_offset, gpu_id dst,
                      uint64_t dst_offset, uint64_t size) {
  rec_run();
  if (enc)
    js_encoder_copy(enc, src, (double)src_offset, dst, (double)dst_offset,
                    (double)size);
}

bool gpu_device_timestamps(gpu_id dev) {
  return find_device(dev) && js_device_timestamps(dev);
}

/* WebGPU resolves timestamps in nanoseconds. */
double gpu_timestamp_period(gpu_id dev) {
  (void)dev;
  return 1.0;
}

void gpu_encoder_timestamp(gpu_id enc, uint32_t index) {
  rec_run(); /* after the dispatches recorded so far */
  if (enc && index <= 1)
    js_encoder_timestamp(enc, index);
}

void gpu_encoder_resolve_timestamps(gpu_id enc, gpu_id buf, uint64_t offset) {
  rec_run();
  if (enc)
    js_encoder_resolve(enc, buf, (double)offset);
}

void gpu_encoder_submit(gpu_id dev, gpu_id enc) {
  rec_run();
  if (enc)
    js_encoder_submit(find_device(dev) ? dev : 0, enc);
}

/* ---- completions and events --------------------------------------------- */

void gpu_on_work_done(gpu_id dev, gpu_status_cb cb, void *user) {
  gpu_on_work_done_stamped(dev, NULL, cb, user);
}

void gpu_on_work_done_stamped(gpu_id dev, double *done_us, gpu_status_cb cb,
                              void *user) {
  br_op *op =
      op_on_device(dev, cb, user, "gpu_on_work_done: out of host memory");
  if (op) {
    op->stamp = done_us;
    js_work_done(dev, op->token);
  }
}

/* Completions arrive from the event loop; nothing is queued here. */
bool gpu_process_events(gpu_id dev, bool wait) {
  (void)dev;
  (void)wait;
  return false;
}

bool gpu_can_wait(void) { return false; }
bool gpu_host_headroom(size_t bytes) {
  (void)bytes;
  return true;
}

JS(request_poll) void js_request_poll(void);
void gpu_request_poll(void) { js_request_poll(); }

void gpu_describe(gpu_id dev, char *out, size_t size) {
  snprintf(out, size, "device %u: completions are the browser's",
           (unsigned)dev);
}
