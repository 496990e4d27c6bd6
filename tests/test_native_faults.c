/* Faults of the native runtime: memory running out (a capped address space:
 * on the software adapters device memory is host memory), a WebGPU runtime
 * library that is damaged or not one, and the choice of the Vulkan driver.
 * Each runs in a child process (tests named child_*), started with the
 * environment it needs; the parent checks its exit status and that it
 * printed nothing to stderr. */
#include "harness.h"
#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- the parent's side -------------------------------------------------- */

/* A file's contents as a string (at most cap - 1 bytes). */
static void read_text(const char *path, char *buf, size_t cap) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/* Runs this program's test child (a child_* name) with our environment,
 * less WGC_BACKEND and the names that set (NULL-ended) gives, plus set's
 * NAME=value entries (a bare NAME only removes the variable). CHECKs that it
 * exits with 0 and writes nothing to stderr; its first failure line is quoted.
 */
static void run_child(const char *child, const char *const *set) {
  size_t n = 0, extra = 0;
  while (environ[n])
    n++;
  while (set && set[extra])
    extra++;
  char **env = calloc(n + extra + 3, sizeof *env);
  char *asan = NULL;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const char *e = environ[i];
    bool drop = !strncmp(e, "WGC_BACKEND=", 12) ||
                !strncmp(e, "ASAN_OPTIONS=", 13) ||
                !strncmp(e, "LSAN_OPTIONS=", 13);
    for (size_t k = 0; !drop && k < extra; k++) {
      size_t len = strcspn(set[k], "=");
      drop = !strncmp(e, set[k], len) && e[len] == '=';
    }
    if (!drop)
      env[m++] = environ[i];
  }
  for (size_t k = 0; k < extra; k++)
    if (strchr(set[k], '='))
      env[m++] = (char *)set[k];
  /* Sanitizer builds: a failed allocation must return NULL as malloc does,
   * and freed memory must be given back, as in a normal build. */
  const char *old = getenv("ASAN_OPTIONS");
  size_t len = (old ? strlen(old) : 0) + 100;
  asan = malloc(len);
  snprintf(asan, len,
           "ASAN_OPTIONS=%s%sallocator_may_return_null=1:"
           "quarantine_size_mb=0",
           old ? old : "", old && *old ? ":" : "");
  env[m++] = asan;
  /* and the leak report's list of suppressions used (lavapipe leaks in a
   * device request that fails) is not printed */
  const char *lold = getenv("LSAN_OPTIONS");
  size_t llen = (lold ? strlen(lold) : 0) + 64;
  char *lsan = malloc(llen);
  snprintf(lsan, llen, "LSAN_OPTIONS=%s%sprint_suppressions=0",
           lold ? lold : "", lold && *lold ? ":" : "");
  env[m++] = lsan;
  env[m] = NULL;

  char out[] = "/tmp/wgc_faults_outXXXXXX", err[] = "/tmp/wgc_faults_errXXXXXX";
  int fo = mkstemp(out), fe = mkstemp(err);
  CHECK(fo >= 0 && fe >= 0, "mkstemp failed: %s", strerror(errno));
  char *argv[] = {"test_wgc", (char *)child, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fo, 1);
  posix_spawn_file_actions_adddup2(&fa, fe, 2);
  pid_t pid;
  int status = 0;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  CHECK(rc == 0, "posix_spawn failed: %d", rc);
  if (rc == 0)
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
  close(fo);
  close(fe);
  static char text[4096];
  read_text(out, text, sizeof text);
  const char *fail = strstr(text, "FAIL");
  if (fail)
    ((char *)fail)[strcspn(fail, "\n")] = '\0';
  CHECK(rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s %s: %s",
        child, WIFSIGNALED(status) ? "was killed by a signal" : "failed",
        fail ? fail : (WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : ""));
  read_text(err, text, sizeof text);
  CHECK(text[0] == '\0', "%s printed to stderr: %.300s", child, text);
  unlink(out);
  unlink(err);
  free(asan);
  free(lsan);
  free(env);
}

/* ---- the children's side ------------------------------------------------ */

