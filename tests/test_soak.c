/* Soak and load: many contexts created and destroyed, a million
 * allocations, a context that outlives the allocation counter, long chains
 * of queued work, and a hundred thousand outstanding callbacks. Each case
 * prints what it measured (times, memory before and after) in its line and
 * asserts bounds on it.
 *
 * WGC_SOAK=1 (make soak) runs the long versions. Under ASan, TSan or
 * valgrind the counts shrink twentyfold and the memory figures are printed
 * but not bounded: those tools keep freed memory in quarantine and check
 * leaks themselves. */
#include "util.h"

#include "internal.h"
#include "table.h"

#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static bool long_run(void) {
  const char *e = getenv("WGC_SOAK");
  return e && *e && strcmp(e, "0") != 0;
}

/* n for make test, or n_long for make soak; shrunk under instrumentation. */
static long count(long n, long n_long) {
  long c = long_run() ? n_long : n;
  return instrumented() ? (c + 19) / 20 : c;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- process memory ------------------------------------------------------
 * Heap bytes in use (mallinfo2) and resident bytes (/proc/self/statm), after
 * handing free heap pages back, so that both compare across a run. */
typedef struct mem_use {
  double heap, rss; /* bytes */
} mem_use;

static mem_use mem_now(void) {
  malloc_trim(0);
  mem_use m = {(double)mallinfo2().uordblks, 0};
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
      resident = 0;
    fclose(f);
  }
  m.rss = (double)resident * (double)sysconf(_SC_PAGESIZE);
  return m;
}

#define MIB (1024.0 * 1024.0)
#define KIB 1024.0

/* Notes before/after figures in the case line and bounds the growth. */
static void check_mem_at(int line, mem_use before, mem_use after,
                         double heap_margin, double rss_margin) {
  double dh = after.heap - before.heap, dr = after.rss - before.rss;
  case_note(" (heap %.0f -> %.0f KiB, RSS %.1f -> %.1f MiB%s)",
            before.heap / KIB, after.heap / KIB, before.rss / MIB,
            after.rss / MIB, instrumented() ? ", not bounded here" : "");
  if (instrumented())
    return;
  if (dh > heap_margin)
    check_fail(__FILE__, line, "heap in use grew by %.0f KiB (bound %.0f KiB)",
               dh / KIB, heap_margin / KIB);
  if (dr > rss_margin)
    check_fail(__FILE__, line, "RSS grew by %.1f MiB (bound %.1f MiB)",
               dr / MIB, rss_margin / MIB);
}
#define CHECK_MEM(before, after, heap_margin, rss_margin)                      \
  check_mem_at(__LINE__, before, after, heap_margin, rss_margin)

static bool open_case(int bi, const char *name) {
  return case_begin("%s[%s]", name, backend_label(test_backends[bi]));
}

static wgc_context *create(wgc_backend b) {
  wgc_options opt = {.backend = b};
  wgc_context *ctx = NULL;
  wgc_status s = wgc_create(&opt, &ctx);
  CHECK(s == WGC_OK, "wgc_create(%s) returned %s: %s", backend_label(b),
        wgc_status_name(s), wgc_last_error(NULL));
  return s == WGC_OK ? ctx : NULL;
}

/* ---- create/destroy cycles -----------------------------------------------
 * Each cycle creates a context, runs y = |x| on it, checks y, destroys it. */
static bool one_cycle(wgc_backend b, int i) {
  wgc_context *ctx = create(b);
  if (!ctx)
    return false;
  enum { N = 64 };
  float x[N], y[N];
  for (int j = 0; j < N; j++)
    x[j] = (float)(j - 32) * 0.5f + (float)(i % 7);
  wgc_ptr dx = dev_from(ctx, x, N), dy = dev_alloc(ctx, N * 4);
  bool ok = dx && dy;
  if (ok) {
    CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_ABS, dx, dy, N));
    ok = dev_read(ctx, y, dy, N);
    for (int j = 0; ok && j < N; j++)
      if (y[j] != fabsf(x[j])) {
        CHECK(false, "cycle %d: |x|[%d] = %g, want %g", i, j, y[j],
              fabsf(x[j]));
        ok = false;
      }
  }
  /* dy stays allocated: wgc_destroy releases it. */
  dev_free(ctx, dx);
  wgc_destroy(ctx);
  return ok;
}

