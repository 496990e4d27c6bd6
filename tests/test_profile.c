/* Per-operation timing: one record per operation in issue order, with the
 * public name, the shape, launches and a time that lies inside the wall
 * time around the work; nothing while off; records across batches and
 * from callbacks; the trace as JSON a strict parser reads, one complete
 * event per record; bad input. */
#include "../examples/common/json.h"
#include "harness.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static wgc_context *fresh(wgc_backend be) {
  wgc_options o = {.backend = be};
  wgc_context *ctx = NULL;
  CHECK_STATUS(wgc_create(&o, &ctx), WGC_OK);
  return ctx;
}

/* The done records, or NULL with *n 0. */
static wgc_profile_record *records(wgc_context *ctx, size_t *n) {
  *n = 0;
  CHECK_STATUS(wgc_profile_records(ctx, NULL, 0, n), WGC_OK);
  wgc_profile_record *r = calloc(*n ? *n : 1, sizeof *r);
  size_t again = 0;
  CHECK_STATUS(wgc_profile_records(ctx, r, *n, &again), WGC_OK);
  CHECK(again == *n, "count changed from %zu to %zu without a poll", *n, again);
  return r;
}

typedef struct want {
  const char *name, *shape;
} want;

/* GEMM, unary, binary, reduce and softmax, each once, checked against a
 * float64 reference so that recording is seen not to change results. */
static void sequence(wgc_context *ctx, wgc_ptr *bufs) {
  enum { M = 24, N = 40, K = 56 };
  float *a = falloc(M * K), *b = falloc(K * N), *c = falloc(M * N);
  fill_uniform(a, M * K, -1, 1, 7);
  fill_uniform(b, K * N, -1, 1, 8);
  bufs[0] = dev_from(ctx, a, M * K);
  bufs[1] = dev_from(ctx, b, K * N);
  bufs[2] = dev_from(ctx, c, M * N);
  bufs[3] = dev_from(ctx, c, M * N);
  bufs[4] = dev_from(ctx, c, M);
  size_t shape[2] = {M, N};
  CHECK_STATUS(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, M, N, K,
                        1.0f, bufs[0], K, bufs[1], N, 0.0f, bufs[2], N),
               WGC_OK);
  CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_RELU, bufs[2], bufs[3], M * N), WGC_OK);
  CHECK_STATUS(
      wgc_binary(ctx, WGC_BINARY_ADD, bufs[2], bufs[3], bufs[3], M * N),
      WGC_OK);
  CHECK_STATUS(wgc_reduce(ctx, WGC_REDUCE_SUM, bufs[3], bufs[4], shape, 2, 1),
               WGC_OK);
  CHECK_STATUS(wgc_softmax(ctx, bufs[3], bufs[3], shape, 2, 1), WGC_OK);
  dev_read(ctx, c, bufs[2], M * N);
  double worst = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int p = 0; p < K; p++)
        s += (double)a[i * K + p] * b[p * N + j];
      double e = fabs(c[i * N + j] - s) / (1e-5 * K + 1e-6);
      worst = e > worst ? e : worst;
    }
  CHECK(worst <= 1, "GEMM while recording: error %.3g of its bound", worst);
  free(a);
  free(b);
  free(c);
}

static const want seq_want[] = {
    {"wgc_gemm", "m=24 n=40 k=56"},
    {"wgc_unary", "op=relu n=960"},
    {"wgc_binary", "op=add shape=960"},
    {"wgc_reduce", "op=sum outer=24 len=40 inner=1"},
    {"wgc_softmax", "outer=24 len=40 inner=1"},
};
#define SEQ_N (sizeof seq_want / sizeof *seq_want)

