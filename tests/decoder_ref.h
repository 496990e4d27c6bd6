/* The decoder of examples/gpt_model.h in float64, written from the model's
 * definition (GPT-2: pre-norm blocks, causal attention, GELU-tanh MLP), not
 * from the wgc calls: it recomputes the whole prefix at every step, with no
 * KV cache. */
#ifndef WGC_TEST_DECODER_REF_H
#define WGC_TEST_DECODER_REF_H

#include "../examples/gpt_model.h"

/* logits[vocab] of the last of the n tokens ids (positions 0..n-1). */
void ref_decoder_logits(const gpt_config *c, const float *weights,
                        const int32_t *ids, size_t n, double *logits);

#endif
