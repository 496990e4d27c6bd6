/* Helpers shared by the API and operation tests: host and device buffers
 * that report failures through the harness, and checks of rejected calls
 * (status, the wgc_last_error sentence, data left untouched). */
#ifndef WGC_TEST_UTIL_H
#define WGC_TEST_UTIL_H

#include "harness.h"

#include <stdbool.h>
#include <stddef.h>

/* "cpu" or "webgpu": the label of a case line, known even when the context
 * could not be created. */
const char *backend_label(wgc_backend b);
/* The kernel form a WebGPU context is made with. WGC_KERNELS is read only
 * at wgc_create, so it is set for the call and restored after. */
typedef enum test_kernels {
  KERNELS_ENV,     /* whatever WGC_KERNELS says (the suite's gpu-kernels run) */
  KERNELS_ADAPTER, /* the form for the adapter found (WGC_KERNELS unset) */
  KERNELS_GPU,     /* the form made for GPUs, whatever the adapter */
  KERNELS_CPU      /* the form made for CPU adapters, whatever the adapter */
} test_kernels;

/* wgc_create(opt) under the kernel form k; fails no case, for callers that
 * report failures their own way. */
wgc_status create_ctx(const wgc_options *opt, test_kernels k,
                      wgc_context **ctx);
/* A context of the case's own (not test_ctx's shared one), on backend b
 * with bindings capped at max_binding_bytes (0: the device's limit); NULL
 * with the case failed when wgc_create fails. */
wgc_context *new_ctx(wgc_backend b, size_t max_binding_bytes);
/* new_ctx under the kernel form k. */
wgc_context *new_ctx_kernels(wgc_backend b, size_t max_binding_bytes,
                             test_kernels k);

/* Whether this run is instrumented (ASan, TSan, or valgrind, which
 * preloads its core library): slow, so long cases run smaller. */
bool instrumented(void);

/* Host memory for tests; aborts when the host is out of memory. */
void *xmalloc(size_t bytes);
float *falloc(size_t n); /* zero-filled */
double *dalloc(size_t n);

/* Device helpers that CHECK success; they return 0 / false on failure. */
wgc_ptr dev_alloc_at(const char *file, int line, wgc_context *ctx,
                     size_t bytes);
wgc_ptr dev_from_at(const char *file, int line, wgc_context *ctx,
                    const float *x, size_t n);
bool dev_read_at(const char *file, int line, wgc_context *ctx, float *dst,
                 wgc_ptr src, size_t n);
bool dev_write_at(const char *file, int line, wgc_context *ctx, wgc_ptr dst,
                  const float *src, size_t n);
void dev_free_at(const char *file, int line, wgc_context *ctx, wgc_ptr p);
#define dev_alloc(ctx, bytes) dev_alloc_at(__FILE__, __LINE__, ctx, bytes)
#define dev_from(ctx, x, n) dev_from_at(__FILE__, __LINE__, ctx, x, n)
#define dev_read(ctx, dst, src, n)                                             \
  dev_read_at(__FILE__, __LINE__, ctx, dst, src, n)
#define dev_write(ctx, dst, src, n)                                            \
  dev_write_at(__FILE__, __LINE__, ctx, dst, src, n)
/* Frees p unless it is 0 (a buffer whose allocation already failed). */
#define dev_free(ctx, p) dev_free_at(__FILE__, __LINE__, ctx, p)

/* CHECKs that a wgc call returns WGC_OK, with the last error on failure. */
#define CHECK_OK(ctx, call)                                                    \
  do {                                                                         \
    wgc_status s_ = (call);                                                    \
    CHECK(s_ == WGC_OK, "%s returned %s: %s", #call, wgc_status_name(s_),      \
          wgc_last_error(ctx));                                                \
  } while (0)

/* Opens the case "fmt[backend]..." and gets the shared context of backend
 * bi. False when the filter skips the case or the context is missing (then
 * the case is already closed, failed). */
bool backend_case(int bi, wgc_context **ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* x[i] = base + i. */
void fill_ramp(float *x, size_t n, float base);

/* Element i of a device buffer, as an address. */
static inline wgc_ptr at(wgc_ptr base, size_t i) { return base + 4 * i; }

/* Whether text holds word as a whole identifier (not inside a longer one),
 * so that the parameter "a" is not found inside "wgc_gemm_batched". */
bool has_word(const char *text, const char *word);

/* CHECKs that wgc_last_error(ctx) (ctx NULL: the thread's) names the
 * function fn and one of the parameters in params ("c|a": c or a; NULL:
 * any). */
void check_error_names_at(const char *file, int line, const wgc_context *ctx,
                          const char *call, const char *fn, const char *params);
/* CHECKs that a call returned WGC_ERR_INVALID_ARGUMENT and that the error
 * names fn and a parameter of params. */
void check_rejected_at(const char *file, int line, const wgc_context *ctx,
                       wgc_status got, const char *call, const char *fn,
                       const char *params);
#define CHECK_REJECTED(ctx, call, fn, params)                                  \
  check_rejected_at(__FILE__, __LINE__, ctx, (call), #call, fn, params)

/* CHECKs that wgc_last_error(ctx) quotes the offending value (as a word,
 * e.g. "99"), as API.md asks of the sentence. */
void check_error_value_at(const char *file, int line, const wgc_context *ctx,
                          const char *value);
#define CHECK_ERROR_VALUE(ctx, value)                                          \
  check_error_value_at(__FILE__, __LINE__, ctx, value)

/* CHECKs that the n floats at p still equal want bit for bit. */
void check_device_equals_at(const char *file, int line, wgc_context *ctx,
                            wgc_ptr p, const float *want, size_t n,
                            const char *what);
#define CHECK_DEVICE_EQUALS(ctx, p, want, n, what)                             \
  check_device_equals_at(__FILE__, __LINE__, ctx, p, want, n, what)

/* Bitwise float equality (NaN payloads included). */
bool same_bits(float a, float b);

/* A quiet NaN with a payload no operation produces by itself: output
 * buffers start filled with it, so an element left unwritten, or a guard
 * element written, shows bit for bit. */
float sentinel(void);

/* An address no allocation has: slot bits far beyond any table, plus
 * xorshift noise, never 0. */
wgc_ptr wild_address(unsigned seed);

#endif
