/* The API contract of API.md apart from the operations' math and their
 * argument checks (test_validation.c): statuses and error text, contexts
 * and WGC_BACKEND, memory and device addresses, transfers, callbacks and
 * ordering. Each case runs on both backends ("...[cpu]", "...[webgpu]");
 * a WebGPU context that cannot be created fails its cases. */
#include "util.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A callback that counts, and notes whether it ran inside the call that
 * registered it (in_call is set around that call). */
typedef struct cb_record {
  int calls;
  wgc_status status;
  bool in_call, fired_inside;
} cb_record;

static void on_done(wgc_status s, void *user) {
  cb_record *r = user;
  r->calls++;
  r->status = s;
  if (r->in_call)
    r->fired_inside = true;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Polls ctx until *calls reaches want (at most 30 s); wgc_poll must never
 * fail meanwhile. */
static bool poll_until(wgc_context *ctx, const int *calls, int want) {
  for (int i = 0; i < 30000; i++) {
    wgc_status s = wgc_poll(ctx);
    if (s != WGC_OK) {
      CHECK(false, "wgc_poll returned %s: %s", wgc_status_name(s),
            wgc_last_error(ctx));
      return false;
    }
    if (*calls >= want)
      return true;
    sleep_ms(1);
  }
  CHECK(false, "callback did not fire within 30 s of polling");
  return false;
}

/* ---- version
 * ------------------------------------------------------------------
 */

TEST(api_version) {
  if (!case_begin("api_version"))
    return;
  char want[64];
  snprintf(want, sizeof want, "%d.%d.%d", WGC_VERSION_MAJOR, WGC_VERSION_MINOR,
           WGC_VERSION_PATCH);
  const char *got = wgc_version();
  CHECK(got && strcmp(got, want) == 0, "wgc_version() \"%s\", header %s",
        got ? got : "(null)", want);
  case_end();
}

/* ---- status and error text ------------------------------------------------
 */

TEST(api_status_strings) {
  if (!case_begin("api_status_strings"))
    return;
  static const struct {
    wgc_status s;
    const char *enum_name, *msg;
  } all[] = {
#define ROW(name, message) {WGC_##name, #name, message},
      WGC_STATUS_MAP(ROW)
#undef ROW
  };
  CHECK(sizeof all / sizeof all[0] == 9, "9 statuses, got %zu",
        sizeof all / sizeof all[0]);
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    /* The name is the enum name without WGC_ and without ERR_ ("OK",
     * "INVALID_ARGUMENT"), as the browser module's WgcError.status. */
    const char *want = all[i].enum_name;
    if (strncmp(want, "ERR_", 4) == 0)
      want += 4;
    const char *name = wgc_status_name(all[i].s);
    const char *str = wgc_status_string(all[i].s);
    CHECK(name && strcmp(name, want) == 0,
          "wgc_status_name(%d) = \"%s\", want \"%s\"", (int)all[i].s,
          name ? name : "(null)", want);
    CHECK(str && strcmp(str, all[i].msg) == 0,
          "wgc_status_string(%d) = \"%s\", want \"%s\"", (int)all[i].s,
          str ? str : "(null)", all[i].msg);
  }
  CHECK(WGC_OK == 0, "WGC_OK must be 0");
  const char *unknown = wgc_status_string((wgc_status)99);
  CHECK(unknown && strcmp(unknown, "unknown status") == 0,
        "wgc_status_string(99) = \"%s\"", unknown ? unknown : "(null)");
  CHECK(wgc_status_name((wgc_status)99) != NULL, "wgc_status_name(99) is NULL");
  CHECK(wgc_status_name((wgc_status)-1) != NULL, "wgc_status_name(-1) is NULL");
  case_end();
}

/* wgc_last_error(NULL) is per thread: a new thread starts with "". */
typedef struct thread_result {
  char before[256], after[256];
  bool before_null, after_null;
  wgc_status status;
} thread_result;

static void *thread_body(void *arg) {
  thread_result *r = arg;
  const char *e = wgc_last_error(NULL);
  r->before_null = e == NULL;
  snprintf(r->before, sizeof r->before, "%s", e ? e : "");
  wgc_ptr p;
  r->status = wgc_alloc(NULL, 16, &p);
  e = wgc_last_error(NULL);
  r->after_null = e == NULL;
  snprintf(r->after, sizeof r->after, "%s", e ? e : "");
  return NULL;
}

TEST(api_last_error_threads) {
  if (!case_begin("api_last_error_threads"))
    return;
  /* Give this thread a known context-less error first. */
  wgc_ptr p;
  CHECK_REJECTED(NULL, wgc_alloc(NULL, 4, &p), "wgc_alloc", "ctx");
  char mine[512];
  snprintf(mine, sizeof mine, "%s", wgc_last_error(NULL));
  thread_result r;
  memset(&r, 0, sizeof r);
  pthread_t t;
  if (pthread_create(&t, NULL, thread_body, &r) == 0) {
    pthread_join(t, NULL);
    CHECK(!r.before_null && r.before[0] == 0,
          "a new thread's wgc_last_error(NULL) is \"%s\", want \"\"", r.before);
    CHECK(r.status == WGC_ERR_INVALID_ARGUMENT, "wgc_alloc(NULL) = %s",
          wgc_status_name(r.status));
    CHECK(!r.after_null && has_word(r.after, "wgc_alloc") &&
              has_word(r.after, "ctx"),
          "thread error \"%s\" should name wgc_alloc and ctx", r.after);
  } else {
    CHECK(false, "pthread_create failed");
  }
  CHECK(strcmp(mine, wgc_last_error(NULL)) == 0,
        "another thread's failure changed this thread's error to \"%s\"",
        wgc_last_error(NULL));
  case_end();
}

/* ---- contexts -------------------------------------------------------------
 */

static void check_create(wgc_backend backend, wgc_status want_status,
                         const char *want_name, const char *why) {
  wgc_options opt = {.backend = backend};
  wgc_context *ctx = NULL;
  wgc_status s = wgc_create(&opt, &ctx);
  CHECK(s == want_status, "%s: wgc_create returned %s (%s), want %s", why,
        wgc_status_name(s), wgc_last_error(NULL), wgc_status_name(want_status));
  if (s == WGC_OK) {
    const char *name = wgc_backend_name(ctx);
    CHECK(name && want_name && strcmp(name, want_name) == 0,
          "%s: backend \"%s\", want \"%s\"", why, name ? name : "(null)",
          want_name ? want_name : "(none)");
    wgc_destroy(ctx);
  } else if (want_status == WGC_ERR_INVALID_ARGUMENT) {
    check_error_names_at(__FILE__, __LINE__, NULL, why, "wgc_create",
                         "WGC_BACKEND");
  }
}