TEST(soak_create_destroy) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "soak_create_destroy"))
      continue;
    wgc_backend b = test_backends[bi];
    bool cpu = b == WGC_BACKEND_CPU;
    long cycles = cpu ? count(2000, 20000) : count(200, 1000);
    /* The first contexts load the runtime and warm its caches. */
    bool ok = true;
    for (int i = 0; ok && i < 3; i++)
      ok = one_cycle(b, i);
    mem_use before = mem_now();
    double t0 = now_s();
    for (long i = 0; ok && i < cycles; i++)
      ok = one_cycle(b, (int)i);
    double t = now_s() - t0;
    mem_use after = mem_now();
    case_note(" (%ld cycles, %.2f ms each)", cycles, 1e3 * t / (double)cycles);
    if (ok)
      CHECK_MEM(before, after, cpu ? 256 * KIB : 1 * MIB,
                cpu ? 4 * MIB : 16 * MIB);
    case_end();
  }
}

/* ---- a million allocations ------------------------------------------------
 * Random sizes of 1 B to 64 KiB, allocated and freed in random order with
 * up to LIVE live at once. Each allocation holds a tag that is checked
 * before some of the frees; freed addresses sampled along the way must stay
 * rejected to the end. */
enum { LIVE = 2048, STALE = 1024 };

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