static size_t vm_size(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmSize:", 7))
      kb = strtoull(line + 7, NULL, 10);
  if (f)
    fclose(f);
  return kb * 1024;
}

static struct rlimit saved_limit;

/* Caps the address space at what is mapped now plus headroom bytes. */
static void cap_memory(size_t headroom) {
  getrlimit(RLIMIT_AS, &saved_limit);
  struct rlimit r = saved_limit;
  r.rlim_cur = vm_size() + headroom;
  CHECK(setrlimit(RLIMIT_AS, &r) == 0, "setrlimit: %s", strerror(errno));
}

static void uncap_memory(void) { setrlimit(RLIMIT_AS, &saved_limit); }

/* Device memory used up in allocations of 1 MiB, then 256 KiB, then 64
 * KiB, each until one fails. */
typedef struct filler {
  wgc_ptr p[8192];
  size_t n;
} filler;

static void fill_memory(wgc_context *ctx, filler *f) {
  f->n = 0;
  for (size_t size = (size_t)1 << 20; size >= (64 << 10); size /= 4)
    while (f->n < sizeof f->p / sizeof f->p[0] &&
           wgc_alloc(ctx, size, &f->p[f->n]) == WGC_OK)
      f->n++;
  CHECK(f->n < sizeof f->p / sizeof f->p[0], "the memory cap did not hold");
}

static void free_filler(wgc_context *ctx, filler *f) {
  while (f->n)
    CHECK_STATUS(wgc_free(ctx, f->p[--f->n]), WGC_OK);
}

static void check_oom(wgc_context *ctx, wgc_status s, const char *fn) {
  CHECK(s == WGC_ERR_OUT_OF_MEMORY, "%s gave %s, want OUT_OF_MEMORY (%s)", fn,
        wgc_status_name(s), wgc_last_error(ctx));
  CHECK(strstr(wgc_last_error(ctx), fn) != NULL, "the error names not %s: %s",
        fn, wgc_last_error(ctx));
}

/* C := A*B + C of n x n matrices in float64, row-major. */
static void gemm_ref(size_t n, size_t k, const float *a, const float *b,
                     float *c) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double s = c[i * n + j];
      for (size_t l = 0; l < k; l++)
        s += (double)a[i * k + l] * b[l * n + j];
      c[i * n + j] = (float)s;
    }
}

static bool close_to(const float *got, const float *want, size_t n,
                     double tol) {
  for (size_t i = 0; i < n; i++)
    if (!(fabs((double)got[i] - want[i]) <= tol * (1 + fabs(want[i]))))
      return false;
  return true;
}

/* Memory exhaustion: wgc_alloc, a download's staging buffer, the scratch of
 * a split-K GEMM and of a reduction fail with OUT_OF_MEMORY, change
 * nothing, and the context works on once memory is back. */
