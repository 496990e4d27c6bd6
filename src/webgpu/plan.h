/* Plans: the one way a WebGPU op records work. A planner emits launches (as
 * values: kernel, consts, operands, a copy of the parameters, grid) and asks
 * for scratch memory as symbolic handles into a wg_plan; wg_plan_run then
 * checks every launch against the device's limits, allocates the scratch,
 * and only when all of that succeeded records the launches. An op therefore
 * changes nothing when it fails (a launch that cannot bind, scratch or a
 * bind group that cannot be made, a kernel that does not compile). */
#ifndef WGC_WEBGPU_PLAN_H
#define WGC_WEBGPU_PLAN_H

#include "wg.h"

typedef struct wg_planned wg_planned;

typedef struct wg_plan {
  wgc_context *ctx;
  const char *fn; /* the public entry point, for messages */
  const wg_policy *pol;
  wg_planned *launches;
  size_t count, cap;
  wg_mem **scratch; /* handles; their buffers exist once the plan runs */
  size_t nscratch, scratch_cap;
  wgc_status status; /* the first failure while planning */
  bool staging;      /* launches may stage operands (see wg_plan_search) */
} wg_plan;

/* An empty plan for an op of ctx entered through fn. */
void wg_plan_init(wg_plan *p, wgc_context *ctx, const char *fn);
/* Releases what the plan holds (after wg_plan_run, or instead of it). */
void wg_plan_free(wg_plan *p);

/* Appends launch l, copying its parameters and consts; l->params only has
 * to live until this returns. */
wgc_status wg_plan_add(wg_plan *p, const wg_launch *l);
/* Appends a copy of bytes (a multiple of 4) from src to dst: a buffer copy
 * between allocations, the copy kernel within one. */
wgc_status wg_plan_copy(wg_plan *p, wgc_ref dst, wgc_ref src, uint64_t bytes);
/* Appends n elements of src (type st) into dst (type dt), each F32, F16
 * or BF16 (refs at element 0, a 2-byte one at any even offset): f32 to
 * f32 as wg_plan_copy, anything else by windows of the copy kernel with
 * typed operands, which copies the bits of one type and converts between
 * two as wgc_cast does. */
wgc_status wg_plan_convert(wg_plan *p, wgc_ref dst, wgc_dtype dt, wgc_ref src,
                           wgc_dtype st, uint64_t n);
/* A handle to scratch memory of at least bytes, usable as an operand's ref
 * (with offsets) by the plan's launches; allocated by wg_plan_run and
 * released after the batch that uses it completes. */
wgc_status wg_plan_scratch(wg_plan *p, uint64_t bytes, wgc_ref *out);

/* Checks, allocates and records the plan, then frees it. Everything that
 * can fail (bindings, grid, pipelines, scratch, bind groups) is done before
 * the first launch is recorded, so on failure nothing is recorded, what was
 * allocated for the plan is released, and the status of the first failure
 * (while planning or running) is returned. A device error that surfaces
 * only after recording (a device lost meanwhile) is reported too, but the
 * launches recorded before it stand. */
wgc_status wg_plan_run(wg_plan *p);

/* Drops the launches emitted after the plan held count of them, so a
 * planner can try a tiling, find a piece that does not bind, and retry. */
static inline void wg_plan_rewind(wg_plan *p, size_t count) {
  if (count < p->count)
    p->count = count;
}

/* Ends planning: runs the plan when s (the planner's status) is WGC_OK,
 * otherwise frees it and returns s. */
static inline wgc_status wg_plan_finish(wg_plan *p, wgc_status s) {
  if (s != WGC_OK) {
    wg_plan_free(p);
    return s;
  }
  return wg_plan_run(p);
}

/* Whether a launch with these operands binds as it is (no staging); scratch
 * handles count as buffers of their own. Planners split until it does. */
bool wg_plan_fits(const wg_plan *p, const wg_operand *ops, unsigned nops);
/* Whether it binds at all: as it is, or with groups of operands that lie
 * too close in one buffer staged through scratch (see wg_operands_bind). */
bool wg_plan_binds(const wg_plan *p, const wg_operand *ops, unsigned nops);

/* Whether a planner may emit a launch with these operands into p: they
 * bind as they are (wg_plan_fits), or, in a plan that allows staging, at
 * all (wg_plan_binds). */
static inline bool wg_plan_admits(const wg_plan *p, const wg_operand *ops,
                                  unsigned nops) {
  return p->staging ? wg_plan_binds(p, ops, nops) : wg_plan_fits(p, ops, nops);
}

/* Emits an op's launches for windows of at most window (in the planner's
 * own unit) into p; WGC_ERR_UNSUPPORTED when a launch is not admitted
 * (wg_plan_admits). */
typedef wgc_status (*wg_search_fn)(wg_plan *p, void *user, uint64_t window);

/* Plans an op whose launches bind only below some window: plan at windows
 * top, top/2, ... while at least least, launches binding as they are; then
 * the same with staging allowed. Runs the first plan that plans, and
 * returns what planning or running it returned. Returns
 * WGC_ERR_UNSUPPORTED, having recorded nothing, when no window binds. */
wgc_status wg_plan_search(wgc_context *ctx, const char *fn, uint64_t top,
                          uint64_t least, wg_search_fn plan, void *user);

/* Fills launch l (its parameters in params, WG_PARAMS_MAX bytes) for the
 * window [at, at + n) of a 1-D range. */
typedef void (*wg_window_fn)(void *user, uint64_t at, uint64_t n, wg_launch *l,
                             void *params);

/* Emits launches covering [0, total) in windows of at most most, each
 * halved until its operands bind as they are (a window of one is emitted
 * regardless: its operands are staged if need be). */
wgc_status wg_plan_windows(wg_plan *p, uint64_t total, uint64_t most,
                           wg_window_fn fill, void *user);

/* The operand name of type t at element e from base, spanning span
 * elements (e whole blocks of a block type): bound from a 4-byte
 * boundary, element 0 lead bytes in (wg_operand). */
wg_operand wg_typed_operand(const char *name, wgc_ref base, wgc_dtype t,
                            uint64_t e, uint64_t span, bool write);

#endif
