/* attention on WebGPU: kernel not written yet. */
#include "webgpu.h"

wgc_status wg_attention(wgc_context *ctx, const wgc_attention_args *a) {
  (void)a;
  return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                  "wgc_attention: not yet implemented on WebGPU");
}
