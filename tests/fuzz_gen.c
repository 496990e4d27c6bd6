/* The fuzzer's random numbers, input values, step parameters and the
 * one-line form of a step. */
#include "fuzz.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers ----------------------------------------------------- */

fz_rng fz_rng_make(uint64_t seed) {
  /* The state starts at a hash of the seed: nearby seeds must not give
   * shifted copies of one stream. */
  fz_rng h = {seed};
  fz_rng r = {fz_next(&h)};
  r.s ^= fz_next(&h) << 1;
  return r;
}

uint64_t fz_next(fz_rng *r) {
  /* splitmix64: any seed, 0 included, gives a full-period stream. */
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

size_t fz_below(fz_rng *r, size_t n) {
  return n ? (size_t)(fz_next(r) % n) : 0;
}

double fz_unit(fz_rng *r) {
  return (double)(fz_next(r) >> 11) / 9007199254740992.0;
}

bool fz_chance(fz_rng *r, double p) { return fz_unit(r) < p; }

/* ---- values ------------------------------------------------------------- */

bool fz_is_subnormal(float x) { return x != 0 && fabsf(x) < FLT_MIN; }

float fz_flush(float x) { return fz_is_subnormal(x) ? copysignf(0.0f, x) : x; }

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float special(fz_rng *r, unsigned spk) {
  static const float table[6][2] = {{0.0f, -0.0f},         {1e-40f, -3e-39f},
                                    {INFINITY, -INFINITY}, {NAN, -NAN},
                                    {3e38f, -3e38f},       {FLT_MIN, -FLT_MIN}};
  int kinds[6], n = 0;
  for (int i = 0; i < 6; i++)
    if (spk & (1u << i))
      kinds[n++] = i;
  if (!n)
    return 0.0f;
  int k = kinds[fz_below(r, (size_t)n)];
  float v = table[k][fz_below(r, 2)];
  if (k == 1 && fz_chance(r, 0.5)) /* any subnormal */
    v = from_bits((uint32_t)(1 + fz_below(r, 0x7FFFFF)) |
                  (fz_chance(r, 0.5) ? 0x80000000u : 0));
  return v;
}

static float log_uniform(fz_rng *r, double lo, double hi) {
  double e = log(lo) + (log(hi) - log(lo)) * fz_unit(r);
  return (float)exp(e);
}

static float value(fz_rng *r, int dist, double mag) {
  double sign = fz_chance(r, 0.5) ? -1.0 : 1.0;
  switch (dist) {
  case FZ_DIST_WIDE:
    return (float)(sign * log_uniform(r, 1e-3, 1e3) * mag);
  case FZ_DIST_EXP:
    return (float)(200.0 * fz_unit(r) - 100.0);
  case FZ_DIST_POS:
    return fz_chance(r, 0.1) ? -log_uniform(r, 1e-3, 10)
                             : log_uniform(r, 1e-6, 1e6);
  case FZ_DIST_BASE: {
    size_t c = fz_below(r, 4);
    if (c == 0)
      return (float)(1.0 + sign * log_uniform(r, 1e-6, 1e-2));
    if (c == 1)
      return (float)(sign * (double)fz_below(r, 6));
    return (float)(sign * 4.0 * fz_unit(r));
  }
  case FZ_DIST_EXPON: {
    size_t c = fz_below(r, 5);
    if (c == 0)
      return (float)(sign * (double)fz_below(r, 8));
    if (c == 1)
      return (float)(sign * (0.5 + (double)fz_below(r, 4)));
    if (c == 2)
      return (float)(sign * (double)(1000 + fz_below(r, 4001)));
    return (float)(sign * 6.0 * fz_unit(r));
  }
  case FZ_DIST_BITS:
    /* Half NaN with a random payload: reading a guard shows. */
    if (fz_chance(r, 0.5))
      return from_bits(0x7FC00000u | (uint32_t)fz_below(r, 0x400000) |
                       (fz_chance(r, 0.5) ? 0x80000000u : 0));
    return from_bits((uint32_t)fz_next(r));
  case FZ_DIST_POSUNIT:
    return (float)(fz_unit(r) * mag);
  case FZ_DIST_OFFSET:
    return (float)(mag * (1.0 + 1e-3 * (2.0 * fz_unit(r) - 1.0)));
  default:
    return (float)((2.0 * fz_unit(r) - 1.0) * mag);
  }
}

void fz_fill(fz_rng *r, float *x, size_t n, int dist, double mag, int sp,
             unsigned spk) {
  for (size_t i = 0; i < n; i++)
    x[i] = sp > 0 && (int)fz_below(r, 1000) < sp ? special(r, spk)
                                                 : value(r, dist, mag);
}

/* ---- step parameters ---------------------------------------------------- */

static const size_t primes[] = {3,  5,  7,  11,  13,  17, 31,
                                37, 61, 67, 127, 131, 257};

/* A dimension: 0, 1, small, prime or up to max. */
static size_t dim(fz_rng *r, size_t max, double p0) {
  double u = fz_unit(r);
  if (u < p0)
    return 0;
  if (u < 0.2)
    return 1;
  if (u < 0.5)
    return 2 + fz_below(r, max < 8 ? max - 1 : 7);
  if (u < 0.8) {
    size_t c = 0;
    while (c < sizeof primes / sizeof *primes && primes[c] <= max)
      c++;
    return c ? primes[fz_below(r, c)] : 1;
  }
  return 1 + fz_below(r, max);
}

/* Element counts for element-wise steps, sizes that split included. */
static size_t count(fz_rng *r) {
  double u = fz_unit(r);
  if (u < 0.03)
    return 0;
  if (u < 0.12)
    return 1;
  if (u < 0.45)
    return 2 + fz_below(r, 70);
  if (u < 0.65)
    return primes[fz_below(r, sizeof primes / sizeof *primes)];
  if (u < 0.92)
    return 1000 + fz_below(r, 20000);
  if (u < 0.985)
    return 70000 + fz_below(r, 250000);
  /* Beyond 65535 workgroups of 64. */
  return 65535 * 64 + 1 + fz_below(r, 100000);
}

static float pick_alpha(fz_rng *r) {
  double u = fz_unit(r);
  if (u < 0.4)
    return 1.0f;
  if (u < 0.5)
    return -1.0f;
  if (u < 0.6)
    return 0.0f;
  if (u < 0.63)
    return NAN;
  if (u < 0.7)
    return 0.5f;
  return (float)(4.0 * fz_unit(r) - 2.0);
}

static float pick_beta(fz_rng *r) {
  double u = fz_unit(r);
  if (u < 0.4)
    return 0.0f;
  if (u < 0.6)
    return 1.0f;
  if (u < 0.65)
    return NAN;
  if (u < 0.7)
    return -0.0f;
  return (float)(4.0 * fz_unit(r) - 2.0);
}

static size_t gcd(size_t a, size_t b) {
  while (b) {
    size_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* A random divisor of v (v > 0). */
static size_t divisor(fz_rng *r, size_t v) {
  size_t ds[64], n = 0;
  for (size_t d = 1; d <= v && n < 64; d++)
    if (v % d == 0)
      ds[n++] = d;
  return ds[fz_below(r, n)];
}

static void gen_gemm(fz_rng *r, fz_step *s) {
  s->op = (int)fz_below(r, 2);
  s->ta = (int)fz_below(r, 3);
  s->tb = (int)fz_below(r, 3);
  s->batched = fz_chance(r, 0.4);
  double u = fz_unit(r);
  if (u < 0.05) { /* long rows, many workgroups */
    s->m = 1 + fz_below(r, 2);
    s->n = 20000 + fz_below(r, 120000);
    s->k = 1 + fz_below(r, 3);
  } else if (u < 0.1) { /* long reductions */
    s->m = 1 + fz_below(r, 4);
    s->n = 1 + fz_below(r, 4);
    s->k = 2000 + fz_below(r, 6000);
  } else {
    s->m = dim(r, 70, 0.04);
    s->n = dim(r, 70, 0.04);
    s->k = dim(r, 70, 0.06);
  }
  if (s->batched) {
    s->batch = dim(r, 6, 0.06);
    s->sa0 = fz_chance(r, 0.2);
    s->sb0 = fz_chance(r, 0.2);
    s->sa = fz_chance(r, 0.3) ? fz_below(r, 4) : 0;
    s->sb = fz_chance(r, 0.3) ? fz_below(r, 4) : 0;
    s->sc = fz_chance(r, 0.3) ? fz_below(r, 4) : 0;
    while (s->batch > 1 && s->m * s->n * s->k * s->batch > 400000)
      s->batch /= 2;
  }
  s->lda = fz_chance(r, 0.3) ? 1 + fz_below(r, 5) : 0;
  s->ldb = fz_chance(r, 0.3) ? 1 + fz_below(r, 5) : 0;
  s->ldc = fz_chance(r, 0.3) ? 1 + fz_below(r, 5) : 0;
  s->alpha = pick_alpha(r);
  s->beta = pick_beta(r);
  s->dist = fz_chance(r, 0.7) ? FZ_DIST_UNIT : FZ_DIST_WIDE;
}

/* The window of a conv2d or pool2d step over an h x w input (either may
 * be 0): sizes, strides, pads and dilations (0: the default 1), then the
 * window shrunk until it fits the padded input. */
typedef struct window2d {
  size_t h, w, r, s, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
} window2d;

/* Copies g into a conv2d or pool2d desc, whose fields have the same names. */
#define SET_WINDOW(d, g)                                                       \
  ((d)->h = (g).h, (d)->w = (g).w, (d)->r = (g).r, (d)->s = (g).s,             \
   (d)->stride_h = (g).stride_h, (d)->stride_w = (g).stride_w,                 \
   (d)->pad_h = (g).pad_h, (d)->pad_w = (g).pad_w,                             \
   (d)->dilation_h = (g).dilation_h, (d)->dilation_w = (g).dilation_w)

/* Shrinks the window until it fits the padded input. */
static void fit_window(window2d *g) {
  size_t dh = g->dilation_h ? g->dilation_h : 1;
  size_t dw = g->dilation_w ? g->dilation_w : 1;
  while (g->r > 1 && g->h + 2 * g->pad_h < dh * (g->r - 1) + 1)
    g->r--;
  while (g->s > 1 && g->w + 2 * g->pad_w < dw * (g->s - 1) + 1)
    g->s--;
}

/* Padding, strides and dilation near wgc.h's 2^31 limit on conv2d's
 * coordinates (on either side of it): a few outputs, most windows wholly
 * in the padding. */
static void gen_window_near_limit(fz_rng *r, window2d *g) {
  size_t *pad[2] = {&g->pad_h, &g->pad_w},
         *st[2] = {&g->stride_h, &g->stride_w};
  size_t *dil[2] = {&g->dilation_h, &g->dilation_w}, *len[2] = {&g->h, &g->w};
  for (int a = 0; a < 2; a++) {
    if (a == 1 && fz_chance(r, 0.5))
      break;
    size_t big = ((size_t)1 << (28 + fz_below(r, 3))) - fz_below(r, 2);
    *len[a] = 1 + fz_below(r, 4);
    *pad[a] = fz_chance(r, 0.8) ? big : fz_below(r, 2);
    *st[a] = *pad[a] > 1 ? big / (1 + fz_below(r, 2)) : fz_below(r, 4);
    *dil[a] = fz_chance(r, 0.3) ? 2 * big - fz_below(r, 3) : fz_below(r, 2);
  }
  fit_window(g);
}

/* may_exceed_budget: sometimes (true returned) a single-plane input and a
 * window over all of it, beyond the loop budget of CPU adapters. */
static bool gen_window(fz_rng *r, window2d *g, bool may_exceed_budget) {
  g->r = 1 + fz_below(r, 5);
  g->s = 1 + fz_below(r, 5);
  g->stride_h = fz_below(r, 4);
  g->stride_w = fz_below(r, 4);
  g->pad_h = fz_below(r, 3);
  g->pad_w = fz_below(r, 3);
  g->dilation_h = fz_below(r, 4);
  g->dilation_w = fz_below(r, 4);
  /* Steps that cannot exceed the budget draw no chance for it. */
  bool big = may_exceed_budget && fz_chance(r, 0.05);
  if (big) { /* 150^2 taps or more; the budget is 32768 */
    g->h = g->r = 150 + fz_below(r, 60);
    g->w = g->s = 150 + fz_below(r, 60);
    g->pad_h = g->pad_w = 0;
    g->dilation_h = g->dilation_w = 0;
  }
  /* an empty input keeps a padded row or column to hold the window */
  if (g->h + 2 * g->pad_h == 0)
    g->pad_h = 1;
  if (g->w + 2 * g->pad_w == 0)
    g->pad_w = 1;
  fit_window(g);
  return big;
}

static void gen_ew_types(fz_rng *r, fz_step *s, bool with_b);

static void gen_conv(fz_rng *r, fz_step *s) {
  wgc_conv2d_desc *d = &s->cv;
  d->n = fz_chance(r, 0.05) ? 0 : 1 + fz_below(r, 3);
  d->c = fz_chance(r, 0.08) ? 0 : 1 + fz_below(r, fz_chance(r, 0.2) ? 16 : 8);
  d->h = 1 + fz_below(r, 24);
  d->w = 1 + fz_below(r, 24);
  /* sometimes past 16 channels: the register kernel of 16-channel blocks */
  d->k = 1 + fz_below(r, fz_chance(r, 0.25) ? 40 : 8);
  window2d g = {.h = d->h, .w = d->w};
  gen_window(r, &g, false);
  if (fz_chance(r, 0.1))
    gen_window_near_limit(r, &g);
  SET_WINDOW(d, g);
  d->groups = fz_chance(r, 0.4) ? divisor(r, d->c ? gcd(d->c, d->k) : d->k) : 0;
  if (fz_chance(r, 0.12)) {
    /* Many same-sign taps under a bias of 1e6..1e8: float32 accumulation
     * that starts from the bias loses them. */
    d->c = 8 + fz_below(r, 9);
    d->h = 8 + fz_below(r, 8);
    d->w = 8 + fz_below(r, 8);
    d->r = 3 + fz_below(r, 3);
    d->s = 3 + fz_below(r, 3);
    d->groups = 0;
    d->dilation_h = d->dilation_w = 0;
    s->bias = 1;
    s->bmag = log_uniform(r, 1e6, 1e8);
    s->dist = FZ_DIST_POSUNIT;
    return;
  }
  s->bias = fz_chance(r, 0.6);
  s->bmag = fz_chance(r, 0.7) ? 1.0f : log_uniform(r, 1e2, 1e8);
  /* Same-sign taps under a large bias: their sum must not be lost. */
  s->dist = s->bmag > 1 && fz_chance(r, 0.5) ? FZ_DIST_POSUNIT
            : fz_chance(r, 0.8)              ? FZ_DIST_UNIT
                                             : FZ_DIST_WIDE;
  /* input dta, filter dtb, output dtc f32/f16/bf16, bias dtbias f32/f16 */
  gen_ew_types(r, s, true);
  if (s->dta || s->dtb || s->dtc)
    s->dtbias = (int)fz_below(r, 2);
}

static void gen_attn(fz_rng *r, fz_step *s) {
  wgc_attention_desc *d = &s->at;
  d->batch = fz_chance(r, 0.04) ? 0 : 1 + fz_below(r, 2);
  d->heads = 1 + fz_below(r, 4);
  d->heads_kv = fz_chance(r, 0.4) ? 0 : divisor(r, d->heads);
  d->seq_q = dim(r, 40, 0.03);
  /* decoding (a few rows) against longer caches too: CPU adapters split
   * those keys into blocks */
  bool decode = d->seq_q <= 4 && fz_chance(r, 0.4);
  d->seq_kv = fz_chance(r, 0.08) ? 0 : dim(r, decode ? 400 : 40, 0.0);
  double u = fz_unit(r);
  d->head_dim = u < 0.1    ? 1
                : u < 0.4  ? 2 + fz_below(r, 15)
                : u < 0.55 ? (size_t[]){32, 64, 128}[fz_below(r, 3)]
                : u < 0.8  ? primes[fz_below(r, 12)]
                           : 200 + fz_below(r, 101);
  while (d->batch * d->heads * d->seq_q * d->seq_kv * d->head_dim > 1500000 &&
         d->seq_kv > 1)
    d->seq_kv /= 2;
  d->scale = fz_chance(r, 0.7) ? (float)(1.0 / sqrt((double)d->head_dim))
                               : (float)(0.05 + 1.95 * fz_unit(r));
  d->causal = (wgc_causal)fz_below(r, 3);
  if (fz_chance(r, 0.4))
    d->head_dim_v = 1 + fz_below(r, fz_chance(r, 0.8) ? 40 : 300);
  if (fz_chance(r, 0.3))
    d->softcap = (float)(fz_chance(r, 0.5) ? 1 + 49 * fz_unit(r) : 0.5);
  size_t hkv = d->heads_kv ? d->heads_kv : d->heads, D = d->head_dim;
  size_t Dv = d->head_dim_v ? d->head_dim_v : D;
  while (d->batch * d->heads * d->seq_q * d->seq_kv * (D + Dv) > 1500000 &&
         d->seq_kv > 1)
    d->seq_kv /= 2;
  /* Layouts: contiguous (all 0), [batch, seq, heads, dim], or a cache
   * allocated for a longer sequence, each operand its own. */
  wgc_attention_strides *st[4] = {&d->q_stride, &d->k_stride, &d->v_stride,
                                  &d->o_stride};
  size_t hh[4] = {d->heads, hkv, hkv, d->heads};
  size_t sq[4] = {d->seq_q, d->seq_kv, d->seq_kv, d->seq_q};
  size_t dd[4] = {D, D, Dv, Dv};
  for (int o = 0; o < 4; o++) {
    size_t lay = fz_below(r, 4), pad = fz_below(r, 5);
    if (lay == 1) /* [batch, seq, heads, dim] */
      *st[o] = (wgc_attention_strides){sq[o] * hh[o] * (dd[o] + pad),
                                       dd[o] + pad, hh[o] * (dd[o] + pad)};
    else if (lay == 2) /* [batch, heads, max_seq, dim] */
      *st[o] = (wgc_attention_strides){hh[o] * (sq[o] + pad) * dd[o],
                                       (sq[o] + pad) * dd[o], dd[o]};
    if (o < 3 && fz_chance(r, 0.1)) { /* an input broadcast over the batch */
      if (!st[o]->head && !st[o]->seq)
        *st[o] = (wgc_attention_strides){0, sq[o] * dd[o], dd[o]};
      st[o]->batch = 0;
    }
  }
  if (fz_chance(r, 0.4)) { /* an additive mask, broadcast where 0 */
    s->bias = 1;
    size_t kv = d->seq_kv + fz_below(r, 3);
    d->mask_stride.seq = fz_chance(r, 0.7) ? kv : 0;
    d->mask_stride.head =
        fz_chance(r, 0.5) ? (d->seq_q ? d->seq_q : 1) * kv : 0;
    d->mask_stride.batch =
        fz_chance(r, 0.5) ? d->heads * (d->seq_q ? d->seq_q : 1) * kv : 0;
    /* 60: scores some tens apart, so the running max often rises past a
     * key's score + 87 in several smaller steps */
    double mu = fz_unit(r);
    s->bmag = mu < 0.7 ? 1.0f : mu < 0.85 ? 60.0f : 1e4f;
    /* bias 2: plus a ramp along the keys (build_attn), so the max rises
     * tile by tile and early keys end far below it */
    if (fz_chance(r, 0.3))
      s->bias = 2;
  }
  /* seq_kv on either side of wgc.h's 2^31 limit, K and V one row per head
   * (seq stride 0): beyond it both backends reject the call alike; inside
   * it TOP_LEFT rows see a few keys, which keeps it cheap. */
  if (fz_chance(r, 0.06)) {
    d->seq_kv = ((size_t)1 << 31) - 2 + fz_below(r, 4);
    d->seq_q = 1 + fz_below(r, 8);
    d->causal =
        d->seq_kv >> 31 ? (wgc_causal)fz_below(r, 3) : WGC_CAUSAL_TOP_LEFT;
    d->q_stride = d->o_stride = (wgc_attention_strides){0, 0, 0};
    d->k_stride = (wgc_attention_strides){hkv * D, D, 0};
    d->v_stride = (wgc_attention_strides){hkv * Dv, Dv, 0};
    s->bias = 0;
    d->mask_stride = (wgc_attention_strides){0, 0, 0};
  }
  s->dist = FZ_DIST_UNIT;
  s->mag = fz_chance(r, 0.7) ? 1.0f : 3.0f;
  /* operand types (f32, f16, bf16 each) for a third of the steps, 2-byte
   * ones 2 bytes into a word by tsh bits 0-4 (q, k, v, mask, o) */
  if (fz_chance(r, 0.35)) {
    d->q_type = (wgc_dtype)fz_below(r, 3);
    d->k_type = (wgc_dtype)fz_below(r, 3);
    d->v_type = (wgc_dtype)fz_below(r, 3);
    d->mask_type = (wgc_dtype)fz_below(r, 3);
    d->o_type = (wgc_dtype)fz_below(r, 3);
    s->tsh = (unsigned)fz_below(r, 32);
  }
}

static void gen_shape(fz_rng *r, fz_shape *sh, size_t rank, size_t budget) {
  sh->rank = rank;
  size_t prod = 1;
  for (size_t i = 0; i < rank; i++) {
    if (fz_chance(r, 0.03)) {
      sh->d[i] = 0;
      continue;
    }
    size_t room = budget / prod;
    size_t cap = room < 2 ? 1 : (rank > 4 ? (room < 4 ? room : 4) : room);
    if (cap > 40)
      cap = 40;
    sh->d[i] = 1 + fz_below(r, cap);
    prod *= sh->d[i];
  }
}

/* A reduction's types: input dta f32/f16/bf16, output dtc f32 or the
 * input's; tsh bits 0 and 2. */
static void gen_reduce_types(fz_rng *r, fz_step *s) {
  if (!fz_chance(r, 0.35))
    return;
  s->dta = (int)fz_below(r, 3);
  s->dtc = fz_chance(r, 0.5) ? s->dta : 0;
  s->tsh = (unsigned)fz_below(r, 8);
}

static void gen_reduce(fz_rng *r, fz_step *s) {
  /* SUM..MEAN: fzr_reduce models their overflow and flush behaviour; the
   * later ops are tested against float64 in test_reduce.c */
  s->op = (int)fz_below(r, WGC_REDUCE_MEAN + 1);
  if (fz_chance(r, 0.05)) {
    s->sh.rank = 1 + fz_below(r, 2);
    s->sh.d[0] =
        s->sh.rank == 1 ? 70000 + fz_below(r, 200000) : 1 + fz_below(r, 3);
    if (s->sh.rank == 2)
      s->sh.d[1] = 70000 + fz_below(r, 100000);
  } else {
    gen_shape(r, &s->sh, 1 + fz_below(r, 8), 6000);
  }
  s->axis = fz_below(r, s->sh.rank);
  s->dist = fz_chance(r, 0.7) ? FZ_DIST_UNIT : FZ_DIST_WIDE;
  gen_reduce_types(r, s);
}

/* Element-wise operand types (dta, dtb, dtc: f32, f16 or bf16), drawn for
 * a third of the steps; tsh shifts 2-byte ones 2 bytes into a word. */
static void gen_ew_types(fz_rng *r, fz_step *s, bool with_b) {
  if (!fz_chance(r, 0.35))
    return;
  s->dta = (int)fz_below(r, 3);
  s->dtb = with_b ? (int)fz_below(r, 3) : 0;
  s->dtc = (int)fz_below(r, 3);
  s->tsh = (unsigned)fz_below(r, 8);
}

static void gen_unary(fz_rng *r, fz_step *s) {
  s->op = (int)fz_below(r, WGC_UNARY_OP_COUNT);
  s->n = count(r);
  s->inplace = fz_chance(r, 0.3);
  bool smooth = s->op == WGC_UNARY_EXP || s->op == WGC_UNARY_SIGMOID ||
                s->op == WGC_UNARY_TANH || s->op == WGC_UNARY_GELU ||
                s->op == WGC_UNARY_SILU;
  bool positive = s->op == WGC_UNARY_LOG || s->op == WGC_UNARY_SQRT;
  s->dist = smooth && fz_chance(r, 0.5)     ? FZ_DIST_EXP
            : positive && fz_chance(r, 0.6) ? FZ_DIST_POS
            : fz_chance(r, 0.5)             ? FZ_DIST_UNIT
                                            : FZ_DIST_WIDE;
  gen_ew_types(r, s, false);
  if (s->inplace) /* in place is same-typed */
    s->dtc = s->dta;
}

static void gen_binary(fz_rng *r, fz_step *s) {
  s->op = (int)fz_below(r, WGC_BINARY_OP_COUNT);
  s->n = count(r);
  double u = fz_unit(r);
  s->inplace = u < 0.55 ? 0 : u < 0.7 ? 1 : u < 0.85 ? 2 : 3;
  s->dist = s->op == WGC_BINARY_POW && fz_chance(r, 0.7) ? FZ_DIST_BASE
            : fz_chance(r, 0.5)                          ? FZ_DIST_UNIT
                                                         : FZ_DIST_WIDE;
  gen_ew_types(r, s, true);
  if (s->inplace == 3)
    s->dtb = s->dta;
  if (s->inplace == 1 || s->inplace == 2)
    s->dtc = s->inplace == 1 ? s->dta : s->dtb;
}

static void gen_bcast(fz_rng *r, fz_step *s) {
  s->op = (int)fz_below(r, WGC_BINARY_OP_COUNT);
  fz_shape out;
  gen_shape(r, &out, fz_below(r, 9), 3000);
  for (int which = 0; which < 2; which++) {
    fz_shape *x = which ? &s->shb : &s->sh;
    x->rank = fz_below(r, out.rank + 1);
    for (size_t i = 0; i < x->rank; i++) {
      size_t d = out.d[out.rank - x->rank + i];
      x->d[i] = fz_chance(r, 0.3) ? 1 : d;
    }
  }
  /* One side keeps the full shape most of the time, so outputs are not
   * all tiny. */
  if (fz_chance(r, 0.5))
    s->sh = out;
  s->inplace = fz_chance(r, 0.4);
  s->dist = fz_chance(r, 0.6) ? FZ_DIST_UNIT : FZ_DIST_WIDE;
  gen_ew_types(r, s, true);
  if (s->inplace)
    s->dtc = s->dta;
}

/* ---- the model-level operations ------------------------------------------
 */

static size_t round_up32(size_t v) { return (v + 31) / 32 * 32; }

/* Operand types as wgc.h takes them: A and C f32/f16/bf16, B also Q8_0 or
 * Q4_0 (then laid out with k contiguous and k, ldb and the batch stride in
 * whole blocks), the bias f32 or f16; 2-byte operands may start 2 bytes
 * into a word. */
static void gen_gemm_types(fz_rng *r, fz_step *s) {
  static const int scalar[] = {WGC_DTYPE_F32, WGC_DTYPE_F16, WGC_DTYPE_BF16};
  static const int weight[] = {WGC_DTYPE_F32, WGC_DTYPE_F16, WGC_DTYPE_BF16,
                               WGC_DTYPE_Q8_0, WGC_DTYPE_Q4_0};
  s->dta = scalar[fz_below(r, 3)];
  s->dtb = weight[fz_below(r, 5)];
  s->dtc = scalar[fz_below(r, 3)];
  s->dtbias = fz_chance(r, 0.5) ? WGC_DTYPE_F16 : WGC_DTYPE_F32;
  s->tsh = (unsigned)fz_below(r, 16);
  if (s->dtb == WGC_DTYPE_Q8_0 || s->dtb == WGC_DTYPE_Q4_0) {
    s->tb = s->op == WGC_ROW_MAJOR ? WGC_TRANS : WGC_NO_TRANS;
    /* A with k contiguous too: a block's 32 k of a k-strided A may exceed
     * the fuzzer's small binding windows, and k splits only at blocks */
    s->ta = s->op == WGC_ROW_MAJOR ? WGC_NO_TRANS : WGC_TRANS;
    /* k >= 32: ldb is at least k, and whole blocks even when k is 0 */
    s->k = round_up32(s->k > 2000 ? s->k : 32 + 32 * (s->k / 8));
    s->ldb = round_up32(s->ldb);
    s->sb = round_up32(s->sb);
    s->dist = FZ_DIST_UNIT;
  }
}

static void gen_gemm_ex(fz_rng *r, fz_step *s) {
  gen_gemm(r, s);
  s->bias = fz_chance(r, 0.75);
  s->bkind = (int)fz_below(r, 2);
  s->bmag = fz_chance(r, 0.7) ? 1.0f : log_uniform(r, 1e-2, 1e4);
  s->act = (int)fz_below(r, WGC_ACTIVATION_SILU + 1);
  if (fz_chance(r, 0.3))
    s->dist = FZ_DIST_EXP; /* pre-activations far into the tails */
  if (fz_chance(r, 0.5))
    gen_gemm_types(r, s);
}

static float pick_param(fz_rng *r) {
  double u = fz_unit(r);
  if (u < 0.05)
    return NAN;
  if (u < 0.1)
    return fz_chance(r, 0.5) ? INFINITY : -INFINITY;
  if (u < 0.15)
    return fz_chance(r, 0.5) ? 0.0f : -0.0f;
  if (u < 0.2)
    return fz_chance(r, 0.5) ? 1e-40f : 3e38f;
  return (float)(6.0 * fz_unit(r) - 3.0);
}

static void gen_unary_p(fz_rng *r, fz_step *s) {
  static const int ops[] = {WGC_UNARY_LEAKY_RELU, WGC_UNARY_ELU,
                            WGC_UNARY_HARD_SIGMOID, WGC_UNARY_CLIP};
  s->op = fz_chance(r, 0.85) ? ops[fz_below(r, 4)]
                             : (int)fz_below(r, WGC_UNARY_OP_COUNT);
  s->n = count(r);
  s->inplace = fz_chance(r, 0.3);
  s->alpha = pick_param(r);
  s->beta = pick_param(r);
  s->dist = fz_chance(r, 0.3)   ? FZ_DIST_EXP
            : fz_chance(r, 0.5) ? FZ_DIST_UNIT
                                : FZ_DIST_WIDE;
  s->mag = fz_chance(r, 0.5) ? 1.0f : 4.0f;
}

static void gen_reduce_axes(fz_rng *r, fz_step *s) {
  s->op = (int)fz_below(r, WGC_REDUCE_OP_COUNT);
  if (fz_chance(r, 0.05)) {
    s->sh.rank = 2;
    s->sh.d[0] = 1 + fz_below(r, 3);
    s->sh.d[1] = 70000 + fz_below(r, 100000);
  } else {
    gen_shape(r, &s->sh, 1 + fz_below(r, 8), 6000);
  }
  do
    s->axes = (unsigned)fz_below(r, 1u << s->sh.rank);
  while (!s->axes);
  /* One axis through wgc_reduce itself (the flag), or the list. */
  s->inplace = fz_chance(r, 0.3);
  double u = fz_unit(r);
  s->dist = u < 0.45   ? FZ_DIST_UNIT
            : u < 0.7  ? FZ_DIST_WIDE
            : u < 0.85 ? FZ_DIST_EXP
            : u < 0.95 ? FZ_DIST_BASE /* products near 1 */
                       : FZ_DIST_OFFSET;
  if (s->dist == FZ_DIST_OFFSET)
    s->mag = log_uniform(r, 1, 1e6);
  gen_reduce_types(r, s);
}

static void gen_arg(fz_rng *r, fz_step *s) {
  s->op = (int)fz_below(r, 2);
  if (fz_chance(r, 0.1)) { /* long axes: several passes, ties across them */
    s->sh.rank = 2;
    s->sh.d[0] = 1 + fz_below(r, 3);
    s->sh.d[1] = 5000 + fz_below(r, 300000);
    if (fz_chance(r, 0.3)) {
      size_t t = s->sh.d[0];
      s->sh.d[0] = s->sh.d[1];
      s->sh.d[1] = t;
    }
  } else {
    gen_shape(r, &s->sh, 1 + fz_below(r, 8), 6000);
  }
  s->axis = fz_below(r, s->sh.rank);
  if (!s->sh.d[s->axis])
    s->sh.d[s->axis] = 1;
  /* Few distinct values: ties everywhere. */
  s->dist = fz_chance(r, 0.4) ? FZ_DIST_BASE : FZ_DIST_UNIT;
}

static void gen_norm(fz_rng *r, fz_step *s) {
  s->op = (int)fz_below(r, 4);
  if (fz_chance(r, 0.05)) {
    s->sh.rank = 2;
    s->sh.d[0] = 1 + fz_below(r, 3);
    s->sh.d[1] = 5000 + fz_below(r, 100000);
  } else {
    gen_shape(r, &s->sh, 1 + fz_below(r, 8), 6000);
  }
  s->axis = fz_below(r, s->sh.rank);
  s->inplace = fz_chance(r, 0.3);
  s->bias = (int)fz_below(r, 4); /* bit 0: scale, bit 1: bias */
  double u = fz_unit(r);
  s->eps = u < 0.1 ? 0.0f : u < 0.7 ? 1e-5f : (float)log_uniform(r, 1e-12, 1);
  u = fz_unit(r);
  s->dist = u < 0.4    ? FZ_DIST_UNIT
            : u < 0.65 ? FZ_DIST_WIDE
            : u < 0.85 ? FZ_DIST_EXP
                       : FZ_DIST_BASE; /* offsets near 1, repeats */
  u = fz_unit(r);
  s->mag = u < 0.6   ? 1.0f
           : u < 0.9 ? log_uniform(r, 1e-6, 1e6)
                     : log_uniform(r, 1e-30, 1e-15); /* squares underflow */
  if (fz_chance(r, 0.15)) {
    s->dist = FZ_DIST_OFFSET;
    s->mag = (fz_chance(r, 0.5) ? -1.0f : 1.0f) * log_uniform(r, 1, 1e6);
  }
  /* input dta and output dtc f32/f16/bf16, scale and bias dtb f32/f16 */
  gen_ew_types(r, s, false);
  if (s->dta || s->dtc) {
    s->dtb = (int)fz_below(r, 2);
    s->tsh = (unsigned)fz_below(r, 16);
  }
  if (s->inplace)
    s->dtc = s->dta;
}

static void gen_rotary(fz_rng *r, fz_step *s) {
  wgc_rotary_desc *d = &s->rd;
  d->batch = fz_chance(r, 0.05) ? 0 : 1 + fz_below(r, 3);
  d->seq = dim(r, 40, 0.03);
  d->heads = 1 + fz_below(r, 5);
  d->head_dim = fz_chance(r, 0.05) ? 0 : 2 * (1 + fz_below(r, 40));
  if (fz_chance(r, 0.1)) { /* rows beyond a 4 or 8 KiB binding window */
    d->head_dim = 2 * (480 + fz_below(r, 700));
    d->seq = 1 + fz_below(r, 3);
  }
  if (fz_chance(r, 0.2))
    d->head_dim++; /* odd: rotary_dim must then be smaller and even */
  size_t pairs = d->head_dim / 2;
  d->rotary_dim =
      fz_chance(r, 0.4) || !pairs ? 0 : 2 * (1 + fz_below(r, pairs));
  if (d->head_dim % 2 && !d->rotary_dim)
    d->rotary_dim = 2 * (pairs ? pairs : 0);
  if (d->head_dim % 2 && !d->rotary_dim)
    d->head_dim++;
  d->interleaved = fz_chance(r, 0.5);
  d->layout = (wgc_rotary_layout)fz_below(r, 2);
  s->posids = fz_chance(r, 0.7);
  d->max_positions = 1 + fz_below(r, 64);
  s->oor = fz_chance(r, 0.4) ? (int)fz_below(r, 300) : 0;
  s->inplace = fz_chance(r, 0.3);
  s->dist = fz_chance(r, 0.7) ? FZ_DIST_UNIT : FZ_DIST_WIDE;
  /* input dta and output dtc f32/f16/bf16, caches dtb f32/f16 */
  gen_ew_types(r, s, false);
  if (s->dta || s->dtc)
    s->dtb = (int)fz_below(r, 2);
  if (s->inplace) /* in place is same-typed */
    s->dtc = s->dta;
}

static void gen_pool(fz_rng *r, fz_step *s) {
  wgc_pool2d_desc *d = &s->pl;
  d->n = fz_chance(r, 0.05) ? 0 : 1 + fz_below(r, 3);
  d->c = fz_chance(r, 0.05) ? 0 : 1 + fz_below(r, 8);
  d->h = fz_chance(r, 0.04) ? 0 : 1 + fz_below(r, 24);
  d->w = fz_chance(r, 0.04) ? 0 : 1 + fz_below(r, 24);
  window2d g = {.h = d->h, .w = d->w};
  if (gen_window(r, &g, true))
    d->n = d->c = 1;
  SET_WINDOW(d, g);
  d->mode = (wgc_pool_mode)fz_below(r, 2);
  d->count_include_pad = d->mode == WGC_POOL_AVG && fz_chance(r, 0.5);
  s->dist = fz_chance(r, 0.8) ? FZ_DIST_UNIT : FZ_DIST_WIDE;
  gen_ew_types(r, s, false); /* input dta, output dtc */
}

/* Any pair of types, counts of whole blocks (empty, odd, beyond 4 KiB
 * windows), operands starting 2 bytes into a word where the type allows. */
static void gen_cast(fz_rng *r, fz_step *s) {
  s->ta = (int)fz_below(r, WGC_DTYPE_COUNT);
  s->tb = fz_chance(r, 0.1) ? s->ta : (int)fz_below(r, WGC_DTYPE_COUNT);
  size_t block = wgc_dtype_block_size((wgc_dtype)s->ta) > 1 ||
                         wgc_dtype_block_size((wgc_dtype)s->tb) > 1
                     ? 32
                     : 1;
  s->n = fz_chance(r, 0.04) ? 0 : block * dim(r, block > 1 ? 40 : 300, 0.0);
  if (fz_chance(r, 0.05))
    s->n = block * (5000 + fz_below(r, 60000 / block));
  s->m = fz_chance(r, 0.5);
  s->k = fz_chance(r, 0.5);
  s->dist = fz_chance(r, 0.5) ? FZ_DIST_UNIT : FZ_DIST_WIDE;
}

static void gen_strided(fz_rng *r, fz_step *s) {
  double big = fz_unit(r);
  if (big < 0.015) { /* beyond the grid: one dimension, unit strides */
    s->sh.rank = s->sst.rank = s->dst.rank = 1;
    s->sh.d[0] = 65535 * 64 + 1 + fz_below(r, 100000);
    s->sst.d[0] = fz_below(r, 3);
    s->dst.d[0] = 1;
    s->dist = FZ_DIST_BITS;
    gen_ew_types(r, s, false); /* src dta, dst dtc */
    return;
  }
  if (big < 0.05) { /* beyond the binding windows */
    s->sh.rank = 2;
    s->sh.d[0] = 1 + fz_below(r, 3);
    s->sh.d[1] = 20000 + fz_below(r, 100000);
  } else {
    gen_shape(r, &s->sh, fz_below(r, 9), 4000);
  }
  size_t rank = s->sh.rank;
  s->sst.rank = s->dst.rank = rank;
  /* dst: a permutation of the dimensions, each padded: every index its
   * own element, */
  size_t perm[8];
  for (size_t i = 0; i < rank; i++)
    perm[i] = i;
  for (size_t i = rank; i > 1; i--) {
    size_t j = fz_below(r, i), t = perm[i - 1];
    perm[i - 1] = perm[j];
    perm[j] = t;
  }
  /* or the two innermost interleaved: strides n1 and n1 + 1 for extents
   * n0 and n1 (coprime, the smaller stride at least the extent n1 of the
   * larger one's dimension) address distinct elements though neither
   * passes the other's reach, as {2, 3} over {3, 2} */
  size_t n1 =
      rank >= 2 && s->sh.d[perm[rank - 2]] ? s->sh.d[perm[rank - 2]] : 1;
  bool weave = big >= 0.05 && rank >= 2 && n1 <= 64 && fz_chance(r, 0.25);
  size_t span = 1;
  for (size_t i = rank; i-- > 0;) {
    size_t d = perm[i];
    size_t ext = s->sh.d[d] ? s->sh.d[d] : 1;
    if (weave && i + 2 >= rank) {
      s->dst.d[d] = i + 1 == rank ? n1 : n1 + 1;
      span = i + 1 == rank ? (ext - 1) * n1 + 1 : span + (ext - 1) * (n1 + 1);
      continue;
    }
    s->dst.d[d] = span;
    span = span * ext + (fz_chance(r, 0.3) ? fz_below(r, 4) : 0);
    if (s->sh.d[d] == 1 && fz_chance(r, 0.3))
      s->dst.d[d] = fz_below(r, 5); /* ignored for size 1 */
  }
  /* src: any strides, 0 broadcasting, overlapping reads allowed. */
  for (size_t i = 0; i < rank; i++) {
    double u = fz_unit(r);
    s->sst.d[i] = u < 0.2 ? 0 : u < 0.5 ? 1 + fz_below(r, 3) : fz_below(r, 200);
    if (rank == 2 && s->sh.d[1] >= 20000) /* spans of a few times the count */
      s->sst.d[i] %= 3;
  }
  if (fz_chance(r, 0.4)) { /* contiguous in the reversed order: a transpose */
    size_t st = 1;
    for (size_t i = 0; i < rank; i++) {
      s->sst.d[perm[i]] = st;
      st *= s->sh.d[perm[i]] ? s->sh.d[perm[i]] : 1;
    }
  }
  s->dist = FZ_DIST_BITS;
  gen_ew_types(r, s, false); /* src dta, dst dtc */
}

/* Elements of a shape, a 0 dimension left out. */
static size_t count_nonzero(const fz_shape *sh) {
  size_t n = 1;
  for (size_t i = 0; i < sh->rank; i++)
    n *= sh->d[i] ? sh->d[i] : 1;
  return n;
}

static void gen_gather(fz_rng *r, fz_step *s) {
  gen_shape(r, &s->sh, 1 + fz_below(r, 6), 3000);
  s->axis = fz_below(r, s->sh.rank);
  s->n = fz_chance(r, 0.05) ? 0 : dim(r, 60, 0.0);
  if (fz_chance(r, 0.03))
    s->n = 20000 + fz_below(r, 50000);
  s->oor = fz_chance(r, 0.5) ? (int)fz_below(r, 400) : 0;
  s->dist = FZ_DIST_BITS;
  /* wgc_gather_ex: a table of any type but i32 (ta), an f32, f16 or bf16
   * output (tb); 2-byte operands 2 bytes into a word (m: the table, k:
   * the output). A block table gathers whole blocks: rows along an axis
   * before the last, whose length is a multiple of 32. */
  s->ta = s->tb = 0;
  if (fz_chance(r, 0.5)) {
    static const int tables[] = {WGC_DTYPE_F32, WGC_DTYPE_F16, WGC_DTYPE_BF16,
                                 WGC_DTYPE_Q8_0, WGC_DTYPE_Q4_0};
    s->ta = tables[fz_below(r, 5)];
    s->tb = (int)fz_below(r, 3);
    s->m = fz_chance(r, 0.5);
    s->k = fz_chance(r, 0.5);
    if (wgc_dtype_block_size((wgc_dtype)s->ta) > 1) {
      if (s->sh.rank < 2)
        s->sh.d[s->sh.rank++] = 1;
      s->sh.d[s->sh.rank - 1] = 32 * (1 + fz_below(r, 3));
      s->axis = fz_below(r, s->sh.rank - 1);
    }
  }
  size_t rest =
      count_nonzero(&s->sh) / (s->sh.d[s->axis] ? s->sh.d[s->axis] : 1);
  while (s->n > 1 && rest * s->n > 2000000)
    s->n /= 2;
}

static void gen_where(fz_rng *r, fz_step *s) {
  fz_shape out;
  if (fz_chance(r, 0.02)) { /* beyond the binding windows and the grid */
    out.rank = 1 + fz_below(r, 2);
    out.d[0] = 70000 + fz_below(r, 65535 * 64);
    out.d[1] = 2;
  } else {
    gen_shape(r, &out, fz_below(r, 9), 3000);
  }
  fz_shape *x[3] = {&s->sh, &s->shb, &s->shc};
  for (int w = 0; w < 3; w++) {
    x[w]->rank = fz_below(r, out.rank + 1);
    for (size_t i = 0; i < x[w]->rank; i++)
      x[w]->d[i] = fz_chance(r, 0.3) ? 1 : out.d[out.rank - x[w]->rank + i];
  }
  if (fz_chance(r, 0.5))
    *x[fz_below(r, 3)] = out;
  s->inplace = (int)fz_below(r, 4); /* out == a, b or cond when legal */
  s->dist = FZ_DIST_BITS;
  gen_ew_types(r, s, true);
  if (s->dta || s->dtb || s->dtc) {
    s->dtcond = (int)fz_below(r, 3);
    s->tsh = (unsigned)fz_below(r, 16);
  }
  /* in place is same-typed */
  int alias_t[4] = {0, s->dta, s->dtb, s->dtcond};
  if (s->inplace)
    s->dtc = alias_t[s->inplace];
}

static const int kind_weight[FZ_KIND_COUNT] = {
    [FZ_GEMM] = 14,   [FZ_CONV] = 10,       [FZ_ATTN] = 10,    [FZ_REDUCE] = 10,
    [FZ_UNARY] = 12,  [FZ_BINARY] = 12,     [FZ_BCAST] = 8,    [FZ_COPY] = 5,
    [FZ_UPLOAD] = 4,  [FZ_CHAIN] = 6,       [FZ_INVALID] = 14, [FZ_GEMM_EX] = 8,
    [FZ_UNARY_P] = 5, [FZ_REDUCE_AXES] = 7, [FZ_ARG] = 4,      [FZ_NORM] = 10,
    [FZ_ROTARY] = 5,  [FZ_STRIDED] = 6,     [FZ_GATHER] = 5,   [FZ_WHERE] = 5,
    [FZ_POOL] = 6,    [FZ_CAST] = 6};

/* Invalid-call kinds, fuzz_step.c's table. */
extern const int fz_invalid_count;

void fz_gen_step(fz_rng *r, fz_step *s, fz_kind kind) {
  memset(s, 0, sizeof *s);
  if (kind == FZ_NONE) {
    int total = 0;
    for (int i = 0; i < FZ_KIND_COUNT; i++)
      total += kind_weight[i];
    int pick = (int)fz_below(r, (size_t)total);
    kind = FZ_GEMM;
    for (int i = 0; i < FZ_KIND_COUNT; i++) {
      if (pick < kind_weight[i]) {
        kind = (fz_kind)i;
        break;
      }
      pick -= kind_weight[i];
    }
  }
  s->kind = kind;
  s->mag = 1.0f;
  switch (kind) {
  case FZ_GEMM:
    gen_gemm(r, s);
    break;
  case FZ_CONV:
    gen_conv(r, s);
    break;
  case FZ_ATTN:
    gen_attn(r, s);
    break;
  case FZ_REDUCE:
    gen_reduce(r, s);
    break;
  case FZ_UNARY:
    gen_unary(r, s);
    break;
  case FZ_BINARY:
    gen_binary(r, s);
    break;
  case FZ_BCAST:
    gen_bcast(r, s);
    break;
  case FZ_COPY:
  case FZ_UPLOAD:
    s->n = count(r);
    s->dist = FZ_DIST_BITS;
    break;
  case FZ_CHAIN:
    s->n = count(r);
    s->k = 2 + fz_below(r, 8); /* chain length */
    s->dist = FZ_DIST_UNIT;
    break;
  case FZ_GEMM_EX:
    gen_gemm_ex(r, s);
    break;
  case FZ_UNARY_P:
    gen_unary_p(r, s);
    break;
  case FZ_REDUCE_AXES:
    gen_reduce_axes(r, s);
    break;
  case FZ_ARG:
    gen_arg(r, s);
    break;
  case FZ_NORM:
    gen_norm(r, s);
    break;
  case FZ_ROTARY:
    gen_rotary(r, s);
    break;
  case FZ_STRIDED:
    gen_strided(r, s);
    break;
  case FZ_GATHER:
    gen_gather(r, s);
    break;
  case FZ_WHERE:
    gen_where(r, s);
    break;
  case FZ_POOL:
    gen_pool(r, s);
    break;
  case FZ_CAST:
    gen_cast(r, s);
    break;
  default:
    s->op = (int)fz_below(r, (size_t)fz_invalid_count);
    s->dist = FZ_DIST_UNIT;
    break;
  }
  if (fz_chance(r, 0.55)) {
    s->sp = 5 + (int)fz_below(r, 120);
    s->spk = fz_chance(r, 0.5) ? FZ_SP_ALL : (unsigned)(1 + fz_below(r, 63));
  }
  s->pack = fz_chance(r, 0.5);
  double g = fz_unit(r);
  s->gap = g < 0.3    ? 0
           : g < 0.8  ? 1 + (int)fz_below(r, 8)
           : g < 0.95 ? 64
                      : 1000;
  s->dseed = (uint32_t)fz_next(r);
  s->nullptrs = fz_chance(r, 0.3);
}

/* ---- one-line form --------------------------------------------------------
 */

enum { T_INT, T_SIZE, T_FLOAT, T_U32, T_SHAPE };
static const struct field {
  const char *name;
  size_t off;
  int type;
} fields[] = {
#define F(name, member, type)                                                  \
  { name, offsetof(fz_step, member), type }
    F("op", op, T_INT),
    F("ta", ta, T_INT),
    F("tb", tb, T_INT),
    F("m", m, T_SIZE),
    F("n", n, T_SIZE),
    F("k", k, T_SIZE),
    F("batched", batched, T_INT),
    F("batch", batch, T_SIZE),
    F("lda+", lda, T_SIZE),
    F("ldb+", ldb, T_SIZE),
    F("ldc+", ldc, T_SIZE),
    F("sa+", sa, T_SIZE),
    F("sb+", sb, T_SIZE),
    F("sc+", sc, T_SIZE),
    F("sa0", sa0, T_INT),
    F("sb0", sb0, T_INT),
    F("alpha", alpha, T_FLOAT),
    F("beta", beta, T_FLOAT),
    F("cv.n", cv.n, T_SIZE),
    F("cv.c", cv.c, T_SIZE),
    F("cv.h", cv.h, T_SIZE),
    F("cv.w", cv.w, T_SIZE),
    F("cv.k", cv.k, T_SIZE),
    F("cv.r", cv.r, T_SIZE),
    F("cv.s", cv.s, T_SIZE),
    F("stride_h", cv.stride_h, T_SIZE),
    F("stride_w", cv.stride_w, T_SIZE),
    F("pad_h", cv.pad_h, T_SIZE),
    F("pad_w", cv.pad_w, T_SIZE),
    F("dilation_h", cv.dilation_h, T_SIZE),
    F("dilation_w", cv.dilation_w, T_SIZE),
    F("groups", cv.groups, T_SIZE),
    F("bias", bias, T_INT),
    F("bmag", bmag, T_FLOAT),
    F("at.batch", at.batch, T_SIZE),
    F("heads", at.heads, T_SIZE),
    F("heads_kv", at.heads_kv, T_SIZE),
    F("seq_q", at.seq_q, T_SIZE),
    F("seq_kv", at.seq_kv, T_SIZE),
    F("head_dim", at.head_dim, T_SIZE),
    F("scale", at.scale, T_FLOAT),
    F("causal", at.causal, T_INT),
    F("head_dim_v", at.head_dim_v, T_SIZE),
    F("softcap", at.softcap, T_FLOAT),
    F("ms.b", at.mask_stride.batch, T_SIZE),
    F("ms.h", at.mask_stride.head, T_SIZE),
    F("ms.s", at.mask_stride.seq, T_SIZE),
    F("qs.b", at.q_stride.batch, T_SIZE),
    F("qs.h", at.q_stride.head, T_SIZE),
    F("qs.s", at.q_stride.seq, T_SIZE),
    F("ks.b", at.k_stride.batch, T_SIZE),
    F("ks.h", at.k_stride.head, T_SIZE),
    F("ks.s", at.k_stride.seq, T_SIZE),
    F("vs.b", at.v_stride.batch, T_SIZE),
    F("vs.h", at.v_stride.head, T_SIZE),
    F("vs.s", at.v_stride.seq, T_SIZE),
    F("os.b", at.o_stride.batch, T_SIZE),
    F("os.h", at.o_stride.head, T_SIZE),
    F("os.s", at.o_stride.seq, T_SIZE),
    F("at.q_type", at.q_type, T_INT),
    F("at.k_type", at.k_type, T_INT),
    F("at.v_type", at.v_type, T_INT),
    F("at.mask_type", at.mask_type, T_INT),
    F("at.o_type", at.o_type, T_INT),
    F("shape", sh, T_SHAPE),
    F("shape_b", shb, T_SHAPE),
    F("axis", axis, T_SIZE),
    F("inplace", inplace, T_INT),
    F("dist", dist, T_INT),
    F("mag", mag, T_FLOAT),
    F("sp", sp, T_INT),
    F("spk", spk, T_U32),
    F("pack", pack, T_INT),
    F("gap", gap, T_INT),
    F("dseed", dseed, T_U32),
    F("nullptrs", nullptrs, T_INT),
    F("act", act, T_INT),
    F("bkind", bkind, T_INT),
    F("axes", axes, T_U32),
    F("eps", eps, T_FLOAT),
    F("rd.batch", rd.batch, T_SIZE),
    F("rd.seq", rd.seq, T_SIZE),
    F("rd.heads", rd.heads, T_SIZE),
    F("rd.head_dim", rd.head_dim, T_SIZE),
    F("rotary_dim", rd.rotary_dim, T_SIZE),
    F("interleaved", rd.interleaved, T_INT),
    F("rd.layout", rd.layout, T_INT),
    F("max_positions", rd.max_positions, T_SIZE),
    F("posids", posids, T_INT),
    F("oor", oor, T_INT),
    F("shape_c", shc, T_SHAPE),
    F("src_strides", sst, T_SHAPE),
    F("dst_strides", dst, T_SHAPE),
    F("pl.n", pl.n, T_SIZE),
    F("pl.c", pl.c, T_SIZE),
    F("pl.h", pl.h, T_SIZE),
    F("pl.w", pl.w, T_SIZE),
    F("pl.r", pl.r, T_SIZE),
    F("pl.s", pl.s, T_SIZE),
    F("pl.stride_h", pl.stride_h, T_SIZE),
    F("pl.stride_w", pl.stride_w, T_SIZE),
    F("pl.pad_h", pl.pad_h, T_SIZE),
    F("pl.pad_w", pl.pad_w, T_SIZE),
    F("pl.dilation_h", pl.dilation_h, T_SIZE),
    F("pl.dilation_w", pl.dilation_w, T_SIZE),
    F("pl.mode", pl.mode, T_INT),
    F("pl.include_pad", pl.count_include_pad, T_INT),
    F("a_type", dta, T_INT),
    F("b_type", dtb, T_INT),
    F("c_type", dtc, T_INT),
    F("bias_type", dtbias, T_INT),
    F("cond_type", dtcond, T_INT),
    F("tshift", tsh, T_U32),
#undef F
};
_Static_assert(sizeof(wgc_causal) == sizeof(int), "causal prints as an int");
_Static_assert(sizeof(wgc_rotary_layout) == sizeof(int),
               "the rotary layout prints as an int");
_Static_assert(sizeof(wgc_pool_mode) == sizeof(int),
               "the pooling mode prints as an int");

static const char *const kind_names[FZ_KIND_COUNT] = {
    "none",  "gemm",    "conv2d",    "attention",    "reduce",
    "unary", "binary",  "broadcast", "copy",         "upload",
    "chain", "invalid", "gemm_ex",   "unary_params", "reduce_axes",
    "arg",   "norm",    "rotary",    "copy_strided", "gather",
    "where", "pool2d",  "cast"};

fz_kind fz_kind_from_name(const char *name) {
  for (int k = 1; k < FZ_KIND_COUNT; k++)
    if (!strcmp(name, kind_names[k]))
      return (fz_kind)k;
  return FZ_NONE;
}

const char *fz_kind_name(int kind) {
  return kind >= 0 && kind < FZ_KIND_COUNT ? kind_names[kind] : "?";
}

void fz_format(const fz_step *s, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "%s", fz_kind_name(s->kind));
  const char *base = (const char *)s;
  for (size_t i = 0; i < sizeof fields / sizeof *fields && used < size; i++) {
    const void *p = base + fields[i].off;
    char val[128];
    switch (fields[i].type) {
    case T_INT:
      if (!*(const int *)p)
        continue;
      snprintf(val, sizeof val, "%d", *(const int *)p);
      break;
    case T_SIZE:
      if (!*(const size_t *)p)
        continue;
      snprintf(val, sizeof val, "%zu", *(const size_t *)p);
      break;
    case T_U32:
      if (!*(const uint32_t *)p)
        continue;
      snprintf(val, sizeof val, "%u", *(const uint32_t *)p);
      break;
    case T_FLOAT: {
      float f = *(const float *)p;
      uint32_t bits;
      memcpy(&bits, &f, sizeof bits);
      if (!bits)
        continue;
      snprintf(val, sizeof val, "%.9g", f);
      break;
    }
    default: {
      const fz_shape *sh = p;
      if (!sh->rank)
        continue;
      size_t o = 0;
      for (size_t d = 0; d < sh->rank; d++)
        o += (size_t)snprintf(val + o, sizeof val - o, "%s%zu", d ? "x" : "",
                              sh->d[d]);
    }
    }
    used += (size_t)snprintf(buf + used, size - used, " %s=%s", fields[i].name,
                             val);
  }
}

bool fz_parse(const char *line, fz_step *s) {
  memset(s, 0, sizeof *s);
  char word[160];
  int n = 0;
  if (sscanf(line, "%159s%n", word, &n) != 1)
    return false;
  s->kind = FZ_NONE;
  for (int k = 1; k < FZ_KIND_COUNT; k++)
    if (!strcmp(word, kind_names[k]))
      s->kind = k;
  if (s->kind == FZ_NONE)
    return false;
  line += n;
  char *base = (char *)s;
  while (sscanf(line, "%159s%n", word, &n) == 1) {
    line += n;
    char *eq = strchr(word, '=');
    if (!eq)
      return false;
    *eq = 0;
    const char *val = eq + 1;
    size_t i = 0;
    while (i < sizeof fields / sizeof *fields && strcmp(fields[i].name, word))
      i++;
    if (i == sizeof fields / sizeof *fields)
      return false;
    void *p = base + fields[i].off;
    switch (fields[i].type) {
    case T_INT:
      *(int *)p = atoi(val);
      break;
    case T_SIZE:
      *(size_t *)p = (size_t)strtoull(val, NULL, 10);
      break;
    case T_U32:
      *(uint32_t *)p = (uint32_t)strtoul(val, NULL, 10);
      break;
    case T_FLOAT:
      *(float *)p = strtof(val, NULL);
      break;
    default: {
      fz_shape *sh = p;
      sh->rank = 0;
      const char *c = val;
      while (*c && sh->rank < 8) {
        char *end;
        sh->d[sh->rank++] = (size_t)strtoull(c, &end, 10);
        c = *end == 'x' ? end + 1 : end;
        if (end == c && *c)
          return false;
      }
    }
    }
  }
  return true;
}
