/* WebGPU plans (src/webgpu/plan.h): an op whose scratch cannot be
 * allocated records nothing, leaves its output as it was, keeps no scratch,
 * and the context works on afterwards. The engine's test hook fails the
 * nth scratch allocation of the next plans. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"
#include "webgpu/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A WebGPU context with its engine state; false (case failed) without. */
static bool open_webgpu(wgc_context **ctx, wg_state **st) {
  *ctx = new_ctx(WGC_BACKEND_WEBGPU, 0);
  if (!*ctx)
    return false;
  *st = (*ctx)->impl;
  return true;
}

/* The batch is empty: what was recorded has been submitted. */
static void settle(wgc_context *ctx) { CHECK_OK(ctx, wgc_synchronize(ctx)); }

/* A plan of three copies through two scratch buffers, the second of which
 * cannot be allocated: nothing runs, dst keeps its contents; without the
 * fault the same plan copies src to dst. */
TEST(plan_scratch_fault_records_nothing) {
  if (!case_begin("plan_scratch_fault_records_nothing"))
    return;
  wgc_context *ctx;
  wg_state *st;
  if (!open_webgpu(&ctx, &st)) {
    case_end();
    return;
  }
  enum { N = 300 };
  float src[N], dst[N], got[N];
  for (int i = 0; i < N; i++) {
    src[i] = (float)i * 0.5f - 7.0f;
    dst[i] = -1.0f - (float)i;
  }
  void *ms = NULL, *md = NULL;
  CHECK_OK(ctx, ctx->be->alloc(ctx, sizeof src, &ms));
  CHECK_OK(ctx, ctx->be->alloc(ctx, sizeof dst, &md));
  wgc_ref rs = {.mem = ms}, rd = {.mem = md};
  CHECK_OK(ctx, ctx->be->upload(ctx, rs, src, sizeof src));
  CHECK_OK(ctx, ctx->be->upload(ctx, rd, dst, sizeof dst));
  settle(ctx);

  for (int fault = 1; fault >= 0; fault--) {
    size_t scratch_before = st->scratch_count;
    wg_plan p;
    wg_plan_init(&p, ctx, "plan_test");
    wgc_ref a, b;
    CHECK_OK(ctx, wg_plan_scratch(&p, sizeof src, &a));
    CHECK_OK(ctx, wg_plan_copy(&p, a, rs, sizeof src));
    CHECK_OK(ctx, wg_plan_scratch(&p, sizeof src, &b));
    CHECK_OK(ctx, wg_plan_copy(&p, b, a, sizeof src));
    CHECK_OK(ctx, wg_plan_copy(&p, rd, b, sizeof src));
    st->fail_scratch = fault ? 2 : 0;
    wgc_status s = wg_plan_run(&p);
    st->fail_scratch = 0;
    if (fault) {
      CHECK(s == WGC_ERR_OUT_OF_MEMORY, "faulted plan returned %s",
            wgc_status_name(s));
      CHECK(has_word(wgc_last_error(ctx), "plan_test"),
            "message does not name the entry point: %s", wgc_last_error(ctx));
      CHECK(st->enc == 0 && st->dispatches == 0,
            "a faulted plan recorded work (%u dispatches)", st->dispatches);
      CHECK(st->scratch_count == scratch_before,
            "a faulted plan kept %zu scratch buffers",
            st->scratch_count - scratch_before);
      CHECK_OK(ctx, ctx->be->download(ctx, got, rd, sizeof got));
      CHECK(!memcmp(got, dst, sizeof got), "a faulted plan changed dst");
    } else {
      CHECK_OK(ctx, s);
      CHECK(st->dispatches == 3, "3 copies recorded as %u", st->dispatches);
      CHECK_OK(ctx, ctx->be->download(ctx, got, rd, sizeof got));
      CHECK(!memcmp(got, src, sizeof got), "the plan did not copy src");
    }
  }
  ctx->be->free(ctx, ms);
  ctx->be->free(ctx, md);
  wgc_destroy(ctx);
  case_end();
}

/* LayerNorm with scale and bias over rows longer than one run takes
 * scratch buffers (statistics, their second pass, the packed scale and
 * bias; rows of one run on CPU adapters take none, in one launch): the
 * second failing leaves the output untouched and records no launch
 * (before plans, the statistics pass had already been recorded). The same
 * call then matches the CPU backend. */
