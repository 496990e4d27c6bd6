/* The pieces the browser build cuts CPU work into (src/cpu/split.c) against
 * the same work run whole: with budgets small enough that every way of
 * cutting is taken (GEMM tiles and depth blocks, conv2d channel runs and
 * row windows with padding, attention query blocks under each causal mask,
 * reductions by outer blocks and by chunks of one long line, broadcasts cut
 * at each dimension, byte ranges), the pieces must give the whole call's
 * result: bit for bit where only the order of independent outputs changes,
 * within a rounding where partial sums are kept (GEMM depth, reductions). */
#include "harness.h"
#include "ops_ref.h"
#include "util.h"

#include "cpu/cpu.h"
#include "cpu/work.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const double BUDGETS[] = {1e12, 1e4, 2000, 300, 50, 1};
#define N_BUDGETS (sizeof BUDGETS / sizeof BUDGETS[0])

static wgc_ref ref(float *p) { return (wgc_ref){.mem = p}; }

/* Runs w in pieces of budget; returns how many. */
static size_t run_split(wgc_context *ctx, const cpu_work *w, double budget) {
  cpu_split s;
  CHECK_STATUS(cpu_split_plan(w, budget, &s), WGC_OK);
  for (size_t i = 0; i < s.pieces; i++)
    CHECK_STATUS(cpu_split_run(ctx, w, &s, i), WGC_OK);
  cpu_split_release(&s);
  return s.pieces;
}

/* out_whole and out_split start equal; w writes to *out_field. Runs w
 * whole into out_whole and split into out_split for every budget (the
 * output reset in between) and compares with tolerance tol (0: bits). */
static void compare_split(wgc_context *ctx, cpu_work *w, wgc_ref *out_field,
                          float *out_whole, float *out_split, size_t n,
                          double tol, size_t min_pieces) {
  float *initial = falloc(n);
  memcpy(initial, out_whole, n * sizeof *initial);
  *out_field = ref(out_whole);
  CHECK_STATUS(cpu_work_run(ctx, w), WGC_OK);
  size_t most = 0;
  for (size_t b = 0; b < N_BUDGETS; b++) {
    memcpy(out_split, initial, n * sizeof *initial);
    *out_field = ref(out_split);
    size_t pieces = run_split(ctx, w, BUDGETS[b]);
    most = pieces > most ? pieces : most;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
      float g = out_split[i], want = out_whole[i];
      bool ok = tol == 0.0 || isnan(want) || isinf(want)
                    ? same_bits(g, want)
                    : fabs((double)g - want) <= tol * (fabs(want) + 1.0);
      if (!ok && !bad++)
        first = i;
    }
    CHECK(!bad,
          "budget %g (%zu pieces): %zu of %zu differ, first [%zu] %.9g, "
          "whole %.9g",
          BUDGETS[b], pieces, bad, n, first, out_split[first],
          out_whole[first]);
  }
  CHECK(most >= min_pieces, "at most %zu pieces, want %zu or more", most,
        min_pieces);
  free(initial);
}

static float *random_floats(size_t n, unsigned seed) {
  float *x = falloc(n ? n : 1);
  fill_uniform(x, n, -1.0f, 1.0f, seed);
  return x;
}

