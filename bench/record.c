/* A part's measurements, one tab-separated line each, for the report; and
 * a progress line on stdout as each figure lands. */
#include "bench.h"

#include <stdio.h>
#include <string.h>

static FILE *g_out;
static char g_adapter[32];

void record_open(const char *path, const char *adapter) {
  g_out = fopen(path, "w");
  if (!g_out)
    bench_die("cannot write %s", path);
  snprintf(g_adapter, sizeof g_adapter, "%s", adapter);
}

void record(const char *group, const char *name, const char *system,
            double seconds, int runs, double work, const char *unit,
            double device_bytes) {
  fprintf(g_out, "R\t%s\t%s\t%s\t%s\t%.9g\t%d\t%.9g\t%s\t%.0f\n", group, name,
          system, g_adapter, seconds, runs, work, unit, device_bytes);
  fflush(g_out);
  double v = strcmp(unit, "us/op") == 0      ? seconds / work * 1e6
             : strcmp(unit, "ms") == 0       ? seconds * 1e3
             : strcmp(unit, "tokens/s") == 0 ? work / seconds
                                             : work / seconds * 1e-9;
  printf("  %-10s %-8s %-44s %-18s %10.3f %s\n", g_adapter, group, name, system,
         v, unit);
  fflush(stdout);
}

void record_note(const char *key, const char *value) {
  fprintf(g_out, "N\t%s\t%s\t%s\n", g_adapter, key, value);
  fflush(g_out);
}

void record_close(void) {
  if (g_out)
    fclose(g_out);
  g_out = NULL;
}
