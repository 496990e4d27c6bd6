/* The WebGPU backend's private interface: the execution engine (encoder
 * batching, uniform arena, scratch, device policy; engine.c), launches and
 * their binding (recorded through plans, plan.h), the pipeline cache
 * (pipelines.c), shared by the planners <family>.c of this folder.
 * Everything here calls only src/gpu/gpu.h. */
#ifndef WGC_WEBGPU_WG_H
#define WGC_WEBGPU_WG_H

#include "gpu/gpu.h"
#include "internal.h"

#include <string.h>

/* Operand offsets go to Params.off (operands 0..3) and, in kernels of more
 * than 4 operands, Params.off2 (4..7), declared right after off. */
#define WG_MAX_OPERANDS 8
#define WG_PARAMS_MAX 256 /* bytes of one launch's Params uniform */

/* A GPU allocation: one buffer. */
typedef struct wg_mem {
  gpu_id buffer;
  uint64_t size;
} wg_mem;

/* One operand of a launch: a byte range of an allocation, from ref.offset,
 * of bytes bytes (the span the kernel may touch). */
typedef struct wg_operand {
  const char *name; /* WGSL accessor prefix: name_ld(i), name_st(i, v) */
  wgc_ref ref;
  uint64_t bytes;
  bool write;
  /* Element type (zeroed: f32). Another type (F16, BF16, Q8_0, Q4_0) is
   * read and written as f32 through accessors that decode it on the bits
   * (kernels/dtype.wgsl); ref.offset is then 4-byte aligned and element 0
   * starts lead bytes after it (bytes counts the lead). A written 2-byte
   * operand shares 32-bit words between elements: unless the launch stores
   * it by whole words (wg_launch.word_stores), its binding is declared as
   * atomic<u32> and each store swaps its own half, so invocations that
   * write neighbouring elements do not race. */
  wgc_dtype type;
  uint32_t lead;
} wg_operand;

/* A compute launch. kernel names kernels/<kernel>.wgsl, or several joined
 * by '+' ("math+unary") that are concatenated. The source defines
 *   struct Params { off: vec4<u32>, ... }  and  fn main(...)
 * (off: vec4<u32>, off2: vec4<u32>, ... with more than 4 operands)
 * and reads its operands only through the generated accessors
 *   fn <name>_ld(i: u32) -> f32     fn <name>_st(i: u32, v: f32)
 * which add the operand's element offset (Params.off[operand index], or
 * Params.off2[index - 4]). Operands in the vec4 mask also get
 *   fn <name>_ld4(i: u32) -> vec4<f32>     fn <name>_st4(i: u32, v: vec4<f32>)
 * over floats 4i..4i+3; a binding whose operands all are vec4 ones at
 * 16-byte offsets is declared as vec4s, so these are one access each.
 * consts is WGSL source prepended to the kernel (e.g. "const OP = 3u;");
 * it is part of the pipeline cache key, so keep it to a few named tokens.
 * The helper wg_linear_group(wid, nwg) in the prelude turns a 2-D dispatch
 * into a linear workgroup index (used when groups exceed 65535). */
typedef struct wg_launch {
  const char *kernel;
  const char *consts;
  wg_operand ops[WG_MAX_OPERANDS];
  unsigned nops;
  unsigned vec4; /* bit i: ops[i] has the vec4 accessors */
  /* bit i: typed ops[i] may be bound as vec4s, its <name>_w4(j) (four words
   * from word j on, which every typed operand has) called only with j a
   * multiple of 4 */
  unsigned words4;
  /* bit i: written 2-byte ops[i] is stored by whole words, each written by
   * one invocation only (kernels/words.wgsl): its binding is then plain
   * u32 words rather than atomic ones, and it gets
   *   fn <name>_lead() -> u32    (1: element 0 is its first word's high half)
   *   fn <name>_stw(u: u32, lo: f32, hi: f32, has_lo: bool, has_hi: bool)
   * storing the halves of its word u (counted from its first) that it has,
   * keeping the others; no <name>_st. */
  unsigned word_stores;
  void *params; /* Params bytes; the first 16 (32: more than 4 operands)
                   are filled in here */
  size_t params_size;
  /* Workgroups: either groups (linear, split over x and y as needed) or
   * x/y/z explicitly (groups == 0). */
  uint64_t groups;
  uint32_t x, y, z;
} wg_launch;

