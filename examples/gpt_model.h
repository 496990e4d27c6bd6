/* A small GPT-2-style decoder built only from wgc calls: token and position
 * embeddings, pre-norm blocks (layer norm, causal self-attention over a KV
 * cache, layer norm, GELU-tanh MLP), a final layer norm and a projection to
 * byte logits, then argmax. The weights come from a fixed-seed generator:
 * the model is untrained, its text meaningless, its arithmetic real.
 *
 * examples/gpt.c runs it (make demo), tests/test_decoder.c checks it against
 * a float64 model, and web/gpt.js is the same model in JavaScript. */
#ifndef WGC_EXAMPLES_GPT_MODEL_H
#define WGC_EXAMPLES_GPT_MODEL_H

#include "wgc.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gpt_config {
  size_t vocab;   /* tokens are bytes: 256 */
  size_t d_model; /* width of the residual stream */
  size_t heads;   /* d_model / heads is the head size */
  size_t layers;
  size_t d_ff;    /* MLP width, 4 * d_model in GPT-2 */
  size_t context; /* positions the KV cache holds */
  uint32_t seed;  /* of the weight generator */
} gpt_config;

/* Where each weight lives, as element offsets into one float array (on the
 * host), or byte offsets into one allocation (on the device). Matrices are
 * row-major [in, out], so a linear layer is x[T, in] * W[in, out] + b[out];
 * on the device, typed weights (see gpt_model_init_typed) are stored
 * transposed, [out, in]. */
typedef struct gpt_layer_offsets {
  size_t ln1_g, ln1_b;
  size_t w_qkv, b_qkv; /* [d, 3d]: the Q, K and V columns side by side */
  size_t w_o, b_o;     /* [d, d] */
  size_t ln2_g, ln2_b;
  size_t w_fc, b_fc;     /* [d, d_ff] */
  size_t w_proj, b_proj; /* [d_ff, d] */
} gpt_layer_offsets;

enum { GPT_MAX_LAYERS = 8 };

typedef struct gpt_offsets {
  size_t wte; /* [vocab, d]: token embeddings, gathered by token id */
  size_t wpe; /* [context, d]: position embeddings */
  gpt_layer_offsets layer[GPT_MAX_LAYERS];
  size_t lnf_g, lnf_b;
  size_t w_head, b_head; /* [d, vocab], [vocab] */
  size_t total;          /* floats (host) or bytes (device) in all */
} gpt_offsets;

/* False (with a reason) when the config cannot be run. */
int gpt_config_valid(const gpt_config *c, const char **why);
gpt_offsets gpt_layout(const gpt_config *c);
/* False (with a reason) when the linear layers' weights cannot be of type
 * t: f32, f16, bf16, q8_0 and q4_0 are taken, the block types with
 * d_model and d_ff multiples of 32 (GEMM's k runs along the blocks). */
int gpt_weight_type_valid(const gpt_config *c, wgc_dtype t, const char **why);
/* The weights, total floats from the config's seed: the same numbers in C
 * and in web/gpt.js (mulberry32, 24-bit uniforms, float32 products). */
float *gpt_weights_new(const gpt_config *c);
/* A copy of weights (gpt_layout's floats) whose linear matrices went
 * through type t and back, as gpt_model_init_typed stores them: the f32
 * model that a typed model computes exactly. NULL when out of memory or
 * t is not valid. */
float *gpt_weights_typed(const gpt_config *c, const float *weights,
                         wgc_dtype t);
/* The largest |logit| difference two backends may show, from wgc.h's GEMM
 * bound (see gpt_model.c); per_backend: the bound of one backend against
 * the exact result instead. */
double gpt_logit_tolerance(const gpt_config *c, const float *weights,
                           int per_backend);

/* A model on one context: the weights in one allocation, the activations
 * and the per-layer KV caches. */
typedef struct gpt_model {
  gpt_config cfg;
  gpt_offsets off; /* the host's float array */
  gpt_offsets dev; /* bytes of weights; dev.total is their device memory */
  wgc_dtype wtype; /* of the linear layers' matrices (the GEMMs' B) */
  wgc_context *ctx;
  wgc_ptr weights;
  wgc_ptr tokens; /* int32 [context]: the prompt, then each argmax */
  wgc_ptr x;      /* [context, d]: the residual stream of the new tokens */
  wgc_ptr h;      /* [context, d]: layer-norm output */
  wgc_ptr att;    /* [context, d]: attention output, heads side by side */
  wgc_ptr u;      /* [context, d_ff]: MLP hidden */
  wgc_ptr qkv[GPT_MAX_LAYERS]; /* [context, 3d] per layer: Q, K, V rows */
  wgc_ptr hf;                  /* [d]: the last token's final norm */
  wgc_ptr logits;              /* [vocab] */
} gpt_model;

/* Allocates on ctx and uploads weights (gpt_layout(cfg).total floats). On
 * failure everything allocated is freed; wgc_last_error(ctx) says why. */
wgc_status gpt_model_init(gpt_model *m, wgc_context *ctx, const gpt_config *cfg,
                          const float *weights);
/* The same with the linear layers' matrices (QKV, attention output, MLP
 * up and down, the LM head) converted at load to wtype with wgc_quantize,
 * stored [out, in] (k contiguous, as the block types need) and multiplied
 * with WGC_TRANS; embeddings, biases and layer norms stay f32. f32 is
 * gpt_model_init. WGC_ERR_INVALID_ARGUMENT unless gpt_weight_type_valid. */
wgc_status gpt_model_init_typed(gpt_model *m, wgc_context *ctx,
                                const gpt_config *cfg, const float *weights,
                                wgc_dtype wtype);
void gpt_model_free(gpt_model *m);

/* Uploads n token ids as positions pos..pos+n-1 (the prompt). */
wgc_status gpt_set_tokens(gpt_model *m, size_t pos, const int32_t *ids,
                          size_t n);
/* Runs the n tokens at positions pos..pos+n-1 through the model (their K
 * and V join the cache; earlier positions must be in it already) and
 * leaves the logits of the last one in m->logits. With choose set, their
 * argmax becomes tokens[pos + n], the next step's input (when pos + n <
 * context); a chunk of a prompt that more prompt follows passes 0. Only
 * enqueues. WGC_ERR_INVALID_ARGUMENT unless 1 <= n <= context - pos. */
wgc_status gpt_forward(gpt_model *m, size_t pos, size_t n, int choose);

#endif
