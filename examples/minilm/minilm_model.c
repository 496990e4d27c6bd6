/* The encoder of minilm_model.h: weights from safetensors into one
 * allocation, and the forward pass of a padded batch as wgc calls. */
#include "minilm_model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return 1;
}

minilm_config minilm_config_default(void) {
  minilm_config c = {.vocab = 30522,
                     .hidden = 384,
                     .heads = 12,
                     .layers = 6,
                     .ffn = 1536,
                     .positions = 512,
                     .type_vocab = 2,
                     .max_seq = 256,
                     .ln_eps = 1e-12f};
  return c;
}

/* ---- weights ------------------------------------------------------------ */

/* Bytes of n elements of t (whole blocks, checked by the caller). */
static size_t tbytes(wgc_dtype t, size_t n) {
  size_t b = 0;
  wgc_dtype_bytes(t, n, &b);
  return b;
}

/* Lays out every weight (byte offsets, each 4-byte aligned for uploads) in
 * the order of the file's names; returns the total. W are the weights of
 * the model's type, F the f32 ones. */
static size_t layout(minilm_model *m) {
  const minilm_config *c = &m->cfg;
  size_t h = c->hidden, f = c->ffn, at = 0;
  wgc_dtype wt = m->wtype;
#define TAKE(field, t, n) (field = at, at += (tbytes(t, n) + 3) & ~(size_t)3)
#define W(field, n) TAKE(field, wt, n)
#define F(field, n) TAKE(field, WGC_DTYPE_F32, n)
  W(m->word, c->vocab * h);
  W(m->pos, c->positions * h);
  W(m->type, c->type_vocab * h);
  F(m->emb_ln_g, h);
  F(m->emb_ln_b, h);
  for (size_t l = 0; l < c->layers; l++) {
    minilm_layer_offsets *L = &m->layer[l];
    W(L->w_qkv, 3 * h * h);
    F(L->b_qkv, 3 * h);
    W(L->w_o, h * h);
    F(L->b_o, h);
    F(L->ln1_g, h);
    F(L->ln1_b, h);
    W(L->w_i, f * h);
    F(L->b_i, f);
    W(L->w_out, h * f);
    F(L->b_out, h);
    F(L->ln2_g, h);
    F(L->ln2_b, h);
  }
#undef F
#undef W
#undef TAKE
  return at;
}

/* One tensor to copy: its name in the file, the shape it must have, and
 * where its elements go, as which type. */
typedef struct wanted {
  char name[96];
  size_t rank;
  uint64_t shape[2];
  size_t at; /* byte offset in the weights */
  wgc_dtype t;
} wanted;

static void want(wanted *w, size_t *n, size_t at, size_t rank, uint64_t d0,
                 uint64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static void want(wanted *w, size_t *n, size_t at, size_t rank, uint64_t d0,
                 uint64_t d1, const char *fmt, ...) {
  wanted *x = &w[(*n)++];
  x->t = WGC_DTYPE_F32; /* the matrices' type is set by wanted_list */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->name, sizeof x->name, fmt, ap);
  va_end(ap);
  x->rank = rank;
  x->shape[0] = d0;
  x->shape[1] = d1;
  x->at = at;
}

/* The list of every tensor the model reads, with the place of each. The
 * query, key and value weights of a layer go one after the other, so that
 * their stacked rows are one [3*hidden, hidden] matrix. */