TEST(cpu_split_gemm) {
  struct {
    size_t m, n, k, batch;
    bool ta, tb, share_b;
    float alpha, beta;
    int bias; /* 0 none, 1 per column, 2 per row */
    wgc_activation act;
  } cases[] = {
      {100, 70, 600, 1, false, false, false, 1.5f, 0.5f, 0, 0},
      {100, 70, 600, 1, true, true, false, -1.0f, 0.0f, 0, 0},
      {5, 300, 7, 3, false, true, false, 1.0f, 1.0f, 0, 0},
      {16, 20, 8, 40, true, false, true, 0.5f, 2.0f, 0, 0},
      {9, 8, 0, 2, false, false, false, 1.0f, 2.0f, 0, 0},
      {9, 8, 5, 2, false, false, false, 0.0f, -1.0f, 0, 0},
      /* the epilogue: tiles take their own part of the bias, and the
       * activation sees the whole sum (depth pieces) */
      {100, 70, 600, 1, false, false, false, 1.0f, 1.0f, 1,
       WGC_ACTIVATION_GELU},
      {100, 70, 600, 1, false, true, false, 1.0f, 0.0f, 2, WGC_ACTIVATION_RELU},
      {9, 8, 0, 2, false, false, false, 1.0f, 0.5f, 1, WGC_ACTIVATION_SILU},
      {16, 20, 8, 40, true, false, true, 0.5f, 2.0f, 2,
       WGC_ACTIVATION_GELU_TANH},
  };
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    if (!case_begin("split[cpu] gemm(m=%zu,n=%zu,k=%zu,batch=%zu,ta=%d,tb=%d,"
                    "bias=%d,act=%d)",
                    cases[t].m, cases[t].n, cases[t].k, cases[t].batch,
                    cases[t].ta, cases[t].tb, cases[t].bias, (int)cases[t].act))
      continue;
    size_t m = cases[t].m, n = cases[t].n, k = cases[t].k, nb = cases[t].batch;
    float *a = random_floats(m * k * nb, 1), *b = random_floats(k * n * nb, 2);
    float *c1 = random_floats(m * n * nb, 3), *c2 = falloc(m * n * nb);
    c1[0] = NAN; /* gone where beta is 0, everywhere in its row otherwise */
    cpu_work w = {.kind = CPU_WORK_GEMM};
    wgc_gemm_args *g = &w.u.gemm;
    *g = (wgc_gemm_args){.m = m,
                         .n = n,
                         .k = k,
                         .batch = nb,
                         .alpha = cases[t].alpha,
                         .beta = cases[t].beta,
                         .a = ref(a),
                         .b = ref(b),
                         .rs_a = cases[t].ta ? 1 : k,
                         .cs_a = cases[t].ta ? m : 1,
                         .rs_b = cases[t].tb ? 1 : n,
                         .cs_b = cases[t].tb ? k : 1,
                         .rs_c = n,
                         .cs_c = 1,
                         .batch_a = m * k,
                         .batch_b = cases[t].share_b ? 0 : k * n,
                         .batch_c = m * n};
    float *bias = random_floats(m > n ? m : n, 4);
    if (cases[t].bias) {
      g->has_bias = true;
      g->bias = ref(bias);
      g->bias_kind =
          cases[t].bias == 2 ? WGC_BIAS_PER_ROW : WGC_BIAS_PER_COLUMN;
    }
    g->act = cases[t].act;
    compare_split(ctx, &w, &g->c, c1, c2, m * n * nb, 1e-6 * (k + 1), 4);
    free(a), free(b), free(c1), free(c2), free(bias);
    case_end();
  }
}

