/* wgc_attention with f16 and bf16 operands (the desc's q_type, k_type,
 * v_type, o_type, mask_type) on both backends against float64: the inputs
 * decoded exactly and fed to the formula of ops_ref.c, the f32 bound plus
 * half a unit in the last place of O's type. Every type for each operand
 * alone and mixed, GQA, an f16 KV cache read in place (allocated for more
 * keys than seq_kv, in both cache layouts), the causal masks, special
 * values (NaN, a masked key whose f16 V is inf, f16 overflow of O,
 * subnormal f16), every 2-byte operand 2 bytes into a word; the WebGPU
 * kernel forms for GPUs beside the adapter's, the split-KV path (64 KiB
 * bindings) and the unfused path (4 KiB bindings); the CPU backend's
 * split pieces; and the rejected types, which write nothing. */
#include "dtype_ref.h"
#include "ops_ref.h"
#include "tbuf.h"
#include "util.h"

#include "cpu/cpu.h"
#include "cpu/work.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const wgc_dtype TYPES[3] = {WGC_DTYPE_F32, WGC_DTYPE_F16,
                                   WGC_DTYPE_BF16};
enum { OP_Q, OP_K, OP_V, OP_MASK, OP_O, OP_COUNT };

/* The worst error over its bound (f32 bound + half an ulp) per O type. */
static double worst[3];

static int type_index(wgc_dtype t) {
  return t == WGC_DTYPE_F16 ? 1 : t == WGC_DTYPE_BF16 ? 2 : 0;
}

static wgc_dtype *type_of(wgc_attention_desc *d, int op) {
  wgc_dtype *t[OP_COUNT] = {&d->q_type, &d->k_type, &d->v_type, &d->mask_type,
                            &d->o_type};
  return t[op];
}

/* Strides all zero: contiguous over (n1 heads, n2 rows of row). */
static wgc_attention_strides resolve(wgc_attention_strides s, size_t n1,
                                     size_t n2, size_t row) {
  if (s.batch || s.head || s.seq)
    return s;
  return (wgc_attention_strides){n1 * n2 * row, n2 * row, row};
}

static size_t span(wgc_attention_strides s, size_t n0, size_t n1, size_t n2,
                   size_t row) {
  return (n0 - 1) * s.batch + (n1 - 1) * s.head + (n2 - 1) * s.seq + row;
}

static double max_abs(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i]) && fabs(x[i]) > m)
      m = fabs(x[i]);
  return m;
}

typedef enum special {
  SP_NONE,
  /* NaN in a Q row; key 3 masked by -inf for head 1 with +inf in its V
   * (kv head 0, also seen unmasked by head 0); V dim 1 of kv head 1 at
   * 70000 (inf in f16, O beyond f16's range); subnormal f16 in V dim 2 */
  SP_VALUES
} special;

/* One call of d (its strides and types as given; O contiguous) with a
 * full mask when has_mask, checked against float64. */