TEST(soak_alloc_free) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "soak_alloc_free"))
      continue;
    wgc_backend b = test_backends[bi];
    bool cpu = b == WGC_BACKEND_CPU;
    long ops = cpu ? count(1000000, 10000000) : count(100000, 1000000);
    wgc_context *ctx = create(b);
    if (!ctx) {
      case_end();
      continue;
    }
    wgc_ptr *live = calloc(LIVE, sizeof *live);
    uint32_t *tag = calloc(LIVE, sizeof *tag);
    wgc_ptr *stale = calloc(STALE, sizeof *stale);
    int n_live = 0, n_stale = 0;
    long allocs = 0, frees = 0, failures = 0, bad_tags = 0, checked = 0;
    uint64_t rng = 0x1234567887654321ull;
    /* The table and the runtime keep records sized for the most live
     * allocations; one round up to LIVE sets them up before the baseline. */
    for (int i = 0; i < LIVE; i++)
      if (wgc_alloc(ctx, 64, &live[i]) != WGC_OK ||
          wgc_upload(ctx, live[i], tag, 4) != WGC_OK)
        failures++;
    /* A download submits the uploads, so the baseline holds none. */
    uint32_t first = 0;
    if (wgc_download(ctx, &first, live[0], 4) != WGC_OK || first != tag[0])
      failures++;
    for (int i = 0; i < LIVE; i++)
      if (live[i] && wgc_free(ctx, live[i]) != WGC_OK)
        failures++;
    CHECK_OK(ctx, wgc_synchronize(ctx));
    mem_use before = mem_now();
    double t0 = now_s();
    for (long i = 0; i < ops && failures < 3; i++) {
      uint64_t r = rng_next(&rng);
      /* Allocate while below a target that drifts over 0..LIVE. */
      int target = (int)(LIVE / 2 + (LIVE / 2 - 1) * sin((double)i * 1e-4));
      bool alloc =
          n_live == 0 ||
          (n_live < LIVE && (r & 0xFF) < 128 + (n_live < target ? 24 : -24));
      if (alloc) {
        /* Log-uniform: as many below 256 B as above 4 KiB. */
        double u = (double)((r >> 8) & 0xFFFFFF) / 16777216.0;
        size_t bytes = (size_t)exp2(16.0 * u);
        wgc_ptr p;
        if (wgc_alloc(ctx, bytes, &p) != WGC_OK) {
          CHECK(false, "allocation %ld of %zu bytes failed: %s", allocs, bytes,
                wgc_last_error(ctx));
          failures++;
          continue;
        }
        /* Tag 0: too small to hold one. */
        tag[n_live] = bytes >= 4 ? (uint32_t)(r >> 32) | 1u : 0;
        if (tag[n_live] && wgc_upload(ctx, p, &tag[n_live], 4) != WGC_OK)
          failures++;
        live[n_live++] = p;
        allocs++;
      } else {
        int k = (int)((r >> 8) % (uint64_t)n_live);
        wgc_ptr p = live[k];
        /* Check the tag of about one free in 256 (downloads wait). */
        if (tag[k] && (r >> 40 & 0xFF) == 0) {
          uint32_t got = 0;
          if (wgc_download(ctx, &got, p, 4) != WGC_OK)
            failures++;
          else if (got != tag[k])
            bad_tags++;
          checked++;
        }
        if (wgc_free(ctx, p) != WGC_OK)
          failures++;
        if (frees < STALE / 2)
          stale[n_stale++] = p; /* the first ones freed */
        else if (n_stale < STALE && (r >> 48) % 1024 == 0)
          stale[n_stale++] = p;
        live[k] = live[--n_live];
        tag[k] = tag[n_live];
        frees++;
      }
    }
    while (n_live)
      if (wgc_free(ctx, live[--n_live]) != WGC_OK)
        failures++;
    /* A download submits the last uploads, as before the baseline
     * (soak_upload_then_free covers freeing without one). */
    wgc_ptr last = 0;
    uint32_t got = 1;
    if (wgc_alloc(ctx, 4, &last) != WGC_OK ||
        wgc_download(ctx, &got, last, 4) != WGC_OK || got != 0 ||
        wgc_free(ctx, last) != WGC_OK)
      failures++;
    CHECK_OK(ctx, wgc_synchronize(ctx));
    double t = now_s() - t0;
    CHECK(failures == 0, "%ld calls failed: %s", failures, wgc_last_error(ctx));
    CHECK(bad_tags == 0, "%ld of %ld checked allocations lost their tag",
          bad_tags, checked);
    /* Freed addresses: rejected, never aliased. */
    long accepted = 0;
    float four = 4;
    for (int i = 0; i < n_stale; i++) {
      if (wgc_free(ctx, stale[i]) != WGC_ERR_INVALID_ARGUMENT)
        accepted++;
      if (wgc_upload(ctx, stale[i], &four, 4) != WGC_ERR_INVALID_ARGUMENT)
        accepted++;
    }
    CHECK(accepted == 0, "%ld calls on %d freed addresses were accepted",
          accepted, n_stale);
    mem_use after = mem_now();
    case_note(" (%ld allocs + %ld frees in %.2f s, %.0f ns per call; %d stale "
              "addresses rejected)",
              allocs, frees, t, 1e9 * t / (double)(allocs + frees), n_stale);
    /* Wall time: far above what either backend needs, far below a table
     * that scans. */
    double bound = cpu ? 30.0 : 60.0;
    CHECK(t < bound * (long_run() ? 10 : 1) * (instrumented() ? 5 : 1),
          "%.1f s for %ld calls", t, allocs + frees);
    /* The table keeps its records for reuse; the memory behind them is
     * returned. The WebGPU runtime's bookkeeping grows slowly with the
     * buffers it has seen (0.5 MiB after 1e5 calls, 1.3 MiB after 1e6). */
    CHECK_MEM(before, after, cpu ? 512 * KIB : 1 * MIB,
              cpu ? 8 * MIB : 32 * MIB);
    free(live);
    free(tag);
    free(stale);
    wgc_destroy(ctx);
    case_end();
  }
}

/* Allocations uploaded to and freed at once, with no operation between:
 * after wgc_synchronize their memory is released, round after round. */
