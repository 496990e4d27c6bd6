/* Operands that an operation reads nothing of: their addresses must be live,
 * but batch strides over an empty matrix claim no memory. */
#include "harness.h"
#include "util.h"

#include <math.h>

/* Batched GEMM with k == 0: A (m x 0) and B (0 x n) are empty in every
 * batch, so their strides reach no element; C := beta*C. */
TEST(empty_gemm_batched_k0) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "empty_gemm_batched_k0"))
      continue;
    enum { BATCH = 5, M = 2, N = 3 };
    float c0[BATCH * M * N], got[BATCH * M * N];
    fill_uniform(c0, BATCH * M * N, -1, 1, 7);
    wgc_ptr a = dev_alloc(ctx, 4), b = dev_alloc(ctx, 4);
    wgc_ptr c = dev_from(ctx, c0, BATCH * M * N);
    for (int layout = 0; layout < 2; layout++) {
      CHECK_STATUS(wgc_upload(ctx, c, c0, sizeof c0), WGC_OK);
      wgc_layout lay = layout ? WGC_ROW_MAJOR : WGC_COL_MAJOR;
      size_t ldc = layout ? N : M, lda = layout ? M : 1; /* A^T is k x m */
      wgc_status s =
          wgc_gemm_batched(ctx, lay, WGC_TRANS, WGC_NO_TRANS, M, N, 0, 1.0f, a,
                           lda, 3, b, N, 2, -0.5f, c, ldc, M * N, BATCH);
      CHECK(s == WGC_OK, "layout %d: %s: %s", layout, wgc_status_name(s),
            wgc_last_error(ctx));
      if (dev_read(ctx, got, c, BATCH * M * N))
        for (int i = 0; i < BATCH * M * N; i++)
          if (got[i] != -0.5f * c0[i]) {
            CHECK(false, "layout %d: C[%d] = %g, want %g", layout, i,
                  (double)got[i], -0.5 * c0[i]);
            break;
          }
    }
    dev_free(ctx, a);
    dev_free(ctx, b);
    dev_free(ctx, c);
    case_end();
  }
}
