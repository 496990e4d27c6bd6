/* The decoder of gpt_model.h: weight layout and generator, allocation, and
 * the forward pass as a sequence of wgc calls. */
#include "gpt_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TRY(call)                                                              \
  do {                                                                         \
    wgc_status s_ = (call);                                                    \
    if (s_ != WGC_OK)                                                          \
      return s_;                                                               \
  } while (0)

int gpt_config_valid(const gpt_config *c, const char **why) {
  const char *w = NULL;
  if (!c->vocab || !c->d_model || !c->heads || !c->layers || !c->d_ff ||
      !c->context)
    w = "every size must be at least 1";
  else if (c->d_model % c->heads)
    w = "d_model must be a multiple of heads";
  else if (c->layers > GPT_MAX_LAYERS)
    w = "too many layers";
  else if (c->vocab > INT32_MAX)
    w = "token ids are int32";
  if (why)
    *why = w;
  return w == NULL;
}

/* Bytes of n elements of t, each tensor rounded up to 4 bytes so that the
 * next starts where an upload may write (n is whole blocks: checked by
 * gpt_weight_type_valid). */
static size_t tbytes(wgc_dtype t, size_t n) {
  size_t b = 0;
  wgc_dtype_bytes(t, n, &b);
  return (b + 3) & ~(size_t)3;
}

/* The one walk over the weights in their order: with bytes 0, element
 * offsets of the host's float array; with bytes 1, byte offsets on the
 * device, where the linear layers' matrices (LIN) are of type wt and every
 * other tensor f32. */
static gpt_offsets layout_as(const gpt_config *c, wgc_dtype wt, int bytes) {
  gpt_offsets o = {0};
  size_t d = c->d_model, f = c->d_ff, at = 0;
#define TAKE(field, n) (field = at, at += bytes ? 4 * (n) : (n))
#define LIN(field, n) (field = at, at += bytes ? tbytes(wt, n) : (n))
  TAKE(o.wte, c->vocab * d);
  TAKE(o.wpe, c->context * d);
  for (size_t l = 0; l < c->layers; l++) {
    gpt_layer_offsets *L = &o.layer[l];
    TAKE(L->ln1_g, d);
    TAKE(L->ln1_b, d);
    LIN(L->w_qkv, d * 3 * d);
    TAKE(L->b_qkv, 3 * d);
    LIN(L->w_o, d * d);
    TAKE(L->b_o, d);
    TAKE(L->ln2_g, d);
    TAKE(L->ln2_b, d);
    LIN(L->w_fc, d * f);
    TAKE(L->b_fc, f);
    LIN(L->w_proj, f * d);
    TAKE(L->b_proj, d);
  }
  TAKE(o.lnf_g, d);
  TAKE(o.lnf_b, d);
  LIN(o.w_head, d * c->vocab);
  TAKE(o.b_head, c->vocab);
#undef LIN
#undef TAKE
  o.total = at;
  return o;
}

gpt_offsets gpt_layout(const gpt_config *c) {
  return layout_as(c, WGC_DTYPE_F32, 0);
}

int gpt_weight_type_valid(const gpt_config *c, wgc_dtype t, const char **why) {
  const char *w = NULL;
  size_t blk = wgc_dtype_block_size(t);
  if (!blk || t == WGC_DTYPE_I32)
    w = "the weight type is not f32, f16, bf16, q8_0 or q4_0";
  else if (blk > 1 && (c->d_model % blk || c->d_ff % blk))
    w = "block weights need d_model and d_ff multiples of 32";
  if (why)
    *why = w;
  return w == NULL;
}

/* mulberry32: a tiny generator that JavaScript reproduces bit for bit. */
static uint32_t mulberry32(uint32_t *state) {
  uint32_t t = (*state += 0x6d2b79f5u);
  t = (t ^ (t >> 15)) * (t | 1u);
  t ^= t + (t ^ (t >> 7)) * (t | 61u);
  return t ^ (t >> 14);
}

/* n values offset + scale*r, r uniform in [-1, 1) with 24 bits, so r is
 * exact in float32 and each product rounds once, as Math.fround does. */
static void fill(float *x, size_t n, float offset, float scale,
                 uint32_t *state) {
  for (size_t i = 0; i < n; i++) {
    float r = (float)(mulberry32(state) >> 8) * (1.0f / 16777216.0f);
    x[i] = offset + scale * (2.0f * r - 1.0f);
  }
}