/* The backend's device limits and policy, derived once at start-up; planners
 * read them here rather than from the raw limits. */
typedef struct wg_policy {
  /* bytes one binding may span: the device's limit, capped so kernels index
   * with u32 and by wgc_options.max_binding_bytes */
  uint64_t window;
  /* floats an operand may span from any offset (room for aligning the
   * binding's start down) */
  uint64_t window_elems;
  uint32_t max_groups; /* workgroups per grid dimension */
  /* loop iterations one invocation may run, over all its loops; 0: no
   * limit (see gpu_limits.loop_budget) */
  uint32_t loop_budget;
  bool cpu_kernels; /* the kernel forms for CPU adapters (WGC_KERNELS) */
  /* a CPU adapter's SIMD width in floats, and whether it is llvmpipe (from
   * the adapter's name; GEMM blocks are chosen by them) */
  uint32_t simd_lanes;
  bool llvmpipe;
  uint64_t storage_align, uniform_align;
} wg_policy;

/* Floats one launch of per_group elements per workgroup may cover: what
 * the grid holds, kept far from u32 overflow. */
static inline uint64_t wg_grid_elems(const wg_policy *p, uint64_t per_group) {
  uint64_t n = (uint64_t)p->max_groups * p->max_groups * per_group;
  return n < 0x40000000u ? n : 0x40000000u;
}

/* As wg_grid_elems, and within one operand window, in whole workgroups
 * where a window holds several. */
static inline uint64_t wg_chunk_elems(const wg_policy *p, uint64_t per_group) {
  uint64_t g = wg_grid_elems(p, per_group);
  uint64_t n = p->window_elems < g ? p->window_elems : g;
  return n >= per_group ? n - n % per_group : n;
}

/* A string built in a fixed buffer without printf, for the names and keys
 * made on every launch: each part is copied as far as it fits, len counts
 * every byte asked for (len >= cap: it did not fit), and wg_str_end ends it
 * where it stops. */
typedef struct wg_str {
  char *buf;
  size_t cap, len; /* cap > 0 */
} wg_str;

static inline void wg_str_put(wg_str *s, const char *t) {
  size_t n = strlen(t);
  if (s->len < s->cap) {
    size_t room = s->cap - 1 - s->len;
    memcpy(s->buf + s->len, t, n < room ? n : room);
  }
  s->len += n;
}

static inline void wg_str_chr(wg_str *s, char c) {
  if (s->len + 1 < s->cap)
    s->buf[s->len] = c;
  s->len++;
}

/* Terminates s; whether all of it fit. */
static inline bool wg_str_end(wg_str *s) {
  s->buf[s->len < s->cap ? s->len : s->cap - 1] = '\0';
  return s->len < s->cap;
}

/* Flush a batch after this many dispatches, so long chains reach the GPU
 * early without costing a submit per operation. */
#define WG_BATCH_DISPATCHES 64
#define WG_ARENA_BYTES (64u * 1024u)

typedef struct wg_state wg_state;

/* A cached pipeline: its key names the kernel, consts and binding map. */
typedef struct wg_pipeline {
  char *key;
  gpu_id id;
} wg_pipeline;

