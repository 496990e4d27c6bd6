/* conv2d on WebGPU: kernel not written yet. */
#include "webgpu.h"

wgc_status wg_conv2d(wgc_context *ctx, const wgc_conv2d_args *c) {
  (void)c;
  return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                  "wgc_conv2d: not yet implemented on WebGPU");
}
