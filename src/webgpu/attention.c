/* Scaled-dot-product attention on WebGPU: one fused kernel
 * (kernels/attention.wgsl) with an online softmax, so device memory stays
 * O(seq * head_dim) and no score matrix is stored anywhere. head_dim and
 * head_dim_v <= 64 run the "rows" shape (one query row per invocation, up
 * to 64 per workgroup), larger ones the "tiles" shape (16 rows per
 * workgroup, up to 256 output dims, more workgroups past that). Tensors larger
 * than one storage binding are split over batch*heads into several launches,
 * all planned before the first is recorded. Operands are addressed through
 * their element strides (packed QKV, [batch, seq, heads, dim], a KV cache
 * longer than seq_kv): a launch binds, for each operand, the window from
 * the first to the last element its heads, rows and keys touch, and the
 * kernel subtracts the window's start (Params qs.w etc.). The mask is a
 * fifth operand, bound the same way; softcap and the mask are consts of
 * the kernel's pipeline, so calls without them run the kernels as before.
 * On CPU adapters (attn_form) attention_block.wgsl runs instead (no
 * barriers; head sizes up to 512); decoding there (too few query
 * rows to give every SIMD lane one) runs attention_block over blocks of
 * keys, all in one launch, and the split-KV combine below merges them
 * (states_path).
 *
 * Where one head does not bind (its Q/O or K/V beyond a binding, or the
 * windows of Q, K, V and O sharing an allocation), the split path takes it
 * head by head: launches over blocks of query rows (the mask sees global
 * row and key indices through Params), and, when one head's K/V is still
 * too large, over blocks of keys too: each key block leaves its rows'
 * softmax states (unnormalised output, running max m, denominator l) in
 * scratch, and kernels/attention_combine.wgsl merges them (split-KV, as
 * flash-decoding: O = sum_b exp(m_b - M) O_b / sum_b exp(m_b - M) l_b,
 * zeros where no key is visible), in rounds of as many blocks as one
 * binding holds. A state row also has room for what only the combine can
 * decide (state_floats): which infinities and NaN of V still reach the row
 * once the max over all blocks is known. Both paths emit into a wg_plan (the
 * split path halving its windows until every launch binds), so nothing is
 * enqueued unless all of it can run.
 *
 * Typed operands (f16, bf16) bind as wg_typed_operand windows and are
 * read through their accessors, in elements of their own type. The fused
 * kernels walk a row whose sums end non-finite again with its output row
 * as the accumulator (attn_fix), which a 2-byte O cannot be: a typed O
 * takes the states form (states_path: one launch over every head writing
 * f32 states to scratch, then the combine, which writes O rounded once),
 * or the split path where that does not fit one launch. */
#include "plan.h"

#include <inttypes.h>
#include <stdio.h>

/* query rows per workgroup of the two kernel shapes (kernels/attention.wgsl) */
#define ATTN_ROWS_BQ 64u /* at most */
#define ATTN_TILES_BQ 16u
/* attention_block: the largest head_dim (and head_dim_v) */
#define ATTN_BLOCK_MAX_HD 512u
/* attention_block: query rows per invocation, so each K/V element loaded
 * serves that many rows. 4 against 2 at head_dim 128 (8 heads, seq 128
 * and 512, alternated): lavapipe 1.5-1.7x, SwiftShader 1.2x faster. But
 * the pipeline's compile time grows with R, and in Chromium on
 * SwiftShader it gates a page's first result (the demo decoder's first
 * pass waited 1.5 s for it at R = 4, 0.95 s at 2, 0.7 s at 1), while
 * lavapipe's compiled code persists in Mesa's cache: 4 on llvmpipe, 2
 * elsewhere. */
static unsigned block_rows(const wgc_context *ctx) {
  return wg_policy_of(ctx)->llvmpipe ? 4u : 2u;
}
/* attention_block: workgroup memory for output accumulators, the WebGPU
 * default limit (at ATTN_BLOCK_MAX_HD, 2 invocations of 4 rows fit) */
#define ATTN_BLOCK_WG_BYTES 16384u
/* Extras per dim of a split-KV state row (ATTN_X, attention_common.wgsl) */
#define ATTN_EXTRAS 4u

/* Floats of a split-KV state row of head_dim_v hdv: the unnormalised
 * output, m and l, then ATTN_EXTRAS per dim that attn_fix writes where a
 * block's sum ended non-finite (the finite part, and the largest score of
 * a key holding +inf, -inf, NaN), for the combine to decide. */
static uint64_t state_floats(uint64_t hdv) {
  return (1 + ATTN_EXTRAS) * hdv + 2;
}

typedef struct attn_params {
  uint32_t off[8];
  uint32_t heads, heads_kv, group, seq_q;
  uint32_t seq_kv, head_dim, head_dim_v, qblocks;
  uint32_t dgroups, bh_base, bh_count, causal;
  float scale, softcap;
  uint32_t q_first, k_first;
  uint32_t gq, gkv, o_stride, kb_keys;
  uint32_t qs[4], ks[4], vs[4], os[4], ms[4]; /* batch, head, seq, origin */
} attn_params;

typedef struct combine_params {
  uint32_t off[4];
  uint32_t rows, hd, nblk, last;
  uint32_t o_rs, rq, heads, o_hs;
  uint32_t o_bs, o_org, pad[2];
} combine_params;

/* batch*heads_kv + kv head read by query head bh (= batch*heads + head). */
static uint64_t kv_index(const wgc_attention_desc *d, uint64_t bh) {
  uint64_t group = d->heads / d->heads_kv;
  return bh / d->heads * d->heads_kv + bh % d->heads / group;
}

