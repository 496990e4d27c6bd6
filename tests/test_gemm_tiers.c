/* GEMM blocks that compile slowly start with a cheaper block standing in
 * (src/webgpu/gemm_select.c): the calls it serves give the same bits as
 * the block it stands in for, which is compiled once the calls have lost
 * its compile time, and never before. The engine's compile-time factor
 * makes that happen after one call here. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"
#include "webgpu/gemm_select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* c = a (m x k) * b (k x n), row-major, waiting for it; the pipelines
 * compiled so far. */
static size_t gemm_call(wgc_context *ctx, size_t m, size_t n, size_t k,
                        wgc_ptr a, wgc_ptr b, wgc_ptr c) {
  CHECK_OK(ctx, wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, m, n,
                         k, 1.0f, a, k, b, n, 0.0f, c, n));
  CHECK_OK(ctx, wgc_synchronize(ctx));
  return wgc_pipelines_compiled(ctx);
}

typedef struct tier_shape {
  size_t m, n, k;
} tier_shape;

/* 256^3 wants the 16x16 block on llvmpipe; the thin one is split along k
 * by the wanted block's tiles; the last has ragged edges everywhere. */
static const tier_shape SHAPES[] = {{256, 256, 256},
                                    {64, 64, 4000},
                                    {128, 256, 3000},
                                    {300, 200, 70},
                                    {130, 520, 33}};

TEST(gemm_tiers_same_bits) {
  int stand_ins = 0;
  bool expect_tiers = false;
  for (size_t si = 0; si < sizeof SHAPES / sizeof *SHAPES; si++) {
    const tier_shape *sh = &SHAPES[si];
    if (!case_begin("gemm_tiers[webgpu] m=%zu n=%zu k=%zu", sh->m, sh->n,
                    sh->k))
      continue;
    wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 0);
    if (!ctx) {
      case_end();
      continue;
    }
    wg_state *st = ctx->impl;
    /* llvmpipe's large blocks take over a second to compile */
    expect_tiers = st->pol.cpu_kernels && strstr(st->name, "llvmpipe");
    st->gemm_compile_scale = 1e-12; /* promoted after one call */
    size_t m = sh->m, n = sh->n, k = sh->k;
    float *a = falloc(m * k), *b = falloc(k * n);
    float *got[3] = {falloc(m * n), falloc(m * n), falloc(m * n)};
    double *want = dalloc(m * n);
    fill_uniform(a, m * k, -1, 1, 11 + (unsigned)si);
    fill_uniform(b, k * n, -1, 1, 21 + (unsigned)si);
    wgc_ptr da = dev_from(ctx, a, m * k), db = dev_from(ctx, b, k * n);
    wgc_ptr dc = dev_alloc(ctx, 4 * m * n);
    if (!da || !db || !dc)
      goto out;
    gemm_choice before = wg_gemm_choose(ctx, 1, m, n, k);
    size_t compiled[3];
    unsigned promoted_after_first = 0;
    for (int call = 0; call < 3; call++) {
      compiled[call] = gemm_call(ctx, m, n, k, da, db, dc);
      if (call == 0)
        promoted_after_first = st->gemm_promoted;
      dev_read(ctx, got[call], dc, m * n);
    }
    gemm_choice after = wg_gemm_choose(ctx, 1, m, n, k);
    ref_gemm(WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, m, n, k, 1.0, a, k, b,
             n, 0.0, NULL, n, want);
    double worst = 0;
    for (size_t i = 0; i < m * n; i++)
      worst = fmax(worst, fabs(got[0][i] - want[i]));
    CHECK(worst <= 1e-6 * (double)k, "first call off by %.3g", worst);
    CHECK(memcmp(got[0], got[1], 4 * m * n) == 0,
          "the promoted block's sums differ from the stand-in's");
    CHECK(memcmp(got[1], got[2], 4 * m * n) == 0,
          "the same call gave different bits");
    CHECK(compiled[2] == compiled[1], "the third call compiled a pipeline");
    CHECK(after.wanted == 0, "still standing in after the promotion");
    if (before.wanted) {
      stand_ins++;
      unsigned bit = 1u << (before.wanted - 1);
      CHECK(promoted_after_first & bit, "not promoted after one call");
      CHECK(compiled[1] == compiled[0] + 1,
            "the promotion compiled %zu pipelines, want 1",
            compiled[1] - compiled[0]);
      CHECK(after.tm * after.tn > before.tm * before.tn,
            "promoted to %ux%u from %ux%u", after.tm, after.tn, before.tm,
            before.tn);
      CHECK(before.split_bm == after.bm && before.split_bn == after.bn,
            "the stand-in split k by %ux%u, the block by %ux%u",
            before.split_bm, before.split_bn, after.bm, after.bn);
    } else {
      CHECK(compiled[1] == compiled[0], "a call with no stand-in compiled");
    }
    case_note(" (%ux%u%s, %zu pipelines)", before.tm, before.tn,
              before.wanted ? " standing in" : "", compiled[2]);
  out:
    dev_free(ctx, da);
    dev_free(ctx, db);
    dev_free(ctx, dc);
    free(a);
    free(b);
    for (int i = 0; i < 3; i++)
      free(got[i]);
    free(want);
    wgc_destroy(ctx);
    case_end();
  }
  if (case_begin("gemm_tiers[webgpu] llvmpipe stands in for 16x16 at 256^3")) {
    CHECK(!expect_tiers || stand_ins > 0,
          "no shape had a stand-in on llvmpipe's CPU kernels");
    case_end();
  }
}

/* At the real compile times a few calls of a small product lose far less
 * than the large block's compile: it is never compiled. WGC_GEMM_EAGER's
 * factor of 0 compiles it at once. */
TEST(gemm_tiers_rent) {
  if (!case_begin("gemm_tiers[webgpu] a few small calls never promote"))
    return;
  wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, 0);
  if (!ctx) {
    case_end();
    return;
  }
  wg_state *st = ctx->impl;
  enum { N = 256 };
  float *x = falloc(N * N);
  fill_uniform(x, N * N, -1, 1, 5);
  wgc_ptr da = dev_from(ctx, x, N * N), dc = dev_alloc(ctx, 4 * N * N);
  gemm_choice first = wg_gemm_choose(ctx, 1, N, N, N);
  size_t compiled[4];
  for (int call = 0; call < 4 && da && dc; call++)
    compiled[call] = gemm_call(ctx, N, N, N, da, da, dc);
  if (da && dc) {
    CHECK(st->gemm_promoted == 0, "promoted after 4 calls of 256^3");
    CHECK(compiled[3] == compiled[0], "later calls compiled %zu pipelines",
          compiled[3] - compiled[0]);
    if (first.wanted) {
      CHECK(first.rent > 0 && first.rent < 0.1,
            "a call of 256^3 loses %.3g s to the stand-in", first.rent);
      st->gemm_compile_scale = 0;
      gemm_choice eager = wg_gemm_choose(ctx, 1, N, N, N);
      CHECK(eager.wanted == 0 && eager.tm * eager.tn > first.tm * first.tn,
            "eager: %ux%u, stand-in %ux%u", eager.tm, eager.tn, first.tm,
            first.tn);
    }
  }
  dev_free(ctx, da);
  dev_free(ctx, dc);
  free(x);
  wgc_destroy(ctx);
  case_end();
}