TEST(api_create_and_env) {
  if (!case_begin("api_create_and_env"))
    return;
  /* The test leaves the environment as it found it. */
  const char *saved_env = getenv("WGC_BACKEND");
  char *saved = saved_env ? strdup(saved_env) : NULL;
  unsetenv("WGC_BACKEND");

  wgc_context *ctx = NULL;
  CHECK_OK(NULL, wgc_create(NULL, &ctx)); /* NULL options: defaults (AUTO) */
  if (ctx) {
    const char *name = wgc_backend_name(ctx);
    CHECK(name && strcmp(name, "webgpu") == 0,
          "AUTO with an adapter present chose \"%s\"", name ? name : "(null)");
    wgc_destroy(ctx);
  }
  wgc_options opt = {.backend = WGC_BACKEND_AUTO};
  CHECK_REJECTED(NULL, wgc_create(&opt, NULL), "wgc_create", "out");
  opt.backend = (wgc_backend)7;
  ctx = NULL;
  CHECK_REJECTED(NULL, wgc_create(&opt, &ctx), "wgc_create", "backend");
  CHECK(ctx == NULL, "a failed wgc_create returned a context");
  wgc_destroy(NULL); /* a no-op */

  check_create(WGC_BACKEND_AUTO, WGC_OK, "webgpu", "unset WGC_BACKEND");
  setenv("WGC_BACKEND", "cpu", 1);
  check_create(WGC_BACKEND_AUTO, WGC_OK, "cpu", "WGC_BACKEND=cpu, AUTO");
  check_create(WGC_BACKEND_WEBGPU, WGC_OK, "webgpu",
               "WGC_BACKEND=cpu, explicit WEBGPU");
  setenv("WGC_BACKEND", "webgpu", 1);
  check_create(WGC_BACKEND_AUTO, WGC_OK, "webgpu", "WGC_BACKEND=webgpu, AUTO");
  check_create(WGC_BACKEND_CPU, WGC_OK, "cpu",
               "WGC_BACKEND=webgpu, explicit CPU");
  setenv("WGC_BACKEND", "bogus", 1);
  check_create(WGC_BACKEND_AUTO, WGC_ERR_INVALID_ARGUMENT, NULL,
               "WGC_BACKEND=bogus, AUTO");
  setenv("WGC_BACKEND", "", 1);
  check_create(WGC_BACKEND_AUTO, WGC_OK, "webgpu", "WGC_BACKEND empty, AUTO");

  if (saved) {
    setenv("WGC_BACKEND", saved, 1);
    free(saved);
  } else {
    unsetenv("WGC_BACKEND");
  }
  case_end();
}

typedef struct create_record {
  int calls;
  wgc_status status;
  wgc_context *ctx;
  bool in_call, fired_inside;
} create_record;

static void on_created(wgc_status s, wgc_context *ctx, void *user) {
  create_record *r = user;
  r->calls++;
  r->status = s;
  r->ctx = ctx;
  if (r->in_call)
    r->fired_inside = true;
}

TEST(api_create_async) {
  for (int bi = 0; bi < 2; bi++) {
    if (!case_begin("api_create_async[%s]", backend_label(test_backends[bi])))
      continue;
    wgc_options opt = {.backend = test_backends[bi]};
    create_record r = {0};
    r.in_call = true;
    wgc_status s = wgc_create_async(&opt, on_created, &r);
    r.in_call = false;
    CHECK(s == WGC_OK, "wgc_create_async returned %s: %s", wgc_status_name(s),
          wgc_last_error(NULL));
    CHECK(!r.fired_inside, "the callback ran inside wgc_create_async");
    if (s == WGC_OK && poll_until(NULL, &r.calls, 1)) {
      CHECK(r.status == WGC_OK && r.ctx, "created with %s, ctx %p",
            wgc_status_name(r.status), (void *)r.ctx);
      for (int i = 0; i < 5; i++)
        wgc_poll(NULL);
      CHECK(r.calls == 1, "callback ran %d times", r.calls);
      if (r.ctx) {
        const char *name = wgc_backend_name(r.ctx);
        CHECK(name && strcmp(name, backend_label(test_backends[bi])) == 0,
              "backend \"%s\"", name ? name : "(null)");
        wgc_destroy(r.ctx);
      }
    }
    case_end();
  }
  if (!case_begin("api_create_async_errors"))
    return;
  /* Argument errors are returned and the callback never fires. */
  create_record r = {0};
  wgc_options bad = {.backend = (wgc_backend)9};
  CHECK_REJECTED(NULL, wgc_create_async(&bad, on_created, &r),
                 "wgc_create_async", "backend");
  CHECK_REJECTED(NULL, wgc_create_async(NULL, NULL, &r), "wgc_create_async",
                 "done");
  for (int i = 0; i < 20; i++) {
    CHECK_STATUS(wgc_poll(NULL), WGC_OK);
    sleep_ms(1);
  }
  CHECK(r.calls == 0, "the callback of a failed wgc_create_async ran");
  /* NULL options are the defaults, as for wgc_create. */
  create_record d = {0};
  CHECK_OK(NULL, wgc_create_async(NULL, on_created, &d));
  if (poll_until(NULL, &d.calls, 1) && d.ctx) {
    CHECK(d.status == WGC_OK, "default async create: %s",
          wgc_status_name(d.status));
    wgc_destroy(d.ctx);
  }
  case_end();
}

TEST(api_context_info) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_context_info"))
      continue;
    const char *name = wgc_backend_name(ctx), *adapter = wgc_adapter_name(ctx);
    CHECK(name && strcmp(name, backend_label(test_backends[bi])) == 0,
          "wgc_backend_name = \"%s\"", name ? name : "(null)");
    CHECK(adapter && adapter[0], "wgc_adapter_name is empty");
    if (test_backends[bi] == WGC_BACKEND_CPU) {
      CHECK(adapter && strncmp(adapter, "cpu", 3) == 0,
            "cpu adapter name \"%s\"", adapter ? adapter : "(null)");
      CHECK(wgc_pipelines_compiled(ctx) == 0, "cpu compiled %zu pipelines",
            wgc_pipelines_compiled(ctx));
    }
    case_end();
  }
}

