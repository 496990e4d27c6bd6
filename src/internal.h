/* Private structures shared by the front end and the backends. */
#ifndef WGC_INTERNAL_H
#define WGC_INTERNAL_H

#include "clock.h"
#include "wgc.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WGC_MAX_RANK 8

/* A resolved operand: the backend's allocation handle plus a byte offset.
 * The front end has checked that every element an operation may touch lies
 * inside the allocation. */
typedef struct wgc_ref {
  void *mem;       /* what backend->alloc returned */
  uint64_t offset; /* bytes, multiple of 4 (2 for a 2-byte-aligned type) */
} wgc_ref;

/* GEMM in one strided form (BLIS style), for both layouts and transposes:
 *   C[i,j] = c + i*rs_c + j*cs_c, op(A)[i,p] = a + i*rs_a + p*cs_a,
 *   op(B)[p,j] = b + p*rs_b + j*cs_b        (element offsets from the refs)
 * batch t adds t*batch_a (etc.) elements. m, n, batch > 0 here; k may be 0
 * and alpha may be 0, in which case a and b must not be read; beta == 0
 * means C is not read. The epilogue then makes C[i,j] := act(C[i,j] +
 * bias[j] (per column) or bias[i] (per row)), the same bias for every
 * batch; has_bias false and WGC_ACTIVATION_NONE: the plain GEMM. */
typedef struct wgc_gemm_args {
  size_t m, n, k, batch;
  float alpha, beta;
  wgc_ref a, b, c;
  size_t rs_a, cs_a, rs_b, cs_b, rs_c, cs_c;
  size_t batch_a, batch_b, batch_c;
  wgc_ref bias; /* n (per column) or m (per row) floats, when has_bias */
  bool has_bias;
  wgc_bias_kind bias_kind;
  wgc_activation act;
  /* element types; strides and batch strides count elements of each;
   * a block B has rs_b == 1 and cs_b, batch_b whole blocks */
  wgc_dtype a_type, b_type, c_type, bias_type;
  const char *fn; /* the public entry point, named in messages */
} wgc_gemm_args;

/* A conv2d desc with defaults applied (strides, dilations, groups >= 1) and
 * the output size; every output dimension is > 0 here. */
typedef struct wgc_conv2d_args {
  wgc_conv2d_desc d;
  size_t p, q;
  wgc_ref input, filter, bias, output;
  bool has_bias;
  const char *fn; /* the public entry point, named in messages */
} wgc_conv2d_args;

/* A pool2d desc with defaults applied (strides, dilations >= 1) and the
 * output size; every dimension is > 0 here, and every index a kernel forms
 * (an element of input or output, a padded coordinate) is below 2^31. */
typedef struct wgc_pool2d_args {
  wgc_pool2d_desc d;
  size_t p, q;
  wgc_ref input, output;
  const char *fn; /* the public entry point, named in messages */
} wgc_pool2d_args;

/* An attention desc with heads_kv, head_dim_v and the four operand strides
 * resolved (never all zero here); batch, heads, seq_q, head_dim,
 * head_dim_v > 0; seq_kv may be 0 (output zeros). mask is read only when
 * has_mask (d.mask != 0 and seq_kv > 0). d's types are checked (F32, F16
 * or BF16); strides count elements of each operand's type. */
typedef struct wgc_attention_args {
  wgc_attention_desc d;
  wgc_ref q, k, v, o, mask;
  bool has_mask;
  const char *fn; /* the public entry point, named in messages */
} wgc_attention_args;

/* What a reduction computes: op, or the int32 index of the first
 * largest / smallest element (op unused). */
typedef enum wgc_reduce_arg {
  WGC_ARG_NONE,
  WGC_ARG_MAX,
  WGC_ARG_MIN,
} wgc_reduce_arg;

