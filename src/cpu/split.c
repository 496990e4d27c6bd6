/* Pieces of CPU work (see split.h). */
#include "split.h"

#include "cpu.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- GEMM ------------------------------------------------------------------
 * group > 0: pieces are runs of whole batches. Otherwise tiles of
 * block_size[0] rows x [1] columns x [2] depth of one batch, depth
 * innermost, so the depth pieces of a tile run in order: the first applies
 * beta and the others add to C (beta 1), as the whole call does from one
 * KC block to the next. Tiles keep some 48 rows and columns so that packing
 * stays a few percent of the work. */
#define GEMM_EDGE 48
#define GEMM_KC 256

static bool gemm_scales_only(const wgc_gemm_args *g) {
  return g->k == 0 || g->alpha == 0.0f;
}

static void plan_gemm(const wgc_gemm_args *g, cpu_split *s) {
  double e = gemm_scales_only(g) ? 1.0 : 2.0 * (double)g->k; /* per C item */
  double per_batch = e * (double)g->m * (double)g->n;
  s->work = per_batch * (double)g->batch;
  if (per_batch <= s->piece_work) {
    s->group = cpu_fit(s, per_batch, g->batch);
    s->pieces = cpu_div_up(g->batch, s->group);
    return;
  }
  size_t mb, nb = g->n, kb = gemm_scales_only(g) ? 1 : g->k;
  if (e * (double)g->n * 8.0 <= s->piece_work) {
    mb = cpu_fit(s, e * (double)g->n, g->m);
  } else if (gemm_scales_only(g) || e * GEMM_EDGE * 8.0 <= s->piece_work) {
    mb = cpu_min(g->m, GEMM_EDGE);
    nb = cpu_fit(s, e * (double)mb, g->n);
  } else {
    mb = cpu_min(g->m, GEMM_EDGE);
    nb = cpu_min(g->n, GEMM_EDGE);
    size_t kc = cpu_fit(s, 2.0 * (double)mb * (double)nb, g->k);
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
}

static wgc_status run_gemm(wgc_context *ctx, const wgc_gemm_args *g,
                           const cpu_split *s, size_t i) {
  wgc_gemm_args a = *g;
  if (s->group) {
    size_t b0 = i * s->group;
    a.batch = cpu_min(s->group, g->batch - b0);
    a.a = cpu_ref_at(g->a, b0 * g->batch_a);
    a.b = cpu_ref_at(g->b, b0 * g->batch_b);
    a.c = cpu_ref_at(g->c, b0 * g->batch_c);
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
  }
  a.a = cpu_ref_at(g->a, t * g->batch_a + i0 * g->rs_a + p0 * g->cs_a);
  a.b = cpu_ref_at(g->b, t * g->batch_b + p0 * g->rs_b + j0 * g->cs_b);
  a.c = cpu_ref_at(g->c, t * g->batch_c + i0 * g->rs_c + j0 * g->cs_c);
  return cpu_gemm(ctx, &a);
}

/* ---- conv2d ----------------------------------------------------------------
 * group > 0: pieces are runs of group output channels of one image and one
 * channel group. Otherwise one plane is too big: pieces are block_size[0]
 * output rows of one plane, and the input rows they read (all of the
 * group's channels) are gathered into a buffer first, since a window of
 * rows is not a tensor the conv call can address in place. Padding rows
 * stay virtual (pad_h, and a shorter h below), so every tap is the same. */
static double conv_row_cost(const wgc_conv2d_args *c) {
  const wgc_conv2d_desc *d = &c->d;
  return (2.0 * (double)(d->c / d->groups) * (double)(d->r * d->s) + 1.0) *
         (double)c->q;
}

static void plan_conv(const wgc_conv2d_args *c, cpu_split *s) {
  const wgc_conv2d_desc *d = &c->d;
  double plane = conv_row_cost(c) * (double)c->p;
  size_t kg = d->k / d->groups;
  s->work = plane * (double)(d->n * d->k);
  if (plane <= s->piece_work) {
    s->group = cpu_fit(s, plane, kg);
    s->blocks[0] = cpu_div_up(kg, s->group);
    s->pieces = d->n * d->groups * s->blocks[0];
  } else {
    s->block_size[0] = cpu_fit(s, conv_row_cost(c), c->p);
    s->blocks[0] = cpu_div_up(c->p, s->block_size[0]);
    s->pieces = d->n * d->k * s->blocks[0];
  }
}

/* The parts of a piece shared by both forms: image img, channel group gi,
 * out_count output channels from oc (absolute). */
static wgc_conv2d_args conv_piece(const wgc_conv2d_args *c, size_t img,
                                  size_t oc, size_t out_count) {
  const wgc_conv2d_desc *d = &c->d;
  size_t cg = d->c / d->groups, gi = oc / (d->k / d->groups);
  wgc_conv2d_args a = *c;
  a.d.n = 1;
  a.d.c = cg;
  a.d.groups = 1;
  a.d.k = out_count;
  a.input = cpu_ref_at(c->input, (img * d->c + gi * cg) * d->h * d->w);
  a.filter = cpu_ref_at(c->filter, oc * cg * d->r * d->s);
  if (c->has_bias)
    a.bias = cpu_ref_at(c->bias, oc);
  a.output = cpu_ref_at(c->output, (img * d->k + oc) * c->p * c->q);
  return a;
}

static wgc_status run_conv(wgc_context *ctx, const wgc_conv2d_args *c,
                           const cpu_split *s, size_t i) {
  const wgc_conv2d_desc *d = &c->d;
  size_t kg = d->k / d->groups, cg = d->c / d->groups;
  if (s->group) {
    size_t per_image = d->groups * s->blocks[0];
    size_t img = i / per_image, rem = i % per_image;
    size_t oc0 = rem % s->blocks[0] * s->group;
    size_t oc = rem / s->blocks[0] * kg + oc0;
    wgc_conv2d_args a = conv_piece(c, img, oc, cpu_min(s->group, kg - oc0));
    return cpu_conv2d(ctx, &a);
  }
  size_t plane = i / s->blocks[0], rows = s->block_size[0];
  size_t img = plane / d->k, oc = plane % d->k;
  size_t p0 = i % s->blocks[0] * rows, pn = cpu_min(rows, c->p - p0);
  /* input rows [lo, hi) are read; [real_lo, real_hi) of them exist */
  long long lo = (long long)(p0 * d->stride_h) - (long long)d->pad_h;
  long long hi =
      lo + (long long)((pn - 1) * d->stride_h + (d->r - 1) * d->dilation_h + 1);
  long long real_lo = lo > 0 ? lo : 0;
  long long real_hi = hi < (long long)d->h ? hi : (long long)d->h;
  size_t hr = real_hi > real_lo ? (size_t)(real_hi - real_lo) : 0;
  size_t floats = cg * hr * d->w;
  float *rows_in = malloc((floats ? floats : 1) * sizeof *rows_in);
  if (!rows_in)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "%s: out of host memory for %zu input rows", c->fn,
                    cg * hr);
  wgc_conv2d_args a = conv_piece(c, img, oc, 1);
  const float *in = cpu_ptr(a.input) + (size_t)real_lo * d->w;
  for (size_t ci = 0; ci < cg; ci++)
    memcpy(rows_in + ci * hr * d->w, in + ci * d->h * d->w,
           hr * d->w * sizeof *rows_in);
  a.input = (wgc_ref){.mem = rows_in};
  a.d.h = hr;
  a.d.pad_h = (size_t)(real_lo - lo);
  a.p = pn;
  a.output = cpu_ref_at(a.output, p0 * c->q);
  wgc_status st = cpu_conv2d(ctx, &a);
  free(rows_in);
  return st;
}

