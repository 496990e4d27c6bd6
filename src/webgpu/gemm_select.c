/* GEMM kernel, tile and invocation block per adapter and shape.
 *
 * GPUs (the GPU kernel form) run the workgroup-memory kernel over the tile
 * with the least padded work, weighted by how much slower the smaller
 * tiles run. CPU adapters (lavapipe, SwiftShader) run gemm_rv, whose
 * invocations read A and B straight from memory: there workgroup memory is
 * ordinary memory and barriers cost (SwiftShader switches coroutines at
 * each). Their best block depends on the SIMD width and the shape: the
 * lanes of one SIMD batch are WX neighbouring invocations along the
 * columns, so a block of tm x tn per invocation pads the rows to tm and the
 * columns to lanes * tn; larger blocks load fewer elements per
 * multiply-add until they spill. The weights are CPU time per padded
 * multiply-add, measured (process CPU time, so the other load of the
 * machine does not enter) at 256 to 1024 square:
 *
 *   block      16x16  16x8  8x8  4x8  4x4   (per invocation)
 *   llvmpipe     85    100  124  170  225   (8 lanes, AVX2)
 *   SwiftShader 115    100  120  162  215   (4 lanes)
 *
 * The workgroup is WX (the SIMD width) by WY invocations, WY as large as
 * leaves enough workgroups to keep every core busy while other work
 * shares them. Each choice falls back on gemm_small, one invocation per
 * output, where padding would cost more. */
#include "gemm_select.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tile_cfg {
  uint32_t bm, bn, tm, tn, weight;
} tile_cfg;

/* The workgroup-memory kernel's tiles (4x4 per invocation, k step 16);
 * weight: cost per padded multiply-add, in percent of the 64x64 tile's. */
static const tile_cfg TILES[] = {
    {64, 64, 4, 4, 100}, /* 256 invocations */
    {32, 32, 4, 4, 130}, /* 64 invocations */
    {16, 64, 4, 4, 130}, /* thin A: 64 invocations */
    {64, 16, 4, 4, 130}, /* thin B */
};
#define SHARED_BK 16u
/* gemm_small's cost per multiply-add, in the same percent: on llvmpipe it
 * runs about 2.5 times slower than the tiled kernel; on CPU adapters 4 to 8
 * times slower than the 16x8 register block. */
#define SMALL_WEIGHT_GPU 200.0
#define SMALL_WEIGHT_CPU 400.0

typedef struct block {
  uint32_t tm, tn, weight_llvmpipe, weight_other;
  /* milliseconds its pipeline takes to compile the first time (A and B
   * read as vec4s), measured on this 2-core machine */
  uint32_t compile_ms_llvmpipe, compile_ms_other;
} block;

static const block BLOCKS[] = {
    {16, 16, 85, 115, 5400, 700}, {16, 8, 100, 100, 1600, 440},
    {8, 8, 124, 120, 600, 260},   {4, 8, 170, 162, 310, 200},
    {4, 4, 225, 215, 350, 200},
};
_Static_assert(sizeof BLOCKS / sizeof *BLOCKS == GEMM_BLOCKS,
               "GEMM_BLOCKS counts BLOCKS");
_Static_assert(GEMM_BLOCKS <= sizeof((wg_state *)0)->gemm_rent /
                                  sizeof *((wg_state *)0)->gemm_rent,
               "wg_state.gemm_rent holds a slot per block");

/* Blocks that compile within this are used at once; larger ones (16x16
 * and 16x8 on llvmpipe, whose accumulators spill: 5.4 s and 1.6 s) first
 * let the best of those stand in, until the calls have lost as much time
 * to it as their compile takes (ski rental: never more than twice the
 * time the best offline choice would have taken). Once compiled, a block
 * is reused by every later call of the context, and Mesa's disk cache
 * makes later runs compile it in milliseconds. */
#define CHEAP_COMPILE_MS 1000u
/* Seconds per weighted multiply-add (weight 100) on this machine, which
 * turns the model's costs into the time a stand-in loses per call. */
#define SECONDS_PER_MAC_LLVMPIPE 1.3e-10
#define SECONDS_PER_MAC_OTHER 5e-10

/* What each padded output costs on llvmpipe beyond its multiply-adds, in
 * weight-100 multiply-adds (about 4 ns here): its store, bounds checks and
 * the invocation's set-up. It decides between a large block that pads the
 * columns and a small one that does not when k is short: 128 products of
 * 32^3 take 1.9 ms with 4x4 blocks and 2.4 ms with 16x8 ones, which pad
 * 32 columns to 64 (the weights alone favour 16x8). */
#define OUT_COST_LLVMPIPE 30.0

