/* Faults and re-entrancy: every wgc call made from inside a callback,
 * registrations made while others are pending, wgc_destroy with work and
 * callbacks pending (also from inside a callback, and with registrations
 * attempted while it fires), freeing memory that queued work still uses,
 * and long chains of callbacks that register callbacks. Every callback
 * counts its calls, so "exactly once" is asserted, and records when it
 * fired, so order is too. Each case runs on both backends ("...[cpu]",
 * "...[webgpu]"). */
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Opens "fmt[backend]"; false when the filter skips it. */
static bool open_case(int bi, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool open_case(int bi, const char *fmt, ...) {
  char name[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  return case_begin("%s[%s]", name, backend_label(test_backends[bi]));
}

/* A context of its own, for cases that destroy it. */
static wgc_context *fresh(int bi) { return new_ctx(test_backends[bi], 0); }

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
  nanosleep(&ts, NULL);
}

/* ---- callbacks that count -------------------------------------------------
 * seq: the order of first firing across all probes; poll: the number of the
 * test's wgc_poll call that was running when it fired (0: none). */
typedef struct probe probe;
struct probe {
  int calls;
  int seq;
  long poll;
  wgc_status status;
  wgc_context *ctx;
  void (*body)(probe *); /* runs inside the callback, after the counting */
  void *arg;
};

static int fire_seq;
static long poll_no;      /* the test's wgc_poll calls so far */
static bool in_test_poll; /* a test's wgc_poll is running */

static void probe_fire(wgc_status s, void *user) {
  probe *p = user;
  p->calls++;
  if (p->calls == 1) {
    p->status = s;
    p->seq = ++fire_seq;
    p->poll = in_test_poll ? poll_no : 0;
  }
  if (p->body)
    p->body(p);
}

/* The number of the wgc_poll running now (0 outside one), for noting when a
 * registration inside a callback was made. */
static long current_poll(void) { return in_test_poll ? poll_no : 0; }

static wgc_status test_poll(wgc_context *ctx) {
  poll_no++;
  in_test_poll = true;
  wgc_status s = wgc_poll(ctx);
  in_test_poll = false;
  return s;
}

/* Polls ctx until *calls reaches want (at most 30 s). ctx may be destroyed
 * by the callback that completes the count, so it is not touched after. */
static bool drive(wgc_context *ctx, const int *calls, int want) {
  double end = now_s() + 30;
  while (*calls < want) {
    wgc_status s = test_poll(ctx);
    if (*calls >= want)
      break;
    if (s != WGC_OK) {
      CHECK(false, "wgc_poll returned %s: %s", wgc_status_name(s),
            wgc_last_error(ctx));
      return false;
    }
    if (now_s() > end) {
      CHECK(false, "a callback did not fire within 30 s of polling");
      return false;
    }
    sleep_us(100);
  }
  return true;
}

/* Polls and synchronizes a few more times, so that a second firing would
 * show. */
static void settle(wgc_context *ctx) {
  CHECK_OK(ctx, wgc_synchronize(ctx));
  for (int i = 0; i < 3; i++)
    CHECK_OK(ctx, test_poll(ctx));
}

static void check_once_at(int line, const probe *p, wgc_status want,
                          const char *what) {
  if (p->calls != 1)
    check_fail(__FILE__, line, "%s fired %d times, want once", what, p->calls);
  else if (p->status != want)
    check_fail(__FILE__, line, "%s fired with %s, want %s", what,
               wgc_status_name(p->status), wgc_status_name(want));
}
#define CHECK_ONCE(p, want, what) check_once_at(__LINE__, p, want, what)

static void check_never_at(int line, const probe *p, const char *what) {
  if (p->calls)
    check_fail(__FILE__, line, "%s fired %d times, want never", what, p->calls);
}
#define CHECK_NEVER(p, what) check_never_at(__LINE__, p, what)

/* Fires before `second` (both fired). */
#define CHECK_ORDER(first, second)                                             \
  CHECK((first)->calls && (second)->calls && (first)->seq < (second)->seq,     \
        "%s fired as #%d, after %s (#%d)", #first, (first)->seq, #second,      \
        (second)->seq)

static void pattern(float *x, size_t n, float base, float step) {
  for (size_t i = 0; i < n; i++)
    x[i] = base + step * (float)i;
}

/* A sentinel no computation here produces. */
#define SENTINEL (-12345.5f)

static bool all_sentinel(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!same_bits(x[i], SENTINEL))
      return false;
  return true;
}

static bool same_floats(const float *a, const float *b, size_t n) {
  return memcmp(a, b, n * sizeof *a) == 0;
}

/* CHECKs got against the float64 want within tol*(1 + |want|). */
static void check_near_at(int line, const float *got, const double *want,
                          size_t n, double tol, const char *what) {
  for (size_t i = 0; i < n; i++) {
    double err = fabs((double)got[i] - want[i]);
    if (!(err <= tol * (1 + fabs(want[i])))) {
      check_fail(__FILE__, line, "%s[%zu] = %.9g, want %.9g (tolerance %g)",
                 what, i, got[i], want[i], tol);
      return;
    }
  }
}
#define CHECK_NEAR(got, want, n, tol, what)                                    \
  check_near_at(__LINE__, got, want, n, tol, what)

/* ---- each wgc call from inside a callback ---------------------------------
 * run_inside registers a 4-byte download as the trigger and polls until it
 * fires; body runs inside that callback. */