static size_t wanted_list(const minilm_model *m, wanted *w) {
  const minilm_config *c = &m->cfg;
  size_t h = c->hidden, f = c->ffn, n = 0;
  want(w, &n, m->word, 2, c->vocab, h, "embeddings.word_embeddings.weight");
  want(w, &n, m->pos, 2, c->positions, h,
       "embeddings.position_embeddings.weight");
  want(w, &n, m->type, 2, c->type_vocab, h,
       "embeddings.token_type_embeddings.weight");
  want(w, &n, m->emb_ln_g, 1, h, 0, "embeddings.LayerNorm.weight");
  want(w, &n, m->emb_ln_b, 1, h, 0, "embeddings.LayerNorm.bias");
  static const char *const qkv[3] = {"query", "key", "value"};
  for (size_t l = 0; l < c->layers; l++) {
    const minilm_layer_offsets *L = &m->layer[l];
    for (int j = 0; j < 3; j++) {
      want(w, &n, L->w_qkv + j * tbytes(m->wtype, h * h), 2, h, h,
           "encoder.layer.%zu.attention.self.%s.weight", l, qkv[j]);
      want(w, &n, L->b_qkv + j * 4 * h, 1, h, 0,
           "encoder.layer.%zu.attention.self.%s.bias", l, qkv[j]);
    }
    want(w, &n, L->w_o, 2, h, h,
         "encoder.layer.%zu.attention.output.dense.weight", l);
    want(w, &n, L->b_o, 1, h, 0,
         "encoder.layer.%zu.attention.output.dense.bias", l);
    want(w, &n, L->ln1_g, 1, h, 0,
         "encoder.layer.%zu.attention.output.LayerNorm.weight", l);
    want(w, &n, L->ln1_b, 1, h, 0,
         "encoder.layer.%zu.attention.output.LayerNorm.bias", l);
    want(w, &n, L->w_i, 2, f, h, "encoder.layer.%zu.intermediate.dense.weight",
         l);
    want(w, &n, L->b_i, 1, f, 0, "encoder.layer.%zu.intermediate.dense.bias",
         l);
    want(w, &n, L->w_out, 2, h, f, "encoder.layer.%zu.output.dense.weight", l);
    want(w, &n, L->b_out, 1, h, 0, "encoder.layer.%zu.output.dense.bias", l);
    want(w, &n, L->ln2_g, 1, h, 0, "encoder.layer.%zu.output.LayerNorm.weight",
         l);
    want(w, &n, L->ln2_b, 1, h, 0, "encoder.layer.%zu.output.LayerNorm.bias",
         l);
  }
  /* matrices are the typed weights, vectors the f32 parameters */
  for (size_t i = 0; i < n; i++)
    if (w[i].rank == 2)
      w[i].t = m->wtype;
  return n;
}

enum { WANTED_FIXED = 5, WANTED_PER_LAYER = 16 };

static int config_ok(const minilm_config *c, char *err, size_t errlen) {
  if (!c->vocab || !c->hidden || !c->heads || !c->layers || !c->ffn ||
      !c->positions || !c->type_vocab || !c->max_seq)
    return fail(err, errlen, "minilm: every size in the config must be >= 1");
  if (c->hidden % c->heads)
    return fail(err, errlen,
                "minilm: hidden size %zu is not a multiple of %zu "
                "heads",
                c->hidden, c->heads);
  if (c->layers > MINILM_MAX_LAYERS)
    return fail(err, errlen, "minilm: %zu layers, at most %d", c->layers,
                MINILM_MAX_LAYERS);
  if (c->max_seq > c->positions)
    return fail(err, errlen,
                "minilm: max_seq_length %zu exceeds the %zu "
                "position embeddings",
                c->max_seq, c->positions);
  if (c->vocab > INT32_MAX || c->hidden > (1u << 20) || c->ffn > (1u << 20) ||
      c->positions > (1u << 20))
    return fail(err, errlen, "minilm: config sizes too large");
  if (!(c->ln_eps >= 0.0f) || isinf(c->ln_eps))
    return fail(err, errlen,
                "minilm: layer_norm_eps %g is not finite and "
                "non-negative",
                (double)c->ln_eps);
  return 0;
}

/* The weight types the model takes, and the sizes each needs: the 2-byte
 * types an even hidden (so that the stacked Q, K and V stay 4-byte
 * aligned), the block types hidden and ffn in whole blocks (GEMM's k). */