TEST(child_faults_memory) {
  wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 0);
  /* Small bindings make the reduction keep partial sums in scratch. */
  wgc_context *rctx = new_ctx(WGC_BACKEND_WEBGPU, 64 << 10);
  if (!ctx || !rctx) {
    wgc_destroy(ctx);
    wgc_destroy(rctx);
    return;
  }
  /* A 256 x 2048 by 2048 x 256 product splits k (scratch of 1 MiB). */
  enum { N = 256, K = 2048 };
  float *a = falloc((size_t)N * K), *b = falloc((size_t)K * N);
  float *c0 = falloc((size_t)N * N), *want = falloc((size_t)N * N);
  float *got = falloc((size_t)N * N);
  fill_uniform(a, (size_t)N * K, -1, 1, 1);
  fill_uniform(b, (size_t)K * N, -1, 1, 2);
  fill_uniform(c0, (size_t)N * N, -1, 1, 3);
  wgc_ptr da = dev_from(ctx, a, (size_t)N * K);
  wgc_ptr db = dev_from(ctx, b, (size_t)K * N);
  wgc_ptr dc = dev_from(ctx, c0, (size_t)N * N);
  /* R x K summed over R: R / 8 partial sums of each column in scratch. */
  enum { R = 2048 };
  float *x = falloc((size_t)R * K);
  fill_uniform(x, (size_t)R * K, -1, 1, 4);
  wgc_ptr ra = dev_from(rctx, x, (size_t)R * K);
  wgc_ptr dsum = dev_alloc(rctx, (size_t)K * 4);
  size_t shape[2] = {R, K};
  /* Compiled before the cap: under it llvmpipe's shader compiler aborts
   * the process ("Unable to allocate section memory"). */
  CHECK_STATUS(wgc_reduce(rctx, WGC_REDUCE_SUM, ra, dsum, shape, 2, 0), WGC_OK);
  CHECK_STATUS(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, N, N, K,
                        1.0f, da, K, db, N, 1.0f, dc, N),
               WGC_OK);
  CHECK_STATUS(wgc_upload(ctx, dc, c0, (size_t)N * N * 4), WGC_OK);
  CHECK_STATUS(wgc_upload(rctx, dsum, c0, (size_t)K * 4), WGC_OK);
  CHECK_STATUS(wgc_synchronize(rctx), WGC_OK);
  CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);

  float *big = falloc((size_t)N * K);
  /* An operation without scratch, its kernel compiled: under the cap its
   * bind group or encoder may fail, cleanly, or it runs. */
  wgc_ptr du = dev_alloc(ctx, (size_t)N * N * 4);
  CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_NEG, dc, du, (size_t)N * N), WGC_OK);
  CHECK_STATUS(wgc_upload(ctx, du, c0, (size_t)N * N * 4), WGC_OK);
  /* Queue writes run on the device's submission thread: let them finish
   * before the cap, which is meant for the calls below. */
  CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
  CHECK_STATUS(wgc_synchronize(rctx), WGC_OK);
  cap_memory((size_t)256 << 20);
  wgc_ptr p = 0;
  check_oom(ctx, wgc_alloc(ctx, (size_t)1 << 30, &p), "wgc_alloc");
  /* just under the device's largest buffer */
  check_oom(ctx, wgc_alloc(ctx, 0x7FFFFFFCu, &p), "wgc_alloc");
  check_oom(ctx, wgc_alloc(ctx, 0x7FFFF000u, &p), "wgc_alloc");

  /* Each device suballocates its buffers from blocks of its own: both are
   * filled. */
  static filler f, rf;
  fill_memory(ctx, &f);
  fill_memory(rctx, &rf);
  /* A download of A needs a staging buffer as large (2 MiB). */
  check_oom(ctx, wgc_download(ctx, big, da, (size_t)N * K * 4), "wgc_download");
  check_oom(ctx,
            wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, N, N, K,
                     1.0f, da, K, db, N, 1.0f, dc, N),
            "wgc_gemm");
  /* The batched form with one batch: the error names it, not wgc_gemm. */
  check_oom(ctx,
            wgc_gemm_batched(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, N,
                             N, K, 1.0f, da, K, 0, db, N, 0, 1.0f, dc, N, 0, 1),
            "wgc_gemm_batched");
  check_oom(rctx, wgc_reduce(rctx, WGC_REDUCE_SUM, ra, dsum, shape, 2, 0),
            "wgc_reduce");
  wgc_status us = wgc_unary(ctx, WGC_UNARY_NEG, dc, du, (size_t)N * N);
  CHECK(us == WGC_OK || us == WGC_ERR_OUT_OF_MEMORY || us == WGC_ERR_DEVICE,
        "wgc_unary under the cap gave %s", wgc_status_name(us));
  free_filler(rctx, &rf);
  free_filler(ctx, &f);
  uncap_memory();

  /* Nothing of the failed operations ran: outputs are as uploaded. */
  CHECK_DEVICE_EQUALS(ctx, dc, c0, (size_t)N * N, "C after a failed GEMM");
  CHECK_DEVICE_EQUALS(rctx, dsum, c0, K, "the sums after a failed reduce");
  /* -C when the negation ran, else as uploaded */
  if (dev_read(ctx, got, du, (size_t)N * N))
    for (size_t i = 0; i < (size_t)N * N; i++)
      if (got[i] != (us == WGC_OK ? -c0[i] : c0[i])) {
        CHECK(false, "element %zu of the negation (%s) is %g", i,
              wgc_status_name(us), (double)got[i]);
        break;
      }
  CHECK_STATUS(wgc_reduce(rctx, WGC_REDUCE_SUM, ra, dsum, shape, 2, 0), WGC_OK);
  if (dev_read(rctx, got, dsum, K))
    for (size_t j = 0; j < K; j++) {
      double sum = 0;
      for (size_t i = 0; i < R; i++)
        sum += x[i * K + j];
      CHECK(fabs(got[j] - sum) <= 1e-5 * R, "sum %zu is %g, want %g", j,
            (double)got[j], sum);
    }
  CHECK_STATUS(wgc_download(ctx, big, da, (size_t)N * K * 4), WGC_OK);
  CHECK(!memcmp(big, a, (size_t)N * K * 4), "the download after OOM differs");
  CHECK_STATUS(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, N, N, K,
                        1.0f, da, K, db, N, 1.0f, dc, N),
               WGC_OK);
  memcpy(want, c0, (size_t)N * N * 4);
  gemm_ref(N, K, a, b, want);
  if (dev_read(ctx, got, dc, (size_t)N * N))
    CHECK(close_to(got, want, (size_t)N * N, 1e-5 * K),
          "the GEMM after OOM is wrong");
  CHECK_STATUS(wgc_alloc(ctx, (size_t)64 << 20, &p), WGC_OK);
  CHECK_STATUS(wgc_free(ctx, p), WGC_OK);
  free(big);
  free(a);
  free(b);
  free(c0);
  free(want);
  free(got);
  free(x);
  wgc_destroy(rctx);
  wgc_destroy(ctx);
}