typedef struct inside {
  wgc_context *ctx;
  wgc_ptr x, y, z; /* N floats each */
  float *hx, *got;
  wgc_status st[6]; /* statuses of the calls made inside */
  wgc_ptr made[2];  /* allocations made inside */
  probe inner[2];   /* registrations made inside */
  long inner_reg_poll;
  int inner_calls_at_return; /* inner[0].calls when the outer poll returned */
} inside;

enum { N = 96 };

static void run_inside(wgc_context *ctx, void (*body)(probe *), inside *in,
                       probe *after) {
  float trig_val = 31.0f, trig_got = 0;
  wgc_ptr t = dev_from(ctx, &trig_val, 1);
  if (!t)
    return;
  probe trig = {.ctx = ctx, .body = body, .arg = in};
  CHECK_OK(ctx, wgc_download_async(ctx, &trig_got, t, 4, probe_fire, &trig));
  if (after)
    CHECK_OK(ctx, wgc_synchronize_async(ctx, probe_fire, after));
  if (drive(ctx, &trig.calls, 1)) {
    in->inner_calls_at_return = in->inner[0].calls;
    CHECK_ONCE(&trig, WGC_OK, "the trigger");
    CHECK(trig_got == trig_val, "the trigger's download gave %g", trig_got);
    if (after) {
      drive(ctx, &after->calls, 1);
      CHECK_ORDER(&trig, after);
    }
  }
  dev_free(ctx, t);
}

static bool inside_setup(inside *in, wgc_context *ctx) {
  memset(in, 0, sizeof *in);
  in->ctx = ctx;
  in->hx = falloc(N);
  in->got = falloc(N);
  pattern(in->hx, N, -3.0f, 0.0625f);
  in->x = dev_from(ctx, in->hx, N);
  in->y = dev_alloc(ctx, N * 4);
  in->z = dev_alloc(ctx, N * 4);
  return in->x && in->y && in->z;
}

static void inside_teardown(inside *in) {
  dev_free(in->ctx, in->x);
  dev_free(in->ctx, in->y);
  dev_free(in->ctx, in->z);
  free(in->hx);
  free(in->got);
}

/* wgc_poll inside a callback: returns WGC_OK and fires nothing twice. */
static void body_poll(probe *p) {
  inside *in = p->arg;
  in->st[0] = wgc_poll(p->ctx);
  in->st[1] = wgc_poll(p->ctx);
}

static void case_poll(wgc_context *ctx, inside *in) {
  probe after = {.ctx = ctx};
  run_inside(ctx, body_poll, in, &after);
  CHECK(in->st[0] == WGC_OK && in->st[1] == WGC_OK,
        "wgc_poll inside a callback returned %s, %s",
        wgc_status_name(in->st[0]), wgc_status_name(in->st[1]));
  settle(ctx);
  CHECK_ONCE(&after, WGC_OK, "the callback registered after the trigger");
}

/* alloc, upload, copy and free inside a callback. */
static void body_memory(probe *p) {
  inside *in = p->arg;
  wgc_context *ctx = p->ctx;
  in->st[0] = wgc_alloc(ctx, N * 4, &in->made[0]);
  in->st[1] = wgc_alloc(ctx, N * 4, &in->made[1]);
  if (in->st[0] != WGC_OK || in->st[1] != WGC_OK)
    return;
  in->st[2] = wgc_upload(ctx, in->made[0], in->hx, N * 4);
  in->st[3] = wgc_copy(ctx, in->made[1], in->made[0], N * 4);
  in->st[4] = wgc_free(ctx, in->z);
}

static void case_memory(wgc_context *ctx, inside *in) {
  run_inside(ctx, body_memory, in, NULL);
  const char *what[] = {"wgc_alloc", "wgc_alloc", "wgc_upload", "wgc_copy",
                        "wgc_free"};
  for (int i = 0; i < 5; i++)
    CHECK(in->st[i] == WGC_OK, "%s inside a callback returned %s", what[i],
          wgc_status_name(in->st[i]));
  if (in->st[4] == WGC_OK) {
    /* z is gone: stale from now on. */
    CHECK(wgc_free(ctx, in->z) == WGC_ERR_INVALID_ARGUMENT,
          "z freed inside a callback is still accepted by wgc_free");
    in->z = 0;
  }
  for (int i = 0; i < 2; i++)
    if (in->made[i]) {
      CHECK_DEVICE_EQUALS(ctx, in->made[i], in->hx, N,
                          i ? "the copy made inside" : "the upload inside");
      dev_free(ctx, in->made[i]);
    }
}

/* wgc_download inside a callback sees the op queued just before it. */
static void body_download(probe *p) {
  inside *in = p->arg;
  in->st[0] = wgc_unary(p->ctx, WGC_UNARY_NEG, in->x, in->y, N);
  in->st[1] = wgc_download(p->ctx, in->got, in->y, N * 4);
}

static void case_download(wgc_context *ctx, inside *in) {
  run_inside(ctx, body_download, in, NULL);
  CHECK(in->st[0] == WGC_OK && in->st[1] == WGC_OK,
        "wgc_unary, wgc_download inside a callback returned %s, %s",
        wgc_status_name(in->st[0]), wgc_status_name(in->st[1]));
  float want[N];
  for (int i = 0; i < N; i++)
    want[i] = -in->hx[i];
  CHECK(same_floats(in->got, want, N),
        "wgc_download inside a callback gave %g at 0, want %g", in->got[0],
        want[0]);
}

/* wgc_synchronize inside a callback: waits, returns WGC_OK; the callback
 * registered after the trigger still fires once. */
static void body_synchronize(probe *p) {
  inside *in = p->arg;
  in->st[0] = wgc_unary(p->ctx, WGC_UNARY_ABS, in->x, in->y, N);
  in->st[1] = wgc_synchronize(p->ctx);
  in->st[2] = wgc_download(p->ctx, in->got, in->y, N * 4);
}

