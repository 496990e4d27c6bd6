/* Shared by the bench's parts: timing and the record of measurements. */
#ifndef BENCH_BENCH_H
#define BENCH_BENCH_H

#include <stddef.h>
#include <stdio.h>

/* One timed run of a measurement; it waits for its own completion. */
typedef void (*bench_fn)(void *arg);

double bench_now(void);
/* Timed runs per figure (WGC_BENCH_REPS, at least 5). */
int bench_reps(void);
/* One warm-up run (compiles pipelines, faults memory in), then reps timed
 * runs: the median in seconds. */
double bench_median(bench_fn fn, void *arg, int reps);
/* The median of n seconds (sorts them). */
double bench_median_of(double *t, int n);
/* The folder holding the baselines' WGSL (beside the executable's
 * ../bench/kernels), and a file read from it (caller frees). */
char *bench_read_kernel(const char *name);
int bench_large(void);
int bench_quick(void);
/* Whether WGC_BENCH_GROUPS (a comma list: gemm, conv2d, attention, reduce,
 * elementwise, host, pipeline, decoder) names the group; unset names every
 * group. */
int bench_group_wanted(const char *group);
/* This program run again as "env '<exe>' arg" (env: variable settings for
 * it, e.g. a shader cache off), its output to read; exits on failure. */
FILE *bench_popen_self(const char *env, const char *arg);
/* Exits with a message. */
void bench_die(const char *fmt, ...);

/* A measurement, appended to the part's record file: the case (group and
 * name), the system that ran it, its median seconds over runs, the work of
 * one run (flops, bytes or operations, by unit: "GFLOP/s", "GB/s",
 * "us/op", "ms") and the device bytes it allocated (0 when not tracked). */
void record_open(const char *path, const char *adapter);
void record(const char *group, const char *name, const char *system,
            double seconds, int runs, double work, const char *unit,
            double device_bytes);
/* Notes for the report (adapter name, OpenBLAS kernel). */
void record_note(const char *key, const char *value);
void record_close(void);

#endif