TEST(native_faults_memory) {
  if (!case_begin("native faults: out of memory under a capped address space"))
    return;
  run_child("child_faults_memory", NULL);
  case_end();
}

/* A device request that runs out of memory is OUT_OF_MEMORY; the contexts
 * that exist go on working, and a later request succeeds. */
TEST(child_faults_create_oom) {
  wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 0);
  if (!ctx)
    return;
  float x[4] = {1, -2, 3, -4};
  wgc_ptr p = dev_from(ctx, x, 4);
  CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
  cap_memory((size_t)64 << 20);
  wgc_options o = {.backend = WGC_BACKEND_WEBGPU};
  wgc_context *second = NULL;
  wgc_status s = wgc_create(&o, &second);
  uncap_memory();
  CHECK(s == WGC_ERR_OUT_OF_MEMORY, "wgc_create under a 64 MiB cap gave %s: %s",
        wgc_status_name(s), wgc_last_error(NULL));
  CHECK(second == NULL, "a failed create left a context");
  CHECK(strstr(wgc_last_error(NULL), "wgc_create") != NULL,
        "the error names not wgc_create: %s", wgc_last_error(NULL));
  wgc_destroy(second);
  second = new_ctx(WGC_BACKEND_WEBGPU, 0);
  wgc_destroy(second);
  CHECK_DEVICE_EQUALS(ctx, p, x, 4, "a buffer of the first context");
  wgc_destroy(ctx);
}

TEST(native_faults_create_oom) {
  if (!case_begin("native faults: a device request out of memory"))
    return;
  run_child("child_faults_create_oom", NULL);
  case_end();
}

/* Variables wgc must not leave changed. */
static const char *const watched_env[] = {"VK_DRIVER_FILES", "VK_ICD_FILENAMES",
                                          "MESA_VK_IGNORE_CONFORMANCE_WARNING",
                                          "NODEVICE_SELECT"};
enum { WATCHED = sizeof watched_env / sizeof watched_env[0] };

static void env_snapshot(char *vals[WATCHED]) {
  for (size_t i = 0; i < WATCHED; i++) {
    const char *v = getenv(watched_env[i]);
    vals[i] = v ? strdup(v) : NULL;
  }
}

static void env_check(char *vals[WATCHED], const char *when) {
  for (size_t i = 0; i < WATCHED; i++) {
    const char *v = getenv(watched_env[i]);
    CHECK((!v && !vals[i]) || (v && vals[i] && !strcmp(v, vals[i])),
          "%s: %s is \"%s\", was \"%s\"", when, watched_env[i],
          v ? v : "(unset)", vals[i] ? vals[i] : "(unset)");
  }
}