/* Params of a launch of the fused kernels over Q heads [bh0, bh0 + cnt),
 * all rows and keys of the call d, qblocks query blocks and dgroups dim
 * groups a head; launches over fewer rows or keys, or writing states, set
 * those fields after. */
static attn_params launch_params(const wgc_attention_desc *d, uint64_t bh0,
                                 uint64_t cnt, uint64_t qblocks,
                                 uint64_t dgroups) {
  return (attn_params){
      .heads = (uint32_t)d->heads,
      .heads_kv = (uint32_t)d->heads_kv,
      .group = (uint32_t)(d->heads / d->heads_kv),
      .seq_q = (uint32_t)d->seq_q,
      .seq_kv = (uint32_t)d->seq_kv,
      .head_dim = (uint32_t)d->head_dim,
      .head_dim_v = (uint32_t)d->head_dim_v,
      .qblocks = (uint32_t)qblocks,
      .dgroups = (uint32_t)dgroups,
      .bh_base = (uint32_t)bh0,
      .bh_count = (uint32_t)cnt,
      .causal = (uint32_t)d->causal,
      .scale = d->scale,
      .softcap = d->softcap,
      .gq = (uint32_t)d->seq_q,
      .gkv = (uint32_t)d->seq_kv,
  };
}

static uint64_t pow2_at_least(uint64_t x) {
  uint64_t p = 1;
  while (p < x)
    p <<= 1;
  return p;
}

/* The smallest and largest b*st.batch + h*st.head over the heads
 * [h0, h0 + cnt) numbered b*per + h (strides need not grow with the
 * numbering: [heads, batch, ...] layouts are allowed). */
static void heads_range(wgc_attention_strides st, uint64_t per, uint64_t h0,
                        uint64_t cnt, uint64_t *lo, uint64_t *hi) {
  uint64_t b0 = h0 / per, b1 = (h0 + cnt - 1) / per;
  uint64_t x0 = h0 % per, x1 = (h0 + cnt - 1) % per;
  if (b0 == b1) {
    *lo = b0 * st.batch + x0 * st.head;
    *hi = b0 * st.batch + x1 * st.head;
    return;
  }
  uint64_t a = b0 * st.batch + x0 * st.head, c = (b0 + 1) * st.batch;
  *lo = a < c ? a : c;
  a = b1 * st.batch + x1 * st.head;
  c = (b1 - 1) * st.batch + (per - 1) * st.head;
  *hi = a > c ? a : c;
}

/* A launch's share of the call: Q heads [bh0, bh0 + cnt), their query rows
 * [q0, q0 + qn) and keys [k0, k0 + kn). */
typedef struct attn_region {
  uint64_t bh0, cnt, q0, qn, k0, kn;
} attn_region;

/* The window of a strided operand of type t over heads [h0, h0 + cnt)
 * (numbered per batch), rows [r0, r0 + rn) of row elements each, each row
 * from its element e0 on; org[3] its first element. */
static wg_operand window(const char *name, wgc_ref base, wgc_dtype t,
                         bool write, wgc_attention_strides st, uint64_t per,
                         uint64_t h0, uint64_t cnt, uint64_t r0, uint64_t rn,
                         uint64_t e0, uint64_t row, uint32_t org[4]) {
  uint64_t lo, hi;
  heads_range(st, per, h0, cnt, &lo, &hi);
  lo += r0 * st.seq + e0;
  hi += (r0 + rn - 1) * st.seq + e0 + row;
  org[0] = (uint32_t)st.batch;
  org[1] = (uint32_t)st.head;
  org[2] = (uint32_t)st.seq;
  org[3] = (uint32_t)lo;
  return wg_typed_operand(name, base, t, lo, hi - lo, write);
}

/* The operands (q, k, v, o, then the mask if any) and the strides of
 * Params of the launch over region r; states (PARTIAL output) replace o
 * when given. Returns the operand count. With no keys K and V are bound
 * (4 bytes) but never read. */
static unsigned region_operands(const wgc_attention_args *a,
                                const attn_region *r, const wg_operand *states,
                                wg_operand ops[5], attn_params *p) {
  const wgc_attention_desc *d = &a->d;
  uint64_t kv0 = kv_index(d, r->bh0);
  uint64_t kv_cnt = kv_index(d, r->bh0 + r->cnt - 1) - kv0 + 1;
  ops[0] = window("q", a->q, d->q_type, false, d->q_stride, d->heads, r->bh0,
                  r->cnt, r->q0, r->qn, 0, d->head_dim, p->qs);
  if (r->kn) {
    ops[1] = window("k", a->k, d->k_type, false, d->k_stride, d->heads_kv, kv0,
                    kv_cnt, r->k0, r->kn, 0, d->head_dim, p->ks);
    ops[2] = window("v", a->v, d->v_type, false, d->v_stride, d->heads_kv, kv0,
                    kv_cnt, r->k0, r->kn, 0, d->head_dim_v, p->vs);
  } else {
    ops[1] = wg_typed_operand("k", a->k, d->k_type, 0, 1, false);
    ops[2] = wg_typed_operand("v", a->v, d->v_type, 0, 1, false);
  }
  if (states)
    ops[3] = *states;
  else
    ops[3] = window("o", a->o, d->o_type, true, d->o_stride, d->heads, r->bh0,
                    r->cnt, r->q0, r->qn, 0, d->head_dim_v, p->os);
  if (!a->has_mask)
    return 4;
  /* rows of the mask start at key k0 and hold kn keys */
  ops[4] = window("mask", a->mask, d->mask_type, false, d->mask_stride,
                  d->heads, r->bh0, r->cnt, r->q0, r->qn, r->k0, r->kn, p->ms);
  return 5;
}