float *gpt_weights_new(const gpt_config *c) {
  gpt_offsets o = gpt_layout(c);
  float *w = malloc(o.total * sizeof *w);
  if (!w)
    return NULL;
  uint32_t s = c->seed;
  size_t d = c->d_model, f = c->d_ff;
  /* Uniform weights of variance 1/fan_in keep every projection's output
   * O(1); the two projections that feed the residual stream shrink by
   * sqrt(2 * layers), as GPT-2 scales them, so the stream stays O(1) too. */
  float in_d = sqrtf(3.0f / (float)d), in_f = sqrtf(3.0f / (float)f);
  float resid = 1.0f / sqrtf(2.0f * (float)c->layers);
  fill(w + o.wte, c->vocab * d, 0.0f, 1.0f, &s);
  fill(w + o.wpe, c->context * d, 0.0f, 0.5f, &s);
  for (size_t l = 0; l < c->layers; l++) {
    const gpt_layer_offsets *L = &o.layer[l];
    fill(w + L->ln1_g, d, 1.0f, 0.1f, &s);
    fill(w + L->ln1_b, d, 0.0f, 0.1f, &s);
    fill(w + L->w_qkv, d * 3 * d, 0.0f, in_d, &s);
    fill(w + L->b_qkv, 3 * d, 0.0f, 0.1f, &s);
    fill(w + L->w_o, d * d, 0.0f, in_d * resid, &s);
    fill(w + L->b_o, d, 0.0f, 0.1f, &s);
    fill(w + L->ln2_g, d, 1.0f, 0.1f, &s);
    fill(w + L->ln2_b, d, 0.0f, 0.1f, &s);
    fill(w + L->w_fc, d * f, 0.0f, in_d, &s);
    fill(w + L->b_fc, f, 0.0f, 0.1f, &s);
    fill(w + L->w_proj, f * d, 0.0f, in_f * resid, &s);
    fill(w + L->b_proj, d, 0.0f, 0.1f, &s);
  }
  fill(w + o.lnf_g, d, 1.0f, 0.1f, &s);
  fill(w + o.lnf_b, d, 0.0f, 0.1f, &s);
  /* Logits of standard deviation about 2: peaked enough that the argmax
   * rarely sits on a near-tie. */
  fill(w + o.w_head, d * c->vocab, 0.0f, 2.0f * in_d, &s);
  fill(w + o.b_head, c->vocab, 0.0f, 0.1f, &s);
  /* Favour printable ASCII, so the meaningless text is at least readable
   * characters rather than mostly escapes. */
  for (size_t v = 0; v < c->vocab; v++)
    if (v < 32 || v > 126)
      w[o.b_head + v] -= 4.0f;
  return w;
}

static double max_abs(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    m = fmax(m, fabs((double)x[i]));
  return m;
}

/* wgc.h bounds a GEMM's error by 1e-5*K*max|a|*max|b|. For the logits
 * (K = d_model) max|b| is max|w_head|, and max|a| is bounded without
 * running anything: a layer norm's output is at most sqrt(d - 1) in
 * magnitude before its gain and bias. Errors made earlier reach the logits
 * through a layer norm and the same projection; with these weight scales
 * each residual branch (two per layer) contributes at most about as much
 * as the final projection, hence the factor 1 + 2*layers. Two backends
 * that are each within that of the exact logits differ by at most twice
 * it. The bias epilogue adds one rounding of the bias (1e-6*max|bias|). */
double gpt_logit_tolerance(const gpt_config *c, const float *w,
                           int per_backend) {
  gpt_offsets o = gpt_layout(c);
  size_t d = c->d_model;
  double a =
      sqrt((double)(d - 1)) * max_abs(w + o.lnf_g, d) + max_abs(w + o.lnf_b, d);
  double b = max_abs(w + o.w_head, d * c->vocab);
  double one =
      1e-5 * (double)d * a * b + 1e-6 * max_abs(w + o.b_head, c->vocab);
  double bound = (1.0 + 2.0 * (double)c->layers) * one;
  return per_backend ? bound : 2.0 * bound;
}

