/* Device error bookkeeping shared by both GPU layers. */
#include "gpu_errors.h"

#include <ctype.h>
#include <string.h>

void gpu_copy_str(char *dst, size_t cap, const char *src, size_t len) {
  if (!dst || cap == 0)
    return;
  if (len > cap - 1)
    len = cap - 1;
  if (len)
    memcpy(dst, src, len);
  dst[len] = '\0';
}

static void copy_cstr(char *dst, size_t cap, const char *src) {
  gpu_copy_str(dst, cap, src, strlen(src));
}

void gpu_errors_note(gpu_errors *e, wgc_status status, const char *msg,
                     size_t len) {
  e->count++;
  if (e->error == WGC_OK) {
    e->error = status;
    gpu_copy_str(e->msg, sizeof e->msg, msg, len);
  }
}

void gpu_errors_lost(gpu_errors *e, const char *msg, size_t len) {
  if (e->lost)
    return;
  e->lost = true;
  if (len)
    gpu_copy_str(e->lost_msg, sizeof e->lost_msg, msg, len);
  else
    copy_cstr(e->lost_msg, sizeof e->lost_msg, "device lost");
}

wgc_status gpu_errors_take(gpu_errors *e, char *msg, size_t cap) {
  copy_cstr(msg, cap, "");
  if (!e) {
    copy_cstr(msg, cap, "no such device");
    return WGC_ERR_INVALID_ARGUMENT;
  }
  wgc_status st = WGC_OK;
  if (e->lost) {
    st = WGC_ERR_DEVICE_LOST;
    copy_cstr(msg, cap, e->lost_msg);
  } else if (e->error != WGC_OK) {
    st = e->error;
    copy_cstr(msg, cap, e->msg);
  }
  e->error = WGC_OK;
  e->msg[0] = '\0';
  return st;
}

/* Case-insensitive search for needle within the first len bytes of hay. */
static bool contains_nocase(const char *hay, size_t len, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; hay && n <= len && i <= len - n; i++) {
    size_t k = 0;
    while (k < n && tolower((unsigned char)hay[i + k]) ==
                        tolower((unsigned char)needle[k]))
      k++;
    if (k == n)
      return true;
  }
  return false;
}

wgc_status gpu_errors_classify(bool oom_type, const char *msg, size_t len) {
  static const char *const says_oom[] = {"not enough memory", "out of memory",
                                         "out of host memory",
                                         "out of device memory", "outofmemory"};
  if (oom_type)
    return WGC_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < sizeof says_oom / sizeof says_oom[0]; i++)
    if (contains_nocase(msg, len, says_oom[i]))
      return WGC_ERR_OUT_OF_MEMORY;
  return WGC_ERR_DEVICE;
}

/* Per thread, as wgc_last_error(NULL) is: the thread that failed to load
 * the runtime is the one that reports it. wasm32 has one thread. */
#if defined(__wasm__)
static char runtime_problem[512];
#else
static _Thread_local char runtime_problem[512];
#endif

void gpu_runtime_problem_set(const char *why) {
  copy_cstr(runtime_problem, sizeof runtime_problem, why ? why : "");
}

const char *gpu_runtime_problem(void) { return runtime_problem; }