static void case_synchronize(wgc_context *ctx, inside *in) {
  probe after = {.ctx = ctx};
  run_inside(ctx, body_synchronize, in, &after);
  CHECK(in->st[0] == WGC_OK && in->st[1] == WGC_OK && in->st[2] == WGC_OK,
        "wgc_unary, wgc_synchronize, wgc_download inside a callback returned "
        "%s, %s, %s",
        wgc_status_name(in->st[0]), wgc_status_name(in->st[1]),
        wgc_status_name(in->st[2]));
  for (int i = 0; i < N; i++)
    CHECK(in->got[i] == fabsf(in->hx[i]), "abs(x)[%d] = %g", i, in->got[i]);
  settle(ctx);
  CHECK_ONCE(&after, WGC_OK, "the callback registered after the trigger");
}

/* download_async / synchronize_async inside a callback: not fired inside
 * the wgc_poll that ran the registering callback; fired once later. */
static void body_download_async(probe *p) {
  inside *in = p->arg;
  in->inner[0].ctx = p->ctx;
  in->st[0] = wgc_unary(p->ctx, WGC_UNARY_NEG, in->x, in->y, N);
  in->inner_reg_poll = current_poll();
  in->st[1] = wgc_download_async(p->ctx, in->got, in->y, N * 4, probe_fire,
                                 &in->inner[0]);
}

static void body_synchronize_async(probe *p) {
  inside *in = p->arg;
  in->inner[0].ctx = p->ctx;
  in->st[0] = wgc_unary(p->ctx, WGC_UNARY_NEG, in->x, in->y, N);
  in->inner_reg_poll = current_poll();
  in->st[1] = wgc_synchronize_async(p->ctx, probe_fire, &in->inner[0]);
}

static void case_async(wgc_context *ctx, inside *in, bool download) {
  run_inside(ctx, download ? body_download_async : body_synchronize_async, in,
             NULL);
  CHECK(in->st[0] == WGC_OK && in->st[1] == WGC_OK,
        "wgc_unary, the registration inside a callback returned %s, %s",
        wgc_status_name(in->st[0]), wgc_status_name(in->st[1]));
  if (in->st[1] != WGC_OK)
    return;
  CHECK(in->inner_calls_at_return == 0,
        "a registration made inside a callback fired inside the same wgc_poll");
  if (drive(ctx, &in->inner[0].calls, 1))
    CHECK(in->inner[0].poll == 0 || in->inner[0].poll > in->inner_reg_poll,
          "registered in poll %ld, fired in poll %ld", in->inner_reg_poll,
          in->inner[0].poll);
  settle(ctx);
  CHECK_ONCE(&in->inner[0], WGC_OK, "the registration made inside");
  float want[N];
  for (int i = 0; i < N; i++)
    want[i] = -in->hx[i];
  if (download)
    CHECK(same_floats(in->got, want, N),
          "the download registered inside gave %g at 0, want %g", in->got[0],
          want[0]);
  else
    CHECK_DEVICE_EQUALS(ctx, in->y, want, N, "y");
}

/* ---- each operation from inside a callback -------------------------------
 * Small shapes, checked against the float64 references of ops_ref. */
enum {
  OP_GEMM,
  OP_GEMM_BATCHED,
  OP_CONV2D,
  OP_ATTENTION,
  OP_REDUCE,
  OP_UNARY,
  OP_BINARY,
  OP_BROADCAST,
  OP_COUNT
};
static const char *const op_names[OP_COUNT] = {
    "gemm",   "gemm_batched", "conv2d", "attention",
    "reduce", "unary",        "binary", "binary_broadcast"};

typedef struct op_fx {
  int op;
  float *in[3];
  size_t n_in[3];
  wgc_ptr d_in[3];
  wgc_ptr d_out;
  size_t n_out;
  double *want;
  double tol;
  wgc_status st;
} op_fx;

static const wgc_conv2d_desc conv_desc = {
    .n = 1, .c = 2, .h = 5, .w = 6, .k = 3, .r = 3, .s = 3, .pad_h = 1};
static const wgc_attention_desc attn_desc = {.batch = 1,
                                             .heads = 2,
                                             .heads_kv = 1,
                                             .seq_q = 3,
                                             .seq_kv = 5,
                                             .head_dim = 8,
                                             .scale = 0.35355339f,
                                             .causal = WGC_CAUSAL_BOTTOM_RIGHT};
static const size_t red_shape[3] = {4, 5, 6};
static const size_t bc_a[3] = {3, 1, 4}, bc_b[2] = {5, 1};