TEST(profile_records_in_order) {
  for (int i = 0; i < 2; i++) {
    wgc_backend be = test_backends[i];
    if (!case_begin("profile_records_in_order(%s)",
                    be == WGC_BACKEND_CPU ? "cpu" : "webgpu"))
      continue;
    wgc_context *ctx = fresh(be);
    if (!ctx) {
      case_end();
      continue;
    }
    wgc_ptr bufs[5];
    double before_start = now_us();
    CHECK_STATUS(wgc_profile_start(ctx), WGC_OK);
    double after_start = now_us();
    double t0 = now_us();
    sequence(ctx, bufs); /* its download waits for the GEMM only */
    CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
    double t1 = now_us();
    size_t n;
    wgc_profile_record *r = records(ctx, &n);
    CHECK(n == SEQ_N, "%zu records, want %zu", n, SEQ_N);
    double sum = 0, last_end = -1;
    for (size_t k = 0; k < n && k < SEQ_N; k++) {
      CHECK(!strcmp(r[k].name, seq_want[k].name), "record %zu is %s, want %s",
            k, r[k].name, seq_want[k].name);
      CHECK(!strcmp(r[k].shape, seq_want[k].shape),
            "record %zu shape \"%s\", want \"%s\"", k, r[k].shape,
            seq_want[k].shape);
      if (be == WGC_BACKEND_CPU) {
        CHECK(r[k].source == WGC_TIME_CPU && r[k].launches == 0,
              "record %zu: source %d launches %u on the CPU", k,
              (int)r[k].source, r[k].launches);
      } else {
        CHECK(r[k].source == WGC_TIME_SUBMIT_TO_DONE && r[k].launches > 0,
              "record %zu: source %d launches %u on WebGPU", k,
              (int)r[k].source, r[k].launches);
      }
      CHECK(r[k].duration_us > 0, "record %zu duration %g", k,
            r[k].duration_us);
      /* inside the wall time around the work: origin lies between
       * before_start and after_start */
      CHECK(r[k].start_us >= t0 - after_start &&
                r[k].start_us + r[k].duration_us <= t1 - before_start,
            "record %zu [%g, +%g] us outside the wall time [%g, %g]", k,
            r[k].start_us, r[k].duration_us, t0 - after_start,
            t1 - before_start);
      CHECK(r[k].start_us >= last_end - 1e-3,
            "record %zu starts at %g before the previous one ends (%g)", k,
            r[k].start_us, last_end);
      last_end = r[k].start_us + r[k].duration_us;
      sum += r[k].duration_us;
    }
    CHECK(sum <= t1 - t0, "records sum to %g us, wall time %g us", sum,
          t1 - t0);
    case_note(" %zu records, %.0f of %.0f us", n, sum, t1 - t0);
    free(r);
    wgc_destroy(ctx);
    case_end();
  }
}

TEST(profile_off_records_nothing) {
  for (int i = 0; i < 2; i++) {
    wgc_backend be = test_backends[i];
    if (!case_begin("profile_off_records_nothing(%s)",
                    be == WGC_BACKEND_CPU ? "cpu" : "webgpu"))
      continue;
    wgc_context *ctx = fresh(be);
    if (!ctx) {
      case_end();
      continue;
    }
    size_t n = 99;
    wgc_profile_record rec;
    char buf[64];
    /* never started: every reading call says so, nothing written */
    CHECK_STATUS(wgc_profile_records(ctx, &rec, 1, &n),
                 WGC_ERR_INVALID_ARGUMENT);
    CHECK(n == 99, "count written while never started");
    CHECK(strstr(wgc_last_error(ctx), "wgc_profile_start"),
          "message \"%s\" does not name wgc_profile_start",
          wgc_last_error(ctx));
    CHECK_STATUS(wgc_profile_trace(ctx, buf, sizeof buf, &n),
                 WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_profile_stop(ctx), WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_profile_write_trace(ctx, "/nonexistent/x.json"),
                 WGC_ERR_INVALID_ARGUMENT);
    wgc_ptr bufs[5];
    sequence(ctx, bufs); /* while off */
    CHECK_STATUS(wgc_profile_start(ctx), WGC_OK);
    CHECK_STATUS(wgc_profile_stop(ctx), WGC_OK);
    sequence(ctx, bufs); /* off again */
    CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
    CHECK_STATUS(wgc_profile_records(ctx, NULL, 0, &n), WGC_OK);
    CHECK(n == 0, "%zu records while off", n);
    /* bad arguments while on */
    CHECK_STATUS(wgc_profile_start(ctx), WGC_OK);
    CHECK_STATUS(wgc_profile_records(ctx, NULL, 1, &n),
                 WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_profile_records(ctx, &rec, 1, NULL),
                 WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_profile_trace(ctx, NULL, 5, &n), WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_profile_trace(ctx, buf, sizeof buf, NULL),
                 WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_profile_write_trace(ctx, NULL), WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_profile_write_trace(ctx, "/nonexistent/dir/x.json"),
                 WGC_ERR_DEVICE);
    CHECK(strstr(wgc_last_error(ctx), "/nonexistent/dir/x.json"),
          "message \"%s\" does not name the path", wgc_last_error(ctx));
    CHECK_STATUS(wgc_profile_start(NULL), WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_profile_records(NULL, NULL, 0, &n),
                 WGC_ERR_INVALID_ARGUMENT);
    /* a failing op leaves no record */
    CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_RELU, bufs[4], bufs[4], 1u << 20),
                 WGC_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
    CHECK_STATUS(wgc_profile_records(ctx, NULL, 0, &n), WGC_OK);
    CHECK(n == 0, "%zu records after a failing op", n);
    wgc_destroy(ctx);
    case_end();
  }
}

