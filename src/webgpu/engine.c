/* The WebGPU execution engine: one command encoder per batch, a uniform
 * arena for launch parameters, and launches with their
 * bindings planned (see webgpu/wg.h), staged through scratch where operands
 * of one buffer cannot share a binding within the limit. Calls only
 * src/gpu/gpu.h. */
#include "wg.h"

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

/* Submits the batch being recorded, if any. Never waits. */
void wg_flush(wg_state *st) {
  if (st->enc) {
    if (st->arena_used)
      gpu_queue_write(st->dev, st->arena, 0, st->arena_host,
                      (st->arena_used + 3) & ~(size_t)3);
    gpu_encoder_submit(st->dev, st->enc);
    st->enc = 0;
    st->dispatches = 0;
    st->writes = 0;
    st->arena_used = 0;
  }
  wg_seal_downloads(st); /* their copies are submitted: map after them */
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

wgc_status wg_scratch(wgc_context *ctx, const char *fn, uint64_t bytes,
                      wgc_ref *out) {
  wg_state *st = state(ctx);
  if (st->scratch_count == st->scratch_cap) {
    size_t cap = st->scratch_cap ? 2 * st->scratch_cap : 8;
    wg_mem **grown = realloc(st->scratch, cap * sizeof *grown);
    if (!grown)
      return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    st->scratch = grown;
    st->scratch_cap = cap;
  }
  wg_mem *m = calloc(1, sizeof *m);
  if (!m)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  m->size = bytes < 4 ? 4 : (bytes + 3) & ~(uint64_t)3;
  wgc_status s =
      wg_buffer_new(ctx, fn, m->size,
                    GPU_USAGE_STORAGE | GPU_USAGE_COPY_SRC | GPU_USAGE_COPY_DST,
                    "scratch memory", &m->buffer);
  if (s != WGC_OK) {
    free(m);
    return s;
  }
  st->scratch[st->scratch_count++] = m;
  *out = (wgc_ref){.mem = m, .offset = 0};
  return WGC_OK;
}

/* ---- launches ---------------------------------------------------------- */

/* A binding: the window of one buffer that the launch's operands in that
 * buffer share (WebGPU forbids a writable binding that overlaps another
 * binding of the same buffer, so operands of one buffer share one). */
typedef struct binding {
  gpu_id buffer;
  uint64_t lo, hi; /* byte window */
  bool write;
} binding;

static uint64_t align_down(uint64_t x, uint64_t a) { return x - x % a; }

/* Plans the bindings of a launch. WebGPU allows a buffer to be bound
 * several times in one dispatch only if all its bindings are read-only or
 * all are read-write, and read-write bindings must not overlap. So every
 * binding of a buffer that an operand writes is read-write, and operands
 * whose (alignment-extended) windows overlap share one binding. */
static unsigned plan_bindings(const wg_launch *l, uint64_t align,
                              binding *binds, unsigned *op_bind) {
  unsigned nb = 0;
  for (unsigned i = 0; i < l->nops; i++) {
    const wg_operand *o = &l->ops[i];
    const wg_mem *m = o->ref.mem;
    /* A binding is never empty: an operand the kernel will not read (k ==
     * 0, alpha == 0) still binds 4 bytes, inside the buffer. */
    uint64_t lo = o->ref.offset, hi = lo + (o->bytes ? o->bytes : 4);
    if (hi > m->size) {
      hi = m->size;
      lo = hi - 4;
    }
    binds[nb] = (binding){m->buffer, align_down(lo, align), hi, o->write};
    op_bind[i] = nb++;
  }
  for (unsigned i = 0; i < nb; i++)
    for (unsigned j = 0; j < nb; j++)
      if (binds[i].buffer == binds[j].buffer &&
          (binds[i].write || binds[j].write))
        binds[i].write = binds[j].write = true;
  /* Merge overlapping read-write windows until none overlap. */
  for (bool merged = true; merged;) {
    merged = false;
    for (unsigned i = 0; i < nb && !merged; i++)
      for (unsigned j = i + 1; j < nb && !merged; j++) {
        binding *x = &binds[i], *y = &binds[j];
        if (x->buffer != y->buffer || !x->write || x->lo >= y->hi ||
            y->lo >= x->hi)
          continue;
        x->lo = x->lo < y->lo ? x->lo : y->lo;
        x->hi = x->hi > y->hi ? x->hi : y->hi;
        for (unsigned k = 0; k < l->nops; k++)
          op_bind[k] = op_bind[k] == j  ? i
                       : op_bind[k] > j ? op_bind[k] - 1
                                        : op_bind[k];
        memmove(&binds[j], &binds[j + 1], (nb - j - 1) * sizeof *binds);
        nb--;
        merged = true;
      }
  }
  return nb;
}

static uint64_t storage_align(const wg_state *st) {
  return st->lim.min_storage_offset_alignment
             ? st->lim.min_storage_offset_alignment
             : 256;
}

/* The buffers whose binding windows exceed the limit (as a mask over the
 * operands in them); 0 when the launch binds as it is. */
static unsigned oversized_of(const wg_state *st, const wg_launch *l,
                             const binding *binds, unsigned nb) {
  unsigned mask = 0;
  for (unsigned b = 0; b < nb; b++)
    if (binds[b].hi - binds[b].lo > st->lim.max_storage_binding_size)
      for (unsigned i = 0; i < l->nops; i++)
        if (((const wg_mem *)l->ops[i].ref.mem)->buffer == binds[b].buffer)
          mask |= 1u << i;
  return mask;
}

static unsigned oversized(const wg_state *st, const wg_launch *l) {
  binding binds[WG_MAX_OPERANDS];
  unsigned op_bind[WG_MAX_OPERANDS];
  unsigned nb = plan_bindings(l, storage_align(st), binds, op_bind);
  return oversized_of(st, l, binds, nb);
}

bool wg_operands_fit(const wgc_context *ctx, const wg_operand *ops,
                     unsigned nops) {
  wg_launch l = {.nops = nops};
  memcpy(l.ops, ops, nops * sizeof *ops);
  return oversized(state(ctx), &l) == 0;
}

/* ---- staging ------------------------------------------------------------
 * Operands of one buffer that lie too close together (or too far from an
 * aligned offset) to bind within the limit are copied to a staging buffer
 * around the dispatch, each at an aligned offset of its own, and written
 * ones copied back after it. Operands whose bytes overlap (in place) form
 * one cluster that moves together, so aliasing is kept. */

typedef struct cluster {
  unsigned ops;    /* mask of the operands in it */
  uint64_t lo, hi; /* bytes of the source buffer */
  uint64_t at;     /* offset in the staging buffer */
  bool write;
} cluster;

/* The bytes the kernel may touch of operand o, as plan_bindings sees them. */
static void operand_range(const wg_operand *o, uint64_t *lo, uint64_t *hi) {
  const wg_mem *m = o->ref.mem;
  *lo = o->ref.offset;
  *hi = *lo + (o->bytes ? o->bytes : 4);
  if (*hi > m->size) {
    *hi = m->size;
    *lo = *hi - 4;
  }
}

/* Groups the operands of mask into clusters; returns their number. */
static unsigned clusters_of(const wg_launch *l, unsigned mask, cluster *cl) {
  unsigned n = 0;
  for (unsigned i = 0; i < l->nops; i++) {
    if (!(mask >> i & 1))
      continue;
    cluster c = {.ops = 1u << i, .write = l->ops[i].write};
    operand_range(&l->ops[i], &c.lo, &c.hi);
    gpu_id buf = ((const wg_mem *)l->ops[i].ref.mem)->buffer;
    /* absorb every earlier cluster of the buffer that it overlaps */
    for (unsigned j = 0; j < n;) {
      unsigned first = (unsigned)__builtin_ctz(cl[j].ops);
      if (((const wg_mem *)l->ops[first].ref.mem)->buffer == buf &&
          cl[j].lo < c.hi && c.lo < cl[j].hi) {
        c.ops |= cl[j].ops;
        c.lo = c.lo < cl[j].lo ? c.lo : cl[j].lo;
        c.hi = c.hi > cl[j].hi ? c.hi : cl[j].hi;
        c.write |= cl[j].write;
        cl[j] = cl[--n];
        j = 0;
      } else {
        j++;
      }
    }
    cl[n++] = c;
  }
  return n;
}

/* Lays the clusters out in the staging buffer; returns its size, or 0 when
 * a cluster alone exceeds the binding limit (the op must split more). */
static uint64_t stage_layout(const wg_state *st, cluster *cl, unsigned n) {
  uint64_t align = storage_align(st), size = 0;
  for (unsigned c = 0; c < n; c++) {
    if (cl[c].hi - cl[c].lo > st->lim.max_storage_binding_size)
      return 0;
    cl[c].at = size;
    size += (cl[c].hi - cl[c].lo + align - 1) / align * align;
  }
  return size;
}

bool wg_operands_bind(const wgc_context *ctx, const wg_operand *ops,
                      unsigned nops) {
  const wg_state *st = state(ctx);
  wg_launch l = {.nops = nops};
  memcpy(l.ops, ops, nops * sizeof *ops);
  unsigned mask = oversized(st, &l);
  if (!mask)
    return true;
  cluster cl[WG_MAX_OPERANDS];
  return stage_layout(st, cl, clusters_of(&l, mask, cl)) > 0;
}

static wgc_status launch_bound(wgc_context *ctx, const char *fn, wg_launch *l,
                               const binding *binds, const unsigned *op_bind,
                               unsigned nb);

/* Runs l with the operands of the buffers in mask staged. */
static wgc_status launch_staged(wgc_context *ctx, const char *fn, wg_launch *l,
                                unsigned mask) {
  wg_state *st = state(ctx);
  cluster cl[WG_MAX_OPERANDS];
  unsigned n = clusters_of(l, mask, cl);
  uint64_t size = stage_layout(st, cl, n);
  if (!size)
    return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                    "%s: an operand window exceeds the device's storage "
                    "binding limit (%" PRIu64 " bytes)",
                    fn, st->lim.max_storage_binding_size);
  /* One staging buffer serves every staged launch of a batch: commands run
   * in order, so each launch's copies follow the previous one's. */
  if (!st->stage || ((wg_mem *)st->stage)->size < size) {
    wgc_ref r;
    wgc_status s = wg_scratch(ctx, fn, size, &r);
    if (s != WGC_OK)
      return s;
    st->stage = r.mem;
  }
  wg_mem *stage = st->stage;
  /* Scratch (the staging buffer) must outlive a flush inside the launch. */
  bool in_op = st->in_op;
  st->in_op = true;
  wg_launch staged = *l;
  for (unsigned c = 0; c < n; c++) {
    unsigned first = (unsigned)__builtin_ctz(cl[c].ops);
    gpu_encoder_copy(wg_encoder(st),
                     ((const wg_mem *)l->ops[first].ref.mem)->buffer, cl[c].lo,
                     stage->buffer, cl[c].at, cl[c].hi - cl[c].lo);
    for (unsigned i = 0; i < l->nops; i++)
      if (cl[c].ops >> i & 1)
        staged.ops[i].ref = (wgc_ref){
            .mem = stage, .offset = cl[c].at + l->ops[i].ref.offset - cl[c].lo};
  }
  binding binds[WG_MAX_OPERANDS];
  unsigned op_bind[WG_MAX_OPERANDS];
  unsigned nb = plan_bindings(&staged, storage_align(st), binds, op_bind);
  wgc_status s = oversized_of(st, &staged, binds, nb)
                     ? wgc_fail(ctx, WGC_ERR_DEVICE,
                                "%s: a staged launch does not bind", fn)
                     : launch_bound(ctx, fn, &staged, binds, op_bind, nb);
  for (unsigned c = 0; c < n && s == WGC_OK; c++) {
    unsigned first = (unsigned)__builtin_ctz(cl[c].ops);
    if (cl[c].write)
      gpu_encoder_copy(wg_encoder(st), stage->buffer, cl[c].at,
                       ((const wg_mem *)l->ops[first].ref.mem)->buffer,
                       cl[c].lo, cl[c].hi - cl[c].lo);
  }
  st->in_op = in_op;
  if (s == WGC_OK)
    s = wg_device_error(ctx, fn);
  return s;
}