/* Input and output sizes of each op, and the reference. */
static void op_prepare(op_fx *f, int op) {
  memset(f, 0, sizeof *f);
  f->op = op;
  size_t p = 0, q = 0;
  switch (op) {
  case OP_GEMM: /* C(5x6) = 1.5 A(5x7) B(7x6) + 0.5 C */
    f->n_in[0] = 35, f->n_in[1] = 42, f->n_in[2] = 30, f->n_out = 30;
    break;
  case OP_GEMM_BATCHED: /* 3 batches of 3x4 = A(3x5) B(5x4), B shared */
    f->n_in[0] = 45, f->n_in[1] = 20, f->n_out = 36;
    break;
  case OP_CONV2D:
    ref_conv2d_size(&conv_desc, &p, &q);
    f->n_in[0] = 60, f->n_in[1] = 54, f->n_in[2] = 3, f->n_out = 3 * p * q;
    break;
  case OP_ATTENTION:
    f->n_in[0] = 48, f->n_in[1] = 40, f->n_in[2] = 40, f->n_out = 48;
    break;
  case OP_REDUCE:
    f->n_in[0] = 120, f->n_out = 24;
    break;
  case OP_UNARY:
  case OP_BINARY:
    f->n_in[0] = 50, f->n_in[1] = op == OP_BINARY ? 50 : 0, f->n_out = 50;
    break;
  case OP_BROADCAST:
    f->n_in[0] = 12, f->n_in[1] = 5, f->n_out = 60;
    break;
  }
  for (int i = 0; i < 3; i++)
    if (f->n_in[i]) {
      f->in[i] = falloc(f->n_in[i]);
      fill_uniform(f->in[i], f->n_in[i], -1.0f, 1.0f, 100u * (unsigned)op + i);
    }
  f->want = dalloc(f->n_out);
  f->tol = 1e-5;
  switch (op) {
  case OP_GEMM:
    ref_gemm(WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 5, 6, 7, 1.5, f->in[0],
             7, f->in[1], 6, 0.5, f->in[2], 6, f->want);
    break;
  case OP_GEMM_BATCHED:
    for (int b = 0; b < 3; b++)
      ref_gemm(WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 3, 4, 5, 1.0,
               f->in[0] + 15 * b, 5, f->in[1], 4, 0.0, NULL, 4,
               f->want + 12 * b);
    break;
  case OP_CONV2D:
    ref_conv2d(&conv_desc, f->in[0], f->in[1], f->in[2], f->want);
    break;
  case OP_ATTENTION:
    ref_attention(&attn_desc, f->in[0], f->in[1], f->in[2], f->want);
    break;
  case OP_REDUCE:
    ref_reduce(WGC_REDUCE_SUM, f->in[0], red_shape, 3, 1, f->want, NULL);
    break;
  case OP_UNARY:
    for (size_t i = 0; i < 50; i++)
      f->want[i] = ref_unary(WGC_UNARY_TANH, f->in[0][i]);
    break;
  case OP_BINARY:
    for (size_t i = 0; i < 50; i++)
      f->want[i] = ref_binary(WGC_BINARY_MUL, f->in[0][i], f->in[1][i]);
    break;
  case OP_BROADCAST:
    ref_broadcast(WGC_BINARY_SUB, f->in[0], bc_a, 3, f->in[1], bc_b, 2,
                  f->want);
    break;
  }
}

static bool op_upload(op_fx *f, wgc_context *ctx) {
  for (int i = 0; i < 3; i++)
    if (f->n_in[i] && !(f->d_in[i] = dev_from(ctx, f->in[i], f->n_in[i])))
      return false;
  /* GEMM accumulates into C in place; the others write a fresh buffer. */
  f->d_out = f->op == OP_GEMM ? f->d_in[2] : dev_alloc(ctx, f->n_out * 4);
  return f->d_out != 0;
}

static wgc_status op_run(op_fx *f, wgc_context *ctx) {
  wgc_ptr *d = f->d_in;
  switch (f->op) {
  case OP_GEMM:
    return wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 5, 6, 7,
                    1.5f, d[0], 7, d[1], 6, 0.5f, d[2], 6);
  case OP_GEMM_BATCHED:
    return wgc_gemm_batched(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 3,
                            4, 5, 1.0f, d[0], 5, 15, d[1], 4, 0, 0.0f, f->d_out,
                            4, 12, 3);
  case OP_CONV2D:
    return wgc_conv2d(ctx, &conv_desc, d[0], d[1], d[2], f->d_out);
  case OP_ATTENTION:
    return wgc_attention(ctx, &attn_desc, d[0], d[1], d[2], f->d_out);
  case OP_REDUCE:
    return wgc_reduce(ctx, WGC_REDUCE_SUM, d[0], f->d_out, red_shape, 3, 1);
  case OP_UNARY:
    return wgc_unary(ctx, WGC_UNARY_TANH, d[0], f->d_out, 50);
  case OP_BINARY:
    return wgc_binary(ctx, WGC_BINARY_MUL, d[0], d[1], f->d_out, 50);
  case OP_BROADCAST:
    return wgc_binary_broadcast(ctx, WGC_BINARY_SUB, d[0], bc_a, 3, d[1], bc_b,
                                2, f->d_out);
  }
  return WGC_ERR_INVALID_ARGUMENT;
}

static void op_release(op_fx *f, wgc_context *ctx) {
  for (int i = 0; i < 3; i++) {
    dev_free(ctx, f->d_in[i]);
    free(f->in[i]);
  }
  if (f->op != OP_GEMM)
    dev_free(ctx, f->d_out);
  free(f->want);
}

static void body_op(probe *p) {
  op_fx *f = p->arg;
  f->st = op_run(f, p->ctx);
}

static void case_op(wgc_context *ctx, int op) {
  op_fx f;
  op_prepare(&f, op);
  if (op_upload(&f, ctx)) {
    float trig_val = 5, trig_got = 0;
    wgc_ptr t = dev_from(ctx, &trig_val, 1);
    probe trig = {.ctx = ctx, .body = body_op, .arg = &f};
    if (t) {
      CHECK_OK(ctx,
               wgc_download_async(ctx, &trig_got, t, 4, probe_fire, &trig));
      drive(ctx, &trig.calls, 1);
      settle(ctx);
      CHECK_ONCE(&trig, WGC_OK, "the trigger");
      CHECK(f.st == WGC_OK, "wgc_%s inside a callback returned %s: %s",
            op_names[op], wgc_status_name(f.st), wgc_last_error(ctx));
      float *got = falloc(f.n_out);
      if (dev_read(ctx, got, f.d_out, f.n_out))
        CHECK_NEAR(got, f.want, f.n_out, f.tol, op_names[op]);
      free(got);
      dev_free(ctx, t);
    }
  }
  op_release(&f, ctx);
}

