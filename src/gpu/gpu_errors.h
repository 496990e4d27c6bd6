/* A device's error state, shared by the native and browser GPU layers: the
 * first error since it was last taken is kept (later ones only counted), and
 * loss is sticky. Callers serialise access where threads are involved. */
#ifndef WGC_GPU_ERRORS_H
#define WGC_GPU_ERRORS_H

#include "wgc.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct gpu_errors {
  unsigned count;   /* every error recorded, to tell a new one */
  wgc_status error; /* the first one not yet taken */
  char msg[1024];
  bool lost;
  char lost_msg[256];
} gpu_errors;

/* Copies len bytes of src (not NUL-terminated) into dst, truncating. */
void gpu_copy_str(char *dst, size_t cap, const char *src, size_t len);
void gpu_errors_note(gpu_errors *e, wgc_status status, const char *msg,
                     size_t len);
void gpu_errors_lost(gpu_errors *e, const char *msg, size_t len);
/* The pending error (loss first) into msg; WGC_OK (msg "") when none.
 * e NULL stands for an unknown device: WGC_ERR_INVALID_ARGUMENT. */
wgc_status gpu_errors_take(gpu_errors *e, char *msg, size_t cap);

/* The status for an error the runtime reported: OUT_OF_MEMORY for the
 * OutOfMemory type, and also for a message that says memory ran out:
 * wgpu-native reports device and host memory exhaustion as validation
 * errors ("Not enough memory left.", "Out of memory"). DEVICE otherwise. */
wgc_status gpu_errors_classify(bool oom_type, const char *msg, size_t len);

/* Why the calling thread's last attempt to load the WebGPU runtime failed
 * (the library named, and what was wrong with it); "" when it did not. */
void gpu_runtime_problem_set(const char *why);
const char *gpu_runtime_problem(void);

#endif
