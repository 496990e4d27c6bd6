/* The parts of a bench run; each runs in its own process (the Vulkan
 * loader reads VK_DRIVER_FILES once, when the instance is created). */
#ifndef BENCH_PARTS_H
#define BENCH_PARTS_H

#include <stddef.h>

#include "wgc.h"

/* Case names shared by several systems. */
#define HOST_CHAIN "1000 ops on 16 floats, one download"
#define HOST_ROUND_TRIP "1000 x (op on 16 floats + download)"
#define UNARY_CASE "unary RELU, 16M floats"
#define BINARY_CASE "binary ADD, 16M floats"
#define PIPELINE_CASE "unary SILU on 1024 floats + sync"
#define GEMM_FIRST_CASE "GEMM 256^3 first call, no shader cache"

/* Called after each case of wgc's: group and index in its shape list (for
 * "elementwise": 0 unary, 1 binary). */
typedef void (*case_hook)(const char *group, size_t index);

/* wgc on the WebGPU backend (this process's adapter) or the CPU backend;
 * after (may be NULL) runs once each case is measured. */
void part_wgc(wgc_backend backend, const char *adapter, case_hook after);
/* Seconds of one 256^3 GEMM's first call on a new WebGPU context. */
double part_gemm_first_call(void);
/* Each op family's compile cost on this process's adapter, one line per
 * op on stdout (bench_wgc --compile-costs, with the shader cache off) ...*/
void part_compile_costs(void);
/* ... and the "compile" group's records from a child process running it. */
void compile_cases(void);
/* The raw webgpu.h baselines on this process's adapter, case by case (the
 * same group and index as wgc's), right after wgc's: the two are measured
 * seconds apart, under the same load. */
void raw_side_open(const char *adapter);
void raw_side_case(const char *group, size_t index);
void raw_side_close(void);
/* OpenBLAS sgemm, this machine's roofline. */
void part_openblas(void);

#endif
