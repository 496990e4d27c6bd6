/* Status names and messages, and the last-error text. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The context-less error slot is per thread; wasm32 has one thread. */
#if defined(__wasm__)
#define WGC_THREAD_LOCAL
#else
#define WGC_THREAD_LOCAL _Thread_local
#endif

static WGC_THREAD_LOCAL char thread_error[512];

const char *wgc_status_string(wgc_status s) {
  switch (s) {
#define WGC_STATUS_MSG_(name, msg)                                             \
  case WGC_##name:                                                             \
    return msg;
    WGC_STATUS_MAP(WGC_STATUS_MSG_)
#undef WGC_STATUS_MSG_
  }
  return "unknown status";
}

const char *wgc_status_name(wgc_status s) {
  switch (s) {
/* The enum name without WGC_ and ERR_: "OK", "INVALID_ARGUMENT", ... */
#define WGC_STATUS_NAME_(name, msg)                                            \
  case WGC_##name:                                                             \
    return &#name[sizeof #name > 4 && !memcmp(#name, "ERR_", 4) ? 4 : 0];
    WGC_STATUS_MAP(WGC_STATUS_NAME_)
#undef WGC_STATUS_NAME_
  }
  return "UNKNOWN";
}

const char *wgc_last_error(const wgc_context *ctx) {
  return ctx ? ctx->last_error : thread_error;
}

wgc_status wgc_fail(wgc_context *ctx, wgc_status status, const char *fmt, ...) {
  char *dst = ctx ? ctx->last_error : thread_error;
  size_t cap = ctx ? sizeof ctx->last_error : sizeof thread_error;
  if (ctx)
    ctx->error_count++;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dst, cap, fmt, ap);
  va_end(ap);
  return status;
}
