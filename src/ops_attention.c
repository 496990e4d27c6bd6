/* attention entry point: desc defaults and checks, strided footprints,
 * overlap rules, dispatch. */
#include "internal.h"

#include "validate.h"

#include <math.h>
#include <stdint.h>

/* The limits of the kernels' 32-bit indices (wgc.h). */
#define ATTN_SEQ_MAX 0x7fffffffu   /* seq_q, seq_kv */
#define ATTN_DIM_MAX 0x10000000u   /* head_dim, head_dim_v */
#define ATTN_HEADS_MAX 0xffffffffu /* batch * heads */

/* The browser build: wgc.js writes wgc_attention_desc into wasm memory field by
 * field (4-byte fields, 8-byte device addresses, in declaration order). */
#if UINTPTR_MAX == UINT32_MAX
#include <stddef.h>
_Static_assert(offsetof(wgc_attention_desc, batch) == 0 &&
                   offsetof(wgc_attention_desc, seq_q) == 12 &&
                   offsetof(wgc_attention_desc, head_dim) == 20 &&
                   offsetof(wgc_attention_desc, scale) == 24 &&
                   offsetof(wgc_attention_desc, causal) == 28 &&
                   offsetof(wgc_attention_desc, head_dim_v) == 32 &&
                   offsetof(wgc_attention_desc, softcap) == 36 &&
                   offsetof(wgc_attention_desc, mask) == 40 &&
                   offsetof(wgc_attention_desc, mask_stride) == 48 &&
                   offsetof(wgc_attention_desc, q_stride) == 60 &&
                   offsetof(wgc_attention_desc, k_stride) == 72 &&
                   offsetof(wgc_attention_desc, v_stride) == 84 &&
                   offsetof(wgc_attention_desc, o_stride) == 96 &&
                   offsetof(wgc_attention_desc, q_type) == 108 &&
                   offsetof(wgc_attention_desc, mask_type) == 124 &&
                   sizeof(wgc_attention_strides) == 12 &&
                   sizeof(wgc_attention_desc) <= 256,
               "wgc.js writes wgc_attention_desc as 10 words, the 8-byte "
               "mask at 40, 15 words of strides, then 5 words of types, "
               "into a 256-byte area");
#endif

/* One strided operand's extents: dims counts over (batch, head, seq), the
 * row length, and its strides (resolved). */
typedef struct attn_layout {
  const char *param;
  size_t n[3];
  size_t row;
  wgc_attention_strides *st;
} attn_layout;

/* Strides all zero: the contiguous [batch, heads, seq, row] layout. */
static void default_strides(attn_layout *l) {
  wgc_attention_strides *s = l->st;
  if (s->batch || s->head || s->seq)
    return;
  s->seq = l->row;
  s->head = l->n[2] * l->row;
  s->batch = l->n[1] * l->n[2] * l->row;
}

/* Elements from the operand's address to one past its last element
 * (saturating; 0 when empty). */
static uint64_t layout_span(const attn_layout *l) {
  if (!l->n[0] || !l->n[1] || !l->n[2] || !l->row)
    return 0;
  size_t str[3] = {l->st->batch, l->st->head, l->st->seq};
  uint64_t last = 0;
  for (int i = 0; i < 3; i++)
    last = wgc_sat_add(last, wgc_sat_mul(l->n[i] - 1, str[i]));
  return wgc_sat_add(last, l->row);
}

/* Whether distinct (batch, head, seq) rows of an output layout can share
 * an element: each dimension of more than one entry, by increasing stride,
 * must step past everything the smaller ones cover. */
static bool rows_overlap(const attn_layout *l) {
  uint64_t st[3] = {l->st->batch, l->st->head, l->st->seq};
  uint64_t n[3] = {l->n[0], l->n[1], l->n[2]};
  for (int a = 0; a < 3; a++) /* sort by stride */
    for (int b = a + 1; b < 3; b++)
      if (st[b] < st[a]) {
        uint64_t t = st[a];
        st[a] = st[b], st[b] = t;
        t = n[a], n[a] = n[b], n[b] = t;
      }
  uint64_t extent = l->row;
  for (int i = 0; i < 3; i++) {
    if (n[i] <= 1)
      continue;
    if (st[i] < extent)
      return true;
    extent = wgc_sat_add(wgc_sat_mul(n[i] - 1, st[i]), extent);
  }
  return false;
}