/* Reduction of a contiguous tensor viewed as [outer, len, inner]:
 * out[o*inner + i] = op over r of in[(o*len + r)*inner + i].
 * outer, inner > 0; len may be 0 (the op's identity) except for MAX, MIN,
 * MEAN and the arg reductions.
 *
 * nd > 0 (wgc_reduce_axes over axes that stay apart once adjacent ones are
 * merged): the tensor is dims[0..nd) (no 1s, no two neighbours alike in
 * red), out[k] reduces over the dims with red[d] set, the outputs are the
 * other dims in order; outer is then the output count, len the count
 * reduced (MEAN's divisor) and inner 1. */
typedef struct wgc_reduce_args {
  wgc_reduce_op op;
  wgc_reduce_arg arg;
  size_t outer, len, inner;
  size_t nd;
  size_t dims[WGC_MAX_RANK];
  bool red[WGC_MAX_RANK];
  wgc_ref input, output;
  /* input F32, F16 or BF16; output F32 or input_type (arg: F32, int32) */
  wgc_dtype input_type, output_type;
  const char *fn; /* the public entry point, named in messages */
} wgc_reduce_args;

/* Element-wise binary op over an output of shape[rank] (contiguous,
 * row-major); a and b are read at sum(idx[d]*stride_x[d]) elements, stride 0
 * on broadcast dimensions. Adjacent dimensions are merged where possible, so
 * the plain wgc_binary is rank 1 with strides 1. count > 0. */
typedef struct wgc_binary_args {
  wgc_binary_op op;
  size_t rank, count;
  size_t shape[WGC_MAX_RANK];
  size_t stride_a[WGC_MAX_RANK];
  size_t stride_b[WGC_MAX_RANK];
  wgc_ref a, b, out;
  wgc_dtype a_type, b_type, out_type; /* F32, F16 or BF16 */
  const char *fn; /* the public entry point, named in messages */
} wgc_binary_args;

typedef struct wgc_unary_args {
  wgc_unary_op op;
  float alpha, beta; /* the op's parameters (ONNX defaults from wgc_unary) */
  size_t n;          /* > 0 */
  wgc_ref input, output;
  wgc_dtype input_type, output_type; /* F32, F16 or BF16 */
  const char *fn; /* the public entry point, named in messages */
} wgc_unary_args;

/* Strided copy over shape[rank]: element idx of dst at
 * sum(idx[d]*stride_dst[d]), of src at sum(idx[d]*stride_src[d]) (0 on
 * broadcast dimensions). Dimensions of size 1 are dropped, the rest ordered
 * by destination stride, outermost first, and merged where both sides are
 * contiguous across them. rank >= 1, count > 0. */
typedef struct wgc_copy_strided_args {
  size_t rank, count;
  size_t shape[WGC_MAX_RANK];
  size_t stride_dst[WGC_MAX_RANK];
  size_t stride_src[WGC_MAX_RANK];
  wgc_ref dst, src;
  /* F32, F16 or BF16; the same type copies bits, another converts as
   * wgc_cast */
  wgc_dtype dst_type, src_type;
  const char *fn; /* the public entry point, named in messages */
} wgc_copy_strided_args;

/* Gather of data viewed as [outer, len, inner] along the middle dimension
 * by n_indices int32 words: output [outer, n_indices, inner] contiguous.
 * An index outside [-len, len) gives zeros. len may be 0 (all zeros, data
 * not read); outer, inner, n_indices > 0. */
typedef struct wgc_gather_args {
  size_t outer, len, inner, n_indices;
  wgc_ref data, indices, output;
  /* data any type but I32 (a block type with inner whole blocks), output
   * F32, F16 or BF16 */
  wgc_dtype data_type, output_type;
  const char *fn; /* the public entry point, named in messages */
} wgc_gather_args;

/* out = cond ? a : b over a contiguous output of shape[rank], the inputs
 * read with strides as in wgc_binary_args; cond is true unless +-0. */
typedef struct wgc_where_args {
  size_t rank, count;
  size_t shape[WGC_MAX_RANK];
  size_t stride_cond[WGC_MAX_RANK];
  size_t stride_a[WGC_MAX_RANK];
  size_t stride_b[WGC_MAX_RANK];
  wgc_ref cond, a, b, out;
  wgc_dtype cond_type, a_type, b_type, out_type; /* F32, F16 or BF16 */
  const char *fn; /* the public entry point, named in messages */
} wgc_where_args;