static void env_free(char *vals[WATCHED]) {
  for (size_t i = 0; i < WATCHED; i++)
    free(vals[i]);
}

/* A create that fails under a cap decides nothing for later ones: the
 * next lands on the loader's own driver again, and the environment is
 * as it was throughout. */
TEST(child_faults_driver_retry) {
  const char *want = getenv("WGC_TEST_ADAPTER");
  CHECK(want && *want, "WGC_TEST_ADAPTER is not set");
  char *env[WATCHED];
  env_snapshot(env);
  /* Too little for lavapipe (and for SwiftShader), not so little that
   * wgpu's Vulkan layer aborts the process. */
  cap_memory((size_t)128 << 20);
  wgc_options o = {.backend = WGC_BACKEND_WEBGPU};
  wgc_context *ctx = NULL;
  wgc_status s = wgc_create(&o, &ctx);
  uncap_memory();
  /* It fails (lavapipe cannot start in 128 MiB), or gets the same adapter
   * (SwiftShader, chosen by the user, may), never another one. */
  CHECK(s == WGC_ERR_NO_ADAPTER || s == WGC_ERR_OUT_OF_MEMORY ||
            s == WGC_ERR_DEVICE ||
            (s == WGC_OK && want && !strcmp(wgc_adapter_name(ctx), want)),
        "wgc_create under a 128 MiB cap gave %s (adapter %s)",
        wgc_status_name(s), ctx ? wgc_adapter_name(ctx) : "none");
  CHECK(s == WGC_OK || *wgc_last_error(NULL), "no error text");
  wgc_destroy(ctx);
  env_check(env, "after the capped wgc_create");
  for (int i = 0; i < 2; i++) {
    ctx = new_ctx(WGC_BACKEND_WEBGPU, 0);
    if (ctx)
      CHECK(!strcmp(wgc_adapter_name(ctx), want),
            "wgc_create %d after a failed one chose %s, want %s", i + 1,
            wgc_adapter_name(ctx), want);
    wgc_destroy(ctx);
    env_check(env, "after wgc_create");
  }
  env_free(env);
}

TEST(native_faults_driver_retry) {
  if (!case_begin("native faults: a create after one failed under a memory cap "
                  "uses the loader's driver"))
    return;
  wgc_context *ctx = test_ctx(WGC_BACKEND_WEBGPU);
  if (ctx) {
    static char var[320];
    snprintf(var, sizeof var, "WGC_TEST_ADAPTER=%s", wgc_adapter_name(ctx));
    const char *set[] = {var, NULL};
    run_child("child_faults_driver_retry", set);
  }
  case_end();
}

/* With no driver the loader can use: an explicit WebGPU request is
 * NO_ADAPTER; AUTO gives SwiftShader (found by wgc when the user named no
 * drivers) or the CPU; the environment is left as it was. */
TEST(child_faults_no_drivers) {
  char *env[WATCHED];
  env_snapshot(env);
  bool user_chose = getenv("VK_DRIVER_FILES") != NULL;
  wgc_context *ctx = NULL;
  wgc_options o = {.backend = WGC_BACKEND_WEBGPU};
  wgc_status s = wgc_create(&o, &ctx);
  if (user_chose) {
    CHECK(s == WGC_ERR_NO_ADAPTER, "explicit webgpu gave %s, want NO_ADAPTER",
          wgc_status_name(s));
    CHECK(ctx == NULL, "a failed create left a context");
    CHECK(strstr(wgc_last_error(NULL), "wgc_create") != NULL,
          "the error names not wgc_create: %s", wgc_last_error(NULL));
  } else if (s == WGC_OK) {
    CHECK(strstr(wgc_adapter_name(ctx), "SwiftShader") != NULL,
          "without loader drivers webgpu chose %s", wgc_adapter_name(ctx));
  } else {
    CHECK(s == WGC_ERR_NO_ADAPTER, "explicit webgpu gave %s",
          wgc_status_name(s));
  }
  wgc_destroy(ctx);
  env_check(env, "after an explicit wgc_create");
  ctx = NULL;
  s = wgc_create(NULL, &ctx);
  CHECK(s == WGC_OK, "AUTO gave %s: %s", wgc_status_name(s),
        wgc_last_error(NULL));
  if (ctx) {
    bool cpu = !strcmp(wgc_backend_name(ctx), "cpu");
    CHECK(cpu || strstr(wgc_adapter_name(ctx), "SwiftShader"),
          "AUTO chose %s (%s)", wgc_backend_name(ctx), wgc_adapter_name(ctx));
    /* it computes */
    float x[4] = {1, -2, 3, -4}, y[4], want[4] = {1, 0, 3, 0};
    wgc_ptr p = dev_from(ctx, x, 4);
    CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_RELU, p, p, 4), WGC_OK);
    if (dev_read(ctx, y, p, 4))
      CHECK(!memcmp(y, want, sizeof y), "relu on %s is wrong",
            wgc_backend_name(ctx));
    wgc_destroy(ctx);
  }
  env_check(env, "after an AUTO wgc_create");
  env_free(env);
}

