/* Timing records as Chrome trace-event JSON (the "JSON Object Format" that
 * chrome://tracing and Perfetto read): complete events with ts and dur in
 * microseconds, one track (tid) per context. */
#include "profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Text into a caller's buffer that keeps counting past its end. */
typedef struct sink {
  char *buf;
  size_t cap, len;
} sink;

static void put(sink *k, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void put(sink *k, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = k->len < k->cap ? k->cap - k->len : 0;
  int n = vsnprintf(room ? k->buf + k->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0)
    k->len += (size_t)n;
}

/* s as a JSON string body. */
static void put_str(sink *k, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      put(k, "\\%c", c);
    else if (c < 0x20)
      put(k, "\\u%04x", c);
    else
      put(k, "%c", c);
  }
}

static const char *source_name(wgc_time_source s) {
  return s == WGC_TIME_CPU   ? "cpu"
         : s == WGC_TIME_GPU ? "gpu_timestamps"
                             : "submit_to_done";
}

static void trace(sink *k, const wgc_context *ctx, const wgc_profile_record *r,
                  size_t n, unsigned track) {
  put(k, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  put(k,
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
      "\"args\":{\"name\":\"",
      track);
  put(k, "wgc %u: %s, ", track, wgc_backend_name(ctx));
  put_str(k, wgc_adapter_name(ctx));
  put(k, "\"}}");
  for (size_t i = 0; i < n; i++) {
    put(k, ",\n{\"name\":\"");
    put_str(k, r[i].name);
    put(k,
        "\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":%.3f,"
        "\"dur\":%.3f,\"args\":{\"shape\":\"",
        wgc_backend_name(ctx), track, r[i].start_us, r[i].duration_us);
    put_str(k, r[i].shape);
    put(k, "\",\"launches\":%u,\"time\":\"%s\"}}", r[i].launches,
        source_name(r[i].source));
  }
  put(k, "\n]}\n");
}

wgc_status wgc_profile_trace(wgc_context *ctx, char *buf, size_t cap,
                             size_t *len) {
  const char *fn = "wgc_profile_trace";
  const wgc_profile_record *r;
  size_t n;
  unsigned track;
  wgc_status s = wgc_profile_view(ctx, fn, &r, &n, &track);
  if (s != WGC_OK)
    return s;
  if (!len)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: len is NULL", fn);
  if (!buf && cap)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: buf is NULL with cap %zu", fn, cap);
  sink k = {buf, cap, 0};
  trace(&k, ctx, r, n, track);
  *len = k.len;
  return WGC_OK;
}

#ifdef __wasm__
wgc_status wgc_profile_write_trace(wgc_context *ctx, const char *path) {
  (void)path;
  const wgc_profile_record *r;
  size_t n;
  wgc_status s = wgc_profile_view(ctx, "wgc_profile_write_trace", &r, &n, NULL);
  return s != WGC_OK ? s
                     : wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                                "wgc_profile_write_trace: the browser build "
                                "has no files; use wgc_profile_trace");
}
#else
wgc_status wgc_profile_write_trace(wgc_context *ctx, const char *path) {
  const char *fn = "wgc_profile_write_trace";
  const wgc_profile_record *r;
  size_t n;
  unsigned track;
  wgc_status s = wgc_profile_view(ctx, fn, &r, &n, &track);
  if (s != WGC_OK)
    return s;
  if (!path)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: path is NULL", fn);
  sink k = {NULL, 0, 0};
  trace(&k, ctx, r, n, track);
  char *text = malloc(k.len + 1);
  if (!text)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory for %zu bytes of trace", fn,
                    k.len + 1);
  k = (sink){text, k.len + 1, 0};
  trace(&k, ctx, r, n, track);
  FILE *f = fopen(path, "w");
  bool ok = f && fwrite(text, 1, k.len, f) == k.len;
  int err = errno;
  if (f && fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  free(text);
  if (!ok)
    return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: cannot write \"%s\": %s", fn,
                    path, strerror(err));
  return WGC_OK;
}
#endif