/* softmax, log-softmax, LayerNorm and RMSNorm of a contiguous tensor viewed
 * as [outer, len, inner]: each (outer, inner) pair's row of len elements,
 * strided by inner, is normalised on its own. outer, len, inner > 0.
 * LayerNorm and RMSNorm have inner == 1 and read scale (and bias) of len
 * floats when present. output may equal input. */
typedef enum wgc_norm_kind {
  WGC_NORM_SOFTMAX,
  WGC_NORM_LOG_SOFTMAX,
  WGC_NORM_LAYER,
  WGC_NORM_RMS
} wgc_norm_kind;

typedef struct wgc_norm_args {
  wgc_norm_kind kind;
  size_t outer, len, inner;
  float epsilon;
  bool has_scale, has_bias;
  wgc_ref input, scale, bias, output;
  /* input and output F32, F16 or BF16; scale and bias F32 or F16 */
  wgc_dtype input_type, output_type, scale_type, bias_type;
  const char *fn; /* the public entry point, named in messages */
} wgc_norm_args;

/* A rotary desc with rotary_dim resolved (even, > 0, <= head_dim); every
 * size is > 0 here. Without position ids the caches are [batch, seq,
 * rotary_dim / 2]. output may equal input. */
typedef struct wgc_rotary_args {
  wgc_rotary_desc d;
  bool has_position_ids;
  wgc_ref input, position_ids, cos_cache, sin_cache, output;
  const char *fn; /* the public entry point, named in messages */
} wgc_rotary_args;

/* wgc_cast: n elements (> 0, whole blocks of both types) of src_type at
 * src converted into dst_type at dst; the offsets are multiples of 2 bytes
 * (4 for f32 and i32), and dst's bytes do not overlap src's. */
typedef struct wgc_cast_args {
  size_t n;
  wgc_dtype src_type, dst_type;
  wgc_ref src, dst;
  const char *fn; /* the public entry point, named in messages */
} wgc_cast_args;

/* Every op family, in one list: X(NAME, name) for the family whose
 * resolved arguments are wgc_<name>_args, which the CPU backend runs as
 * cpu_<name> (cut into pieces by cpu_split_<name>_plan/_run) and the WebGPU
 * backend plans as wg_<name>. The backend interface, the CPU backend's work
 * kinds and their union, its piece planners, both backends' tables and the
 * deferred queue's names all follow this list, so a family missing from
 * one of them fails the build. */
#define WGC_OP_FAMILIES(X)                                                     \
  X(GEMM, gemm)                                                                \
  X(CONV2D, conv2d)                                                            \
  X(ATTENTION, attention)                                                      \
  X(REDUCE, reduce)                                                            \
  X(UNARY, unary)                                                              \
  X(BINARY, binary)                                                            \
  X(COPY_STRIDED, copy_strided)                                                \
  X(GATHER, gather)                                                            \
  X(WHERE, where)                                                              \
  X(NORM, norm)                                                                \
  X(ROTARY, rotary)                                                            \
  X(POOL2D, pool2d)                                                            \
  X(CAST, cast)

/* A callback the context owes its user. Backends complete it with
 * wgc_pending_complete (from any thread: the status is published by the
 * release store of ready); the front end fires it from poll/synchronize. */
typedef struct wgc_pending {
  struct wgc_pending *next, *prev;
  void (*done)(wgc_status, void *user);
  void *user;
  wgc_status status;
  atomic_bool ready;
} wgc_pending;

/* Times one operation while its context records (profile.c). The front
 * end sets begin_us and end_us to the host clock around the call (its
 * time, where the work ran inside it) and launches; a backend's time_op
 * may replace them with its own (begin_us: when the work could start;
 * end_us: when it was done; busy_us: time it ran, if measured, else 0)
 * and then calls done exactly once, possibly later: from wgc_poll,
 * wgc_synchronize or wgc_destroy natively, from the event loop in the
 * browser. status: WGC_OK, or why the work never completed. */