TEST(plan_layer_norm_fault_all_or_nothing) {
  if (!case_begin("plan_layer_norm_fault_all_or_nothing"))
    return;
  wgc_context *ctx, *cpu;
  wg_state *st;
  if (!open_webgpu(&ctx, &st)) {
    case_end();
    return;
  }
  cpu = new_ctx(WGC_BACKEND_CPU, 0);
  enum { ROWS = 3, LEN = 1500, N = ROWS * LEN };
  static float x[N], y0[N], sc[LEN], bi[LEN], got[N], want[N];
  fill_uniform(x, N, -2.0f, 2.0f, 11);
  fill_uniform(sc, LEN, 0.5f, 1.5f, 12);
  fill_uniform(bi, LEN, -1.0f, 1.0f, 13);
  for (int i = 0; i < N; i++)
    y0[i] = 1000.0f + (float)i;
  size_t shape[2] = {ROWS, LEN};
  wgc_ptr dx = dev_from(ctx, x, N), ds = dev_from(ctx, sc, LEN),
          db = dev_from(ctx, bi, LEN), dy = dev_from(ctx, y0, N);
  settle(ctx);

  st->fail_scratch = 2;
  wgc_status s = wgc_layer_norm(ctx, dx, ds, db, dy, shape, 2, 1, 1e-5f);
  unsigned fail_left = st->fail_scratch;
  st->fail_scratch = 0;
  CHECK(s == WGC_ERR_OUT_OF_MEMORY, "faulted layer_norm returned %s",
        wgc_status_name(s));
  CHECK(fail_left == 0, "the op took fewer than two scratch buffers");
  CHECK(has_word(wgc_last_error(ctx), "wgc_layer_norm"),
        "message does not name wgc_layer_norm: %s", wgc_last_error(ctx));
  CHECK(st->enc == 0 && st->dispatches == 0,
        "a faulted op recorded work (%u dispatches)", st->dispatches);
  dev_read(ctx, got, dy, N);
  CHECK(!memcmp(got, y0, sizeof got), "a faulted op changed its output");

  CHECK_OK(ctx, wgc_layer_norm(ctx, dx, ds, db, dy, shape, 2, 1, 1e-5f));
  dev_read(ctx, got, dy, N);
  if (cpu) {
    wgc_ptr cx = dev_from(cpu, x, N), cs = dev_from(cpu, sc, LEN),
            cb = dev_from(cpu, bi, LEN), cy = dev_alloc(cpu, sizeof want);
    CHECK_OK(cpu, wgc_layer_norm(cpu, cx, cs, cb, cy, shape, 2, 1, 1e-5f));
    dev_read(cpu, want, cy, N);
    double worst = 0;
    for (int i = 0; i < N; i++) {
      double e = fabs((double)got[i] - want[i]) / (1e-5 * fabs(want[i]) + 1e-5);
      worst = e > worst ? e : worst;
    }
    CHECK(worst <= 1.0, "after the fault: error %.3g of the bound", worst);
    wgc_destroy(cpu);
  }
  wgc_destroy(ctx);
  case_end();
}

/* Attention's unfused path (query rows beyond a 4 KiB binding) is one
 * plan: its scores and state scratch, the GEMMs and the softmax steps are
 * checked and allocated before any launch is recorded. A failing first or
 * second scratch allocation leaves O untouched and records nothing (before
 * plans, rows ran op by op with scratch outside any plan, and a fault left
 * the rows before it written); the same call then matches the float64
 * formula. */
TEST(plan_attention_unfused_fault_all_or_nothing) {
  if (!case_begin("plan_attention_unfused_fault_all_or_nothing"))
    return;
  wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 4096);
  if (!ctx) {
    case_end();
    return;
  }
  wg_state *st = ctx->impl;
  enum { B = 1, H = 2, HK = 1, SQ = 3, SK = 4, D = 1100, DV = 24 };
  wgc_attention_desc d = {.batch = B,
                          .heads = H,
                          .heads_kv = HK,
                          .seq_q = SQ,
                          .seq_kv = SK,
                          .head_dim = D,
                          .head_dim_v = DV,
                          .scale = 0.03f,
                          .causal = WGC_CAUSAL_BOTTOM_RIGHT};
  size_t nq = B * H * SQ * D, nk = B * HK * SK * D, nv = B * HK * SK * DV;
  size_t no = B * H * SQ * DV;
  float *q = falloc(nq), *k = falloc(nk), *v = falloc(nv);
  float *o0 = falloc(no), *got = falloc(no);
  fill_uniform(q, nq, -1, 1, 61);
  fill_uniform(k, nk, -1, 1, 62);
  fill_uniform(v, nv, -1, 1, 63);
  for (size_t i = 0; i < no; i++)
    o0[i] = 500.0f + (float)i;
  wgc_ptr dq = dev_from(ctx, q, nq), dk = dev_from(ctx, k, nk);
  wgc_ptr dv = dev_from(ctx, v, nv), dout = dev_from(ctx, o0, no);
  settle(ctx);
  for (unsigned fault = 1; fault <= 2; fault++) {
    size_t scratch_before = st->scratch_count;
    st->fail_scratch = fault;
    wgc_status s = wgc_attention(ctx, &d, dq, dk, dv, dout);
    unsigned fail_left = st->fail_scratch;
    st->fail_scratch = 0;
    CHECK(s == WGC_ERR_OUT_OF_MEMORY,
          "attention with scratch allocation %u failing returned %s", fault,
          wgc_status_name(s));
    CHECK(fail_left == 0, "the call took fewer than %u scratch buffers", fault);
    CHECK(has_word(wgc_last_error(ctx), "wgc_attention"),
          "message does not name wgc_attention: %s", wgc_last_error(ctx));
    CHECK(st->enc == 0 && st->dispatches == 0,
          "a faulted call recorded work (%u dispatches)", st->dispatches);
    CHECK(st->scratch_count == scratch_before,
          "a faulted call kept %zu scratch buffers",
          st->scratch_count - scratch_before);
    dev_read(ctx, got, dout, no);
    CHECK(!memcmp(got, o0, 4 * no), "a faulted call changed O");
  }
  CHECK_OK(ctx, wgc_attention(ctx, &d, dq, dk, dv, dout));
  if (dev_read(ctx, got, dout, no)) {
    double *want = dalloc(no);
    ref_attention(&d, q, k, v, want);
    double worst = 0;
    for (size_t i = 0; i < no; i++)
      worst = fmax(worst, fabs(got[i] - want[i]));
    CHECK(worst <= 1e-5 * D + 4e-6, "after the faults: |error| %.3g", worst);
    free(want);
  }
  dev_free(ctx, dq);
  dev_free(ctx, dk);
  dev_free(ctx, dv);
  dev_free(ctx, dout);
  free(q);
  free(k);
  free(v);
  free(o0);
  free(got);
  wgc_destroy(ctx);
  case_end();
}