/* ---- attention -------------------------------------------------------------
 * Pieces are block_size[0] query rows of one (batch, head). A causal block
 * becomes a BOTTOM_RIGHT call on the keys its rows can see: query i sees
 * keys j < i + 1 + delta (delta 0 for TOP_LEFT, seq_kv - seq_q for
 * BOTTOM_RIGHT), so rows [r0, r1) with seq_kv' = r1 + delta see exactly
 * that; rows past the point where every key is visible run unmasked. */
static void plan_attention(const wgc_attention_args *a, cpu_split *s) {
  const wgc_attention_desc *d = &a->d;
  double row =
      2.0 * (double)(d->seq_kv + 1) * (double)(d->head_dim + d->head_dim_v);
  s->work = row * (double)(d->seq_q * d->batch * d->heads);
  s->block_size[0] = cpu_fit(s, row, d->seq_q);
  s->blocks[0] = cpu_div_up(d->seq_q, s->block_size[0]);
  s->pieces = d->batch * d->heads * s->blocks[0];
}

static wgc_status attention_rows(wgc_context *ctx, const wgc_attention_args *a,
                                 size_t bh, size_t r0, size_t r1,
                                 wgc_causal causal, size_t seq_kv) {
  const wgc_attention_desc *d = &a->d;
  size_t group = d->heads / d->heads_kv;
  size_t b = bh / d->heads, h = bh % d->heads, hk = h / group;
  wgc_attention_args p = *a;
  p.d.batch = p.d.heads = p.d.heads_kv = 1;
  p.d.seq_q = r1 - r0;
  p.d.seq_kv = seq_kv;
  p.d.causal = causal;
  p.q = cpu_ref_at(a->q, b * d->q_stride.batch + h * d->q_stride.head +
                             r0 * d->q_stride.seq);
  p.o = cpu_ref_at(a->o, b * d->o_stride.batch + h * d->o_stride.head +
                             r0 * d->o_stride.seq);
  p.k = cpu_ref_at(a->k, b * d->k_stride.batch + hk * d->k_stride.head);
  p.v = cpu_ref_at(a->v, b * d->v_stride.batch + hk * d->v_stride.head);
  p.has_mask = a->has_mask && seq_kv;
  if (p.has_mask)
    p.mask =
        cpu_ref_at(a->mask, b * d->mask_stride.batch + h * d->mask_stride.head +
                                r0 * d->mask_stride.seq);
  return cpu_attention(ctx, &p);
}

