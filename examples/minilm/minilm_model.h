/* all-MiniLM-L6-v2 (sentence-transformers) as wgc calls: a BERT encoder
 * (word, position and token-type embeddings, LayerNorm, six post-norm
 * layers of bidirectional attention and a GELU FFN), mean pooling over the
 * real tokens and L2 normalisation, with the real weights read from the
 * model's safetensors file.
 *
 * A batch of sentences of different lengths is one pass: the rows are
 * padded to the longest, and an additive mask (-inf on padding keys) and
 * the pooling weights (0 on padding) keep padding out of every result.
 *
 * Only asynchronous calls are used (wgc_download_async and a callback), so
 * the same code runs where nothing may wait (the browser). Natively the
 * caller drives it with wgc_poll or wgc_synchronize.
 *
 * examples/minilm/minilm.c runs it from the command line; tests/
 * test_minilm.c checks it against sentence-transformers on PyTorch. */
#ifndef WGC_EXAMPLES_MINILM_MODEL_H
#define WGC_EXAMPLES_MINILM_MODEL_H

#include "safetensors.h"
#include "wgc.h"

#include <stddef.h>
#include <stdint.h>

typedef struct minilm_config {
  size_t vocab;      /* vocab_size: 30522 */
  size_t hidden;     /* hidden_size: 384 */
  size_t heads;      /* num_attention_heads: 12 */
  size_t layers;     /* num_hidden_layers: 6 */
  size_t ffn;        /* intermediate_size: 1536 */
  size_t positions;  /* max_position_embeddings: 512 */
  size_t type_vocab; /* type_vocab_size: 2 */
  size_t max_seq;    /* sentence_bert_config.json's max_seq_length: 256 */
  float ln_eps;      /* layer_norm_eps: 1e-12 */
} minilm_config;

enum { MINILM_MAX_LAYERS = 24 };

/* The values of all-MiniLM-L6-v2's config.json and sentence_bert_config. */
minilm_config minilm_config_default(void);
/* Reads config.json's sizes and layer_norm_eps (text of len bytes) over
 * cfg, and checks the model is one this code runs (hidden_act "gelu",
 * absolute positions, heads dividing hidden). Non-zero with a message
 * naming name on failure; cfg is then unchanged. */
int minilm_config_parse(minilm_config *cfg, const char *text, size_t len,
                        const char *name, char *err, size_t errlen);
/* Reads max_seq_length from sentence_bert_config.json's text. */
int minilm_seq_config_parse(minilm_config *cfg, const char *text, size_t len,
                            const char *name, char *err, size_t errlen);

/* Byte offsets of each weight in the model's one device allocation. The
 * linear layers' weights and the embedding tables are of the model's
 * weight type; biases and LayerNorm parameters stay f32. */
typedef struct minilm_layer_offsets {
  size_t w_qkv, b_qkv; /* [3*hidden, hidden], [3*hidden]: query, key and
                          value weights stacked at load, one GEMM */
  size_t w_o, b_o;     /* attention.output.dense */
  size_t ln1_g, ln1_b; /* attention.output.LayerNorm */
  size_t w_i, b_i;     /* intermediate.dense [ffn, hidden] */
  size_t w_out, b_out; /* output.dense [hidden, ffn] */
  size_t ln2_g, ln2_b; /* output.LayerNorm */
} minilm_layer_offsets;

typedef struct minilm_model {
  minilm_config cfg;
  wgc_context *ctx;
  wgc_ptr weights; /* every weight, at the offsets below */
  wgc_dtype wtype; /* of the linear weights and the embedding tables */
  size_t word, pos, type, emb_ln_g, emb_ln_b;
  minilm_layer_offsets layer[MINILM_MAX_LAYERS];
  size_t total; /* bytes in weights */
  /* Activations for up to cap_rows rows (sentences * padded length) and
   * cap_batch sentences, grown by a larger batch. Freeing them while work
   * still uses them is safe (wgc_free), so they are replaced at once. */
  wgc_ptr work;
  size_t cap_rows, cap_batch;
} minilm_model;

/* Checks every tensor the model needs in f (name, f32, shape from cfg;
 * messages name file_name and the tensor), then uploads them into one
 * allocation on ctx, the linear weights and embedding tables converted to
 * wtype (F32, F16, BF16, Q8_0 or Q4_0; the block types need hidden and
 * ffn multiples of 32, the 2-byte ones an even hidden). They are
 * converted on the host, one tensor at a time, with wgc_quantize: the
 * device never holds an f32 copy and only the narrower bytes travel.
 * Non-zero with a message on failure, m untouched and nothing left
 * allocated. Only enqueues; f may be closed on return. */
int minilm_model_load(minilm_model *m, wgc_context *ctx,
                      const minilm_config *cfg, const st_file *f,
                      const char *file_name, wgc_dtype wtype, char *err,
                      size_t errlen);
/* minilm_model_load in two steps: the weights' device memory for cfg and
 * wtype (nothing uploaded yet), then the checked tensors of f uploaded
 * into it, so that a program can compile the kernels ahead
 * (minilm_compile_ahead) while the weights are still on their way. On
 * failure the first leaves m untouched, the second leaves m allocated
 * (minilm_model_free it). */
int minilm_model_alloc(minilm_model *m, wgc_context *ctx,
                       const minilm_config *cfg, wgc_dtype wtype, char *err,
                       size_t errlen);
int minilm_model_upload(minilm_model *m, const st_file *f,
                        const char *file_name, char *err, size_t errlen);
void minilm_model_free(minilm_model *m);
/* Natively: reads dir/config.json, dir/sentence_bert_config.json and
 * dir/model.safetensors (the folder tools/bootstrap.sh model fills) and
 * loads the model as minilm_model_load. Messages name the file. */
int minilm_model_load_dir(minilm_model *m, wgc_context *ctx, const char *dir,
                          wgc_dtype wtype, char *err, size_t errlen);

typedef void (*minilm_done_fn)(wgc_status status, void *user);

/* Embeds n sentences, sentence i being the lens[i] token ids ids[i]
 * ([CLS] ... [SEP], at most cfg.max_seq, each below cfg.vocab), in one
 * pass, and writes n * hidden floats (unit vectors) to out, then calls
 * done (from wgc_poll / wgc_synchronize natively, the event loop in the
 * browser); out must stay valid until then. Returns WGC_OK when the work
 * was enqueued (done then fires exactly once), otherwise the failing
 * status, with a message in err (done never fires). */
wgc_status minilm_embed_async(minilm_model *m, const int32_t *const *ids,
                              const size_t *lens, size_t n, float *out,
                              minilm_done_fn done, void *user, char *err,
                              size_t errlen);

/* Compiles ahead (wgc_compile_begin) the kernels of one pass over batch
 * sentences padded to seq tokens, on an allocated model whose weights may
 * still be on their way; done (NULL: none) fires once they are compiled
 * (natively they are when this returns). Work buffers for that size are
 * allocated; nothing runs. */
wgc_status minilm_compile_ahead(minilm_model *m, size_t batch, size_t seq,
                                minilm_done_fn done, void *user, char *err,
                                size_t errlen);

#endif
