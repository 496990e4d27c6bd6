/* Finding the WebGPU runtime: without it, an explicit WebGPU request fails
 * with WGC_ERR_NO_ADAPTER and AUTO falls back to the CPU backend. The
 * runtime is loaded once per process, so this runs in a child process
 * started with WGC_WGPU_LIBRARY naming a file that does not exist. */
#include "harness.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

TEST(child_no_runtime) {
  wgc_context *ctx = NULL;
  wgc_options webgpu = {.backend = WGC_BACKEND_WEBGPU};
  wgc_status s = wgc_create(&webgpu, &ctx);
  CHECK(s == WGC_ERR_NO_ADAPTER, "explicit webgpu gave %s, want NO_ADAPTER",
        wgc_status_name(s));
  CHECK(ctx == NULL, "a failed create left a context");
  CHECK(strstr(wgc_last_error(NULL), "/nonexistent/libwgpu_native.so") &&
            strstr(wgc_last_error(NULL), "No such file"),
        "the error names not the file and the cause: %s", wgc_last_error(NULL));
  s = wgc_create(NULL, &ctx);
  CHECK(s == WGC_OK, "AUTO without a runtime gave %s", wgc_status_name(s));
  if (ctx) {
    CHECK(!strcmp(wgc_backend_name(ctx), "cpu"), "AUTO chose %s",
          wgc_backend_name(ctx));
    wgc_destroy(ctx);
  }
}

TEST(runtime_missing) {
  if (!case_begin("runtime missing: webgpu is NO_ADAPTER, AUTO is cpu"))
    return;
  /* The child's environment: ours plus the bogus runtime path. */
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = calloc(n + 2, sizeof *env);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "WGC_", 4))
      env[m++] = environ[i];
  env[m++] = "WGC_WGPU_LIBRARY=/nonexistent/libwgpu_native.so";
  env[m] = NULL;
  char *argv[] = {"test_wgc", "child_no_runtime", NULL};
  /* The child's report would read as cases of this run: it only answers
   * through its exit status. */
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int status = 0;
  int err = posix_spawn(&pid, "/proc/self/exe", &quiet, NULL, argv, env);
  posix_spawn_file_actions_destroy(&quiet);
  CHECK(err == 0, "posix_spawn failed: %d", err);
  if (err == 0) {
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child run failed (status %d)", status);
  }
  free(env);
  case_end();
}
