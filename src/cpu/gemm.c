/* GEMM on the CPU: C := alpha*op(A)*op(B) + beta*C per batch, on the strided
 * (BLIS-style) arguments, then the epilogue (bias, activation) in double on
 * the same sum before C is rounded (an f32 C's GELU in float SIMD, gelu.h;
 * a typed C and k == 0 take libm's in double). Blocked as in BLIS/GotoBLAS: per
 * task, a PACK_KC x NB block of op(B) and an MB x PACK_KC block of op(A) are
 * packed into contiguous slivers (zero-padded to the register tile), and a
 * register-tile kernel accumulates TILE_MR x TILE_NR floats over each
 * TILE_KC of that depth. The depth blocks are summed in double (from the
 * kernel's registers) and C is written once at the end, so only
 * TILE_KC terms are ever summed in float: the reference backend is more
 * accurate than the GPU kernels (8x8 outputs of k = 65536 products in [0, 1):
 * worst error 9.0 float epsilons of sum|ab| with float blocks of 256 into
 * C, 8.1 on lavapipe, now 1.1). Tasks are (batch, row block, column block)
 * tiles of C, which never overlap, so they run in parallel.
 *
 * Typed operands (f16, bf16, Q8_0/Q4_0 B) are converted to float while
 * they are packed, so the kernel and the sums are the f32 ones; a typed C
 * is read and written through dtype.c's conversions, rounded once from
 * the double result. The f32 operands keep the packers of tile.h. */
#include "cpu.h"
#include "gelu.h"
#include "split.h"
#include "tile.h"

#include "dtype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MB_MAX 120  /* rows of a task; the packed A block fits L2 */
#define NB_MAX 512  /* columns of a task */
#define PACK_KC 512 /* depth packed at once: whole TILE_KC blocks */

typedef struct gemm_job {
  const wgc_gemm_args *g;
  const void *a, *b; /* batch 0, of their types */
  void *c;
  size_t mb, nb; /* task tile (multiples of TILE_MR and TILE_NR) */
  size_t m_blocks, n_blocks;
  size_t kp_max;         /* min(PACK_KC, k) */
  float *scratch;        /* per worker: packed A then packed B */
  size_t scratch_floats; /* per worker */
  double *sums;          /* per worker: mb x nb sums over depth blocks */
} gemm_job;

/* op(A)[i0 .. i0+rows, p0 .. p0+kc] and op(B)[p0 .. p0+kc, j0 .. j0+cols]
 * packed (tile.h). */
static void pack_a(const wgc_gemm_args *g, const float *a, size_t i0,
                   size_t rows, size_t p0, size_t kc, float *dst) {
  tile_pack_a(a + i0 * g->rs_a + p0 * g->cs_a, g->rs_a, g->cs_a, rows, kc, dst);
}

static void pack_b(const wgc_gemm_args *g, const float *b, size_t p0, size_t kc,
                   size_t j0, size_t cols, float *dst) {
  tile_pack_b(b + p0 * g->rs_b + j0 * g->cs_b, g->rs_b, g->cs_b, kc, cols, dst);
}

/* 1/(1+e^-x) without overflow: the exponent is never positive. */
static double sigmoid(double x) {
  if (x >= 0.0)
    return 1.0 / (1.0 + exp(-x));
  double e = exp(x); /* also NaN for NaN */
  return e / (1.0 + e);
}

/* The epilogue's activation, in double as the element-wise ops define
 * them (NaN stays NaN). GELU_TANH's 0.5x(1 + tanh(u)) is x*sigmoid(2u),
 * which does not cancel for negative x. */
static double activate(wgc_activation act, double x) {
  switch (act) {
  case WGC_ACTIVATION_RELU:
    return x < 0.0 ? 0.0 : x;
  case WGC_ACTIVATION_GELU:
    return 0.5 * x * erfc(-x * 0.70710678118654752440);
  case WGC_ACTIVATION_GELU_TANH:
    return x *
           sigmoid(2.0 * 0.79788456080286535588 * (x + 0.044715 * x * x * x));
  case WGC_ACTIVATION_SILU:
    return x * sigmoid(x);
  default:
    return x;
  }
}

/* Element (i, j) of C after the epilogue, from v = alpha*sum + beta*C,
 * before C's rounding. */