static wgc_status run_attention(wgc_context *ctx, const wgc_attention_args *a,
                                const cpu_split *s, size_t i) {
  const wgc_attention_desc *d = &a->d;
  size_t bh = i / s->blocks[0];
  size_t r0 = i % s->blocks[0] * s->block_size[0];
  size_t r1 = cpu_min(r0 + s->block_size[0], d->seq_q);
  if (d->causal == WGC_CAUSAL_NONE)
    return attention_rows(ctx, a, bh, r0, r1, WGC_CAUSAL_NONE, d->seq_kv);
  long long n = (long long)d->seq_kv;
  long long delta =
      d->causal == WGC_CAUSAL_TOP_LEFT ? 0 : n - (long long)d->seq_q;
  long long seen = (long long)r1 + delta; /* keys the last row sees */
  if (seen <= 0)
    return attention_rows(ctx, a, bh, r0, r1, WGC_CAUSAL_BOTTOM_RIGHT, 0);
  if (seen <= n)
    return attention_rows(ctx, a, bh, r0, r1, WGC_CAUSAL_BOTTOM_RIGHT,
                          (size_t)seen);
  size_t all = (size_t)(n - delta); /* the first row that sees every key */
  if (all > r0) {
    wgc_status st =
        attention_rows(ctx, a, bh, r0, all, WGC_CAUSAL_BOTTOM_RIGHT, d->seq_kv);
    if (st != WGC_OK)
      return st;
    r0 = all;
  }
  return attention_rows(ctx, a, bh, r0, r1, WGC_CAUSAL_NONE, d->seq_kv);
}

/* ---- reduce: runs of whole outer slices, or split_reduce.c ----------------
 */
static wgc_status plan_reduce(const wgc_reduce_args *r, cpu_split *s) {
  double slab = (double)(r->len ? r->len : 1) * (double)r->inner;
  s->work = slab * (double)r->outer;
  if (r->nd || (slab > s->piece_work && r->len > 1))
    return cpu_split_reduce_plan(r, s);
  s->group = cpu_fit(s, slab, r->outer);
  s->pieces = cpu_div_up(r->outer, s->group);
  return WGC_OK;
}

static wgc_status run_reduce(wgc_context *ctx, const wgc_reduce_args *r,
                             cpu_split *s, size_t i) {
  if (!s->group) {
    cpu_split_reduce_run(r, s, i);
    return WGC_OK;
  }
  wgc_reduce_args a = *r;
  size_t o0 = i * s->group;
  a.outer = cpu_min(s->group, r->outer - o0);
  a.input = cpu_ref_at(r->input, o0 * r->len * r->inner);
  a.output = cpu_ref_at(r->output, o0 * r->inner);
  return cpu_reduce(ctx, &a);
}