/* Bind groups are made for every launch of a plan before the first is
 * recorded: the unfused attention path's plan spans more than one batch,
 * and a bind group failing at its first, middle (after the first batch's
 * end) or last launch records nothing, submits nothing, keeps no scratch
 * and leaves O untouched (before, the launches ahead of it stood, and a
 * full batch of them had been submitted). */
TEST(plan_bind_group_fault_all_or_nothing) {
  if (!case_begin("plan_bind_group_fault_all_or_nothing"))
    return;
  wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 4096);
  if (!ctx) {
    case_end();
    return;
  }
  wg_state *st = ctx->impl;
  enum { B = 1, H = 2, HK = 1, SQ = 5, SK = 6, D = 1100, DV = 24 };
  wgc_attention_desc d = {.batch = B,
                          .heads = H,
                          .heads_kv = HK,
                          .seq_q = SQ,
                          .seq_kv = SK,
                          .head_dim = D,
                          .head_dim_v = DV,
                          .scale = 0.03f,
                          .causal = WGC_CAUSAL_TOP_LEFT};
  size_t nq = B * H * SQ * D, nk = B * HK * SK * D, nv = B * HK * SK * DV;
  size_t no = B * H * SQ * DV;
  float *q = falloc(nq), *k = falloc(nk), *v = falloc(nv);
  float *o0 = falloc(no), *got = falloc(no);
  fill_uniform(q, nq, -1, 1, 71);
  fill_uniform(k, nk, -1, 1, 72);
  fill_uniform(v, nv, -1, 1, 73);
  for (size_t i = 0; i < no; i++)
    o0[i] = -300.0f - (float)i;
  wgc_ptr dq = dev_from(ctx, q, nq), dk = dev_from(ctx, k, nk);
  wgc_ptr dv = dev_from(ctx, v, nv), dout = dev_from(ctx, o0, no);
  settle(ctx);

  /* How many bind groups the call makes, counted by the hook. */
  const unsigned lots = 1u << 30;
  st->fail_bind_group = lots;
  CHECK_OK(ctx, wgc_attention(ctx, &d, dq, dk, dv, dout));
  unsigned groups = lots - st->fail_bind_group;
  st->fail_bind_group = 0;
  CHECK(groups > WG_BATCH_DISPATCHES,
        "the plan makes %u bind groups, not more than a batch", groups);
  case_note(" (%u bind groups)", groups);
  CHECK_OK(ctx, wgc_upload(ctx, dout, o0, 4 * no));
  settle(ctx);

  unsigned faults[3] = {1, WG_BATCH_DISPATCHES + 2, groups};
  for (int f = 0; f < 3; f++) {
    size_t scratch_before = st->scratch_count;
    st->fail_bind_group = faults[f];
    wgc_status s = wgc_attention(ctx, &d, dq, dk, dv, dout);
    unsigned left = st->fail_bind_group;
    st->fail_bind_group = 0;
    CHECK(s == WGC_ERR_DEVICE, "bind group %u failing: attention returned %s",
          faults[f], wgc_status_name(s));
    CHECK(left == 0, "the call made fewer than %u bind groups", faults[f]);
    CHECK(has_word(wgc_last_error(ctx), "wgc_attention"),
          "message does not name wgc_attention: %s", wgc_last_error(ctx));
    CHECK(st->enc == 0 && st->dispatches == 0,
          "bind group %u failing: the call recorded work (%u dispatches)",
          faults[f], st->dispatches);
    CHECK(st->scratch_count == scratch_before,
          "bind group %u failing: the call kept %zu scratch buffers", faults[f],
          st->scratch_count - scratch_before);
    dev_read(ctx, got, dout, no);
    CHECK(!memcmp(got, o0, 4 * no), "bind group %u failing changed O",
          faults[f]);
  }
  CHECK_OK(ctx, wgc_attention(ctx, &d, dq, dk, dv, dout));
  if (dev_read(ctx, got, dout, no)) {
    double *want = dalloc(no);
    ref_attention(&d, q, k, v, want);
    double worst = 0;
    for (size_t i = 0; i < no; i++)
      worst = fmax(worst, fabs(got[i] - want[i]));
    CHECK(worst <= 1e-5 * D + 4e-6, "after the faults: |error| %.3g", worst);
    free(want);
  }
  dev_free(ctx, dq);
  dev_free(ctx, dk);
  dev_free(ctx, dv);
  dev_free(ctx, dout);
  free(q);
  free(k);
  free(v);
  free(o0);
  free(got);
  wgc_destroy(ctx);
  case_end();
}

