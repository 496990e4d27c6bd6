/* Callbacks that re-enter wgc, wgc_destroy inside a callback, and the
 * allocation table over a long life: the front end's promises in API.md's
 * Memory section, on both backends. */
#include "harness.h"
#include "util.h"

#include "internal.h"
#include "table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A callback's log: how often each callback fired, with which status, and
 * in which order. */
enum { LOG_MAX = 16 };
typedef struct cb_log {
  int calls[LOG_MAX];
  wgc_status status[LOG_MAX];
  int order[LOG_MAX * 4];
  int fired;
} cb_log;

typedef struct cb_arg {
  cb_log *log;
  int index;
  wgc_context *ctx;
  /* what the callback does besides logging */
  enum { DO_NOTHING, DO_SYNC_ASYNC, DO_DESTROY, DO_DOWNLOAD } action;
  struct cb_arg *next_arg; /* the callback it registers */
  float *dst;              /* DO_DOWNLOAD's destination */
  wgc_ptr src;
  wgc_status registered; /* what its registration returned */
} cb_arg;

static void logged(wgc_status s, void *user) {
  cb_arg *a = user;
  cb_log *l = a->log;
  l->calls[a->index]++;
  l->status[a->index] = s;
  if (l->fired < LOG_MAX * 4)
    l->order[l->fired] = a->index;
  l->fired++;
  switch (a->action) {
  case DO_NOTHING:
    break;
  case DO_SYNC_ASYNC:
    a->registered = wgc_synchronize_async(a->ctx, logged, a->next_arg);
    break;
  case DO_DESTROY:
    wgc_destroy(a->ctx);
    break;
  case DO_DOWNLOAD:
    a->registered =
        wgc_download_async(a->ctx, a->dst, a->src, 16, logged, a->next_arg);
    break;
  }
}

static wgc_context *fresh_ctx(wgc_backend b) { return new_ctx(b, 0); }

/* Queues enough GEMM work that a download behind it is still pending when
 * the next calls run (on the CPU backend the work is done at once). */
static void queue_work(wgc_context *ctx, wgc_ptr *a, wgc_ptr *c) {
  enum { N = 768 };
  *a = dev_alloc(ctx, N * N * 4);
  *c = dev_alloc(ctx, N * N * 4);
  if (!*a || !*c)
    return;
  for (int i = 0; i < 6; i++)
    CHECK_STATUS(wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, N, N,
                          N, 1.0f, *a, N, *a, N, 0.5f, *c, N),
                 WGC_OK);
}

/* A callback fired by wgc_poll registers new async work while an earlier
 * registration is still pending: nothing may be lost. */
TEST(life_register_in_callback) {
  for (int bi = 0; bi < 2; bi++) {
    if (!case_begin("life_register_in_callback[%s]",
                    backend_label(test_backends[bi])))
      continue;
    wgc_context *ctx = fresh_ctx(test_backends[bi]);
    if (!ctx) {
      case_end();
      continue;
    }
    cb_log log = {0};
    float host[16];
    wgc_ptr a = 0, c = 0;
    queue_work(ctx, &a, &c);
    cb_arg slow = {.log = &log, .index = 0};
    cb_arg third = {.log = &log, .index = 2};
    cb_arg empty = {.log = &log,
                    .index = 1,
                    .ctx = ctx,
                    .action = DO_SYNC_ASYNC,
                    .next_arg = &third};
    CHECK_STATUS(wgc_download_async(ctx, host, c, sizeof host, logged, &slow),
                 WGC_OK);
    CHECK_STATUS(wgc_download_async(ctx, NULL, 0, 0, logged, &empty), WGC_OK);
    /* The zero-byte download is due at once; its callback registers the
     * third, which must not fire in the same poll. */
    CHECK_STATUS(wgc_poll(ctx), WGC_OK);
    CHECK(empty.registered == WGC_OK, "registration in a callback: %s",
          wgc_status_name(empty.registered));
    CHECK(log.calls[2] == 0, "a registration made in a callback fired in the "
                             "same wgc_poll");
    CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
    for (int i = 0; i < 3; i++)
      CHECK(log.calls[i] == 1 && log.status[i] == WGC_OK,
            "callback %d fired %d times with %s", i, log.calls[i],
            wgc_status_name(log.status[i]));
    dev_free(ctx, a);
    dev_free(ctx, c);
    wgc_destroy(ctx);
    case_end();
  }
}

/* wgc_destroy inside a callback takes effect when the callback returns;
 * the callbacks after it still fire once, with their real status where
 * the backend can wait. */