typedef struct wgc_op_timer wgc_op_timer;
struct wgc_op_timer {
  double begin_us, end_us, busy_us;
  bool gpu;         /* measured on the GPU's queue */
  bool split;       /* the op's work reached the queue in parts */
  double submit_us; /* when time_op submitted what was left */
  /* the GPU's own time of the op (timestamp queries), when gpu_timed */
  bool gpu_timed;
  double gpu_us;
  void *backend; /* the backend's, from WGC_TIME_BEGIN to done */
  void (*done)(wgc_op_timer *t, wgc_status status);
};

/* When a backend's time_op is called: before the op (it may mark the
 * start of its work), after it succeeded (it then times it and calls
 * done), or after it failed (it releases what BEGIN made; done never
 * fires). */
enum wgc_time_phase { WGC_TIME_BEGIN, WGC_TIME_END, WGC_TIME_ABANDON };

/* The backend interface. Every member is required unless marked optional.
 * Arguments arrive validated; a backend returns a status only for failures
 * of its own (out of memory, device errors, unsupported). */
typedef struct wgc_backend_ops {
  const char *name; /* "webgpu" or "cpu" */
  /* creates the backend state in ctx->impl; may return WGC_ERR_NO_ADAPTER */
  wgc_status (*init)(wgc_context *ctx, const wgc_options *opt);
  /* optional: as init without waiting; done(ctx, status) fires later (from
   * the event loop in the browser, or at once natively) */
  wgc_status (*init_async)(wgc_context *ctx, const wgc_options *opt,
                           void (*done)(wgc_context *ctx, wgc_status status));
  /* waits for queued work where it can, releases everything */
  void (*shutdown)(wgc_context *ctx);
  const char *(*adapter_name)(const wgc_context *ctx);

  /* zero-filled memory of bytes (> 0) bytes */
  wgc_status (*alloc)(wgc_context *ctx, size_t bytes, void **mem);
  /* release once the queued work that uses mem is done */
  void (*free)(wgc_context *ctx, void *mem);
  wgc_status (*upload)(wgc_context *ctx, wgc_ref dst, const void *src,
                       size_t bytes);
  /* waits; may return WGC_ERR_WOULD_BLOCK where waiting is impossible */
  wgc_status (*download)(wgc_context *ctx, void *dst, wgc_ref src,
                         size_t bytes);
  /* completes p (via wgc_pending_complete) once dst is written */
  wgc_status (*download_async)(wgc_context *ctx, void *dst, wgc_ref src,
                               size_t bytes, wgc_pending *p);
  wgc_status (*copy)(wgc_context *ctx, wgc_ref dst, wgc_ref src, size_t bytes);
  /* waits for all queued work; may return WGC_ERR_WOULD_BLOCK */
  wgc_status (*synchronize)(wgc_context *ctx);
  /* completes p once all work queued so far is done */
  wgc_status (*synchronize_async)(wgc_context *ctx, wgc_pending *p);
  /* makes progress without waiting (completes due pendings) */
  wgc_status (*poll)(wgc_context *ctx);

  /* one member per op family, in WGC_OP_FAMILIES order:
   * wgc_status (*gemm)(wgc_context *ctx, const wgc_gemm_args *args); ... */
#define WGC_BACKEND_OP_(NAME, name)                                            \
  wgc_status (*name)(wgc_context * ctx, const wgc_##name##_args *args);
  WGC_OP_FAMILIES(WGC_BACKEND_OP_)
#undef WGC_BACKEND_OP_

  /* optional: compiles the kernels that op calls asked for since
   * wgc_compile_begin (entered through fn); p, when not NULL, completes
   * once they are ready */
  wgc_status (*compile_ahead)(wgc_context *ctx, const char *fn, wgc_pending *p);
  /* optional: pipelines compiled so far */
  size_t (*pipelines_compiled)(const wgc_context *ctx);
  /* optional: the pipeline cache's status sentence, never NULL */
  const char *(*pipeline_cache_status)(const wgc_context *ctx);
  /* optional: kernel dispatches and queue submits made so far (counters
   * that only grow), for per-operation timing */
  void (*counters)(const wgc_context *ctx, uint64_t *launches,
                   uint64_t *submits);
  /* optional: times an operation (see wgc_op_timer and wgc_time_phase);
   * without it the time around the call is the operation's */
  void (*time_op)(wgc_context *ctx, wgc_op_timer *t, enum wgc_time_phase phase);
} wgc_backend_ops;

extern const wgc_backend_ops wgc_backend_cpu;
extern const wgc_backend_ops wgc_backend_webgpu;

/* One record of the allocation table (see table.h). */
typedef struct wgc_slot {
  void *mem;      /* backend handle; NULL when the record is free */
  uint64_t bytes; /* size of the live allocation */
  uint32_t id;    /* the id in its addresses; 0 when free */
  uint32_t next_free;
} wgc_slot;

/* Records in a dense array (its index identifies a live allocation to the
 * overlap checks) and an open-addressing index from id to record. */
typedef struct wgc_table {
  wgc_slot *slots;
  uint32_t count, capacity; /* records used / allocated */
  uint32_t free_head;       /* free records (index + 1, 0 = none) */
  uint32_t live;
  uint32_t *index;    /* record index + 1 per bucket, 0 = empty */
  uint32_t index_cap; /* power of two, at least twice live */
  uint32_t next_id;
} wgc_table;

struct wgc_context {
  const wgc_backend_ops *be;
  wgc_options opt;               /* as requested, defaults applied */
  struct wgc_context *next_live; /* every live context, for poll_all */
  void *impl;                    /* backend state */
  wgc_table table;
  wgc_pending *pending_head, *pending_tail; /* in registration order */
  bool firing;     /* callbacks are running: nested calls fire none */
  bool destroying; /* wgc_destroy is firing: registrations are CANCELLED */
  bool destroy_requested; /* wgc_destroy inside a callback: done after it */
  /* between wgc_compile_begin and wgc_compile_end: ops only ask for their
   * kernels, transfers are refused */
  bool compiling;
  char last_error[512];
  /* errors recorded so far: the browser's glue tells a completion's own
   * message from one left by an earlier call without reading either */
  uint32_t error_count;
  /* per-operation timing (profile.c); NULL until first started */
  struct wgc_profile *profile;
};

/* Records a formatted error on ctx (or the thread's context-less slot when
 * ctx is NULL) and returns status. */
wgc_status wgc_fail(wgc_context *ctx, wgc_status status, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Marks a pending callback as due with status. */
static inline void wgc_pending_complete(wgc_pending *p, wgc_status status) {
  p->status = status;
  atomic_store_explicit(&p->ready, true, memory_order_release);
}

/* Registers a callback owed to the user (appended, so they fire in order)
 * for the entry point fn; fails with WGC_ERR_CANCELLED while the context is
 * being destroyed, or out of memory. The registering call then starts its
 * work and ends with wgc_pending_started. */
wgc_status wgc_pending_new(wgc_context *ctx, const char *fn,
                           void (*done)(wgc_status, void *), void *user,
                           wgc_pending **out);
void wgc_pending_drop(wgc_context *ctx, wgc_pending *p);

/* Ends a call that registered p and then started its work with status s:
 * drops p if s failed, else, if the work already completed p, asks for a
 * poll to fire it (in the browser nothing else would). A p completed later
 * needs none: the browser's GPU completions and the CPU backend's queued
 * work poll once they complete it, and natively the user polls. Asked for
 * last, so that in the browser the request's cost comes after the call's
 * submit, not before it. Returns s. */
wgc_status wgc_pending_started(wgc_context *ctx, wgc_pending *p, wgc_status s);

/* Polls wgc_create_async requests and every live context (the browser's
 * event loop calls this after delivering GPU completions). */
WGC_API void wgc_poll_all(void);

/* Releases ctx's timing records (wgc_destroy, after the backend fired
 * every completion). */
void wgc_profile_release(wgc_context *ctx);

/* Float helpers shared by the CPU backend and tests of it. */
float wgc_unary_ref(wgc_unary_op op, float x, float alpha, float beta);
float wgc_binary_ref(wgc_binary_op op, float a, float b);

#endif /* WGC_INTERNAL_H */
