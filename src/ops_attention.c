/* attention entry point: desc defaults and checks, footprints, dispatch. */
#include "internal.h"

#include "validate.h"

#include <math.h>

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
  if (ad->heads_kv && ad->heads % ad->heads_kv)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->heads %zu is not a multiple of d->heads_kv %zu", fn,
                    ad->heads, ad->heads_kv);
  if (!(isfinite(ad->scale) && ad->scale > 0))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->scale %g must be finite and > 0", fn,
                    (double)ad->scale);
  if ((unsigned)ad->causal > WGC_CAUSAL_BOTTOM_RIGHT)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d->causal %d is not a wgc_causal", fn,
                    (int)ad->causal);
  size_t qn, kvn;
  size_t q_dims[] = {ad->batch, ad->heads, ad->seq_q, ad->head_dim};
  size_t kv_dims[] = {ad->batch, ad->heads_kv, ad->seq_kv, ad->head_dim};
  if (!wgc_product(q_dims, 4, &qn) || !wgc_product(kv_dims, 4, &kvn) ||
      qn > SIZE_MAX / 4 || kvn > SIZE_MAX / 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: d describes tensors too large to address", fn);
  if (qn == 0)
    return WGC_OK;
  wgc_operand ops[4] = {
      wgc_flat_operand("q", q, qn), wgc_flat_operand("k", k, kvn),
      wgc_flat_operand("v", v, kvn), wgc_flat_operand("o", o, qn)};
  wgc_status s = wgc_check_all(ctx, fn, ops, 4);
  if (s != WGC_OK)
    return s;
  a.q = ops[0].ref;
  a.k = ops[1].ref;
  a.v = ops[2].ref;
  a.o = ops[3].ref;
  return ctx->be->attention(ctx, &a);
}