static double epilogue_exact(const wgc_gemm_args *g, const void *bias, size_t i,
                             size_t j, double v) {
  if (bias)
    v += wgc_dtype_load(bias, g->bias_type,
                        g->bias_kind == WGC_BIAS_PER_ROW ? i : j);
  return activate(g->act, v);
}

static float epilogue(const wgc_gemm_args *g, const void *bias, size_t i,
                      size_t j, double v) {
  return (float)epilogue_exact(g, bias, i, j, v);
}

static bool has_epilogue(const wgc_gemm_args *g) {
  return g->has_bias || g->act != WGC_ACTIVATION_NONE;
}

/* The epilogue on one row of v = alpha*sum + beta*C (row i of C, columns
 * j0 ..), in place: the bias, then the activation, each as
 * epilogue_exact does per element (but GELU, by gelu.h), with the choices
 * made once per row. */
static void epilogue_row(const wgc_gemm_args *g, const void *bias, size_t i,
                         size_t j0, double *v, size_t cols) {
  if (bias && g->bias_kind == WGC_BIAS_PER_ROW) {
    double b = cpu_load(bias, g->bias_type, i);
    for (size_t j = 0; j < cols; j++)
      v[j] += b;
  } else if (bias) {
    for (size_t j = 0; j < cols; j++) /* an f32 bias read in place */
      v[j] += cpu_load(bias, g->bias_type, j0 + j);
  }
  switch (g->act) {
  case WGC_ACTIVATION_RELU:
    for (size_t j = 0; j < cols; j++)
      v[j] = activate(WGC_ACTIVATION_RELU, v[j]);
    break;
  case WGC_ACTIVATION_GELU: /* gelu.h: float SIMD, within 1.9e-6 */
    gelu_row(v, cols);
    break;
  case WGC_ACTIVATION_GELU_TANH:
  case WGC_ACTIVATION_SILU:
    for (size_t j = 0; j < cols; j++)
      v[j] = activate(g->act, v[j]);
    break;
  default:
    break;
  }
}

/* C := alpha*sums + beta*C over the task's tile at (i0, j0) of C, each
 * element rounded once, after the epilogue when there is one; beta == 0
 * never reads C, so NaN there vanishes (any other beta, NaN included,
 * reads it). The sums become the results, in place. */
static void store_tile(const wgc_gemm_args *g, float *c, size_t i0, size_t j0,
                       size_t rows, size_t cols, double *sums, size_t nb) {
  double alpha = g->alpha, beta = g->beta;
  const void *bias = g->has_bias ? cpu_ptr(g->bias) : NULL;
  bool ep = has_epilogue(g);
  for (size_t i = 0; i < rows; i++) {
    float *ci = c + (i0 + i) * g->rs_c + j0 * g->cs_c;
    double *v = sums + i * nb;
    if (g->beta == 0.0f)
      for (size_t j = 0; j < cols; j++)
        v[j] *= alpha;
    else
      for (size_t j = 0; j < cols; j++)
        v[j] = alpha * v[j] + beta * ci[j * g->cs_c];
    if (ep)
      epilogue_row(g, bias, i0 + i, j0, v, cols);
    if (g->cs_c == 1)
      for (size_t j = 0; j < cols; j++)
        ci[j] = (float)v[j];
    else
      for (size_t j = 0; j < cols; j++)
        ci[j * g->cs_c] = (float)v[j];
  }
}

/* store_tile for a C of another type; base: the batch's first element.
 * sums NULL: beta*C alone (k == 0 or alpha == 0); else the results are
 * made in place in sums and a row of C along its unit stride is stored as
 * one run. */
static void store_tile_typed(const wgc_gemm_args *g, void *c, size_t base,
                             size_t i0, size_t j0, size_t rows, size_t cols,
                             double *sums, size_t nb) {
  const void *bias = g->has_bias ? cpu_ptr(g->bias) : NULL;
  bool ep = has_epilogue(g);
  for (size_t i = 0; i < rows; i++) {
    size_t e0 = base + (i0 + i) * g->rs_c + j0 * g->cs_c;
    if (sums && g->cs_c == 1) {
      double *v = sums + i * nb;
      for (size_t j = 0; j < cols; j++) {
        v[j] *= (double)g->alpha;
        if (g->beta != 0.0f)
          v[j] += (double)g->beta * wgc_dtype_load(c, g->c_type, e0 + j);
        if (ep)
          v[j] = epilogue_exact(g, bias, i0 + i, j0 + j, v[j]);
      }
      wgc_dtype_store_doubles(c, g->c_type, e0, v, cols);
      continue;
    }
    for (size_t j = 0; j < cols; j++) {
      size_t e = e0 + j * g->cs_c;
      double v = sums ? (double)g->alpha * sums[i * nb + j] : 0.0;
      if (g->beta != 0.0f)
        v += (double)g->beta * wgc_dtype_load(c, g->c_type, e);
      if (ep)
        v = epilogue_exact(g, bias, i0 + i, j0 + j, v);
      wgc_dtype_store(c, g->c_type, e, v);
    }
  }
}