TEST(faults_in_callback) {
  for (int bi = 0; bi < 2; bi++) {
    static const char *const calls[] = {"poll",           "memory",
                                        "download",       "synchronize",
                                        "download_async", "synchronize_async"};
    for (int c = 0; c < 6; c++) {
      if (!open_case(bi, "faults_in_callback_%s", calls[c]))
        continue;
      wgc_context *ctx = test_ctx(test_backends[bi]);
      inside in;
      if (ctx && inside_setup(&in, ctx)) {
        switch (c) {
        case 0:
          case_poll(ctx, &in);
          break;
        case 1:
          case_memory(ctx, &in);
          break;
        case 2:
          case_download(ctx, &in);
          break;
        case 3:
          case_synchronize(ctx, &in);
          break;
        default:
          case_async(ctx, &in, c == 4);
          break;
        }
      }
      if (ctx)
        inside_teardown(&in);
      case_end();
    }
    for (int op = 0; op < OP_COUNT; op++) {
      if (!open_case(bi, "faults_in_callback_%s", op_names[op]))
        continue;
      wgc_context *ctx = test_ctx(test_backends[bi]);
      if (ctx)
        case_op(ctx, op);
      case_end();
    }
  }
}

/* ---- registrations while others are pending ------------------------------
 * A download behind queued GEMMs is pending when a zero-byte download's
 * callback registers more work: nothing may be lost, and what is registered
 * inside fires in a later wgc_poll. */
typedef struct pending_fx {
  probe d, z, s, e;
  long reg_poll;
  int d_calls_at_z;
  float *c_got, *c_again;
  wgc_ptr c;
  size_t nc;
  wgc_status st[2];
} pending_fx;

static void body_register(probe *p) {
  pending_fx *f = p->arg;
  f->d_calls_at_z = f->d.calls;
  f->reg_poll = current_poll();
  f->s.ctx = f->e.ctx = p->ctx;
  f->st[0] = wgc_synchronize_async(p->ctx, probe_fire, &f->s);
  f->st[1] = wgc_download_async(p->ctx, f->c_again, f->c, f->nc * 4, probe_fire,
                                &f->e);
}

TEST(faults_register_while_pending) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "faults_register_while_pending"))
      continue;
    wgc_context *ctx = test_ctx(test_backends[bi]);
    const size_t n = 192, reps = 6;
    float *a = falloc(n * n), *b = falloc(n * n);
    fill_uniform(a, n * n, -1, 1, 7);
    fill_uniform(b, n * n, -1, 1, 8);
    pending_fx f = {.nc = n * n};
    f.c_got = falloc(n * n);
    f.c_again = falloc(n * n);
    wgc_ptr da = ctx ? dev_from(ctx, a, n * n) : 0;
    wgc_ptr db = ctx ? dev_from(ctx, b, n * n) : 0;
    f.c = ctx ? dev_alloc(ctx, n * n * 4) : 0;
    if (da && db && f.c) {
      /* C accumulates A*B reps times: work that takes a while. */
      for (size_t r = 0; r < reps; r++)
        CHECK_OK(ctx, wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS,
                               n, n, n, 1.0f, da, n, db, n, 1.0f, f.c, n));
      f.d.ctx = f.z.ctx = ctx;
      f.z.body = body_register;
      f.z.arg = &f;
      CHECK_OK(ctx, wgc_download_async(ctx, f.c_got, f.c, n * n * 4, probe_fire,
                                       &f.d));
      CHECK_OK(ctx, wgc_download_async(ctx, NULL, 0, 0, probe_fire, &f.z));
      double end = now_s() + 60;
      while ((!f.d.calls || !f.z.calls || !f.s.calls || !f.e.calls) &&
             now_s() < end) {
        CHECK_OK(ctx, test_poll(ctx));
        sleep_us(200);
      }
      settle(ctx);
      CHECK_ONCE(&f.d, WGC_OK, "the download behind the GEMMs");
      CHECK_ONCE(&f.z, WGC_OK, "the zero-byte download");
      CHECK(f.st[0] == WGC_OK && f.st[1] == WGC_OK,
            "registrations inside the callback returned %s, %s",
            wgc_status_name(f.st[0]), wgc_status_name(f.st[1]));
      CHECK_ONCE(&f.s, WGC_OK, "synchronize_async registered inside");
      CHECK_ONCE(&f.e, WGC_OK, "download_async registered inside");
      CHECK(f.s.poll > f.reg_poll && f.e.poll > f.reg_poll,
            "registered in poll %ld, fired in polls %ld and %ld", f.reg_poll,
            f.s.poll, f.e.poll);
      CHECK_ORDER(&f.z, &f.s);
      CHECK_ORDER(&f.d, &f.e);
      double *want = dalloc(n * n);
      ref_gemm(WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, n, n, n, (double)reps,
               a, n, b, n, 0.0, NULL, n, want);
      CHECK_NEAR(f.c_got, want, n * n, 1e-5 * (double)(n * reps),
                 "C (pending download)");
      CHECK(same_floats(f.c_got, f.c_again, n * n),
            "the download registered inside differs from the first");
      free(want);
      case_note(" (download pending when the callback registered: %s)",
                f.d_calls_at_z ? "no" : "yes");
    }
    if (ctx) {
      dev_free(ctx, da);
      dev_free(ctx, db);
      dev_free(ctx, f.c);
    }
    free(a);
    free(b);
    free(f.c_got);
    free(f.c_again);
    case_end();
  }
}

