/* Attention whose head sizes are too long for the fused kernels: with a
 * query row (or one softmax state) beyond a storage binding, no launch of
 * kernels/attention*.wgsl can hold it. The call then runs unfused, per
 * head and block of query rows, as one plan (plan.h), so it is checked,
 * allocated and recorded all together or not at all:
 *   S = scale * Q K^T   the GEMM planner into scratch (wg_gemm_plan),
 *                       over the keys the block's last row sees (or, for
 *                       rows that no window holds two of, each row's),
 *   stats               S := softcap(S) + mask; each row's max m and sum l
 *                       of exp(s - m) (kernels/attention_unfused_stats),
 *   probs               S := exp(s - m), 0 for hidden keys,
 *   PV                  O = sum p v / l, skipping keys of weight 0,
 * each step in launches over windows of rows, keys and output dims that
 * bind (any length splits). Keys of weight 0 are skipped in the PV step
 * rather than multiplied: a key masked by -inf (or one whose weight
 * underflows) whose V row holds a NaN or an infinity must not reach the
 * row, as the header states and the fused kernels do (attn_pv); a GEMM
 * would form 0 * NaN. Only tiny binding limits reach this (4 KiB bindings:
 * head sizes from about 1000). Typed operands bind as wg_typed_operand
 * windows (Q and K as the GEMM's typed A and B); a 2-byte O keeps its PV
 * sums in f32 scratch until the row's last keys write it, rounded once. */
#include "gemm.h"

/* Query rows per block: the scores of a block share one scratch matrix,
 * of at most SCORES_MAX_BYTES. */
#define BLOCK_ROWS 64u
#define SCORES_MAX_BYTES (16u << 20)
#define STATS_GROUP 64u
#define PROBS_GROUP 256u
#define PV_GROUP 64u

/* Matches struct Params of kernels/attention_unfused.wgsl. */
typedef struct uf_params {
  uint32_t off[8];
  uint32_t rows, keys, dims, row0;
  uint32_t key0, ld_s, ms, vs;
  uint32_t os, causal, gq, gkv;
  float softcap;
  uint32_t first, last, xs;
} uf_params;

/* Keys j < visible(i) are seen by query row i: every mask keeps a prefix. */
static uint64_t visible(const wgc_attention_desc *d, uint64_t i) {
  uint64_t n = d->seq_kv;
  switch (d->causal) {
  case WGC_CAUSAL_TOP_LEFT:
    return i + 1 < n ? i + 1 : n;
  case WGC_CAUSAL_BOTTOM_RIGHT:
    if (i + 1 + n <= d->seq_q)
      return 0;
    return i + 1 + n - d->seq_q < n ? i + 1 + n - d->seq_q : n;
  default:
    return n;
  }
}

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The most rows n, at most want (>= 1), whose span (n - 1) * stride + row
 * stays within e elements; 1 when not even one does. */
static uint64_t rows_within(uint64_t want, uint64_t stride, uint64_t row,
                            uint64_t e) {
  if (row > e)
    return 1;
  if (!stride || want <= 1)
    return want;
  return min64(want, (e - row) / stride + 1);
}

/* One block of query rows of one head: its operands (moved to the block's
 * first row), the scores scratch and, for a 2-byte O, its sums' (x). */
typedef struct uf_block {
  const wgc_attention_args *a;
  wgc_ref v, o, mask, s, st, x;
  uint64_t i0, rows, keys; /* global first row, rows, keys seen */
} uf_block;

/* A launch window: rows [r0, r0 + rn), keys [j0, j0 + kn), output dims
 * [d0, d0 + dn) of a block. */
typedef struct uf_win {
  uint64_t r0, rn, j0, kn, d0, dn;
} uf_win;

typedef enum { STEP_STATS, STEP_PROBS, STEP_PV } uf_step;

static uint32_t u32(uint64_t x) { return (uint32_t)x; }