static void attn_case(wgc_context *ctx, wgc_attention_desc d, bool has_mask,
                      special sp, const char *what) {
  size_t B = d.batch, H = d.heads, HK = d.heads_kv ? d.heads_kv : d.heads;
  size_t SQ = d.seq_q, SK = d.seq_kv, D = d.head_dim;
  size_t DV = d.head_dim_v ? d.head_dim_v : D;
  wgc_attention_strides st[OP_COUNT] = {resolve(d.q_stride, H, SQ, D),
                                        resolve(d.k_stride, HK, SK, D),
                                        resolve(d.v_stride, HK, SK, DV),
                                        resolve(d.mask_stride, H, SQ, SK),
                                        {H * SQ * DV, SQ * DV, DV}};
  size_t n[OP_COUNT] = {
      span(st[OP_Q], B, H, SQ, D), span(st[OP_K], B, HK, SK, D),
      span(st[OP_V], B, HK, SK, DV),
      has_mask ? span(st[OP_MASK], B, H, SQ, SK) : 0, B * H * SQ * DV};
  float *x[OP_COUNT];
  for (int i = 0; i < OP_COUNT; i++)
    x[i] = falloc(n[i] ? n[i] : 1);
  fill_uniform(x[OP_Q], n[OP_Q], -1.5f, 1.5f, 11);
  fill_uniform(x[OP_K], n[OP_K], -1.5f, 1.5f, 12);
  fill_uniform(x[OP_V], n[OP_V], -1.0f, 1.0f, 13);
  fill_uniform(x[OP_MASK], n[OP_MASK], -2.0f, 2.0f, 14);
  if (sp == SP_VALUES) {
    x[OP_Q][st[OP_Q].seq + 1] = NAN;            /* batch 0, head 0, row 1 */
    for (size_t i = 0; has_mask && i < SQ; i++) /* batch 0, head 1 */
      x[OP_MASK][st[OP_MASK].head + i * st[OP_MASK].seq + 3] = -INFINITY;
    x[OP_V][3 * st[OP_V].seq] = INFINITY;
    for (size_t j = 0; j < SK; j++) {
      x[OP_V][(HK > 1 ? st[OP_V].head : 0) + j * st[OP_V].seq + 1] = 70000.0f;
      x[OP_V][j * st[OP_V].seq + 2] = 3.0e-6f;
    }
  }
  tbuf tb[OP_COUNT];
  bool ok = true;
  for (int i = 0; i < OP_COUNT; i++) {
    tb[i] = tbuf_make(ctx, *type_of(&d, i), i == OP_O ? NULL : x[i], n[i]);
    ok = ok && (tb[i].dev || !n[i]);
  }
  /* the reference reads the values each type holds */
  for (int i = 0; i < OP_O; i++)
    for (size_t e = 0; e < n[i]; e++)
      x[i][e] = (float)tbuf_val(&tb[i], e);
  size_t no = n[OP_O];
  double *want = dalloc(no), *tol = dalloc(no);
  wgc_attention_desc rd = d;
  rd.mask = has_mask ? (wgc_ptr)(uintptr_t)x[OP_MASK] : 0;
  rd.mask_stride = st[OP_MASK];
  ref_attention(&rd, x[OP_Q], x[OP_K], x[OP_V], want);
  double mv = max_abs(x[OP_V], n[OP_V]);
  double bound = 1e-5 * (double)D * max_abs(x[OP_Q], n[OP_Q]) *
                     max_abs(x[OP_K], n[OP_K]) * mv +
                 4e-6 * mv + 1e-6 * max_abs(x[OP_MASK], n[OP_MASK]) * mv + 1e-6;
  for (size_t i = 0; i < no; i++)
    tol[i] = bound;
  d.mask_stride = st[OP_MASK];
  if (has_mask)
    d.mask = tb[OP_MASK].dev + tb[OP_MASK].off;
  wgc_ptr at[OP_COUNT];
  for (int i = 0; i < OP_COUNT; i++)
    at[i] = tb[i].dev + tb[i].off;
  if (ok) {
    CHECK_OK(ctx,
             wgc_attention(ctx, &d, at[OP_Q], at[OP_K], at[OP_V], at[OP_O]));
    check_out_tol(ctx, &tb[OP_O], want, tol, what);
    uint8_t *got = xmalloc(tb[OP_O].bytes);
    if (dev_read(ctx, (float *)(void *)got, tb[OP_O].dev, tb[OP_O].bytes / 4)) {
      int ti = type_index(d.o_type);
      for (size_t i = 0; i < no; i++) {
        dref_val g = dref_load(got + tb[OP_O].off, d.o_type, i);
        double e = fabs(g.v - want[i]);
        if (!g.nan && isfinite(want[i]) && isfinite(g.v))
          worst[ti] =
              fmax(worst[ti], e / (bound + half_ulp(d.o_type, fabs(want[i]))));
      }
    }
    free(got);
  }
  for (int i = 0; i < OP_COUNT; i++) {
    tbuf_free(ctx, &tb[i]);
    free(x[i]);
  }
  free(want), free(tol);
}

/* The contexts a case runs on: the CPU backend, WebGPU with the adapter's
 * kernel forms, and WebGPU with the forms made for GPUs. */
