/* Every operation on WebGPU contexts whose storage bindings are capped at
 * a few KiB (4096, 4352, 4608, 5000 -> 4864, 8192 bytes): valid calls must
 * split, never hang or answer WGC_ERR_UNSUPPORTED. Operands sit at awkward
 * places: each in an allocation of its own at an unaligned offset, packed
 * back to back in one allocation (in a shuffled order), spread through one
 * allocation at gaps around the 256-byte binding alignment, in place
 * (element-wise), interleaved (GEMM inputs sharing their rows); shapes
 * are 1, primes, and rows longer than a binding. Each call runs on the CPU
 * backend with the same layout: every allocation must come back bit for bit
 * the same outside the output's span (guards, inputs, gaps), and the output
 * within the operation's accuracy bound. */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS 4

static const size_t LIMITS[] = {4096, 4352, 4608, 5000, 8192};
#define NLIMITS (sizeof LIMITS / sizeof *LIMITS)

enum placement {
  SEPARATE,    /* an allocation each, unaligned offsets */
  PACKED,      /* one allocation, back to back, shuffled */
  SPREAD,      /* one allocation, gaps of 0..320 floats */
  IN_PLACE,    /* element-wise: the output is the first input */
  INTERLEAVED, /* GEMM: A and B rows alternate in one allocation */
  NPLACEMENTS
};
static const char *PLACEMENT_NAMES[] = {"separate", "packed", "spread",
                                        "in-place", "interleaved"};

