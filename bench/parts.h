/* The parts of a bench run; each runs in its own process (the Vulkan
 * loader reads VK_DRIVER_FILES once, when the instance is created). */
#ifndef BENCH_PARTS_H
#define BENCH_PARTS_H

#include "wgc.h"

/* Case names shared by several systems. */
#define HOST_CHAIN "1000 ops on 16 floats, one download"
#define HOST_ROUND_TRIP "1000 x (op on 16 floats + download)"
#define PIPELINE_CASE "unary SILU on 1024 floats + sync"

/* wgc on the WebGPU backend (this process's adapter) or the CPU backend. */
void part_wgc(wgc_backend backend, const char *adapter);
/* The raw webgpu.h baselines on this process's adapter. */
void part_raw(const char *adapter);
/* OpenBLAS sgemm, this machine's roofline. */
void part_openblas(void);

#endif
