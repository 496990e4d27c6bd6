/* The persistent pipeline cache (wgc_options.pipeline_cache): a cache
 * filled by one context or process is reused by the next (the driver writes
 * nothing new: every kernel is found), a file that is not a wgc cache is
 * left alone, a header for another wgc version or adapter empties the
 * cache, an unusable path is reported, the option off writes nothing; and
 * the results are right throughout. On drivers that keep no disk cache
 * (SwiftShader) the status says nothing persists and nothing is written. */
#include "gpu/native_cache.h"
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A fresh folder for one case's files. */
static void temp_dir(char *out, size_t cap) {
  snprintf(out, cap, "/tmp/wgc_pcacheXXXXXX");
  if (!mkdtemp(out))
    out[0] = '\0';
}

static int rm_one(const char *p, const struct stat *sb, int flag,
                  struct FTW *f) {
  (void)sb;
  (void)f;
  if (flag == FTW_DP)
    rmdir(p);
  else
    unlink(p);
  return 0;
}

static void rm_tree(const char *dir) {
  if (dir[0])
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static size_t g_files;
static int count_one(const char *p, const struct stat *sb, int flag,
                     struct FTW *f) {
  (void)p;
  (void)sb;
  (void)f;
  if (flag == FTW_F)
    g_files++;
  return 0;
}

/* Regular files below dir (0 when it does not exist). */
static size_t count_files(const char *dir) {
  g_files = 0;
  struct stat sb;
  if (stat(dir, &sb) == 0)
    nftw(dir, count_one, 16, FTW_PHYS);
  return g_files;
}

static bool exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

static size_t read_file(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(data, 1, n, f) == n, "cannot write %s", path);
  if (f)
    fclose(f);
}

static wgc_context *cache_ctx(wgc_backend b, const char *path) {
  wgc_options opt = {.backend = b, .pipeline_cache = path};
  wgc_context *ctx = NULL;
  wgc_status s = wgc_create(&opt, &ctx);
  CHECK(s == WGC_OK, "wgc_create with pipeline_cache %s: %s: %s", path,
        wgc_status_name(s), wgc_last_error(NULL));
  return ctx;
}

/* Compiles and runs a few kernels (a GEMM and two unary ops) and checks
 * their results; returns the milliseconds it took. */
static double work(wgc_context *ctx) {
  enum { N = 8 };
  float a[N * N], b[N * N], c[N * N], e[N];
  for (int i = 0; i < N * N; i++) {
    a[i] = (float)(i % 7) - 3.0f;
    b[i] = (float)(i % 5) * 0.5f;
  }
  wgc_ptr da = 0, db = 0, dc = 0, de = 0;
  double t0 = now_ms();
  CHECK_STATUS(wgc_alloc(ctx, sizeof a, &da), WGC_OK);
  CHECK_STATUS(wgc_alloc(ctx, sizeof b, &db), WGC_OK);
  CHECK_STATUS(wgc_alloc(ctx, sizeof c, &dc), WGC_OK);
  CHECK_STATUS(wgc_alloc(ctx, sizeof e, &de), WGC_OK);
  if (!da || !db || !dc || !de)
    return 0;
  CHECK_STATUS(wgc_upload(ctx, da, a, sizeof a), WGC_OK);
  CHECK_STATUS(wgc_upload(ctx, db, b, sizeof b), WGC_OK);
  CHECK_STATUS(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, N, N, N,
                        1.0f, da, N, db, N, 0.0f, dc, N),
               WGC_OK);
  CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_ABS, dc, dc, N * N), WGC_OK);
  CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_SQRT, dc, de, N), WGC_OK);
  CHECK_STATUS(wgc_download(ctx, c, dc, sizeof c), WGC_OK);
  CHECK_STATUS(wgc_download(ctx, e, de, sizeof e), WGC_OK);
  double ms = now_ms() - t0;
  int bad = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      double want = 0;
      for (int k = 0; k < N; k++)
        want += (double)a[i * N + k] * b[k * N + j];
      want = fabs(want);
      if (fabs(c[i * N + j] - want) > 1e-4)
        bad++;
      if (i == 0 && fabs(e[j] - sqrt(want)) > 1e-4)
        bad++;
    }
  CHECK(bad == 0, "%d wrong results", bad);
  wgc_free(ctx, da);
  wgc_free(ctx, db);
  wgc_free(ctx, dc);
  wgc_free(ctx, de);
  return ms;
}