TEST(cpu_split_conv2d) {
  wgc_conv2d_desc cases[] = {
      {.n = 2,
       .c = 6,
       .h = 13,
       .w = 11,
       .k = 8,
       .r = 3,
       .s = 2,
       .stride_h = 2,
       .stride_w = 1,
       .pad_h = 2,
       .pad_w = 1,
       .dilation_h = 2,
       .dilation_w = 1,
       .groups = 2},
      {.n = 1,
       .c = 3,
       .h = 9,
       .w = 7,
       .k = 5,
       .r = 3,
       .s = 3,
       .pad_h = 1,
       .pad_w = 1},
      {.n = 1, .c = 4, .h = 5, .w = 5, .k = 2, .r = 5, .s = 1, .pad_h = 4},
      {.n = 3,
       .c = 4,
       .h = 8,
       .w = 6,
       .k = 4,
       .r = 1,
       .s = 1,
       .stride_h = 3,
       .groups = 4},
  };
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    for (int bias = 0; bias < 2; bias++) {
      wgc_conv2d_desc d = cases[t];
      if (!case_begin("split[cpu] conv2d(n=%zu,c=%zu,h=%zu,w=%zu,k=%zu,r=%zu,"
                      "s=%zu,groups=%zu,bias=%d)",
                      d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.groups, bias))
        continue;
      size_t p, q;
      CHECK_STATUS(wgc_conv2d_output_size(&d, &p, &q), WGC_OK);
      d.stride_h += !d.stride_h, d.stride_w += !d.stride_w;
      d.dilation_h += !d.dilation_h, d.dilation_w += !d.dilation_w;
      d.groups += !d.groups;
      size_t nx = d.n * d.c * d.h * d.w, nf = d.k * d.c / d.groups * d.r * d.s;
      size_t ny = d.n * d.k * p * q;
      float *x = random_floats(nx, 4), *f = random_floats(nf, 5);
      float *bi = random_floats(d.k, 6), *y1 = falloc(ny), *y2 = falloc(ny);
      cpu_work w = {.kind = CPU_WORK_CONV2D};
      w.u.conv2d = (wgc_conv2d_args){.d = d,
                                     .p = p,
                                     .q = q,
                                     .input = ref(x),
                                     .filter = ref(f),
                                     .bias = ref(bias ? bi : 0),
                                     .has_bias = bias};
      compare_split(ctx, &w, &w.u.conv2d.output, y1, y2, ny, 0.0, p + 1);
      free(x), free(f), free(bi), free(y1), free(y2);
      case_end();
    }
  }
}

TEST(cpu_split_attention) {
  wgc_attention_desc cases[] = {
      {.batch = 2,
       .heads = 4,
       .heads_kv = 2,
       .seq_q = 13,
       .seq_kv = 9,
       .head_dim = 16,
       .scale = 0.25f,
       .causal = WGC_CAUSAL_TOP_LEFT},
      {.batch = 1,
       .heads = 2,
       .heads_kv = 1,
       .seq_q = 5,
       .seq_kv = 11,
       .head_dim = 8,
       .scale = 0.3f,
       .causal = WGC_CAUSAL_BOTTOM_RIGHT},
      {.batch = 1,
       .heads = 2,
       .heads_kv = 2,
       .seq_q = 11,
       .seq_kv = 5,
       .head_dim = 8,
       .scale = 0.3f,
       .causal = WGC_CAUSAL_BOTTOM_RIGHT},
      {.batch = 1,
       .heads = 3,
       .heads_kv = 3,
       .seq_q = 7,
       .seq_kv = 7,
       .head_dim = 4,
       .scale = 0.5f,
       .causal = WGC_CAUSAL_NONE},
      {.batch = 2,
       .heads = 2,
       .heads_kv = 1,
       .seq_q = 6,
       .seq_kv = 20,
       .head_dim = 4,
       .scale = 0.5f,
       .causal = WGC_CAUSAL_TOP_LEFT},
  };
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    wgc_attention_desc d = cases[t];
    /* the backend sees resolved strides (the front end's defaults) */
    d.head_dim_v = d.head_dim;
    d.q_stride = d.o_stride = (wgc_attention_strides){
        d.heads * d.seq_q * d.head_dim, d.seq_q * d.head_dim, d.head_dim};
    d.k_stride = d.v_stride = (wgc_attention_strides){
        d.heads_kv * d.seq_kv * d.head_dim, d.seq_kv * d.head_dim, d.head_dim};
    if (!case_begin("split[cpu] attention(batch=%zu,heads=%zu,heads_kv=%zu,"
                    "seq_q=%zu,seq_kv=%zu,causal=%d)",
                    d.batch, d.heads, d.heads_kv, d.seq_q, d.seq_kv,
                    (int)d.causal))
      continue;
    size_t nq = d.batch * d.heads * d.seq_q * d.head_dim;
    size_t nk = d.batch * d.heads_kv * d.seq_kv * d.head_dim;
    float *q = random_floats(nq, 7), *k = random_floats(nk, 8);
    float *v = random_floats(nk, 9), *o1 = falloc(nq), *o2 = falloc(nq);
    cpu_work w = {.kind = CPU_WORK_ATTENTION};
    w.u.attention =
        (wgc_attention_args){.d = d, .q = ref(q), .k = ref(k), .v = ref(v)};
    compare_split(ctx, &w, &w.u.attention.o, o1, o2, nq, 0.0,
                  d.batch * d.heads * d.seq_q);
    free(q), free(k), free(v), free(o1), free(o2);
    case_end();
  }
}