/* Whether every operand of a launch stays within window bytes (the
 * kernel's u32 indexing) and the launch binds as it is. */
static bool ops_fit(const wg_plan *wp, const wg_operand *ops, unsigned nops,
                    uint64_t window_bytes) {
  for (unsigned i = 0; i < nops; i++)
    if (ops[i].bytes > window_bytes)
      return false;
  return wg_plan_fits(wp, ops, nops);
}

/* How a call is split into launches over runs of consecutive Q heads. */
typedef struct attn_plan {
  const wg_plan *wp; /* the plan the launches go to */
  const wgc_attention_args *a;
  uint64_t window;    /* usable bytes of one operand's binding */
  uint64_t max_heads; /* Q heads per launch by the grid */
} attn_plan;

/* Whether the launch over Q heads [bh0, bh0 + cnt) binds. */
static bool chunk_fits(const attn_plan *pl, uint64_t bh0, uint64_t cnt) {
  const wgc_attention_desc *d = &pl->a->d;
  attn_region r = {bh0, cnt, 0, d->seq_q, 0, d->seq_kv};
  wg_operand ops[5];
  attn_params p;
  unsigned n = region_operands(pl->a, &r, NULL, ops, &p);
  return ops_fit(pl->wp, ops, n, pl->window);
}

/* The number of Q heads of the launch starting at bh0 (at most left);
 * false when not even one head can be bound. */
static bool next_chunk(const attn_plan *pl, uint64_t bh0, uint64_t left,
                       uint64_t *cnt) {
  uint64_t n = left < pl->max_heads ? left : pl->max_heads;
  if (!chunk_fits(pl, bh0, n)) {
    uint64_t lo = 0, hi = n; /* lo fits (or 0), hi does not */
    while (hi - lo > 1) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (chunk_fits(pl, bh0, mid))
        lo = mid;
      else
        hi = mid;
    }
    n = lo;
  }
  *cnt = n ? n : 1;
  return n > 0;
}

/* The kernel shape for head_dim hd and (at most) seq_q rows per head: see
 * wg_attention. */
typedef struct attn_shape {
  bool rows;
  uint64_t bq, dgroups;
  char kernel[112];
  unsigned vec4; /* wg_launch.vec4 */
  char consts[320];
} attn_shape;

/* The fused kernel forms: ATTN_STAGED kernels/attention.wgsl (K/V tiles
 * staged in workgroup memory: GPUs), ATTN_BLOCK attention_block.wgsl (no
 * barriers: CPU adapters). */
enum { ATTN_STAGED, ATTN_BLOCK };

/* The form of a call on this adapter: on CPU adapters attention_block up
 * to head sizes of 512 (several rows per invocation; decoding over key
 * blocks, states_path), the staged form past them. It replaced
 * attention_regs.wgsl (one row per invocation, its Q row and accumulator
 * in private arrays), which decoded head sizes 65..512 alone: 8 heads, 1
 * row, 512 keys, head_dim 128 now take 3.1 ms on SwiftShader against 60,
 * 1.0 on lavapipe against 6.6; at head_dim 256, 300 keys, 6.4 against 70
 * and 3.2 against 17, compiled in 1.6 s against 4.0-4.4 (lavapipe, no
 * shader cache); 64 rows at head_dim 256 (the staged form before) 20
 * against 102 ms and 7.2 against 29. */
static unsigned attn_form(const wgc_context *ctx, uint64_t hd, uint64_t hdv) {
  uint64_t w = hd > hdv ? hd : hdv;
  if (!wg_policy_of(ctx)->cpu_kernels || w > ATTN_BLOCK_MAX_HD)
    return ATTN_STAGED;
  return ATTN_BLOCK;
}

/* The most keys one launch may cover in form form, within the adapter's
 * loop budget (gpu.h): longer ranges run as key blocks with the split-KV
 * combine. Measured on Mesa 22.3, attention_block's loops come to at most
 * RD4 + RV4 + 8 * R + 8 a block (counting its loops over rows, should the
 * compiler keep them); kernels/attention.wgsl lost keys from 49929 keys at
 * head_dim 4, 15404 at 64, 12334 at 256, 7227 at 1000 (65535 iterations;
 * head_dim_v the same); the caps below stay within the budget, half of that,
 * taking the larger head size for both. The fix-up pass of a row whose sums
 * end non-finite (attn_fix) costs RD4 + RV4 + 1 per step of 16 keys
 * (attention_fix16.wgsl, llvmpipe) or of one (attention_fix1.wgsl), and
 * 2 * RV4 + 2 more: capped to the other half for its rows (attention_block's
 * R, one elsewhere). */
static uint64_t max_keys(const wgc_context *ctx, uint64_t hd, uint64_t hdv,
                         unsigned form) {
  const wg_policy *pol = wg_policy_of(ctx);
  uint64_t budget = pol->loop_budget;
  uint64_t w = hd > hdv ? hd : hdv, rd4 = (hd + 3) / 4, rv4 = (hdv + 3) / 4;
  if (!budget)
    return UINT64_MAX;
  uint64_t r = form == ATTN_BLOCK ? block_rows(ctx) : 1;
  uint64_t fix = (budget - r * (2 * rv4 + 2)) / (r * (rd4 + rv4 + 1)) *
                 (pol->llvmpipe ? 16 : 1);
  uint64_t keys = form == ATTN_BLOCK ? (budget - 2 * r * (rd4 + rv4) - 16) /
                                           (rd4 + rv4 + 8 * r + 8) * 8
                                     : budget / (32 + w) * 16;
  return keys < fix ? keys : fix;
}