static int wtype_ok(const minilm_config *c, wgc_dtype t, char *err,
                    size_t errlen) {
  size_t blk = wgc_dtype_block_size(t);
  if (!blk || t == WGC_DTYPE_I32)
    return fail(err, errlen,
                "minilm: weight type %d (%s) is not f32, f16, bf16, q8_0 or "
                "q4_0",
                (int)t, wgc_dtype_name(t));
  if (blk > 1 && (c->hidden % blk || c->ffn % blk))
    return fail(err, errlen,
                "minilm: %s weights need hidden (%zu) and ffn (%zu) "
                "multiples of %zu",
                wgc_dtype_name(t), c->hidden, c->ffn, blk);
  if ((t == WGC_DTYPE_F16 || t == WGC_DTYPE_BF16) && c->hidden % 2)
    return fail(err, errlen, "minilm: %s weights need an even hidden (%zu)",
                wgc_dtype_name(t), c->hidden);
  return 0;
}

int minilm_model_alloc(minilm_model *m, wgc_context *ctx,
                       const minilm_config *cfg, wgc_dtype wtype, char *err,
                       size_t errlen) {
  if (!m || !ctx || !cfg)
    return fail(err, errlen, "minilm_model_alloc: NULL argument");
  if (config_ok(cfg, err, errlen) || wtype_ok(cfg, wtype, err, errlen))
    return 1;
  minilm_model t = {.cfg = *cfg, .ctx = ctx, .wtype = wtype};
  t.total = layout(&t);
  wgc_status st = wgc_alloc(ctx, t.total, &t.weights);
  if (st != WGC_OK)
    return fail(err, errlen, "minilm: %zu bytes of %s weights: %s: %s", t.total,
                wgc_dtype_name(wtype), wgc_status_string(st),
                wgc_last_error(ctx));
  *m = t;
  return 0;
}

int minilm_model_upload(minilm_model *m, const st_file *f,
                        const char *file_name, char *err, size_t errlen) {
  if (!m || !m->ctx || !m->weights || !f)
    return fail(err, errlen, "minilm_model_upload: NULL argument");
  const minilm_config *cfg = &m->cfg;
  wgc_context *ctx = m->ctx;
  size_t cap = WANTED_FIXED + WANTED_PER_LAYER * cfg->layers;
  wanted *w = calloc(cap, sizeof *w);
  if (!w)
    return fail(err, errlen, "minilm: out of host memory");
  size_t n = wanted_list(m, w);
  /* Every tensor checked before anything is uploaded. */
  for (size_t i = 0; i < n; i++) {
    const st_tensor *s = st_find(f, w[i].name);
    if (!s) {
      fail(err, errlen, "%s: tensor %s is missing", file_name, w[i].name);
      free(w);
      return 1;
    }
    int shape_ok = s->rank == w[i].rank;
    for (size_t d = 0; shape_ok && d < w[i].rank; d++)
      shape_ok = s->shape[d] == w[i].shape[d];
    if (s->dtype != ST_F32 || !shape_ok) {
      char got[96] = "", wantd[64] = "";
      size_t at = 0;
      for (size_t d = 0; d < s->rank && at < sizeof got; d++)
        at += (size_t)snprintf(got + at, sizeof got - at, "%s%llu",
                               d ? ", " : "", (unsigned long long)s->shape[d]);
      if (w[i].rank == 1)
        snprintf(wantd, sizeof wantd, "%llu",
                 (unsigned long long)w[i].shape[0]);
      else
        snprintf(wantd, sizeof wantd, "%llu, %llu",
                 (unsigned long long)w[i].shape[0],
                 (unsigned long long)w[i].shape[1]);
      fail(err, errlen, "%s: tensor %s is %s [%s], want F32 [%s]", file_name,
           w[i].name, st_dtype_name(s->dtype), got, wantd);
      free(w);
      return 1;
    }
  }
  /* Typed tensors go through one host buffer of the largest one's bytes
   * (an upload copies its source before it returns). */
  size_t most = 0;
  for (size_t i = 0; i < n; i++) {
    const st_tensor *s = st_find(f, w[i].name);
    size_t b = w[i].t == WGC_DTYPE_F32 ? 0 : tbytes(w[i].t, s->bytes / 4);
    most = b > most ? b : most;
  }
  uint8_t *conv = most ? malloc((most + 3) & ~(size_t)3) : NULL;
  wgc_status st = most && !conv ? WGC_ERR_OUT_OF_MEMORY : WGC_OK;
  for (size_t i = 0; st == WGC_OK && i < n; i++) {
    const st_tensor *s = st_find(f, w[i].name);
    if (w[i].t == WGC_DTYPE_F32) {
      st = wgc_upload(ctx, m->weights + w[i].at, s->data, (size_t)s->bytes);
      continue;
    }
    size_t elems = (size_t)s->bytes / 4, b = tbytes(w[i].t, elems);
    size_t padded = (b + 3) & ~(size_t)3; /* uploads move whole words */
    memset(conv + b, 0, padded - b);
    /* safetensors data may sit at any byte: wgc_quantize takes floats */
    const float *src = (const float *)s->data;
    float *copy = NULL;
    if ((uintptr_t)s->data % sizeof(float)) {
      copy = malloc(elems * sizeof *copy);
      if (!copy) {
        st = WGC_ERR_OUT_OF_MEMORY;
        break;
      }
      memcpy(copy, s->data, elems * sizeof *copy);
      src = copy;
    }
    st = wgc_quantize(src, conv, w[i].t, elems);
    free(copy);
    if (st == WGC_OK)
      st = wgc_upload(ctx, m->weights + w[i].at, conv, padded);
  }
  free(conv);
  free(w);
  if (st != WGC_OK)
    return fail(err, errlen,
                "%s: converting and uploading the %s weights: %s: %s",
                file_name, wgc_dtype_name(m->wtype), wgc_status_string(st),
                wgc_last_error(ctx));
  return 0;
}