TEST(life_destroy_in_callback) {
  for (int bi = 0; bi < 2; bi++) {
    for (int via_sync = 0; via_sync < 2; via_sync++) {
      if (!case_begin("life_destroy_in_callback[%s,%s]",
                      backend_label(test_backends[bi]),
                      via_sync ? "synchronize" : "poll"))
        continue;
      wgc_context *ctx = fresh_ctx(test_backends[bi]);
      if (!ctx) {
        case_end();
        continue;
      }
      cb_log log = {0};
      float host[3][16];
      wgc_ptr a = 0, c = 0;
      queue_work(ctx, &a, &c);
      cb_arg args[4];
      for (int i = 0; i < 4; i++)
        args[i] = (cb_arg){.log = &log, .index = i, .ctx = ctx};
      args[0].action = DO_DESTROY;
      /* The first is due at once; the others wait for the queued GEMMs. */
      CHECK_STATUS(wgc_download_async(ctx, NULL, 0, 0, logged, &args[0]),
                   WGC_OK);
      for (int i = 1; i < 4; i++)
        CHECK_STATUS(wgc_download_async(ctx, host[i - 1], c, sizeof host[0],
                                        logged, &args[i]),
                     WGC_OK);
      /* The context is gone once this returns. */
      if (via_sync)
        wgc_synchronize(ctx);
      else
        wgc_poll(ctx);
      CHECK(log.calls[0] == 1, "the destroying callback fired %d times",
            log.calls[0]);
      for (int i = 1; i < 4; i++) {
        CHECK(log.calls[i] == 1, "callback %d fired %d times", i, log.calls[i]);
        CHECK(log.status[i] == WGC_OK || log.status[i] == WGC_ERR_CANCELLED,
              "callback %d reported %s", i, wgc_status_name(log.status[i]));
      }
      for (int i = 0; i < log.fired && i < 4; i++)
        CHECK(log.order[i] == i, "callback %d fired in place %d", log.order[i],
              i);
      case_end();
    }
  }
}

/* While wgc_destroy fires callbacks, a registration returns CANCELLED,
 * never fires, and leaves its destination alone. */
TEST(life_register_during_destroy) {
  for (int bi = 0; bi < 2; bi++) {
    if (!case_begin("life_register_during_destroy[%s]",
                    backend_label(test_backends[bi])))
      continue;
    wgc_context *ctx = fresh_ctx(test_backends[bi]);
    if (!ctx) {
      case_end();
      continue;
    }
    cb_log log = {0};
    float data[4] = {1, 2, 3, 4}, first[4], late[4];
    for (int i = 0; i < 4; i++)
      late[i] = -7.0f;
    wgc_ptr x = dev_from(ctx, data, 4);
    cb_arg never = {.log = &log, .index = 1};
    cb_arg reg = {.log = &log,
                  .index = 0,
                  .ctx = ctx,
                  .action = DO_DOWNLOAD,
                  .next_arg = &never,
                  .dst = late,
                  .src = x,
                  .registered = WGC_OK};
    CHECK_STATUS(wgc_download_async(ctx, first, x, 16, logged, &reg), WGC_OK);
    wgc_destroy(ctx);
    CHECK(log.calls[0] == 1, "the pending callback fired %d times",
          log.calls[0]);
    CHECK(reg.registered == WGC_ERR_CANCELLED,
          "registering during destroy returned %s, want CANCELLED",
          wgc_status_name(reg.registered));
    CHECK(log.calls[1] == 0, "a registration made during destroy fired");
    for (int i = 0; i < 4; i++)
      CHECK(late[i] == -7.0f, "late[%d] was written: %g", i, late[i]);
    case_end();
  }
}

/* A callback fired by wgc_poll_all destroys another context: the walk over
 * live contexts must not touch it afterwards. */
TEST(life_destroy_other_in_poll_all) {
  for (int bi = 0; bi < 2; bi++) {
    if (!case_begin("life_destroy_other_in_poll_all[%s]",
                    backend_label(test_backends[bi])))
      continue;
    wgc_context *first = fresh_ctx(test_backends[bi]);
    wgc_context *second = first ? fresh_ctx(test_backends[bi]) : NULL;
    if (!second) {
      wgc_destroy(first);
      case_end();
      continue;
    }
    cb_log log = {0};
    /* Contexts are polled newest first: the second's callback destroys
     * the first, whatever the order. */
    cb_arg kill_first = {
        .log = &log, .index = 0, .ctx = first, .action = DO_DESTROY};
    cb_arg kill_second = {
        .log = &log, .index = 1, .ctx = second, .action = DO_DESTROY};
    CHECK_STATUS(wgc_download_async(second, NULL, 0, 0, logged, &kill_first),
                 WGC_OK);
    CHECK_STATUS(wgc_download_async(first, NULL, 0, 0, logged, &kill_second),
                 WGC_OK);
    wgc_poll_all();
    /* One callback destroyed the other context, whose callback then fired
     * from that destroy: both fired once, both contexts are gone. */
    CHECK(log.calls[0] == 1 && log.calls[1] == 1,
          "callbacks fired %d and %d times", log.calls[0], log.calls[1]);
    case_end();
  }
}

/* A long callback chain: each link registers the next. A registration made
 * in a callback never fires in the same pass, so neither the stack nor the
 * cost per link grows with the length. */
typedef struct chain {
  wgc_context *ctx;
  int left, fired;
  wgc_status bad;
} chain;