/* Whether rows of n floats at strides st are whole vec4s from the start
 * of an operand window (window() starts it at a row): then the block form
 * loads them as vec4s. */
static unsigned rows_vec4(const wgc_attention_strides *st, uint64_t n) {
  return n % 4 == 0 && st->batch % 4 == 0 && st->head % 4 == 0 &&
         st->seq % 4 == 0;
}

static void shape_for(const wgc_context *ctx, const wgc_attention_args *a,
                      uint64_t seq_q, bool partial, unsigned form,
                      attn_shape *sh) {
  /* head_dim and head_dim_v <= 64: "rows", one query row per invocation,
   * 8 to 64 rows per workgroup (fewer for a short seq_q: decoding), RD4
   * and RV4 vec4s per row. Larger: "tiles", 16 rows per workgroup, score
   * chunks of DC dims, each invocation owning NV4 vec4s of each of NVC V
   * chunks of 64*NV4 dims; dim groups of DV dims cover a larger
   * head_dim_v. */
  uint64_t hd = a->d.head_dim, hdv = a->d.head_dim_v;
  bool rows = hd <= 64 && hdv <= 64;
  /* DC is at least one vec4: the kernel stages DC / 4 vec4s per chunk, so
   * a smaller one (head_dim 1-2) would stage none and score every key 0 */
  uint64_t dc = pow2_at_least(hd);
  dc = rows || dc < 4 ? 4 : dc > 64 ? 64 : dc;
  unsigned nv4 = rows ? 1 : 2;
  unsigned nvc = hdv <= 128 ? 1 : 2;
  unsigned rd4 = (unsigned)(hd + 3) / 4, rv4 = (unsigned)(hdv + 3) / 4;
  uint64_t dv = 64u * nv4 * nvc;
  unsigned softcap = a->d.softcap > 0;
  sh->vec4 = 0;
  const char *form_name = form == ATTN_BLOCK ? "attention_block" : "attention";
  /* the fix-up pass: 16 keys a step on llvmpipe, where loop iterations
   * are scarce; one key a step elsewhere: half the attention pipeline's
   * compile time on SwiftShader (0.8 against 1.7 s of CPU) */
  snprintf(sh->kernel, sizeof sh->kernel, "%s+attention_common+%s+%s",
           a->has_mask ? "attention_mask" : "attention_nomask",
           wg_policy_of(ctx)->llvmpipe ? "attention_fix16" : "attention_fix1",
           form_name);
  if (form == ATTN_BLOCK) {
    /* WG invocations of R rows each: 16 at every seq_q (16 against 64 at
     * seq 512 on lavapipe: d64 1.03x, d128 1.15x, d128 causal 1.34x), so
     * that a decoder's prompt and its steps share one pipeline (a second
     * costs SwiftShader 0.65 s of compile). 8 for short seq_q: lavapipe's
     * decoder steps and 17-token MiniLM passes stayed within the noise of
     * a loaded 2-core machine without it */
    unsigned r = block_rows(ctx);
    uint64_t wg = 16;
    /* the kernel keeps its rows' output accumulators in workgroup memory */
    uint64_t wg_max = ATTN_BLOCK_WG_BYTES / (16u * r * ((hdv + 3) / 4));
    wg = wg > wg_max ? wg_max : wg;
    sh->rows = true;
    sh->dgroups = 1;
    sh->bq = wg * r;
    sh->vec4 = 7u; /* q, k, v: rows_vec4 picks the kernel's loads */
    /* PARTIAL 2: states or not by the launch's Params, one pipeline for
     * both (a second would cost as much compile time again) */
    snprintf(sh->consts, sizeof sh->consts,
             "const WG: u32 = %uu; const R: u32 = %uu; const HD: u32 = %uu; "
             "const HDV: u32 = %uu; const PARTIAL: u32 = 2u; "
             "const SOFTCAP: u32 = %uu; const Q4: u32 = %uu; "
             "const K4: u32 = %uu; const V4: u32 = %uu;",
             (unsigned)wg, r, (unsigned)hd, (unsigned)hdv, softcap,
             rows_vec4(&a->d.q_stride, hd), rows_vec4(&a->d.k_stride, hd),
             rows_vec4(&a->d.v_stride, hdv));
    return;
  }
  sh->rows = rows;
  sh->dgroups = rows ? 1 : (hdv + dv - 1) / dv;
  sh->bq = ATTN_TILES_BQ;
  if (rows) {
    sh->bq = pow2_at_least(seq_q);
    sh->bq = sh->bq < 8 ? 8 : sh->bq > ATTN_ROWS_BQ ? ATTN_ROWS_BQ : sh->bq;
  }
  snprintf(sh->consts, sizeof sh->consts,
           "const MODE: u32 = %uu; const WG: u32 = %uu; const DC: u32 = %uu; "
           "const NV4: u32 = %uu; const NVC: u32 = %uu; const RD4: u32 = %uu; "
           "const RV4: u32 = %uu; const PARTIAL: u32 = %uu; "
           "const SOFTCAP: u32 = %uu;",
           rows ? 1u : 0u, rows ? (unsigned)sh->bq : 256u, (unsigned)dc, nv4,
           nvc, rows ? rd4 : 1u, rows ? rv4 : 1u, partial ? 1u : 0u, softcap);
}

/* A run of the split path's planner into plan. */
typedef struct split_run {
  wgc_context *ctx;
  const wgc_attention_args *a;
  wg_plan *plan;
  uint64_t max_groups;
} split_run;

