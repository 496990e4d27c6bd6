/* The thin GPU layer: the few WebGPU calls the WebGPU backend needs, on
 * integer ids. Implemented over webgpu.h (gpu_native.c) and over
 * navigator.gpu through wasm imports (gpu_browser.c + web/gpu.js).
 *
 * Ids are non-zero uint32 values; 0 means "none" or "failed". Nothing here
 * waits except gpu_process_events(dev, true). Completions (device requests,
 * buffer maps, work-done notifications) call their callback exactly once:
 * natively from gpu_process_events, in the browser from the event loop.
 *
 * Natively, each device has a submission thread that makes every runtime
 * call that can wait behind queued GPU work (queue submits and writes,
 * maps, work-done requests, device polls), in the order they were made
 * here: a driver whose queue submission waits for earlier work (lavapipe's
 * does) then never holds up the caller. Completions arriving there are only
 * marked; callbacks still run on the caller's thread. */
#ifndef WGC_GPU_H
#define WGC_GPU_H

#include "wgc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint32_t gpu_id;

enum gpu_usage {
  GPU_USAGE_STORAGE = 1u << 0,
  GPU_USAGE_UNIFORM = 1u << 1,
  GPU_USAGE_COPY_SRC = 1u << 2,
  GPU_USAGE_COPY_DST = 1u << 3,
  GPU_USAGE_MAP_READ = 1u << 4,
  GPU_USAGE_QUERY_RESOLVE = 1u << 5,
};

/* Optional features a device may be asked for. */
enum gpu_feature {
  GPU_FEATURE_TIMESTAMPS = 1u << 0, /* timestamp queries */
};

/* What the device was created with (the adapter's own limits). */
typedef struct gpu_limits {
  uint64_t max_buffer_size;
  uint64_t max_storage_binding_size;
  uint32_t min_storage_offset_alignment;
  uint32_t min_uniform_offset_alignment;
  uint32_t max_workgroups_per_dimension;
  uint32_t max_invocations_per_workgroup;
  uint32_t max_workgroup_size_x, max_workgroup_size_y;
  uint32_t max_workgroup_storage_size;
  uint32_t max_storage_buffers_per_stage;
  /* A software adapter that runs on the CPU (lavapipe, SwiftShader): there
   * workgroup memory is ordinary memory and barriers are costly, so kernels
   * that stage data through it lose to ones that read memory directly. */
  bool cpu_adapter;
  /* Loop iterations one invocation may run, over all its loops; 0: no
   * limit. Set by the backend for CPU adapters: llvmpipe (lavapipe) ends an
   * invocation silently after 65535 (Mesa's LP_MAX_TGSI_LOOP_ITERATIONS),
   * so kernels split longer loops into several launches. */
  uint32_t loop_budget;
} gpu_limits;

/* One storage or uniform binding of a bind group; bindings are numbered by
 * their position in the array. */
typedef struct gpu_binding {
  gpu_id buffer;
  uint64_t offset; /* multiple of the offset alignment */
  uint64_t size;
} gpu_binding;

typedef void (*gpu_status_cb)(wgc_status status, void *user);
typedef void (*gpu_device_cb)(wgc_status status, gpu_id device, void *user);

/* Requests an adapter (power: a wgc_power_preference) and a device with the
 * adapter's limits; pipeline_cache: wgc_options.pipeline_cache (natively,
 * read during this call only; the browser ignores it). Returns
 * WGC_ERR_NO_ADAPTER at once when no WebGPU runtime exists at all; otherwise cb
 * reports WGC_OK with the device, or WGC_ERR_NO_ADAPTER / WGC_ERR_DEVICE.
 * Natively cb fires before this returns (the native runtime resolves requests
 * at once); in the browser it fires later from the event loop. */
wgc_status gpu_request_device(int power, unsigned features,
                              const char *pipeline_cache, gpu_device_cb cb,
                              void *user);
/* Releases the device and everything created on it; completions still
 * pending fire first (WGC_ERR_CANCELLED where their work never finished). */
void gpu_device_release(gpu_id dev);
void gpu_device_limits(gpu_id dev, gpu_limits *out);
/* The pipeline cache's status sentence (wgc_pipeline_cache_status); "" when
 * the device was requested without one, and always in the browser. */
void gpu_device_cache_status(gpu_id dev, char *buf, size_t cap);
/* The adapter's name and driver, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)". */
void gpu_device_name(gpu_id dev, char *buf, size_t cap);

/* The first error the device reported since the last call (a validation
 * error, out of memory, or loss), copied into msg; WGC_OK when none.
 * Loss is sticky: once lost, every later call returns WGC_ERR_DEVICE_LOST. */
wgc_status gpu_take_error(gpu_id dev, char *msg, size_t cap);

/* A buffer of size bytes (multiple of 4), zero-filled; 0 on failure. In
 * the browser a MAP_READ | COPY_DST buffer (staging) may be one released
 * earlier, holding its old contents: read only what was copied into it. */
gpu_id gpu_buffer_create(gpu_id dev, uint64_t size, unsigned usage);
/* Drops the handle; the GPU keeps the memory until submitted work using it
 * is done. */
void gpu_buffer_release(gpu_id buf);
/* Queue-ordered write: it happens after every earlier submit and before
 * every later one. */
void gpu_queue_write(gpu_id dev, gpu_id buf, uint64_t offset, const void *data,
                     uint64_t size);