typedef struct chain {
  wgc_context *ctx;
  wgc_ptr x;
  size_t n;
  int fired;
  float host;
} chain;

/* Issues one more op from inside a callback. */
static void on_download(wgc_status s, void *user) {
  chain *c = user;
  CHECK(s == WGC_OK, "download callback: %s", wgc_status_name(s));
  CHECK_STATUS(wgc_unary(c->ctx, WGC_UNARY_NEG, c->x, c->x, c->n), WGC_OK);
  c->fired++;
}

TEST(profile_batches_and_callbacks) {
  enum { OPS = 150, LEN = 256 };
  for (int i = 0; i < 2; i++) {
    wgc_backend be = test_backends[i];
    if (!case_begin("profile_batches_and_callbacks(%s)",
                    be == WGC_BACKEND_CPU ? "cpu" : "webgpu"))
      continue;
    wgc_context *ctx = fresh(be);
    if (!ctx) {
      case_end();
      continue;
    }
    float *h = falloc(LEN);
    fill_uniform(h, LEN, -1, 1, 3);
    chain c = {.ctx = ctx, .x = dev_from(ctx, h, LEN), .n = LEN};
    CHECK_STATUS(wgc_profile_start(ctx), WGC_OK);
    /* more ops than one batch holds, with a callback in the middle */
    for (int k = 0; k < OPS; k++) {
      CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_RELU, c.x, c.x, LEN), WGC_OK);
      if (k == OPS / 2)
        CHECK_STATUS(wgc_download_async(ctx, &c.host, c.x, 4, on_download, &c),
                     WGC_OK);
    }
    size_t n = 0;
    CHECK_STATUS(wgc_profile_records(ctx, NULL, 0, &n), WGC_OK);
    CHECK(n <= OPS, "%zu records of %d ops", n, OPS);
    CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
    CHECK(c.fired == 1, "callback fired %d times", c.fired);
    CHECK_STATUS(wgc_synchronize(ctx), WGC_OK); /* the op the callback made */
    wgc_profile_record *r = records(ctx, &n);
    CHECK(n == OPS + 1, "%zu records, want %d", n, OPS + 1);
    size_t negs = 0;
    for (size_t k = 0; k < n; k++) {
      bool neg = !strcmp(r[k].shape, "op=neg n=256");
      negs += neg;
      CHECK(neg || !strcmp(r[k].shape, "op=relu n=256"),
            "record %zu: shape \"%s\"", k, r[k].shape);
      CHECK(r[k].duration_us > 0, "record %zu: duration %g", k,
            r[k].duration_us);
      CHECK(k == 0 || r[k].start_us >= r[k - 1].start_us,
            "record %zu starts before record %zu", k, k - 1);
    }
    CHECK(negs == 1 && n == OPS + 1 && !strcmp(r[n - 1].shape, "op=neg n=256"),
          "the callback's op is not the last record (%zu of it)", negs);
    /* a new recording starts empty; stop keeps the records readable */
    CHECK_STATUS(wgc_profile_start(ctx), WGC_OK);
    CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_RELU, c.x, c.x, LEN), WGC_OK);
    CHECK_STATUS(wgc_profile_stop(ctx), WGC_OK);
    CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_RELU, c.x, c.x, LEN), WGC_OK);
    CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
    CHECK_STATUS(wgc_profile_records(ctx, NULL, 0, &n), WGC_OK);
    CHECK(n == 1, "%zu records after restart and stop, want 1", n);
    free(r);
    free(h);
    /* destroyed while recording with work in flight */
    CHECK_STATUS(wgc_profile_start(ctx), WGC_OK);
    for (int k = 0; k < 10; k++)
      CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_RELU, c.x, c.x, LEN), WGC_OK);
    wgc_destroy(ctx);
    case_end();
  }
}