/* Emits l, or WGC_ERR_UNSUPPORTED when it does not bind (the caller
 * retries the whole plan with smaller windows). */
static wgc_status split_launch(split_run *sr, wg_launch *l) {
  if (!wg_plan_admits(sr->plan, l->ops, l->nops))
    return WGC_ERR_UNSUPPORTED;
  return wg_plan_add(sr->plan, l);
}

/* Copies floats between scratch buffers. */
static wgc_status split_copy(split_run *sr, wgc_ref dst, wgc_ref src,
                             uint64_t floats) {
  return wg_plan_copy(sr->plan, dst, src, 4 * floats);
}

static wgc_status split_scratch(split_run *sr, uint64_t bytes, wgc_ref *out) {
  return wg_plan_scratch(sr->plan, bytes, out);
}

static wgc_ref ref_at(wgc_ref r, uint64_t elems) {
  r.offset += 4 * elems;
  return r;
}

/* Combine launch l (O its operand 1, c its Params) of a 2-byte O whose
 * rows all start words (an even head_dim_v, even strides and origin): two
 * dims an invocation, stored by whole words rather than by atomic halves. */
static void combine_words(wg_launch *l, const combine_params *c) {
  if (!wg_half_type(l->ops[1].type) || !c->last || c->hd % 2 ||
      (c->o_rs | c->o_hs | c->o_bs) % 2 || (l->ops[1].lead / 2 + c->o_org) % 2)
    return;
  l->kernel = "attention_combine+attention_combine_words";
  l->word_stores = 2;
  l->groups = wg_ceil_div((uint64_t)c->rows * (c->hd / 2), 256);
}

/* Merges nb blocks of softmax states (rows rows of state_floats(hd) each)
 * in st[0] into O (rows of hd at a stride of o_rs from element o0 of o,
 * of O's type), in rounds of fan blocks, ping-ponging between st[0] and
 * st[1] (launches run in order); one block takes one round. */
static wgc_status combine_rounds(split_run *sr, wgc_ref st[2], uint64_t nb,
                                 uint64_t fan, uint64_t rows, uint64_t hd,
                                 wgc_ref o, uint64_t o0, uint64_t o_rs) {
  uint64_t rs = state_floats(hd);
  for (uint64_t n = nb, cur = 0, first = 1; n > 1 || first;
       cur ^= 1, first = 0) {
    uint64_t outs = (n + fan - 1) / fan;
    for (uint64_t j = 0; j < outs; j++) {
      uint64_t cnt = n - j * fan < fan ? n - j * fan : fan;
      combine_params p = {.rows = (uint32_t)rows,
                          .hd = (uint32_t)hd,
                          .nblk = (uint32_t)cnt,
                          .last = outs == 1,
                          .o_rs = (uint32_t)o_rs,
                          .rq = (uint32_t)rows,
                          .heads = 1};
      wg_launch l = {
          .kernel = "attention_combine+attention_combine_main",
          .ops = {{.name = "p",
                   .ref = ref_at(st[cur], j * fan * rows * rs),
                   .bytes = 4 * cnt * rows * rs,
                   .write = false},
                  outs == 1
                      ? wg_typed_operand("o", o, sr->a->d.o_type, o0,
                                         (rows - 1) * o_rs + hd, true)
                      : (wg_operand){.name = "o",
                                     .ref = ref_at(st[cur ^ 1], j * rows * rs),
                                     .bytes = 4 * rows * rs,
                                     .write = true}},
          .nops = 2,
          .params = &p,
          .params_size = sizeof p,
          .groups = (rows * hd + 255) / 256};
      combine_words(&l, &p);
      wgc_status s = split_launch(sr, &l);
      if (s != WGC_OK)
        return s;
    }
    n = outs;
  }
  return WGC_OK;
}

/* The combine of one query row whose state (state_floats(hd)) is too long
 * for two to share a binding: the dims are merged in slices of at most dn,
 * each slice's acc values, (m, l) and extras of every block gathered by
 * buffer copies from st (nb blocks of one state) into compact states of
 * their own in cs[0], which then combine as states of head_dim dn. */