/* A kernel: WGSL source of len bytes with the entry point "main", whose
 * group 0 holds bindings storage buffers (binding b read-write where bit b
 * of writable is set, read-only otherwise) and then one uniform buffer. */
typedef struct gpu_shader {
  const char *wgsl;
  size_t len;
  uint32_t bindings, writable;
} gpu_shader;

/* Compiles s into a compute pipeline; 0 on failure (the reason is in
 * gpu_take_error). In the browser the compile is asynchronous: the id is
 * usable at once, and work recorded with it waits in the runtime (never
 * the page) until it is ready; a failure arrives as a device error. */
gpu_id gpu_pipeline_create(gpu_id dev, const gpu_shader *s);
/* As gpu_pipeline_create for n kernels into out[i], compiled concurrently:
 * natively on worker threads, returning once all are done; in the browser
 * every compile is asynchronous anyway. */
void gpu_pipelines_create(gpu_id dev, const gpu_shader *s, size_t n,
                          gpu_id *out);
/* cb fires once every pipeline created on dev so far has compiled: WGC_OK,
 * or WGC_ERR_DEVICE where one failed since the previous call. Natively
 * compiles are done when gpu_pipeline_create returns; cb fires from
 * gpu_process_events. */
void gpu_pipelines_ready(gpu_id dev, gpu_status_cb cb, void *user);
void gpu_pipeline_release(gpu_id pipeline);
/* A bind group for group 0 of pipeline; 0 on failure. */
gpu_id gpu_bind_group_create(gpu_id dev, gpu_id pipeline, uint32_t count,
                             const gpu_binding *bindings);
/* Safe right after use in an encoder: the encoder keeps it alive. */
void gpu_bind_group_release(gpu_id group);

/* Command recording. Dispatches go into one compute pass until a copy or the
 * submit ends it; WebGPU orders dispatches within a pass. */
gpu_id gpu_encoder_create(gpu_id dev);
void gpu_encoder_dispatch(gpu_id enc, gpu_id pipeline, gpu_id group, uint32_t x,
                          uint32_t y, uint32_t z);
void gpu_encoder_copy(gpu_id enc, gpu_id src, uint64_t src_offset, gpu_id dst,
                      uint64_t dst_offset, uint64_t size);
/* Finishes, submits and releases enc (natively the submit itself happens
 * on the submission thread, in order with writes and maps). An encoder that
 * recorded an error is dropped instead; the error is in gpu_take_error. */
void gpu_encoder_submit(gpu_id dev, gpu_id enc);

/* Timestamp queries: whether dev has them (asked for with
 * GPU_FEATURE_TIMESTAMPS, and the adapter offers them), and nanoseconds
 * per tick of the values resolved. */
bool gpu_device_timestamps(gpu_id dev);
double gpu_timestamp_period(gpu_id dev);
/* Writes the GPU's clock, at this point of enc's recording, into query
 * index (0 or 1) of enc's own pair of timestamps (made by the first such
 * call). */
void gpu_encoder_timestamp(gpu_id enc, uint32_t index);
/* Resolves enc's pair into buf (QUERY_RESOLVE usage) at offset (a multiple
 * of 256): two uint64 ticks. */
void gpu_encoder_resolve_timestamps(gpu_id enc, gpu_id buf, uint64_t offset);

/* Maps [offset, offset+size) of a MAP_READ buffer; cb fires once mapped (or
 * failed). Then gpu_buffer_read copies out of the mapping and unmaps. */
void gpu_buffer_map_read(gpu_id buf, uint64_t offset, uint64_t size,
                         gpu_status_cb cb, void *user);
void gpu_buffer_read(gpu_id buf, uint64_t offset, void *dst, uint64_t size);
/* As gpu_buffer_read for n ranges of one mapping, unmapped once after. */
typedef struct gpu_read {
  uint64_t offset;
  void *dst;
  uint64_t size;
} gpu_read;
void gpu_buffer_read_many(gpu_id buf, const gpu_read *reads, size_t n);

/* cb fires once all work submitted so far is done. */
void gpu_on_work_done(gpu_id dev, gpu_status_cb cb, void *user);

/* As gpu_on_work_done; *done_us (wgc_now_us's clock) receives when the
 * runtime reported the work done, before cb fires, when it did. */
void gpu_on_work_done_stamped(gpu_id dev, double *done_us, gpu_status_cb cb,
                              void *user);

/* Delivers due completions. wait: natively block until the submitted work
 * is done first. Returns false where waiting is impossible (the browser). */
bool gpu_process_events(gpu_id dev, bool wait);

/* Test hook, native only: destroys the runtime device under whatever is
 * queued, as a driver reset would lose it. */
void gpu_device_lose(gpu_id dev);

/* Test hook: one line on the device's completions in flight, for a
 * failure message when one never arrives. */
void gpu_describe(gpu_id dev, char *out, size_t size);

/* Whether this build can wait at all (false in the browser). */
bool gpu_can_wait(void);
/* Asks the host to run wgc_poll_all soon, from its event loop: a callback
 * just registered may be due without a GPU event of its own (the CPU
 * backend completes at once). Natively a no-op: the program polls. */
void gpu_request_poll(void);
/* Whether the process can map bytes more of address space under its cap
 * (RLIMIT_AS): natively the WebGPU runtime aborts the process when a host
 * allocation fails, so calls into it check for headroom first. True
 * without a cap (a getrlimit) and in the browser. Nothing is mapped to
 * find out, so other threads never see less memory for it. */
bool gpu_host_headroom(size_t bytes);

#endif /* WGC_GPU_H */