static bool has(const char *text, const char *part) {
  return strstr(text, part) != NULL;
}

/* Whether this machine's WebGPU adapter keeps a cache wgc can direct
 * (Mesa's); *ok false without an adapter. */
static bool persists(bool *ok) {
  char dir[64], path[128];
  temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/probe", dir);
  wgc_context *ctx = cache_ctx(WGC_BACKEND_WEBGPU, path);
  *ok = ctx != NULL;
  bool yes = ctx && has(wgc_pipeline_cache_status(ctx), ": created");
  wgc_destroy(ctx);
  rm_tree(dir);
  return yes;
}

TEST(pipeline_cache_reuse) {
  if (!case_begin("pipeline_cache reuse across contexts"))
    return;
  char dir[64], path[128], sub[160];
  temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/cache", dir);
  snprintf(sub, sizeof sub, "%s.d", path);
  wgc_context *ctx = cache_ctx(WGC_BACKEND_WEBGPU, path);
  if (ctx) {
    const char *st = wgc_pipeline_cache_status(ctx);
    bool mesa = has(st, ": created");
    CHECK(mesa || has(st, "nothing is persisted"), "status: %s", st);
    CHECK(strncmp(st, "pipeline cache ", 15) == 0, "status: %s", st);
    double cold = work(ctx);
    wgc_destroy(ctx);
    size_t filled = count_files(sub);
    if (mesa) {
      char text[2048];
      size_t n = read_file(path, text, sizeof text);
      nw_cache_header h;
      CHECK(nw_cache_parse(text, n, &h) == NW_CACHE_PARSED_OK,
            "the header does not read back");
      CHECK(filled > 1, "the driver wrote %zu files", filled);
    } else {
      CHECK(!exists(path) && filled == 0, "written where nothing persists");
    }
    ctx = cache_ctx(WGC_BACKEND_WEBGPU, path);
    if (ctx) {
      st = wgc_pipeline_cache_status(ctx);
      CHECK(!mesa || has(st, ": reused"), "status: %s", st);
      double warm = work(ctx);
      wgc_destroy(ctx);
      /* every kernel found: the driver added nothing */
      CHECK(count_files(sub) == filled, "%zu files, then %zu", filled,
            count_files(sub));
      case_note(" (%s: first %.0f ms, second %.0f ms)",
                mesa ? "persisted" : "nothing persists", cold, warm);
    }
  }
  rm_tree(dir);
  case_end();
}

/* Two contexts alive at once with different caches: each fills its own. */
TEST(pipeline_cache_per_context) {
  if (!case_begin("pipeline_cache per context"))
    return;
  bool ok;
  if (!persists(&ok)) {
    CHECK(ok, "no WebGPU adapter");
    case_note(" (skipped: the adapter persists nothing)");
    case_end();
    return;
  }
  char dir[64], p1[128], p2[128], d1[160], d2[160];
  temp_dir(dir, sizeof dir);
  snprintf(p1, sizeof p1, "%s/one", dir);
  snprintf(p2, sizeof p2, "%s/two", dir);
  snprintf(d1, sizeof d1, "%s.d", p1);
  snprintf(d2, sizeof d2, "%s.d", p2);
  wgc_context *a = cache_ctx(WGC_BACKEND_WEBGPU, p1);
  wgc_context *b = cache_ctx(WGC_BACKEND_WEBGPU, p2);
  wgc_context *none = cache_ctx(WGC_BACKEND_WEBGPU, NULL);
  if (a && b && none) {
    CHECK(!*wgc_pipeline_cache_status(none), "status without a cache: %s",
          wgc_pipeline_cache_status(none));
    work(a);
    work(b);
    work(none);
  }
  wgc_destroy(a);
  wgc_destroy(b);
  wgc_destroy(none);
  CHECK(count_files(d1) > 1 && count_files(d2) > 1, "files: %zu and %zu",
        count_files(d1), count_files(d2));
  rm_tree(dir);
  case_end();
}

/* A file that is not a wgc cache: left as it is, nothing cached. */
TEST(pipeline_cache_foreign_file) {
  if (!case_begin("pipeline_cache foreign file"))
    return;
  char dir[64], path[128], sub[160];
  temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/cache", dir);
  snprintf(sub, sizeof sub, "%s.d", path);
  unsigned char junk[300];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (unsigned char)(i * 131 + 7);
  write_file(path, junk, sizeof junk);
  wgc_context *ctx = cache_ctx(WGC_BACKEND_WEBGPU, path);
  if (ctx) {
    const char *st = wgc_pipeline_cache_status(ctx);
    CHECK(has(st, "not a wgc pipeline cache") && has(st, path), "status: %s",
          st);
    work(ctx);
    wgc_destroy(ctx);
  }
  unsigned char back[400];
  CHECK(read_file(path, (char *)back, sizeof back) == sizeof junk &&
            !memcmp(back, junk, sizeof junk),
        "the file changed");
  CHECK(!exists(sub), "the driver's cache folder was made");
  rm_tree(dir);
  case_end();
}