/* Strided [batch, seq, heads, dim] operands, a per-row mask with -inf
 * entries, softcap and a value head size of its own: the pieces address
 * each block of rows, and its mask rows, as the whole call does. */
TEST(cpu_split_attention_layout) {
  const wgc_causal causal[] = {WGC_CAUSAL_TOP_LEFT, WGC_CAUSAL_BOTTOM_RIGHT,
                               WGC_CAUSAL_NONE};
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  for (size_t t = 0; t < 3; t++) {
    size_t B = 2, H = 4, HK = 2, SQ = 13, SK = 17, D = 8, DV = 5;
    wgc_attention_desc d = {.batch = B,
                            .heads = H,
                            .heads_kv = HK,
                            .seq_q = SQ,
                            .seq_kv = SK,
                            .head_dim = D,
                            .head_dim_v = DV,
                            .scale = 0.4f,
                            .causal = causal[t],
                            .softcap = 1.5f,
                            .mask_stride = {H * SQ * SK, SQ * SK, SK},
                            .q_stride = {SQ * H * D, D, H * D},
                            .k_stride = {SK * HK * D, D, HK * D},
                            .v_stride = {SK * HK * DV, DV, HK * DV},
                            .o_stride = {SQ * H * DV, DV, H * DV}};
    if (!case_begin("split[cpu] attention layout(causal=%d)", (int)d.causal))
      continue;
    size_t nq = B * SQ * H * D, nk = B * SK * HK * D, nv = B * SK * HK * DV;
    size_t no = B * SQ * H * DV, nm = B * H * SQ * SK;
    float *q = random_floats(nq, 17), *k = random_floats(nk, 18);
    float *v = random_floats(nv, 19), *m = random_floats(nm, 20);
    for (size_t i = 3; i < nm; i += 7)
      m[i] = -INFINITY;
    float *o1 = falloc(no), *o2 = falloc(no);
    cpu_work w = {.kind = CPU_WORK_ATTENTION};
    w.u.attention = (wgc_attention_args){.d = d,
                                         .q = ref(q),
                                         .k = ref(k),
                                         .v = ref(v),
                                         .mask = ref(m),
                                         .has_mask = true};
    compare_split(ctx, &w, &w.u.attention.o, o1, o2, no, 0.0, B * H * SQ);
    free(q), free(k), free(v), free(m), free(o1), free(o2);
    case_end();
  }
}

TEST(cpu_split_reduce) {
  struct {
    size_t outer, len, inner;
  } shapes[] = {{3, 1000, 7}, {1, 4096, 1}, {6, 50, 1}, {2, 3, 3000}};
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++)
    for (int op = 0; op < WGC_REDUCE_OP_COUNT; op++) {
      size_t outer = shapes[t].outer, len = shapes[t].len,
             inner = shapes[t].inner;
      if (!case_begin("split[cpu] reduce(%s,outer=%zu,len=%zu,inner=%zu)",
                      ref_reduce_name((wgc_reduce_op)op), outer, len, inner))
        continue;
      float *x = random_floats(outer * len * inner, 10 + (unsigned)t);
      x[(len / 2) * inner] = NAN; /* reaches output 0 across chunks */
      float *y1 = falloc(outer * inner), *y2 = falloc(outer * inner);
      cpu_work w = {.kind = CPU_WORK_REDUCE};
      w.u.reduce = (wgc_reduce_args){.op = (wgc_reduce_op)op,
                                     .outer = outer,
                                     .len = len,
                                     .inner = inner,
                                     .input = ref(x)};
      compare_split(ctx, &w, &w.u.reduce.output, y1, y2, outer * inner,
                    op == WGC_REDUCE_SUM || op == WGC_REDUCE_MEAN ? 1e-6 : 0.0,
                    4);
      CHECK(isnan(y2[0]), "a NaN in output 0's line gave %g", y2[0]);
      free(x), free(y1), free(y2);
      case_end();
    }
}