/* Launch parameters equal to the arena's last slot reuse it (and so the
 * bind group), across ops and across plans; other parameters take a new
 * slot, and a batch that ends starts the arena afresh. Results stay right
 * through all of it. */
TEST(plan_arena_slots) {
  if (!case_begin("plan_arena_slots"))
    return;
  wgc_context *ctx;
  wg_state *st;
  if (!open_webgpu(&ctx, &st)) {
    case_end();
    return;
  }
  enum { N = 200 };
  float x[N], got[N];
  fill_uniform(x, N, -3.0f, 3.0f, 81);
  wgc_ptr da = dev_from(ctx, x, N), db = dev_alloc(ctx, sizeof x);
  settle(ctx);

  /* neg of neg ... in place: one slot for the whole chain */
  CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_NEG, da, db, N));
  size_t first = st->arena_used;
  CHECK(first > 0, "the first launch wrote no parameters");
  unsigned chain = 9; /* db = -x after an odd count */
  for (unsigned i = 1; i < chain; i++)
    CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_NEG, db, db, N));
  CHECK(st->arena_used == first && st->dispatches == chain,
        "a chain of one op took %zu arena bytes, %u dispatches (want %zu, %u)",
        st->arena_used, st->dispatches, first, chain);
  /* other parameters take a new slot; another op with the same ones (the
   * op is a kernel constant) keeps it */
  CHECK_OK(ctx, wgc_unary_params(ctx, WGC_UNARY_CLIP, -2.0f, 2.0f, db, db, N));
  size_t second = st->arena_used;
  CHECK(second > first, "other parameters reused the slot");
  CHECK_OK(ctx, wgc_unary_params(ctx, WGC_UNARY_HARD_SIGMOID, -2.0f, 2.0f, db,
                                 db, N));
  CHECK(st->arena_used == second, "the same parameters took a new slot");
  CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_ABS, db, db, N));
  CHECK(st->arena_used > second, "other parameters reused the slot");
  /* want: hard_sigmoid(-2, 2) of clip(-x, -2, 2), exact in float */
  float want[N];
  for (int i = 0; i < N; i++) {
    double c = fmin(fmax(-(double)x[i], -2.0), 2.0);
    want[i] = (float)fmin(fmax(-2.0 * c + 2.0, 0.0), 1.0);
  }
  dev_read(ctx, got, db, N);
  unsigned bad = 0;
  for (int i = 0; i < N; i++)
    bad += got[i] != want[i];
  CHECK(bad == 0, "%u of %d elements wrong after the chain", bad, N);

  /* A chain longer than a batch (an odd count): ends batches, stays
   * right. */
  for (unsigned i = 0; i < 2 * WG_BATCH_DISPATCHES + 3; i++)
    CHECK_OK(ctx, wgc_unary(ctx, WGC_UNARY_NEG, db, db, N));
  CHECK(st->dispatches == 3, "%u dispatches left in the batch, want 3",
        st->dispatches);
  dev_read(ctx, got, db, N);
  bad = 0;
  for (int i = 0; i < N; i++)
    bad += got[i] != -want[i];
  CHECK(bad == 0, "%u of %d elements wrong after the long chain", bad, N);
  dev_free(ctx, da);
  dev_free(ctx, db);
  wgc_destroy(ctx);
  case_end();
}