TEST(profile_trace_json) {
  for (int i = 0; i < 2; i++) {
    wgc_backend be = test_backends[i];
    if (!case_begin("profile_trace_json(%s)",
                    be == WGC_BACKEND_CPU ? "cpu" : "webgpu"))
      continue;
    wgc_context *ctx = fresh(be);
    if (!ctx) {
      case_end();
      continue;
    }
    wgc_ptr bufs[5];
    CHECK_STATUS(wgc_profile_start(ctx), WGC_OK);
    sequence(ctx, bufs);
    CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
    size_t n = 0, len = 0, len2 = 0;
    wgc_profile_record *r = records(ctx, &n);
    char small[16];
    CHECK_STATUS(wgc_profile_trace(ctx, small, sizeof small, &len), WGC_OK);
    CHECK(len > sizeof small && strlen(small) == sizeof small - 1,
          "a cut trace: len %zu, text of %zu", len, strlen(small));
    char *text = malloc(len + 1);
    CHECK_STATUS(wgc_profile_trace(ctx, text, len + 1, &len2), WGC_OK);
    CHECK(len2 == len && strlen(text) == len, "trace of %zu then %zu bytes",
          len, len2);
    /* the file holds the same text */
    char path[] = "/tmp/wgc_trace_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd >= 0) {
      CHECK_STATUS(wgc_profile_write_trace(ctx, path), WGC_OK);
      FILE *f = fopen(path, "rb");
      char *file = malloc(len + 2);
      size_t got = f ? fread(file, 1, len + 1, f) : 0;
      CHECK(got == len && !memcmp(file, text, len),
            "the file holds %zu bytes, not the %zu of the trace", got, len);
      if (f)
        fclose(f);
      free(file);
      remove(path);
    }
    json_doc *doc = NULL;
    char err[200];
    CHECK(json_parse(text, len, &doc, err, sizeof err) == 0,
          "the trace does not parse: %s", err);
    const json_value *ev = json_get(json_root(doc), "traceEvents");
    size_t complete = 0;
    for (size_t k = 0; k < json_count(ev); k++) {
      const json_value *e = json_at(ev, k);
      const char *ph = json_string(json_get(e, "ph"), NULL);
      if (!ph || strcmp(ph, "X"))
        continue;
      size_t j = complete++;
      if (j >= n)
        continue;
      const char *name = json_string(json_get(e, "name"), NULL);
      const json_value *args = json_get(e, "args");
      const char *shape = json_string(json_get(args, "shape"), NULL);
      int64_t launches = -1, tid = -1;
      json_int64(json_get(args, "launches"), &launches);
      json_int64(json_get(e, "tid"), &tid);
      double ts = json_number(json_get(e, "ts"));
      double dur = json_number(json_get(e, "dur"));
      CHECK(name && !strcmp(name, r[j].name), "event %zu name %s, want %s", j,
            name ? name : "(none)", r[j].name);
      CHECK(shape && !strcmp(shape, r[j].shape), "event %zu shape %s", j,
            shape ? shape : "(none)");
      CHECK(launches == r[j].launches && tid > 0,
            "event %zu launches %lld tid %lld", j, (long long)launches,
            (long long)tid);
      CHECK(fabs(ts - r[j].start_us) <= 1e-3 &&
                fabs(dur - r[j].duration_us) <= 1e-3 && dur > 0,
            "event %zu ts %g dur %g, record %g %g", j, ts, dur, r[j].start_us,
            r[j].duration_us);
    }
    CHECK(complete == n && n == SEQ_N, "%zu complete events for %zu records",
          complete, n);
    json_free(doc);
    free(text);
    free(r);
    wgc_destroy(ctx);
    case_end();
  }
}

/* wgc_options.profile: recording from the start, and on WebGPU the GPU's
 * own clock where the op's work went in one submit; an op of more launches
 * than a batch holds falls back to submit-to-done. */