int minilm_model_load(minilm_model *m, wgc_context *ctx,
                      const minilm_config *cfg, const st_file *f,
                      const char *file_name, wgc_dtype wtype, char *err,
                      size_t errlen) {
  if (!m || !ctx || !cfg || !f)
    return fail(err, errlen, "minilm_model_load: NULL argument");
  minilm_model t;
  if (minilm_model_alloc(&t, ctx, cfg, wtype, err, errlen))
    return 1;
  if (minilm_model_upload(&t, f, file_name, err, errlen)) {
    minilm_model_free(&t);
    return 1;
  }
  *m = t;
  return 0;
}

void minilm_model_free(minilm_model *m) {
  if (!m || !m->ctx)
    return;
  if (m->work)
    wgc_free(m->ctx, m->work);
  if (m->weights)
    wgc_free(m->ctx, m->weights);
  memset(m, 0, sizeof *m);
}

/* ---- forward pass ------------------------------------------------------- */

/* Where each activation lives in the work allocation, for rows padded
 * rows and batch sentences (bytes). */
typedef struct work_layout {
  size_t ids, pos_ids, type_ids, mask, pool; /* int32 / float per row */
  size_t x, t, qkv, ctxv, u;                 /* [rows, *] floats */
  size_t pooled, norms;                      /* [batch, hidden], [batch] */
  size_t eps;                                /* one float: 1e-12 */
  size_t bytes;
} work_layout;

static work_layout work_for(const minilm_config *c, size_t rows, size_t batch) {
  work_layout w;
  size_t at = 0, h = c->hidden;
#define TAKE(field, floats) (w.field = at, at += 4 * (floats))
  TAKE(ids, rows);
  TAKE(pos_ids, rows);
  TAKE(type_ids, rows);
  TAKE(mask, rows);
  TAKE(pool, rows);
  TAKE(x, rows * h);
  TAKE(t, rows * h);
  TAKE(qkv, rows * 3 * h);
  TAKE(ctxv, rows * h);
  TAKE(u, rows * c->ffn);
  TAKE(pooled, batch * h);
  TAKE(norms, batch);
  TAKE(eps, 1);
#undef TAKE
  w.bytes = at;
  return w;
}