/* ---- NULL arguments -------------------------------------------------------
 */

TEST(api_null_context) {
  if (!case_begin("api_null_context"))
    return;
  /* Every entry point rejects a NULL context; the error is read with
   * wgc_last_error(NULL). */
  wgc_ptr p = 0, g = wild_address(1);
  float buf[4] = {0};
  cb_record r = {0};
  size_t shape[2] = {2, 2};
  wgc_conv2d_desc cd = {.n = 1, .c = 1, .h = 1, .w = 1, .k = 1, .r = 1, .s = 1};
  wgc_attention_desc ad = {.batch = 1,
                           .heads = 1,
                           .seq_q = 1,
                           .seq_kv = 1,
                           .head_dim = 1,
                           .scale = 1};
  CHECK_REJECTED(NULL, wgc_alloc(NULL, 4, &p), "wgc_alloc", "ctx");
  CHECK_REJECTED(NULL, wgc_free(NULL, g), "wgc_free", "ctx");
  CHECK_REJECTED(NULL, wgc_upload(NULL, g, buf, 4), "wgc_upload", "ctx");
  CHECK_REJECTED(NULL, wgc_download(NULL, buf, g, 4), "wgc_download", "ctx");
  CHECK_REJECTED(NULL, wgc_download_async(NULL, buf, g, 4, on_done, &r),
                 "wgc_download_async", "ctx");
  CHECK_REJECTED(NULL, wgc_copy(NULL, g, g + 16, 4), "wgc_copy", "ctx");
  CHECK_REJECTED(NULL, wgc_synchronize(NULL), "wgc_synchronize", "ctx");
  CHECK_REJECTED(NULL, wgc_synchronize_async(NULL, on_done, &r),
                 "wgc_synchronize_async", "ctx");
  CHECK_REJECTED(NULL,
                 wgc_gemm(NULL, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 1, 1,
                          1, 1, g, 1, g, 1, 0, g, 1),
                 "wgc_gemm", "ctx");
  CHECK_REJECTED(NULL,
                 wgc_gemm_batched(NULL, WGC_ROW_MAJOR, WGC_NO_TRANS,
                                  WGC_NO_TRANS, 1, 1, 1, 1, g, 1, 1, g, 1, 1, 0,
                                  g, 1, 1, 1),
                 "wgc_gemm_batched", "ctx");
  CHECK_REJECTED(NULL, wgc_conv2d(NULL, &cd, g, g, 0, g), "wgc_conv2d", "ctx");
  CHECK_REJECTED(NULL, wgc_attention(NULL, &ad, g, g, g, g), "wgc_attention",
                 "ctx");
  CHECK_REJECTED(NULL, wgc_reduce(NULL, WGC_REDUCE_SUM, g, g, shape, 2, 0),
                 "wgc_reduce", "ctx");
  CHECK_REJECTED(NULL, wgc_unary(NULL, WGC_UNARY_RELU, g, g, 4), "wgc_unary",
                 "ctx");
  CHECK_REJECTED(NULL, wgc_binary(NULL, WGC_BINARY_ADD, g, g, g, 4),
                 "wgc_binary", "ctx");
  CHECK_REJECTED(
      NULL,
      wgc_binary_broadcast(NULL, WGC_BINARY_ADD, g, shape, 2, g, shape, 2, g),
      "wgc_binary_broadcast", "ctx");
  CHECK(r.calls == 0, "a callback of a rejected call ran");
  CHECK_STATUS(wgc_poll(NULL), WGC_OK); /* NULL is valid for wgc_poll */
  const char *e = wgc_last_error(NULL);
  CHECK(e != NULL, "wgc_last_error(NULL) is NULL");
  case_end();
}

TEST(api_null_pointers) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_null_pointers"))
      continue;
    wgc_ptr x = dev_alloc(ctx, 64);
    float host[16];
    fill_ramp(host, 16, 1);
    dev_write(ctx, x, host, 16);
    cb_record r = {0};
    size_t shape[2] = {4, 4};
    CHECK_REJECTED(ctx, wgc_alloc(ctx, 4, NULL), "wgc_alloc", "out");
    CHECK_REJECTED(ctx, wgc_upload(ctx, x, NULL, 4), "wgc_upload", "src");
    CHECK_REJECTED(ctx, wgc_download(ctx, NULL, x, 4), "wgc_download", "dst");
    CHECK_REJECTED(ctx, wgc_download_async(ctx, NULL, x, 4, on_done, &r),
                   "wgc_download_async", "dst");
    CHECK_REJECTED(ctx, wgc_conv2d(ctx, NULL, x, x, 0, x), "wgc_conv2d", "d");
    CHECK_REJECTED(ctx, wgc_attention(ctx, NULL, x, x, x, x), "wgc_attention",
                   "d");
    CHECK_REJECTED(ctx, wgc_reduce(ctx, WGC_REDUCE_SUM, x, x, NULL, 2, 0),
                   "wgc_reduce", "shape");
    CHECK_REJECTED(
        ctx,
        wgc_binary_broadcast(ctx, WGC_BINARY_ADD, x, NULL, 2, x, shape, 2, x),
        "wgc_binary_broadcast", "shape_a");
    CHECK_REJECTED(
        ctx,
        wgc_binary_broadcast(ctx, WGC_BINARY_ADD, x, shape, 2, x, NULL, 2, x),
        "wgc_binary_broadcast", "shape_b");
    /* A NULL host buffer of zero bytes is fine. */
    CHECK_OK(ctx, wgc_upload(ctx, x, NULL, 0));
    CHECK_OK(ctx, wgc_download(ctx, NULL, x, 0));
    CHECK_OK(ctx, wgc_synchronize(ctx));
    CHECK(r.calls == 0, "the callback of a rejected download_async ran");
    CHECK_DEVICE_EQUALS(ctx, x, host, 16, "x");
    dev_free(ctx, x);
    case_end();
  }
}