TEST(soak_upload_then_free) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "soak_upload_then_free"))
      continue;
    wgc_context *ctx = create(test_backends[bi]);
    if (!ctx) {
      case_end();
      continue;
    }
    enum { ROUND = 2048, ROUNDS = 8 };
    float v[256];
    fill_uniform(v, 256, -1, 1, 3);
    mem_use at[ROUNDS];
    long failures = 0;
    for (int r = 0; r < ROUNDS; r++) {
      for (int i = 0; i < ROUND; i++) {
        wgc_ptr p;
        if (wgc_alloc(ctx, sizeof v, &p) != WGC_OK ||
            wgc_upload(ctx, p, v, sizeof v) != WGC_OK ||
            wgc_free(ctx, p) != WGC_OK)
          failures++;
      }
      CHECK_OK(ctx, wgc_synchronize(ctx));
      at[r] = mem_now();
    }
    CHECK(failures == 0, "%ld calls failed: %s", failures, wgc_last_error(ctx));
    /* The runtime's pools settle within a few rounds, and what its
     * threads release after wgc_synchronize returns makes a single
     * round's figure swing by a round's uploads; so the peaks of the
     * first and last halves are compared. Unsubmitted writes once kept
     * every round's buffers: 6 MiB a round. */
    mem_use early = at[0], late = at[ROUNDS / 2];
    for (int r = 0; r < ROUNDS; r++) {
      mem_use *peak = r < ROUNDS / 2 ? &early : &late;
      if (at[r].heap > peak->heap)
        peak->heap = at[r].heap;
      if (at[r].rss > peak->rss)
        peak->rss = at[r].rss;
    }
    CHECK_MEM(early, late, 1 * MIB, 8 * MIB);
    wgc_destroy(ctx);
    case_end();
  }
}

/* ---- a context that outlives the allocation counter ----------------------
 * More allocations than 65,536 slots x 4,096 generations would allow:
 * through the API in make soak (about 2.7e8 allocations); in make test the
 * counter is moved close to each boundary and real allocations cross it. */
static bool churn(wgc_context *ctx, long n, long *failures) {
  wgc_ptr p;
  for (long i = 0; i < n; i++) {
    if (wgc_alloc(ctx, 4, &p) != WGC_OK || wgc_free(ctx, p) != WGC_OK) {
      if (++*failures == 1)
        CHECK(false, "allocation %ld failed: %s", i, wgc_last_error(ctx));
      return false;
    }
  }
  return true;
}

