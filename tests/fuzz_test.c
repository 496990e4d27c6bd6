/* The fuzzer's test cases. Each seed runs in a child process (the test
 * program started again as child_fuzz_seed), so that a hang or a crash is
 * reported with the step it happened in and the other seeds still run.
 *
 *   build/test_wgc fuzz               the fixed seeds (part of the suite)
 *   make fuzz SECONDS=300             fresh seeds for that long
 *   make fuzz SEED=1234               replays one seed
 *   FUZZ_REPRO='...' build/test_wgc child_fuzz_seed   replays one step
 *   FUZZ_KIND=norm make fuzz ...     every step of one kind (fz_kind_name) */
#include "fuzz.h"
#include "harness.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Seconds without a line from the child before it counts as hung: every
 * step prints one, and no step takes near this long. */
#define FUZZ_HANG_SECONDS 30
#define FUZZ_FIXED_STEPS 75

static const unsigned long long fixed_seeds[] = {8, 17, 12, 6, 7, 16, 27, 3};

TEST(child_fuzz_seed) {
  const char *repro = getenv("FUZZ_REPRO");
  if (repro) {
    CHECK(fz_run_repro(repro) == 0, "the step failed");
    return;
  }
  const char *seed = getenv("FUZZ_SEED");
  const char *steps = getenv("FUZZ_STEPS");
  CHECK(seed != NULL, "FUZZ_SEED is not set");
  if (!seed)
    return;
  int n = fz_run_seed(strtoull(seed, NULL, 10),
                      steps ? atoi(steps) : FUZZ_FIXED_STEPS);
  CHECK(n == 0, "%d failures", n);
}

/* Appends text to a growing buffer. */
static void append(char **buf, size_t *len, size_t *cap, const char *s,
                   size_t n) {
  if (*len + n + 1 > *cap) {
    *cap = (*len + n + 1) * 2;
    *buf = realloc(*buf, *cap);
  }
  memcpy(*buf + *len, s, n);
  *len += n;
  (*buf)[*len] = 0;
}

/* Runs one seed in a child; prints its FUZZ lines; CHECKs it passed. */
static void run_child(unsigned long long seed, int steps) {
  int fds[2];
  if (pipe(fds)) {
    CHECK(false, "pipe failed");
    return;
  }
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + 3, sizeof *env);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "FUZZ_", 5) ||
        !strncmp(environ[i], "FUZZ_KIND=", 10))
      env[m++] = environ[i];
  char seed_var[64], steps_var[64];
  snprintf(seed_var, sizeof seed_var, "FUZZ_SEED=%llu", seed);
  snprintf(steps_var, sizeof steps_var, "FUZZ_STEPS=%d", steps);
  env[m++] = seed_var;
  env[m++] = steps_var;
  env[m] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  char *argv[] = {"test_wgc", "child_fuzz_seed", NULL};
  pid_t pid;
  int err = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  close(fds[1]);
  if (err) {
    close(fds[0]);
    CHECK(false, "posix_spawn failed: %d", err);
    return;
  }
  char *out = NULL;
  size_t len = 0, cap = 0;
  append(&out, &len, &cap, "", 0);
  bool hung = false;
  for (;;) {
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int r = poll(&pfd, 1, FUZZ_HANG_SECONDS * 1000);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0) {
      hung = true;
      kill(pid, SIGKILL);
      break;
    }
    char chunk[4096];
    ssize_t got = read(fds[0], chunk, sizeof chunk);
    if (got <= 0)
      break;
    append(&out, &len, &cap, chunk, (size_t)got);
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  /* The FUZZ lines, and the step in flight when it stopped. */
  const char *last_step = NULL;
  size_t last_len = 0;
  int fuzz_lines = 0;
  for (char *line = out; *line;) {
    char *end = strchr(line, '\n');
    size_t ll = end ? (size_t)(end - line) : strlen(line);
    if (!strncmp(line, "FUZZ", 4)) {
      printf("  %.*s\n", (int)ll, line);
      fuzz_lines++;
    } else if (!strncmp(line, "step ", 5)) {
      last_step = line;
      last_len = ll;
    }
    line = end ? end + 1 : line + ll;
  }
  if (hung) {
    printf("  FUZZ HANG seed=%llu: no progress for %d s in %.*s\n", seed,
           FUZZ_HANG_SECONDS, (int)last_len, last_step ? last_step : "");
    CHECK(false, "seed %llu hung (no progress for %d s) in %.*s", seed,
          FUZZ_HANG_SECONDS, (int)last_len, last_step ? last_step : "");
  } else if (WIFSIGNALED(status)) {
    printf("  FUZZ CRASH seed=%llu: signal %d in %.*s\n", seed,
           WTERMSIG(status), (int)last_len, last_step ? last_step : "");
    CHECK(false, "seed %llu crashed (signal %d) in %.*s", seed,
          WTERMSIG(status), (int)last_len, last_step ? last_step : "");
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (!fuzz_lines) /* e.g. a sanitizer report: show the tail */
      printf("%s", len > 3000 ? out + len - 3000 : out);
    CHECK(false, "seed %llu failed (exit %d); replay: make fuzz SEED=%llu",
          seed, WIFEXITED(status) ? WEXITSTATUS(status) : -1, seed);
  }
  fflush(stdout);
  free(out);
}

/* One test per fixed seed: each gets the harness's watchdog to itself. */
#define FIXED_SEED_TEST(i)                                                     \
  TEST(fuzz_fixed_seed_##i) {                                                  \
    if (case_begin("fuzz seed %llu", fixed_seeds[i])) {                        \
      run_child(fixed_seeds[i], FUZZ_FIXED_STEPS);                             \
      case_end();                                                              \
    }                                                                          \
  }
FIXED_SEED_TEST(0)
FIXED_SEED_TEST(1)
FIXED_SEED_TEST(2)
FIXED_SEED_TEST(3)
FIXED_SEED_TEST(4)
FIXED_SEED_TEST(5)
FIXED_SEED_TEST(6)
FIXED_SEED_TEST(7)
_Static_assert(sizeof fixed_seeds / sizeof *fixed_seeds == 8,
               "one FIXED_SEED_TEST per fixed seed");

/* make fuzz: FUZZ_SEED replays one seed, else fresh seeds for
 * FUZZ_SECONDS. */
TEST(child_fuzz_random) {
  const char *seed = getenv("FUZZ_SEED");
  const char *steps_s = getenv("FUZZ_STEPS");
  int steps = steps_s && *steps_s ? atoi(steps_s) : 60;
  if (seed && *seed) {
    unsigned long long s = strtoull(seed, NULL, 10);
    if (case_begin("fuzz seed %llu", s)) {
      run_child(s, steps);
      case_end();
    }
    return;
  }
  const char *secs = getenv("FUZZ_SECONDS");
  double limit = secs && *secs ? atof(secs) : 60;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsigned long long s = ((unsigned long long)t0.tv_nsec << 20) ^
                         (unsigned long long)time(NULL) ^
                         ((unsigned long long)getpid() << 40);
  s %= 1000000000000ull;
  do {
    s = s * 6364136223846793005ull % 1000000000000ull + 1;
    /* The harness's watchdog is per test function; this one runs for as
     * long as asked, and each child has its own hang watch. */
    alarm(FUZZ_HANG_SECONDS * 20);
    if (case_begin("fuzz seed %llu", s)) {
      run_child(s, steps);
      case_end();
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((double)(t.tv_sec - t0.tv_sec) < limit);
}