static wgc_context *form_ctx(int f, wgc_context **gpu_ctx) {
  if (f < 2)
    return test_ctx(f == 0 ? WGC_BACKEND_CPU : WGC_BACKEND_WEBGPU);
  if (!*gpu_ctx)
    *gpu_ctx = new_ctx_kernels(WGC_BACKEND_WEBGPU, 0, KERNELS_GPU);
  return *gpu_ctx;
}
static const char *const FORMS[3] = {"cpu", "webgpu", "webgpu gpu-forms"};

static const char *tname(wgc_dtype t) { return wgc_dtype_name(t); }

static void types_label(const wgc_attention_desc *d, char *out, size_t cap) {
  snprintf(out, cap, "q %s k %s v %s mask %s o %s", tname(d->q_type),
           tname(d->k_type), tname(d->v_type), tname(d->mask_type),
           tname(d->o_type));
}

TEST(types_attention) {
  wgc_context *gpu_ctx = NULL;
  /* GQA, head_dim 24 / 20 (rows; block over key blocks) and 80 for
   * decoding (block with all keys, tiles); a typed O through states and
   * the combine */
  static const wgc_attention_desc shapes[] = {
      {.batch = 2,
       .heads = 4,
       .heads_kv = 2,
       .seq_q = 5,
       .seq_kv = 37,
       .head_dim = 24,
       .head_dim_v = 20,
       .scale = 0.2f},
      {.batch = 1,
       .heads = 2,
       .heads_kv = 1,
       .seq_q = 3,
       .seq_kv = 29,
       .head_dim = 80,
       .scale = 0.1f,
       .causal = WGC_CAUSAL_BOTTOM_RIGHT},
  };
  for (int f = 0; f < 3; f++)
    for (size_t si = 0; si < 2; si++)
      /* c 0..9: operand c/2 alone f16 or bf16; 10, 11: all f16, all bf16;
       * 12, 13: mixes, which between them take each type in each operand:
       * WebGPU runs those (each type mix compiles its kernels anew,
       * seconds on SwiftShader), the GPU forms one per shape. */
      for (int c = f == 2 ? 12 + (int)si
                   : f    ? 12
                          : 0;
           c < (f == 2 ? 13 + (int)si : 14); c++) {
        wgc_attention_desc d = shapes[si];
        if (c < 10)
          *type_of(&d, c / 2) = TYPES[1 + c % 2];
        else
          for (int op = 0; op < OP_COUNT; op++)
            *type_of(&d, op) = c >= 12 ? TYPES[1 + (op + c) % 2] : TYPES[c - 9];
        char types[96];
        types_label(&d, types, sizeof types);
        if (!case_begin("types attention[%s] %s head_dim %zu", FORMS[f], types,
                        d.head_dim))
          continue;
        wgc_context *ctx = form_ctx(f, &gpu_ctx);
        if (ctx)
          attn_case(ctx, d, true, SP_NONE, types);
        case_end();
      }
  if (gpu_ctx)
    wgc_destroy(gpu_ctx);
}

/* A decode step on an f16 KV cache allocated for 64 keys, read in place
 * with seq_kv 37 ([batch, heads, max_seq, dim] and [batch, max_seq, heads,
 * dim]); prefill rows with the causal masks; special values. */