/* Every device buffer of the model, for allocation and freeing. */
static size_t buffers(gpt_model *m, wgc_ptr **p, size_t *bytes) {
  const gpt_config *c = &m->cfg;
  size_t d = c->d_model, n = 0;
#define BUF(field, floats) (p[n] = &m->field, bytes[n++] = 4 * (floats))
  p[n] = &m->weights, bytes[n++] = m->dev.total;
  BUF(tokens, c->context);
  BUF(x, c->context * d);
  BUF(h, c->context * d);
  BUF(att, c->context * d);
  BUF(u, c->context * c->d_ff);
  for (size_t l = 0; l < c->layers; l++)
    BUF(qkv[l], c->context * 3 * d);
  BUF(hf, d);
  BUF(logits, c->vocab);
#undef BUF
  return n;
}

enum { MAX_BUFFERS = 8 + GPT_MAX_LAYERS };

void gpt_model_free(gpt_model *m) {
  wgc_ptr *p[MAX_BUFFERS];
  size_t bytes[MAX_BUFFERS];
  size_t n = buffers(m, p, bytes);
  for (size_t i = 0; i < n; i++) {
    if (*p[i])
      wgc_free(m->ctx, *p[i]);
    *p[i] = 0;
  }
}

/* A linear layer's matrix: where it lives on the host (element offset,
 * [in, out]) and on the device (byte offset). */
typedef struct linear_weight {
  size_t host, dev, in, out;
} linear_weight;

enum { MAX_LINEAR = 4 * GPT_MAX_LAYERS + 1 };

/* The matrices of the GEMMs, in the order of the layout. */
static size_t linear_weights(const gpt_config *c, const gpt_offsets *h,
                             const gpt_offsets *dv, linear_weight *lw) {
  size_t d = c->d_model, f = c->d_ff, n = 0;
#define LW(field, i, o)                                                        \
  (lw[n++] = (linear_weight){h->field, dv->field, (i), (o)})
  for (size_t l = 0; l < c->layers; l++) {
    LW(layer[l].w_qkv, d, 3 * d);
    LW(layer[l].w_o, d, d);
    LW(layer[l].w_fc, d, f);
    LW(layer[l].w_proj, f, d);
  }
  LW(w_head, d, c->vocab);
#undef LW
  return n;
}

/* w[in, out] transposed into wt[out, in] (k contiguous, as block weights
 * need) and converted to t in dst. */
static wgc_status convert(const float *w, size_t in, size_t out, wgc_dtype t,
                          float *tmp, void *dst) {
  for (size_t i = 0; i < in; i++)
    for (size_t j = 0; j < out; j++)
      tmp[j * in + i] = w[i * out + j];
  return wgc_quantize(tmp, dst, t, in * out);
}

/* The largest linear matrix, in elements. */
static size_t largest(const linear_weight *lw, size_t n) {
  size_t most = 0;
  for (size_t i = 0; i < n; i++)
    most = lw[i].in * lw[i].out > most ? lw[i].in * lw[i].out : most;
  return most;
}

float *gpt_weights_typed(const gpt_config *c, const float *weights,
                         wgc_dtype t) {
  gpt_offsets o = gpt_layout(c);
  linear_weight lw[MAX_LINEAR];
  size_t n = linear_weights(c, &o, &o, lw), most = largest(lw, n);
  float *w = malloc(o.total * sizeof *w), *tmp = malloc(most * sizeof *tmp);
  void *q = malloc(tbytes(t, most));
  wgc_status s = w && tmp && q && gpt_weight_type_valid(c, t, NULL)
                     ? WGC_OK
                     : WGC_ERR_INVALID_ARGUMENT;
  if (s == WGC_OK)
    memcpy(w, weights, o.total * sizeof *w);
  for (size_t i = 0; i < n && s == WGC_OK; i++) {
    size_t in = lw[i].in, out = lw[i].out;
    s = convert(weights + lw[i].host, in, out, t, tmp, q);
    if (s == WGC_OK)
      s = wgc_dequantize(q, t, tmp, in * out);
    for (size_t a = 0; s == WGC_OK && a < in; a++)
      for (size_t b = 0; b < out; b++)
        w[lw[i].host + a * out + b] = tmp[b * in + a];
  }
  free(q);
  free(tmp);
  if (s != WGC_OK) {
    free(w);
    return NULL;
  }
  return w;
}