/* Bad input never prints: stderr stays empty through a run of rejected
 * calls of every kind. */
TEST(api_quiet_errors) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_quiet_errors"))
      continue;
    wgc_ptr x = dev_alloc(ctx, 64), p = 0, g = wild_address(21);
    float host[16] = {0};
    size_t shape[2] = {4, 4}, bad_shape[1] = {3};
    wgc_conv2d_desc cd = {
        .n = 1, .c = 2, .h = 3, .w = 3, .k = 3, .r = 3, .s = 3, .groups = 2};
    wgc_attention_desc ad = {.batch = 1,
                             .heads = 1,
                             .seq_q = 4,
                             .seq_kv = 4,
                             .head_dim = 1,
                             .scale = NAN};
    size_t op = 0, oq = 0;
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    if (saved < 0 || !tmp) {
      CHECK(false, "cannot redirect stderr");
      if (tmp)
        fclose(tmp);
      if (saved >= 0)
        close(saved);
      dev_free(ctx, x);
      case_end();
      continue;
    }
    dup2(fileno(tmp), 2);
    int rejected = 0;
    rejected += wgc_alloc(ctx, 0, &p) != WGC_OK;
    rejected += wgc_upload(ctx, x, host, 68) != WGC_OK;
    rejected += wgc_download(ctx, host, g, 4) != WGC_OK;
    rejected += wgc_copy(ctx, x, x, 16) != WGC_OK;
    rejected += wgc_free(ctx, at(x, 1)) != WGC_OK;
    rejected += wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 4, 4,
                         4, 1, x, 2, x, 4, 0, x, 4) != WGC_OK;
    rejected += wgc_conv2d(ctx, &cd, x, x, 0, x) != WGC_OK;
    rejected += wgc_conv2d_output_size(&cd, &op, &oq) != WGC_OK;
    rejected += wgc_attention(ctx, &ad, x, x, x, g) != WGC_OK;
    rejected += wgc_reduce(ctx, WGC_REDUCE_MEAN, x, x, shape, 9, 0) != WGC_OK;
    rejected += wgc_unary(ctx, (wgc_unary_op)99, x, x, 4) != WGC_OK;
    rejected += wgc_binary(ctx, WGC_BINARY_ADD, x, x, at(x, 1), 4) != WGC_OK;
    rejected += wgc_binary_broadcast(ctx, WGC_BINARY_ADD, x, shape, 2, x,
                                     bad_shape, 1, x) != WGC_OK;
    rejected += wgc_synchronize(NULL) != WGC_OK;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char text[128] = {0};
    rewind(tmp);
    size_t got = fread(text, 1, sizeof text - 1, tmp);
    fclose(tmp);
    CHECK(rejected == 14, "%d of 14 bad calls were rejected", rejected);
    CHECK(got == 0, "rejected calls printed to stderr: \"%s\"", text);
    dev_free(ctx, x);
    case_end();
  }
}

/* ---- memory ---------------------------------------------------------------
 */

TEST(api_alloc) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_alloc"))
      continue;
    wgc_ptr p = 0;
    CHECK_REJECTED(ctx, wgc_alloc(ctx, 0, &p), "wgc_alloc", "bytes");
    /* Fresh memory is zero-filled. */
    float *z = falloc(1000), *got = falloc(1000);
    wgc_ptr x = dev_alloc(ctx, 1000 * sizeof(float));
    if (x) {
      CHECK(x % 4 == 0, "allocation base 0x%llx is not 4-byte aligned",
            (unsigned long long)x);
      CHECK_DEVICE_EQUALS(ctx, x, z, 1000, "fresh allocation");
    }
    /* Any byte count is allowed; transfers still come in 4-byte units
     * inside it. */
    wgc_ptr odd = dev_alloc(ctx, 6);
    if (odd) {
      float one = 3.5f, back = 0;
      CHECK_OK(ctx, wgc_upload(ctx, odd, &one, 4));
      CHECK_OK(ctx, wgc_download(ctx, &back, odd, 4));
      CHECK(back == 3.5f, "read back %g from a 6-byte allocation", back);
      CHECK_REJECTED(ctx, wgc_upload(ctx, odd, z, 8), "wgc_upload",
                     "bytes|dst");
      CHECK_REJECTED(ctx, wgc_download(ctx, got, at(odd, 1), 4), "wgc_download",
                     "bytes|src");
    }
    /* Distinct live allocations have distinct addresses. */
    wgc_ptr y = dev_alloc(ctx, 4);
    CHECK(y && y != x && y != odd, "allocations share an address");
    /* Too big: an error status, not a crash. */
    p = 0;
    wgc_status s = wgc_alloc(ctx, (size_t)1 << 62, &p);
    CHECK(s == WGC_ERR_OUT_OF_MEMORY || s == WGC_ERR_INVALID_ARGUMENT,
          "wgc_alloc(2^62) returned %s", wgc_status_name(s));
    if (s != WGC_OK)
      check_error_names_at(__FILE__, __LINE__, ctx, "wgc_alloc(2^62)",
                           "wgc_alloc", NULL);
    else
      dev_free(ctx, p);
    dev_free(ctx, x);
    dev_free(ctx, odd);
    dev_free(ctx, y);
    free(z);
    free(got);
    case_end();
  }
}