TEST(profile_option_gpu_time) {
  for (int i = 0; i < 2; i++) {
    wgc_backend be = test_backends[i];
    if (!case_begin("profile_option_gpu_time(%s)",
                    be == WGC_BACKEND_CPU ? "cpu" : "webgpu"))
      continue;
    double before_start = now_us();
    wgc_options o = {.backend = be, .profile = 1, .max_binding_bytes = 4096};
    wgc_context *ctx = NULL;
    CHECK_STATUS(wgc_create(&o, &ctx), WGC_OK);
    double after_start = now_us();
    if (!ctx) {
      case_end();
      continue;
    }
    wgc_ptr bufs[5];
    double t0 = now_us();
    sequence(ctx, bufs);
    enum { BIG = 1 << 16 }; /* 256 KiB: dozens of 4 KiB windows */
    wgc_ptr big;
    CHECK_STATUS(wgc_alloc(ctx, 4 * BIG, &big), WGC_OK);
    CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_RELU, big, big, BIG), WGC_OK);
    CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
    double t1 = now_us();
    size_t n;
    wgc_profile_record *r = records(ctx, &n);
    CHECK(n == SEQ_N + 1, "%zu records, want %zu", n, SEQ_N + 1);
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
      const wgc_profile_record *x = &r[k];
      bool last = k == SEQ_N;
      CHECK(!strcmp(x->name, last ? "wgc_unary" : seq_want[k].name),
            "record %zu is %s", k, x->name);
      wgc_time_source source = be == WGC_BACKEND_CPU ? WGC_TIME_CPU
                               : last && x->launches > 64
                                   ? WGC_TIME_SUBMIT_TO_DONE
                                   : WGC_TIME_GPU;
      CHECK(x->source == source,
            "record %zu (%s, %u launches): source %d, want %d", k, x->name,
            x->launches, (int)x->source, (int)source);
      CHECK(x->duration_us > 0 &&
                x->start_us + x->duration_us <= t1 - before_start &&
                x->start_us >= t0 - after_start,
            "record %zu [%g, +%g] outside the wall time [%g, %g]", k,
            x->start_us, x->duration_us, t0 - after_start, t1 - before_start);
      sum += x->duration_us;
    }
    if (be != WGC_BACKEND_CPU && n == SEQ_N + 1)
      CHECK(r[SEQ_N].launches > 64, "the big op made %u launches",
            r[SEQ_N].launches);
    CHECK(sum <= t1 - t0, "records sum to %g us, wall time %g us", sum,
          t1 - t0);
    case_note(" %zu records, %.0f of %.0f us", n, sum, t1 - t0);
    free(r);
    /* destroyed with timed work and clock readbacks in flight */
    for (int k = 0; k < 8; k++)
      CHECK_STATUS(wgc_unary(ctx, WGC_UNARY_RELU, big, big, 1024), WGC_OK);
    wgc_destroy(ctx);
    case_end();
  }
}

/* A record's shape names its operands' types when they are not all f32,
 * in the family's order (GEMM: A, B, C, bias); f32 shapes read as ever. */
TEST(profile_typed_shapes) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "profile_typed_shapes"))
      continue;
    enum { M = 4, N = 8, K = 32 };
    float a[M * K], b[N * K];
    fill_uniform(a, M * K, -1, 1, 3);
    fill_uniform(b, N * K, -1, 1, 4);
    uint16_t bh[N * K];
    CHECK_STATUS(wgc_quantize(b, bh, WGC_DTYPE_F16, N * K), WGC_OK);
    wgc_ptr pa = dev_from(ctx, a, M * K), pb = dev_alloc(ctx, sizeof bh),
            pc = dev_alloc(ctx, 4 * M * N);
    CHECK_OK(ctx, wgc_upload(ctx, pb, bh, sizeof bh));
    CHECK_OK(ctx, wgc_profile_start(ctx));
    wgc_gemm_epilogue ep = {.b_type = WGC_DTYPE_F16};
    CHECK_OK(ctx, wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, M, N,
                              K, 1.0f, pa, K, pb, K, 0.0f, pc, N, &ep));
    CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_RELU, pc, pc, M * N));
    CHECK_OK(ctx, wgc_synchronize(ctx));
    CHECK_OK(ctx, wgc_profile_stop(ctx));
    size_t n = 0;
    wgc_profile_record *r = records(ctx, &n);
    CHECK(n == 2, "%zu records, want 2", n);
    if (n == 2) {
      CHECK(!strcmp(r[0].shape, "m=4 n=8 k=32 types=f32,f16,f32,f32"),
            "typed GEMM's shape \"%s\"", r[0].shape);
      CHECK(!strcmp(r[1].shape, "op=relu n=32"), "unary's shape \"%s\"",
            r[1].shape);
    }
    free(r);
    dev_free(ctx, pa);
    dev_free(ctx, pb);
    dev_free(ctx, pc);
    case_end();
  }
}