/* The launch of step for window w of block b (params in p). */
static wg_launch step_launch(const uf_block *b, uf_step step, const uf_win *w,
                             uf_params *p) {
  const wgc_attention_desc *d = &b->a->d;
  uint64_t ld = b->keys, ms = d->mask_stride.seq, vs = d->v_stride.seq;
  uint64_t os = d->o_stride.seq;
  *p = (uf_params){.rows = u32(w->rn),
                   .keys = u32(w->kn),
                   .dims = u32(w->dn),
                   .row0 = u32(b->i0 + w->r0),
                   .key0 = u32(w->j0),
                   /* strides of a length of 1 are never used: 0 keeps
                    * them within u32 */
                   .ld_s = u32(w->rn > 1 ? ld : 0),
                   .ms = u32(w->rn > 1 ? ms : 0),
                   .vs = u32(w->kn > 1 ? vs : 0),
                   .os = u32(w->rn > 1 ? os : 0),
                   .causal = (uint32_t)d->causal,
                   .gq = u32(d->seq_q),
                   .gkv = u32(d->seq_kv),
                   .softcap = d->softcap,
                   .first = w->j0 == 0,
                   .last = w->j0 + w->kn == b->keys,
                   .xs = u32(w->rn > 1 ? d->head_dim_v : 0)};
  wg_operand scores = {.name = "s",
                       .ref = wg_advance(b->s, w->r0 * ld + w->j0),
                       .bytes = 4 * ((w->rn - 1) * ld + w->kn),
                       .write = step != STEP_PV};
  wg_operand stats = {.name = "st",
                      .ref = wg_advance(b->st, 2 * w->r0),
                      .bytes = 8 * w->rn,
                      .write = step == STEP_STATS};
  wg_launch l = {.params = p, .params_size = sizeof *p};
  switch (step) {
  case STEP_STATS:
    l.kernel = b->a->has_mask
                   ? "attention_unfused+attention_mask+attention_unfused_stats"
                   : "attention_unfused+attention_nomask+"
                     "attention_unfused_stats";
    l.consts = d->softcap > 0 ? "const SOFTCAP: u32 = 1u;"
                              : "const SOFTCAP: u32 = 0u;";
    l.ops[0] = scores;
    l.ops[1] = stats;
    l.nops = 2;
    if (b->a->has_mask)
      l.ops[l.nops++] =
          wg_typed_operand("mask", b->mask, d->mask_type, w->r0 * ms + w->j0,
                           (w->rn - 1) * ms + w->kn, false);
    l.groups = wg_ceil_div(w->rn, STATS_GROUP);
    break;
  case STEP_PROBS:
    l.kernel = "attention_unfused+attention_unfused_probs";
    l.ops[0] = scores;
    l.ops[1] = stats;
    l.nops = 2;
    l.groups = wg_ceil_div(w->rn * w->kn, PROBS_GROUP);
    break;
  case STEP_PV:
    l.kernel = d->o_type != WGC_DTYPE_F32
                   ? "attention_unfused+attention_unfused_ox+"
                     "attention_unfused_pv"
                   : "attention_unfused+attention_unfused_o+"
                     "attention_unfused_pv";
    scores.name = "p";
    l.ops[0] = scores;
    l.ops[1] = wg_typed_operand("v", b->v, d->v_type, w->j0 * vs + w->d0,
                                (w->kn - 1) * vs + w->dn, false);
    l.ops[2] = wg_typed_operand("o", b->o, d->o_type, w->r0 * os + w->d0,
                                (w->rn - 1) * os + w->dn, true);
    l.ops[3] = stats;
    l.nops = 4;
    if (d->o_type != WGC_DTYPE_F32) {
      uint64_t xs = d->head_dim_v;
      l.ops[l.nops++] =
          (wg_operand){.name = "x",
                       .ref = wg_advance(b->x, w->r0 * xs + w->d0),
                       .bytes = 4 * ((w->rn - 1) * xs + w->dn),
                       .write = true};
    }
    l.groups = wg_ceil_div(w->rn * w->dn, PV_GROUP);
    break;
  }
  return l;
}

/* Emits step over window w, halved (rows, then keys, then dims) until each
 * piece binds as it is; a piece of one of each is emitted regardless (the
 * plan stages its operands or reports that they cannot bind). Keys of a
 * row stay in order: the stats and PV steps carry state across them. */
static wgc_status emit_window(wg_plan *wp, const uf_block *b, uf_step step,
                              uf_win w) {
  uf_params p;
  wg_launch l = step_launch(b, step, &w, &p);
  if (wg_plan_fits(wp, l.ops, l.nops) || (w.rn == 1 && w.kn == 1 && w.dn == 1))
    return wg_plan_add(wp, &l);
  uf_win lo = w, hi = w;
  if (w.rn > 1) {
    lo.rn = w.rn / 2;
    hi.r0 += lo.rn;
    hi.rn -= lo.rn;
  } else if (w.kn > 1) {
    lo.kn = w.kn / 2;
    hi.j0 += lo.kn;
    hi.kn -= lo.kn;
  } else {
    lo.dn = w.dn / 2;
    hi.d0 += lo.dn;
    hi.dn -= lo.dn;
  }
  wgc_status s = emit_window(wp, b, step, lo);
  return s == WGC_OK ? emit_window(wp, b, step, hi) : s;
}