/* ---- wgc_destroy with work and callbacks pending -------------------------
 * Natively the callbacks report their real statuses, in order, and their
 * downloads hold the data; registrations attempted while wgc_destroy fires
 * return WGC_ERR_CANCELLED, never fire and never write. */
enum { DN = 512 };

typedef struct destroy_fx {
  wgc_context *ctx, *other;
  float *hx, *got_a, *got_b, *sentinel[2], *other_got;
  wgc_ptr x, y;
  probe a, b, c, tries[3], other_a, other_b;
  wgc_status try_st[3];
  int other_calls_after; /* other's callbacks when its wgc_destroy returned */
} destroy_fx;

static bool destroy_setup(destroy_fx *f, wgc_context *ctx) {
  memset(f, 0, sizeof *f);
  f->ctx = ctx;
  f->hx = falloc(DN);
  f->got_a = falloc(DN);
  f->got_b = falloc(DN);
  for (int i = 0; i < 2; i++) {
    f->sentinel[i] = falloc(DN);
    for (int j = 0; j < DN; j++)
      f->sentinel[i][j] = SENTINEL;
  }
  pattern(f->hx, DN, 1.0f, 0.5f);
  f->x = dev_from(ctx, f->hx, DN);
  f->y = dev_alloc(ctx, DN * 4);
  f->a.ctx = f->b.ctx = f->c.ctx = ctx;
  return f->x && f->y;
}

static void destroy_teardown(destroy_fx *f) {
  free(f->hx);
  free(f->got_a);
  free(f->got_b);
  free(f->sentinel[0]);
  free(f->sentinel[1]);
  free(f->other_got);
}

/* Registrations attempted from a callback that wgc_destroy fires. */
static void body_try_register(probe *p) {
  destroy_fx *f = p->arg;
  for (int i = 0; i < 3; i++)
    f->tries[i].ctx = p->ctx;
  f->try_st[0] = wgc_download_async(p->ctx, f->sentinel[0], f->x, DN * 4,
                                    probe_fire, &f->tries[0]);
  f->try_st[1] = wgc_synchronize_async(p->ctx, probe_fire, &f->tries[1]);
  f->try_st[2] = wgc_download_async(p->ctx, f->sentinel[1], f->y, DN * 4,
                                    probe_fire, &f->tries[2]);
}

static void body_destroy_own(probe *p) { wgc_destroy(p->ctx); }

/* Queues y = -(x*x) and the downloads a (of x) and b (of y), then the
 * synchronize_async c. */
static void destroy_queue(destroy_fx *f) {
  wgc_context *ctx = f->ctx;
  CHECK_OK(ctx, wgc_binary(ctx, WGC_BINARY_MUL, f->x, f->x, f->y, DN));
  CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_NEG, f->y, f->y, DN));
  CHECK_OK(ctx,
           wgc_download_async(ctx, f->got_a, f->x, DN * 4, probe_fire, &f->a));
  CHECK_OK(ctx,
           wgc_download_async(ctx, f->got_b, f->y, DN * 4, probe_fire, &f->b));
  CHECK_OK(ctx, wgc_synchronize_async(ctx, probe_fire, &f->c));
}

static void destroy_check(destroy_fx *f) {
  CHECK_ONCE(&f->a, WGC_OK, "download a");
  CHECK(same_floats(f->got_a, f->hx, DN), "download a gave %g at 0",
        f->got_a[0]);
  CHECK_ONCE(&f->b, WGC_OK, "download b");
  CHECK_ONCE(&f->c, WGC_OK, "synchronize_async c");
  CHECK_ORDER(&f->a, &f->b);
  CHECK_ORDER(&f->b, &f->c);
  bool right = true;
  for (int i = 0; i < DN; i++)
    right = right && f->got_b[i] == -(f->hx[i] * f->hx[i]);
  CHECK(right, "download b gave %g at 0, want %g", f->got_b[0],
        -(f->hx[0] * f->hx[0]));
}

static void check_tries(destroy_fx *f) {
  for (int i = 0; i < 3; i++) {
    CHECK(f->try_st[i] == WGC_ERR_CANCELLED,
          "registration %d while wgc_destroy fires returned %s, want "
          "WGC_ERR_CANCELLED",
          i, wgc_status_name(f->try_st[i]));
    CHECK_NEVER(&f->tries[i], "a registration made while wgc_destroy fires");
  }
  CHECK(all_sentinel(f->sentinel[0], DN) && all_sentinel(f->sentinel[1], DN),
        "a download registered while wgc_destroy fires wrote its destination");
}

TEST(faults_destroy_pending) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "faults_destroy_pending"))
      continue;
    wgc_context *ctx = fresh(bi);
    destroy_fx f;
    if (ctx && destroy_setup(&f, ctx)) {
      destroy_queue(&f);
      wgc_destroy(ctx);
      destroy_check(&f);
    } else {
      wgc_destroy(ctx);
    }
    if (ctx)
      destroy_teardown(&f);
    case_end();
  }
}

TEST(faults_destroy_registrations) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "faults_destroy_registrations"))
      continue;
    wgc_context *ctx = fresh(bi);
    destroy_fx f;
    if (ctx && destroy_setup(&f, ctx)) {
      destroy_queue(&f);
      f.b.body = body_try_register;
      f.b.arg = &f;
      wgc_destroy(ctx);
      destroy_check(&f);
      check_tries(&f);
    } else {
      wgc_destroy(ctx);
    }
    if (ctx)
      destroy_teardown(&f);
    case_end();
  }
}