TEST(api_transfers) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_transfers"))
      continue;
    enum { N = 64 };
    float want[N], got[N], part[8];
    fill_ramp(want, N, 100);
    wgc_ptr x = dev_from(ctx, want, N);
    if (!x) {
      case_end();
      continue;
    }
    /* Round trips at element offsets: base + 4*i addresses element i. */
    fill_ramp(part, 5, -50);
    CHECK_OK(ctx, wgc_upload(ctx, at(x, 10), part, 5 * 4));
    memcpy(want + 10, part, 5 * 4);
    CHECK_DEVICE_EQUALS(ctx, x, want, N, "after an upload at element 10");
    memset(got, 0, sizeof got);
    CHECK_OK(ctx, wgc_download(ctx, got, at(x, 20), 7 * 4));
    CHECK(memcmp(got, want + 20, 7 * 4) == 0, "download at element 20");
    CHECK_OK(ctx, wgc_upload(ctx, at(x, N - 1), part, 4)); /* last element */
    want[N - 1] = part[0];

    /* The host source may be reused as soon as wgc_upload returns. */
    float src[4] = {1, 2, 3, 4};
    CHECK_OK(ctx, wgc_upload(ctx, at(x, 30), src, sizeof src));
    memcpy(want + 30, src, sizeof src);
    src[0] = src[1] = src[2] = src[3] = -9;

    /* Bad transfers change nothing, on the device or in dst. */
    CHECK_REJECTED(ctx, wgc_upload(ctx, at(x, N - 1), part, 8), "wgc_upload",
                   "bytes|dst");
    CHECK_REJECTED(ctx, wgc_upload(ctx, x, part, N * 4 + 4), "wgc_upload",
                   "bytes|dst");
    CHECK_REJECTED(ctx, wgc_upload(ctx, x + 2, part, 4), "wgc_upload", "dst");
    CHECK_REJECTED(ctx, wgc_upload(ctx, x, part, 6), "wgc_upload", "bytes");
    CHECK_ERROR_VALUE(ctx, "6");
    CHECK_REJECTED(ctx, wgc_upload(ctx, 0, part, 4), "wgc_upload", "dst");
    for (unsigned i = 0; i < 8; i++)
      CHECK_REJECTED(ctx, wgc_upload(ctx, wild_address(i), part, 4),
                     "wgc_upload", "dst");
    /* An address of a live slot with another generation. */
    CHECK_REJECTED(ctx, wgc_upload(ctx, x ^ (1ull << 52), part, 4),
                   "wgc_upload", "dst");
    float sentinel_buf[8];
    for (int i = 0; i < 8; i++)
      sentinel_buf[i] = -777;
    memcpy(got, sentinel_buf, sizeof sentinel_buf);
    CHECK_REJECTED(ctx, wgc_download(ctx, got, at(x, N - 2), 12),
                   "wgc_download", "bytes|src");
    CHECK_REJECTED(ctx, wgc_download(ctx, got, x + 1, 4), "wgc_download",
                   "src");
    CHECK_REJECTED(ctx, wgc_download(ctx, got, x, 10), "wgc_download", "bytes");
    CHECK_REJECTED(ctx, wgc_download(ctx, got, 0, 4), "wgc_download", "src");
    CHECK_REJECTED(ctx, wgc_download(ctx, got, wild_address(77), 4),
                   "wgc_download", "src");
    CHECK(memcmp(got, sentinel_buf, sizeof sentinel_buf) == 0,
          "a rejected download wrote its destination");

    /* Zero-byte transfers check no address at all. */
    CHECK_OK(ctx, wgc_upload(ctx, 0, NULL, 0));
    CHECK_OK(ctx, wgc_upload(ctx, wild_address(3), part, 0));
    CHECK_OK(ctx, wgc_upload(ctx, x + 2, part, 0));
    CHECK_OK(ctx, wgc_download(ctx, NULL, 0, 0));
    CHECK_OK(ctx, wgc_download(ctx, got, wild_address(4), 0));
    CHECK_OK(ctx, wgc_download(ctx, got, at(x, N) + 4096, 0));

    CHECK_DEVICE_EQUALS(ctx, x, want, N, "after the rejected transfers");
    dev_free(ctx, x);
    case_end();
  }
}

TEST(api_free) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_free"))
      continue;
    float host[16], got[16];
    fill_ramp(host, 16, 7);
    wgc_ptr a = dev_from(ctx, host, 16), out = dev_alloc(ctx, 64);
    if (!a || !out) {
      case_end();
      continue;
    }
    /* Only the base frees; an interior address leaves the allocation. */
    CHECK_REJECTED(ctx, wgc_free(ctx, at(a, 1)), "wgc_free", "base");
    CHECK_REJECTED(ctx, wgc_free(ctx, 0), "wgc_free", "base");
    CHECK_REJECTED(ctx, wgc_free(ctx, wild_address(9)), "wgc_free", "base");
    CHECK_REJECTED(ctx, wgc_free(ctx, a + 2), "wgc_free", "base");
    CHECK_DEVICE_EQUALS(ctx, a, host, 16, "after rejected frees");
    CHECK_OK(ctx, wgc_free(ctx, a));
    /* The freed address is dead everywhere. */
    CHECK_REJECTED(ctx, wgc_free(ctx, a), "wgc_free", "base");
    CHECK_REJECTED(ctx, wgc_upload(ctx, a, host, 4), "wgc_upload", "dst");
    CHECK_REJECTED(ctx, wgc_download(ctx, got, at(a, 2), 4), "wgc_download",
                   "src");
    CHECK_REJECTED(ctx, wgc_copy(ctx, out, a, 4), "wgc_copy", "src");
    CHECK_REJECTED(ctx, wgc_unary(ctx, WGC_UNARY_NEG, a, out, 4), "wgc_unary",
                   "input");
    CHECK_REJECTED(ctx, wgc_unary(ctx, WGC_UNARY_NEG, out, a, 4), "wgc_unary",
                   "output");
    float zeros[16] = {0};
    CHECK_DEVICE_EQUALS(ctx, out, zeros, 16, "output of rejected calls");
    dev_free(ctx, out);
    case_end();
  }
}