/* ---- element-wise ----------------------------------------------------------
 * Unary: element ranges. Binary: the output is cut at dimension
 * blocks[0], the outermost whose inner elements (block_size[0]) fit a
 * piece: each piece is one index of the dimensions before it and a run of
 * group indices along it, a smaller broadcast of the same strides. */
/* A libm call in wasm32 costs some 50 ns, as much as 100 flops of GEMM. */
static double unary_cost(wgc_unary_op op) {
  return op == WGC_UNARY_RELU || op == WGC_UNARY_ABS || op == WGC_UNARY_NEG
             ? 1.0
             : 100.0;
}

static void plan_unary(const wgc_unary_args *u, cpu_split *s) {
  s->work = unary_cost(u->op) * (double)u->n;
  s->group = cpu_fit(s, unary_cost(u->op), u->n);
  s->pieces = cpu_div_up(u->n, s->group);
}

static wgc_status run_unary(wgc_context *ctx, const wgc_unary_args *u,
                            const cpu_split *s, size_t i) {
  wgc_unary_args a = *u;
  size_t i0 = i * s->group;
  a.n = cpu_min(s->group, u->n - i0);
  a.input = cpu_ref_at(u->input, i0);
  a.output = cpu_ref_at(u->output, i0);
  return cpu_unary(ctx, &a);
}

static void plan_binary(const wgc_binary_args *b, cpu_split *s) {
  double cost = b->op == WGC_BINARY_POW ? 100.0 : 1.0;
  s->work = cost * (double)b->count;
  s->pieces = 1;
  if (b->rank == 0)
    return;
  size_t fit = cpu_fit(s, cost, b->count), inner = 1, d = b->rank - 1;
  while (d > 0 && inner * b->shape[d] <= fit)
    inner *= b->shape[d--];
  s->blocks[0] = d;
  s->block_size[0] = inner;
  s->group = cpu_fit(s, cost * (double)inner, b->shape[d]);
  s->blocks[1] = cpu_div_up(b->shape[d], s->group);
  s->pieces = b->count / (inner * b->shape[d]) * s->blocks[1];
}

static wgc_status run_binary(wgc_context *ctx, const wgc_binary_args *b,
                             const cpu_split *s, size_t i) {
  if (b->rank == 0)
    return cpu_binary(ctx, b);
  size_t d = s->blocks[0], inner = s->block_size[0];
  size_t j0 = i % s->blocks[1] * s->group, outer = i / s->blocks[1];
  size_t oa = j0 * b->stride_a[d], ob = j0 * b->stride_b[d];
  size_t out = (outer * b->shape[d] + j0) * inner;
  for (size_t x = d, rest = outer; x-- > 0;) {
    size_t idx = rest % b->shape[x];
    rest /= b->shape[x];
    oa += idx * b->stride_a[x];
    ob += idx * b->stride_b[x];
  }
  wgc_binary_args a = {.op = b->op, .rank = b->rank - d, .fn = b->fn};
  for (size_t x = d; x < b->rank; x++) {
    a.shape[x - d] = b->shape[x];
    a.stride_a[x - d] = b->stride_a[x];
    a.stride_b[x - d] = b->stride_b[x];
  }
  a.shape[0] = cpu_min(s->group, b->shape[d] - j0);
  a.count = a.shape[0] * inner;
  a.a = cpu_ref_at(b->a, oa);
  a.b = cpu_ref_at(b->b, ob);
  a.out = cpu_ref_at(b->out, out);
  return cpu_binary(ctx, &a);
}

/* ---- all kinds --------------------------------------------------------------
 */