/* wgc_destroy of its own context from a callback fired by wgc_poll or by
 * wgc_synchronize, with b and c pending and b attempting registrations. */
TEST(faults_destroy_in_callback) {
  for (int bi = 0; bi < 2; bi++) {
    for (int by_sync = 0; by_sync < 2; by_sync++) {
      if (!open_case(bi, "faults_destroy_in_callback_from_%s",
                     by_sync ? "synchronize" : "poll"))
        continue;
      wgc_context *ctx = fresh(bi);
      destroy_fx f;
      if (ctx && destroy_setup(&f, ctx)) {
        f.a.body = body_destroy_own;
        f.b.body = body_try_register;
        f.b.arg = &f;
        destroy_queue(&f);
        /* ctx is gone once a has fired: not touched after that. */
        if (by_sync)
          wgc_synchronize(ctx);
        else
          drive(ctx, &f.a.calls, 1);
        destroy_check(&f);
        check_tries(&f);
      } else {
        wgc_destroy(ctx);
      }
      if (ctx)
        destroy_teardown(&f);
      case_end();
    }
  }
}

/* A callback of one context destroys another that has callbacks pending:
 * they fire (real statuses) before that wgc_destroy returns. */
static void body_destroy_other(probe *p) {
  destroy_fx *f = p->arg;
  wgc_destroy(f->other);
  f->other_calls_after = f->other_a.calls + f->other_b.calls;
}

TEST(faults_destroy_other_in_callback) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "faults_destroy_other_in_callback"))
      continue;
    wgc_context *ctx = test_ctx(test_backends[bi]);
    wgc_context *other = ctx ? fresh(bi) : NULL;
    destroy_fx f;
    if (other && destroy_setup(&f, ctx)) {
      f.other = other;
      f.other_got = falloc(DN);
      wgc_ptr ox = dev_from(other, f.hx, DN);
      if (ox) {
        CHECK_OK(other, wgc_unary(other, WGC_UNARY_ABS, ox, ox, DN));
        f.other_a.ctx = f.other_b.ctx = other;
        CHECK_OK(other, wgc_download_async(other, f.other_got, ox, DN * 4,
                                           probe_fire, &f.other_a));
        CHECK_OK(other, wgc_synchronize_async(other, probe_fire, &f.other_b));
      }
      f.a.body = body_destroy_other;
      f.a.arg = &f;
      CHECK_OK(ctx,
               wgc_download_async(ctx, f.got_a, f.x, DN * 4, probe_fire, &f.a));
      drive(ctx, &f.a.calls, 1);
      settle(ctx);
      CHECK_ONCE(&f.a, WGC_OK, "the callback that destroys the other context");
      CHECK(f.other_calls_after == 2,
            "%d of the other context's 2 callbacks had fired when its "
            "wgc_destroy returned",
            f.other_calls_after);
      CHECK_ONCE(&f.other_a, WGC_OK, "the other context's download");
      CHECK_ONCE(&f.other_b, WGC_OK, "the other context's synchronize_async");
      CHECK_ORDER(&f.other_a, &f.other_b);
      CHECK_ORDER(&f.a, &f.other_a);
      for (int i = 0; i < DN; i++)
        if (f.other_got[i] != fabsf(f.hx[i])) {
          CHECK(false, "the other context's download gave %g at %d",
                f.other_got[i], i);
          break;
        }
      /* ctx goes on working. */
      CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_NEG, f.x, f.y, DN));
      float *want = falloc(DN);
      for (int i = 0; i < DN; i++)
        want[i] = -f.hx[i];
      CHECK_DEVICE_EQUALS(ctx, f.y, want, DN, "y after the other's destroy");
      free(want);
    } else if (other) {
      wgc_destroy(other);
    }
    if (other) {
      dev_free(ctx, f.x);
      dev_free(ctx, f.y);
      destroy_teardown(&f);
    }
    case_end();
  }
}

/* ---- freeing memory that queued work still uses --------------------------
 * t1 = X W, t2 = tanh(t1), out = t2 + X, res = -out: X, W, t1, t2 and out
 * are freed right after being queued and their memory is handed out again
 * and overwritten; res must hold the right values. */
TEST(faults_free_while_in_use) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "faults_free_while_in_use"))
      continue;
    wgc_context *ctx = test_ctx(test_backends[bi]);
    enum { M = 64, NN = M * M };
    float *hx = falloc(NN), *hw = falloc(NN), *got = falloc(NN),
          *junk = falloc(NN);
    double *want = dalloc(NN);
    fill_uniform(hx, NN, -1, 1, 21);
    fill_uniform(hw, NN, -0.25f, 0.25f, 22);
    for (int i = 0; i < NN; i++)
      junk[i] = 1e30f;
    wgc_ptr x = 0, w = 0, t1 = 0, t2 = 0, out = 0, res = 0;
    if (ctx) {
      x = dev_from(ctx, hx, NN);
      w = dev_from(ctx, hw, NN);
      t1 = dev_alloc(ctx, NN * 4);
      t2 = dev_alloc(ctx, NN * 4);
      out = dev_alloc(ctx, NN * 4);
      res = dev_alloc(ctx, NN * 4);
    }
    if (x && w && t1 && t2 && out && res) {
      CHECK_OK(ctx, wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, M,
                             M, M, 1.0f, x, M, w, M, 0.0f, t1, M));
      CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_TANH, t1, t2, NN));
      CHECK_OK(ctx, wgc_binary(ctx, WGC_BINARY_ADD, t2, x, out, NN));
      CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_NEG, out, res, NN));
      wgc_ptr gone[] = {x, w, t1, t2, out};
      for (int i = 0; i < 5; i++)
        CHECK_OK(ctx, wgc_free(ctx, gone[i]));
      /* New allocations of the same sizes, overwritten at once. */
      wgc_ptr again[5] = {0};
      for (int i = 0; i < 5; i++)
        if ((again[i] = dev_alloc(ctx, NN * 4)))
          CHECK_OK(ctx, wgc_upload(ctx, again[i], junk, NN * 4));
      if (dev_read(ctx, got, res, NN)) {
        ref_gemm(WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, M, M, M, 1.0, hx, M,
                 hw, M, 0.0, NULL, M, want);
        for (int i = 0; i < NN; i++)
          want[i] = -(tanh(want[i]) + hx[i]);
        CHECK_NEAR(got, want, NN, 1e-4, "res");
      }
      for (int i = 0; i < 5; i++) {
        CHECK(wgc_free(ctx, gone[i]) == WGC_ERR_INVALID_ARGUMENT,
              "freed allocation %d is still accepted", i);
        dev_free(ctx, again[i]);
      }
      dev_free(ctx, res);
    } else if (ctx) {
      wgc_ptr all[] = {x, w, t1, t2, out, res};
      for (int i = 0; i < 6; i++)
        dev_free(ctx, all[i]);
    }
    free(hx);
    free(hw);
    free(got);
    free(junk);
    free(want);
    case_end();
  }
}