/* Headers for another wgc version, another adapter, or damaged: the cache
 * is emptied and the header rewritten for this adapter. */
TEST(pipeline_cache_stale_header) {
  bool ok;
  bool mesa = persists(&ok);
  static const char *const kinds[] = {"version", "adapter", "damaged", "empty"};
  for (int k = 0; k < 4; k++) {
    if (!case_begin("pipeline_cache stale header (%s)", kinds[k]))
      continue;
    CHECK(ok, "no WebGPU adapter");
    char dir[64], path[128], sub[160], planted[256];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/cache", dir);
    snprintf(sub, sizeof sub, "%s.d", path);
    /* fill it, then stand in another header */
    wgc_context *ctx = cache_ctx(WGC_BACKEND_WEBGPU, path);
    if (ctx)
      work(ctx);
    wgc_destroy(ctx);
    char text[2048];
    size_t n = read_file(path, text, sizeof text);
    nw_cache_header h = {0};
    if (mesa)
      CHECK(nw_cache_parse(text, n, &h) == NW_CACHE_PARSED_OK, "no header");
    if (k == 0)
      snprintf(h.version, sizeof h.version, "0.1.0");
    else
      snprintf(h.adapter, sizeof h.adapter, "Some Other GPU");
    n = nw_cache_format(&h, text, sizeof text);
    if (k == 2)
      text[n / 2] ^= 1; /* the checksum no longer holds */
    if (k == 3)
      n = 0;
    write_file(path, text, n);
    mkdir(sub, 0755);
    snprintf(planted, sizeof planted, "%s/mesa_shader_cache", sub);
    mkdir(planted, 0755);
    snprintf(planted, sizeof planted, "%s/mesa_shader_cache/zz", sub);
    mkdir(planted, 0755);
    snprintf(planted, sizeof planted, "%s/mesa_shader_cache/zz/entry", sub);
    write_file(planted, "stale", 5);
    ctx = cache_ctx(WGC_BACKEND_WEBGPU, path);
    if (ctx) {
      const char *st = wgc_pipeline_cache_status(ctx);
      static const char *const want[] = {"written by wgc 0.1.0",
                                         "another adapter (Some Other GPU)",
                                         "damaged", "damaged"};
      if (mesa) {
        CHECK(has(st, want[k]) && has(st, "emptied and started afresh"),
              "status: %s", st);
        CHECK(!exists(planted), "a stale entry was kept");
      } else {
        CHECK(has(st, "nothing is persisted"), "status: %s", st);
      }
      work(ctx);
      wgc_destroy(ctx);
      n = read_file(path, text, sizeof text);
      if (mesa)
        CHECK(nw_cache_parse(text, n, &h) == NW_CACHE_PARSED_OK &&
                  strcmp(h.adapter, "Some Other GPU") &&
                  strcmp(h.version, "0.1.0"),
              "the header was not rewritten");
    }
    rm_tree(dir);
    case_end();
  }
}

/* Paths that cannot be used: reported, and the context works. */
TEST(pipeline_cache_unusable_path) {
  char dir[64];
  temp_dir(dir, sizeof dir);
  char missing[160], folder[160];
  snprintf(missing, sizeof missing, "%s/no/such/folder/cache", dir);
  snprintf(folder, sizeof folder, "%s/a_folder", dir);
  mkdir(folder, 0755);
  const char *const paths[] = {missing, folder};
  const char *const why[] = {"cannot write in", "not a regular file"};
  for (int i = 0; i < 2; i++) {
    if (!case_begin("pipeline_cache unusable path (%s)", why[i]))
      continue;
    wgc_context *ctx = cache_ctx(WGC_BACKEND_WEBGPU, paths[i]);
    if (ctx) {
      const char *st = wgc_pipeline_cache_status(ctx);
      CHECK(has(st, why[i]) && has(st, "nothing is cached"), "status: %s", st);
      work(ctx);
      wgc_destroy(ctx);
    }
    case_end();
  }
  rm_tree(dir);
}