TEST(soak_table_lifetime) {
  if (!case_begin("soak_table_lifetime[cpu]"))
    return;
  wgc_context *ctx = create(WGC_BACKEND_CPU);
  if (!ctx) {
    case_end();
    return;
  }
  /* Live allocations that must survive everything, holding their values. */
  enum { KEEP = 8 };
  wgc_ptr keep[KEEP] = {0};
  float vals[KEEP][4];
  for (int i = 0; i < KEEP; i++) {
    for (int j = 0; j < 4; j++)
      vals[i][j] = (float)(i * 10 + j);
    keep[i] = dev_from(ctx, vals[i], 4);
  }
  /* Room below gone's id for the last step. */
  ctx->table.next_id = 100000;
  wgc_ptr gone = dev_alloc(ctx, 4);
  CHECK_OK(ctx, wgc_free(ctx, gone));
  long failures = 0, done = 0;
  float one = 1;
  double t0 = now_s();
  if (long_run() && !instrumented()) {
    /* 65,536 x 4,096 + 1 real allocations. */
    long n = 65536L * 4096L + 1;
    churn(ctx, n, &failures);
    done = n;
    CHECK(wgc_upload(ctx, gone, &one, 4) == WGC_ERR_INVALID_ARGUMENT,
          "an address freed %ld allocations ago is accepted", n);
  } else {
    uint32_t g = wgc_ptr_id(gone);
    /* 2^28 allocations after gone was freed, then real ones. */
    ctx->table.next_id = (uint32_t)((g + (1u << 28)) % WGC_ID_MAX);
    churn(ctx, 10000, &failures);
    CHECK(wgc_upload(ctx, gone, &one, 4) == WGC_ERR_INVALID_ARGUMENT,
          "an address freed 2^28 allocations ago is accepted");
    /* Across the wrap of the counter, skipping the live ids. */
    ctx->table.next_id = WGC_ID_MAX - 5000;
    churn(ctx, 10000, &failures);
    CHECK(wgc_upload(ctx, gone, &one, 4) == WGC_ERR_INVALID_ARGUMENT,
          "an address freed before the counter wrapped is accepted");
    /* gone stays rejected until the counter has gone all the way round
     * (wgc.h): then its id is issued again. */
    ctx->table.next_id = g - 1000;
    churn(ctx, 999, &failures);
    CHECK(wgc_upload(ctx, gone, &one, 4) == WGC_ERR_INVALID_ARGUMENT,
          "gone is accepted before the counter came round to it");
    wgc_ptr again = 0;
    CHECK_OK(ctx, wgc_alloc(ctx, 4, &again));
    CHECK(again == gone, "the id after a full round is %u, want %u",
          wgc_ptr_id(again), g);
    dev_free(ctx, again);
    done = 10000 + 10000 + 1000;
  }
  double t = now_s() - t0;
  for (int i = 0; i < KEEP; i++)
    if (keep[i]) {
      CHECK_DEVICE_EQUALS(ctx, keep[i], vals[i], 4, "a long-lived allocation");
      dev_free(ctx, keep[i]);
    }
  CHECK(failures == 0, "%ld allocations failed", failures);
  case_note(" (%ld real allocations in %.2f s%s)", done, t,
            long_run() ? "" : ", counter moved to each boundary");
  wgc_destroy(ctx);
  case_end();
}

/* ---- long chains of queued work -------------------------------------------
 * x += 1 (with |x| every 1000th op) queued n times without waiting, then
 * one download: exact in float32. */
TEST(soak_chain_ops) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "soak_chain_ops"))
      continue;
    wgc_context *ctx = test_ctx(test_backends[bi]);
    long n = count(100000, 1000000);
    enum { N = 16 };
    float x[N], ones[N], got[N];
    for (int i = 0; i < N; i++) {
      x[i] = 0.5f * (float)i;
      ones[i] = 1;
    }
    wgc_ptr dx = ctx ? dev_from(ctx, x, N) : 0;
    wgc_ptr d1 = ctx ? dev_from(ctx, ones, N) : 0;
    if (dx && d1) {
      double t0 = now_s();
      long failures = 0;
      for (long i = 0; i < n; i++) {
        wgc_status s = i % 1000 == 999
                           ? wgc_unary(ctx, WGC_UNARY_ABS, dx, dx, N)
                           : wgc_binary(ctx, WGC_BINARY_ADD, dx, d1, dx, N);
        if (s != WGC_OK && failures++ == 0)
          CHECK(false, "op %ld returned %s: %s", i, wgc_status_name(s),
                wgc_last_error(ctx));
      }
      double t_enqueue = now_s() - t0;
      if (dev_read(ctx, got, dx, N)) {
        long adds = n - n / 1000;
        for (int i = 0; i < N; i++)
          CHECK(got[i] == x[i] + (float)adds, "x[%d] = %.1f, want %.1f", i,
                got[i], x[i] + (float)adds);
      }
      double t = now_s() - t0;
      case_note(" (%ld ops: queued in %.2f s, done in %.2f s)", n, t_enqueue,
                t);
    }
    if (ctx) {
      dev_free(ctx, dx);
      dev_free(ctx, d1);
    }
    case_end();
  }
}

/* ---- many outstanding callbacks -------------------------------------------
 * n 4-byte downloads registered without waiting, then one
 * wgc_synchronize: each callback fires once, with its own value; the time
 * for 4n must stay near 4x the time for n. */