/* Workgroups that keep the cores busy: a few per core of a many-core CPU,
 * and small enough that one running late on a shared core does not leave
 * the others idle. */
#define CPU_MIN_GROUPS 32u
/* SIMD batches below which a product leaves cores idle. */
#define CPU_MIN_BATCHES 8u
#define CPU_MAX_WY 4u

static double padded(uint64_t n, uint64_t unit) {
  return (double)(wg_ceil_div(n, unit) * unit);
}

static gemm_choice small_choice(void) {
  return (gemm_choice){.kernel = GEMM_SMALL, .bk = 1};
}

static gemm_choice shared_choice(const tile_cfg *t) {
  return (gemm_choice){.kernel = GEMM_SHARED,
                       .bm = t->bm,
                       .bn = t->bn,
                       .bk = SHARED_BK,
                       .tm = t->tm,
                       .tn = t->tn};
}

static gemm_choice regs_choice(uint32_t tm, uint32_t tn, uint32_t wx,
                               uint32_t wy) {
  return (gemm_choice){.kernel = GEMM_REGS,
                       .bm = tm * wy,
                       .bn = tn * wx,
                       .bk = 1,
                       .tm = tm,
                       .tn = tn};
}

/* WGC_GEMM_VARIANT, for tests and benchmarks that run every variant:
 * "small", "shared:BMxBN" (a tile of TILES) or "regs:TMxTN:WXxWY" (tm of
 * 1..16, tn of 4, 8, 12 or 16, at most 256 invocations; four k a turn
 * where A allows) or "mv" (gemm_mv wherever B's layout allows it, else
 * gemm_small). Anything else
 * leaves the choice to the model. */
static bool forced(gemm_choice *out) {
  const char *v = getenv("WGC_GEMM_VARIANT");
  if (!v || !*v)
    return false;
  unsigned a, b, c, d;
  char end;
  if (!strcmp(v, "small") || !strcmp(v, "mv")) {
    *out = small_choice();
    return true;
  }
  if (sscanf(v, "shared:%ux%u%c", &a, &b, &end) == 2)
    for (size_t t = 0; t < sizeof TILES / sizeof *TILES; t++)
      if (TILES[t].bm == a && TILES[t].bn == b) {
        *out = shared_choice(&TILES[t]);
        return true;
      }
  if (sscanf(v, "regs:%ux%u:%ux%u%c", &a, &b, &c, &d, &end) == 4 && a >= 1 &&
      a <= 16 && b >= 4 && b <= 16 && b % 4 == 0 && c >= 1 && d >= 1 &&
      c * d <= 256) {
    *out = regs_choice(a, b, c, d);
    out->k4 = true; /* so that tests cover it on every adapter */
    return true;
  }
  return false;
}

static gemm_choice choose_gpu(uint64_t mm, uint64_t nn, uint64_t kk) {
  double useful = (double)mm * nn * kk, best = SMALL_WEIGHT_GPU / 100.0;
  gemm_choice c = small_choice();
  for (size_t t = 0; t < sizeof TILES / sizeof *TILES; t++) {
    const tile_cfg *cfg = &TILES[t];
    double work = padded(mm, cfg->bm) * padded(nn, cfg->bn) *
                  padded(kk, SHARED_BK) * cfg->weight / 100.0 / useful;
    if (work <= best) {
      best = work;
      c = shared_choice(cfg);
    }
  }
  return c;
}

/* Block b on an adapter of lanes SIMD lanes, the workgroup WX (the lanes)
 * by WY, WY as large as leaves CPU_MIN_GROUPS workgroups. */
static gemm_choice block_choice(const block *b, uint32_t lanes, bool llvmpipe,
                                uint64_t nb, uint64_t mm, uint64_t nn) {
  uint32_t wy = CPU_MAX_WY;
  uint64_t cols = (uint64_t)lanes * b->tn;
  while (wy > 1 &&
         nb * wg_ceil_div(mm, (uint64_t)b->tm * wy) * wg_ceil_div(nn, cols) <
             CPU_MIN_GROUPS)
    wy /= 2;
  gemm_choice c = regs_choice(b->tm, b->tn, lanes, wy);
  c.k4 = llvmpipe;
  return c;
}

static uint32_t compile_ms(const block *b, bool llvmpipe) {
  return llvmpipe ? b->compile_ms_llvmpipe : b->compile_ms_other;
}

/* Whether block i runs without standing in for it first. */
static bool block_ready(const wg_state *st, size_t i, bool llvmpipe) {
  return st->gemm_compile_scale == 0 ||
         compile_ms(&BLOCKS[i], llvmpipe) <= CHEAP_COMPILE_MS ||
         (st->gemm_promoted >> i & 1u);
}