TEST(types_attention_cache) {
  const wgc_dtype F32 = WGC_DTYPE_F32, F16 = WGC_DTYPE_F16,
                  BF16 = WGC_DTYPE_BF16;
  enum { B = 2, HK = 2, MAX = 64, D = 16 };
  wgc_context *gpu_ctx = NULL;
  for (int f = 0; f < 3; f++)
    for (int c = f == 2 ? 4 : 0; c < 8; c += f == 2 ? 3 : 1) {
      wgc_attention_desc d = {.batch = B,
                              .heads = 4,
                              .heads_kv = HK,
                              .seq_q = 1,
                              .seq_kv = 37,
                              .head_dim = D,
                              .scale = 0.25f,
                              .k_type = F16,
                              .v_type = F16,
                              .o_type = c % 3 == 0   ? F32
                                        : c % 3 == 1 ? F16
                                                     : BF16};
      bool seq_major = c % 2, mask = false;
      special sp = SP_NONE;
      d.k_stride = d.v_stride =
          seq_major ? (wgc_attention_strides){MAX * HK * D, D, HK * D}
                    : (wgc_attention_strides){HK * MAX * D, MAX * D, D};
      const char *form =
          seq_major ? "cache [b, seq, h, d]" : "cache [b, h, seq, d]";
      if (c >= 4) { /* prefill: 9 rows, causal, an f16 mask */
        d.seq_q = 9;
        d.causal = c % 2 ? WGC_CAUSAL_TOP_LEFT : WGC_CAUSAL_BOTTOM_RIGHT;
        d.mask_type = F16;
        d.q_type = BF16;
        mask = true;
        form = c % 2 ? "prefill top-left, f16 mask"
                     : "prefill bottom-right, f16 mask";
      }
      if (c >= 6) {
        sp = SP_VALUES;
        form =
            c % 2 ? "special values, top-left" : "special values, bottom-right";
      }
      char types[96];
      types_label(&d, types, sizeof types);
      if (!case_begin("types attention[%s] %s %s", FORMS[f], form, types))
        continue;
      wgc_context *ctx = form_ctx(f, &gpu_ctx);
      if (ctx)
        attn_case(ctx, d, mask, sp, form);
      case_end();
    }
  if (gpu_ctx)
    wgc_destroy(gpu_ctx);
}

/* The WebGPU split-KV path (64 KiB bindings: key blocks and the combine)
 * and the unfused path (4 KiB bindings, rows of 1100 elements; PV in a
 * window per key, so a 2-byte O's sums carry over launches). */
TEST(types_attention_paths) {
  const wgc_dtype F32 = WGC_DTYPE_F32, F16 = WGC_DTYPE_F16,
                  BF16 = WGC_DTYPE_BF16;
  static const struct {
    size_t binding, seq_q, seq_kv, hd;
    const char *path;
  } paths[] = {{65536, 3, 5000, 16, "split-KV"},
               {65536, 300, 1100, 16, "split-KV rows"},
               {4096, 3, 7, 1100, "unfused"}};
  for (size_t pi = 0; pi < 3; pi++)
    for (int kf = 0; kf < (paths[pi].hd > 64 ? 1 : 2); kf++)
      for (int c = pi == 1 ? 1 : 0; c < (pi == 1 ? 2 : 3); c++) {
        wgc_attention_desc d = {.batch = 1,
                                .heads = 2,
                                .heads_kv = 1,
                                .seq_q = paths[pi].seq_q,
                                .seq_kv = paths[pi].seq_kv,
                                .head_dim = paths[pi].hd,
                                .scale = 1.0f / sqrtf((float)paths[pi].hd),
                                .causal = c == 1 ? WGC_CAUSAL_BOTTOM_RIGHT
                                                 : WGC_CAUSAL_NONE,
                                .q_type = c == 2 ? BF16 : F32,
                                .k_type = F16,
                                .v_type = c == 2 ? BF16 : F16,
                                .mask_type = F16,
                                .o_type = TYPES[c]};
        char types[96];
        types_label(&d, types, sizeof types);
        if (!case_begin("types attention[webgpu %s %s, %zu B bindings] %s",
                        paths[pi].path, kf ? "gpu-forms" : "adapter forms",
                        paths[pi].binding, types))
          continue;
        wgc_context *ctx =
            new_ctx_kernels(WGC_BACKEND_WEBGPU, paths[pi].binding,
                            kf ? KERNELS_GPU : KERNELS_ENV);
        if (ctx) {
          attn_case(ctx, d, true, c == 1 ? SP_VALUES : SP_NONE, types);
          wgc_destroy(ctx);
        }
        case_end();
      }
}

/* 2-byte operands from a word's start: an O whose rows all start words
 * (even head_dim_v, strides) is stored by whole words by the combine, after
 * states over all keys (one launch) or over key blocks (split-KV, 64 KiB
 * bindings); an odd head_dim_v keeps the per-element stores. */