TEST(cpu_split_reduce_axes_and_arg) {
  /* Several axes apart (nd > 0): runs of outputs, or one output's span in
   * chunks; and the arg reductions, whose index carries across chunks. */
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  const size_t dims[4] = {7, 300, 5, 40};
  const size_t n = 7 * 300 * 5 * 40, nout = 7 * 5;
  for (int op = 0; op < WGC_REDUCE_OP_COUNT; op++) {
    if (!case_begin("split[cpu] reduce_axes(%s,[7,300,5,40],axes={1,3})",
                    ref_reduce_name((wgc_reduce_op)op)))
      continue;
    float *x = random_floats(n, 30 + (unsigned)op);
    float *y1 = falloc(nout), *y2 = falloc(nout);
    cpu_work w = {.kind = CPU_WORK_REDUCE};
    w.u.reduce = (wgc_reduce_args){.op = (wgc_reduce_op)op,
                                   .outer = nout,
                                   .len = 300 * 40,
                                   .inner = 1,
                                   .nd = 4,
                                   .dims = {dims[0], dims[1], dims[2], dims[3]},
                                   .red = {false, true, false, true},
                                   .input = ref(x)};
    compare_split(ctx, &w, &w.u.reduce.output, y1, y2, nout, 0.0, 4);
    free(x), free(y1), free(y2);
    case_end();
  }
  for (int largest = 0; largest < 2; largest++) {
    if (!case_begin("split[cpu] %s(outer=3,len=5000,inner=2)",
                    largest ? "argmax" : "argmin"))
      continue;
    float *x = random_floats(3 * 5000 * 2, 40);
    x[4000 * 2 + 1] = NAN; /* output 1: index 4000 */
    float *y1 = falloc(6), *y2 = falloc(6);
    cpu_work w = {.kind = CPU_WORK_REDUCE};
    w.u.reduce = (wgc_reduce_args){.op = WGC_REDUCE_MAX,
                                   .arg = largest ? WGC_ARG_MAX : WGC_ARG_MIN,
                                   .outer = 3,
                                   .len = 5000,
                                   .inner = 2,
                                   .input = ref(x)};
    compare_split(ctx, &w, &w.u.reduce.output, y1, y2, 6, 0.0, 4);
    int32_t k;
    memcpy(&k, &y2[1], sizeof k);
    CHECK(k == 4000, "the NaN at index 4000 gave index %d", (int)k);
    free(x), free(y1), free(y2);
    case_end();
  }
}

TEST(cpu_split_elementwise) {
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  if (case_begin("split[cpu] unary(tanh,n=1000)")) {
    float *x = random_floats(1000, 20), *y1 = falloc(1000), *y2 = falloc(1000);
    cpu_work w = {.kind = CPU_WORK_UNARY};
    w.u.unary =
        (wgc_unary_args){.op = WGC_UNARY_TANH, .n = 1000, .input = ref(x)};
    compare_split(ctx, &w, &w.u.unary.output, y1, y2, 1000, 0.0, 100);
    free(x), free(y1), free(y2);
    case_end();
  }
  /* out [3,4,5] = a [3,4,5] op b [4,1] broadcast, and a scalar with a
   * scalar */
  for (int pow = 0; pow < 2; pow++) {
    if (!case_begin("split[cpu] binary(%s,[3,4,5],[4,1])", pow ? "pow" : "sub"))
      continue;
    float *a = random_floats(60, 21), *b = random_floats(4, 22);
    float *y1 = falloc(60), *y2 = falloc(60);
    cpu_work w = {.kind = CPU_WORK_BINARY};
    w.u.binary = (wgc_binary_args){.op = pow ? WGC_BINARY_POW : WGC_BINARY_SUB,
                                   .rank = 3,
                                   .count = 60,
                                   .shape = {3, 4, 5},
                                   .stride_a = {20, 5, 1},
                                   .stride_b = {0, 1, 0},
                                   .a = ref(a),
                                   .b = ref(b)};
    compare_split(ctx, &w, &w.u.binary.out, y1, y2, 60, 0.0, 24);
    free(a), free(b), free(y1), free(y2);
    case_end();
  }
  if (case_begin("split[cpu] binary(add,[],[])")) {
    float a = 1.5f, b = 2.25f, y1 = 0, y2 = 0;
    cpu_work w = {.kind = CPU_WORK_BINARY};
    w.u.binary = (wgc_binary_args){.op = WGC_BINARY_ADD,
                                   .rank = 0,
                                   .count = 1,
                                   .a = ref(&a),
                                   .b = ref(&b)};
    compare_split(ctx, &w, &w.u.binary.out, &y1, &y2, 1, 0.0, 1);
    CHECK(y2 == 3.75f, "1.5 + 2.25 gave %g", y2);
    case_end();
  }
}