TEST(native_faults_no_drivers) {
  if (case_begin("native faults: VK_DRIVER_FILES naming no driver")) {
    const char *set[] = {"VK_DRIVER_FILES=/nonexistent/none.json", NULL};
    run_child("child_faults_no_drivers", set);
    case_end();
  }
  if (case_begin("native faults: a loader without drivers")) {
    /* The loader's search path holds no manifest, and the user named no
     * driver: SwiftShader it is. */
    const char *set[] = {"VK_DRIVER_FILES",
                         "VK_ICD_FILENAMES",
                         "XDG_DATA_DIRS=/nonexistent",
                         "XDG_CONFIG_DIRS=/nonexistent",
                         "XDG_DATA_HOME=/nonexistent",
                         "XDG_CONFIG_HOME=/nonexistent",
                         NULL};
    run_child("child_faults_no_drivers", set);
    case_end();
  }
}

/* WGC_WGPU_LIBRARY names a file that is no usable runtime: an explicit
 * request is NO_ADAPTER with a sentence naming the file and the cause,
 * AUTO falls back to the CPU. */
TEST(child_faults_bad_runtime) {
  const char *path = getenv("WGC_WGPU_LIBRARY");
  const char *cause = getenv("WGC_TEST_CAUSE");
  wgc_context *ctx = NULL;
  wgc_options o = {.backend = WGC_BACKEND_WEBGPU};
  wgc_status s = wgc_create(&o, &ctx);
  CHECK(s == WGC_ERR_NO_ADAPTER, "explicit webgpu gave %s, want NO_ADAPTER",
        wgc_status_name(s));
  CHECK(ctx == NULL, "a failed create left a context");
  const char *e = wgc_last_error(NULL);
  CHECK(path && strstr(e, path), "the error names not the file: %s", e);
  CHECK(cause && strstr(e, cause), "the error gives not the cause \"%s\": %s",
        cause ? cause : "", e);
  s = wgc_create(NULL, &ctx);
  CHECK(s == WGC_OK, "AUTO gave %s", wgc_status_name(s));
  if (ctx)
    CHECK(!strcmp(wgc_backend_name(ctx), "cpu"), "AUTO chose %s",
          wgc_backend_name(ctx));
  wgc_destroy(ctx);
}

/* The runtime this program uses: WGC_WGPU_LIBRARY, else lib/ beside it. */
static void runtime_path(char *buf, size_t cap) {
  const char *env = getenv("WGC_WGPU_LIBRARY");
  if (env && *env) {
    snprintf(buf, cap, "%s", env);
    return;
  }
  char exe[256];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash)
    *slash = '\0';
  snprintf(buf, cap, "%s/lib/libwgpu_native.so", exe);
}

/* Writes the first len bytes of src (all of data when src is NULL) to
 * dir/name; returns the path. */
