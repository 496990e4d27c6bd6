/* The baselines' device: wgpu-native through webgpu.h, the adapter chosen
 * by the Vulkan loader (VK_DRIVER_FILES picks the driver). */
#include "raw_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static WGPUStringView sv(const char *s) {
  return (WGPUStringView){s, s ? strlen(s) : 0};
}

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter,
                       WGPUStringView message, void *u1, void *u2) {
  (void)u2;
  if (status != WGPURequestAdapterStatus_Success)
    bench_die("raw: no adapter: %.*s", (int)message.length, message.data);
  *(WGPUAdapter *)u1 = adapter;
}

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device,
                      WGPUStringView message, void *u1, void *u2) {
  (void)u2;
  if (status != WGPURequestDeviceStatus_Success)
    bench_die("raw: no device: %.*s", (int)message.length, message.data);
  *(WGPUDevice *)u1 = device;
}

static void on_error(WGPUDevice const *device, WGPUErrorType type,
                     WGPUStringView message, void *u1, void *u2) {
  (void)device, (void)u1, (void)u2;
  bench_die("raw: device error %d: %.*s", (int)type, (int)message.length,
            message.data);
}

void raw_open(raw_gpu *g) {
  memset(g, 0, sizeof *g);
  g->instance = wgpuCreateInstance(NULL);
  if (!g->instance)
    bench_die("raw: wgpuCreateInstance failed");
  WGPURequestAdapterOptions opt = WGPU_REQUEST_ADAPTER_OPTIONS_INIT;
  opt.powerPreference = WGPUPowerPreference_HighPerformance;
  WGPURequestAdapterCallbackInfo ai = WGPU_REQUEST_ADAPTER_CALLBACK_INFO_INIT;
  ai.mode = WGPUCallbackMode_AllowSpontaneous;
  ai.callback = on_adapter;
  ai.userdata1 = &g->adapter;
  wgpuInstanceRequestAdapter(g->instance, &opt, ai);
  while (!g->adapter)
    wgpuInstanceProcessEvents(g->instance);

  WGPUAdapterInfo info = WGPU_ADAPTER_INFO_INIT;
  wgpuAdapterGetInfo(g->adapter, &info);
  /* Drivers fill different fields: device and description both. */
  snprintf(g->name, sizeof g->name, "%.*s (%.*s)", (int)info.device.length,
           info.device.data ? info.device.data : "",
           (int)info.description.length,
           info.description.data ? info.description.data : "");
  wgpuAdapterInfoFreeMembers(info);

  /* The adapter's own limits: the unfused attention's score matrix needs
   * more than the default binding size at long sequences. */
  WGPULimits lim = WGPU_LIMITS_INIT;
  wgpuAdapterGetLimits(g->adapter, &lim);
  WGPUDeviceDescriptor dd = WGPU_DEVICE_DESCRIPTOR_INIT;
  dd.requiredLimits = &lim;
  dd.uncapturedErrorCallbackInfo.callback = on_error;
  WGPURequestDeviceCallbackInfo di = WGPU_REQUEST_DEVICE_CALLBACK_INFO_INIT;
  di.mode = WGPUCallbackMode_AllowSpontaneous;
  di.callback = on_device;
  di.userdata1 = &g->device;
  wgpuAdapterRequestDevice(g->adapter, &dd, di);
  while (!g->device)
    wgpuInstanceProcessEvents(g->instance);
  g->queue = wgpuDeviceGetQueue(g->device);
}

void raw_close(raw_gpu *g) {
  wgpuQueueRelease(g->queue);
  wgpuDeviceRelease(g->device);
  wgpuAdapterRelease(g->adapter);
  wgpuInstanceRelease(g->instance);
  memset(g, 0, sizeof *g);
}

static WGPUBuffer make_buffer(raw_gpu *g, uint64_t bytes, WGPUBufferUsage use) {
  WGPUBufferDescriptor d = WGPU_BUFFER_DESCRIPTOR_INIT;
  d.size = (bytes + 3) & ~(uint64_t)3;
  d.usage = use;
  WGPUBuffer b = wgpuDeviceCreateBuffer(g->device, &d);
  if (!b)
    bench_die("raw: buffer of %llu bytes failed", (unsigned long long)bytes);
  return b;
}

WGPUBuffer raw_buffer(raw_gpu *g, uint64_t bytes) {
  return make_buffer(g, bytes,
                     WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc |
                         WGPUBufferUsage_CopyDst);
}

WGPUBuffer raw_uniform(raw_gpu *g, const void *data, uint64_t bytes) {
  WGPUBuffer b =
      make_buffer(g, bytes, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst);
  wgpuQueueWriteBuffer(g->queue, b, 0, data, bytes);
  return b;
}

WGPUBuffer raw_staging(raw_gpu *g, uint64_t bytes) {
  return make_buffer(g, bytes,
                     WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst);
}