/* Packs op(B)[p1 .. p1+kp, j0 .. j0+cols] of batch t as slivers of
 * TILE_NR columns kp deep (sliver s/TILE_NR at dst + s*kp), one sliver at
 * a time over the whole depth: a linear layer's transposed weights are then
 * read in runs of kp floats per row, which streams weights that are not in
 * the cache (a model's) faster than runs of TILE_KC (1.1-1.2x in wasm32).
 * The typed packers convert runs of the whole depth too. */
static void pack_b_block(const gemm_job *job, size_t t, size_t p1, size_t kp,
                         size_t j0, size_t cols, float *dst) {
  const wgc_gemm_args *g = job->g;
  for (size_t s = 0; s < cols; s += TILE_NR) {
    size_t w = cols - s < TILE_NR ? cols - s : TILE_NR;
    if (g->b_type == WGC_DTYPE_F32) {
      pack_b(g, (const float *)job->b + t * g->batch_b, p1, kp, j0 + s, w,
             dst + s * kp);
      continue;
    }
    tile_pack_typed(job->b, g->b_type,
                    t * g->batch_b + p1 * g->rs_b + (j0 + s) * g->cs_b, g->cs_b,
                    g->rs_b, w, kp, TILE_NR, dst + s * kp);
  }
}

/* op(A)[i0 .. i0+rows, p1 .. p1+kp] of batch t as slivers of TILE_MR rows
 * kp deep (sliver i/TILE_MR at dst + i*kp). */
static void pack_a_block(const gemm_job *job, size_t t, size_t p1, size_t kp,
                         size_t i0, size_t rows, float *dst) {
  const wgc_gemm_args *g = job->g;
  if (g->a_type == WGC_DTYPE_F32) {
    pack_a(g, (const float *)job->a + t * g->batch_a, i0, rows, p1, kp, dst);
    return;
  }
  for (size_t s = 0; s < rows; s += TILE_MR)
    for (size_t q = 0; q < kp; q += TILE_KC)
      tile_pack_typed(job->a, g->a_type,
                      t * g->batch_a + (i0 + s) * g->rs_a + (p1 + q) * g->cs_a,
                      g->rs_a, g->cs_a, rows - s < TILE_MR ? rows - s : TILE_MR,
                      kp - q < TILE_KC ? kp - q : TILE_KC, TILE_MR,
                      dst + s * kp + q * TILE_MR);
}

/* Whether C is one row and a typed B has its depth as unit stride (a
 * linear layer's weights, decoding): gemv_task then reads B as it lies.
 * An f32 B stays with the packed kernel, faster there (its packing is a
 * copy, and the tile shares A's loads over 8 columns). */
static bool is_gemv(const wgc_gemm_args *g) {
  return g->m == 1 && g->rs_b == 1 && g->b_type != WGC_DTYPE_F32;
}

/* The row of C's columns [j0, j0 + cols) of batch t into sums, as
 * gemm_task's tiles sum them (TILE_KC terms in float, the blocks added in
 * double, in order), without packing: each column's run of B is dotted
 * where it lies (a typed B converted a TILE_KC run at a time into the
 * cache), and op(A)'s row PACK_KC at a time into pa. Packing converted
 * every weight into a block that the kernel then read again. */