typedef struct dl_fx {
  unsigned char *calls;
  wgc_status bad;
} dl_fx;

typedef struct dl_arg {
  dl_fx *fx;
  long i;
} dl_arg;

static void dl_done(wgc_status s, void *user) {
  dl_arg *a = user;
  if (a->fx->calls[a->i] < 255)
    a->fx->calls[a->i]++;
  if (s != WGC_OK && a->fx->bad == WGC_OK)
    a->fx->bad = s;
}

/* Seconds for n downloads, or -1 when something failed. */
static double many_downloads(wgc_context *ctx, wgc_ptr src, long len, long n) {
  dl_fx fx = {.calls = calloc((size_t)n, 1)};
  dl_arg *args = calloc((size_t)n, sizeof *args);
  float *dst = falloc((size_t)n);
  double t0 = now_s();
  long failures = 0;
  for (long i = 0; i < n; i++) {
    args[i] = (dl_arg){&fx, i};
    if (wgc_download_async(ctx, &dst[i], at(src, (size_t)(i % len)), 4, dl_done,
                           &args[i]) != WGC_OK &&
        failures++ == 0)
      CHECK(false, "download %ld: %s", i, wgc_last_error(ctx));
  }
  CHECK_OK(ctx, wgc_synchronize(ctx));
  double t = now_s() - t0;
  long wrong_calls = 0, wrong_values = 0;
  for (long i = 0; i < n; i++) {
    wrong_calls += fx.calls[i] != 1;
    wrong_values += dst[i] != (float)(i % len);
  }
  CHECK(wrong_calls == 0, "%ld of %ld callbacks did not fire exactly once",
        wrong_calls, n);
  CHECK(wrong_values == 0, "%ld of %ld downloads hold a wrong value",
        wrong_values, n);
  CHECK(fx.bad == WGC_OK, "a callback reported %s", wgc_status_name(fx.bad));
  free(fx.calls);
  free(args);
  free(dst);
  return failures || wrong_calls || wrong_values ? -1 : t;
}

TEST(soak_outstanding_downloads) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "soak_outstanding_downloads"))
      continue;
    wgc_context *ctx = test_ctx(test_backends[bi]);
    long n = count(100000, 1000000);
    enum { LEN = 1000 };
    float v[LEN];
    for (int i = 0; i < LEN; i++)
      v[i] = (float)i;
    wgc_ptr src = ctx ? dev_from(ctx, v, LEN) : 0;
    if (src) {
      /* The best of a few runs where they are cheap, against noise. */
      int runs = 3;
      double t_small = 1e9, t_half = 1e9, t_big = 1e9;
      bool ok = true;
      for (int r = 0; ok && r < runs; r++) {
        double t = many_downloads(ctx, src, LEN, n / 4);
        ok = t >= 0;
        t_small = fmin(t_small, t);
      }
      /* Half way first: a cost that grows with the count shows there
       * already, before the full run takes minutes. */
      for (int r = 0; ok && r < runs; r++) {
        double t = many_downloads(ctx, src, LEN, n / 2);
        ok = t >= 0;
        t_half = fmin(t_half, t);
      }
      double floor_s = 0.05; /* below this only scheduling noise shows */
      /* Linear is 2x; the quadratic cost this guards against was 7x. */
      if (ok && t_half > 5 * t_small + floor_s) {
        case_note(" (%ld: %.3f s, %ld: %.3f s)", n / 4, t_small, n / 2, t_half);
        CHECK(false, "%ld downloads took %.2fx the time of %ld", n / 2,
              t_half / t_small, n / 4);
        ok = false;
      }
      for (int r = 0; ok && r < runs; r++) {
        double t = many_downloads(ctx, src, LEN, n);
        ok = t >= 0;
        t_big = fmin(t_big, t);
      }
      if (ok) {
        double ratio = t_big / fmax(t_small, 1e-6);
        case_note(" (%ld: %.3f s, %ld: %.3f s, ratio %.2f)", n / 4, t_small, n,
                  t_big, ratio);
        /* Linear is 4x, quadratic 16x; 8x, plus a quarter second of
         * scheduling on a loaded machine, still tells them apart. */
        CHECK(t_big < 8 * t_small + 5 * floor_s,
              "%ld downloads took %.2fx the time of %ld", n, ratio, n / 4);
      }
      dev_free(ctx, src);
    }
    case_end();
  }
}

