/* gemm on WebGPU: kernel not written yet. */
#include "webgpu.h"

wgc_status wg_gemm(wgc_context *ctx, const wgc_gemm_args *g) {
  (void)g;
  return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                  "wgc_gemm: not yet implemented on WebGPU");
}