TEST(api_copy) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_copy"))
      continue;
    enum { N = 32 };
    float hx[N], hy[N];
    fill_ramp(hx, N, 1);
    memset(hy, 0, sizeof hy);
    wgc_ptr x = dev_from(ctx, hx, N), y = dev_from(ctx, hy, N);
    if (!x || !y) {
      case_end();
      continue;
    }
    /* Across allocations at offsets. */
    CHECK_OK(ctx, wgc_copy(ctx, at(y, 3), at(x, 5), 8 * 4));
    memcpy(hy + 3, hx + 5, 8 * 4);
    /* Within one allocation: disjoint, and touching ranges. */
    CHECK_OK(ctx, wgc_copy(ctx, at(x, 20), at(x, 0), 10 * 4));
    memcpy(hx + 20, hx + 0, 10 * 4);
    CHECK_OK(ctx, wgc_copy(ctx, at(x, 10), at(x, 0), 10 * 4));
    memcpy(hx + 10, hx + 0, 10 * 4);
    CHECK_DEVICE_EQUALS(ctx, x, hx, N, "x after copies");
    CHECK_DEVICE_EQUALS(ctx, y, hy, N, "y after copies");
    /* Overlap, identical ranges included, is rejected. */
    CHECK_REJECTED(ctx, wgc_copy(ctx, at(x, 5), at(x, 0), 10 * 4), "wgc_copy",
                   "dst|src|bytes");
    CHECK_REJECTED(ctx, wgc_copy(ctx, at(x, 0), at(x, 4), 8 * 4), "wgc_copy",
                   "dst|src|bytes");
    CHECK_REJECTED(ctx, wgc_copy(ctx, x, x, 16), "wgc_copy", "dst|src|bytes");
    CHECK_REJECTED(ctx, wgc_copy(ctx, at(x, 3), at(x, 3), 4), "wgc_copy",
                   "dst|src|bytes");
    /* Alignment, size and range. */
    CHECK_REJECTED(ctx, wgc_copy(ctx, y + 2, x, 4), "wgc_copy", "dst");
    CHECK_REJECTED(ctx, wgc_copy(ctx, y, x + 1, 4), "wgc_copy", "src");
    CHECK_REJECTED(ctx, wgc_copy(ctx, y, x, 6), "wgc_copy", "bytes");
    CHECK_REJECTED(ctx, wgc_copy(ctx, y, at(x, 30), 3 * 4), "wgc_copy",
                   "src|bytes");
    CHECK_REJECTED(ctx, wgc_copy(ctx, at(y, 30), x, 3 * 4), "wgc_copy",
                   "dst|bytes");
    CHECK_REJECTED(ctx, wgc_copy(ctx, 0, x, 4), "wgc_copy", "dst");
    CHECK_REJECTED(ctx, wgc_copy(ctx, y, wild_address(5), 4), "wgc_copy",
                   "src");
    /* Zero bytes: no address is checked. */
    CHECK_OK(ctx, wgc_copy(ctx, 0, 0, 0));
    CHECK_OK(ctx, wgc_copy(ctx, wild_address(6), wild_address(7), 0));
    CHECK_OK(ctx, wgc_copy(ctx, x, x, 0));
    CHECK_DEVICE_EQUALS(ctx, x, hx, N, "x after rejected copies");
    CHECK_DEVICE_EQUALS(ctx, y, hy, N, "y after rejected copies");
    dev_free(ctx, x);
    dev_free(ctx, y);
    case_end();
  }
}

/* ---- callbacks and ordering -----------------------------------------------
 */

TEST(api_callbacks) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_callbacks"))
      continue;
    enum { N = 16 };
    float v1[N], v2[N], d1[N], d2[N];
    fill_ramp(v1, N, 10);
    fill_ramp(v2, N, -10);
    wgc_ptr x = dev_from(ctx, v1, N);
    if (!x) {
      case_end();
      continue;
    }
    /* Fires once, not inside the registering call, from wgc_synchronize;
     * each download sees the data at its place in the queue. */
    cb_record r1 = {0}, r2 = {0};
    r1.in_call = true;
    CHECK_OK(ctx, wgc_download_async(ctx, d1, x, sizeof d1, on_done, &r1));
    r1.in_call = false;
    CHECK(r1.calls == 0 && !r1.fired_inside,
          "download_async's callback ran inside the call");
    CHECK_OK(ctx, wgc_upload(ctx, x, v2, sizeof v2));
    r2.in_call = true;
    CHECK_OK(ctx, wgc_download_async(ctx, d2, x, sizeof d2, on_done, &r2));
    r2.in_call = false;
    CHECK(r2.calls == 0, "download_async's callback ran inside the call");
    CHECK_OK(ctx, wgc_synchronize(ctx));
    CHECK(r1.calls == 1 && r2.calls == 1,
          "after wgc_synchronize the callbacks ran %d and %d times", r1.calls,
          r2.calls);
    CHECK(r1.status == WGC_OK && r2.status == WGC_OK, "callback statuses %s %s",
          wgc_status_name(r1.status), wgc_status_name(r2.status));
    CHECK(memcmp(d1, v1, sizeof d1) == 0,
          "the first download did not see the data of its time");
    CHECK(memcmp(d2, v2, sizeof d2) == 0, "the second download is wrong");
    CHECK_OK(ctx, wgc_synchronize(ctx));
    CHECK_OK(ctx, wgc_poll(ctx));
    CHECK(r1.calls == 1 && r2.calls == 1, "a callback ran twice");

    /* From wgc_poll. */
    cb_record r3 = {0};
    memset(d1, 0, sizeof d1);
    r3.in_call = true;
    CHECK_OK(ctx, wgc_download_async(ctx, d1, at(x, 4), 8 * 4, on_done, &r3));
    r3.in_call = false;
    CHECK(r3.calls == 0, "download_async's callback ran inside the call");
    if (poll_until(ctx, &r3.calls, 1)) {
      CHECK(r3.status == WGC_OK, "status %s", wgc_status_name(r3.status));
      CHECK(memcmp(d1, v2 + 4, 8 * 4) == 0, "polled download is wrong");
      for (int i = 0; i < 5; i++)
        wgc_poll(ctx);
      CHECK(r3.calls == 1, "callback ran %d times", r3.calls);
    }

    /* A zero-byte download still calls back, with WGC_OK. */
    cb_record r4 = {0};
    r4.in_call = true;
    CHECK_OK(ctx, wgc_download_async(ctx, NULL, 0, 0, on_done, &r4));
    r4.in_call = false;
    CHECK(r4.calls == 0, "zero-byte download_async called back inside");
    CHECK_OK(ctx, wgc_synchronize(ctx));
    CHECK(r4.calls == 1 && r4.status == WGC_OK,
          "zero-byte download_async: %d calls, %s", r4.calls,
          wgc_status_name(r4.status));

    /* synchronize_async, from wgc_poll and from wgc_synchronize. */
    cb_record r5 = {0}, r6 = {0};
    r5.in_call = true;
    CHECK_OK(ctx, wgc_synchronize_async(ctx, on_done, &r5));
    r5.in_call = false;
    CHECK(r5.calls == 0, "synchronize_async called back inside the call");
    if (poll_until(ctx, &r5.calls, 1))
      CHECK(r5.status == WGC_OK, "status %s", wgc_status_name(r5.status));
    CHECK_OK(ctx, wgc_synchronize_async(ctx, on_done, &r6));
    CHECK_OK(ctx, wgc_synchronize(ctx));
    CHECK(r6.calls == 1 && r6.status == WGC_OK, "%d calls, %s", r6.calls,
          wgc_status_name(r6.status));
    CHECK(r5.calls == 1, "synchronize_async's callback ran %d times", r5.calls);

    /* Failed registrations never call back. */
    cb_record bad = {0};
    CHECK_REJECTED(
        ctx, wgc_download_async(ctx, d1, wild_address(2), 4, on_done, &bad),
        "wgc_download_async", "src");
    CHECK_REJECTED(ctx, wgc_download_async(ctx, d1, x + 2, 4, on_done, &bad),
                   "wgc_download_async", "src");
    CHECK_REJECTED(ctx,
                   wgc_download_async(ctx, d1, at(x, N - 1), 8, on_done, &bad),
                   "wgc_download_async", "bytes|src");
    CHECK_REJECTED(ctx, wgc_download_async(ctx, d1, x, 6, on_done, &bad),
                   "wgc_download_async", "bytes");
    CHECK_OK(ctx, wgc_synchronize(ctx));
    for (int i = 0; i < 5; i++)
      wgc_poll(ctx);
    CHECK(bad.calls == 0, "the callback of a rejected call ran %d times",
          bad.calls);
    dev_free(ctx, x);
    case_end();
  }
}