/* The backend's state (ctx->impl). */
struct wg_state {
  gpu_id dev;
  gpu_limits lim;
  wg_policy pol;
  char name[256];
  char cache_status[768]; /* wgc_pipeline_cache_status */
  /* the batch being recorded */
  gpu_id enc;
  unsigned dispatches;
  /* dispatches recorded and batches submitted over the context's life
   * (per-operation timing tells an op's launches, and whether it reached
   * the queue in parts, from them) */
  uint64_t launch_total, submit_total;
  /* queue writes since the last submit: the runtime keeps their staging
   * memory (and the buffers they write) until a submit carries them */
  unsigned writes;
  gpu_id arena;
  uint8_t *arena_host;
  size_t arena_used;
  uint32_t arena_last; /* size of the batch's last slot (at its end), or 0 */
  wg_mem **scratch;    /* released at the first flush after their op ends */
  size_t scratch_count, scratch_cap;
  bool in_op;    /* an op is recording: its scratch must outlive flushes */
  wg_mem *stage; /* staging buffer of the batch (scratch), or NULL */
  /* the launch array of the last plan, kept for the next (webgpu/plan.c) */
  void *plan_spare;
  size_t plan_spare_cap;
  /* Tests: the plan's nth scratch allocation, or its nth bind group, fails
   * (counted from 1 over the next plans); 0: none. */
  unsigned fail_scratch, fail_bind_group;
  /* GEMM blocks whose compile costs more than it saves at first: seconds
   * lost so far by the calls that a cheaper block stood in for, which of
   * them are paid for (bit per block), and a factor on the compile
   * times (1; tests make it small; 0 compiles every block at once) */
  double gemm_rent[8];
  unsigned gemm_promoted;
  double gemm_compile_scale;
  /* pipeline cache */
  wg_pipeline *pipes;
  size_t pipe_count, pipe_cap;
  size_t compiled;
  /* kernels asked for while compiling ahead (webgpu/pipelines.c) */
  struct wg_ahead *ahead;
  size_t ahead_count, ahead_cap;
  /* completions in flight (webgpu/backend.c) */
  struct wg_transfer *transfers;
  size_t outstanding;    /* of them, not yet done */
  struct wg_slab *slabs; /* download staging in flight, newest first */
  struct wg_slab *open;  /* the one taking small downloads */
  /* a staging buffer of WG_SLAB_BYTES, read and unmapped, kept for the next
   * slab (0: none) */
  gpu_id spare_staging;
  /* device request (init) */
  bool request_done;
  bool abandoned; /* its wgc_create returned WGC_ERR_WOULD_BLOCK */
  wgc_status request_status;
  void (*init_done)(wgc_context *, wgc_status);
  wgc_context *ctx;
};

/* Download staging (its downloads are webgpu/backend.c's): a MAP_READ
 * buffer that copies recorded into the open batch fill. Once the batch
 * holding them is submitted, wg_flush seals the slabs not yet sealed and
 * maps each, and mapped(status, slab) completes its downloads. */
typedef struct wg_slab {
  struct wg_slab *prev, *next; /* st->slabs, newest first */
  wg_state *st;
  gpu_id buf;
  uint64_t size, used;
  struct wg_transfer *first, *last; /* its downloads, in order */
  bool sealed, orphan;
  void (*mapped)(wgc_status s, void *slab);
} wg_slab;

/* Submits the batch being recorded, if any, maps the download staging
 * its copies filled, and (outside an op) releases scratch memory. Never
 * waits. */
void wg_flush(wg_state *st);
/* Test hook: one line on the context's completions in flight (its own
 * records and the GPU layer's). */
void wg_describe(const wgc_context *ctx, char *out, size_t size);
/* The encoder of the batch being recorded, begun if needed. */
gpu_id wg_encoder(wg_state *st);
/* A device error reported since the last call, as a status and message on
 * ctx naming fn; WGC_OK when none. */
wgc_status wg_device_error(wgc_context *ctx, const char *fn);
/* A buffer of size bytes with usage (gpu_usage bits); on failure the
 * device's own error, or out of memory naming what it was for. */
