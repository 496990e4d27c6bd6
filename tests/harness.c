/* The test runner: registry, case bookkeeping, filtering, summary. */
#include "harness.h"

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A case that hangs must not stall the whole run: the watchdog names it
 * and ends the process (seconds per test function). */
#define WATCHDOG_SECONDS 300

#define MAX_TESTS 512

static struct {
  const char *name;
  test_fn fn;
} tests[MAX_TESTS];
static int test_count;

static const char *filter;
/* WGC_TEST_SHARD=K/N: only the test functions whose index is K mod N, so
 * that N processes share a run (make test runs two: a software adapter
 * compiles each kernel on one core, and on a machine whose shader cache
 * is empty compiling is most of the run). */
static unsigned shard_k, shard_n = 1;
static const char *current_test;
static char case_name[256];
static bool in_case, case_failed, test_failed_outside;
static char first_failure[512];
static int passed, failed;

void harness_register(const char *name, test_fn fn) {
  if (test_count < MAX_TESTS) {
    tests[test_count].name = name;
    tests[test_count].fn = fn;
    test_count++;
  }
}

static bool matches(const char *name) {
  return !filter || strstr(name, filter) != NULL;
}

bool case_begin(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(case_name, sizeof case_name, fmt, ap);
  va_end(ap);
  if (!matches(case_name) && !matches(current_test))
    return false;
  in_case = true;
  case_failed = false;
  first_failure[0] = 0;
  return true;
}

void case_end(void) {
  if (!in_case)
    return;
  if (case_failed) {
    failed++;
    printf("FAIL %s: %s\n", case_name, first_failure);
  } else {
    passed++;
    printf("ok   %s\n", case_name);
  }
  fflush(stdout);
  in_case = false;
}

const char *case_current(void) { return case_name; }

void case_note(const char *fmt, ...) {
  if (!in_case)
    return;
  size_t used = strlen(case_name);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(case_name + used, sizeof case_name - used, fmt, ap);
  va_end(ap);
}

void check_fail(const char *file, int line, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (in_case) {
    if (!case_failed)
      snprintf(first_failure, sizeof first_failure, "%s:%d: %s", file, line,
               msg);
    case_failed = true;
  } else {
    if (!test_failed_outside)
      snprintf(first_failure, sizeof first_failure, "%s:%d: %s", file, line,
               msg);
    test_failed_outside = true;
  }
}

const wgc_backend test_backends[2] = {WGC_BACKEND_CPU, WGC_BACKEND_WEBGPU};
static wgc_context *contexts[3];
static bool create_failed[3];

wgc_context *test_ctx(wgc_backend backend) {
  if (!contexts[backend]) {
    if (create_failed[backend]) {
      check_fail(__FILE__, __LINE__, "wgc_create(%s) failed earlier",
                 backend == WGC_BACKEND_CPU ? "cpu" : "webgpu");
      return NULL;
    }
    wgc_options opt = {.backend = backend};
    wgc_status s = wgc_create(&opt, &contexts[backend]);
    if (s != WGC_OK) {
      create_failed[backend] = true;
      check_fail(__FILE__, __LINE__, "wgc_create(%s) failed: %s (%s)",
                 backend == WGC_BACKEND_CPU ? "cpu" : "webgpu",
                 wgc_status_name(s), wgc_last_error(NULL));
      return NULL;
    }
  }
  return contexts[backend];
}

void fill_uniform(float *x, size_t n, float lo, float hi, unsigned seed) {
  uint64_t state =
      0x9E3779B97F4A7C15ull ^ ((uint64_t)seed * 0x2545F4914F6CDD1Dull);
  for (size_t i = 0; i < n; i++) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    double u = (double)(state >> 11) / 9007199254740992.0;
    x[i] = (float)(lo + (hi - lo) * u);
  }
}

static void watchdog(int sig) {
  (void)sig;
  static const char msg[] = "FAIL watchdog: a test ran longer than the "
                            "watchdog allows; the run stops here\n";
  ssize_t ignored = write(STDOUT_FILENO, msg, sizeof msg - 1);
  (void)ignored;
  _exit(2);
}

int main(int argc, char **argv) {
  filter = argc > 1 ? argv[1] : NULL;
  const char *shard = getenv("WGC_TEST_SHARD");
  char end;
  if (shard && *shard &&
      (sscanf(shard, "%u/%u%c", &shard_k, &shard_n, &end) != 2 ||
       shard_n == 0 || shard_k >= shard_n)) {
    printf("FAIL WGC_TEST_SHARD \"%s\": not K/N with K < N\n", shard);
    return 2;
  }
  signal(SIGALRM, watchdog);
  for (int i = 0; i < test_count; i++) {
    current_test = tests[i].name;
    /* child_* tests run only in a process started for them, and alone
     * there: other tests would leave state behind (a WebGPU instance). */
    bool child = !strncmp(current_test, "child_", 6);
    if (child != (filter && !strncmp(filter, "child_", 6)) ||
        (child && strcmp(filter, current_test)))
      continue;
    /* a child test runs alone in its process, whatever its shard */
    if (!child && (unsigned)i % shard_n != shard_k)
      continue;
    bool whole = matches(current_test);
    test_failed_outside = false;
    first_failure[0] = 0;
    /* A test that opens no case of its own counts as one case. */
    int before = passed + failed;
    if (whole) {
      snprintf(case_name, sizeof case_name, "%s", current_test);
      in_case = true;
      case_failed = false;
    }
    alarm(WATCHDOG_SECONDS);
    tests[i].fn();
    alarm(0);
    if (in_case && whole && passed + failed == before) {
      case_end();
    } else {
      in_case = false;
      if (test_failed_outside && whole) {
        failed++;
        printf("FAIL %s: %s\n", current_test, first_failure);
      }
    }
  }
  for (int b = 0; b < 3; b++)
    wgc_destroy(contexts[b]);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
