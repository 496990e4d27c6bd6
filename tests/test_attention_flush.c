/* Attention with a Q element of FLT_MIN against a key with an infinite
 * element there: the score is scale * (q . k) = -inf (weight 0) and the
 * row finite. A kernel that scaled Q first made that element subnormal,
 * which SwiftShader flushes to 0, and 0 * -inf turned the row NaN (run
 * with VK_DRIVER_FILES=/usr/lib/chromium/vk_swiftshader_icd.json; lavapipe
 * keeps subnormals). head_dim 2 runs the "rows" shape of
 * kernels/attention.wgsl, 96 attention_block.wgsl on CPU adapters (the
 * "tiles" shape elsewhere), with and without a mask. Compared against the
 * float64 formula on both backends. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void flush_case(int bi, size_t hd, bool mask) {
  wgc_context *ctx;
  if (!backend_case(bi, &ctx, "attention FLT_MIN q, -inf k head_dim=%zu%s", hd,
                    mask ? " mask" : ""))
    return;
  enum { B = 1, H = 2, SQ = 3, SK = 5 };
  wgc_attention_desc d = {.batch = B,
                          .heads = H,
                          .seq_q = SQ,
                          .seq_kv = SK,
                          .head_dim = hd,
                          .scale = 0.5f};
  size_t nq = B * H * SQ * hd, nk = B * H * SK * hd, nm = SQ * SK;
  float *q = falloc(nq), *k = falloc(nk), *v = falloc(nk), *m = falloc(nm);
  float *got = falloc(nq);
  fill_uniform(q, nq, -1, 1, 51);
  fill_uniform(k, nk, -1, 1, 52);
  fill_uniform(v, nk, -1, 1, 53);
  fill_uniform(m, nm, -1, 1, 54);
  /* every query row's first and last dims FLT_MIN (scale * FLT_MIN is
   * subnormal); key 2 of each head -inf in the last, key 4 in the first */
  for (size_t r = 0; r < B * H * SQ; r++)
    q[r * hd] = q[r * hd + hd - 1] = FLT_MIN;
  for (size_t h = 0; h < B * H; h++) {
    k[(h * SK + 2) * hd + hd - 1] = -INFINITY;
    k[(h * SK + 4) * hd] = -INFINITY;
  }
  if (mask)
    d.mask_stride = (wgc_attention_strides){0, 0, SK};
  wgc_ptr dq = dev_from(ctx, q, nq), dk = dev_from(ctx, k, nk),
          dv = dev_from(ctx, v, nk), dm = mask ? dev_from(ctx, m, nm) : 0,
          dout = dev_alloc(ctx, 4 * nq);
  if (dq && dk && dv && dout && (!mask || dm)) {
    wgc_attention_desc dd = d;
    dd.mask = dm;
    CHECK_OK(ctx, wgc_attention(ctx, &dd, dq, dk, dv, dout));
    if (dev_read(ctx, got, dout, nq)) {
      double *want = dalloc(nq);
      wgc_attention_desc hd_ = d;
      if (mask)
        hd_.mask = (wgc_ptr)(uintptr_t)m;
      ref_attention(&hd_, q, k, v, want);
      /* max|q|, max|k| and max|v| below 1, max|mask| below 1 */
      double bound = 1e-5 * (double)hd + 4e-6 + 1e-6;
      char key[64];
      snprintf(key, sizeof key, "attention_flush[%s]",
               backend_label(test_backends[bi]));
      CHECK_CLOSE(key, NULL, got, want, nq, 0, bound);
      free(want);
    }
  }
  dev_free(ctx, dq);
  dev_free(ctx, dk);
  dev_free(ctx, dv);
  dev_free(ctx, dm);
  dev_free(ctx, dout);
  free(q);
  free(k);
  free(v);
  free(m);
  free(got);
  case_end();
}

TEST(attention_flush_scaled_q) {
  static const size_t dims[] = {2, 96};
  for (size_t i = 0; i < 2; i++)
    for (int mask = 0; mask < 2; mask++)
      for (int bi = 0; bi < 2; bi++)
        flush_case(bi, dims[i], mask);
}
