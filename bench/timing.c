/* Timing: a warm-up run, then the median of several timed runs (the median
 * shrugs off the odd run that another process on the cores slowed). */
#include "bench.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int bench_reps(void) {
  const char *s = getenv("WGC_BENCH_REPS");
  int n = s ? atoi(s) : 5;
  return n < 5 ? 5 : n;
}

static int flag(const char *name) {
  const char *s = getenv(name);
  return s && *s && strcmp(s, "0") != 0;
}

int bench_large(void) { return flag("WGC_BENCH_LARGE"); }
int bench_quick(void) { return flag("WGC_BENCH_QUICK"); }

int bench_group_wanted(const char *group) {
  const char *only = getenv("WGC_BENCH_GROUPS");
  if (!only || !*only)
    return 1;
  size_t len = strlen(group);
  for (const char *p = only; (p = strstr(p, group)) != NULL; p += len)
    if ((p == only || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
      return 1;
  return 0;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(bench_fn fn, void *arg, int reps) {
  double t[64];
  if (reps > 64)
    reps = 64;
  fn(arg);
  for (int i = 0; i < reps; i++) {
    double t0 = bench_now();
    fn(arg);
    t[i] = bench_now() - t0;
  }
  return bench_median_of(t, reps);
}

double bench_median_of(double *t, int n) {
  qsort(t, (size_t)n, sizeof t[0], by_value);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

void bench_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

char *bench_read_kernel(const char *name) {
  char exe[PATH_MAX], path[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    bench_die("cannot locate the executable");
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (slash)
    *slash = 0;
  snprintf(path, sizeof path, "%s/../bench/kernels/%s.wgsl", exe, name);
  FILE *f = fopen(path, "rb");
  if (!f)
    bench_die("cannot read %s", path);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)len + 1);
  if (!s || fread(s, 1, (size_t)len, f) != (size_t)len)
    bench_die("cannot read %s", path);
  s[len] = 0;
  fclose(f);
  return s;
}

FILE *bench_popen_self(const char *env, const char *arg) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    bench_die("readlink /proc/self/exe failed");
  exe[n] = 0;
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "%s '%s' %s", env, exe, arg);
  FILE *f = popen(cmd, "r");
  if (!f)
    bench_die("%s failed", cmd);
  return f;
}
