/* make bench: every figure measured in this run, each beside its baselines.
 *   bench_wgc                  runs every part, then the report
 *   bench_wgc --report         the report of the record files already there
 *   bench_wgc --part NAME FILE one part (cpu, openblas, lavapipe,
 *                              swiftshader) into a record file
 *   bench_wgc --gemm-first-call  prints the seconds of a GEMM's first call
 *                              on a new context (the pipeline cases)
 *   bench_wgc --compile-costs  prints each op's kernel compile times
 *                              (bench/compile_cases.c)
 * Environment: WGC_BENCH_DIR (default build/bench), WGC_BENCH_REPS (timed
 * runs per figure, at least 5), WGC_BENCH_LARGE=1 (2048^3 GEMM on
 * SwiftShader too, and every attention shape up to sequence 2048),
 * WGC_BENCH_ADAPTERS (e.g. "lavapipe": the adapters to run), WGC_BENCH_GROUPS
 * (e.g. "gemm,attention": the case groups to run). */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "parts.h"
#include "report.h"

extern char **environ;

#define LAVAPIPE_ICD "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
#define SWIFTSHADER_ICD "/usr/lib/chromium/vk_swiftshader_icd.json"

static int run_part(const char *part, const char *file) {
  record_open(file, strcmp(part, "openblas") == 0 ? "cpu" : part);
  if (strcmp(part, "cpu") == 0)
    part_wgc(WGC_BACKEND_CPU, "cpu", NULL);
  else if (strcmp(part, "openblas") == 0)
    part_openblas();
  else {
    raw_side_open(part);
    part_wgc(WGC_BACKEND_WEBGPU, part, raw_side_case);
    raw_side_close();
  }
  record_close();
  return 0;
}

/* The part in a child process with its own environment: the Vulkan driver
 * for an adapter, OpenBLAS free to pick its kernel for this CPU. */
static int spawn_part(const char *part, const char *file) {
  /* /proc/self/exe: this very program, even if the file was rebuilt since */
  char exe[] = "/proc/self/exe";
  char *save_vk = getenv("VK_DRIVER_FILES");
  save_vk = save_vk ? strdup(save_vk) : NULL;
  if (strcmp(part, "lavapipe") == 0 && access(LAVAPIPE_ICD, R_OK) == 0)
    setenv("VK_DRIVER_FILES", LAVAPIPE_ICD, 1);
  if (strcmp(part, "swiftshader") == 0)
    setenv("VK_DRIVER_FILES", SWIFTSHADER_ICD, 1);
  char *save_core = getenv("OPENBLAS_CORETYPE"), *save_l2 = NULL;
  save_core = save_core ? strdup(save_core) : NULL;
  if (strcmp(part, "openblas") == 0 && save_core) {
    /* A pinned core type would hide what this CPU reaches. */
    save_l2 = getenv("OPENBLAS_L2_SIZE");
    save_l2 = save_l2 ? strdup(save_l2) : NULL;
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
  }
  char *argv[] = {exe, "--part", (char *)part, (char *)file, NULL};
  printf("== %s\n", part);
  fflush(stdout);
  double t0 = bench_now();
  pid_t pid;
  int rc = posix_spawn(&pid, exe, NULL, NULL, argv, environ);
  int status = 1;
  if (rc == 0)
    waitpid(pid, &status, 0);
  printf("== %s took %.0f s\n", part, bench_now() - t0);
  if (save_vk)
    setenv("VK_DRIVER_FILES", save_vk, 1);
  else
    unsetenv("VK_DRIVER_FILES");
  if (save_core) {
    setenv("OPENBLAS_CORETYPE", save_core, 1);
    if (save_l2)
      setenv("OPENBLAS_L2_SIZE", save_l2, 1);
  }
  free(save_vk);
  free(save_core);
  free(save_l2);
  return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int wanted(const char *adapter) {
  const char *only = getenv("WGC_BENCH_ADAPTERS");
  return !only || !*only || strstr(only, adapter) != NULL;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--part") == 0)
    return run_part(argv[2], argv[3]);
  if (argc == 2 && strcmp(argv[1], "--gemm-first-call") == 0) {
    printf("%.6f\n", part_gemm_first_call());
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--compile-costs") == 0) {
    part_compile_costs();
    return 0;
  }
  int report_only = argc == 2 && strcmp(argv[1], "--report") == 0;
  if (argc != 1 && !report_only) {
    fprintf(stderr, "usage: bench_wgc [--report | --part NAME FILE]\n");
    return 2;
  }
  double t0 = bench_now();
  const char *dir = getenv("WGC_BENCH_DIR");
  dir = dir && *dir ? dir : "build/bench";
  mkdir(dir, 0777);
  const char *parts[4] = {"cpu", "openblas", "lavapipe", "swiftshader"};
  char files[4][4096];
  const char *done[4];
  int count = 0, ok = 1;
  for (int i = 0; i < 4 && report_only; i++) {
    snprintf(files[i], sizeof files[i], "%s/part-%s.tsv", dir, parts[i]);
    if (access(files[i], R_OK) == 0)
      done[count++] = files[i];
  }
  for (int i = 0; i < 4 && !report_only; i++) {
    if (i >= 2 && !wanted(parts[i]))
      continue;
    if (i == 3 && access(SWIFTSHADER_ICD, R_OK) != 0) {
      printf("== swiftshader: %s missing, skipped\n", SWIFTSHADER_ICD);
      continue;
    }
    snprintf(files[i], sizeof files[i], "%s/part-%s.tsv", dir, parts[i]);
    if (spawn_part(parts[i], files[i]))
      done[count++] = files[i];
    else {
      fprintf(stderr, "bench: part %s failed\n", parts[i]);
      ok = 0;
    }
  }
  char json[4096];
  snprintf(json, sizeof json, "%s/bench.json", dir);
  if (report_write(done, count, json) != 0)
    return 1;
  if (!report_only)
    printf("bench: every part took %.0f s in all\n", bench_now() - t0);
  return ok ? 0 : 1;
}
