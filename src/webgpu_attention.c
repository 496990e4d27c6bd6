/* Scaled-dot-product attention on WebGPU: one fused kernel
 * (kernels/attention.wgsl) with an online softmax, so device memory stays
 * O(seq * head_dim) and no score matrix is stored anywhere. head_dim <= 64
 * runs the "rows" shape (one query row per invocation, up to 64 per
 * workgroup), larger head_dim the "tiles" shape (16 rows per workgroup, up
 * to 256 output dims, more workgroups past that). Tensors larger than one
 * storage binding are split over batch*heads into several launches, all
 * planned before the first is recorded. */
#include "webgpu.h"

#include <inttypes.h>
#include <stdio.h>

/* query rows per workgroup of the two kernel shapes (kernels/attention.wgsl) */
#define ATTN_ROWS_BQ 64u /* at most */
#define ATTN_TILES_BQ 16u

typedef struct attn_params {
  uint32_t off[4];
  uint32_t heads, heads_kv, group, seq_q;
  uint32_t seq_kv, head_dim, qblocks, dgroups;
  uint32_t bh_base, kv_base, bh_count, causal;
  float scale;
  uint32_t pad[3];
} attn_params;

/* batch*heads_kv + kv head read by query head bh (= batch*heads + head). */
static uint64_t kv_index(const wgc_attention_desc *d, uint64_t bh) {
  uint64_t group = d->heads / d->heads_kv;
  return bh / d->heads * d->heads_kv + bh % d->heads / group;
}

static uint64_t pow2_at_least(uint64_t x) {
  uint64_t p = 1;
  while (p < x)
    p <<= 1;
  return p;
}

/* How a call is split into launches over runs of consecutive Q heads. */
typedef struct attn_plan {
  const wgc_context *ctx;
  const wgc_attention_desc *d;
  const wgc_attention_args *a;
  uint64_t window;          /* usable bytes of one operand's binding */
  uint64_t q_head, kv_head; /* bytes of one Q/O head, one K/V head */
  uint64_t max_heads;       /* Q heads per launch by Q/O size and grid */
} attn_plan;

/* The operands of the launch over Q heads [bh0, bh0 + cnt). With seq_kv == 0
 * K and V are bound (4 bytes) but never read. */
static void chunk_operands(const attn_plan *pl, uint64_t bh0, uint64_t cnt,
                           wg_operand ops[4]) {
  uint64_t kv0 = kv_index(pl->d, bh0);
  uint64_t kv_cnt = kv_index(pl->d, bh0 + cnt - 1) - kv0 + 1;
  wgc_ref q = pl->a->q, k = pl->a->k, v = pl->a->v, o = pl->a->o;
  q.offset += bh0 * pl->q_head;
  o.offset += bh0 * pl->q_head;
  k.offset += kv0 * pl->kv_head;
  v.offset += kv0 * pl->kv_head;
  ops[0] = (wg_operand){"q", q, cnt * pl->q_head, false};
  ops[1] = (wg_operand){"k", k, kv_cnt * pl->kv_head, false};
  ops[2] = (wg_operand){"v", v, kv_cnt * pl->kv_head, false};
  ops[3] = (wg_operand){"o", o, cnt * pl->q_head, true};
}

/* Whether the launch over Q heads [bh0, bh0 + cnt) binds. */
static bool chunk_fits(const attn_plan *pl, uint64_t bh0, uint64_t cnt) {
  wg_operand ops[4];
  chunk_operands(pl, bh0, cnt, ops);
  return wg_operands_fit(pl->ctx, ops, 4);
}

/* The number of Q heads of the launch starting at bh0 (at most left);
 * false when not even one head can be bound. */
static bool next_chunk(const attn_plan *pl, uint64_t bh0, uint64_t left,
                       uint64_t *cnt) {
  uint64_t n = left < pl->max_heads ? left : pl->max_heads;
  uint64_t kv0 = kv_index(pl->d, bh0);
  uint64_t kv_heads = pl->kv_head ? pl->window / pl->kv_head : UINT64_MAX;
  if (kv_index(pl->d, bh0 + n - 1) - kv0 + 1 > kv_heads ||
      !chunk_fits(pl, bh0, n)) {
    uint64_t lo = 0, hi = n; /* lo fits (or 0), hi does not */
    while (hi - lo > 1) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (kv_index(pl->d, bh0 + mid - 1) - kv0 + 1 <= kv_heads &&
          chunk_fits(pl, bh0, mid))
        lo = mid;
      else
        hi = mid;
    }
    n = lo;
  }
  *cnt = n ? n : 1;
  return n > 0;
}