static void gemv_task(const gemm_job *job, size_t t, size_t j0, size_t cols,
                      float *pa, double *sums) {
  const wgc_gemm_args *g = job->g;
  float run[TILE_KC];
  for (size_t p1 = 0; p1 < g->k; p1 += PACK_KC) {
    size_t kp = g->k - p1 < PACK_KC ? g->k - p1 : PACK_KC;
    size_t a0 = t * g->batch_a + p1 * g->cs_a;
    if (g->a_type != WGC_DTYPE_F32 && g->cs_a == 1)
      wgc_dtype_load_run(job->a, g->a_type, a0, kp, pa);
    else
      for (size_t p = 0; p < kp; p++)
        pa[p] = g->a_type == WGC_DTYPE_F32
                    ? ((const float *)job->a)[a0 + p * g->cs_a]
                    : wgc_dtype_load(job->a, g->a_type, a0 + p * g->cs_a);
    for (size_t j = 0; j < cols; j++) {
      size_t b0 = t * g->batch_b + p1 + (j0 + j) * g->cs_b;
      for (size_t q = 0; q < kp; q += TILE_KC) {
        size_t n = kp - q < TILE_KC ? kp - q : TILE_KC;
        wgc_dtype_load_run(job->b, g->b_type, b0 + q, n, run);
        double d = tile_dot(pa + q, run, n);
        sums[j] = p1 == 0 && q == 0 ? d : sums[j] + d;
      }
    }
  }
}

/* The tile of C's rows [i0, i0 + rows) and columns [j0, j0 + cols) of
 * batch t into sums: PACK_KC deep at a time, operands packed into pa and
 * pb; each tile of C then adds its TILE_KC blocks in order
 * (tile_kernel_add). */
static void packed_task(const gemm_job *job, size_t t, size_t i0, size_t rows,
                        size_t j0, size_t cols, float *pa, float *pb,
                        double *sums) {
  const wgc_gemm_args *g = job->g;
  for (size_t p1 = 0; p1 < g->k; p1 += PACK_KC) {
    size_t kp = g->k - p1 < PACK_KC ? g->k - p1 : PACK_KC;
    pack_b_block(job, t, p1, kp, j0, cols, pb);
    pack_a_block(job, t, p1, kp, i0, rows, pa);
    for (size_t js = 0; js < cols; js += TILE_NR) {
      size_t w = cols - js < TILE_NR ? cols - js : TILE_NR;
      for (size_t is = 0; is < rows; is += TILE_MR)
        tile_kernel_add(kp, pa + is * kp, pb + js * kp, sums, job->nb, is, js,
                        rows - is < TILE_MR ? rows - is : TILE_MR, w, p1 == 0);
    }
  }
}

static void gemm_task(void *arg, size_t task, unsigned worker) {
  const gemm_job *job = arg;
  const wgc_gemm_args *g = job->g;
  size_t jb = task % job->n_blocks;
  size_t ib = task / job->n_blocks % job->m_blocks;
  size_t t = task / job->n_blocks / job->m_blocks;
  size_t i0 = ib * job->mb, j0 = jb * job->nb;
  size_t rows = g->m - i0 < job->mb ? g->m - i0 : job->mb;
  size_t cols = g->n - j0 < job->nb ? g->n - j0 : job->nb;
  float *pa = job->scratch + worker * job->scratch_floats;
  float *pb = pa + job->mb * job->kp_max;
  double *sums = job->sums + worker * job->mb * job->nb;

  if (is_gemv(g))
    gemv_task(job, t, j0, cols, pa, sums);
  else
    packed_task(job, t, i0, rows, j0, cols, pa, pb, sums);
  if (g->c_type == WGC_DTYPE_F32)
    store_tile(g, (float *)job->c + t * g->batch_c, i0, j0, rows, cols, sums,
               job->nb);
  else
    store_tile_typed(g, job->c, t * g->batch_c, i0, j0, rows, cols, sums,
                     job->nb);
}

/* C := beta*C, then the epilogue, for k == 0 or alpha == 0 (A and B are
 * not read). */
static void scale_c(const wgc_gemm_args *g, float *c) {
  bool ep = has_epilogue(g);
  if (g->beta == 1.0f && !ep)
    return;
  const void *bias = g->has_bias ? cpu_ptr(g->bias) : NULL;
  if (g->c_type != WGC_DTYPE_F32) { /* rounded once, from double */
    for (size_t t = 0; t < g->batch; t++)
      store_tile_typed(g, c, t * g->batch_c, 0, 0, g->m, g->n, NULL, 0);
    return;
  }
  for (size_t t = 0; t < g->batch; t++)
    for (size_t i = 0; i < g->m; i++) {
      float *ci = c + t * g->batch_c + i * g->rs_c;
      for (size_t j = 0; j < g->n; j++) {
        float *cij = ci + j * g->cs_c;
        if (ep)
          *cij = epilogue(g, bias, i, j,
                          g->beta == 0.0f ? 0.0 : (double)g->beta * *cij);
        else
          *cij = g->beta == 0.0f ? 0.0f : g->beta * *cij;
      }
    }
}

