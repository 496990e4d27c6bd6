/* The case list. Sizes fit `make bench` in a few minutes on two quiet
 * cores: 2048^3 GEMM runs on lavapipe (the faster software adapter) and
 * the CPU only, the naive kernel skips the shapes that would take it
 * minutes, attention at sequence 2048 runs on lavapipe in its cheapest form
 * (d64, causal) only. WGC_BENCH_LARGE=1 lifts these limits;
 * WGC_BENCH_QUICK=1 keeps the first shape of each list (a smoke run). */
#include "shapes.h"

#include <stdio.h>
#include <string.h>

#include "bench.h"

where where_from(const char *adapter) {
  if (strcmp(adapter, "lavapipe") == 0)
    return ON_LAVAPIPE;
  if (strcmp(adapter, "swiftshader") == 0)
    return ON_SWIFTSHADER;
  return ON_CPU;
}

static const gemm_shape k_gemm[] = {
    {"256x256x256 NN", 256, 256, 256, 1, 0, 0, 1},
    {"512x512x512 NN", 512, 512, 512, 1, 0, 0, 1},
    {"1024x1024x1024 NN", 1024, 1024, 1024, 1, 0, 0, 1},
    {"512x512x512 NT", 512, 512, 512, 1, 0, 1, 1},
    {"512x512x512 TN", 512, 512, 512, 1, 1, 0, 1},
    {"512x512x512 TT", 512, 512, 512, 1, 1, 1, 1},
    {"4096x64x4096 NN", 4096, 64, 4096, 1, 0, 0, 0},
    {"64x4096x4096 NN", 64, 4096, 4096, 1, 0, 0, 0},
    {"batched 32 x 128x128x128", 128, 128, 128, 32, 0, 0, 1},
    {"2048x2048x2048 NN", 2048, 2048, 2048, 1, 0, 0, 0},
};

const gemm_shape *gemm_shapes(where w, size_t *count) {
  size_t n = sizeof k_gemm / sizeof k_gemm[0];
  /* 2048^3: lavapipe and the CPU baselines, or everywhere when asked. */
  if (w == ON_SWIFTSHADER && !bench_large())
    n--;
  *count = bench_quick() ? 1 : n;
  return k_gemm;
}

/* y = x W^T: decoding one token, and a small batch of them. */
static const gemm_shape k_weights[] = {
    {"1x4096x4096 (x W^T)", 1, 4096, 4096, 1, 0, 1, 0},
    {"8x4096x4096 (x W^T)", 8, 4096, 4096, 1, 0, 1, 0},
};

const gemm_shape *weight_shapes(where w, size_t *count) {
  (void)w;
  *count = bench_quick() ? 1 : sizeof k_weights / sizeof k_weights[0];
  return k_weights;
}

static const conv_shape k_conv[] = {
    {"64x56x56 -> 64, 3x3 pad 1", 64, 56, 56, 64, 3, 1, 1},
    {"128x28x28 -> 128, 3x3 stride 2", 128, 28, 28, 128, 3, 2, 1},
    {"64x56x56 -> 256, 1x1", 64, 56, 56, 256, 1, 1, 0},
};

const conv_shape *conv_shapes(size_t *count) {
  *count = bench_quick() ? 1 : sizeof k_conv / sizeof k_conv[0];
  return k_conv;
}

static attn_shape k_attn[32];

const attn_shape *attn_shapes(where w, size_t *count) {
  static const size_t seqs[] = {128, 512, 1024, 2048};
  if (bench_quick()) {
    k_attn[0] = (attn_shape){128, 64, 1, false};
    *count = 1;
    return k_attn;
  }
  static const size_t dims[] = {64, 128};
  size_t n = 0;
  for (size_t s = 0; s < 4; s++) {
    if (seqs[s] == 1024 && !bench_large())
      continue;
    if (seqs[s] > SEQ_LIMIT && !bench_large() && w != ON_LAVAPIPE)
      continue;
    for (size_t d = 0; d < 2; d++)
      for (int c = 0; c < 2; c++) {
        /* lavapipe runs 2048 in its cheapest form by default */
        if (seqs[s] > SEQ_LIMIT && !bench_large() && (dims[d] != 64 || !c))
          continue;
        k_attn[n++] = (attn_shape){seqs[s], dims[d], c, false};
      }
  }
  /* decoding: one query row a head against a cache of keys */
  k_attn[n++] = (attn_shape){512, 64, 0, true};
  k_attn[n++] = (attn_shape){512, 128, 0, true};
  k_attn[n++] = (attn_shape){2048, 64, 0, true};
  *count = n;
  return k_attn;
}

char *attn_name(const attn_shape *s, char *buf, size_t len) {
  if (s->decode)
    snprintf(buf, len, "8 heads 1 row x %zu keys d%zu", s->seq, s->dim);
  else
    snprintf(buf, len, "8 heads seq %zu d%zu%s", s->seq, s->dim,
             s->causal ? " causal" : "");
  return buf;
}

double gemm_flops(const gemm_shape *g) {
  return 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)g->batch;
}

double conv_flops(const conv_shape *c) {
  size_t p = (c->h + 2 * c->pad - c->r) / c->stride + 1;
  size_t q = (c->w + 2 * c->pad - c->r) / c->stride + 1;
  return 2.0 * (double)c->k * (double)(p * q) * (double)c->c *
         (double)(c->r * c->r);
}

/* Visible query-key pairs: causal rows see half the keys; QK^T and PV are
 * 2 flops per pair and dimension each. */
double attn_flops(const attn_shape *a) {
  double s = (double)a->seq;
  double pairs = a->causal ? s * (s + 1) / 2 : (double)attn_rows(a) * s;
  return 4.0 * ATTN_HEADS * pairs * (double)a->dim;
}
