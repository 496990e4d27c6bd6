/* Cases are (group, name, adapter): the rows measured on one GPU adapter
 * plus the CPU-side rows (CPU backend, OpenBLAS) of the same group and
 * name. Within a case every ratio is wgc's speed over another system's,
 * that is the other's median time per unit of work over wgc's (above 1: wgc
 * is faster); the systems of a case mostly do the same work, but a
 * baseline such as a buffer copy may move other bytes than wgc's op. */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "bench.h"

typedef struct row {
  char group[32], name[64], system[32], adapter[32], unit[16];
  double seconds, work, bytes;
  int runs;
} row;

typedef struct note {
  char adapter[32], key[64], value[256];
} note;

typedef struct kase {
  const char *group, *name, *adapter;
  int rows[16], count;
} kase;

static row g_rows[1024];
static note g_notes[64];
static kase g_cases[512];
static int g_nrows, g_nnotes, g_ncases;

static void read_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char *field[10];
    int n = 0;
    for (char *p = line; n < 10;) {
      field[n++] = p;
      char *tab = strchr(p, '\t');
      if (!tab)
        break;
      *tab = 0;
      p = tab + 1;
    }
    if (field[0][0] == 'R' && n == 10 && g_nrows < 1024) {
      row *r = &g_rows[g_nrows++];
      snprintf(r->group, sizeof r->group, "%s", field[1]);
      snprintf(r->name, sizeof r->name, "%s", field[2]);
      snprintf(r->system, sizeof r->system, "%s", field[3]);
      snprintf(r->adapter, sizeof r->adapter, "%s", field[4]);
      r->seconds = atof(field[5]);
      r->runs = atoi(field[6]);
      r->work = atof(field[7]);
      snprintf(r->unit, sizeof r->unit, "%s", field[8]);
      r->bytes = atof(field[9]);
    } else if (field[0][0] == 'N' && n == 4 && g_nnotes < 64) {
      note *o = &g_notes[g_nnotes++];
      snprintf(o->adapter, sizeof o->adapter, "%s", field[1]);
      snprintf(o->key, sizeof o->key, "%s", field[2]);
      snprintf(o->value, sizeof o->value, "%s", field[3]);
    }
  }
  fclose(f);
}

static kase *find_case(const char *group, const char *name,
                       const char *adapter) {
  for (int i = 0; i < g_ncases; i++)
    if (!strcmp(g_cases[i].group, group) && !strcmp(g_cases[i].name, name) &&
        !strcmp(g_cases[i].adapter, adapter))
      return &g_cases[i];
  if (g_ncases == 512)
    return NULL;
  kase *k = &g_cases[g_ncases++];
  k->group = group, k->name = name, k->adapter = adapter, k->count = 0;
  return k;
}

static void add(kase *k, int r) {
  if (k && k->count < 16)
    k->rows[k->count++] = r;
}

static void build_cases(void) {
  for (int i = 0; i < g_nrows; i++)
    if (strcmp(g_rows[i].adapter, "cpu") != 0)
      add(find_case(g_rows[i].group, g_rows[i].name, g_rows[i].adapter), i);
  int gpu_cases = g_ncases;
  for (int i = 0; i < g_nrows; i++) {
    if (strcmp(g_rows[i].adapter, "cpu") != 0)
      continue;
    int joined = 0;
    for (int c = 0; c < gpu_cases; c++)
      if (!strcmp(g_cases[c].group, g_rows[i].group) &&
          !strcmp(g_cases[c].name, g_rows[i].name))
        add(&g_cases[c], i), joined = 1;
    if (!joined)
      add(find_case(g_rows[i].group, g_rows[i].name, "cpu"), i);
  }
}

/* The figure in its unit: throughput (per 1e9, or tokens), microseconds per
 * op, milliseconds. */
static double value(const row *r) {
  if (!strcmp(r->unit, "tokens/s"))
    return r->work / r->seconds;
  if (!strcmp(r->unit, "us/op"))
    return r->seconds / r->work * 1e6;
  if (!strcmp(r->unit, "ms"))
    return r->seconds * 1e3;
  return r->work / r->seconds * 1e-9;
}

/* wgc's row in the case: the plain "wgc" (WebGPU), else the first. */
static const row *primary(const kase *k) {
  for (int i = 0; i < k->count; i++)
    if (!strcmp(g_rows[k->rows[i]].system, "wgc"))
      return &g_rows[k->rows[i]];
  return &g_rows[k->rows[0]];
}