wgc_status wg_buffer_new(wgc_context *ctx, const char *fn, uint64_t size,
                         unsigned usage, const char *what, gpu_id *out);

/* Whether a plan can run a launch with these operands at all:
 * they fit, or every group of operands that overlap in one buffer fits the
 * limit on its own and is staged. The fallback for pieces that splitting
 * cannot separate (operands interleaved or a few bytes apart). */
bool wg_operands_bind(const wgc_context *ctx, const wg_operand *ops,
                      unsigned nops);

/* Device limits of ctx's device. */
const gpu_limits *wg_limits(const wgc_context *ctx);
/* The policy derived from them and the adapter's name (set by
 * wg_policy_init at start-up). */
const wg_policy *wg_policy_of(const wgc_context *ctx);
void wg_policy_init(wg_state *st);

/* r moved on by elems floats. */
static inline wgc_ref wg_advance(wgc_ref r, uint64_t elems) {
  r.offset += 4 * elems;
  return r;
}

/* What an operand's Params.off counts: f32 words, 2-byte elements, or
 * bytes for the block types. */
static inline uint32_t wg_offset_unit(wgc_dtype t) {
  return t == WGC_DTYPE_F32 || t == WGC_DTYPE_I32    ? 4u
         : t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16 ? 2u
                                                     : 1u;
}

/* Whether t's elements are 2 bytes (F16, BF16): written, they share words. */
static inline bool wg_half_type(wgc_dtype t) {
  return t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16;
}

/* Words of a 2-byte output stored by whole words (kernels/words.wgsl): one
 * workgroup's. */
#define WG_WORDS_PER_GROUP 256u

/* The workgroups of words.wgsl over n elements of the 2-byte operand o
 * (element 0 starts o->lead bytes into its first word). */
static inline uint64_t wg_word_groups(const wg_operand *o, uint64_t n) {
  uint64_t words = (o->lead / 2 + n + 1) / 2;
  return (words + WG_WORDS_PER_GROUP - 1) / WG_WORDS_PER_GROUP;
}

/* r moved on by elems elements of t (F32, F16 or BF16): a 2-byte operand
 * may then start 2 bytes into a word, which wg_typed_operand binds. */
static inline wgc_ref wg_advance_typed(wgc_ref r, wgc_dtype t, uint64_t elems) {
  r.offset += wg_offset_unit(t) * elems;
  return r;
}

static inline uint64_t wg_ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

/* Each family's planner (webgpu/<family>.c): emits its launches into a
 * plan and runs it. */
#define WG_OP_DECLARE_(NAME, name)                                             \
  wgc_status wg_##name(wgc_context *ctx, const wgc_##name##_args *a);
WGC_OP_FAMILIES(WG_OP_DECLARE_)
#undef WG_OP_DECLARE_
/* Attention as a GEMM and softmax steps over blocks of query rows, in one
 * plan (webgpu/attention_unfused.c): for head_dim beyond what one binding
 * of the fused kernels holds. */
wgc_status wg_attention_unfused(wgc_context *ctx, const wgc_attention_args *a);

/* The pipeline for launch l with its operands bound as op_bind maps them
 * onto nb bindings (write[b]: binding b is read-write; vec4[b]: declared
 * as vec4s), compiled on first use and cached (webgpu/pipelines.c). */
wgc_status wg_pipeline_get(wgc_context *ctx, const char *fn, const wg_launch *l,
                           const unsigned *op_bind, const bool *write,
                           const bool *vec4, unsigned nb, gpu_id *out);
/* Compiling ahead, wg_pipeline_get only notes the kernels it would
 * compile (and gives 0); this compiles them all at once, concurrently, and
 * caches them. The first failure is returned; every kernel that failed is
 * compiled again on first use. */
wgc_status wg_pipelines_compile_ahead(wgc_context *ctx, const char *fn);
/* Releases every cached pipeline (at shutdown). */
void wg_pipelines_release(wg_state *st);

#endif
