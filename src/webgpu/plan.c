/* Plans (see webgpu/plan.h): launches recorded as values, checked against
 * the limits in one pass (bindings, staging, grid, pipelines), scratch
 * allocated, and only then recorded into the batch. Also the binding
 * planning that decides how a launch's operands bind: WebGPU allows a
 * buffer to be bound several times in one dispatch only if all its bindings
 * are read-only or all read-write, and read-write bindings must not
 * overlap; operands of one buffer that cannot share a binding within the
 * limit are staged, copied to scratch around the dispatch. */
#include "plan.h"

#include "dtype.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define WG_CONSTS_MAX 320
#define WG_KERNEL_MAX 128
/* Launch arrays up to this many entries are kept for the next plan. */
#define PLAN_SPARE_MAX 64

struct wg_planned {
  /* kernel, params and consts point into the entry when it runs (here
   * kernel only tells a launch from a copy, which has none and reads
   * ops[0], writes ops[1]) */
  wg_launch l;
  _Alignas(16) uint8_t params[WG_PARAMS_MAX];
  char kernel[WG_KERNEL_MAX];
  char consts[WG_CONSTS_MAX];
  bool has_consts;
  /* decided by the check pass */
  bool staged;
  uint32_t x, y, z;
  gpu_id pipe;
  /* decided before recording: the bind group, the parameters' arena slot
   * (new_slot: written there; else the last slot holds them already) and
   * where the batch is submitted around the entry */
  gpu_id group;
  uint32_t slot, psize;
  bool new_slot, flush_before, flush_after;
};

static wg_state *state(const wgc_context *ctx) { return ctx->impl; }

/* ---- bindings ----------------------------------------------------------- */

/* A binding: the window of one allocation that the launch's operands in it
 * share. Allocations are told apart by their wg_mem, so scratch handles
 * whose buffers do not exist yet plan like any other. */
typedef struct binding {
  const wg_mem *mem;
  uint64_t lo, hi; /* byte window */
  bool write;
} binding;

/* The bytes the kernel may touch of operand o. A binding is never empty: an
 * operand the kernel will not read (k == 0, alpha == 0) still binds 4
 * bytes, inside the buffer. */
static void operand_range(const wg_operand *o, uint64_t *lo, uint64_t *hi) {
  const wg_mem *m = o->ref.mem;
  *lo = o->ref.offset;
  *hi = *lo + (o->bytes ? o->bytes : 4);
  if (*hi > m->size) {
    *hi = m->size;
    *lo = *hi - 4;
  }
}

/* Every binding of an allocation that an operand writes is read-write, and
 * operands whose (alignment-extended) windows overlap share one binding. */