/* ---- deep chains of callbacks --------------------------------------------
 * Each callback registers the next (alternately a zero-byte download and a
 * synchronize_async), depth times. Each wgc_poll fires exactly one link;
 * the chain must neither recurse on the stack nor cost more per link as it
 * grows. */
typedef struct chain {
  wgc_context *ctx;
  int fired, depth;
  wgc_status bad; /* first failing status seen */
} chain;

static void chain_link(wgc_status s, void *user) {
  chain *c = user;
  if (s != WGC_OK && c->bad == WGC_OK)
    c->bad = s;
  if (++c->fired >= c->depth)
    return;
  wgc_status r = c->fired % 2
                     ? wgc_download_async(c->ctx, NULL, 0, 0, chain_link, c)
                     : wgc_synchronize_async(c->ctx, chain_link, c);
  if (r != WGC_OK && c->bad == WGC_OK)
    c->bad = r;
}

/* CPU seconds of the calling thread: the front end's work and the
 * callbacks, without the time spent asleep waiting for the submission
 * thread to wake (which on these VMs swings from about 6 to 60 us a link
 * from one minute to the next). */
static double thread_cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs a chain by polling; returns the calling thread's CPU seconds, or -1
 * on failure. */
static double run_chain(wgc_context *ctx, int depth, bool by_poll) {
  chain c = {.ctx = ctx, .depth = depth};
  double t0 = thread_cpu_s(), end = now_s() + 60;
  CHECK_OK(ctx, wgc_download_async(ctx, NULL, 0, 0, chain_link, &c));
  long calls = 0, uneven = 0;
  while (c.fired < depth && c.bad == WGC_OK && now_s() < end) {
    int before = c.fired;
    wgc_status s = by_poll ? wgc_poll(ctx) : wgc_synchronize(ctx);
    if (s != WGC_OK) {
      c.bad = s;
      break;
    }
    calls++;
    /* wgc_poll fires at most one link: the next one was registered inside
     * it. (On the GPU a synchronize_async may need a few polls.) */
    if (by_poll && c.fired - before > 1)
      uneven++;
  }
  double t = thread_cpu_s() - t0;
  settle(ctx);
  CHECK(c.fired == depth, "the chain fired %d of %d links", c.fired, depth);
  CHECK(c.bad == WGC_OK, "a link saw %s", wgc_status_name(c.bad));
  CHECK(uneven == 0, "%ld wgc_poll calls fired more than one link", uneven);
  CHECK(by_poll || calls <= depth, "%ld wgc_synchronize calls for %d links",
        calls, depth);
  return c.fired == depth ? t : -1;
}

TEST(faults_deep_recursion) {
  for (int bi = 0; bi < 2; bi++) {
    for (int by_poll = 1; by_poll >= 0; by_poll--) {
      if (!open_case(bi, "faults_deep_recursion_by_%s",
                     by_poll ? "poll" : "synchronize"))
        continue;
      wgc_context *ctx = test_ctx(test_backends[bi]);
      if (ctx) {
        /* The best of three runs at each depth, against scheduling noise. */
        double t_small = 1e9, t_big = 1e9;
        for (int r = 0; r < 3; r++) {
          double ts = run_chain(ctx, 2500, by_poll);
          double tb = run_chain(ctx, 10000, by_poll);
          if (ts < 0 || tb < 0)
            break;
          t_small = fmin(t_small, ts);
          t_big = fmin(t_big, tb);
        }
        double ratio = t_big / fmax(t_small, 1e-6);
        case_note(" (2500 links %.1f ms, 10000 links %.1f ms of CPU time, "
                  "ratio %.2f)",
                  1e3 * t_small, 1e3 * t_big, ratio);
        /* Linear is 4, quadratic 16; slack for scheduling noise, which
         * dominates while the links cost microseconds. Times are the
         * calling thread's CPU time (run_chain): a WebGPU link also waits
         * for the submission thread to wake, which on a loaded 2-core
         * machine has cost 0.5 s over 10000 links of wall time; the front
         * end's share of the cost is the CPU backend's, held to 50 ms. */
        double slack = test_backends[bi] == WGC_BACKEND_CPU ? 0.05 : 0.25;
        CHECK(t_big < 8 * t_small + slack,
              "10000 links took %.2fx the time of 2500", ratio);
      }
      case_end();
    }
  }
}