static wgc_status grow_work(minilm_model *m, size_t rows, size_t batch) {
  if (m->work && rows <= m->cap_rows && batch <= m->cap_batch)
    return WGC_OK;
  if (rows < m->cap_rows)
    rows = m->cap_rows;
  if (batch < m->cap_batch)
    batch = m->cap_batch;
  wgc_ptr p = 0;
  wgc_status st = wgc_alloc(m->ctx, work_for(&m->cfg, rows, batch).bytes, &p);
  if (st != WGC_OK)
    return st;
  /* Work already queued on the old buffer finishes before it is freed. */
  if (m->work)
    wgc_free(m->ctx, m->work);
  m->work = p;
  m->cap_rows = rows;
  m->cap_batch = batch;
  return WGC_OK;
}

#define TRY(call)                                                              \
  do {                                                                         \
    wgc_status s_ = (call);                                                    \
    if (s_ != WGC_OK)                                                          \
      return s_;                                                               \
  } while (0)

/* The encoder over rows = batch * seq tokens already in the work buffer
 * (ids, positions, types, mask, pooling weights), to the unit vectors in
 * pooled. */
static wgc_status forward(minilm_model *m, const work_layout *wl, size_t batch,
                          size_t seq) {
  const minilm_config *c = &m->cfg;
  wgc_context *ctx = m->ctx;
  size_t h = c->hidden, rows = batch * seq, dh = h / c->heads;
  wgc_ptr W = m->weights, base = m->work;
#define WP(off) (W + (wgc_ptr)(off))
  wgc_ptr x = base + wl->x, t = base + wl->t, qkv = base + wl->qkv,
          cv = base + wl->ctxv, u = base + wl->u;
  size_t table[2] = {c->vocab, h};
  /* Embeddings: word + position + token type, then LayerNorm. */
  wgc_dtype wt = m->wtype, f32 = WGC_DTYPE_F32;
  TRY(wgc_gather_ex(ctx, WP(m->word), wt, table, 2, 0, base + wl->ids, rows, x,
                    f32));
  table[0] = c->positions;
  TRY(wgc_gather_ex(ctx, WP(m->pos), wt, table, 2, 0, base + wl->pos_ids, rows,
                    t, f32));
  TRY(wgc_binary(ctx, WGC_BINARY_ADD, x, t, x, rows * h));
  table[0] = c->type_vocab;
  TRY(wgc_gather_ex(ctx, WP(m->type), wt, table, 2, 0, base + wl->type_ids,
                    rows, t, f32));
  TRY(wgc_binary(ctx, WGC_BINARY_ADD, x, t, x, rows * h));
  size_t shape[2] = {rows, h};
  TRY(wgc_layer_norm(ctx, x, WP(m->emb_ln_g), WP(m->emb_ln_b), x, shape, 2, 1,
                     c->ln_eps));

  /* Q, K and V side by side in each row of qkv: [batch, seq, 3, heads,
   * dh], read in place by attention through strides. */
  wgc_attention_desc ad = {
      .batch = batch,
      .heads = c->heads,
      .seq_q = seq,
      .seq_kv = seq,
      .head_dim = dh,
      .scale = 1.0f / sqrtf((float)dh),
      .causal = WGC_CAUSAL_NONE,
      .mask = base + wl->mask,
      .mask_stride = {seq, 0, 0}, /* one row of keys per sentence */
      .q_stride = {seq * 3 * h, dh, 3 * h},
      .k_stride = {seq * 3 * h, dh, 3 * h},
      .v_stride = {seq * 3 * h, dh, 3 * h},
      .o_stride = {seq * h, dh, h},
  };
  for (size_t l = 0; l < c->layers; l++) {
    const minilm_layer_offsets *L = &m->layer[l];
    wgc_gemm_epilogue ep = {.bias = WP(L->b_qkv), .b_type = wt};
    TRY(wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, rows, 3 * h, h,
                    1.0f, x, h, WP(L->w_qkv), h, 0.0f, qkv, 3 * h, &ep));
    TRY(wgc_attention(ctx, &ad, qkv, qkv + 4 * h, qkv + 8 * h, cv));
    /* x := ctx Wo^T + bo + x: the residual is the GEMM's beta*C. */
    ep.bias = WP(L->b_o);
    TRY(wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, rows, h, h,
                    1.0f, cv, h, WP(L->w_o), h, 1.0f, x, h, &ep));
    TRY(wgc_layer_norm(ctx, x, WP(L->ln1_g), WP(L->ln1_b), x, shape, 2, 1,
                       c->ln_eps));
    /* BERT's "gelu" is the erf form, as WGC_ACTIVATION_GELU. */
    wgc_gemm_epilogue up = {
        .bias = WP(L->b_i), .activation = WGC_ACTIVATION_GELU, .b_type = wt};
    TRY(wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, rows, c->ffn,
                    h, 1.0f, x, h, WP(L->w_i), h, 0.0f, u, c->ffn, &up));
    ep.bias = WP(L->b_out);
    TRY(wgc_gemm_ex(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_TRANS, rows, h,
                    c->ffn, 1.0f, u, c->ffn, WP(L->w_out), c->ffn, 1.0f, x, h,
                    &ep));
    TRY(wgc_layer_norm(ctx, x, WP(L->ln2_g), WP(L->ln2_b), x, shape, 2, 1,
                       c->ln_eps));
  }
  /* Mean pooling: per sentence, [1, seq] weights (1/len on its tokens, 0 on
   * padding) times its [seq, hidden] rows. */
  wgc_ptr pooled = base + wl->pooled, norms = base + wl->norms;
  TRY(wgc_gemm_batched(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 1, h,
                       seq, 1.0f, base + wl->pool, seq, seq, x, h, seq * h,
                       0.0f, pooled, h, h, batch));
  /* L2 normalisation, as sentence-transformers' Normalize (torch's
   * F.normalize): x / max(|x|, 1e-12), so a zero vector stays zero. */
  size_t pshape[2] = {batch, h}, nshape[2] = {batch, 1};
  TRY(wgc_reduce(ctx, WGC_REDUCE_L2, pooled, norms, pshape, 2, 1));
  TRY(wgc_binary_broadcast(ctx, WGC_BINARY_MAX, norms, nshape, 2,
                           base + wl->eps, NULL, 0, norms));
  TRY(wgc_binary_broadcast(ctx, WGC_BINARY_DIV, pooled, pshape, 2, norms,
                           nshape, 2, pooled));
