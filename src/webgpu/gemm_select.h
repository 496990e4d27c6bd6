/* How the GEMM planner (gemm.c) runs a product: which kernel, tile and
 * invocation block, chosen per adapter and shape (gemm_select.c). */
#ifndef WGC_WEBGPU_GEMM_SELECT_H
#define WGC_WEBGPU_GEMM_SELECT_H

#include "wg.h"

typedef enum {
  GEMM_SMALL,  /* gemm_small: one invocation per output */
  GEMM_SHARED, /* gemm: tiles staged through workgroup memory */
  GEMM_REGS,   /* gemm_rv: register blocks read straight from memory */
  GEMM_MV      /* gemm_mv: one invocation per output, B read by words */
} gemm_kernel;

typedef struct gemm_choice {
  gemm_kernel kernel;
  uint32_t bm, bn; /* C tile of one workgroup (GEMM_SHARED, GEMM_REGS) */
  uint32_t bk;     /* k step of GEMM_SHARED; split-K slices are multiples */
  uint32_t tm, tn; /* C block of one invocation */
  /* GEMM_REGS: four k a turn where A's rows allow vec4 reads along k
   * (faster on llvmpipe, slower on SwiftShader) */
  bool k4;
  /* The workgroup tile that sets the split-K slices (0: bm, bn): the
   * model's best block's, also while a cheaper one stands in for it, so
   * that a product sums in the same order before and after. */
  uint32_t split_bm, split_bn;
  /* The block this one stands in for (its index + 1; 0: none) and the
   * seconds a call loses by that, charged by wg_gemm_charge. */
  unsigned wanted;
  double rent;
} gemm_choice;

/* The blocks of gemm_rv the model chooses from (gemm_select.c). */
#define GEMM_BLOCKS 5

/* The choice for nb products of mm x nn over kk on ctx's adapter: forced
 * by WGC_GEMM_VARIANT where set (tests and benchmarks; see gemm_select.c),
 * else from the adapter's kernel form, SIMD width, the shape and which
 * blocks this context has paid the compile time of. Reads the context
 * only: a call may ask several times. */
gemm_choice wg_gemm_choose(const wgc_context *ctx, uint64_t nb, uint64_t mm,
                           uint64_t nn, uint64_t kk);

/* Whether a product of mm rows whose B (of type bt) has k contiguous runs
 * as gemm_mv: on CPU adapters for m = 1 (decoding), or where
 * WGC_GEMM_VARIANT=mv forces it (any m). */
bool wg_gemm_mv(const wgc_context *ctx, uint64_t mm, wgc_dtype bt);

/* Records that a launch of choice c was planned: a block whose compile
 * time the calls standing in for it have lost is used from the next call
 * on. */
void wg_gemm_charge(wgc_context *ctx, const gemm_choice *c);

#endif