/* One row of C (decoding) where gemm_mv does not apply (x W with W stored
 * k x n, say). The blocks above pad it to 4 or more rows and gemm_small
 * sums each output alone; a row block of 1 x 8 per invocation, 8
 * invocations a workgroup, four k a turn, ran 1.6-5.9x faster than either
 * on both adapters from 1 x 128 x 128 to 1 x 1024 x 1024 (SwiftShader
 * 1 x 128 x 512: 101 us against 207 for 4 x 4 blocks and 593 for
 * gemm_small; lavapipe 97 against 158 and 361). At 1 x 4096 x 4096 it was
 * still 2.7x faster than gemm_small on SwiftShader (reading A one k at a
 * time there, or 16 invocations a workgroup, would gain another 25%). */
#define ROW_TN 8u
#define ROW_WX 8u

static gemm_choice choose_cpu(const wg_state *st, uint64_t nb, uint64_t mm,
                              uint64_t nn, uint64_t kk) {
  if (mm == 1) {
    gemm_choice c = regs_choice(1, ROW_TN, ROW_WX, 1);
    c.k4 = true;
    return c;
  }
  bool llvmpipe = st->pol.llvmpipe;
  uint32_t lanes = st->pol.simd_lanes;
  double out_cost = llvmpipe ? OUT_COST_LLVMPIPE : 0.0;
  double small =
      (double)nb * mm * nn * (kk * SMALL_WEIGHT_CPU / 100.0 + out_cost);
  double cost[GEMM_BLOCKS], best_cost = small, ready_cost = small;
  size_t best = GEMM_BLOCKS, ready = GEMM_BLOCKS;
  for (size_t i = 0; i < GEMM_BLOCKS; i++) {
    const block *b = &BLOCKS[i];
    uint64_t cols = (uint64_t)lanes * b->tn;
    double batches =
        (double)nb * wg_ceil_div(mm, b->tm) * wg_ceil_div(nn, cols);
    cost[i] = (double)nb * padded(mm, b->tm) * padded(nn, cols) *
              (kk * (llvmpipe ? b->weight_llvmpipe : b->weight_other) / 100.0 +
               out_cost);
    if (batches < CPU_MIN_BATCHES)
      cost[i] *= CPU_MIN_BATCHES / batches;
    if (cost[i] < best_cost) {
      best_cost = cost[i];
      best = i;
    }
    if (cost[i] < ready_cost && block_ready(st, i, llvmpipe)) {
      ready_cost = cost[i];
      ready = i;
    }
  }
  if (best == GEMM_BLOCKS)
    return small_choice();
  gemm_choice want = block_choice(&BLOCKS[best], lanes, llvmpipe, nb, mm, nn);
  /* A stand-in only where a ready block beats gemm_small (whose split-K
   * differs, so the sums would change at the promotion). */
  if (ready == best || ready == GEMM_BLOCKS)
    return want;
  gemm_choice c = block_choice(&BLOCKS[ready], lanes, llvmpipe, nb, mm, nn);
  c.split_bm = want.bm;
  c.split_bn = want.bn;
  c.wanted = (unsigned)best + 1;
  c.rent = (ready_cost - best_cost) *
           (llvmpipe ? SECONDS_PER_MAC_LLVMPIPE : SECONDS_PER_MAC_OTHER);
  return c;
}

void wg_gemm_charge(wgc_context *ctx, const gemm_choice *c) {
  wg_state *st = ctx->impl;
  if (!c->wanted || c->wanted > GEMM_BLOCKS)
    return;
  size_t i = c->wanted - 1;
  bool llvmpipe = st->pol.llvmpipe;
  st->gemm_rent[i] += c->rent;
  if (st->gemm_rent[i] >=
      1e-3 * compile_ms(&BLOCKS[i], llvmpipe) * st->gemm_compile_scale)
    st->gemm_promoted |= 1u << i;
}

gemm_choice wg_gemm_choose(const wgc_context *ctx, uint64_t nb, uint64_t mm,
                           uint64_t nn, uint64_t kk) {
  gemm_choice c;
  if (forced(&c))
    return c;
  const wg_state *st = ctx->impl;
  if (!st->pol.cpu_kernels)
    return choose_gpu(mm, nn, kk);
  return choose_cpu(st, nb, mm, nn, kk);
}

bool wg_gemm_mv(const wgc_context *ctx, uint64_t mm, wgc_dtype bt) {
  const char *v = getenv("WGC_GEMM_VARIANT");
  if (v && *v)
    return !strcmp(v, "mv");
  const wg_state *st = ctx->impl;
  (void)bt;
  return st->pol.cpu_kernels && mm == 1;
}