/* About a millisecond of one wasm32 thread's GEMM: a job this long is
 * worth waking sleeping workers for. */
#define GEMM_WAKE_FLOPS 33554432.0

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }
static size_t div_up(size_t x, size_t by) { return (x + by - 1) / by; }

wgc_status cpu_gemm(wgc_context *ctx, const wgc_gemm_args *g) {
  float *c = cpu_ptr(g->c);
  if (g->k == 0 || g->alpha == 0.0f) {
    scale_c(g, c);
    return WGC_OK;
  }
  gemm_job job = {.g = g, .a = cpu_ptr(g->a), .b = cpu_ptr(g->b), .c = c};
  /* the typed packers read runs of at most TILE_KC along k */
  _Static_assert(TILE_KC % 32 == 0, "depth blocks are whole Q8_0/Q4_0 blocks");
  job.mb = round_up(g->m < MB_MAX ? g->m : MB_MAX, TILE_MR);
  job.nb = round_up(g->n < NB_MAX ? g->n : NB_MAX, TILE_NR);
  job.kp_max = g->k < PACK_KC ? g->k : PACK_KC;

  /* Shrink the tiles until every thread has about two tiles to work on:
   * every thread for a long job, those awake for a short one (in wasm32 a
   * sleeping worker would come too late, and smaller tiles cost). */
  const cpu_backend *be = ctx->impl;
  double flops = 2.0 * g->m * g->n * g->k * g->batch;
  unsigned threads =
      flops >= GEMM_WAKE_FLOPS ? be->threads : cpu_pool_ready(be->pool);
  for (;;) {
    size_t tiles = g->batch * div_up(g->m, job.mb) * div_up(g->n, job.nb);
    if (threads == 1 || flops < CPU_SERIAL_WORK || tiles >= 2 * (size_t)threads)
      break;
    if (job.nb >= job.mb && job.nb > 4 * TILE_NR)
      job.nb = round_up(job.nb / 2, TILE_NR);
    else if (job.mb > 4 * TILE_MR)
      job.mb = round_up(job.mb / 2, TILE_MR);
    else
      break;
  }
  job.m_blocks = div_up(g->m, job.mb);
  job.n_blocks = div_up(g->n, job.nb);
  size_t tasks = g->batch * job.m_blocks * job.n_blocks;
  unsigned workers = cpu_workers(ctx, tasks, flops);

  job.scratch_floats = round_up((job.mb + job.nb) * job.kp_max, 16);
  job.scratch = aligned_alloc(64, workers * job.scratch_floats * sizeof(float));
  job.sums = malloc(workers * job.mb * job.nb * sizeof(double));
  if (!job.scratch || !job.sums) {
    free(job.scratch);
    free(job.sums);
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory for %u packing buffers of "
                    "%zu bytes",
                    g->fn, workers,
                    job.scratch_floats * sizeof(float) +
                        job.mb * job.nb * sizeof(double));
  }
  cpu_parallel(ctx, tasks, flops, gemm_task, &job);
  free(job.scratch);
  free(job.sums);
  return WGC_OK;
}

/* ---- pieces for the wasm32 queue (split.h) -------------------------------
 * group > 0: pieces are runs of whole batches. Otherwise tiles of
 * block_size[0] rows x [1] columns x [2] depth of one batch, depth
 * innermost, so the depth pieces of a tile run in order: the first applies
 * beta and the others add to C (beta 1), as the whole call does from one
 * TILE_KC block to the next. A piece packs (rows + columns) x depth operands
 * for rows x columns x depth products, so tiles are as square as the budget
 * allows, and at least GEMM_EDGE on a side before the depth is cut. */
#define GEMM_EDGE 48
#define GEMM_KC 256
/* The packed kernel does about this many flops in the time the other
 * families visit one element (wasm32 SIMD128: 15-28 GFLOP/s against some
 * 2 ns an element), so a piece's flops are counted in eighths. */
#define GEMM_FLOPS_PER_UNIT 8.0

static bool gemm_scales_only(const wgc_gemm_args *g) {
  return g->k == 0 || g->alpha == 0.0f;
}