/* Emits step over the whole block in windows of at most rn rows, kn keys
 * and dn dims (dims only for PV), sized so that they bind in the usual
 * layouts; rows outermost so that each row's keys run in order. */
static wgc_status emit_step(wg_plan *wp, const uf_block *b, uf_step step,
                            uint64_t rn, uint64_t kn, uint64_t dn) {
  uint64_t dims = step == STEP_PV ? b->a->d.head_dim_v : 1;
  /* at least one of each: emit_window halves what still does not bind */
  rn = rn ? rn : 1;
  kn = kn ? kn : 1;
  dn = dn ? dn : 1;
  for (uint64_t r0 = 0; r0 < b->rows; r0 += rn)
    for (uint64_t d0 = 0; d0 < dims; d0 += dn)
      for (uint64_t j0 = 0; j0 < b->keys; j0 += kn) {
        uf_win w = {r0, min64(rn, b->rows - r0), j0, min64(kn, b->keys - j0),
                    d0, min64(dn, dims - d0)};
        wgc_status s = emit_window(wp, b, step, w);
        if (s != WGC_OK)
          return s;
      }
  return WGC_OK;
}

/* The launches of one block whose rows see b->keys > 0 keys. */
static wgc_status plan_block(wg_plan *wp, const uf_block *b, wgc_ref q,
                             wgc_ref k) {
  const wgc_attention_desc *d = &b->a->d;
  const wg_policy *pol = wp->pol;
  uint64_t e = pol->window_elems, nk = b->keys, hdv = d->head_dim_v;
  /* loops over keys (stats, PV) within the adapter's budget */
  uint64_t kcap = pol->loop_budget ? pol->loop_budget / 2 : e;
  wgc_gemm_args g = {.m = b->rows,
                     .n = nk,
                     .k = d->head_dim,
                     .batch = 1,
                     .alpha = d->scale,
                     .beta = 0.0f,
                     .a = q,
                     .b = k,
                     .c = b->s,
                     .a_type = d->q_type,
                     .b_type = d->k_type,
                     .rs_a = d->q_stride.seq,
                     .cs_a = 1,
                     .rs_b = 1,
                     .cs_b = d->k_stride.seq,
                     .rs_c = nk,
                     .cs_c = 1};
  wgc_status s = WGC_OK;
  if (rows_within(b->rows, d->q_stride.seq, min64(d->head_dim, e), e) > 1) {
    s = wg_gemm_plan(wp, &g);
  } else {
    /* Query rows that share no window run one by one in the GEMM anyway:
     * each then scores only the keys it sees (causal: fewer). */
    g.m = 1;
    for (uint64_t r = 0; r < b->rows && s == WGC_OK; r++) {
      g.n = visible(d, b->i0 + r);
      g.a = wg_advance_typed(q, d->q_type, r * d->q_stride.seq);
      g.c = wg_advance(b->s, r * nk);
      if (g.n)
        s = wg_gemm_plan(wp, &g);
    }
  }
  /* stats: a row's keys and mask entries within a window */
  uint64_t kn = min64(min64(nk, e), kcap);
  uint64_t rn = rows_within(b->rows, nk, kn, e);
  if (b->a->has_mask)
    rn = rows_within(rn, d->mask_stride.seq, kn, e);
  rn = min64(rn, e / 2);
  if (s == WGC_OK)
    s = emit_step(wp, b, STEP_STATS, rn, kn, 1);
  /* probs: one invocation per score, within the grid */
  kn = min64(nk, min64(e, wg_grid_elems(pol, PROBS_GROUP)));
  rn = min64(rows_within(b->rows, nk, kn, e), e / 2);
  rn = min64(rn, wg_grid_elems(pol, PROBS_GROUP) / (kn ? kn : 1));
  if (s == WGC_OK)
    s = emit_step(wp, b, STEP_PROBS, rn, kn, 1);
  /* PV: a window of V's rows (keys) and dims, of O's rows and dims */
  uint64_t dn = min64(hdv, min64(e, wg_grid_elems(pol, PV_GROUP)));
  kn = min64(rows_within(nk, d->v_stride.seq, dn, e), min64(e, kcap));
  rn = rows_within(b->rows, d->o_stride.seq, dn, e);
  rn = min64(min64(rn, rows_within(b->rows, nk, kn, e)), e / 2);
  rn = min64(rn, wg_grid_elems(pol, PV_GROUP) / (dn ? dn : 1));
  if (s == WGC_OK)
    s = emit_step(wp, b, STEP_PV, rn, kn, dn);
  return s;
}