TEST(types_attention_word_start) {
  const wgc_dtype F16 = WGC_DTYPE_F16, BF16 = WGC_DTYPE_BF16;
  static const struct {
    size_t binding, seq_q, seq_kv, hd, hdv;
  } cases[] = {{0, 5, 37, 24, 20},
               {0, 3, 29, 80, 80},
               {0, 4, 33, 16, 7},
               {65536, 3, 5000, 16, 16},
               {65536, 300, 1100, 16, 16}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int c = 0; c < 2; c++) {
      if (cases[i].binding && c != (int)(i % 2)) /* long: one mix each */
        continue;
      wgc_attention_desc d = {.batch = 2,
                              .heads = 2,
                              .heads_kv = 1,
                              .seq_q = cases[i].seq_q,
                              .seq_kv = cases[i].seq_kv,
                              .head_dim = cases[i].hd,
                              .head_dim_v = cases[i].hdv,
                              .scale = 1.0f / sqrtf((float)cases[i].hd),
                              .causal =
                                  c ? WGC_CAUSAL_BOTTOM_RIGHT : WGC_CAUSAL_NONE,
                              .q_type = c ? BF16 : F16,
                              .k_type = F16,
                              .v_type = c ? BF16 : F16,
                              .o_type = c ? BF16 : F16};
      if (cases[i].binding)
        d.batch = 1;
      char types[96];
      types_label(&d, types, sizeof types);
      if (!case_begin("types attention[webgpu from a word's start] %zux%zu "
                      "d %zu/%zu %s",
                      d.seq_q, d.seq_kv, d.head_dim, d.head_dim_v, types))
        continue;
      wgc_context *ctx = new_ctx(WGC_BACKEND_WEBGPU, cases[i].binding);
      size_t was = tbuf_half_offset(8);
      if (ctx)
        attn_case(ctx, d, true, c ? SP_VALUES : SP_NONE, types);
      tbuf_half_offset(was);
      wgc_destroy(ctx);
      case_end();
    }
}

/* The CPU backend's pieces of a typed call (the wasm32 queue) compute
 * exactly what the whole call does: f16 Q, K, V and mask 2 bytes into a
 * word, f16 O, under each causal mask. */
TEST(types_attention_cpu_split) {
  const wgc_dtype F16 = WGC_DTYPE_F16;
  wgc_context *ctx = test_ctx(WGC_BACKEND_CPU);
  for (int c = 0; c < 3; c++) {
    if (!case_begin("types attention_split[cpu] causal %d", c))
      continue;
    enum { H = 2, SQ = 40, SK = 50, D = 16 };
    wgc_attention_desc d = {.batch = 1,
                            .heads = H,
                            .heads_kv = 1,
                            .seq_q = SQ,
                            .seq_kv = SK,
                            .head_dim = D,
                            .head_dim_v = D,
                            .scale = 0.25f,
                            .causal = (wgc_causal)c,
                            .q_stride = {H * SQ * D, SQ * D, D},
                            .k_stride = {SK * D, SK * D, D},
                            .v_stride = {SK * D, SK * D, D},
                            .o_stride = {H * SQ * D, SQ * D, D},
                            .mask_stride = {0, SK, 0},
                            .q_type = F16,
                            .k_type = F16,
                            .v_type = F16,
                            .o_type = F16,
                            .mask_type = F16};
    size_t nq = H * SQ * D, nk = SK * D, nm = H * SK;
    float *x = falloc(nq + 2 * nk + nm);
    fill_uniform(x, nq + 2 * nk + nm, -2, 2, 23);
    uint16_t *q = xmalloc(2 * nq + 2), *k = xmalloc(2 * nk + 2),
             *v = xmalloc(2 * nk + 2), *m = xmalloc(2 * nm + 2);
    uint16_t *whole = xmalloc(2 * nq + 2), *part = xmalloc(2 * nq + 2);
    CHECK_STATUS(wgc_quantize(x, q + 1, F16, nq), WGC_OK);
    CHECK_STATUS(wgc_quantize(x + nq, k + 1, F16, nk), WGC_OK);
    CHECK_STATUS(wgc_quantize(x + nq + nk, v + 1, F16, nk), WGC_OK);
    CHECK_STATUS(wgc_quantize(x + nq + 2 * nk, m + 1, F16, nm), WGC_OK);
    cpu_work w = {.kind = CPU_WORK_ATTENTION};
    w.u.attention = (wgc_attention_args){.d = d,
                                         .q = {.mem = q, .offset = 2},
                                         .k = {.mem = k, .offset = 2},
                                         .v = {.mem = v, .offset = 2},
                                         .mask = {.mem = m, .offset = 2},
                                         .o = {.mem = whole, .offset = 2},
                                         .has_mask = true,
                                         .fn = "test"};
    CHECK_STATUS(cpu_work_run(ctx, &w), WGC_OK);
    size_t most = check_pieces(ctx, &w, &w.u.attention.o, part, whole, nq);
    CHECK(most >= 2, "at most %zu pieces", most);
    free(x), free(q), free(k), free(v), free(m), free(whole), free(part);
    case_end();
  }
}

