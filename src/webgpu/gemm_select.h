/* How the GEMM planner (gemm.c) runs a product: which kernel, tile and
 * invocation block, chosen per adapter and shape (gemm_select.c). */
#ifndef WGC_WEBGPU_GEMM_SELECT_H
#define WGC_WEBGPU_GEMM_SELECT_H

#include "wg.h"

typedef enum {
  GEMM_SMALL,  /* gemm_small: one invocation per output */
  GEMM_SHARED, /* gemm: tiles staged through workgroup memory */
  GEMM_REGS    /* gemm_rv: register blocks read straight from memory */
} gemm_kernel;

typedef struct gemm_choice {
  gemm_kernel kernel;
  uint32_t bm, bn; /* C tile of one workgroup (GEMM_SHARED, GEMM_REGS) */
  uint32_t bk;     /* k step of GEMM_SHARED; split-K slices are multiples */
  uint32_t tm, tn; /* C block of one invocation */
  /* GEMM_REGS: four k a turn where A's rows allow vec4 reads along k
   * (faster on llvmpipe, slower on SwiftShader) */
  bool k4;
} gemm_choice;

/* The choice for nb products of mm x nn over kk on ctx's adapter: forced
 * by WGC_GEMM_VARIANT where set (tests and benchmarks; see gemm_select.c),
 * else from the adapter's kernel form, SIMD width and the shape. */
gemm_choice wg_gemm_choose(const wgc_context *ctx, uint64_t nb, uint64_t mm,
                           uint64_t nn, uint64_t kk);

#endif