/* The device's bytes of the weights: the f32 tensors copied, the linear
 * matrices transposed and converted (for f32 the host array as it is). */
static wgc_status upload_weights(gpt_model *m, const float *weights) {
  if (m->wtype == WGC_DTYPE_F32)
    return wgc_upload(m->ctx, m->weights, weights, m->dev.total);
  linear_weight lw[MAX_LINEAR];
  size_t n = linear_weights(&m->cfg, &m->off, &m->dev, lw);
  uint8_t *img = malloc(m->dev.total);
  float *tmp = malloc(largest(lw, n) * sizeof *tmp);
  wgc_status s = img && tmp ? WGC_OK : WGC_ERR_OUT_OF_MEMORY;
  /* The f32 tensors lie in runs between the matrices, in both layouts. */
  size_t host = 0, dev = 0;
  for (size_t i = 0; i <= n && s == WGC_OK; i++) {
    size_t end = i < n ? lw[i].host : m->off.total;
    memcpy(img + dev, weights + host, 4 * (end - host));
    if (i == n)
      break;
    size_t in = lw[i].in, out = lw[i].out;
    memset(img + lw[i].dev + tbytes(m->wtype, in * out) - 4, 0, 4);
    s = convert(weights + lw[i].host, in, out, m->wtype, tmp, img + lw[i].dev);
    host = lw[i].host + in * out;
    dev = lw[i].dev + tbytes(m->wtype, in * out);
  }
  if (s == WGC_OK)
    s = wgc_upload(m->ctx, m->weights, img, m->dev.total);
  free(tmp);
  free(img);
  return s;
}

wgc_status gpt_model_init_typed(gpt_model *m, wgc_context *ctx,
                                const gpt_config *cfg, const float *weights,
                                wgc_dtype wtype) {
  *m = (gpt_model){.cfg = *cfg,
                   .off = gpt_layout(cfg),
                   .dev = layout_as(cfg, wtype, 1),
                   .wtype = wtype,
                   .ctx = ctx};
  if (!gpt_config_valid(cfg, NULL) || !gpt_weight_type_valid(cfg, wtype, NULL))
    return WGC_ERR_INVALID_ARGUMENT;
  wgc_ptr *p[MAX_BUFFERS];
  size_t bytes[MAX_BUFFERS];
  size_t n = buffers(m, p, bytes);
  wgc_status s = WGC_OK;
  for (size_t i = 0; i < n && s == WGC_OK; i++)
    s = wgc_alloc(ctx, bytes[i], p[i]);
  if (s == WGC_OK)
    s = upload_weights(m, weights);
  if (s != WGC_OK)
    gpt_model_free(m);
  return s;
}

wgc_status gpt_model_init(gpt_model *m, wgc_context *ctx, const gpt_config *cfg,
                          const float *weights) {
  return gpt_model_init_typed(m, ctx, cfg, weights, WGC_DTYPE_F32);
}

wgc_status gpt_set_tokens(gpt_model *m, size_t pos, const int32_t *ids,
                          size_t n) {
  if (pos > m->cfg.context || n > m->cfg.context - pos)
    return WGC_ERR_INVALID_ARGUMENT;
  return wgc_upload(m->ctx, m->tokens + 4 * pos, ids, 4 * n);
}

/* y[rows, out] = act(x[rows, in] * w + b + beta*y), one launch: the bias
 * and activation are the GEMM's epilogue, and beta = 1 makes it add onto
 * the residual stream in place. ldy lets it write into a wider row (the
 * packed Q/K/V cache). An f32 w is [in, out]; a typed one [out, in], k
 * contiguous, so the GEMM takes it transposed. */
static wgc_status linear(const gpt_model *m, size_t rows, size_t in, size_t out,
                         wgc_ptr x, wgc_ptr w, wgc_ptr b, float beta, wgc_ptr y,
                         size_t ldy, wgc_activation act) {
  wgc_gemm_epilogue ep = {.bias = b,
                          .bias_kind = WGC_BIAS_PER_COLUMN,
                          .activation = act,
                          .b_type = m->wtype};
  int typed = m->wtype != WGC_DTYPE_F32;
  return wgc_gemm_ex(m->ctx, WGC_ROW_MAJOR, WGC_NO_TRANS,
                     typed ? WGC_TRANS : WGC_NO_TRANS, rows, out, in, 1.0f, x,
                     in, w, typed ? in : out, beta, y, ldy, &ep);
}

