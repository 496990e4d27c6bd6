/* The WebGPU execution engine: one command encoder per batch, the uniform
 * arena for launch parameters, scratch memory and the device policy.
 * Launches are planned and recorded by webgpu/plan.c. Calls only
 * src/gpu/gpu.h. */
#include "wg.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wg_state *state(const wgc_context *ctx) { return ctx->impl; }

/* Turns a device error, if any, into a status with a message. */
wgc_status wg_device_error(wgc_context *ctx, const char *fn) {
  char msg[400];
  wgc_status s = gpu_take_error(((wg_state *)ctx->impl)->dev, msg, sizeof msg);
  if (s != WGC_OK)
    return wgc_fail(ctx, s, "%s: %s: %s", fn,
                    s == WGC_ERR_DEVICE_LOST ? "the device was lost"
                                             : "the device reported an error",
                    msg);
  return WGC_OK;
}

/* ---- batching ---------------------------------------------------------- */

/* Maps the slabs whose copies were just submitted (newest first, up to the
 * first one already sealed). */
static void seal_downloads(wg_state *st) {
  if (!st->slabs || st->slabs->sealed)
    return;
  st->open = NULL;
  for (wg_slab *sl = st->slabs, *next; sl && !sl->sealed; sl = next) {
    next = sl->next;
    sl->sealed = true;
    gpu_buffer_map_read(sl->buf, 0, sl->used, sl->mapped, sl);
  }
}

/* Submits the batch being recorded, if any. Never waits. */
void wg_flush(wg_state *st) {
  if (st->enc) {
    if (st->arena_used)
      gpu_queue_write(st->dev, st->arena, 0, st->arena_host,
                      (st->arena_used + 3) & ~(size_t)3);
    gpu_encoder_submit(st->dev, st->enc);
    st->submit_total++;
    st->enc = 0;
    st->dispatches = 0;
    st->writes = 0;
    st->arena_used = 0;
    st->arena_last = 0;
  }
  seal_downloads(st); /* their copies are submitted: map after them */
  if (st->in_op)
    return; /* the op records more launches that use its scratch */
  /* Submitted work keeps the buffers alive; only our handles go. */
  st->stage = NULL;
  for (size_t i = 0; i < st->scratch_count; i++) {
    gpu_buffer_release(st->scratch[i]->buffer);
    free(st->scratch[i]);
  }
  st->scratch_count = 0;
}

gpu_id wg_encoder(wg_state *st) {
  if (!st->enc)
    st->enc = gpu_encoder_create(st->dev);
  return st->enc;
}

wgc_status wg_buffer_new(wgc_context *ctx, const char *fn, uint64_t size,
                         unsigned usage, const char *what, gpu_id *out) {
  *out = gpu_buffer_create(state(ctx)->dev, size, usage);
  if (*out)
    return WGC_OK;
  wgc_status s = wg_device_error(ctx, fn);
  return s != WGC_OK ? s
                     : wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                                "%s: cannot allocate %" PRIu64 " bytes of %s",
                                fn, size, what);
}

/* ---- policy ------------------------------------------------------------ */

static bool contains_nocase(const char *s, const char *word) {
  size_t n = strlen(word);
  for (; *s; s++) {
    size_t i = 0;
    while (i < n && s[i] &&
           tolower((unsigned char)s[i]) == tolower((unsigned char)word[i]))
      i++;
    if (i == n)
      return true;
  }
  return false;
}

/* The adapter's SIMD width in floats and whether it is llvmpipe, from its
 * name: "llvmpipe (LLVM 15.0.6, 256 bits)"; SwiftShader and unknown CPU
 * adapters run 4 lanes. */
static uint32_t simd_lanes(const char *name, bool *llvmpipe) {
  *llvmpipe = contains_nocase(name, "llvmpipe");
  if (!*llvmpipe)
    return 4;
  const char *bits = strstr(name, " bits");
  if (!bits)
    return 8;
  const char *p = bits;
  while (p > name && isdigit((unsigned char)p[-1]))
    p--;
  unsigned long b = strtoul(p, NULL, 10);
  return b >= 128 && b <= 512 ? (uint32_t)(b / 32) : 8;
}

const gpu_limits *wg_limits(const wgc_context *ctx) { return &state(ctx)->lim; }

const wg_policy *wg_policy_of(const wgc_context *ctx) {
  return &state(ctx)->pol;
}

void wg_policy_init(wg_state *st) {
  const gpu_limits *lim = &st->lim;
  wg_policy *p = &st->pol;
  p->window = lim->max_storage_binding_size;
  p->storage_align = lim->min_storage_offset_alignment
                         ? lim->min_storage_offset_alignment
                         : 256;
  p->uniform_align = lim->min_uniform_offset_alignment
                         ? lim->min_uniform_offset_alignment
                         : 256;
  p->window_elems = p->window > 256 ? (p->window - 256) / 4 : 0;
  p->max_groups = lim->max_workgroups_per_dimension
                      ? lim->max_workgroups_per_dimension
                      : 65535;
  p->loop_budget = lim->loop_budget;
  p->cpu_kernels = lim->cpu_adapter;
  p->simd_lanes = simd_lanes(st->name, &p->llvmpipe);
}
