/* gpu.h natively, over wgpu-native's webgpu.h (loaded at run time, see
 * native_load.c): buffers, pipelines, bind groups and command recording.
 * The id table, the submission thread and device start-up live beside it
 * (native.h names the files). */
#include "gpu/native.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- buffers ------------------------------------------------------------ */

gpu_id gpu_buffer_create(gpu_id dev, uint64_t size, unsigned usage) {
  nw_device *d = nw_live_dev(dev);
  if (!d)
    return 0;
  WGPUBufferUsage wu = WGPUBufferUsage_None;
  if (usage & GPU_USAGE_STORAGE)
    wu |= WGPUBufferUsage_Storage;
  if (usage & GPU_USAGE_UNIFORM)
    wu |= WGPUBufferUsage_Uniform;
  if (usage & GPU_USAGE_COPY_SRC)
    wu |= WGPUBufferUsage_CopySrc;
  if (usage & GPU_USAGE_COPY_DST)
    wu |= WGPUBufferUsage_CopyDst;
  if (usage & GPU_USAGE_QUERY_RESOLVE)
    wu |= WGPUBufferUsage_QueryResolve;
  if (usage & GPU_USAGE_MAP_READ)
    wu |= WGPUBufferUsage_MapRead;
  unsigned errors = nw_error_count(d);
  WGPUBuffer b = wgc_nw.DeviceCreateBuffer(
      d->device, &(WGPUBufferDescriptor){.size = size, .usage = wu});
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
    nw_op_fail_locked(d, op, WGC_ERR_INVALID_ARGUMENT);
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

/* The automatic layout matches the one gpu_shader describes: every
 * binding the kernels declare they use. */
gpu_id gpu_pipeline_create(gpu_id dev, const gpu_shader *s) {
  nw_device *d = nw_live_dev(dev);
  if (!d || !s || !s->wgsl)
    return 0;
  unsigned errors = nw_error_count(d);
  WGPUShaderSourceWGSL src = {.chain.sType = WGPUSType_ShaderSourceWGSL,
                              .code = {.data = s->wgsl, .length = s->len}};
  WGPUShaderModule sm = wgc_nw.DeviceCreateShaderModule(
      d->device, &(WGPUShaderModuleDescriptor){.nextInChain = &src.chain});
  if (!sm || nw_error_count(d) != errors) {
    if (sm)
      wgc_nw.ShaderModuleRelease(sm);
    return 0;
  }
  WGPUComputePipelineDescriptor pd = {
      .layout = NULL, /* automatic */
      .compute = {.module = sm,
                  .entryPoint = {.data = "main", .length = WGPU_STRLEN}},
  };
  WGPUComputePipeline p = wgc_nw.DeviceCreateComputePipeline(d->device, &pd);
  wgc_nw.ShaderModuleRelease(sm);
  if (!p)
    return 0;
  nw_obj o = {.kind = NW_PIPELINE, .u.pipeline = p};
  return nw_enter(d, dev, o, errors, "gpu_pipeline_create");
}

/* Kernels handed out to the threads of gpu_pipelines_create. */
typedef struct compile_batch {
  gpu_id dev;
  const gpu_shader *s;
  gpu_id *out;
  size_t n;
  atomic_size_t next;
} compile_batch;

static void *compile_worker(void *arg) {
  compile_batch *b = arg;
  for (size_t i; (i = atomic_fetch_add(&b->next, 1)) < b->n;)
    b->out[i] = gpu_pipeline_create(b->dev, &b->s[i]);
  return NULL;
}

/* The runtime compiles on the calling thread, so kernels compile side by
 * side on threads of their own, the caller's among them. A creation that
 * fails while another one reports its error may fail too (errors are
 * counted per device): the caller compiles it again on first use. */
void gpu_pipelines_create(gpu_id dev, const gpu_shader *s, size_t n,
                          gpu_id *out) {
  enum { MAX_COMPILE_THREADS = 8 };
  compile_batch b = {.dev = dev, .s = s, .out = out, .n = n};
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t want = n < (size_t)(cpus > 1 ? cpus : 1) ? n : (size_t)cpus;
  if (want > MAX_COMPILE_THREADS)
    want = MAX_COMPILE_THREADS;
  pthread_t t[MAX_COMPILE_THREADS];
  size_t started = 0;
  while (started + 1 < want &&
         pthread_create(&t[started], NULL, compile_worker, &b) == 0)
    started++;
  compile_worker(&b);
  for (size_t i = 0; i < started; i++)
    pthread_join(t[i], NULL);
}

void gpu_pipelines_ready(gpu_id dev, gpu_status_cb cb, void *user) {
  gpu_on_work_done(dev, cb, user);
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
    e[i] = (WGPUBindGroupEntry){.binding = i,
                                .buffer = b->u.buffer.handle,
                                .offset = bindings[i].offset,
                                .size = bindings[i].size};
  }
  unsigned errors = nw_error_count(d);
  WGPUBindGroupLayout layout =
      wgc_nw.ComputePipelineGetBindGroupLayout(p->u.pipeline, 0);
  WGPUBindGroup g = NULL;
  if (layout && nw_error_count(d) == errors) {
    g = wgc_nw.DeviceCreateBindGroup(
        d->device, &(WGPUBindGroupDescriptor){
                       .layout = layout, .entryCount = count, .entries = e});
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

bool gpu_device_timestamps(gpu_id dev) {
  nw_device *d = nw_dev(dev);
  return d && d->timestamps;
}

double gpu_timestamp_period(gpu_id dev) {
  nw_device *d = nw_dev(dev);
  return d ? d->ts_period : 1.0;
}

/* The encoder of enc with its device, or NULL. */
static nw_obj *nw_encoder(gpu_id enc, nw_device **d) {
  nw_lock();
  nw_obj *e = nw_get_locked(enc, NW_ENCODER);
  nw_obj *od = e ? nw_get_locked(e->dev, NW_DEVICE) : NULL;
  nw_unlock();
  *d = od ? od->u.device : NULL;
  return *d ? e : NULL;
}

void gpu_encoder_timestamp(gpu_id enc, uint32_t index) {
  nw_device *d;
  nw_obj *e = nw_encoder(enc, &d);
  if (!e || !d->timestamps || index > 1)
    return;
  unsigned errors = nw_error_count(d);
  nw_end_pass(e);
  if (!e->u.encoder.queries) {
    WGPUQuerySetDescriptor qd = {.type = WGPUQueryType_Timestamp, .count = 2};
    e->u.encoder.queries = wgc_nw.DeviceCreateQuerySet(d->device, &qd);
  }
  if (!e->u.encoder.queries) {
    e->u.encoder.failed = true;
    return;
  }
  /* an empty pass whose beginning writes the clock: the one timestamp
   * write that core WebGPU (and so every runtime) has */
  WGPUPassTimestampWrites w = {
      .querySet = e->u.encoder.queries,
      .beginningOfPassWriteIndex = index,
      .endOfPassWriteIndex = WGPU_QUERY_SET_INDEX_UNDEFINED,
  };
  WGPUComputePassDescriptor pd = {.timestampWrites = &w};
  WGPUComputePassEncoder pass =
      wgc_nw.CommandEncoderBeginComputePass(e->u.encoder.handle, &pd);
  if (pass) {
    wgc_nw.ComputePassEncoderEnd(pass);
    wgc_nw.ComputePassEncoderRelease(pass);
  }
  if (!pass || nw_error_count(d) != errors)
    e->u.encoder.failed = true;
}

void gpu_encoder_resolve_timestamps(gpu_id enc, gpu_id buf, uint64_t offset) {
  nw_device *d;
  nw_obj *e = nw_encoder(enc, &d);
  nw_obj *b = nw_get(buf, NW_BUFFER);
  if (!e)
    return;
  if (!b || !e->u.encoder.queries) {
    e->u.encoder.failed = true;
    nw_error(d, WGC_ERR_DEVICE,
             "gpu_encoder_resolve_timestamps: no timestamps or no buffer");
    return;
  }
  unsigned errors = nw_error_count(d);
  nw_end_pass(e);
  wgc_nw.CommandEncoderResolveQuerySet(e->u.encoder.handle,
                                       e->u.encoder.queries, 0, 2,
                                       b->u.buffer.handle, offset);
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

bool gpu_can_wait(void) { return true; }

void gpu_request_poll(void) {}