#undef WP
  return WGC_OK;
}

wgc_status minilm_compile_ahead(minilm_model *m, size_t batch, size_t seq,
                                minilm_done_fn done, void *user, char *err,
                                size_t errlen) {
  if (!m || !m->ctx || !m->weights) {
    fail(err, errlen, "minilm_compile_ahead: no model");
    return WGC_ERR_INVALID_ARGUMENT;
  }
  if (!batch || !seq || seq > m->cfg.max_seq) {
    fail(err, errlen,
         "minilm_compile_ahead: %zu sentences of %zu tokens, want at least "
         "one of 1 to %zu",
         batch, seq, m->cfg.max_seq);
    return WGC_ERR_INVALID_ARGUMENT;
  }
  wgc_status st = grow_work(m, batch * seq, batch);
  if (st == WGC_OK)
    st = wgc_compile_begin(m->ctx);
  if (st == WGC_OK) {
    work_layout wl = work_for(&m->cfg, m->cap_rows, m->cap_batch);
    st = forward(m, &wl, batch, seq);
    wgc_status end = done ? wgc_compile_end_async(m->ctx, done, user)
                          : wgc_compile_end(m->ctx);
    st = st != WGC_OK ? st : end;
  }
  if (st != WGC_OK)
    fail(err, errlen, "minilm_compile_ahead: %s: %s", wgc_status_string(st),
         wgc_last_error(m->ctx));
  return st;
}