static double ratio(const row *r, const row *p) {
  return (r->seconds / r->work) / (p->seconds / p->work);
}

static void print_table(void) {
  printf("\nEvery figure: the median of its timed runs; (Nx): wgc's speed "
         "over that system's, measured in this run.\n");
  const char *last = "";
  for (int c = 0; c < g_ncases; c++) {
    const kase *k = &g_cases[c];
    const row *p = primary(k);
    if (strcmp(last, k->group) != 0 || c == 0)
      printf("\n%s (%s)\n", k->group, p->unit);
    last = k->group;
    printf("  %-11s %-38s", k->adapter, k->name);
    for (int i = 0; i < k->count; i++) {
      const row *r = &g_rows[k->rows[i]];
      printf(" | %s %.3g", r->system, value(r));
      if (r != p)
        printf(" (%.3gx)", ratio(r, p));
      if (r->bytes > 0)
        printf(" [%.1f MB]", r->bytes / 1e6);
    }
    printf("\n");
  }
  printf("\n");
  for (int i = 0; i < g_nnotes; i++)
    printf("%-11s %s: %s\n", g_notes[i].adapter, g_notes[i].key,
           g_notes[i].value);
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", *s);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

static void write_json(FILE *f) {
  struct utsname u;
  uname(&u);
  time_t now = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  fprintf(f, "{\n  \"schema\": \"wgc-bench-1\",\n  \"date\": \"%s\",\n", date);
  fprintf(f, "  \"host\": ");
  json_string(f, u.machine);
  fprintf(f, ",\n  \"large\": %d,\n", bench_large());
  fprintf(f, "  \"ratio\": \"other system's median time per unit of work / "
             "wgc's: wgc's speedup over it\",\n");
  fprintf(f, "  \"notes\": [");
  for (int i = 0; i < g_nnotes; i++) {
    fprintf(f, "%s\n    {\"adapter\": ", i ? "," : "");
    json_string(f, g_notes[i].adapter);
    fprintf(f, ", \"key\": ");
    json_string(f, g_notes[i].key);
    fprintf(f, ", \"value\": ");
    json_string(f, g_notes[i].value);
    fprintf(f, "}");
  }
  fprintf(f, "\n  ],\n  \"cases\": [");
  for (int c = 0; c < g_ncases; c++) {
    const kase *k = &g_cases[c];
    const row *p = primary(k);
    fprintf(f, "%s\n    {\"group\": ", c ? "," : "");
    json_string(f, k->group);
    fprintf(f, ", \"name\": ");
    json_string(f, k->name);
    fprintf(f, ", \"adapter\": ");
    json_string(f, k->adapter);
    fprintf(f, ", \"unit\": ");
    json_string(f, p->unit);
    fprintf(f, ", \"primary\": ");
    json_string(f, p->system);
    fprintf(f, ",\n     \"results\": [");
    for (int i = 0; i < k->count; i++) {
      const row *r = &g_rows[k->rows[i]];
      fprintf(f, "%s\n       {\"system\": ", i ? "," : "");
      json_string(f, r->system);
      fprintf(f, ", \"adapter\": ");
      json_string(f, r->adapter);
      fprintf(f,
              ", \"median_s\": %.9g, \"runs\": %d, \"work\": %.9g, "
              "\"value\": %.6g, \"device_bytes\": %.0f}",
              r->seconds, r->runs, r->work, value(r), r->bytes);
    }
    fprintf(f, "],\n     \"ratios\": {");
    int first = 1;
    for (int i = 0; i < k->count; i++) {
      const row *r = &g_rows[k->rows[i]];
      if (r == p)
        continue;
      fprintf(f, "%s", first ? "" : ", ");
      json_string(f, r->system);
      fprintf(f, ": %.6g", ratio(r, p));
      first = 0;
    }
    fprintf(f, "}}");
  }
  fprintf(f, "\n  ]\n}\n");
}

int report_write(const char *const *files, int count, const char *json_path) {
  for (int i = 0; i < count; i++)
    read_file(files[i]);
  build_cases();
  print_table();
  FILE *f = fopen(json_path, "w");
  if (!f) {
    fprintf(stderr, "bench: cannot write %s\n", json_path);
    return 1;
  }
  write_json(f);
  fclose(f);
  printf("\nwrote %s\n", json_path);
  return 0;
}