TEST(api_ordering) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_ordering"))
      continue;
    enum { N = 300 };
    float v1[N], v2[N], v3[N], want[N];
    fill_ramp(v1, N, 1);
    fill_ramp(v2, N, 1000);
    fill_ramp(v3, N, -500);
    wgc_ptr x = dev_alloc(ctx, N * 4), y = dev_alloc(ctx, N * 4),
            z = dev_alloc(ctx, N * 4);
    if (x && y && z) {
      /* upload, op in place, copy, upload, op in place: no waits between. */
      CHECK_OK(ctx, wgc_upload(ctx, x, v1, sizeof v1));
      CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_NEG, x, x, N));
      CHECK_OK(ctx, wgc_copy(ctx, y, x, sizeof v1));
      CHECK_OK(ctx, wgc_upload(ctx, x, v2, sizeof v2));
      CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_NEG, x, x, N));
      /* z = x + y reads both results; then x is overwritten again. */
      CHECK_OK(ctx, wgc_binary(ctx, WGC_BINARY_ADD, x, y, z, N));
      CHECK_OK(ctx, wgc_upload(ctx, x, v3, sizeof v3));
      for (int i = 0; i < N; i++)
        want[i] = v3[i];
      CHECK_DEVICE_EQUALS(ctx, x, want, N, "x (last upload)");
      for (int i = 0; i < N; i++)
        want[i] = -v1[i];
      CHECK_DEVICE_EQUALS(ctx, y, want, N, "y (copy of -v1)");
      for (int i = 0; i < N; i++)
        want[i] = -v2[i] + -v1[i];
      CHECK_DEVICE_EQUALS(ctx, z, want, N, "z (-v2 + -v1)");
    }
    dev_free(ctx, x);
    dev_free(ctx, y);
    dev_free(ctx, z);
    case_end();
  }
}

TEST(api_free_while_queued) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_free_while_queued"))
      continue;
    enum { N = 1000 };
    float *v = falloc(N), *got = falloc(N), *want = falloc(N);
    fill_ramp(v, N, 3);
    for (int i = 0; i < N; i++)
      want[i] = -v[i];
    wgc_ptr x = dev_from(ctx, v, N), y = dev_alloc(ctx, N * 4);
    if (x && y) {
      /* The op still reads x after x is freed. */
      CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_NEG, x, y, N));
      CHECK_OK(ctx, wgc_free(ctx, x));
      CHECK_DEVICE_EQUALS(ctx, y, want, N, "y after its input was freed");
      /* A pending download of a freed allocation completes. */
      cb_record r = {0};
      memset(got, 0, N * 4);
      CHECK_OK(ctx, wgc_download_async(ctx, got, y, N * 4, on_done, &r));
      CHECK_OK(ctx, wgc_free(ctx, y));
      CHECK_OK(ctx, wgc_synchronize(ctx));
      CHECK(r.calls == 1 && r.status == WGC_OK, "%d calls, %s", r.calls,
            wgc_status_name(r.status));
      CHECK(memcmp(got, want, N * 4) == 0,
            "download of a freed allocation is wrong");
      /* An upload to memory freed right after it. */
      wgc_ptr z = dev_alloc(ctx, N * 4);
      if (z) {
        CHECK_OK(ctx, wgc_upload(ctx, z, v, N * 4));
        CHECK_OK(ctx, wgc_free(ctx, z));
        CHECK_OK(ctx, wgc_synchronize(ctx));
      }
    } else {
      dev_free(ctx, x);
      dev_free(ctx, y);
    }
    free(v);
    free(got);
    free(want);
    case_end();
  }
}

TEST(api_pipeline_cache) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "api_pipeline_cache"))
      continue;
    float v[64];
    fill_ramp(v, 64, -32);
    wgc_ptr x = dev_from(ctx, v, 64), y = dev_alloc(ctx, 64 * 4);
    if (x && y) {
      CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_RELU, x, y, 64));
      CHECK_OK(ctx, wgc_synchronize(ctx));
      size_t first = wgc_pipelines_compiled(ctx);
      CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_RELU, x, y, 64));
      CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_RELU, y, x, 64));
      CHECK_OK(ctx, wgc_synchronize(ctx));
      size_t again = wgc_pipelines_compiled(ctx);
      if (test_backends[bi] == WGC_BACKEND_CPU)
        CHECK(first == 0 && again == 0, "cpu compiled %zu pipelines", again);
      else
        CHECK(first > 0 && again == first,
              "pipelines: %zu after the first RELU, %zu after repeating it",
              first, again);
    }
    dev_free(ctx, x);
    dev_free(ctx, y);
    case_end();
  }
}

/* ---- a fresh context: first error, stale addresses, destroy ---------------
 */

/* The allocation id of an address (bits 35..63). */
static uint64_t slot_of(wgc_ptr p) { return p >> 35; }