static const char *make_file(const char *dir, const char *name, const char *src,
                             size_t len, const void *data, char *path,
                             size_t cap) {
  snprintf(path, cap, "%s/%s", dir, name);
  FILE *out = fopen(path, "wb");
  CHECK(out != NULL, "cannot write %s", path);
  if (!out)
    return path;
  if (src) {
    FILE *in = fopen(src, "rb");
    CHECK(in != NULL, "cannot read %s", src);
    char buf[65536];
    while (in && len) {
      size_t n = fread(buf, 1, len < sizeof buf ? len : sizeof buf, in);
      if (n == 0)
        break;
      fwrite(buf, 1, n, out);
      len -= n;
    }
    if (in)
      fclose(in);
  } else if (len) {
    fwrite(data, 1, len, out);
  }
  fclose(out);
  return path;
}

TEST(native_faults_bad_runtime) {
  /* The header of the real library, claiming another machine. */
  unsigned char head[64] = {0};
  /* A library without the wgpu symbols: the one that holds cos(). */
  Dl_info libm;
  double (*cosine)(double) = cos;
  void *cos_addr;
  memcpy(&cos_addr, &cosine, sizeof cos_addr);
  bool have_libm =
      dladdr(cos_addr, &libm) && libm.dli_fname && strchr(libm.dli_fname, '/');
  enum { TRUNC_END = -1 }; /* len: the real size less its last 64 bytes */
  struct {
    const char *label, *cause;
    const char *name; /* a file made in dir; NULL: file */
    bool copy;        /* the first len bytes of the real library */
    long len;
    const void *data;
    const char *file;
  } cases[] = {
      {.label = "truncated to 1 MiB",
       .cause = "truncated",
       .name = "trunc.so",
       .copy = true,
       .len = 1L << 20},
      {.label = "truncated before its section headers",
       .cause = "section headers",
       .name = "trunc_end.so",
       .copy = true,
       .len = TRUNC_END},
      {.label = "truncated to 100 bytes",
       .cause = "program headers",
       .name = "trunc100.so",
       .copy = true,
       .len = 100},
      {.label = "empty", .cause = "empty", .name = "empty.so"},
      {.label = "not ELF",
       .cause = "not an ELF file",
       .name = "text.so",
       .len = 12,
       .data = "hello world\n"},
      {.label = "for another machine",
       .cause = "another machine",
       .name = "arm.so",
       .len = (long)sizeof head,
       .data = head},
      {.label = "a directory", .cause = "not a regular file"},
      {.label = "missing the wgpu symbols",
       .cause = "wgpuCreateInstance",
       .file = have_libm ? libm.dli_fname : "/nonexistent/libm.so"},
  };
  char real[600], dir[] = "/tmp/wgc_runtimeXXXXXX";
  bool made = false;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (!case_begin("native faults: WGC_WGPU_LIBRARY %s", cases[i].label))
      continue;
    if (!made) { /* only when a case runs */
      made = mkdtemp(dir) != NULL;
      CHECK(made, "mkdtemp: %s", strerror(errno));
      runtime_path(real, sizeof real);
      FILE *f = fopen(real, "rb");
      CHECK(f != NULL, "no runtime at %s", real);
      if (f) {
        CHECK(fread(head, 1, sizeof head, f) == sizeof head, "short read");
        fclose(f);
      }
      head[18] = head[18] == 183 ? 62 : 183; /* x86-64 <-> AArch64 */
      head[19] = 0;
    }
    if (i + 1 == sizeof cases / sizeof cases[0])
      CHECK(have_libm, "the library holding cos() was not found");
    char path[700];
    const char *file = cases[i].file ? cases[i].file : dir;
    if (made && cases[i].name) {
      struct stat st;
      long len = cases[i].len;
      if (len == TRUNC_END)
        len = stat(real, &st) == 0 ? (long)st.st_size - 64 : 0;
      file = make_file(dir, cases[i].name, cases[i].copy ? real : NULL,
                       (size_t)len, cases[i].data, path, sizeof path);
    }
    char lib[800], cause[200];
    snprintf(lib, sizeof lib, "WGC_WGPU_LIBRARY=%s", file);
    snprintf(cause, sizeof cause, "WGC_TEST_CAUSE=%s", cases[i].cause);
    const char *set[] = {lib, cause, NULL};
    run_child("child_faults_bad_runtime", set);
    if (made && cases[i].name)
      unlink(path);
    case_end();
  }
  if (made)
    rmdir(dir);
}