static wgc_status plan_unfused(wg_plan *wp, const wgc_attention_args *a) {
  const wgc_attention_desc *d = &a->d;
  uint64_t hdv = d->head_dim_v, seq_q = d->seq_q, seq_kv = d->seq_kv;
  uint64_t bh_total = (uint64_t)d->batch * d->heads;
  uint64_t group = d->heads / d->heads_kv;
  if (!hdv || !seq_q || !bh_total)
    return WGC_OK;
  uint64_t rows = seq_kv ? SCORES_MAX_BYTES / 4 / seq_kv : BLOCK_ROWS;
  rows = rows < 1 ? 1 : min64(rows, min64(BLOCK_ROWS, seq_q));
  /* one scores matrix and one state per row, reused by every block (the
   * plan's launches run in order) */
  wgc_ref s = {0}, st = {0}, x = {0};
  wgc_status status = WGC_OK;
  if (seq_kv) {
    status = wg_plan_scratch(wp, 4 * rows * seq_kv, &s);
    if (status == WGC_OK)
      status = wg_plan_scratch(wp, 8 * rows, &st);
    if (status == WGC_OK && d->o_type != WGC_DTYPE_F32)
      status = wg_plan_scratch(wp, 4 * rows * hdv, &x);
  }
  for (uint64_t bh = 0; bh < bh_total && status == WGC_OK; bh++) {
    uint64_t bi = bh / d->heads, h = bh % d->heads, hk = h / group;
    wgc_ref q = wg_advance_typed(a->q, d->q_type,
                                 bi * d->q_stride.batch + h * d->q_stride.head);
    wgc_ref k = wg_advance_typed(
        a->k, d->k_type, bi * d->k_stride.batch + hk * d->k_stride.head);
    for (uint64_t i0 = 0; i0 < seq_q && status == WGC_OK; i0 += rows) {
      uf_block b = {
          .a = a,
          .v = wg_advance_typed(a->v, d->v_type,
                                bi * d->v_stride.batch + hk * d->v_stride.head),
          .o = wg_advance_typed(a->o, d->o_type,
                                bi * d->o_stride.batch + h * d->o_stride.head +
                                    i0 * d->o_stride.seq),
          .mask = wg_advance_typed(a->mask, d->mask_type,
                                   bi * d->mask_stride.batch +
                                       h * d->mask_stride.head +
                                       i0 * d->mask_stride.seq),
          .s = s,
          .st = st,
          .x = x,
          .i0 = i0,
          .rows = min64(rows, seq_q - i0)};
      /* rows see prefixes that grow with the row: the last sees most */
      b.keys = visible(d, i0 + b.rows - 1);
      if (b.keys == 0) { /* no row sees a key: o := 0 (k == 0) */
        wgc_gemm_args z = {.m = b.rows,
                           .n = hdv,
                           .k = 0,
                           .batch = 1,
                           .alpha = 1.0f,
                           .beta = 0.0f,
                           .a = b.o,
                           .b = b.o,
                           .c = b.o,
                           .a_type = d->o_type,
                           .b_type = d->o_type,
                           .c_type = d->o_type,
                           .rs_a = 1,
                           .cs_a = 1,
                           .rs_b = 1,
                           .cs_b = 1,
                           .rs_c = d->o_stride.seq,
                           .cs_c = 1};
        status = wg_gemm_plan(wp, &z);
        continue;
      }
      status = plan_block(wp, &b, wg_advance(q, i0 * d->q_stride.seq), k);
    }
  }
  return status;
}

wgc_status wg_attention_unfused(wgc_context *ctx, const wgc_attention_args *a) {
  wg_plan wp;
  wg_plan_init(&wp, ctx, a->fn);
  return wg_plan_finish(&wp, plan_unfused(&wp, a));
}