static wgc_status combine_sliced(split_run *sr, wgc_ref st, wgc_ref cs[2],
                                 uint64_t nb, uint64_t hd, uint64_t dn,
                                 uint64_t E, uint64_t o0) {
  uint64_t rs = state_floats(hd);
  for (uint64_t d0 = 0; d0 < hd; d0 += dn) {
    uint64_t dl = hd - d0 < dn ? hd - d0 : dn, cr = state_floats(dl);
    for (uint64_t b = 0; b < nb; b++) {
      wgc_ref from = ref_at(st, b * rs), to = ref_at(cs[0], b * cr);
      wgc_status s = split_copy(sr, to, ref_at(from, d0), dl);
      if (s == WGC_OK)
        s = split_copy(sr, ref_at(to, dl), ref_at(from, hd), 2);
      if (s == WGC_OK)
        s = split_copy(sr, ref_at(to, dl + 2),
                       ref_at(from, hd + 2 + ATTN_EXTRAS * d0),
                       ATTN_EXTRAS * dl);
      if (s != WGC_OK)
        return s;
    }
    wgc_status s =
        combine_rounds(sr, cs, nb, E / cr, 1, dl, sr->a->o, o0 + d0, dl);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

/* The most rows (or keys) n, at most want, whose span (n - 1) * stride +
 * row stays within E elements (row <= E). */
static uint64_t rows_within(uint64_t want, uint64_t stride, uint64_t row,
                            uint64_t E) {
  if (!stride || want <= 1)
    return want;
  uint64_t n = (E - row) / stride + 1;
  return n < want ? n : want;
}

/* The split path with operand windows of at most window bytes. */
static wgc_status split_heads(split_run *sr, uint64_t window,
                              uint64_t max_groups) {
  const wgc_attention_args *a = sr->a;
  const wgc_attention_desc *d = &a->d;
  uint64_t hd = d->head_dim, hdv = d->head_dim_v;
  uint64_t seq_q = d->seq_q, seq_kv = d->seq_kv;
  uint64_t bh_total = (uint64_t)d->batch * d->heads;
  /* floats per window, per state */
  uint64_t E = window / 4, rs = state_floats(hdv);
  if (hd > E || hdv + 2 > E)
    return WGC_ERR_UNSUPPORTED;
  /* keys per block (a multiple of the kernel's key tile where possible):
   * K and V rows, and one mask row, within a window */
  unsigned form = attn_form(sr->ctx, hd, hdv);
  uint64_t nk = rows_within(seq_kv, d->k_stride.seq, hd, E);
  nk = rows_within(nk, d->v_stride.seq, hdv, E);
  if (a->has_mask && nk > E)
    nk = E;
  if (nk < seq_kv && nk >= 16)
    nk -= nk % 16;
  if (nk > max_keys(sr->ctx, hd, hdv, form))
    nk = max_keys(sr->ctx, hd, hdv, form);
  uint64_t nb = seq_kv ? (seq_kv + nk - 1) / nk : 1;
  /* states and a combine: several key blocks, or a typed O */
  bool partial = nb > 1 || d->o_type != WGC_DTYPE_F32;
  /* A state row beyond one binding: the unfused path takes the call. */
  if (partial && rs > E)
    return WGC_ERR_UNSUPPORTED;
  /* Two states of a row beyond one binding: one row per launch, its
   * combine in slices of dims (combine_sliced). */
  bool sliced = partial && 2 * rs > E;
  uint64_t nslices =
      sliced ? wg_ceil_div(hdv, (E / 2 - 2) / (1 + ATTN_EXTRAS)) : 1;
  uint64_t dn = wg_ceil_div(hdv, nslices);
  /* query rows per launch: Q, O (or two blocks of states for a combine
   * round) and mask windows; whole workgroups of rows where there are
   * several */
  uint64_t nq = rows_within(seq_q, d->q_stride.seq, hd, E);
  nq = rows_within(nq, d->o_stride.seq, hdv, E);
  if (a->has_mask)
    nq = rows_within(nq, d->mask_stride.seq, nk, E);
  if (partial && E / (2 * rs) < nq)
    nq = sliced ? 1 : E / (2 * rs);
  if (nq > ATTN_ROWS_BQ)
    nq -= nq % ATTN_ROWS_BQ;
  attn_shape sh;
  shape_for(sr->ctx, a, nq, partial, form, &sh);
  if (nq > max_groups / sh.dgroups * sh.bq)
    nq = max_groups / sh.dgroups * sh.bq;
  if (nq == 0)
    return WGC_ERR_UNSUPPORTED;
  /* state blocks per combine launch, >= 2; an invocation of the combine
   * walks them three times at most (attention_combine_words: the row's
   * maximum, then two dims), within llvmpipe's loop budget */
  uint64_t fan = sliced ? E / state_floats(dn) : E / (nq * rs);
  uint64_t budget = wg_policy_of(sr->ctx)->loop_budget;
  if (budget && fan > budget / 3)
    fan = budget / 3;
  wgc_ref st[3] = {{0}, {0}, {0}};
  if (partial) {
    wgc_status s = split_scratch(sr, 4 * nb * nq * rs, &st[0]);
    if (s == WGC_OK && sliced)
      s = split_scratch(sr, 4 * nb * state_floats(dn), &st[1]);
    if (s == WGC_OK && nb > fan)
      s = split_scratch(sr,
                        4 * ((nb + fan - 1) / fan) *
                            (sliced ? state_floats(dn) : nq * rs),
                        &st[2]);
    if (s != WGC_OK)
      return s;
  }
  for (uint64_t bh = 0; bh < bh_total; bh++) {
    for (uint64_t q0 = 0; q0 < seq_q; q0 += nq) {
      uint64_t qn = seq_q - q0 < nq ? seq_q - q0 : nq;
      uint64_t o_row0 = bh / d->heads * d->o_stride.batch +
                        bh % d->heads * d->o_stride.head + q0 * d->o_stride.seq;
      for (uint64_t b = 0; b < nb; b++) {
        uint64_t k0 = b * nk, kn = seq_kv - k0 < nk ? seq_kv - k0 : nk;
        attn_params p =
            launch_params(d, bh, 1, wg_ceil_div(qn, sh.bq), sh.dgroups);
        p.seq_q = (uint32_t)qn;
        p.seq_kv = (uint32_t)kn;
        p.q_first = (uint32_t)q0;
        p.k_first = (uint32_t)k0;
        p.o_stride = partial ? (uint32_t)rs : 0u;
        attn_region r = {bh, 1, q0, qn, k0, kn};
        wg_operand states = {.name = "o",
                             .ref = ref_at(st[0], b * qn * rs),
                             .bytes = 4 * qn * rs,
                             .write = true};
        wg_launch l = {.kernel = sh.kernel,
                       .consts = sh.consts,
                       .vec4 = sh.vec4,
                       .params = &p,
                       .params_size = sizeof p,
                       .groups = p.qblocks * sh.dgroups};
        l.nops = region_operands(a, &r, partial ? &states : NULL, l.ops, &p);
        wgc_status s = split_launch(sr, &l);
        if (s != WGC_OK)
          return s;
      }
      wgc_ref pair[2] = {sliced ? st[1] : st[0], st[2]};
      wgc_status s =
          sliced    ? combine_sliced(sr, st[0], pair, nb, hdv, dn, E, o_row0)
          : partial ? combine_rounds(sr, pair, nb, fan, qn, hdv, a->o, o_row0,
                                     d->o_stride.seq)
                    : WGC_OK;
      if (s != WGC_OK)
        return s;
    }
  }
  return WGC_OK;
}

static wgc_status split_window(wg_plan *p, void *user, uint64_t window) {
  split_run *sr = user;
  sr->plan = p;
  return split_heads(sr, window, sr->max_groups);
}

/* Head by head, at the largest windows that bind; a query row beyond a
 * binding (no window of 64 bytes or more binds) takes the unfused path. */
static wgc_status split_path(wgc_context *ctx, const wgc_attention_args *a,
                             uint64_t window, uint64_t max_groups) {
  split_run sr = {.ctx = ctx, .a = a, .max_groups = max_groups};
  wgc_status s =
      window < 64 ? WGC_ERR_UNSUPPORTED
                  : wg_plan_search(ctx, a->fn, window, 64, split_window, &sr);
  return s == WGC_ERR_UNSUPPORTED ? wg_attention_unfused(ctx, a) : s;
}

/* Invocations a key-block launch aims at (states_path): enough for every
 * SIMD lane of a CPU adapter's threads. */
#define ATTN_KB_LANES 64u
/* The fewest keys a key block takes: below, a block's states and the
 * combine cost more than its share of the walk saves. */
#define ATTN_KB_MIN_KEYS 16u

/* The keys per block of a key-block launch of the block form (see
 * kernels/attention_block.wgsl, states_path), or 0 when the call has rows
 * enough for the lanes, or keys too few to split. */
static uint64_t block_keys_per(const wgc_context *ctx,
                               const wgc_attention_args *a) {
  const wgc_attention_desc *d = &a->d;
  uint64_t rows = wg_ceil_div(d->seq_q, block_rows(ctx));
  uint64_t tasks = (uint64_t)d->batch * d->heads * rows;
  if (tasks >= ATTN_KB_LANES / 2 || d->seq_kv < 2 * ATTN_KB_MIN_KEYS)
    return 0;
  uint64_t nkb = wg_ceil_div(ATTN_KB_LANES, tasks);
  uint64_t kb = wg_ceil_div(d->seq_kv, nkb);
  kb = wg_ceil_div(kb, 8) * 8; /* whole steps of the kernel's key loop */
  if (kb < ATTN_KB_MIN_KEYS)
    kb = ATTN_KB_MIN_KEYS;
  uint64_t most = max_keys(ctx, d->head_dim, d->head_dim_v, ATTN_BLOCK);
  if (kb > most)
    kb = most - most % 8;
  return kb >= 8 && kb < d->seq_kv ? kb : 0;
}

/* The states form of a call: one launch of form over every head writing
 * softmax states to scratch, then one combine merging them into O. With
 * kb keys a block (attention_block, block_keys_per) each invocation walks
 * one block of keys: decoding on a CPU adapter, whose few query rows a
 * head leave most SIMD lanes idle. With kb 0, all keys: a typed O, which
 * the combine writes, rounded once (the fused kernels accumulate in their
 * f32 output). Each operand within bind bytes. Runs the plan in wp (its
 * status in *status) and returns true; false (nothing recorded) where the
 * states, an operand or the grid exceed one launch. */
static bool states_path(wgc_context *ctx, const wgc_attention_args *a,
                        unsigned form, uint64_t kb, uint64_t bind,
                        uint64_t max_groups, wg_plan *wp, wgc_status *status) {
  const wgc_attention_desc *d = &a->d;
  uint64_t hdv = d->head_dim_v, bh_total = (uint64_t)d->batch * d->heads;
  uint64_t nkb = kb ? wg_ceil_div(d->seq_kv, kb) : 1;
  uint64_t rs = state_floats(hdv), qrows = bh_total * d->seq_q;
  uint64_t states = 4 * nkb * qrows * rs;
  attn_shape sh;
  shape_for(ctx, a, d->seq_q, true, form, &sh);
  /* key blocks: invocations over (head, row group of R, block); else the
   * fused grid */
  uint64_t r = block_rows(ctx);
  uint64_t qblocks =
      kb ? wg_ceil_div(d->seq_q, r) : wg_ceil_div(d->seq_q, sh.bq);
  uint64_t groups = kb ? wg_ceil_div(nkb * bh_total * qblocks, sh.bq / r)
                       : bh_total * qblocks * sh.dgroups;
  if (states > bind || groups > max_groups ||
      wg_ceil_div(qrows * hdv, 256) > max_groups)
    return false;
  wgc_ref st;
  attn_params p = launch_params(d, 0, bh_total, qblocks, sh.dgroups);
  p.o_stride = (uint32_t)rs;
  p.kb_keys = (uint32_t)kb;
  wg_plan_init(wp, ctx, a->fn);
  if (wg_plan_scratch(wp, states, &st) != WGC_OK) {
    wg_plan_free(wp);
    return false;
  }
  attn_region reg = {0, bh_total, 0, d->seq_q, 0, d->seq_kv};
  wg_operand so = {.name = "o", .ref = st, .bytes = states, .write = true};
  wg_launch l = {.kernel = sh.kernel,
                 .consts = sh.consts,
                 .vec4 = sh.vec4,
                 .params = &p,
                 .params_size = sizeof p,
                 .groups = groups};
  l.nops = region_operands(a, &reg, &so, l.ops, &p);
  uint32_t org[4];
  combine_params c = {.rows = (uint32_t)qrows,
                      .hd = (uint32_t)hdv,
                      .nblk = (uint32_t)nkb,
                      .last = 1,
                      .rq = (uint32_t)d->seq_q,
                      .heads = (uint32_t)d->heads};
  wg_launch m = {
      .kernel = "attention_combine+attention_combine_main",
      .ops = {so, window("o", a->o, d->o_type, true, d->o_stride, d->heads, 0,
                         bh_total, 0, d->seq_q, 0, hdv, org)},
      .nops = 2,
      .params = &c,
      .params_size = sizeof c,
      .groups = wg_ceil_div(qrows * hdv, 256)};
  m.ops[0].name = "p";
  m.ops[0].write = false;
  c.o_bs = org[0];
  c.o_hs = org[1];
  c.o_rs = org[2];
  c.o_org = org[3];
  combine_words(&m, &c);
  if (!ops_fit(wp, l.ops, l.nops, bind) || !ops_fit(wp, m.ops, 2, bind)) {
    wg_plan_free(wp);
    return false;
  }
  wgc_status s = wg_plan_add(wp, &l);
  if (s == WGC_OK)
    s = wg_plan_add(wp, &m);
  *status = wg_plan_finish(wp, s);
  return true;
}

wgc_status wg_attention(wgc_context *ctx, const wgc_attention_args *a) {
  /* TOP_LEFT: key j reaches only rows i >= j, so keys from seq_q on reach
   * none and the plan leaves them out (seq_kv 2^31 - 1 for a few rows is a
   * few keys' work). */
  wgc_attention_args seen;
  if (a->d.causal == WGC_CAUSAL_TOP_LEFT && a->d.seq_kv > a->d.seq_q) {
    seen = *a;
    seen.d.seq_kv = a->d.seq_q;
    a = &seen;
  }
  const char *fn = a->fn;
  const wgc_attention_desc *d = &a->d;
  const wg_policy *pol = wg_policy_of(ctx);
  uint64_t hd = d->head_dim, hdv = d->head_dim_v;
  uint64_t seq_q = d->seq_q, seq_kv = d->seq_kv;
  uint64_t bh_total = (uint64_t)d->batch * d->heads;

  unsigned form = attn_form(ctx, hd, hdv);
  attn_shape sh;
  shape_for(ctx, a, seq_q, false, form, &sh);
  uint64_t qblocks = (seq_q + sh.bq - 1) / sh.bq;
  uint64_t dgroups = sh.dgroups;

  /* Indices inside the kernels are u32. The front end keeps seq_q and
   * seq_kv below 2^31, head sizes at most 2^28 and batch * heads below
   * 2^32 (wgc.h), so no sum the kernels form (a row plus the keys it
   * sees, a key index plus a tile) wraps. */

  /* Per-launch limits: an operand window (after aligning its start down)
   * fits one storage binding, element indices stay below 2^30, and the
   * workgroups fit the grid. */
  uint64_t align = pol->storage_align, window = pol->window;
  window = window > align ? window - align : 0;
  uint64_t maxd = pol->max_groups;
  uint64_t max_groups = maxd * maxd;
  if (max_groups > 0x80000000u)
    max_groups = 0x80000000u;
  uint64_t per_head_groups = qblocks * dgroups;
  wg_plan wp;
  wgc_status s = WGC_OK;
  uint64_t kb = form == ATTN_BLOCK ? block_keys_per(ctx, a) : 0;
  if (kb && states_path(ctx, a, form, kb, window, max_groups, &wp, &s))
    return s;
  if (d->o_type != WGC_DTYPE_F32 && seq_kv <= max_keys(ctx, hd, hdv, form) &&
      states_path(ctx, a, form, 0, window, max_groups, &wp, &s))
    return s;
  /* One head beyond the grid, more keys than one launch may take, or a
   * typed O that the states form did not take: the split path. */
  if (per_head_groups > max_groups || seq_kv > max_keys(ctx, hd, hdv, form) ||
      d->o_type != WGC_DTYPE_F32)
    return split_path(ctx, a, window, max_groups);

  wg_plan_init(&wp, ctx, fn);
  attn_plan plan = {.wp = &wp,
                    .a = a,
                    .window = window,
                    .max_heads = max_groups / per_head_groups};
  /* Where one head does not bind, the split path takes the call. */
  for (uint64_t bh0 = 0, cnt; bh0 < bh_total; bh0 += cnt)
    if (!next_chunk(&plan, bh0, bh_total - bh0, &cnt)) {
      wg_plan_free(&wp);
      return split_path(ctx, a, window, max_groups);
    }

  for (uint64_t bh0 = 0, cnt; bh0 < bh_total && s == WGC_OK; bh0 += cnt) {
    next_chunk(&plan, bh0, bh_total - bh0, &cnt);
    attn_params p = launch_params(d, bh0, cnt, qblocks, dgroups);
    attn_region r = {bh0, cnt, 0, seq_q, 0, seq_kv};
    wg_launch l = {.kernel = sh.kernel,
                   .consts = sh.consts,
                   .vec4 = sh.vec4,
                   .params = &p,
                   .params_size = sizeof p,
                   .groups = cnt * per_head_groups};
    l.nops = region_operands(a, &r, NULL, l.ops, &p);
    s = wg_plan_add(&wp, &l);
  }
  return wg_plan_finish(&wp, s);
}
