/* A small test harness: each case prints one line, the run ends on
 * "N passed, N failed". Cases are registered by TEST() and filtered by a
 * substring given on the command line (e.g. `test_wgc gemm`). Inside a test,
 * CASE_BEGIN/CASE_END split it into several counted cases (one per shape),
 * and CHECK records a failure of the current case without stopping it. */
#ifndef WGC_TEST_HARNESS_H
#define WGC_TEST_HARNESS_H

#include "wgc.h"

#include <stdbool.h>
#include <stddef.h>

/* Tests named child_* run only when the filter is exactly their name: a
 * test starts the test program again for them, in another environment. */
typedef void (*test_fn)(void);
void harness_register(const char *name, test_fn fn);

#define TEST(name)                                                             \
  static void name(void);                                                      \
  __attribute__((constructor)) static void register_##name(void) {             \
    harness_register(#name, name);                                             \
  }                                                                            \
  static void name(void)

/* Starts a named case inside the running test; returns false when the
 * filter excludes it (the caller should skip its work). */
bool case_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Ends the current case: prints "ok NAME" or "FAIL NAME: first failure". */
void case_end(void);
/* Appends text to the current case's name, so that figures measured by the
 * case (times, memory) appear in its line. */
void case_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The current case's name (the running test's outside a case). */
const char *case_current(void);

void check_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      check_fail(__FILE__, __LINE__, __VA_ARGS__);                             \
  } while (0)
/* CHECK that a wgc call returns want; names the call on failure. */
#define CHECK_STATUS(call, want)                                               \
  do {                                                                         \
    wgc_status got_ = (call);                                                  \
    if (got_ != (want))                                                        \
      check_fail(__FILE__, __LINE__, "%s returned %s, want %s", #call,         \
                 wgc_status_name(got_), wgc_status_name(want));                \
  } while (0)

/* The backends under test: "cpu" and "webgpu" contexts shared by tests
 * (created once, WGC_BACKEND_WEBGPU explicitly: no adapter is a failure). */
wgc_context *test_ctx(wgc_backend backend);
/* Both backends, for loops: for (int i = 0; i < 2; i++)
 * test_ctx(test_backends[i]) */
extern const wgc_backend test_backends[2];

/* Deterministic uniform floats in [lo, hi). */
void fill_uniform(float *x, size_t n, float lo, float hi, unsigned seed);

#endif
