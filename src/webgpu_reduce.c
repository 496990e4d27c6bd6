/* reduce on WebGPU: kernel not written yet. */
#include "webgpu.h"

wgc_status wg_reduce(wgc_context *ctx, const wgc_reduce_args *r) {
  (void)r;
  return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                  "wgc_reduce: not yet implemented on WebGPU");
}