/* ---- contexts on several threads ------------------------------------------
 * Each thread creates its own contexts, runs work on them and destroys
 * them, all at once (contexts are single-threaded, the process is not). */
typedef struct thread_job {
  wgc_backend b;
  int cycles, id;
  int failures;
  char error[256];
} thread_job;

static bool thread_cycle(thread_job *job, wgc_context *ctx) {
  enum { M = 48 };
  float a[M * M], out[M * M];
  for (int i = 0; i < M * M; i++)
    a[i] = (float)((i * 7 + job->id) % 13) - 6.0f;
  wgc_ptr da = 0, dc = 0;
  /* C = A A^T: small integers, exact in float32. */
  bool ok = wgc_alloc(ctx, sizeof a, &da) == WGC_OK &&
            wgc_alloc(ctx, sizeof a, &dc) == WGC_OK &&
            wgc_upload(ctx, da, a, sizeof a) == WGC_OK &&
            wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, M, M, M, 1.0f,
                     da, M, da, M, 0.0f, dc, M) == WGC_OK &&
            wgc_download(ctx, out, dc, sizeof out) == WGC_OK;
  if (!ok) {
    snprintf(job->error, sizeof job->error, "thread %d: %s", job->id,
             wgc_last_error(ctx));
    return false;
  }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++) {
      double want = 0;
      for (int k = 0; k < M; k++)
        want += (double)a[i * M + k] * a[j * M + k];
      if (out[i * M + j] != (float)want) {
        snprintf(job->error, sizeof job->error,
                 "thread %d: C[%d,%d] = %g, want %g", job->id, i, j,
                 out[i * M + j], want);
        return false;
      }
    }
  return true;
}

static void *thread_main(void *p) {
  thread_job *job = p;
  for (int c = 0; c < job->cycles && !job->failures; c++) {
    wgc_options opt = {.backend = job->b, .cpu_threads = 2};
    wgc_context *ctx = NULL;
    if (wgc_create(&opt, &ctx) != WGC_OK) {
      snprintf(job->error, sizeof job->error, "thread %d: wgc_create: %s",
               job->id, wgc_last_error(NULL));
      job->failures++;
      break;
    }
    if (!thread_cycle(job, ctx))
      job->failures++;
    wgc_destroy(ctx);
  }
  return NULL;
}

TEST(soak_threads_contexts) {
  for (int bi = 0; bi < 2; bi++) {
    if (!open_case(bi, "soak_threads_contexts"))
      continue;
    enum { THREADS = 4 };
    bool cpu = test_backends[bi] == WGC_BACKEND_CPU;
    int cycles = (int)(long_run() ? (cpu ? 400 : 40) : (cpu ? 40 : 4));
    thread_job jobs[THREADS];
    pthread_t t[THREADS];
    bool started[THREADS];
    double t0 = now_s();
    for (int i = 0; i < THREADS; i++) {
      jobs[i] = (thread_job){.b = test_backends[bi], .cycles = cycles, .id = i};
      started[i] = pthread_create(&t[i], NULL, thread_main, &jobs[i]) == 0;
      CHECK(started[i], "pthread_create failed");
    }
    for (int i = 0; i < THREADS; i++)
      if (started[i]) {
        pthread_join(t[i], NULL);
        CHECK(jobs[i].failures == 0, "%s", jobs[i].error);
      }
    case_note(" (%d threads x %d contexts in %.2f s)", THREADS, cycles,
              now_s() - t0);
    case_end();
  }
}