wgc_status wgc_attention(wgc_context *ctx, const wgc_attention_desc *d,
                         wgc_ptr q, wgc_ptr k, wgc_ptr v, wgc_ptr o) {
  const char *fn = "wgc_attention";
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (!d)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: d is NULL", fn);
  wgc_attention_args a = {.d = *d, .fn = fn};
  wgc_attention_desc *ad = &a.d;
  if (!ad->heads_kv)
    ad->heads_kv = ad->heads;
  if (!ad->head_dim_v)
    ad->head_dim_v = ad->head_dim;
  if (ad->heads_kv && ad->heads % ad->heads_kv)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->heads %zu is not a multiple of d->heads_kv %zu", fn,
                    ad->heads, ad->heads_kv);
  if (!(isfinite(ad->scale) && ad->scale > 0))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->scale %g must be finite and > 0", fn,
                    (double)ad->scale);
  if (!(isfinite(ad->softcap) && ad->softcap >= 0))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->softcap %g must be finite and >= 0 (0: none)", fn,
                    (double)ad->softcap);
  if ((unsigned)ad->causal > WGC_CAUSAL_BOTTOM_RIGHT)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->causal %d is not a wgc_causal", fn,
                    (int)ad->causal);
  /* Scores need a key dimension: head_dim 0 leaves them undefined. */
  if (!ad->head_dim && ad->head_dim_v)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->head_dim 0 with d->head_dim_v %zu", fn,
                    ad->head_dim_v);
  const char *type_param[5] = {"d->q_type", "d->k_type", "d->v_type",
                               "d->mask_type", "d->o_type"};
  wgc_dtype types[5] = {ad->q_type, ad->k_type, ad->v_type, ad->mask_type,
                        ad->o_type};
  for (int i = 0; i < 5; i++) {
    wgc_status s = wgc_check_float_type(ctx, fn, type_param[i], types[i]);
    if (s != WGC_OK)
      return s;
  }
  size_t B = ad->batch, H = ad->heads, HK = ad->heads_kv;
  size_t SQ = ad->seq_q, SK = ad->seq_kv, D = ad->head_dim, DV = ad->head_dim_v;
  size_t bh;
  if (SQ > ATTN_SEQ_MAX || SK > ATTN_SEQ_MAX || D > ATTN_DIM_MAX ||
      DV > ATTN_DIM_MAX || !wgc_mul_ok(B, H, &bh) ||
      (uint64_t)bh > ATTN_HEADS_MAX)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d (seq_q %zu, seq_kv %zu, head_dim %zu, head_dim_v "
                    "%zu, batch %zu * heads %zu) exceeds the 32-bit limits: "
                    "seq_q and seq_kv below 2^31, head sizes at most 2^28, "
                    "batch * heads below 2^32",
                    fn, SQ, SK, D, DV, B, H);
  attn_layout lay[4] = {{"q", {B, H, SQ}, D, &ad->q_stride},
                        {"k", {B, HK, SK}, D, &ad->k_stride},
                        {"v", {B, HK, SK}, DV, &ad->v_stride},
                        {"o", {B, H, SQ}, DV, &ad->o_stride}};
  size_t qn;
  size_t q_dims[] = {B, H, SQ, D > DV ? D : DV};
  size_t kv_dims[] = {B, HK, SK, D > DV ? D : DV, 4};
  if (!wgc_product(q_dims, 4, &qn) || !wgc_product(kv_dims, 5, &(size_t){0}) ||
      qn > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d describes tensors too large to address", fn);
  if (qn == 0)
    return WGC_OK;
  for (int i = 0; i < 4; i++)
    default_strides(&lay[i]);
  if (rows_overlap(&lay[3]))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->o_stride (%zu, %zu, %zu) makes rows of o overlap",
                    fn, ad->o_stride.batch, ad->o_stride.head,
                    ad->o_stride.seq);
  a.has_mask = ad->mask && SK;
  attn_layout mlay = {"mask", {B, H, SQ}, SK, &ad->mask_stride};
  wgc_operand ops[5];
  wgc_dtype op_type[5];
  size_t nops = 0;
  const attn_layout *op_lay[5] = {&lay[0], &lay[1], &lay[2], &mlay, &lay[3]};
  const wgc_ptr addr[5] = {q, k, v, ad->mask, o};
  for (int i = 0; i < 5; i++) {
    if (i == 3 && !a.has_mask)
      continue;
    /* a dense operand's footprint, then the strided span in place of it */
    ops[nops] = wgc_float_operand(op_lay[i]->param, addr[i], types[i], 0);
    ops[nops].bytes = wgc_sat_mul(ops[nops].align, layout_span(op_lay[i]));
    op_type[nops++] = types[i];
  }
  /* Footprints are first to last element: o may not share that range with
   * any input, even where its rows would fall between theirs. */
  wgc_status s = WGC_OK;
  for (size_t i = 0; i < nops && s == WGC_OK; i++)
    s = wgc_check_float_operand(ctx, fn, &ops[i], op_type[i]);
  if (s == WGC_OK)
    s = wgc_check_all(ctx, fn, ops, nops);
  if (s != WGC_OK)
    return s;
  a.q = ops[0].ref;
  a.k = ops[1].ref;
  a.v = ops[2].ref;
  if (a.has_mask)
    a.mask = ops[3].ref;
  a.o = ops[nops - 1].ref;
  return ctx->be->attention(ctx, &a);
}
