/* Helpers shared by the API and operation tests. */
#include "util.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *backend_label(wgc_backend b) {
  switch (b) {
  case WGC_BACKEND_CPU:
    return "cpu";
  case WGC_BACKEND_WEBGPU:
    return "webgpu";
  default:
    return "auto";
  }
}

wgc_status create_ctx(const wgc_options *opt, test_kernels k,
                      wgc_context **ctx) {
  if (k == KERNELS_ENV)
    return wgc_create(opt, ctx);
  const char *old = getenv("WGC_KERNELS");
  char *saved = old ? strdup(old) : NULL;
  if (k == KERNELS_GPU || k == KERNELS_CPU)
    setenv("WGC_KERNELS", k == KERNELS_GPU ? "gpu" : "cpu", 1);
  else
    unsetenv("WGC_KERNELS");
  wgc_status s = wgc_create(opt, ctx);
  if (saved) {
    setenv("WGC_KERNELS", saved, 1);
    free(saved);
  } else {
    unsetenv("WGC_KERNELS");
  }
  return s;
}

wgc_context *new_ctx_kernels(wgc_backend b, size_t max_binding_bytes,
                             test_kernels k) {
  wgc_options opt = {.backend = b, .max_binding_bytes = max_binding_bytes};
  wgc_context *ctx = NULL;
  wgc_status s = create_ctx(&opt, k, &ctx);
  CHECK(s == WGC_OK, "wgc_create(%s, %zu-byte bindings%s) returned %s: %s",
        backend_label(b), max_binding_bytes,
        k == KERNELS_GPU ? ", gpu kernels" : "", wgc_status_name(s),
        wgc_last_error(NULL));
  return s == WGC_OK ? ctx : NULL;
}

wgc_context *new_ctx(wgc_backend b, size_t max_binding_bytes) {
  return new_ctx_kernels(b, max_binding_bytes, KERNELS_ENV);
}

void *xmalloc(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "tests: out of host memory (%zu bytes)\n", bytes);
    abort();
  }
  return p;
}

float *falloc(size_t n) { return xmalloc(n * sizeof(float)); }
double *dalloc(size_t n) { return xmalloc(n * sizeof(double)); }

wgc_ptr dev_alloc_at(const char *file, int line, wgc_context *ctx,
                     size_t bytes) {
  wgc_ptr p = 0;
  wgc_status s = wgc_alloc(ctx, bytes, &p);
  if (s != WGC_OK) {
    check_fail(file, line, "wgc_alloc(%zu) returned %s: %s", bytes,
               wgc_status_name(s), wgc_last_error(ctx));
    return 0;
  }
  return p;
}

wgc_ptr dev_from_at(const char *file, int line, wgc_context *ctx,
                    const float *x, size_t n) {
  wgc_ptr p = dev_alloc_at(file, line, ctx, n ? n * sizeof(float) : 4);
  if (p && n && !dev_write_at(file, line, ctx, p, x, n)) {
    wgc_free(ctx, p);
    return 0;
  }
  return p;
}

bool dev_write_at(const char *file, int line, wgc_context *ctx, wgc_ptr dst,
                  const float *src, size_t n) {
  wgc_status s = wgc_upload(ctx, dst, src, n * sizeof(float));
  if (s != WGC_OK) {
    check_fail(file, line, "wgc_upload(%zu floats) returned %s: %s", n,
               wgc_status_name(s), wgc_last_error(ctx));
    return false;
  }
  return true;
}

bool dev_read_at(const char *file, int line, wgc_context *ctx, float *dst,
                 wgc_ptr src, size_t n) {
  wgc_status s = wgc_download(ctx, dst, src, n * sizeof(float));
  if (s != WGC_OK) {
    check_fail(file, line, "wgc_download(%zu floats) returned %s: %s", n,
               wgc_status_name(s), wgc_last_error(ctx));
    return false;
  }
  return true;
}