wgc_status wg_attention(wgc_context *ctx, const wgc_attention_args *a) {
  const char *fn = "wgc_attention";
  const wgc_attention_desc *d = &a->d;
  const gpu_limits *lim = wg_limits(ctx);
  uint64_t hd = d->head_dim, seq_q = d->seq_q, seq_kv = d->seq_kv;
  uint64_t bh_total = (uint64_t)d->batch * d->heads;

  /* Kernel shape. head_dim <= 64: "rows", one query row per invocation,
   * 8 to 64 rows per workgroup (fewer for a short seq_q: decoding), RD4
   * vec4s per row. Larger: "tiles", 16 rows per workgroup, score chunks of
   * DC dims, each invocation owning NV4 vec4s of each of NVC V chunks of
   * 64*NV4 dims; dim groups of DV dims cover a larger head_dim. */
  bool rows = hd <= 64;
  uint64_t dc = rows ? 4 : pow2_at_least(hd) > 64 ? 64 : pow2_at_least(hd);
  unsigned nv4 = rows ? 1 : 2;
  unsigned nvc = hd <= 128 ? 1 : 2;
  unsigned rd4 = rows ? (unsigned)(hd + 3) / 4 : 1;
  uint64_t dv = 64u * nv4 * nvc;
  uint64_t dgroups = rows ? 1 : (hd + dv - 1) / dv;
  uint64_t bq = ATTN_TILES_BQ;
  if (rows) {
    bq = pow2_at_least(seq_q);
    bq = bq < 8 ? 8 : bq > ATTN_ROWS_BQ ? ATTN_ROWS_BQ : bq;
  }
  uint64_t qblocks = (seq_q + bq - 1) / bq;

  /* Indices inside the kernel are u32: keep every count and sum of them far
   * from overflow. */
  if (bh_total > UINT32_MAX || hd > 0x10000000u ||
      seq_q + seq_kv + 2 * ATTN_ROWS_BQ > 0x80000000u)
    return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                    "%s: batch*heads %" PRIu64 ", seq_q %" PRIu64
                    ", seq_kv %" PRIu64 " and head_dim %" PRIu64
                    " exceed the WebGPU kernel's 32-bit indexing",
                    fn, bh_total, seq_q, seq_kv, hd);

  /* Per-launch limits: an operand window (after aligning its start down)
   * fits one storage binding, element indices stay below 2^30, and the
   * workgroups fit the grid. */
  uint64_t align = lim->min_storage_offset_alignment
                       ? lim->min_storage_offset_alignment
                       : 256;
  uint64_t window = lim->max_storage_binding_size;
  if (window > ((uint64_t)1 << 32))
    window = (uint64_t)1 << 32;
  window = window > align ? window - align : 0;
  uint64_t q_head = 4 * seq_q * hd, kv_head = 4 * seq_kv * hd;
  if (q_head > window || kv_head > window)
    return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                    "%s: one head's %s of %" PRIu64
                    " bytes exceeds the device's storage binding limit "
                    "(%" PRIu64 " bytes)",
                    fn, q_head > window ? "Q/O" : "K/V",
                    q_head > window ? q_head : kv_head,
                    (uint64_t)lim->max_storage_binding_size);
  uint64_t maxd = lim->max_workgroups_per_dimension
                      ? lim->max_workgroups_per_dimension
                      : 65535;
  uint64_t max_groups = maxd * maxd;
  if (max_groups > 0x80000000u)
    max_groups = 0x80000000u;
  uint64_t per_head_groups = qblocks * dgroups;
  if (per_head_groups > max_groups)
    return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                    "%s: seq_q %" PRIu64 " with head_dim %" PRIu64
                    " needs %" PRIu64 " workgroups per head, more than the "
                    "device's grid (%" PRIu64 ")",
                    fn, seq_q, hd, per_head_groups, max_groups);
  uint64_t max_heads = max_groups / per_head_groups;
  if (q_head && window / q_head < max_heads)
    max_heads = window / q_head;

  attn_plan plan = {.ctx = ctx,
                    .d = d,
                    .a = a,
                    .window = window,
                    .q_head = q_head,
                    .kv_head = kv_head,
                    .max_heads = max_heads};
  /* Plan every launch first, so that an operand layout no launch can bind
   * fails before anything is enqueued (never a partial result). */
  for (uint64_t bh0 = 0, cnt; bh0 < bh_total; bh0 += cnt)
    if (!next_chunk(&plan, bh0, bh_total - bh0, &cnt))
      return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                      "%s: the Q, K, V and O windows of one head do not fit "
                      "the device's storage binding limit (%" PRIu64
                      " bytes) where they share an allocation",
                      fn, (uint64_t)lim->max_storage_binding_size);

  char consts[160];
  snprintf(consts, sizeof consts,
           "const MODE: u32 = %uu; const WG: u32 = %uu; const DC: u32 = %uu; "
           "const NV4: u32 = %uu; const NVC: u32 = %uu; const RD4: u32 = %uu;",
           rows ? 1u : 0u, rows ? (unsigned)bq : 256u, (unsigned)dc, nv4, nvc,
           rd4);
  for (uint64_t bh0 = 0, cnt; bh0 < bh_total; bh0 += cnt) {
    next_chunk(&plan, bh0, bh_total - bh0, &cnt);
    wg_operand ops[4];
    chunk_operands(&plan, bh0, cnt, ops);
    attn_params p = {
        .heads = (uint32_t)d->heads,
        .heads_kv = (uint32_t)d->heads_kv,
        .group = (uint32_t)(d->heads / d->heads_kv),
        .seq_q = (uint32_t)seq_q,
        .seq_kv = (uint32_t)seq_kv,
        .head_dim = (uint32_t)hd,
        .qblocks = (uint32_t)qblocks,
        .dgroups = (uint32_t)dgroups,
        .bh_base = (uint32_t)bh0,
        .kv_base = (uint32_t)kv_index(d, bh0),
        .bh_count = (uint32_t)cnt,
        .causal = (uint32_t)d->causal,
        .scale = d->scale,
    };
    wg_launch l = {.kernel = "attention",
                   .consts = consts,
                   .ops = {ops[0], ops[1], ops[2], ops[3]},
                   .nops = 4,
                   .params = &p,
                   .params_size = sizeof p,
                   .groups = cnt * per_head_groups};
    wgc_status s = wg_launch_run(ctx, fn, &l);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}