wgc_status cpu_split_plan(const cpu_work *w, double piece_work, cpu_split *s) {
  *s = (cpu_split){.piece_work = piece_work, .pieces = 1};
  switch (w->kind) {
  case CPU_WORK_GEMM:
    plan_gemm(&w->u.gemm, s);
    break;
  case CPU_WORK_CONV2D:
    plan_conv(&w->u.conv, s);
    break;
  case CPU_WORK_ATTENTION:
    plan_attention(&w->u.attn, s);
    break;
  case CPU_WORK_REDUCE:
    return plan_reduce(&w->u.reduce, s);
  case CPU_WORK_UNARY:
    plan_unary(&w->u.unary, s);
    break;
  case CPU_WORK_BINARY:
    plan_binary(&w->u.binary, s);
    break;
  case CPU_WORK_COPY_STRIDED:
  case CPU_WORK_GATHER:
  case CPU_WORK_WHERE:
    cpu_split_movement_plan(w, s);
    break;
  case CPU_WORK_NORM:
    return cpu_split_norm_plan(&w->u.norm, s);
  case CPU_WORK_ROTARY: {
    const wgc_rotary_desc *d = &w->u.rotary.d;
    size_t rows = d->batch * d->seq * d->heads;
    s->work = 4.0 * (double)rows * (double)d->head_dim;
    s->group = cpu_fit(s, 4.0 * (double)d->head_dim, rows);
    s->pieces = cpu_div_up(rows, s->group);
    break;
  }
  case CPU_WORK_POOL2D: {
    const wgc_pool2d_args *a = &w->u.pool2d;
    size_t rows = a->d.n * a->d.c * a->p;
    double row = cpu_pool2d_row_work(a);
    s->work = (double)rows * row;
    s->group = cpu_fit(s, row, rows);
    s->pieces = cpu_div_up(rows, s->group);
    break;
  }
  case CPU_WORK_UPLOAD:
  case CPU_WORK_COPY:
  case CPU_WORK_DOWNLOAD:
    s->group = piece_work < 2.0 ? 4 : (size_t)(2.0 * piece_work) / 4 * 4;
    s->pieces = cpu_div_up(w->u.mem.bytes, s->group);
    s->work = (double)w->u.mem.bytes / 4.0;
    break;
  case CPU_WORK_SYNC:
  case CPU_WORK_FREE:
    break;
  }
  return WGC_OK;
}

/* Bytes [i*group, +len) of a memory step. */
static void run_bytes(const cpu_work *w, const cpu_split *s, size_t i) {
  size_t off = i * s->group, len = cpu_min(s->group, w->u.mem.bytes - off);
  if (w->kind == CPU_WORK_UPLOAD)
    memcpy((char *)cpu_ptr(w->u.mem.dst) + off,
           (const char *)w->u.mem.host_src + off, len);
  else if (w->kind == CPU_WORK_COPY)
    memcpy((char *)cpu_ptr(w->u.mem.dst) + off,
           (const char *)cpu_ptr(w->u.mem.src) + off, len);
  else
    memcpy((char *)w->u.mem.host_dst + off,
           (const char *)cpu_ptr(w->u.mem.src) + off, len);
}

wgc_status cpu_split_run(wgc_context *ctx, const cpu_work *w, cpu_split *s,
                         size_t i) {
  switch (w->kind) {
  case CPU_WORK_GEMM:
    return run_gemm(ctx, &w->u.gemm, s, i);
  case CPU_WORK_CONV2D:
    return run_conv(ctx, &w->u.conv, s, i);
  case CPU_WORK_ATTENTION:
    return run_attention(ctx, &w->u.attn, s, i);
  case CPU_WORK_REDUCE:
    return run_reduce(ctx, &w->u.reduce, s, i);
  case CPU_WORK_UNARY:
    return run_unary(ctx, &w->u.unary, s, i);
  case CPU_WORK_BINARY:
    return run_binary(ctx, &w->u.binary, s, i);
  case CPU_WORK_COPY_STRIDED:
  case CPU_WORK_GATHER:
  case CPU_WORK_WHERE:
    cpu_split_movement_run(w, s, i);
    break;
  case CPU_WORK_NORM:
    return cpu_split_norm_run(ctx, &w->u.norm, s, i);
  case CPU_WORK_ROTARY: {
    size_t rows = w->u.rotary.d.batch * w->u.rotary.d.seq * w->u.rotary.d.heads;
    cpu_rotary_rows(&w->u.rotary, i * s->group,
                    cpu_min(rows, (i + 1) * s->group));
    break;
  }
  case CPU_WORK_POOL2D: {
    const wgc_pool2d_args *a = &w->u.pool2d;
    size_t rows = a->d.n * a->d.c * a->p;
    cpu_pool2d_rows(a, i * s->group, cpu_min(rows, (i + 1) * s->group));
    break;
  }
  case CPU_WORK_UPLOAD:
  case CPU_WORK_COPY:
  case CPU_WORK_DOWNLOAD:
    run_bytes(w, s, i);
    break;
  case CPU_WORK_SYNC:
  case CPU_WORK_FREE:
    break;
  }
  return WGC_OK;
}

void cpu_split_release(cpu_split *s) {
  free(s->acc);
  s->acc = NULL;
}