wgc_status cpu_split_gemm_plan(const wgc_gemm_args *g, cpu_split *s) {
  double e =
      gemm_scales_only(g) ? 1.0 : 2.0 * (double)g->k / GEMM_FLOPS_PER_UNIT;
  double per_batch = e * (double)g->m * (double)g->n; /* e per C item */
  s->work = per_batch * (double)g->batch;
  if (per_batch <= s->piece_work) {
    s->group = cpu_fit(s, per_batch, g->batch);
    s->pieces = cpu_div_up(g->batch, s->group);
    return WGC_OK;
  }
  size_t mb, nb, kb = gemm_scales_only(g) ? 1 : g->k;
  double items = s->piece_work / e; /* C items a piece sums over all of k */
  /* a typed C is rounded once: its depth is never cut */
  if (gemm_scales_only(g) || items >= (double)GEMM_EDGE * GEMM_EDGE ||
      g->c_type != WGC_DTYPE_F32) {
    size_t edge = (size_t)sqrt(items);
    if (edge == 0)
      edge = 1;
    if (g->n <= edge) {
      nb = g->n;
      mb = cpu_fit(s, e * (double)nb, g->m);
    } else {
      mb = cpu_min(g->m, edge);
      nb = cpu_fit(s, e * (double)mb, g->n);
    }
  } else {
    mb = cpu_min(g->m, GEMM_EDGE);
    nb = cpu_min(g->n, GEMM_EDGE);
    size_t kc =
        cpu_fit(s, 2.0 * (double)mb * (double)nb / GEMM_FLOPS_PER_UNIT, g->k);
    kb = kc < GEMM_KC ? GEMM_KC : kc / GEMM_KC * GEMM_KC;
    kb = cpu_min(kb, g->k);
  }
  size_t sizes[3] = {mb, nb, kb}, extents[3] = {g->m, g->n, kb};
  if (!gemm_scales_only(g))
    extents[2] = g->k;
  s->pieces = g->batch;
  for (int d = 0; d < 3; d++) {
    s->block_size[d] = sizes[d];
    s->blocks[d] = cpu_div_up(extents[d], sizes[d]);
    s->pieces *= s->blocks[d];
  }
  return WGC_OK;
}

/* r advanced by elems elements of type t (whole blocks of a block type). */
static wgc_ref ref_at(wgc_ref r, wgc_dtype t, size_t elems) {
  r.offset += (uint64_t)(elems / wgc_dtype_block(t)) * wgc_dtype_block_bytes(t);
  return r;
}

wgc_status cpu_split_gemm_run(wgc_context *ctx, const wgc_gemm_args *g,
                              cpu_split *s, size_t i) {
  wgc_gemm_args a = *g;
  if (s->group) {
    size_t b0 = i * s->group;
    a.batch = cpu_min(s->group, g->batch - b0);
    a.a = ref_at(g->a, g->a_type, b0 * g->batch_a);
    a.b = ref_at(g->b, g->b_type, b0 * g->batch_b);
    a.c = ref_at(g->c, g->c_type, b0 * g->batch_c);
    return cpu_gemm(ctx, &a);
  }
  size_t kbk = i % s->blocks[2];
  i /= s->blocks[2];
  size_t jb = i % s->blocks[1];
  i /= s->blocks[1];
  size_t ib = i % s->blocks[0], t = i / s->blocks[0];
  size_t i0 = ib * s->block_size[0], j0 = jb * s->block_size[1];
  size_t p0 = gemm_scales_only(g) ? 0 : kbk * s->block_size[2];
  a.batch = 1;
  a.m = cpu_min(s->block_size[0], g->m - i0);
  a.n = cpu_min(s->block_size[1], g->n - j0);
  if (!gemm_scales_only(g)) {
    a.k = cpu_min(s->block_size[2], g->k - p0);
    if (kbk)
      a.beta = 1.0f;
    /* the epilogue acts on the whole sum: after the last depth piece */
    if (kbk + 1 < s->blocks[2]) {
      a.has_bias = false;
      a.act = WGC_ACTIVATION_NONE;
    }
  }
  if (a.has_bias) /* the tile's own entries of the bias */
    a.bias = ref_at(g->bias, g->bias_type,
                    g->bias_kind == WGC_BIAS_PER_ROW ? i0 : j0);
  a.a = ref_at(g->a, g->a_type, t * g->batch_a + i0 * g->rs_a + p0 * g->cs_a);
  a.b = ref_at(g->b, g->b_type, t * g->batch_b + p0 * g->rs_b + j0 * g->cs_b);
  a.c = ref_at(g->c, g->c_type, t * g->batch_c + i0 * g->rs_c + j0 * g->cs_c);
  return cpu_gemm(ctx, &a);
}