wgc_status minilm_embed_async(minilm_model *m, const int32_t *const *ids,
                              const size_t *lens, size_t n, float *out,
                              minilm_done_fn done, void *user, char *err,
                              size_t errlen) {
  if (!m || !m->ctx || !m->weights || !done || (n && (!ids || !lens || !out))) {
    fail(err, errlen, "minilm_embed_async: NULL argument");
    return WGC_ERR_INVALID_ARGUMENT;
  }
  const minilm_config *c = &m->cfg;
  size_t seq = 0;
  for (size_t i = 0; i < n; i++) {
    if (lens[i] == 0 || lens[i] > c->max_seq) {
      fail(err, errlen,
           "minilm_embed_async: sentence %zu has %zu tokens, "
           "want 1 to %zu",
           i, lens[i], c->max_seq);
      return WGC_ERR_INVALID_ARGUMENT;
    }
    if (!ids[i]) {
      fail(err, errlen, "minilm_embed_async: sentence %zu has NULL ids", i);
      return WGC_ERR_INVALID_ARGUMENT;
    }
    for (size_t j = 0; j < lens[i]; j++)
      if (ids[i][j] < 0 || (size_t)ids[i][j] >= c->vocab) {
        fail(err, errlen,
             "minilm_embed_async: sentence %zu token %zu is %ld, "
             "outside the vocabulary of %zu",
             i, j, (long)ids[i][j], c->vocab);
        return WGC_ERR_INVALID_ARGUMENT;
      }
    if (lens[i] > seq)
      seq = lens[i];
  }
  if (n == 0)
    return wgc_download_async(m->ctx, out, 0, 0, done, user);
  size_t rows = n * seq;
  /* Host side of the per-token inputs: ids (0 = [PAD] on padding),
   * positions, token types (all 0: one segment), the additive key mask and
   * the pooling weights. */
  int32_t *host = calloc(5 * rows, 4);
  if (!host) {
    fail(err, errlen, "minilm_embed_async: out of host memory");
    return WGC_ERR_OUT_OF_MEMORY;
  }
  int32_t *hid = host, *hpos = host + rows, *htype = host + 2 * rows;
  float *hmask = (float *)(host + 3 * rows),
        *hpool = (float *)(host + 4 * rows);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < seq; j++) {
      size_t r = i * seq + j;
      int real = j < lens[i];
      hid[r] = real ? ids[i][j] : 0;
      hpos[r] = (int32_t)j;
      htype[r] = 0;
      hmask[r] = real ? 0.0f : -INFINITY;
      hpool[r] = real ? 1.0f / (float)lens[i] : 0.0f;
    }
  wgc_status st = grow_work(m, rows, n);
  work_layout wl = work_for(c, m->cap_rows, m->cap_batch);
  if (st == WGC_OK)
    st = wgc_upload(m->ctx, m->work + wl.ids, hid, 4 * rows);
  if (st == WGC_OK)
    st = wgc_upload(m->ctx, m->work + wl.pos_ids, hpos, 4 * rows);
  if (st == WGC_OK)
    st = wgc_upload(m->ctx, m->work + wl.type_ids, htype, 4 * rows);
  if (st == WGC_OK)
    st = wgc_upload(m->ctx, m->work + wl.mask, hmask, 4 * rows);
  if (st == WGC_OK)
    st = wgc_upload(m->ctx, m->work + wl.pool, hpool, 4 * rows);
  const float eps = 1e-12f;
  if (st == WGC_OK)
    st = wgc_upload(m->ctx, m->work + wl.eps, &eps, sizeof eps);
  free(host);
  if (st == WGC_OK)
    st = forward(m, &wl, n, seq);
  if (st == WGC_OK)
    st = wgc_download_async(m->ctx, out, m->work + wl.pooled,
                            n * c->hidden * sizeof(float), done, user);
  if (st != WGC_OK)
    fail(err, errlen, "minilm_embed_async: %s: %s", wgc_status_string(st),
         wgc_last_error(m->ctx));
  return st;
}
