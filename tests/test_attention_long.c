/* Attention over long key ranges on a context created normally, so that on
 * a CPU adapter the CPU-adapter kernel form runs (kernels/attention_block.wgsl
 * up to head_dim 512, decoding over key blocks; kernels/attention.wgsl past
 * it).
 * llvmpipe (lavapipe) silently ends a shader invocation after 65535 loop
 * iterations in total, which left the tail of long key ranges out (errors
 * ~1e-2 from about 7800 keys at head_dim 128, 3400 at 300, 15000 at 64);
 * the host caps the keys of one launch and combines key blocks (split-KV).
 * Each case is compared against the CPU backend within API.md's bound. */
#include "harness.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>

static void long_case(size_t batch, size_t heads, size_t heads_kv, size_t seq_q,
                      size_t seq_kv, size_t hd, wgc_causal causal) {
  static const char *masks[] = {"none", "top_left", "bottom_right"};
  if (!case_begin(
          "attention[webgpu] long keys batch=%zu heads=%zu heads_kv=%zu "
          "seq_q=%zu seq_kv=%zu head_dim=%zu causal=%s",
          batch, heads, heads_kv, seq_q, seq_kv, hd, masks[causal]))
    return;
  wgc_context *ctxs[2] = {test_ctx(WGC_BACKEND_CPU),
                          test_ctx(WGC_BACKEND_WEBGPU)};
  if (!ctxs[0] || !ctxs[1]) {
    case_end();
    return;
  }
  wgc_attention_desc d = {.batch = batch,
                          .heads = heads,
                          .heads_kv = heads_kv,
                          .seq_q = seq_q,
                          .seq_kv = seq_kv,
                          .head_dim = hd,
                          .scale = 1.0f / sqrtf((float)hd),
                          .causal = causal};
  size_t nq = batch * heads * seq_q * hd, nkv = batch * heads_kv * seq_kv * hd;
  float *q = falloc(nq), *k = falloc(nkv), *v = falloc(nkv);
  float *outs[2] = {falloc(nq), falloc(nq)};
  /* scores of several units: the softmax is far from uniform */
  fill_uniform(q, nq, -2.0f, 2.0f, 31);
  fill_uniform(k, nkv, -2.0f, 2.0f, 32);
  fill_uniform(v, nkv, -1.0f, 1.0f, 33);
  bool ran = true;
  for (int i = 0; i < 2; i++) {
    wgc_context *c = ctxs[i];
    wgc_ptr dq = dev_from(c, q, nq), dk = dev_from(c, k, nkv),
            dv = dev_from(c, v, nkv), dout = dev_alloc(c, 4 * nq);
    wgc_status s = wgc_attention(c, &d, dq, dk, dv, dout);
    CHECK(s == WGC_OK, "wgc_attention[%s] returned %s: %s", wgc_backend_name(c),
          wgc_status_name(s), wgc_last_error(c));
    ran = ran && s == WGC_OK && dev_read(c, outs[i], dout, nq);
    dev_free(c, dq);
    dev_free(c, dk);
    dev_free(c, dv);
    dev_free(c, dout);
  }
  /* API.md: 1e-5 * head_dim * max|q| * max|k| * max|v| for each side:
   * twice that between them. */
  double tol = 2e-5 * (double)hd * 2.0 * 2.0 * 1.0;
  const float *want = outs[0], *got = outs[1];
  for (size_t r = 0; ran && r < nq / hd; r++) {
    for (size_t j = 0; j < hd; j++) {
      double g = got[r * hd + j], w = want[r * hd + j];
      if (!(fabs(g - w) <= tol)) {
        CHECK(false, "o[%zu] (row %zu) = %.9g, want %.9g (bound %.3g)",
              r * hd + j, r, g, w, tol);
        r = nq;
        break;
      }
    }
  }
  free(q);
  free(k);
  free(v);
  free(outs[0]);
  free(outs[1]);
  case_end();
}

TEST(attention_cpu_form_long_keys) {
  const wgc_causal NONE = WGC_CAUSAL_NONE, TL = WGC_CAUSAL_TOP_LEFT,
                   BR = WGC_CAUSAL_BOTTOM_RIGHT;
  /* decoding against a long KV cache, MQA and GQA: past the ~7800 keys
   * one lavapipe invocation could cover at head_dim 128 */
  long_case(1, 4, 1, 1, 9000, 128, BR);
  long_case(2, 4, 2, 5, 8200, 128, NONE);
  /* head_dim not a multiple of 4 (the last vec4 is partial) */
  long_case(1, 2, 1, 2, 8200, 130, BR);
  /* head_dim 300: lavapipe stopped at ~3400 keys */
  long_case(1, 2, 2, 16, 3500, 300, BR);
  long_case(1, 2, 1, 3, 3000, 300, TL);
  long_case(1, 2, 1, 2, 6000, 300, NONE);
  /* the largest head_dim of the form */
  long_case(1, 2, 1, 2, 3000, 512, NONE);
  /* BOTTOM_RIGHT with seq_q > seq_kv: the first rows see no key */
  long_case(1, 2, 1, 12, 6, 128, BR);
  /* head_dim 64 (kernels/attention.wgsl): lavapipe stopped at ~15400 */
  long_case(1, 2, 1, 4, 17000, 64, NONE);
  long_case(1, 4, 2, 3, 16500, 64, BR);
}