static unsigned plan_bindings(const wg_operand *ops, unsigned nops,
                              uint64_t align, binding *binds,
                              unsigned *op_bind) {
  unsigned nb = 0;
  for (unsigned i = 0; i < nops; i++) {
    uint64_t lo, hi;
    operand_range(&ops[i], &lo, &hi);
    binds[nb] = (binding){ops[i].ref.mem, lo - lo % align, hi, ops[i].write};
    op_bind[i] = nb++;
  }
  for (unsigned i = 0; i < nb; i++)
    for (unsigned j = 0; j < nb; j++)
      if (binds[i].mem == binds[j].mem && (binds[i].write || binds[j].write))
        binds[i].write = binds[j].write = true;
  /* Merge overlapping read-write windows until none overlap. */
  for (bool merged = true; merged;) {
    merged = false;
    for (unsigned i = 0; i < nb && !merged; i++)
      for (unsigned j = i + 1; j < nb && !merged; j++) {
        binding *x = &binds[i], *y = &binds[j];
        if (x->mem != y->mem || !x->write || x->lo >= y->hi || y->lo >= x->hi)
          continue;
        x->lo = x->lo < y->lo ? x->lo : y->lo;
        x->hi = x->hi > y->hi ? x->hi : y->hi;
        for (unsigned k = 0; k < nops; k++)
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

/* The operands in allocations whose binding windows exceed the limit (a
 * mask); 0 when the launch binds as it is. */
static unsigned oversized_of(const wg_policy *pol, const wg_operand *ops,
                             unsigned nops, const binding *binds, unsigned nb) {
  unsigned mask = 0;
  for (unsigned b = 0; b < nb; b++)
    if (binds[b].hi - binds[b].lo > pol->window)
      for (unsigned i = 0; i < nops; i++)
        if (ops[i].ref.mem == binds[b].mem)
          mask |= 1u << i;
  return mask;
}

static unsigned oversized(const wg_policy *pol, const wg_operand *ops,
                          unsigned nops) {
  binding binds[WG_MAX_OPERANDS];
  unsigned op_bind[WG_MAX_OPERANDS];
  unsigned nb = plan_bindings(ops, nops, pol->storage_align, binds, op_bind);
  return oversized_of(pol, ops, nops, binds, nb);
}

/* ---- staging ------------------------------------------------------------
 * Operands of one allocation that lie too close together (or too far from
 * an aligned offset) to bind within the limit are copied to a staging
 * buffer around the dispatch, each at an aligned offset of its own, and
 * written ones copied back after it. Operands whose bytes overlap (in
 * place) form one cluster that moves together, so aliasing is kept. */

typedef struct cluster {
  unsigned ops;    /* mask of the operands in it */
  uint64_t lo, hi; /* bytes of the source allocation */
  uint64_t at;     /* offset in the staging buffer */
  bool write;
} cluster;

/* Groups the operands of mask into clusters; returns their number. */
static unsigned clusters_of(const wg_operand *ops, unsigned nops, unsigned mask,
                            cluster *cl) {
  unsigned n = 0;
  for (unsigned i = 0; i < nops; i++) {
    if (!(mask >> i & 1))
      continue;
    cluster c = {.ops = 1u << i, .write = ops[i].write};
    operand_range(&ops[i], &c.lo, &c.hi);
    /* absorb every earlier cluster of the allocation that it overlaps */
    for (unsigned j = 0; j < n;) {
      unsigned first = (unsigned)__builtin_ctz(cl[j].ops);
      if (ops[first].ref.mem == ops[i].ref.mem && cl[j].lo < c.hi &&
          c.lo < cl[j].hi) {
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
static uint64_t stage_layout(const wg_policy *pol, cluster *cl, unsigned n) {
  uint64_t align = pol->storage_align, size = 0;
  for (unsigned c = 0; c < n; c++) {
    if (cl[c].hi - cl[c].lo > pol->window)
      return 0;
    cl[c].at = size;
    size += (cl[c].hi - cl[c].lo + align - 1) / align * align;
  }
  return size;
}

bool wg_operands_bind(const wgc_context *ctx, const wg_operand *ops,
                      unsigned nops) {
  const wg_policy *pol = wg_policy_of(ctx);
  unsigned mask = oversized(pol, ops, nops);
  if (!mask)
    return true;
  cluster cl[WG_MAX_OPERANDS];
  return stage_layout(pol, cl, clusters_of(ops, nops, mask, cl)) > 0;
}

/* The operands of l as they are bound when the clusters cl[0..n) are staged
 * in stage. */
static void staged_ops(const wg_launch *l, const cluster *cl, unsigned n,
                       wg_mem *stage, wg_operand *out) {
  memcpy(out, l->ops, l->nops * sizeof *out);
  for (unsigned c = 0; c < n; c++)
    for (unsigned i = 0; i < l->nops; i++)
      if (cl[c].ops >> i & 1)
        out[i].ref = (wgc_ref){
            .mem = stage, .offset = cl[c].at + l->ops[i].ref.offset - cl[c].lo};
}

/* ---- plans -------------------------------------------------------------- */

/* A plan starts with the launch array the previous one left, so that an op
 * of a few launches costs no allocation. */
void wg_plan_init(wg_plan *p, wgc_context *ctx, const char *fn) {
  wg_state *st = state(ctx);
  *p = (wg_plan){.ctx = ctx,
                 .fn = fn,
                 .pol = wg_policy_of(ctx),
                 .launches = st->plan_spare,
                 .cap = st->plan_spare_cap};
  st->plan_spare = NULL;
  st->plan_spare_cap = 0;
}

void wg_plan_free(wg_plan *p) {
  wg_state *st = state(p->ctx);
  if (!st->plan_spare && p->cap <= PLAN_SPARE_MAX) {
    st->plan_spare = p->launches;
    st->plan_spare_cap = p->cap;
  } else {
    free(p->launches);
  }
  for (size_t i = 0; i < p->nscratch; i++) {
    if (p->scratch[i]->buffer)
      gpu_buffer_release(p->scratch[i]->buffer);
    free(p->scratch[i]);
  }
  free(p->scratch);
  p->launches = NULL;
  p->scratch = NULL;
  p->count = p->cap = p->nscratch = p->scratch_cap = 0;
}

static wgc_status plan_fail(wg_plan *p, wgc_status s) {
  if (p->status == WGC_OK)
    p->status = s;
  return s;
}

static wgc_status plan_oom(wg_plan *p) {
  return plan_fail(
      p, wgc_fail(p->ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", p->fn));
}

wgc_status wg_plan_add(wg_plan *p, const wg_launch *l) {
  if (p->status != WGC_OK)
    return p->status;
  size_t clen = l->consts ? strlen(l->consts) : 0;
  size_t klen = l->kernel ? strlen(l->kernel) : 0;
  if (!l->params_size && l->kernel) /* launches always have Params */
    return plan_fail(p, wgc_fail(p->ctx, WGC_ERR_UNSUPPORTED,
                                 "%s: a launch of %s without parameters", p->fn,
                                 l->kernel));
  if (l->params_size > WG_PARAMS_MAX || clen >= WG_CONSTS_MAX ||
      klen >= WG_KERNEL_MAX || l->nops > WG_MAX_OPERANDS)
    return plan_fail(p, wgc_fail(p->ctx, WGC_ERR_UNSUPPORTED,
                                 "%s: a launch of %s exceeds the plan's "
                                 "limits",
                                 p->fn, l->kernel ? l->kernel : "a copy"));
  if (p->count == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 4;
    wg_planned *grown = realloc(p->launches, cap * sizeof *grown);
    if (!grown)
      return plan_oom(p);
    p->launches = grown;
    p->cap = cap;
  }
  wg_planned *e = &p->launches[p->count++];
  e->l = *l;
  e->l.params = NULL;
  e->l.consts = NULL;
  if (l->params_size)
    memcpy(e->params, l->params, l->params_size);
  if (l->kernel)
    memcpy(e->kernel, l->kernel, klen + 1);
  e->has_consts = l->consts != NULL;
  if (l->consts)
    memcpy(e->consts, l->consts, clen + 1);
  e->staged = false;
  e->pipe = 0;
  return WGC_OK;
}

/* Matches struct Params of kernels/map.wgsl. */
typedef struct copy_params {
  uint32_t off[4];
  uint32_t n;
  float alpha, beta;
  uint32_t pad;
} copy_params;

#define COPY_PER_GROUP 1024u
#define COPY_SMALL 256u /* runs this short use map_small.wgsl */

typedef struct copy_job {
  wgc_ref dst, src;
} copy_job;

static void copy_window(void *user, uint64_t at, uint64_t n, wg_launch *l,
                        void *params) {
  const copy_job *j = user;
  *(copy_params *)params = (copy_params){.n = (uint32_t)n};
  *l = (wg_launch){.kernel = "copy+map",
                   .ops = {{.name = "x",
                            .ref = wg_advance(j->src, at),
                            .bytes = 4 * n,
                            .write = false},
                           {.name = "y",
                            .ref = wg_advance(j->dst, at),
                            .bytes = 4 * n,
                            .write = true}},
                   .nops = 2,
                   .params_size = sizeof(copy_params),
                   .groups = wg_ceil_div(n, COPY_PER_GROUP)};
  if (n <= COPY_SMALL) {
    l->kernel = "copy+map_small";
    l->groups = wg_ceil_div(n, 64);
  }
}

wgc_status wg_plan_copy(wg_plan *p, wgc_ref dst, wgc_ref src, uint64_t bytes) {
  if (p->status != WGC_OK)
    return p->status;
  if (bytes % 4)
    return plan_fail(p, wgc_fail(p->ctx, WGC_ERR_UNSUPPORTED,
                                 "%s: a copy of %" PRIu64
                                 " bytes (not whole floats)",
                                 p->fn, bytes));
  if (dst.mem == src.mem) { /* WebGPU cannot copy a buffer onto itself */
    copy_job j = {dst, src};
    return wg_plan_windows(p, bytes / 4, wg_chunk_elems(p->pol, COPY_PER_GROUP),
                           copy_window, &j);
  }
  wg_launch l = {
      .ops = {{.name = "src", .ref = src, .bytes = bytes, .write = false},
              {.name = "dst", .ref = dst, .bytes = bytes, .write = true}},
      .nops = 2};
  return wg_plan_add(p, &l);
}

typedef struct convert_job {
  wgc_ref dst, src;
  wgc_dtype dt, st;
} convert_job;

static void convert_window(void *user, uint64_t at, uint64_t n, wg_launch *l,
                           void *params) {
  const convert_job *j = user;
  *(copy_params *)params = (copy_params){.n = (uint32_t)n};
  *l = (wg_launch){.kernel = "copy+map",
                   .ops = {wg_typed_operand("x", j->src, j->st, at, n, false),
                           wg_typed_operand("y", j->dst, j->dt, at, n, true)},
                   .nops = 2,
                   .params_size = sizeof(copy_params),
                   .groups = wg_ceil_div(n, COPY_PER_GROUP)};
}

wgc_status wg_plan_convert(wg_plan *p, wgc_ref dst, wgc_dtype dt, wgc_ref src,
                           wgc_dtype st, uint64_t n) {
  if (dt == WGC_DTYPE_F32 && st == WGC_DTYPE_F32)
    return wg_plan_copy(p, dst, src, 4 * n);
  convert_job j = {dst, src, dt, st};
  return wg_plan_windows(p, n, wg_chunk_elems(p->pol, COPY_PER_GROUP),
                         convert_window, &j);
}

wgc_status wg_plan_scratch(wg_plan *p, uint64_t bytes, wgc_ref *out) {
  if (p->status != WGC_OK)
    return p->status;
  if (p->nscratch == p->scratch_cap) {
    size_t cap = p->scratch_cap ? 2 * p->scratch_cap : 4;
    wg_mem **grown = realloc(p->scratch, cap * sizeof *grown);
    if (!grown)
      return plan_oom(p);
    p->scratch = grown;
    p->scratch_cap = cap;
  }
  wg_mem *m = calloc(1, sizeof *m);
  if (!m)
    return plan_oom(p);
  m->size = bytes < 4 ? 4 : (bytes + 3) & ~(uint64_t)3;
  p->scratch[p->nscratch++] = m;
  *out = (wgc_ref){.mem = m, .offset = 0};
  return WGC_OK;
}

bool wg_plan_fits(const wg_plan *p, const wg_operand *ops, unsigned nops) {
  return oversized(p->pol, ops, nops) == 0;
}

bool wg_plan_binds(const wg_plan *p, const wg_operand *ops, unsigned nops) {
  return wg_operands_bind(p->ctx, ops, nops);
}

wgc_status wg_plan_search(wgc_context *ctx, const char *fn, uint64_t top,
                          uint64_t least, wg_search_fn plan, void *user) {
  for (int staging = 0; staging < 2; staging++)
    for (uint64_t window = top; window >= least && window; window /= 2) {
      wg_plan p;
      wg_plan_init(&p, ctx, fn);
      p.staging = staging;
      wgc_status s = plan(&p, user, window);
      if (s == WGC_OK)
        return wg_plan_run(&p);
      wg_plan_free(&p);
      if (s != WGC_ERR_UNSUPPORTED)
        return s;
    }
  return WGC_ERR_UNSUPPORTED;
}

wgc_status wg_plan_windows(wg_plan *p, uint64_t total, uint64_t most,
                           wg_window_fn fill, void *user) {
  _Alignas(16) uint8_t params[WG_PARAMS_MAX];
  for (uint64_t at = 0, n; at < total; at += n) {
    n = total - at < most ? total - at : most;
    wg_launch l;
    for (;; n = (n + 1) / 2) {
      l = (wg_launch){0};
      fill(user, at, n, &l, params);
      if (n == 1 || wg_plan_fits(p, l.ops, l.nops))
        break;
    }
    l.params = params;
    wgc_status s = wg_plan_add(p, &l);
    if (s != WGC_OK)
      return s;
  }
  return WGC_OK;
}

/* The launch of entry e with its parameters and consts in place. */
static wg_launch entry_launch(wg_planned *e) {
  wg_launch l = e->l;
  l.kernel = e->l.kernel ? e->kernel : NULL;
  l.params = e->params;
  l.consts = e->has_consts ? e->consts : NULL;
  return l;
}

/* Checks entry e: how it binds (staged or not: *stage_need grows to the
 * staging it needs), its grid, its pipeline. Records nothing. */
static wgc_status check_entry(wg_plan *p, wg_planned *e, uint64_t *stage_need) {
  const wg_policy *pol = p->pol;
  wg_launch l = entry_launch(e);
  if (!l.kernel)
    return WGC_OK; /* a copy binds nothing */
  binding binds[WG_MAX_OPERANDS];
  unsigned op_bind[WG_MAX_OPERANDS];
  unsigned nb =
      plan_bindings(l.ops, l.nops, pol->storage_align, binds, op_bind);
  unsigned mask = oversized_of(pol, l.ops, l.nops, binds, nb);
  if (mask) {
    cluster cl[WG_MAX_OPERANDS];
    unsigned n = clusters_of(l.ops, l.nops, mask, cl);
    uint64_t size = stage_layout(pol, cl, n);
    if (!size)
      return wgc_fail(p->ctx, WGC_ERR_UNSUPPORTED,
                      "%s: an operand window exceeds the device's storage "
                      "binding limit (%" PRIu64 " bytes)",
                      p->fn, pol->window);
    if (size > *stage_need)
      *stage_need = size;
    /* The staging buffer is planned as an allocation of its own. */
    wg_mem stand_in = {.size = UINT64_MAX};
    staged_ops(&l, cl, n, &stand_in, l.ops);
    nb = plan_bindings(l.ops, l.nops, pol->storage_align, binds, op_bind);
    if (oversized_of(pol, l.ops, l.nops, binds, nb))
      return wgc_fail(p->ctx, WGC_ERR_DEVICE,
                      "%s: a staged launch does not bind", p->fn);
    e->staged = true;
  }
  e->x = l.x;
  e->y = l.y ? l.y : 1;
  e->z = l.z ? l.z : 1;
  if (l.groups) {
    uint64_t maxd = pol->max_groups;
    e->x = (uint32_t)(l.groups < maxd ? l.groups : maxd);
    uint64_t yy = (l.groups + e->x - 1) / e->x;
    if (yy > maxd)
      return wgc_fail(p->ctx, WGC_ERR_UNSUPPORTED,
                      "%s: %" PRIu64 " workgroups exceed the device's grid",
                      p->fn, l.groups);
    e->y = (uint32_t)yy;
    e->z = 1;
  }
  bool write[WG_MAX_OPERANDS], vec4[WG_MAX_OPERANDS];
  for (unsigned b = 0; b < nb; b++) {
    write[b] = binds[b].write;
    vec4[b] = binds[b].lo % 16 == 0 && (binds[b].hi - binds[b].lo) % 16 == 0;
  }
  /* A binding is declared as vec4s only when every operand in it is read
   * as vec4s from a whole vec4 of it (staging may move operands); a typed
   * operand's accessors read words, or vec4s of words where words4 allows. */
  for (unsigned i = 0; i < l.nops; i++)
    if (!((l.ops[i].type == WGC_DTYPE_F32 ? l.vec4 : l.words4) >> i & 1) ||
        (l.ops[i].ref.offset - binds[op_bind[i]].lo) % 16)
      vec4[op_bind[i]] = false;
  return wg_pipeline_get(p->ctx, p->fn, &l, op_bind, write, vec4, nb, &e->pipe);
}

/* Creates the buffers of the plan's scratch handles and, when stage_need
 * exceeds the batch's staging buffer, a new one (*stage). Until the plan
 * hands them to the batch, a failure releases them: the handles' buffers
 * with the plan (wg_plan_free), *stage here. */
static wgc_status allocate(wg_plan *p, uint64_t stage_need, wg_mem **stage) {
  wg_state *st = state(p->ctx);
  *stage = NULL;
  if (stage_need && (!st->stage || st->stage->size < stage_need)) {
    *stage = calloc(1, sizeof **stage);
    if (!*stage)
      return wgc_fail(p->ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory",
                      p->fn);
    (*stage)->size = stage_need;
  }
  size_t need = st->scratch_count + p->nscratch + 1;
  if (need > st->scratch_cap) {
    size_t cap = st->scratch_cap ? st->scratch_cap : 8;
    while (cap < need)
      cap *= 2;
    wg_mem **grown = realloc(st->scratch, cap * sizeof *grown);
    if (!grown)
      return wgc_fail(p->ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory",
                      p->fn);
    st->scratch = grown;
    st->scratch_cap = cap;
  }
  wgc_status s = WGC_OK;
  for (size_t i = 0; i <= p->nscratch && s == WGC_OK; i++) {
    wg_mem *m = i < p->nscratch ? p->scratch[i] : *stage;
    if (!m)
      continue;
    if (st->fail_scratch && --st->fail_scratch == 0)
      s = wgc_fail(p->ctx, WGC_ERR_OUT_OF_MEMORY,
                   "%s: cannot allocate %" PRIu64 " bytes of scratch memory",
                   p->fn, m->size);
    else
      s = wg_buffer_new(p->ctx, p->fn, m->size,
                        GPU_USAGE_STORAGE | GPU_USAGE_COPY_SRC |
                            GPU_USAGE_COPY_DST,
                        "scratch memory", &m->buffer);
  }
  return s;
}

static void release_stage(wg_mem *stage) {
  if (stage) {
    if (stage->buffer)
      gpu_buffer_release(stage->buffer);
    free(stage);
  }
}

/* Hands the plan's scratch and new staging buffer to the batch, which
 * releases them after the batch that uses them completes. */
static void hand_over(wg_plan *p, wg_mem *stage) {
  wg_state *st = state(p->ctx);
  for (size_t i = 0; i < p->nscratch; i++)
    st->scratch[st->scratch_count++] = p->scratch[i];
  p->nscratch = 0;
  if (stage) {
    st->scratch[st->scratch_count++] = stage;
    st->stage = stage;
  }
}

/* The clusters of staged entry e laid out in stage, and its operands as
 * they bind there (in *bound). */
static unsigned staged_launch(const wg_plan *p, const wg_launch *l,
                              wg_mem *stage, cluster *cl, wg_launch *bound) {
  unsigned n =
      clusters_of(l->ops, l->nops, oversized(p->pol, l->ops, l->nops), cl);
  stage_layout(p->pol, cl, n);
  *bound = *l;
  staged_ops(l, cl, n, stage, bound->ops);
  return n;
}

/* What the arena's last slot will hold when the next entry is recorded:
 * its bytes and size (0: no slot, the batch starts afresh). */
typedef struct last_slot {
  const uint8_t *bytes;
  uint32_t at, psize;
} last_slot;

/* Decides entry e's arena slot and batch boundaries, given the batch as the
 * entries before it will leave it (*dispatches, *used, *last), and creates
 * its bind group. The operand offsets go into its parameters here. */
static wgc_status prepare_entry(wg_plan *p, wg_planned *e, wg_mem *stage,
                                unsigned *dispatches, size_t *used,
                                last_slot *last) {
  wg_state *st = state(p->ctx);
  wg_launch l = entry_launch(e), bound = l;
  e->group = 0;
  e->flush_before = e->flush_after = e->new_slot = false;
  if (l.kernel) {
    cluster cl[WG_MAX_OPERANDS];
    if (e->staged)
      staged_launch(p, &l, stage, cl, &bound);
    binding binds[WG_MAX_OPERANDS];
    unsigned op_bind[WG_MAX_OPERANDS];
    unsigned nb = plan_bindings(bound.ops, bound.nops, p->pol->storage_align,
                                binds, op_bind);
    uint32_t *off = (uint32_t *)e->params;
    for (unsigned i = 0; i < (l.nops > 4 ? 8u : 4u); i++)
      off[i] = i < l.nops ? (uint32_t)((bound.ops[i].ref.offset -
                                        binds[op_bind[i]].lo + l.ops[i].lead) /
                                       wg_offset_unit(l.ops[i].type))
                          : 0;
    /* Parameters equal to the last slot's (a chain of one op) reuse it,
     * and with it the bind group, which the GPU layer caches. */
    e->psize = (uint32_t)((l.params_size + 15) & ~(size_t)15);
    memset(e->params + l.params_size, 0, e->psize - l.params_size);
    if (last->psize == e->psize && !memcmp(last->bytes, e->params, e->psize)) {
      e->slot = last->at;
    } else {
      uint64_t ualign = p->pol->uniform_align;
      size_t at = (size_t)((*used + ualign - 1) / ualign * ualign);
      if (at + e->psize > WG_ARENA_BYTES) { /* a full arena ends the batch */
        e->flush_before = true;
        *dispatches = 0;
        at = 0;
      }
      e->slot = (uint32_t)at;
      e->new_slot = true;
      *used = at + e->psize;
      *last = (last_slot){e->params, e->slot, e->psize};
    }
    gpu_binding gb[WG_MAX_OPERANDS + 1];
    for (unsigned b = 0; b < nb; b++)
      gb[b] = (gpu_binding){binds[b].mem->buffer, binds[b].lo,
                            binds[b].hi - binds[b].lo};
    gb[nb] = (gpu_binding){st->arena, e->slot, e->psize};
    if (st->fail_bind_group && --st->fail_bind_group == 0)
      return wgc_fail(p->ctx, WGC_ERR_DEVICE, "%s: bind group creation failed",
                      p->fn);
    e->group = gpu_bind_group_create(st->dev, e->pipe, nb + 1, gb);
    if (!e->group) {
      wgc_status s = wg_device_error(p->ctx, p->fn);
      return s != WGC_OK ? s
                         : wgc_fail(p->ctx, WGC_ERR_DEVICE,
                                    "%s: bind group creation failed", p->fn);
    }
  }
  if (++*dispatches >= WG_BATCH_DISPATCHES) {
    e->flush_after = true;
    *dispatches = 0;
    *used = 0;
    *last = (last_slot){0};
  }
  return WGC_OK;
}

/* Records entry e as prepared (staged around the dispatch if the check said
 * so). Nothing here can fail. */
static void record(wg_plan *p, wg_planned *e, wg_mem *stage) {
  wg_state *st = state(p->ctx);
  wg_launch l = entry_launch(e);
  if (e->flush_before)
    wg_flush(st);
  if (!l.kernel) {
    gpu_encoder_copy(wg_encoder(st), ((const wg_mem *)l.ops[0].ref.mem)->buffer,
                     l.ops[0].ref.offset,
                     ((const wg_mem *)l.ops[1].ref.mem)->buffer,
                     l.ops[1].ref.offset, l.ops[0].bytes);
  } else {
    cluster cl[WG_MAX_OPERANDS];
    wg_launch bound;
    /* One staging buffer serves every staged launch of a batch: commands
     * run in order, so each launch's copies follow the previous one's. */
    unsigned n = e->staged ? staged_launch(p, &l, stage, cl, &bound) : 0;
    for (unsigned c = 0; c < n; c++) {
      unsigned first = (unsigned)__builtin_ctz(cl[c].ops);
      gpu_encoder_copy(wg_encoder(st),
                       ((const wg_mem *)l.ops[first].ref.mem)->buffer, cl[c].lo,
                       stage->buffer, cl[c].at, cl[c].hi - cl[c].lo);
    }
    if (e->new_slot) {
      memcpy(st->arena_host + e->slot, e->params, e->psize);
      st->arena_used = e->slot + e->psize;
      st->arena_last = e->psize;
    }
    gpu_encoder_dispatch(wg_encoder(st), e->pipe, e->group, e->x, e->y, e->z);
    gpu_bind_group_release(e->group);
    e->group = 0;
    for (unsigned c = 0; c < n; c++) {
      unsigned first = (unsigned)__builtin_ctz(cl[c].ops);
      if (cl[c].write)
        gpu_encoder_copy(wg_encoder(st), stage->buffer, cl[c].at,
                         ((const wg_mem *)l.ops[first].ref.mem)->buffer,
                         cl[c].lo, cl[c].hi - cl[c].lo);
    }
  }
  st->dispatches++;
  st->launch_total++;
  if (e->flush_after)
    wg_flush(st);
}

/* Creates every entry's bind group before any is recorded, so that a
 * failure there (the host or the device out of memory, a lost device)
 * leaves the batch as it was; on failure releases those it made. */
static wgc_status prepare(wg_plan *p, wg_mem *stage) {
  wg_state *st = state(p->ctx);
  unsigned dispatches = st->dispatches;
  size_t used = st->arena_used;
  last_slot last = {0};
  if (st->arena_last)
    last = (last_slot){st->arena_host + used - st->arena_last,
                       (uint32_t)(used - st->arena_last), st->arena_last};
  wgc_status s = WGC_OK;
  size_t i = 0;
  for (; i < p->count && s == WGC_OK; i++)
    s = prepare_entry(p, &p->launches[i], stage, &dispatches, &used, &last);
  if (s != WGC_OK)
    for (size_t j = 0; j < i; j++)
      if (p->launches[j].group)
        gpu_bind_group_release(p->launches[j].group);
  return s;
}

wgc_status wg_plan_run(wg_plan *p) {
  wg_state *st = state(p->ctx);
  wgc_status s = p->status;
  uint64_t stage_need = 0;
  wg_mem *stage = NULL;
  for (size_t i = 0; i < p->count && s == WGC_OK; i++)
    s = check_entry(p, &p->launches[i], &stage_need);
  /* Compiling ahead: the pipelines were asked for; nothing more. */
  if (p->ctx->compiling) {
    wg_plan_free(p);
    return s;
  }
  if (s == WGC_OK)
    s = allocate(p, stage_need, &stage);
  if (s == WGC_OK)
    s = prepare(p, stage ? stage : st->stage);
  if (s != WGC_OK) {
    release_stage(stage);
    wg_plan_free(p);
    return s;
  }
  hand_over(p, stage);
  /* Scratch must outlive a flush in the middle of the plan. */
  bool in_op = st->in_op;
  st->in_op = true;
  for (size_t i = 0; i < p->count; i++)
    record(p, &p->launches[i], st->stage);
  st->in_op = in_op;
  s = wg_device_error(p->ctx, p->fn);
  wg_plan_free(p);
  return s;
}

/* The operand name of type t at element e from base, spanning span
 * elements (e whole blocks of a block type): bound from a 4-byte
 * boundary, element 0 lead bytes in (wg_operand). */
wg_operand wg_typed_operand(const char *name, wgc_ref base, wgc_dtype t,
                            uint64_t e, uint64_t span, bool write) {
  if (t == WGC_DTYPE_F32)
    return (wg_operand){.name = name,
                        .ref = wg_advance(base, e),
                        .bytes = 4 * span,
                        .write = write};
  uint64_t blk = wgc_dtype_block(t), bb = wgc_dtype_block_bytes(t);
  uint64_t at = base.offset + e / blk * bb;
  wgc_ref r = base;
  r.offset = at & ~(uint64_t)3;
  uint32_t lead = (uint32_t)(at & 3);
  uint64_t bytes = span ? (lead + wg_ceil_div(span, blk) * bb + 3) & ~3ull : 0;
  return (wg_operand){.name = name,
                      .ref = r,
                      .bytes = bytes,
                      .write = write,
                      .type = t,
                      .lead = lead};
}