float *raw_upload_random(raw_gpu *g, WGPUBuffer b, size_t floats,
                         unsigned seed) {
  float *h = malloc(floats * sizeof *h);
  if (!h)
    bench_die("raw: out of host memory");
  srand(seed);
  for (size_t i = 0; i < floats; i++)
    h[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  wgpuQueueWriteBuffer(g->queue, b, 0, h, floats * sizeof *h);
  return h;
}

raw_kernel raw_kernel_make(raw_gpu *g, const char *name,
                           const WGPUBuffer *buffers, int count) {
  char *src = bench_read_kernel(name);
  WGPUShaderSourceWGSL wgsl = WGPU_SHADER_SOURCE_WGSL_INIT;
  wgsl.code = sv(src);
  WGPUShaderModuleDescriptor md = WGPU_SHADER_MODULE_DESCRIPTOR_INIT;
  md.nextInChain = &wgsl.chain;
  md.label = sv(name);
  WGPUShaderModule mod = wgpuDeviceCreateShaderModule(g->device, &md);
  free(src);
  WGPUComputePipelineDescriptor pd = WGPU_COMPUTE_PIPELINE_DESCRIPTOR_INIT;
  pd.label = sv(name);
  pd.compute.module = mod;
  pd.compute.entryPoint = sv("main");
  raw_kernel k;
  k.pipeline = wgpuDeviceCreateComputePipeline(g->device, &pd);
  wgpuShaderModuleRelease(mod);
  if (!k.pipeline)
    bench_die("raw: pipeline %s failed", name);

  WGPUBindGroupEntry e[8];
  if (count > 8)
    bench_die("raw: too many bindings");
  for (int i = 0; i < count; i++) {
    e[i] = (WGPUBindGroupEntry)WGPU_BIND_GROUP_ENTRY_INIT;
    e[i].binding = (uint32_t)i;
    e[i].buffer = buffers[i];
    e[i].size = WGPU_WHOLE_SIZE;
  }
  WGPUBindGroupDescriptor bd = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
  bd.layout = wgpuComputePipelineGetBindGroupLayout(k.pipeline, 0);
  bd.entryCount = (size_t)count;
  bd.entries = e;
  k.group = wgpuDeviceCreateBindGroup(g->device, &bd);
  wgpuBindGroupLayoutRelease(bd.layout);
  return k;
}

void raw_kernel_free(raw_kernel *k) {
  wgpuBindGroupRelease(k->group);
  wgpuComputePipelineRelease(k->pipeline);
}

void raw_dispatch(WGPUComputePassEncoder pass, const raw_kernel *k, uint32_t x,
                  uint32_t y, uint32_t z) {
  wgpuComputePassEncoderSetPipeline(pass, k->pipeline);
  wgpuComputePassEncoderSetBindGroup(pass, 0, k->group, 0, NULL);
  wgpuComputePassEncoderDispatchWorkgroups(pass, x, y, z);
}

void raw_submit_wait(raw_gpu *g, WGPUCommandEncoder enc) {
  WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
  wgpuQueueSubmit(g->queue, 1, &cb);
  wgpuCommandBufferRelease(cb);
  wgpuCommandEncoderRelease(enc);
  wgpuDevicePoll(g->device, 1, NULL);
}

static void on_map(WGPUMapAsyncStatus status, WGPUStringView message, void *u1,
                   void *u2) {
  (void)u2;
  if (status != WGPUMapAsyncStatus_Success)
    bench_die("raw: map failed: %.*s", (int)message.length, message.data);
  *(int *)u1 = 1;
}

void raw_read(raw_gpu *g, WGPUCommandEncoder enc, WGPUBuffer src,
              WGPUBuffer staging, void *dst, uint64_t bytes) {
  wgpuCommandEncoderCopyBufferToBuffer(enc, src, 0, staging, 0, bytes);
  raw_submit_wait(g, enc);
  int mapped = 0;
  WGPUBufferMapCallbackInfo mi = WGPU_BUFFER_MAP_CALLBACK_INFO_INIT;
  mi.mode = WGPUCallbackMode_AllowSpontaneous;
  mi.callback = on_map;
  mi.userdata1 = &mapped;
  wgpuBufferMapAsync(staging, WGPUMapMode_Read, 0, bytes, mi);
  while (!mapped)
    wgpuDevicePoll(g->device, 1, NULL);
  memcpy(dst, wgpuBufferGetConstMappedRange(staging, 0, bytes), bytes);
  wgpuBufferUnmap(staging);
}

float *raw_download(raw_gpu *g, WGPUBuffer src, uint64_t bytes) {
  float *h = malloc(bytes);
  if (!h)
    bench_die("raw: out of host memory");
  WGPUBuffer staging = raw_staging(g, bytes);
  raw_read(g, wgpuDeviceCreateCommandEncoder(g->device, NULL), src, staging, h,
           bytes);
  wgpuBufferRelease(staging);
  return h;
}
