/* The GEMM planner as a step of other planners: an op that composes a
 * GEMM with launches of its own emits all of them into one plan, so the
 * whole op is checked, allocated and recorded together (plan.h). */
#ifndef WGC_WEBGPU_GEMM_H
#define WGC_WEBGPU_GEMM_H

#include "plan.h"

/* Emits the launches (and scratch) of GEMM g into wp, split as wg_gemm
 * splits it; they run in plan order after what wp already holds. Messages
 * name wp->fn (g->fn is not read). */
wgc_status wg_gemm_plan(wg_plan *wp, const wgc_gemm_args *g);

#endif
