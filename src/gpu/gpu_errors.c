/* Device error bookkeeping shared by both GPU layers. */
#include "gpu_errors.h"

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