/* Off (NULL, ""), or on the CPU backend: nothing written, status "". */
TEST(pipeline_cache_off) {
  if (!case_begin("pipeline_cache off"))
    return;
  char dir[64], path[128];
  temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/cache", dir);
  wgc_context *cpu = cache_ctx(WGC_BACKEND_CPU, path);
  wgc_context *empty = cache_ctx(WGC_BACKEND_WEBGPU, "");
  if (cpu && empty) {
    CHECK(!*wgc_pipeline_cache_status(cpu) &&
              !*wgc_pipeline_cache_status(empty),
          "status when off: %s / %s", wgc_pipeline_cache_status(cpu),
          wgc_pipeline_cache_status(empty));
    work(cpu);
    work(empty);
  }
  wgc_destroy(cpu);
  wgc_destroy(empty);
  CHECK(count_files(dir) == 0 && !exists(path), "files were written");
  CHECK(wgc_pipeline_cache_status(NULL) && !*wgc_pipeline_cache_status(NULL),
        "NULL context");
  rm_tree(dir);
  case_end();
}

/* ---- across processes --------------------------------------------------- */

/* Runs child_pipeline_cache with WGC_TEST_PIPELINE_CACHE=path; its stdout
 * into out. CHECKs that it exits with 0 and prints nothing to stderr. */
static void run_cache_child(const char *path, char *out, size_t cap) {
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + 2, sizeof *env), var[256];
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "WGC_BACKEND=", 12))
      env[m++] = environ[i];
  snprintf(var, sizeof var, "WGC_TEST_PIPELINE_CACHE=%s", path);
  env[m++] = var;
  env[m] = NULL;
  char fout[] = "/tmp/wgc_pcache_outXXXXXX",
       ferr[] = "/tmp/wgc_pcache_errXXXXXX";
  int fo = mkstemp(fout), fe = mkstemp(ferr);
  char *argv[] = {"test_wgc", "child_pipeline_cache", NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fo, 1);
  posix_spawn_file_actions_adddup2(&fa, fe, 2);
  pid_t pid;
  int status = 0;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  if (rc == 0)
    waitpid(pid, &status, 0);
  close(fo);
  close(fe);
  size_t k = read_file(fout, out, cap - 1);
  out[k] = '\0';
  CHECK(rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child failed: %.300s", out);
  char err[512];
  k = read_file(ferr, err, sizeof err - 1);
  err[k] = '\0';
  CHECK(k == 0, "the child printed to stderr: %s", err);
  unlink(fout);
  unlink(ferr);
  free(env);
}

TEST(child_pipeline_cache) {
  if (!case_begin("child_pipeline_cache"))
    return;
  /* A context without the cache first, as every other test process has:
   * its shared Vulkan instance keeps lavapipe loaded to the end, so that
   * the leak checker can attribute lavapipe's own per-device leak (and
   * suppress it, tools/lsan.supp) after the cache's instance is gone. */
  wgc_destroy(cache_ctx(WGC_BACKEND_WEBGPU, NULL));
  wgc_context *ctx =
      cache_ctx(WGC_BACKEND_WEBGPU, getenv("WGC_TEST_PIPELINE_CACHE"));
  if (ctx) {
    double ms = work(ctx);
    printf("status: %s\nms: %.1f\n", wgc_pipeline_cache_status(ctx), ms);
    wgc_destroy(ctx);
  }
  case_end();
}

TEST(pipeline_cache_processes) {
  if (!case_begin("pipeline_cache reuse across processes"))
    return;
  char dir[64], path[128], sub[160];
  temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/cache", dir);
  snprintf(sub, sizeof sub, "%s.d", path);
  static char first[4096], second[4096];
  run_cache_child(path, first, sizeof first);
  size_t filled = count_files(sub);
  run_cache_child(path, second, sizeof second);
  bool mesa = has(first, ": created");
  CHECK(mesa || has(first, "nothing is persisted"), "first: %.300s", first);
  if (mesa) {
    CHECK(has(second, ": reused"), "second: %.300s", second);
    CHECK(filled > 1 && count_files(sub) == filled, "%zu files, then %zu",
          filled, count_files(sub));
  }
  const char *a = strstr(first, "ms: "), *b = strstr(second, "ms: ");
  if (a && b)
    case_note(" (first process %.0f ms, second %.0f ms)", atof(a + 4),
              atof(b + 4));
  rm_tree(dir);
  case_end();
}