void dev_free_at(const char *file, int line, wgc_context *ctx, wgc_ptr p) {
  if (!p)
    return;
  wgc_status s = wgc_free(ctx, p);
  if (s != WGC_OK)
    check_fail(file, line, "wgc_free returned %s: %s", wgc_status_name(s),
               wgc_last_error(ctx));
}

static bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

bool has_word(const char *text, const char *word) {
  size_t len = strlen(word);
  if (!len)
    return false;
  for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
    bool starts = p == text || !ident_char(p[-1]);
    bool ends = !ident_char(p[len]);
    if (starts && ends)
      return true;
  }
  return false;
}

/* Whether text names one of the '|'-separated words of list. */
static bool has_any_word(const char *text, const char *list) {
  char buf[128];
  const char *p = list;
  while (*p) {
    size_t len = strcspn(p, "|");
    if (len && len < sizeof buf) {
      memcpy(buf, p, len);
      buf[len] = 0;
      if (has_word(text, buf))
        return true;
    }
    p += len;
    if (*p == '|')
      p++;
  }
  return false;
}

void check_error_names_at(const char *file, int line, const wgc_context *ctx,
                          const char *call, const char *fn,
                          const char *params) {
  const char *msg = wgc_last_error(ctx);
  if (!msg) {
    check_fail(file, line, "%s: wgc_last_error returned NULL", call);
    return;
  }
  if (!has_word(msg, fn) || (params && !has_any_word(msg, params)))
    check_fail(file, line, "%s: wgc_last_error \"%s\" should name %s and %s",
               call, msg, fn, params ? params : "a parameter");
}

void check_rejected_at(const char *file, int line, const wgc_context *ctx,
                       wgc_status got, const char *call, const char *fn,
                       const char *params) {
  if (got != WGC_ERR_INVALID_ARGUMENT) {
    check_fail(file, line, "%s returned %s, want INVALID_ARGUMENT", call,
               wgc_status_name(got));
    return;
  }
  check_error_names_at(file, line, ctx, call, fn, params);
}

void check_error_value_at(const char *file, int line, const wgc_context *ctx,
                          const char *value) {
  const char *msg = wgc_last_error(ctx);
  if (!msg || !has_word(msg, value))
    check_fail(file, line, "wgc_last_error \"%s\" should quote the value %s",
               msg ? msg : "(null)", value);
}

bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

float sentinel(void) {
  uint32_t bits = 0x7FC5A5A5u;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

void check_device_equals_at(const char *file, int line, wgc_context *ctx,
                            wgc_ptr p, const float *want, size_t n,
                            const char *what) {
  float *got = falloc(n);
  if (dev_read_at(file, line, ctx, got, p, n)) {
    for (size_t i = 0; i < n; i++) {
      if (!same_bits(got[i], want[i])) {
        check_fail(file, line, "%s: element %zu changed: %.9g, want %.9g", what,
                   i, got[i], want[i]);
        break;
      }
    }
  }
  free(got);
}

wgc_ptr wild_address(unsigned seed) {
  uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
  s ^= s >> 29;
  s *= 0xBF58476D1CE4E5B9ull;
  s ^= s >> 32;
  /* A slot index near the top of the 16-bit slot field: far beyond any
   * table a test builds, whatever the generation bits say. */
  uint64_t slot = 0xFF00u | (s & 0xFFu);
  return (s & 0xFFF0000000000000ull) | (slot << 36) | ((s >> 8) & 0xFFC);
}

bool backend_case(int bi, wgc_context **ctx, const char *fmt, ...) {
  char name[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  if (!case_begin("%s[%s]", name, backend_label(test_backends[bi])))
    return false;
  *ctx = test_ctx(test_backends[bi]);
  if (!*ctx) {
    case_end();
    return false;
  }
  return true;
}

void fill_ramp(float *x, size_t n, float base) {
  for (size_t i = 0; i < n; i++)
    x[i] = base + (float)i;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

bool instrumented(void) {
  const char *pre = getenv("LD_PRELOAD");
  return SANITIZED || (pre && strstr(pre, "vgpreload"));
}
