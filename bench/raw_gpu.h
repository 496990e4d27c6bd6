/* A bare webgpu.h device for the baselines: wgpu-native called directly,
 * nothing of wgc in between. Every call exits the bench on failure (a
 * baseline that cannot run would make every ratio meaningless). */
#ifndef BENCH_RAW_GPU_H
#define BENCH_RAW_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "wgpu.h"

typedef struct raw_gpu {
  WGPUInstance instance;
  WGPUAdapter adapter;
  WGPUDevice device;
  WGPUQueue queue;
  char name[160];
} raw_gpu;

/* A compute pipeline with its bind group over the given buffers, bound in
 * order to @binding(0..count-1) of group 0. */
typedef struct raw_kernel {
  WGPUComputePipeline pipeline;
  WGPUBindGroup group;
} raw_kernel;

void raw_open(raw_gpu *g);
void raw_close(raw_gpu *g);
/* A storage buffer (also copy source and destination) of bytes. */
WGPUBuffer raw_buffer(raw_gpu *g, uint64_t bytes);
WGPUBuffer raw_uniform(raw_gpu *g, const void *data, uint64_t bytes);
/* A buffer that can be mapped for reading. */
WGPUBuffer raw_staging(raw_gpu *g, uint64_t bytes);
/* Fills b with floats in [-0.5, 0.5] from seed; returns them (caller
 * frees) for checking results. */
float *raw_upload_random(raw_gpu *g, WGPUBuffer b, size_t floats,
                         unsigned seed);
/* The first bytes of src, read back (caller frees). */
float *raw_download(raw_gpu *g, WGPUBuffer src, uint64_t bytes);
/* Compiles bench/kernels/NAME.wgsl (entry point "main"). */
raw_kernel raw_kernel_make(raw_gpu *g, const char *name,
                           const WGPUBuffer *buffers, int count);
void raw_kernel_free(raw_kernel *k);
/* Encodes one dispatch into an open pass. */
void raw_dispatch(WGPUComputePassEncoder pass, const raw_kernel *k, uint32_t x,
                  uint32_t y, uint32_t z);
/* Submits the encoder and waits until the queue is idle. */
void raw_submit_wait(raw_gpu *g, WGPUCommandEncoder enc);
/* Copies bytes of src into staging, waits, maps and reads them to dst. */
void raw_read(raw_gpu *g, WGPUCommandEncoder enc, WGPUBuffer src,
              WGPUBuffer staging, void *dst, uint64_t bytes);

#endif