TEST(api_fresh_context) {
  for (int bi = 0; bi < 2; bi++) {
    if (!case_begin("api_fresh_context[%s]", backend_label(test_backends[bi])))
      continue;
    wgc_options opt = {.backend = test_backends[bi]};
    wgc_context *ctx = NULL;
    wgc_status cs = wgc_create(&opt, &ctx);
    CHECK(cs == WGC_OK, "wgc_create: %s (%s)", wgc_status_name(cs),
          wgc_last_error(NULL));
    if (!ctx) {
      case_end();
      continue;
    }
    const char *e = wgc_last_error(ctx);
    CHECK(e && e[0] == 0, "a new context's last error is \"%s\"",
          e ? e : "(null)");
    /* Failures elsewhere do not touch it. */
    wgc_ptr p = 0;
    wgc_context *other = test_ctx(test_backends[bi]);
    if (other)
      CHECK_REJECTED(other, wgc_alloc(other, 0, &p), "wgc_alloc", "bytes");
    CHECK_REJECTED(NULL, wgc_alloc(NULL, 4, &p), "wgc_alloc", "ctx");
    e = wgc_last_error(ctx);
    CHECK(e && e[0] == 0, "another context's failure showed up: \"%s\"",
          e ? e : "(null)");
    /* The failing call is described; success leaves the text alone. */
    CHECK_REJECTED(ctx, wgc_alloc(ctx, 0, &p), "wgc_alloc", "bytes");
    char saved[512];
    snprintf(saved, sizeof saved, "%s", wgc_last_error(ctx));
    wgc_ptr keep = dev_alloc(ctx, 16);
    float four[4] = {1, 2, 3, 4}, back[4];
    CHECK_OK(ctx, wgc_upload(ctx, keep, four, 16));
    CHECK_OK(ctx, wgc_synchronize(ctx));
    CHECK(strcmp(saved, wgc_last_error(ctx)) == 0,
          "a successful call changed the last error to \"%s\"",
          wgc_last_error(ctx));

    /* Cycle one slot (the only free one: nothing was freed yet) through
     * more generations than its 12 bits hold: no old address may come back
     * to life. */
    enum { CYCLES = 4200 };
    wgc_ptr *addrs = xmalloc(CYCLES * sizeof(wgc_ptr));
    int made = 0;
    for (; made < CYCLES; made++) {
      wgc_ptr q = 0;
      if (wgc_alloc(ctx, 4, &q) != WGC_OK) {
        CHECK(false, "alloc %d failed: %s", made, wgc_last_error(ctx));
        break;
      }
      addrs[made] = q;
      if (wgc_free(ctx, q) != WGC_OK) {
        CHECK(false, "free %d failed: %s", made, wgc_last_error(ctx));
        made++;
        break;
      }
    }
    wgc_ptr live = dev_alloc(ctx, 4);
    int alive = 0;
    for (int i = 0; i < made; i++)
      if (wgc_upload(ctx, addrs[i], four, 4) != WGC_ERR_INVALID_ARGUMENT)
        alive++;
    CHECK(alive == 0, "%d of %d freed addresses were accepted again", alive,
          made);
    free(addrs);
    dev_free(ctx, live);

    /* Stale addresses: free, allocate until the slot is reused; the old
     * address must be rejected, not aliased to the new allocation. */
    wgc_ptr old = dev_alloc(ctx, 16);
    CHECK_OK(ctx, wgc_free(ctx, old));
    wgc_ptr fresh[64];
    int nfresh = 0;
    bool reused = false;
    while (nfresh < 64 && !reused) {
      wgc_ptr q = dev_alloc(ctx, 16);
      if (!q)
        break;
      fresh[nfresh++] = q;
      reused = slot_of(q) == slot_of(old);
      CHECK(q != old, "a new allocation got the freed address");
    }
    if (nfresh) {
      wgc_ptr q = fresh[nfresh - 1];
      CHECK_OK(ctx, wgc_upload(ctx, q, four, 16));
      CHECK_REJECTED(ctx, wgc_upload(ctx, old, back, 16), "wgc_upload", "dst");
      CHECK_REJECTED(ctx, wgc_download(ctx, back, old, 16), "wgc_download",
                     "src");
      CHECK_REJECTED(ctx, wgc_free(ctx, old), "wgc_free", "base");
      CHECK_REJECTED(ctx, wgc_unary(ctx, WGC_UNARY_NEG, q, old, 4), "wgc_unary",
                     "output");
      CHECK_DEVICE_EQUALS(ctx, q, four, 4, "the allocation in the reused slot");
    }
    for (int i = 0; i < nfresh; i++)
      dev_free(ctx, fresh[i]);
    dev_free(ctx, keep);

    /* wgc_destroy waits for the queued work and fires every pending
     * callback with its real status. */
    enum { N = 256 };
    float v[N], d1[N], d2[N];
    fill_ramp(v, N, 5);
    memset(d1, 0, sizeof d1);
    memset(d2, 0, sizeof d2);
    wgc_ptr x = dev_from(ctx, v, N), y = dev_alloc(ctx, N * 4);
    cb_record r1 = {0}, r2 = {0}, r3 = {0};
    if (x && y) {
      CHECK_OK(ctx, wgc_download_async(ctx, d1, x, sizeof d1, on_done, &r1));
      CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_NEG, x, y, N));
      CHECK_OK(ctx, wgc_download_async(ctx, d2, y, sizeof d2, on_done, &r2));
      CHECK_OK(ctx, wgc_synchronize_async(ctx, on_done, &r3));
    }
    wgc_destroy(ctx);
    if (x && y) {
      CHECK(r1.calls == 1 && r2.calls == 1 && r3.calls == 1,
            "after wgc_destroy the callbacks ran %d, %d, %d times", r1.calls,
            r2.calls, r3.calls);
      CHECK(r1.status == WGC_OK && r2.status == WGC_OK && r3.status == WGC_OK,
            "statuses %s %s %s", wgc_status_name(r1.status),
            wgc_status_name(r2.status), wgc_status_name(r3.status));
      bool ok1 = memcmp(d1, v, sizeof d1) == 0, ok2 = true;
      for (int i = 0; i < N; i++)
        ok2 = ok2 && d2[i] == -v[i];
      CHECK(ok1 && ok2, "downloads completed by wgc_destroy are wrong");
    }
    case_end();
  }
}
