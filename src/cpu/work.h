/* One unit of CPU-backend work as a value: an operation with its resolved
 * arguments, or a memory step (upload, copy, download, synchronize, free).
 * Natively each runs whole inside the call that issues it; the wasm32
 * build queues them and runs them in pieces between events (defer.h). */
#ifndef WGC_CPU_WORK_H
#define WGC_CPU_WORK_H

#include "internal.h"

typedef enum cpu_work_kind {
  CPU_WORK_GEMM,
  CPU_WORK_CONV2D,
  CPU_WORK_ATTENTION,
  CPU_WORK_REDUCE,
  CPU_WORK_UNARY,
  CPU_WORK_BINARY,
  CPU_WORK_COPY_STRIDED,
  CPU_WORK_GATHER,
  CPU_WORK_WHERE,
  CPU_WORK_NORM,
  CPU_WORK_ROTARY,
  CPU_WORK_POOL2D,
  CPU_WORK_UPLOAD,   /* dst <- host src */
  CPU_WORK_COPY,     /* dst <- src */
  CPU_WORK_DOWNLOAD, /* host dst <- src, then completes done */
  CPU_WORK_SYNC,     /* completes done */
  CPU_WORK_FREE,     /* releases mem */
} cpu_work_kind;

typedef struct cpu_work {
  cpu_work_kind kind;
  union {
    wgc_gemm_args gemm;
    wgc_conv2d_args conv;
    wgc_attention_args attn;
    wgc_reduce_args reduce;
    wgc_unary_args unary;
    wgc_binary_args binary;
    wgc_copy_strided_args copy_strided;
    wgc_gather_args gather;
    wgc_where_args where;
    wgc_norm_args norm;
    wgc_rotary_args rotary;
    wgc_pool2d_args pool2d;
    struct {
      wgc_ref dst, src; /* device side; unused ones are {0} */
      const void *host_src;
      void *host_dst;
      size_t bytes;
      wgc_pending *done; /* DOWNLOAD, SYNC */
      void *mem;         /* FREE */
    } mem;
  } u;
} cpu_work;

/* Runs w whole on the calling thread (the thread pool helps with the
 * operations). Returns an operation's own failure (out of memory). */
wgc_status cpu_work_run(wgc_context *ctx, const cpu_work *w);

#endif /* WGC_CPU_WORK_H */