static unsigned rng_next(unsigned *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* ---- the operation under test ------------------------------------------ */

typedef enum {
  OP_GEMM,
  OP_GEMM_BATCHED,
  OP_CONV,
  OP_ATTENTION,
  OP_REDUCE,
  OP_REDUCE_AXES, /* axes in shape_b[0..rank_b) */
  OP_ARGMAX,
  OP_ARGMIN,
  OP_UNARY,
  OP_BINARY,
  OP_BROADCAST,
  OP_COPY,
  OP_COPY_STRIDED,
  OP_GATHER,
  OP_WHERE,
  OP_GEMM_EX,
  OP_NORM,  /* fn: 0 softmax, 1 log-softmax, 2 LayerNorm, 3 RMSNorm */
  OP_ROTARY /* without position ids: input, cos, sin, output */
} op_kind;

typedef struct op_case {
  op_kind kind;
  /* GEMM (batched: batch > 0) */
  wgc_layout layout;
  wgc_transpose ta, tb;
  size_t m, n, k, batch;
  float alpha, beta;
  /* conv2d */
  wgc_conv2d_desc conv;
  bool bias;
  /* attention */
  wgc_attention_desc attn;
  wgc_rotary_desc rotary;
  /* reduce, broadcast (a), unary/binary/copy: count in shape_a[0] */
  size_t shape_a[8], rank_a, shape_b[8], rank_b, axis;
  int fn; /* reduce, unary or binary op */
  /* copy_strided (shape in shape_a), gather (data shape_a, axis, n_idx),
   * where (cond shape_c, a and b as for broadcast) */
  size_t sd[8], ss[8], n_idx, shape_c[8], rank_c;
  /* GEMM_EX: a, b, bias, c */
  wgc_bias_kind bias_kind;
  wgc_activation act;
} op_case;

/* Operand footprints, in floats, and per operand: its leading dimension
 * (GEMM) or 0. The output is the last operand. */
typedef struct footprint {
  unsigned nops;
  size_t span[MAX_OPS];
  size_t rows[MAX_OPS], cols[MAX_OPS]; /* GEMM: stored rows and columns */
  size_t ld[MAX_OPS], stride[MAX_OPS];
  double tol_abs, tol_rel; /* output bound */
} footprint;

static size_t count_of(const size_t *shape, size_t rank) {
  size_t n = 1;
  for (size_t d = 0; d < rank; d++)
    n *= shape[d];
  return n;
}

static void gemm_footprint(const op_case *c, footprint *f, bool interleave) {
  size_t r[3], co[3];
  ref_stored_dims(c->ta, c->m, c->k, &r[0], &co[0]);
  ref_stored_dims(c->tb, c->k, c->n, &r[1], &co[1]);
  r[2] = c->m;
  co[2] = c->n;
  size_t nb = c->batch ? c->batch : 1;
  f->nops = 3;
  for (int i = 0; i < 3; i++) {
    f->rows[i] = r[i];
    f->cols[i] = co[i];
    /* padded leading dimensions: gaps inside the matrices */
    f->ld[i] = ref_min_ld(c->layout, r[i], co[i]) + (size_t)(i + 1) % 3;
  }
  if (interleave) { /* A's and B's rows alternate: ld covers both */
    f->ld[0] = f->ld[1] =
        ref_min_ld(c->layout, r[0], co[0]) + ref_min_ld(c->layout, r[1], co[1]);
  }
  for (int i = 0; i < 3; i++) {
    size_t one = ref_span(c->layout, f->ld[i], r[i], co[i]);
    f->stride[i] = c->batch ? one + 3 : 0;
    if (c->batch && i == 1 && c->batch > 2)
      f->stride[i] = 0; /* one B shared by every batch */
    f->span[i] = (nb - 1) * f->stride[i] + one;
  }
  f->tol_abs = 1e-6 * (double)c->k * fabs(c->alpha) + 1e-6 * fabs(c->beta);
  f->tol_rel = 1e-5;
}

static void footprint_of(const op_case *c, enum placement pl, footprint *f) {
  memset(f, 0, sizeof *f);
  f->tol_rel = 1e-5;
  f->tol_abs = 1e-6;
  switch (c->kind) {
  case OP_GEMM:
  case OP_GEMM_BATCHED:
    gemm_footprint(c, f, pl == INTERLEAVED);
    break;
  case OP_GEMM_EX: /* the bias goes before C, the output */
    gemm_footprint(c, f, false);
    f->nops = 4;
    f->span[3] = f->span[2];
    f->ld[3] = f->ld[2];
    f->stride[3] = f->stride[2];
    f->rows[3] = f->rows[2];
    f->cols[3] = f->cols[2];
    f->span[2] = c->bias_kind == WGC_BIAS_PER_ROW ? c->m : c->n;
    f->ld[2] = f->stride[2] = f->rows[2] = f->cols[2] = 0;
    f->tol_abs += 2e-6;
    break;
  case OP_CONV: {
    const wgc_conv2d_desc *d = &c->conv;
    size_t p, q, g = d->groups ? d->groups : 1;
    ref_conv2d_size(d, &p, &q);
    f->nops = 4;
    f->span[0] = d->n * d->c * d->h * d->w;
    f->span[1] = d->k * (d->c / g) * d->r * d->s;
    f->span[2] = d->k;
    f->span[3] = d->n * d->k * p * q;
    f->tol_abs = 1e-6 * (double)(d->c / g * d->r * d->s) + 2e-6;
    break;
  }
  case OP_ATTENTION: {
    const wgc_attention_desc *d = &c->attn;
    size_t hkv = d->heads_kv ? d->heads_kv : d->heads;
    size_t hdv = d->head_dim_v ? d->head_dim_v : d->head_dim;
    f->nops = 4;
    f->span[0] = d->batch * d->heads * d->seq_q * d->head_dim;
    f->span[3] = d->batch * d->heads * d->seq_q * hdv;
    f->span[1] = d->batch * hkv * d->seq_kv * d->head_dim;
    f->span[2] = d->batch * hkv * d->seq_kv * hdv;
    f->tol_abs = 1e-6 * (double)d->head_dim + 8e-6;
    break;
  }
  case OP_REDUCE: {
    f->nops = 2;
    f->span[0] = count_of(c->shape_a, c->rank_a);
    f->span[1] = f->span[0] / c->shape_a[c->axis];
    f->tol_abs = 2e-6 * (double)c->shape_a[c->axis];
    break;
  }
  case OP_REDUCE_AXES: {
    size_t red = 1;
    for (size_t k = 0; k < c->rank_b; k++)
      red *= c->shape_a[c->shape_b[k]];
    f->nops = 2;
    f->span[0] = count_of(c->shape_a, c->rank_a);
    f->span[1] = f->span[0] / red;
    f->tol_abs = 2e-6 * (double)red;
    break;
  }
  case OP_ARGMAX:
  case OP_ARGMIN: /* int32 indices: exact */
    f->nops = 2;
    f->span[0] = count_of(c->shape_a, c->rank_a);
    f->span[1] = f->span[0] / c->shape_a[c->axis];
    break;
  case OP_UNARY:
  case OP_COPY:
    f->nops = 2;
    f->span[0] = f->span[1] = c->shape_a[0];
    break;
  case OP_BINARY:
    f->nops = 3;
    f->span[0] = f->span[1] = f->span[2] = c->shape_a[0];
    break;
  case OP_COPY_STRIDED:
    f->nops = 2;
    f->span[0] = f->span[1] = 1;
    for (size_t d = 0; d < c->rank_a; d++) {
      f->span[0] += (c->shape_a[d] - 1) * c->ss[d];
      f->span[1] += (c->shape_a[d] - 1) * c->sd[d];
    }
    break;
  case OP_GATHER:
    f->nops = 3;
    f->span[0] = count_of(c->shape_a, c->rank_a);
    f->span[1] = c->n_idx;
    f->span[2] = f->span[0] / c->shape_a[c->axis] * c->n_idx;
    break;
  case OP_WHERE: {
    size_t ab[8], rab, out[8], rank;
    ref_broadcast_shape(c->shape_a, c->rank_a, c->shape_b, c->rank_b, ab, &rab);
    ref_broadcast_shape(c->shape_c, c->rank_c, ab, rab, out, &rank);
    f->nops = 4;
    f->span[0] = count_of(c->shape_c, c->rank_c);
    f->span[1] = count_of(c->shape_a, c->rank_a);
    f->span[2] = count_of(c->shape_b, c->rank_b);
    f->span[3] = count_of(out, rank);
    break;
  }
  case OP_NORM: {
    size_t len = 1, n = count_of(c->shape_a, c->rank_a);
    for (size_t d = c->axis; d < (c->fn >= 2 ? c->rank_a : c->axis + 1); d++)
      len *= c->shape_a[d];
    f->nops = c->fn == 0 || c->fn == 1 ? 2 : c->fn == 2 ? 4 : 3;
    f->span[0] = f->span[f->nops - 1] = n;
    for (unsigned i = 1; i + 1 < f->nops; i++)
      f->span[i] = len;
    f->tol_abs = 1e-5;
    break;
  }
  case OP_ROTARY: {
    const wgc_rotary_desc *d = &c->rotary;
    f->nops = 4;
    f->span[0] = f->span[3] = d->batch * d->seq * d->heads * d->head_dim;
    f->span[1] = f->span[2] = d->batch * d->seq * (d->rotary_dim / 2);
    break;
  }
  case OP_BROADCAST: {
    size_t out[8], rank;
    ref_broadcast_shape(c->shape_a, c->rank_a, c->shape_b, c->rank_b, out,
                        &rank);
    f->nops = 3;
    f->span[0] = count_of(c->shape_a, c->rank_a);
    f->span[1] = count_of(c->shape_b, c->rank_b);
    f->span[2] = count_of(out, rank);
    break;
  }
  }
}

static wgc_status run_op(wgc_context *ctx, const op_case *c, const footprint *f,
                         const wgc_ptr *p) {
  switch (c->kind) {
  case OP_GEMM:
    return wgc_gemm(ctx, c->layout, c->ta, c->tb, c->m, c->n, c->k, c->alpha,
                    p[0], f->ld[0], p[1], f->ld[1], c->beta, p[2], f->ld[2]);
  case OP_GEMM_BATCHED:
    return wgc_gemm_batched(ctx, c->layout, c->ta, c->tb, c->m, c->n, c->k,
                            c->alpha, p[0], f->ld[0], f->stride[0], p[1],
                            f->ld[1], f->stride[1], c->beta, p[2], f->ld[2],
                            f->stride[2], c->batch);
  case OP_CONV:
    return wgc_conv2d(ctx, &c->conv, p[0], p[1], c->bias ? p[2] : 0, p[3]);
  case OP_ATTENTION:
    return wgc_attention(ctx, &c->attn, p[0], p[1], p[2], p[3]);
  case OP_REDUCE:
    return wgc_reduce(ctx, (wgc_reduce_op)c->fn, p[0], p[1], c->shape_a,
                      c->rank_a, c->axis);
  case OP_REDUCE_AXES:
    return wgc_reduce_axes(ctx, (wgc_reduce_op)c->fn, p[0], p[1], c->shape_a,
                           c->rank_a, c->shape_b, c->rank_b);
  case OP_ARGMAX:
    return wgc_argmax(ctx, p[0], p[1], c->shape_a, c->rank_a, c->axis);
  case OP_ARGMIN:
    return wgc_argmin(ctx, p[0], p[1], c->shape_a, c->rank_a, c->axis);
  case OP_UNARY:
    return wgc_unary(ctx, (wgc_unary_op)c->fn, p[0], p[1], c->shape_a[0]);
  case OP_BINARY:
    return wgc_binary(ctx, (wgc_binary_op)c->fn, p[0], p[1], p[2],
                      c->shape_a[0]);
  case OP_BROADCAST:
    return wgc_binary_broadcast(ctx, (wgc_binary_op)c->fn, p[0], c->shape_a,
                                c->rank_a, p[1], c->shape_b, c->rank_b, p[2]);
  case OP_COPY:
    return wgc_copy(ctx, p[1], p[0], 4 * c->shape_a[0]);
  case OP_COPY_STRIDED:
    return wgc_copy_strided(ctx, p[1], c->sd, p[0], c->ss, c->shape_a,
                            c->rank_a);
  case OP_GATHER:
    return wgc_gather(ctx, p[0], c->shape_a, c->rank_a, c->axis, p[1], c->n_idx,
                      p[2]);
  case OP_WHERE:
    return wgc_where(ctx, p[0], c->shape_c, c->rank_c, p[1], c->shape_a,
                     c->rank_a, p[2], c->shape_b, c->rank_b, p[3]);
  case OP_GEMM_EX: {
    wgc_gemm_epilogue ep = {
        .bias = p[2], .bias_kind = c->bias_kind, .activation = c->act};
    return wgc_gemm_ex(ctx, c->layout, c->ta, c->tb, c->m, c->n, c->k, c->alpha,
                       p[0], f->ld[0], p[1], f->ld[1], c->beta, p[3], f->ld[3],
                       &ep);
  }
  case OP_NORM:
    switch (c->fn) {
    case 0:
      return wgc_softmax(ctx, p[0], p[1], c->shape_a, c->rank_a, c->axis);
    case 1:
      return wgc_log_softmax(ctx, p[0], p[1], c->shape_a, c->rank_a, c->axis);
    case 2:
      return wgc_layer_norm(ctx, p[0], p[1], p[2], p[3], c->shape_a, c->rank_a,
                            c->axis, 1e-5f);
    default:
      return wgc_rms_norm(ctx, p[0], p[1], p[2], c->shape_a, c->rank_a, c->axis,
                          1e-5f);
    }
  case OP_ROTARY:
    return wgc_rotary_embedding(ctx, &c->rotary, p[0], 0, p[1], p[2], p[3]);
  }
  return WGC_ERR_INVALID_ARGUMENT;
}

/* ---- placements ---------------------------------------------------------- */

typedef struct placed {
  unsigned nallocs;
  size_t alloc_n[MAX_OPS];
  unsigned alloc_of[MAX_OPS];
  size_t off[MAX_OPS]; /* floats from the allocation's base */
} placed;

static void place(const footprint *f, enum placement pl, unsigned *seed,
                  placed *out) {
  memset(out, 0, sizeof *out);
  unsigned n = f->nops, order[MAX_OPS];
  for (unsigned i = 0; i < n; i++)
    order[i] = i;
  for (unsigned i = n; i > 1; i--) {
    unsigned j = rng_next(seed) % i, t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
  if (pl == SEPARATE) {
    out->nallocs = n;
    for (unsigned i = 0; i < n; i++) {
      out->alloc_of[i] = i;
      out->off[i] = 1 + rng_next(seed) % 70;
      out->alloc_n[i] = out->off[i] + f->span[i] + 1 + rng_next(seed) % 40;
    }
    return;
  }
  out->nallocs = 1;
  size_t at = 1 + rng_next(seed) % 70;
  for (unsigned r = 0; r < n; r++) {
    unsigned i = order[r];
    if (pl == IN_PLACE && i == n - 1)
      continue;
    out->off[i] = at;
    at +=
        f->span[i] + (pl == SPREAD ? rng_next(seed) % 321 : rng_next(seed) % 3);
  }
  if (pl == IN_PLACE)
    out->off[n - 1] = out->off[0];
  out->alloc_n[0] = at + 1 + rng_next(seed) % 40;
}

/* Interleaved GEMM inputs: B's first element right after A's first row
 * (or column), so that every stored row of A is followed by one of B. */
static void place_interleaved(const op_case *c, const footprint *f,
                              unsigned *seed, placed *out) {
  memset(out, 0, sizeof *out);
  out->nallocs = 1;
  size_t la = ref_min_ld(c->layout, f->rows[0], f->cols[0]);
  size_t base = 1 + rng_next(seed) % 70;
  out->off[0] = base;
  out->off[1] = base + la;
  size_t end = out->off[0] + f->span[0];
  if (out->off[1] + f->span[1] > end)
    end = out->off[1] + f->span[1];
  out->off[2] = end + rng_next(seed) % 3;
  out->alloc_n[0] = out->off[2] + f->span[2] + 1 + rng_next(seed) % 40;
}

/* ---- one case ------------------------------------------------------------ */

static wgc_context *capped(size_t limit) {
  static wgc_context *ctxs[NLIMITS];
  for (size_t i = 0; i < NLIMITS; i++)
    if (LIMITS[i] == limit) {
      if (!ctxs[i])
        ctxs[i] = new_ctx(WGC_BACKEND_WEBGPU, limit);
      return ctxs[i];
    }
  return NULL;
}

/* Fills an allocation's host image everywhere, operands and the guards and
 * gaps around them alike, so that any stray write changes a value. */
static void fill_alloc(float *x, size_t n, unsigned seed, bool positive) {
  fill_uniform(x, n, positive ? 0.05f : -1.0f, 1.0f, seed);
}

/* Inputs that random floats do not exercise: gather's int32 indices (in
 * range, negative and outside the axis) and where's conditions (zeros of
 * both signs among them). */
static void prepare_inputs(const op_case *c, const footprint *f,
                           const placed *lay, float **host, unsigned seed) {
  if (c->kind == OP_GATHER) {
    float *x = host[lay->alloc_of[1]] + lay->off[1];
    int32_t len = (int32_t)c->shape_a[c->axis];
    for (size_t j = 0; j < f->span[1]; j++) {
      int32_t k =
          (int32_t)(rng_next(&seed) % (unsigned)(2 * len + 4)) - len - 2;
      memcpy(&x[j], &k, 4);
    }
  } else if (c->kind == OP_WHERE) {
    float *x = host[lay->alloc_of[0]] + lay->off[0];
    for (size_t j = 0; j < f->span[0]; j += 3)
      x[j] = j % 2 ? -0.0f : 0.0f;
  }
}

/* Runs case c on both backends with placement pl; name labels it. */
static void run_case(const char *name, const op_case *c, enum placement pl,
                     unsigned seed) {
  footprint f;
  footprint_of(c, pl, &f);
  placed lay;
  if (pl == INTERLEAVED)
    place_interleaved(c, &f, &seed, &lay);
  else
    place(&f, pl, &seed, &lay);
  wgc_context *cpu = test_ctx(WGC_BACKEND_CPU);
  bool positive = c->kind == OP_UNARY || c->kind == OP_BINARY;
  float *host[MAX_OPS] = {0}, *want[MAX_OPS] = {0}, *got[MAX_OPS] = {0};
  for (unsigned a = 0; a < lay.nallocs; a++) {
    host[a] = falloc(lay.alloc_n[a]);
    want[a] = falloc(lay.alloc_n[a]);
    got[a] = falloc(lay.alloc_n[a]);
    fill_alloc(host[a], lay.alloc_n[a], seed * 7 + a, positive);
  }
  prepare_inputs(c, &f, &lay, host, seed);
  for (size_t li = 0; li < NLIMITS; li++) {
    if (!case_begin("small_bindings[%zu B] %s %s", LIMITS[li], name,
                    PLACEMENT_NAMES[pl]))
      continue;
    wgc_context *gpu = capped(LIMITS[li]);
    if (!gpu) {
      case_end();
      continue;
    }
    wgc_ptr cb[MAX_OPS] = {0}, gb[MAX_OPS] = {0}, cp[MAX_OPS], gp[MAX_OPS];
    for (unsigned a = 0; a < lay.nallocs; a++) {
      cb[a] = dev_from(cpu, host[a], lay.alloc_n[a]);
      gb[a] = dev_from(gpu, host[a], lay.alloc_n[a]);
    }
    for (unsigned i = 0; i < f.nops; i++) {
      cp[i] = at(cb[lay.alloc_of[i]], lay.off[i]);
      gp[i] = at(gb[lay.alloc_of[i]], lay.off[i]);
    }
    wgc_status s = run_op(cpu, c, &f, cp);
    CHECK(s == WGC_OK, "cpu: %s: %s", wgc_status_name(s), wgc_last_error(cpu));
    s = run_op(gpu, c, &f, gp);
    CHECK(s == WGC_OK, "webgpu: %s: %s", wgc_status_name(s),
          wgc_last_error(gpu));
    unsigned out = f.nops - 1;
    for (unsigned a = 0; a < lay.nallocs; a++) {
      dev_read(cpu, want[a], cb[a], lay.alloc_n[a]);
      dev_read(gpu, got[a], gb[a], lay.alloc_n[a]);
      for (size_t e = 0; e < lay.alloc_n[a]; e++) {
        bool in_out = lay.alloc_of[out] == a && e >= lay.off[out] &&
                      e < lay.off[out] + f.span[out];
        double g = got[a][e], w = want[a][e];
        bool ok;
        if (!in_out || c->kind == OP_ARGMAX || c->kind == OP_ARGMIN)
          ok = same_bits(got[a][e], want[a][e]); /* int32 indices: bits */
        else if (isnan(w) || isinf(w))
          ok = same_bits(got[a][e], want[a][e]) || (isnan(w) && isnan(g));
        else
          ok = fabs(g - w) <= f.tol_rel * fabs(w) + f.tol_abs;
        if (!ok) {
          CHECK(false,
                "allocation %u float %zu (%s): got %.9g, want %.9g "
                "(bound %.3g)",
                a, e, in_out ? "output" : "outside the output", g, w,
                in_out ? f.tol_rel * fabs(w) + f.tol_abs : 0.0);
          break;
        }
      }
    }
    for (unsigned a = 0; a < lay.nallocs; a++) {
      dev_free(cpu, cb[a]);
      dev_free(gpu, gb[a]);
    }
    case_end();
  }
  for (unsigned a = 0; a < lay.nallocs; a++) {
    free(host[a]);
    free(want[a]);
    free(got[a]);
  }
}

/* Runs c under every placement in mask (bits of enum placement). */
static void run_placements(const char *name, const op_case *c, unsigned mask,
                           unsigned seed) {
  for (int pl = 0; pl < NPLACEMENTS; pl++)
    if (mask >> pl & 1)
      run_case(name, c, (enum placement)pl, seed + 101u * (unsigned)pl);
}

#define BASIC ((1u << SEPARATE) | (1u << PACKED) | (1u << SPREAD))
#define ELEMENTWISE (BASIC | (1u << IN_PLACE))

/* ---- the tests ----------------------------------------------------------- */

TEST(small_bindings_gemm) {
  static const struct {
    wgc_layout layout;
    wgc_transpose ta, tb;
    size_t m, n, k;
    float alpha, beta;
  } cases[] = {
      {WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 1, 1, 1, 1.0f, 0.0f},
      /* rows of A of 1500 floats: longer than any window */
      {WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 3, 5, 1500, 1.0f, 0.0f},
      {WGC_COL_MAJOR, WGC_TRANS, WGC_NO_TRANS, 37, 29, 41, 0.5f, -1.5f},
      /* rows of C and B of 1201 floats */
      {WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, 2, 1201, 3, 1.0f, 1.0f},
      {WGC_ROW_MAJOR, WGC_TRANS, WGC_TRANS, 7, 3, 0, 1.0f, 2.0f},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    op_case c = {.kind = OP_GEMM,
                 .layout = cases[i].layout,
                 .ta = cases[i].ta,
                 .tb = cases[i].tb,
                 .m = cases[i].m,
                 .n = cases[i].n,
                 .k = cases[i].k,
                 .alpha = cases[i].alpha,
                 .beta = cases[i].beta};
    char name[96];
    snprintf(name, sizeof name, "gemm %s %c%c m=%zu n=%zu k=%zu",
             c.layout == WGC_ROW_MAJOR ? "row" : "col",
             c.ta == WGC_NO_TRANS ? 'N' : 'T', c.tb == WGC_NO_TRANS ? 'N' : 'T',
             c.m, c.n, c.k);
    run_placements(name, &c, BASIC | (c.k ? 1u << INTERLEAVED : 0),
                   1000u + (unsigned)i);
  }
}

TEST(small_bindings_gemm_batched) {
  static const struct {
    size_t m, n, k, batch;
  } cases[] = {{1, 1, 1, 2}, {5, 7, 300, 3}, {3, 2, 1100, 2}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    op_case c = {.kind = OP_GEMM_BATCHED,
                 .layout = WGC_ROW_MAJOR,
                 .ta = WGC_NO_TRANS,
                 .tb = i == 1 ? WGC_TRANS : WGC_NO_TRANS,
                 .m = cases[i].m,
                 .n = cases[i].n,
                 .k = cases[i].k,
                 .batch = cases[i].batch,
                 .alpha = 1.0f,
                 .beta = 0.5f};
    char name[96];
    snprintf(name, sizeof name, "gemm_batched m=%zu n=%zu k=%zu batch=%zu", c.m,
             c.n, c.k, c.batch);
    run_placements(name, &c, BASIC | (1u << INTERLEAVED), 2000u + (unsigned)i);
  }
}

/* The bias shares the one allocation with A, B and C in the packed and
 * spread placements. */
TEST(small_bindings_gemm_ex) {
  static const struct {
    wgc_layout layout;
    wgc_transpose ta, tb;
    size_t m, n, k;
    float alpha, beta;
    wgc_bias_kind bias_kind;
    wgc_activation act;
  } cases[] = {
      /* k split over windows: only the last piece applies the epilogue */
      {WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 3, 5, 1500, 1.0f, 0.0f,
       WGC_BIAS_PER_COLUMN, WGC_ACTIVATION_GELU},
      {WGC_COL_MAJOR, WGC_TRANS, WGC_NO_TRANS, 37, 29, 41, 0.5f, -1.5f,
       WGC_BIAS_PER_ROW, WGC_ACTIVATION_SILU},
      /* a bias of 1201 floats, longer than a window */
      {WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, 2, 1201, 3, 1.0f, 1.0f,
       WGC_BIAS_PER_COLUMN, WGC_ACTIVATION_RELU},
      {WGC_COL_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 1100, 2, 3, 1.0f, 0.0f,
       WGC_BIAS_PER_ROW, WGC_ACTIVATION_GELU_TANH},
      {WGC_ROW_MAJOR, WGC_TRANS, WGC_TRANS, 7, 3, 0, 1.0f, 2.0f,
       WGC_BIAS_PER_ROW, WGC_ACTIVATION_GELU_TANH},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    op_case c = {.kind = OP_GEMM_EX,
                 .layout = cases[i].layout,
                 .ta = cases[i].ta,
                 .tb = cases[i].tb,
                 .m = cases[i].m,
                 .n = cases[i].n,
                 .k = cases[i].k,
                 .alpha = cases[i].alpha,
                 .beta = cases[i].beta,
                 .bias_kind = cases[i].bias_kind,
                 .act = cases[i].act};
    char name[112];
    snprintf(name, sizeof name,
             "gemm_ex %s %c%c m=%zu n=%zu k=%zu bias=%s act=%d",
             c.layout == WGC_ROW_MAJOR ? "row" : "col",
             c.ta == WGC_NO_TRANS ? 'N' : 'T', c.tb == WGC_NO_TRANS ? 'N' : 'T',
             c.m, c.n, c.k, c.bias_kind == WGC_BIAS_PER_ROW ? "row" : "column",
             (int)c.act);
    run_placements(name, &c, BASIC, 5000u + (unsigned)i);
  }
}

TEST(small_bindings_conv2d) {
  static const wgc_conv2d_desc descs[] = {
      {.n = 1, .c = 1, .h = 1, .w = 1, .k = 1, .r = 1, .s = 1},
      {.n = 2,
       .c = 3,
       .h = 7,
       .w = 11,
       .k = 5,
       .r = 3,
       .s = 3,
       .pad_h = 1,
       .pad_w = 1},
      /* input rows of 1100 floats */
      {.n = 1,
       .c = 2,
       .h = 2,
       .w = 1100,
       .k = 3,
       .r = 1,
       .s = 3,
       .stride_w = 2},
      /* a filter of 3 * 23 * 23 taps per output channel */
      {.n = 1, .c = 3, .h = 23, .w = 23, .k = 2, .r = 23, .s = 23},
      {.n = 1,
       .c = 4,
       .h = 9,
       .w = 13,
       .k = 4,
       .r = 3,
       .s = 2,
       .groups = 4,
       .dilation_h = 2},
      /* 20 channels: the 16x8 register blocks of CPU adapters */
      {.n = 2,
       .c = 6,
       .h = 9,
       .w = 10,
       .k = 20,
       .r = 3,
       .s = 3,
       .stride_h = 2,
       .stride_w = 2,
       .pad_h = 1,
       .pad_w = 1},
      /* pointwise, two images */
      {.n = 2, .c = 6, .h = 7, .w = 9, .k = 18, .r = 1, .s = 1},
  };
  for (size_t i = 0; i < sizeof descs / sizeof *descs; i++) {
    op_case c = {.kind = OP_CONV, .conv = descs[i], .bias = i % 2 == 1};
    char name[128];
    snprintf(name, sizeof name,
             "conv2d n=%zu c=%zu h=%zu w=%zu k=%zu r=%zu s=%zu groups=%zu%s",
             c.conv.n, c.conv.c, c.conv.h, c.conv.w, c.conv.k, c.conv.r,
             c.conv.s, c.conv.groups ? c.conv.groups : 1,
             c.bias ? " bias" : "");
    run_placements(name, &c, BASIC, 3000u + (unsigned)i);
  }
}

TEST(small_bindings_attention) {
  static const wgc_attention_desc descs[] = {
      /* two keys of 541 dims: one head's K beyond a 4 KiB binding, and two
       * softmax states (543 floats each) too */
      {.batch = 1, .heads = 1, .seq_q = 1, .seq_kv = 2, .head_dim = 541},
      {.batch = 1,
       .heads = 2,
       .heads_kv = 1,
       .seq_q = 3,
       .seq_kv = 5,
       .head_dim = 7,
       .causal = WGC_CAUSAL_TOP_LEFT},
      {.batch = 2,
       .heads = 2,
       .seq_q = 5,
       .seq_kv = 37,
       .head_dim = 64,
       .causal = WGC_CAUSAL_BOTTOM_RIGHT},
      {.batch = 1, .heads = 1, .seq_q = 2, .seq_kv = 3, .head_dim = 300},
      {.batch = 1, .heads = 1, .seq_q = 1, .seq_kv = 1, .head_dim = 1},
      /* nine key blocks of such states: combine rounds of three */
      {.batch = 1,
       .heads = 1,
       .seq_q = 2,
       .seq_kv = 9,
       .head_dim = 541,
       .causal = WGC_CAUSAL_BOTTOM_RIGHT},
      /* one key: Q, K, V and O rows of 541 and 900 floats, which no split
       * separates when they lie side by side in one allocation */
      {.batch = 1, .heads = 1, .seq_q = 1, .seq_kv = 1, .head_dim = 541},
      {.batch = 1,
       .heads = 1,
       .seq_q = 2,
       .seq_kv = 1,
       .head_dim = 900,
       .causal = WGC_CAUSAL_TOP_LEFT},
      /* value heads of their own size, softcap */
      {.batch = 1,
       .heads = 2,
       .heads_kv = 1,
       .seq_q = 4,
       .seq_kv = 20,
       .head_dim = 24,
       .head_dim_v = 100,
       .softcap = 2.0f},
      {.batch = 2,
       .heads = 1,
       .seq_q = 3,
       .seq_kv = 9,
       .head_dim = 700,
       .head_dim_v = 5,
       .softcap = 0.5f,
       .causal = WGC_CAUSAL_TOP_LEFT},
      /* query rows of 1100 floats: beyond a 4 KiB binding */
      {.batch = 1,
       .heads = 2,
       .heads_kv = 1,
       .seq_q = 3,
       .seq_kv = 2,
       .head_dim = 1100,
       .causal = WGC_CAUSAL_BOTTOM_RIGHT},
  };
  for (size_t i = 0; i < sizeof descs / sizeof *descs; i++) {
    op_case c = {.kind = OP_ATTENTION, .attn = descs[i]};
    c.attn.scale = 1.0f / sqrtf((float)c.attn.head_dim);
    char name[128];
    snprintf(name, sizeof name,
             "attention batch=%zu heads=%zu/%zu seq_q=%zu seq_kv=%zu "
             "head_dim=%zu causal=%d",
             c.attn.batch, c.attn.heads,
             c.attn.heads_kv ? c.attn.heads_kv : c.attn.heads, c.attn.seq_q,
             c.attn.seq_kv, c.attn.head_dim, (int)c.attn.causal);
    run_placements(name, &c, BASIC, 4000u + (unsigned)i);
  }
}

TEST(small_bindings_reduce) {
  static const struct {
    size_t shape[3], rank, axis;
    wgc_reduce_op op;
  } cases[] = {
      {{1}, 1, 0, WGC_REDUCE_SUM},
      {{3, 1500}, 2, 1, WGC_REDUCE_SUM},
      {{7, 1201, 3}, 3, 1, WGC_REDUCE_MAX},
      {{2, 5, 1300}, 3, 1, WGC_REDUCE_MEAN},
      {{1031, 2}, 2, 0, WGC_REDUCE_MIN},
      {{2, 5, 1300}, 3, 2, WGC_REDUCE_LOG_SUM_EXP},
      {{3, 1500}, 2, 1, WGC_REDUCE_PROD},
      {{1031, 2}, 2, 0, WGC_REDUCE_L1},
      /* rows of the axis wider than half a window: the wide launches */
      {{2, 5, 1300}, 3, 1, WGC_REDUCE_LOG_SUM_EXP},
      {{2, 5, 1300}, 3, 1, WGC_REDUCE_L2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    op_case c = {.kind = OP_REDUCE,
                 .rank_a = cases[i].rank,
                 .axis = cases[i].axis,
                 .fn = (int)cases[i].op};
    memcpy(c.shape_a, cases[i].shape, sizeof cases[i].shape);
    char name[96];
    snprintf(name, sizeof name, "reduce %s [%zu,%zu,%zu] rank=%zu axis=%zu",
             ref_reduce_name(cases[i].op), c.shape_a[0], c.shape_a[1],
             c.shape_a[2], c.rank_a, c.axis);
    run_placements(name, &c, BASIC, 5000u + (unsigned)i);
  }
}

TEST(small_bindings_reduce_axes) {
  static const struct {
    size_t shape[3], axes[2];
    wgc_reduce_op op;
  } cases[] = {
      {{7, 300, 3}, {0, 2}, WGC_REDUCE_L2},
      {{5, 3, 1100}, {2, 0}, WGC_REDUCE_PROD},
      {{1100, 2, 3}, {0, 2}, WGC_REDUCE_MEAN},
      {{3, 1201, 2}, {0, 1}, WGC_REDUCE_LOG_SUM_EXP}, /* merges to one */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    op_case c = {.kind = OP_REDUCE_AXES,
                 .rank_a = 3,
                 .rank_b = 2,
                 .fn = (int)cases[i].op};
    memcpy(c.shape_a, cases[i].shape, sizeof cases[i].shape);
    memcpy(c.shape_b, cases[i].axes, sizeof cases[i].axes);
    char name[96];
    snprintf(name, sizeof name, "reduce_axes %s [%zu,%zu,%zu] axes {%zu,%zu}",
             ref_reduce_name(cases[i].op), c.shape_a[0], c.shape_a[1],
             c.shape_a[2], c.shape_b[0], c.shape_b[1]);
    run_placements(name, &c, BASIC, 5500u + (unsigned)i);
  }
}

TEST(small_bindings_argmax_argmin) {
  static const struct {
    size_t shape[3], rank, axis;
    op_kind kind;
  } cases[] = {
      {{3, 1500}, 2, 1, OP_ARGMAX},    {{1031, 2}, 2, 0, OP_ARGMIN},
      {{7, 1201, 3}, 3, 1, OP_ARGMAX}, {{2, 2053}, 2, 1, OP_ARGMIN},
      {{3, 5, 600}, 3, 1, OP_ARGMIN}, /* the wide launches */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    op_case c = {
        .kind = cases[i].kind, .rank_a = cases[i].rank, .axis = cases[i].axis};
    memcpy(c.shape_a, cases[i].shape, sizeof cases[i].shape);
    char name[96];
    snprintf(name, sizeof name, "%s [%zu,%zu,%zu] rank=%zu axis=%zu",
             c.kind == OP_ARGMAX ? "argmax" : "argmin", c.shape_a[0],
             c.shape_a[1], c.shape_a[2], c.rank_a, c.axis);
    run_placements(name, &c, BASIC, 5700u + (unsigned)i);
  }
}

TEST(small_bindings_unary) {
  static const size_t ns[] = {1, 1025, 4099, 2053, 3001};
  /* HARD_SIGMOID: its default parameters must reach every launch */
  static const wgc_unary_op ops[] = {WGC_UNARY_SILU, WGC_UNARY_LOG,
                                     WGC_UNARY_NEG, WGC_UNARY_SIN,
                                     WGC_UNARY_HARD_SIGMOID};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    op_case c = {.kind = OP_UNARY, .shape_a = {ns[i]}, .fn = (int)ops[i]};
    char name[64];
    snprintf(name, sizeof name, "unary %s n=%zu", ref_unary_name(ops[i]),
             ns[i]);
    run_placements(name, &c, ELEMENTWISE, 6000u + (unsigned)i);
  }
}

TEST(small_bindings_binary) {
  static const size_t ns[] = {1, 1500, 2053};
  static const wgc_binary_op ops[] = {WGC_BINARY_ADD, WGC_BINARY_DIV,
                                      WGC_BINARY_MAX};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    op_case c = {.kind = OP_BINARY, .shape_a = {ns[i]}, .fn = (int)ops[i]};
    char name[64];
    snprintf(name, sizeof name, "binary %s n=%zu", ref_binary_name(ops[i]),
             ns[i]);
    run_placements(name, &c, ELEMENTWISE, 7000u + (unsigned)i);
  }
}

TEST(small_bindings_binary_broadcast) {
  static const struct {
    size_t sa[3], ra, sb[3], rb;
  } cases[] = {
      {{1}, 1, {1}, 1},
      {{3, 1, 1201}, 3, {1, 5, 1}, 3},
      {{1}, 0, {7, 3}, 2},
      {{1100, 1}, 2, {1, 3}, 2},
      {{2, 1, 1031}, 3, {1031}, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    /* in place where a has the output's shape */
    bool in_place = i == 0 || i == 4;
    op_case c = {.kind = OP_BROADCAST,
                 .rank_a = cases[i].ra,
                 .rank_b = cases[i].rb,
                 .fn = (int)(i % 2 ? WGC_BINARY_SUB : WGC_BINARY_MUL)};
    memcpy(c.shape_a, cases[i].sa, sizeof cases[i].sa);
    memcpy(c.shape_b, cases[i].sb, sizeof cases[i].sb);
    char name[96];
    snprintf(name, sizeof name,
             "binary_broadcast a=[%zu,%zu,%zu]/%zu b=[%zu,%zu,%zu]/%zu",
             c.shape_a[0], c.shape_a[1], c.shape_a[2], c.rank_a, c.shape_b[0],
             c.shape_b[1], c.shape_b[2], c.rank_b);
    run_placements(name, &c, in_place ? ELEMENTWISE : BASIC,
                   8000u + (unsigned)i);
  }
}

TEST(small_bindings_copy) {
  static const size_t ns[] = {1, 1500, 5003};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    op_case c = {.kind = OP_COPY, .shape_a = {ns[i]}};
    char name[64];
    snprintf(name, sizeof name, "copy n=%zu", ns[i]);
    run_placements(name, &c, BASIC, 9000u + (unsigned)i);
  }
}

TEST(small_bindings_copy_strided) {
  static const struct {
    size_t rank, shape[4], sd[4], ss[4];
  } cases[] = {
      {2, {1}, {1}, {1}},
      /* a transpose whose rows and columns both pass a binding */
      {2, {3, 1500}, {1, 3}, {1500, 1}},
      {2, {37, 41}, {1, 37}, {41, 1}},
      /* [b,s,h,d] -> [b,h,s,d] */
      {4, {2, 5, 3, 130}, {1950, 130, 650, 1}, {1950, 390, 130, 1}},
      /* a row expanded down 4 rows, and a slice with gaps */
      {2, {4, 1100}, {1100, 1}, {0, 1}},
      {2, {9, 211}, {211, 1}, {423, 2}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    op_case c = {.kind = OP_COPY_STRIDED, .rank_a = cases[i].rank};
    memcpy(c.shape_a, cases[i].shape, sizeof cases[i].shape);
    memcpy(c.sd, cases[i].sd, sizeof cases[i].sd);
    memcpy(c.ss, cases[i].ss, sizeof cases[i].ss);
    char name[96];
    snprintf(name, sizeof name, "copy_strided [%zu,%zu,%zu,%zu]/%zu",
             c.shape_a[0], c.shape_a[1], c.shape_a[2], c.shape_a[3], c.rank_a);
    run_placements(name, &c, BASIC, 10000u + (unsigned)i);
  }
}

TEST(small_bindings_gather) {
  static const struct {
    size_t rank, shape[3], axis, n;
  } cases[] = {
      {1, {1}, 0, 1},
      /* an embedding table of 11100 floats */
      {2, {300, 37}, 0, 11},
      {2, {3, 1201}, 1, 5},
      {3, {2, 7, 400}, 1, 9},
      {2, {5, 3}, 0, 1500},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    op_case c = {.kind = OP_GATHER,
                 .rank_a = cases[i].rank,
                 .axis = cases[i].axis,
                 .n_idx = cases[i].n};
    memcpy(c.shape_a, cases[i].shape, sizeof cases[i].shape);
    char name[96];
    snprintf(name, sizeof name, "gather [%zu,%zu,%zu]/%zu axis=%zu n=%zu",
             c.shape_a[0], c.shape_a[1], c.shape_a[2], c.rank_a, c.axis,
             c.n_idx);
    run_placements(name, &c, BASIC, 11000u + (unsigned)i);
  }
}

TEST(small_bindings_where) {
  static const struct {
    size_t sc[3], rc, sa[3], ra, sb[3], rb;
  } cases[] = {
      {{1}, 1, {1}, 1, {1}, 1},
      {{3, 1, 1201}, 3, {1, 5, 1}, 3, {1201}, 1},
      {{1100, 1}, 2, {1, 3}, 2, {1}, 0},
      {{1500}, 1, {1500}, 1, {1}, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    /* in place over cond where it has the output's shape */
    bool in_place = i == 0 || i == 3;
    op_case c = {.kind = OP_WHERE,
                 .rank_c = cases[i].rc,
                 .rank_a = cases[i].ra,
                 .rank_b = cases[i].rb};
    memcpy(c.shape_c, cases[i].sc, sizeof cases[i].sc);
    memcpy(c.shape_a, cases[i].sa, sizeof cases[i].sa);
    memcpy(c.shape_b, cases[i].sb, sizeof cases[i].sb);
    char name[128];
    snprintf(name, sizeof name,
             "where cond=[%zu,%zu,%zu]/%zu a=[%zu,%zu,%zu]/%zu "
             "b=[%zu,%zu,%zu]/%zu",
             c.shape_c[0], c.shape_c[1], c.shape_c[2], c.rank_c, c.shape_a[0],
             c.shape_a[1], c.shape_a[2], c.rank_a, c.shape_b[0], c.shape_b[1],
             c.shape_b[2], c.rank_b);
    run_placements(name, &c, in_place ? ELEMENTWISE : BASIC,
                   12000u + (unsigned)i);
  }
}

TEST(small_bindings_norm) {
  static const struct {
    size_t shape[3], rank, axis;
    int fn;
  } cases[] = {
      {{1}, 1, 0, 0},
      /* rows of 1500 and 1300 floats: beyond a window, several passes */
      {{3, 1500}, 2, 1, 0},
      {{7, 301, 3}, 3, 1, 1},
      {{2, 5, 1300}, 3, 1, 1},
      {{4, 1031}, 2, 1, 2},
      {{3, 7, 150}, 3, 1, 3},
  };
  static const char *const names[] = {"softmax", "log_softmax", "layer_norm",
                                      "rms_norm"};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    op_case c = {.kind = OP_NORM,
                 .rank_a = cases[i].rank,
                 .axis = cases[i].axis,
                 .fn = cases[i].fn};
    memcpy(c.shape_a, cases[i].shape, sizeof cases[i].shape);
    char name[96];
    snprintf(name, sizeof name, "%s [%zu,%zu,%zu] rank=%zu axis=%zu",
             names[c.fn], c.shape_a[0], c.shape_a[1], c.shape_a[2], c.rank_a,
             c.axis);
    run_placements(name, &c, ELEMENTWISE, 10000u + (unsigned)i);
  }
}

TEST(small_bindings_rotary) {
  static const wgc_rotary_desc descs[] = {
      {.batch = 2,
       .seq = 5,
       .heads = 3,
       .head_dim = 10,
       .rotary_dim = 6,
       .interleaved = 1},
      /* input of 5120 floats, caches of 1280 */
      {.batch = 1,
       .seq = 40,
       .heads = 2,
       .head_dim = 64,
       .layout = WGC_ROTARY_BHSD},
      {.batch = 1, .seq = 3, .heads = 1, .head_dim = 900, .rotary_dim = 898},
  };
  for (size_t i = 0; i < sizeof descs / sizeof *descs; i++) {
    op_case c = {.kind = OP_ROTARY, .rotary = descs[i]};
    if (!c.rotary.rotary_dim)
      c.rotary.rotary_dim = c.rotary.head_dim;
    char name[128];
    snprintf(name, sizeof name, "rotary b=%zu s=%zu h=%zu hd=%zu rd=%zu %s%s",
             c.rotary.batch, c.rotary.seq, c.rotary.heads, c.rotary.head_dim,
             c.rotary.rotary_dim,
             c.rotary.layout == WGC_ROTARY_BHSD ? "BHSD" : "BSHD",
             c.rotary.interleaved ? " interleaved" : "");
    run_placements(name, &c, ELEMENTWISE, 11000u + (unsigned)i);
  }
}