TEST(cpu_split_memory) {
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  for (int kind = 0; kind < 3; kind++) {
    const char *names[] = {"upload", "copy", "download"};
    if (!case_begin("split[cpu] %s(4000 bytes)", names[kind]))
      continue;
    float *src = random_floats(1000, 30), *d1 = falloc(1000),
          *d2 = falloc(1000);
    cpu_work w = {.kind = kind == 0   ? CPU_WORK_UPLOAD
                          : kind == 1 ? CPU_WORK_COPY
                                      : CPU_WORK_DOWNLOAD,
                  .u.mem = {.src = ref(src), .host_src = src, .bytes = 4000}};
    /* a download's destination is host memory: compare it the same way */
    wgc_ref host = {0};
    wgc_ref *out = kind == 2 ? &host : &w.u.mem.dst;
    if (kind == 2) {
      memset(d2, 0, 4000);
      for (size_t b = 0; b < N_BUDGETS; b++) {
        w.u.mem.host_dst = d2;
        run_split(ctx, &w, BUDGETS[b]);
        CHECK(!memcmp(d2, src, 4000), "budget %g: wrong bytes", BUDGETS[b]);
        memset(d2, 0, 4000);
      }
    } else {
      compare_split(ctx, &w, out, d1, d2, 1000, 0.0, 100);
      CHECK(!memcmp(d2, src, 4000), "wrong bytes");
    }
    free(src), free(d1), free(d2);
    case_end();
  }
}

/* Runs of whole blocks: f32 to Q4_0 (34 blocks) and f16 to bf16 (an odd
 * count), bit for bit; the outputs are compared as floats over their
 * bytes. */
TEST(cpu_split_cast) {
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  static const wgc_dtype pairs[][2] = {{WGC_DTYPE_F32, WGC_DTYPE_Q4_0},
                                       {WGC_DTYPE_F16, WGC_DTYPE_BF16}};
  static const size_t counts[] = {32 * 34, 1001};
  for (int k = 0; k < 2; k++) {
    if (!case_begin("split[cpu] cast(%s->%s,n=%zu)",
                    wgc_dtype_name(pairs[k][0]), wgc_dtype_name(pairs[k][1]),
                    counts[k]))
      continue;
    size_t n = counts[k], words = (n * 4 + 3) / 4; /* as many as f32 needs */
    float *x = random_floats(words, 30 + k), *y1 = falloc(words),
          *y2 = falloc(words);
    cpu_work w = {.kind = CPU_WORK_CAST};
    w.u.cast = (wgc_cast_args){.n = n,
                               .src_type = pairs[k][0],
                               .dst_type = pairs[k][1],
                               .src = ref(x),
                               .fn = "wgc_cast"};
    compare_split(ctx, &w, &w.u.cast.dst, y1, y2, words, 0.0, 2);
    free(x), free(y1), free(y2);
    case_end();
  }
}