TEST(types_attention_rejected) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx, "types attention rejected"))
      continue;
    float init[256];
    for (int i = 0; i < 256; i++)
      init[i] = sentinel();
    wgc_ptr q = dev_from(ctx, init, 256), kv = dev_from(ctx, init, 256),
            o = dev_from(ctx, init, 256);
    wgc_attention_desc d = {.batch = 1,
                            .heads = 2,
                            .seq_q = 4,
                            .seq_kv = 4,
                            .head_dim = 8,
                            .scale = 0.5f,
                            .q_type = WGC_DTYPE_I32};
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, q, kv, kv, o), "wgc_attention",
                   "d->q_type");
    CHECK(strstr(wgc_last_error(ctx), "i32"), "names the type: %s",
          wgc_last_error(ctx));
    d.q_type = WGC_DTYPE_F16;
    d.k_type = WGC_DTYPE_Q8_0;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, q, kv, kv, o), "wgc_attention",
                   "d->k_type");
    CHECK(strstr(wgc_last_error(ctx), "q8_0"), "names the type: %s",
          wgc_last_error(ctx));
    d.k_type = WGC_DTYPE_BF16;
    d.v_type = WGC_DTYPE_Q4_0;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, q, kv, kv, o), "wgc_attention",
                   "d->v_type");
    d.v_type = WGC_DTYPE_F16;
    d.o_type = (wgc_dtype)17;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, q, kv, kv, o), "wgc_attention",
                   "d->o_type");
    d.o_type = WGC_DTYPE_F16;
    d.mask_type = WGC_DTYPE_I32;
    d.mask = kv;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, q, kv, kv, o), "wgc_attention",
                   "d->mask_type");
    d.mask_type = WGC_DTYPE_BF16;
    /* misaligned 2-byte operands name the operand and its type */
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, q, kv, kv, o + 1),
                   "wgc_attention", "o");
    CHECK(strstr(wgc_last_error(ctx), "f16"), "names the type: %s",
          wgc_last_error(ctx));
    d.mask = kv + 3;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, q, kv, kv, o), "wgc_attention",
                   "mask");
    CHECK(strstr(wgc_last_error(ctx), "bf16"), "names the type: %s",
          wgc_last_error(ctx));
    /* the spans count 2-byte elements: 64 of O end 2 bytes past the end */
    d.mask = 0;
    CHECK_REJECTED(ctx, wgc_attention(ctx, &d, q, kv, kv, o + 898),
                   "wgc_attention", "o");
    CHECK_DEVICE_EQUALS(ctx, o, init, 256, "o");
    CHECK_DEVICE_EQUALS(ctx, q, init, 256, "q");
    CHECK_DEVICE_EQUALS(ctx, kv, init, 256, "kv");
    dev_free(ctx, q);
    dev_free(ctx, kv);
    dev_free(ctx, o);
    case_end();
  }
}

/* Registered last (constructors run in file order): the worst error over
 * its bound per O type, of the cases above that ran. */
TEST(types_attention_worst) {
  if (!case_begin("types attention worst error / bound: "))
    return;
  case_note("f32 %.3g, f16 %.3g, bf16 %.3g", worst[0], worst[1], worst[2]);
  case_end();
}