wgc_status wg_launch_run(wgc_context *ctx, const char *fn, wg_launch *l) {
  wg_state *st = state(ctx);
  binding binds[WG_MAX_OPERANDS];
  unsigned op_bind[WG_MAX_OPERANDS];
  unsigned nb = plan_bindings(l, storage_align(st), binds, op_bind);
  unsigned mask = oversized_of(st, l, binds, nb);
  wgc_status s = mask ? launch_staged(ctx, fn, l, mask)
                      : launch_bound(ctx, fn, l, binds, op_bind, nb);
  if (s == WGC_OK && ++st->dispatches >= WG_BATCH_DISPATCHES)
    wg_flush(st);
  return s;
}

/* Whether an arena slot of psize bytes holds params (size bytes, then
 * zeros). */
static bool same_params(const uint8_t *slot, const void *params, size_t size,
                        size_t psize) {
  if (memcmp(slot, params, size))
    return false;
  for (size_t i = size; i < psize; i++)
    if (slot[i])
      return false;
  return true;
}

/* Records the dispatch of a launch whose bindings fit. */
static wgc_status launch_bound(wgc_context *ctx, const char *fn, wg_launch *l,
                               const binding *binds, const unsigned *op_bind,
                               unsigned nb) {
  wg_state *st = state(ctx);
  uint32_t *off = l->params;
  for (unsigned i = 0; i < (l->nops > 4 ? 8u : 4u); i++)
    off[i] = i < l->nops
                 ? (uint32_t)((l->ops[i].ref.offset - binds[op_bind[i]].lo) / 4)
                 : 0;

  bool write[WG_MAX_OPERANDS];
  for (unsigned b = 0; b < nb; b++)
    write[b] = binds[b].write;
  gpu_id pipe;
  wgc_status ps = wg_pipeline_get(ctx, fn, l, op_bind, write, nb, &pipe);
  if (ps != WGC_OK)
    return ps;

  /* Parameters go to the arena; a full arena ends the batch. */
  uint64_t ualign = st->lim.min_uniform_offset_alignment
                        ? st->lim.min_uniform_offset_alignment
                        : 256;
  size_t psize = (l->params_size + 15) & ~(size_t)15;
  /* Parameters equal to the last ones written (a chain of one op) reuse
   * their slot, and with it the bind group, which the GPU layer caches. */
  size_t at = st->arena_used - psize;
  if (st->arena_used < psize || at % ualign ||
      !same_params(st->arena_host + at, l->params, l->params_size, psize)) {
    at = (size_t)((st->arena_used + ualign - 1) / ualign * ualign);
    if (at + psize > WG_ARENA_BYTES) {
      wg_flush(st);
      at = 0;
    }
    memcpy(st->arena_host + at, l->params, l->params_size);
    memset(st->arena_host + at + l->params_size, 0, psize - l->params_size);
    st->arena_used = at + psize;
  }

  gpu_binding gb[WG_MAX_OPERANDS + 1];
  for (unsigned b = 0; b < nb; b++)
    gb[b] =
        (gpu_binding){binds[b].buffer, binds[b].lo, binds[b].hi - binds[b].lo};
  gb[nb] = (gpu_binding){st->arena, at, psize};
  gpu_id group = gpu_bind_group_create(st->dev, pipe, nb + 1, gb);
  if (!group) {
    wgc_status s = wg_device_error(ctx, fn);
    return s != WGC_OK ? s
                       : wgc_fail(ctx, WGC_ERR_DEVICE,
                                  "%s: bind group creation failed", fn);
  }
  uint32_t x = l->x, y = l->y ? l->y : 1, z = l->z ? l->z : 1;
  if (l->groups) {
    uint64_t maxd = st->lim.max_workgroups_per_dimension
                        ? st->lim.max_workgroups_per_dimension
                        : 65535;
    x = (uint32_t)(l->groups < maxd ? l->groups : maxd);
    uint64_t yy = (l->groups + x - 1) / x;
    if (yy > maxd)
      return wgc_fail(ctx, WGC_ERR_UNSUPPORTED,
                      "%s: %" PRIu64 " workgroups exceed the device's grid", fn,
                      l->groups);
    y = (uint32_t)yy;
    z = 1;
  }
  gpu_encoder_dispatch(wg_encoder(st), pipe, group, x, y, z);
  gpu_bind_group_release(group);
  return wg_device_error(ctx, fn);
}