wgc_status gpt_forward(gpt_model *m, size_t pos, size_t n, int choose) {
  const gpt_config *c = &m->cfg;
  wgc_context *ctx = m->ctx;
  size_t d = c->d_model, hd = d / c->heads, f = c->d_ff, ld = 3 * d;
  const float eps = 1e-5f;
  if (n == 0 || pos > c->context || n > c->context - pos)
    return WGC_ERR_INVALID_ARGUMENT;
#define W(name) (m->weights + m->dev.name)

  /* x = wte[token] + wpe[position]: the positions are consecutive, so their
   * embeddings are a slice of wpe and need no gather. */
  size_t vocab_shape[2] = {c->vocab, d};
  TRY(wgc_gather(ctx, W(wte), vocab_shape, 2, 0, m->tokens + 4 * pos, n, m->x));
  TRY(wgc_binary(ctx, WGC_BINARY_ADD, m->x, W(wpe) + 4 * pos * d, m->x, n * d));

  size_t rows[2] = {n, d};
  for (size_t l = 0; l < c->layers; l++) {
    /* qkv is this layer's cache: row t holds Q, K and V of position t. */
    wgc_ptr qkv = m->qkv[l];
#define LW(name) W(layer[l].name)
    TRY(wgc_layer_norm(ctx, m->x, LW(ln1_g), LW(ln1_b), m->h, rows, 2, 1, eps));
    /* The projection writes the new rows straight into the cache. */
    TRY(linear(m, n, d, 3 * d, m->h, LW(w_qkv), LW(b_qkv), 0.0f,
               qkv + 4 * pos * ld, ld, WGC_ACTIVATION_NONE));
    /* The new queries against every cached key: strides over (batch,
     * head, seq) read the heads out of the packed rows, and bottom-right
     * causality lets query i see positions up to pos + i. */
    wgc_attention_strides packed = {c->context * ld, hd, ld};
    wgc_attention_desc ad = {.batch = 1,
                             .heads = c->heads,
                             .seq_q = n,
                             .seq_kv = pos + n,
                             .head_dim = hd,
                             .scale = 1.0f / sqrtf((float)hd),
                             .causal = WGC_CAUSAL_BOTTOM_RIGHT,
                             .q_stride = packed,
                             .k_stride = packed,
                             .v_stride = packed,
                             .o_stride = {c->context * d, hd, d}};
    TRY(wgc_attention(ctx, &ad, qkv + 4 * pos * ld, qkv + 4 * d,
                      qkv + 4 * 2 * d, m->att));
    TRY(linear(m, n, d, d, m->att, LW(w_o), LW(b_o), 1.0f, m->x, d,
               WGC_ACTIVATION_NONE));
    TRY(wgc_layer_norm(ctx, m->x, LW(ln2_g), LW(ln2_b), m->h, rows, 2, 1, eps));
    TRY(linear(m, n, d, f, m->h, LW(w_fc), LW(b_fc), 0.0f, m->u, f,
               WGC_ACTIVATION_GELU_TANH));
    TRY(linear(m, n, f, d, m->u, LW(w_proj), LW(b_proj), 1.0f, m->x, d,
               WGC_ACTIVATION_NONE));
#undef LW
  }

  /* Only the last token's logits choose the next token. */
  size_t last[2] = {1, d};
  TRY(wgc_layer_norm(ctx, m->x + 4 * (n - 1) * d, W(lnf_g), W(lnf_b), m->hf,
                     last, 2, 1, eps));
  TRY(linear(m, 1, d, c->vocab, m->hf, W(w_head), W(b_head), 0.0f, m->logits,
             c->vocab, WGC_ACTIVATION_NONE));
  /* Greedy decoding: the argmax lands where the next step gathers from,
   * so decoding never has to send a token back to the device. */
  if (choose && pos + n < c->context) {
    size_t logit_shape[2] = {1, c->vocab};
    TRY(wgc_argmax(ctx, m->logits, m->tokens + 4 * (pos + n), logit_shape, 2,
                   1));
  }
#undef W
  return WGC_OK;
}