static void chain_link(wgc_status s, void *user) {
  chain *c = user;
  c->fired++;
  if (s != WGC_OK)
    c->bad = s;
  if (c->left-- > 0) {
    wgc_status r = wgc_synchronize_async(c->ctx, chain_link, c);
    if (r != WGC_OK)
      c->bad = r;
  }
}

TEST(life_callback_chain) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "life_callback_chain"))
      continue;
    /* Each WebGPU link waits for a work-done notice of the device. */
    int links = test_backends[bi] == WGC_BACKEND_CPU ? 10000 : 1000;
    chain c = {.ctx = ctx, .left = links};
    CHECK_STATUS(wgc_synchronize_async(ctx, chain_link, &c), WGC_OK);
    int passes = 0;
    while (c.fired <= links && passes < 2 * links + 10) {
      int before = c.fired;
      CHECK_STATUS(wgc_synchronize(ctx), WGC_OK);
      passes++;
      CHECK(c.fired - before <= 1, "one wgc_synchronize fired %d links",
            c.fired - before);
    }
    CHECK(c.fired == links + 1 && c.bad == WGC_OK,
          "%d of %d chained callbacks fired (%s)", c.fired, links + 1,
          wgc_status_name(c.bad));
    case_end();
  }
}

/* The counter behind address ids wraps and skips ids still live; freed
 * addresses stay stale until their id comes round again. */
TEST(life_table_wraps) {
  if (!case_begin("life_table_wraps[cpu]"))
    return;
  wgc_context *ctx = fresh_ctx(WGC_BACKEND_CPU);
  if (!ctx) {
    case_end();
    return;
  }
  wgc_ptr keep = dev_alloc(ctx, 8); /* id 1, live across the wrap */
  CHECK(wgc_ptr_id(keep) == 1, "first id %u", wgc_ptr_id(keep));
  ctx->table.next_id = WGC_ID_MAX - 2;
  wgc_ptr gone = dev_alloc(ctx, 8); /* WGC_ID_MAX - 1 */
  CHECK_STATUS(wgc_free(ctx, gone), WGC_OK);
  wgc_ptr last = dev_alloc(ctx, 8);
  wgc_ptr wrapped = dev_alloc(ctx, 8);
  CHECK(wgc_ptr_id(last) == WGC_ID_MAX, "id %u before the wrap",
        wgc_ptr_id(last));
  CHECK(wgc_ptr_id(wrapped) == 2, "id %u after the wrap (1 is live)",
        wgc_ptr_id(wrapped));
  float four[4] = {1, 2, 3, 4};
  CHECK_STATUS(wgc_upload(ctx, gone, four, 8), WGC_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(wgc_upload(ctx, keep, four, 8), WGC_OK);
  CHECK_STATUS(wgc_upload(ctx, wrapped, four, 8), WGC_OK);
  dev_free(ctx, keep);
  dev_free(ctx, last);
  dev_free(ctx, wrapped);
  wgc_destroy(ctx);
  case_end();
}

/* Many allocations over a context's life, with a few long-lived ones and
 * many freed ones: every allocation succeeds, the freed addresses stay
 * rejected, lookups stay fast (the index does not fill with deleted
 * entries). */
TEST(life_table_churn) {
  if (!case_begin("life_table_churn[cpu]"))
    return;
  wgc_context *ctx = fresh_ctx(WGC_BACKEND_CPU);
  if (!ctx) {
    case_end();
    return;
  }
  enum { LIVE = 1000, ROUNDS = 1 << 20 };
  wgc_ptr *live = calloc(LIVE, sizeof *live);
  wgc_ptr first_freed = 0;
  unsigned seed = 12345;
  int failures = 0;
  for (int i = 0; i < ROUNDS && failures < 3; i++) {
    seed = seed * 1103515245u + 12345u;
    unsigned k = (seed >> 8) % LIVE;
    if (live[k]) {
      if (!first_freed)
        first_freed = live[k];
      if (wgc_free(ctx, live[k]) != WGC_OK)
        failures++;
      live[k] = 0;
    } else if (wgc_alloc(ctx, 1 + (seed >> 20) % 256, &live[k]) != WGC_OK) {
      failures++;
      live[k] = 0;
    }
  }
  CHECK(failures == 0, "alloc/free failed: %s", wgc_last_error(ctx));
  float one = 1;
  CHECK_STATUS(wgc_upload(ctx, first_freed, &one, 4), WGC_ERR_INVALID_ARGUMENT);
  CHECK(ctx->table.live <= LIVE && ctx->table.capacity <= 2 * LIVE,
        "%u live records in %u slots", ctx->table.live, ctx->table.capacity);
  for (int k = 0; k < LIVE; k++)
    if (live[k])
      dev_free(ctx, live[k]);
  CHECK(ctx->table.live == 0, "%u records live after freeing all",
        ctx->table.live);
  free(live);
  wgc_destroy(ctx);
  case_end();
}
