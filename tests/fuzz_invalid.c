/* Invalid calls for the fuzzer: each must return WGC_ERR_INVALID_ARGUMENT
 * on both backends, leave a wgc_last_error sentence, and change nothing
 * (the step's allocations are checked byte for byte afterwards). */
#include "fuzz_step.h"

#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
    "unary bad op",
    "binary bad op",
    "reduce bad op",
    "reduce rank 0",
    "reduce rank 9",
    "reduce axis == rank",
    "reduce max over an empty axis",
    "gemm bad layout",
    "gemm bad transpose",
    "gemm lda too small",
    "gemm C overlaps A",
    "gemm_batched C batches overlap",
    "conv NULL desc",
    "conv groups do not divide c",
    "conv r = 0",
    "conv filter larger than padded input",
    "conv bias overlaps output",
    "attention NULL desc",
    "attention bad scale",
    "attention heads % heads_kv",
    "attention bad causal",
    "attention o overlaps q",
    "unary output overlaps input",
    "binary out overlaps b",
    "broadcast incompatible shapes",
    "broadcast rank 9",
    "copy overlapping",
    "copy identical ranges",
    "copy misaligned",
    "upload NULL source",
    "upload misaligned",
    "upload size not a multiple of 4",
    "upload overrun",
    "download overrun",
    "download NULL destination",
    "unary stale input",
    "unary wild input",
    "unary footprint overrun",
    "free inside an allocation",
    "free stale",
    "unary misaligned input",
    "gemm null A",
    "reduce NULL shape",
    "broadcast out overlaps a",
    "binary b overrun",
    "download_async NULL destination",
    "conv input overrun",
    "attention k overrun",
    "alloc NULL out-pointer",
    "alloc 0 bytes",
    "softmax axis == rank",
    "layer_norm bad epsilon",
    "rms_norm scale overlaps output",
    "log_softmax output overlaps input",
    "rotary odd rotary_dim",
    "rotary rotary_dim > head_dim",
    "rotary NULL desc",
    "rotary sin_cache overrun",
    "copy_strided destination overlaps itself",
    "copy_strided spans overlap",
    "copy_strided rank 9",
    "gather axis == rank",
    "gather output overlaps indices",
    "gather indices overrun",
    "where incompatible shapes",
    "where out overlaps cond of another shape",
    "reduce_axes repeated axis",
    "reduce_axes no axes",
    "reduce_axes axis out of range",
    "argmax axis of length 0",
    "unary_params bad op",
    "gemm_ex bias overlaps C",
    "gemm_ex bad activation",
    "gemm_ex bad bias_kind",
    "gemm_batched_ex misaligned bias",
    "layer_norm bias overrun",
    "rotary output overlaps input partially",
    "argmin output overlaps input",
    "attention bad softcap",
    "attention head_dim 0 with head_dim_v",
    "attention o overlaps the mask",
    "cast misaligned f16 src",
    "cast partial q4_0 block",
    "cast dst overlaps src",
    "cast bad dst_type",
    "gather_ex i32 table",
    "gather_ex q8_0 output",
    "gather_ex q4_0 rows of partial blocks",
    "gather_ex misaligned f16 output",
};
/* A word the error of each call from "softmax axis == rank" on must hold:
 * the parameter it names. */
static const char *const param_words[] = {"axis",
                                          "epsilon",
                                          "scale",
                                          "output",
                                          "rotary_dim",
                                          "rotary_dim",
                                          "d is NULL",
                                          "_cache",
                                          "dst_strides",
                                          "src",
                                          "rank",
                                          "axis",
                                          "output",
                                          "indices",
                                          "shape",
                                          "out",
                                          "axes",
                                          "naxes",
                                          "axes",
                                          "shape",
                                          "op",
                                          "ep->bias",
                                          "ep->activation",
                                          "ep->bias_kind",
                                          "ep->bias",
                                          "bias",
                                          "output",
                                          "output",
                                          "softcap",
                                          "head_dim",
                                          "mask",
                                          "f16",
                                          "q4_0",
                                          "dst",
                                          "dst_type",
                                          "i32",
                                          "q8_0",
                                          "q4_0",
                                          "f16"};
#define FIRST_NAMED 50
_Static_assert(sizeof names / sizeof *names ==
                   FIRST_NAMED + sizeof param_words / sizeof *param_words,
               "a parameter word for each named call");
const int fz_invalid_count = (int)(sizeof names / sizeof *names);

static int bad_fired;
static void never(wgc_status st, void *user) {
  (void)st;
  (void)user;
  bad_fired++;
}
int fz_invalid_callbacks_fired(void);
int fz_invalid_callbacks_fired(void) { return bad_fired; }

bool fz_issue_invalid(fz_env *e, fz_pending *p, char *msg, size_t size) {
  const fz_step *s = &p->s;
  size_t n0 = 16 + fz_below(&p->data, 200), n1 = 16 + fz_below(&p->data, 200);
  int V0 = fz_add_opnd(p, "victim0", n0, false, -1);
  int V1 = fz_add_opnd(p, "victim1", n1, false, -1);
  fz_place(p);
  fz_fill(&p->data, fz_in(p, 0, V0), n0, s->dist, 1, s->sp, s->spk);
  fz_fill(&p->data, fz_in(p, 0, V1), n1, s->dist, 1, s->sp, s->spk);
  for (int a = 0; a < p->nalloc; a++) {
    fz_alloc *al = &p->al[a];
    for (int b = 0; b < 2; b++)
      if (wgc_alloc(e->ctx[b], al->n * 4, &al->p[b]) != WGC_OK ||
          wgc_upload(e->ctx[b], al->p[b], al->init, al->n * 4) != WGC_OK) {
        snprintf(msg, size, "%s: alloc/upload failed: %s", fz_backend[b],
                 wgc_last_error(e->ctx[b]));
        return false;
      }
  }
  wgc_ptr stale[2];
  bool have_stale = fz_stale(&p->data, stale);
  wgc_ptr wild = wild_address(s->dseed);
  int op = s->op % fz_invalid_count;
  float host[8] = {0};
  size_t n_all0 = p->al[p->op[V0].alloc].n;
  float *big = calloc(n_all0 + 8, sizeof(float));
  wgc_status st[2];
  for (int b = 0; b < 2; b++) {
    wgc_context *c = e->ctx[b];
    wgc_ptr v0 = fz_addr(p, V0, b), v1 = fz_addr(p, V1, b);
    wgc_ptr base0 = p->al[p->op[V0].alloc].p[b];
    size_t sh3[3] = {3, 0, 2}, sh9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 2};
    size_t s3 = 3, s4 = 4;
    wgc_conv2d_desc cd = {
        .n = 1, .c = 2, .h = 3, .w = 3, .k = 2, .r = 2, .s = 2};
    wgc_attention_desc ad = {.batch = 1,
                             .heads = 2,
                             .seq_q = 2,
                             .seq_kv = 2,
                             .head_dim = 2,
                             .scale = 0.5f};
    switch (op) {
    case 0:
      st[b] = wgc_unary(c, (wgc_unary_op)(WGC_UNARY_OP_COUNT + s->dseed % 50),
                        v0, v1, 4);
      break;
    case 1:
      st[b] = wgc_binary(c, (wgc_binary_op)(7 + s->dseed % 50), v0, v0, v1, 4);
      break;
    case 2:
      st[b] =
          wgc_reduce(c, (wgc_reduce_op)WGC_REDUCE_OP_COUNT, v0, v1, &s4, 1, 0);
      break;
    case 3:
      st[b] = wgc_reduce(c, WGC_REDUCE_SUM, v0, v1, &s4, 0, 0);
      break;
    case 4:
      st[b] = wgc_reduce(c, WGC_REDUCE_SUM, v0, v1, sh9, 9, 0);
      break;
    case 5:
      st[b] = wgc_reduce(c, WGC_REDUCE_SUM, v0, v1, &s4, 1, 1);
      break;
    case 6:
      st[b] = wgc_reduce(c, s->dseed % 2 ? WGC_REDUCE_MAX : WGC_REDUCE_MEAN, v0,
                         v1, sh3, 3, 1);
      break;
    case 7:
      st[b] = wgc_gemm(c, (wgc_layout)2, WGC_NO_TRANS, WGC_NO_TRANS, 2, 2, 2, 1,
                       v0, 2, v0, 2, 0, v1, 2);
      break;
    case 8:
      st[b] = wgc_gemm(c, WGC_ROW_MAJOR, (wgc_transpose)3, WGC_NO_TRANS, 2, 2,
                       2, 1, v0, 2, v0, 2, 0, v1, 2);
      break;
    case 9:
      st[b] = wgc_gemm(c, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 3, 2, 4, 1,
                       v0, 3, v0, 2, 0, v1, 2);
      break;
    case 10:
      st[b] = wgc_gemm(c, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 2, 2, 2, 1,
                       v0, 2, v1, 2, 0, v0 + 4, 2);
      break;
    case 11:
      st[b] = wgc_gemm_batched(c, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 2,
                               2, 2, 1, v0, 2, 4, v0, 2, 4, 0, v1, 2, 1, 2);
      break;
    case 12:
      st[b] = wgc_conv2d(c, NULL, v0, v0, 0, v1);
      break;
    case 13:
      cd.c = 3;
      cd.groups = 2;
      st[b] = wgc_conv2d(c, &cd, v0, v0, 0, v1);
      break;
    case 14:
      cd.r = 0;
      st[b] = wgc_conv2d(c, &cd, v0, v0, 0, v1);
      break;
    case 15:
      cd.r = 5;
      st[b] = wgc_conv2d(c, &cd, v0, v0, 0, v1);
      break;
    case 16: /* output [1,2,2,2] at v1; the bias [2] inside it */
      st[b] = wgc_conv2d(c, &cd, v0, v0, v1 + 8, v1);
      break;
    case 17:
      st[b] = wgc_attention(c, NULL, v0, v0, v0, v1);
      break;
    case 18: {
      static const float bad[4] = {0.0f, -1.0f, NAN, INFINITY};
      ad.scale = bad[s->dseed % 4];
      st[b] = wgc_attention(c, &ad, v0, v0, v0, v1);
      break;
    }
    case 19:
      ad.heads = 3;
      ad.heads_kv = 2;
      st[b] = wgc_attention(c, &ad, v0, v0, v0, v1);
      break;
    case 20:
      ad.causal = (wgc_causal)3;
      st[b] = wgc_attention(c, &ad, v0, v0, v0, v1);
      break;
    case 21:
      st[b] = wgc_attention(c, &ad, v0, v1, v1, v0 + 4);
      break;
    case 22:
      st[b] = wgc_unary(c, WGC_UNARY_NEG, v0, v0 + 4, 8);
      break;
    case 23:
      st[b] = wgc_binary(c, WGC_BINARY_ADD, v1, v0, v0 + 4, 8);
      break;
    case 24:
      st[b] =
          wgc_binary_broadcast(c, WGC_BINARY_ADD, v0, &s3, 1, v0, &s4, 1, v1);
      break;
    case 25:
      st[b] =
          wgc_binary_broadcast(c, WGC_BINARY_ADD, v0, sh9, 9, v0, &s4, 1, v1);
      break;
    case 26:
      st[b] = wgc_copy(c, v0 + 4, v0, 16);
      break;
    case 27:
      st[b] = wgc_copy(c, v0, v0, 16);
      break;
    case 28:
      st[b] = wgc_copy(c, v1, v0 + 2, 8);
      break;
    case 29:
      st[b] = wgc_upload(c, v0, NULL, 8);
      break;
    case 30:
      st[b] = wgc_upload(c, v0 + 2, host, 8);
      break;
    case 31:
      st[b] = wgc_upload(c, v0, host, 6);
      break;
    case 32:
      st[b] = wgc_upload(c, base0, big, p->al[p->op[V0].alloc].n * 4 + 4);
      break;
    case 33:
      st[b] = wgc_download(c, big, base0, p->al[p->op[V0].alloc].n * 4 + 4);
      break;
    case 34:
      st[b] = wgc_download(c, NULL, v0, 8);
      break;
    case 35:
      st[b] = have_stale ? wgc_unary(c, WGC_UNARY_NEG, stale[b], v1, 1)
                         : wgc_unary(c, WGC_UNARY_NEG, wild, v1, 1);
      break;
    case 36:
      st[b] = wgc_unary(c, WGC_UNARY_NEG, wild, v1, 2);
      break;
    case 37:
      st[b] =
          wgc_unary(c, WGC_UNARY_NEG, base0, v1, p->al[p->op[V0].alloc].n + 1);
      break;
    case 38:
      st[b] = wgc_free(c, base0 + 4);
      break;
    case 39:
      st[b] = have_stale ? wgc_free(c, stale[b]) : wgc_free(c, wild);
      break;
    case 40:
      st[b] = wgc_unary(c, WGC_UNARY_ABS, v0 + 2, v1, 2);
      break;
    case 41:
      st[b] = wgc_gemm(c, WGC_COL_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 2, 2, 2, 1,
                       0, 2, v0, 2, 0, v1, 2);
      break;
    case 42:
      st[b] = wgc_reduce(c, WGC_REDUCE_SUM, v0, v1, NULL, 2, 0);
      break;
    case 43:
      st[b] = wgc_binary_broadcast(c, WGC_BINARY_MUL, v0, &s4, 1, v1, &s4, 1,
                                   v0 + 8);
      break;
    case 44: {
      wgc_ptr end1 = p->al[p->op[V1].alloc].p[b] +
                     4 * (wgc_ptr)(p->al[p->op[V1].alloc].n - 2);
      st[b] = wgc_binary(c, WGC_BINARY_SUB, v0, end1, v0, 4);
      break;
    }
    case 45:
      st[b] = wgc_download_async(c, NULL, v0, 8, never, NULL);
      break;
    case 46:
      cd.h = n_all0; /* input 6*n floats overrun victim0's n */
      st[b] = wgc_conv2d(c, &cd, v0, v1, 0, v1 + 16);
      break;
    case 47:
      ad.seq_kv = n_all0; /* k [1,2,n,2] overruns victim0's n */
      st[b] = wgc_attention(c, &ad, v1, base0, v1, v1 + 8);
      break;
    case 48:
      st[b] = wgc_alloc(c, 16, NULL);
      break;
    case 50: {
      size_t sh[2] = {2, 3};
      st[b] = wgc_softmax(c, v0, v1, sh, 2, 2);
      break;
    }
    case 51: {
      static const float bad[3] = {-1e-5f, NAN, INFINITY};
      size_t sh[2] = {2, 3};
      st[b] = wgc_layer_norm(c, v0, 0, 0, v1, sh, 2, 1, bad[s->dseed % 3]);
      break;
    }
    case 52: {
      size_t sh[2] = {2, 3};
      st[b] = wgc_rms_norm(c, v0, v1 + 8, v1, sh, 2, 1, 1e-5f);
      break;
    }
    case 53: {
      size_t sh[2] = {2, 3};
      st[b] = wgc_log_softmax(c, v0, v0 + 4, sh, 2, 1);
      break;
    }
    case 54:
    case 55:
    case 56:
    case 57:
    case 76: {
      wgc_rotary_desc rd = {
          .batch = 1, .seq = 2, .heads = 1, .head_dim = 4, .max_positions = 2};
      if (op == 54)
        rd.rotary_dim = 3;
      if (op == 55)
        rd.rotary_dim = 6;
      if (op == 57)
        rd.max_positions = n_all0; /* [n, 2] overruns victim0's n */
      wgc_ptr out = op == 76 ? v0 + 4 : v1;
      wgc_ptr sinc = op == 57 ? base0 : v1 + 32;
      /* Caches of max_positions rows need position ids. */
      st[b] = wgc_rotary_embedding(c, op == 56 ? NULL : &rd, v0,
                                   op == 57 ? v1 + 56 : 0, v1 + 40, sinc, out);
      break;
    }
    case 58: {
      size_t sh[2] = {2, 3}, ds[2] = {0, 1}, ss[2] = {3, 1};
      st[b] = wgc_copy_strided(c, v1, ds, v0, ss, sh, 2);
      break;
    }
    case 59: {
      /* interleaved elements, overlapping spans */
      size_t sh[1] = {4}, ds[1] = {2}, ss[1] = {2};
      st[b] = wgc_copy_strided(c, v0 + 4, ds, v0, ss, sh, 1);
      break;
    }
    case 60: {
      size_t st9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
      st[b] = wgc_copy_strided(c, v1, st9, v0, st9, sh9, 9);
      break;
    }
    case 61: {
      size_t sh[2] = {2, 3};
      st[b] = wgc_gather(c, v0, sh, 2, 2, v1, 2, v1 + 16);
      break;
    }
    case 62: {
      size_t sh[2] = {2, 3};
      st[b] = wgc_gather(c, v0, sh, 2, 0, v1, 2, v1 + 4);
      break;
    }
    case 63: {
      size_t sh[2] = {2, 3};
      wgc_ptr last0 = base0 + 4 * (wgc_ptr)(n_all0 - 1);
      st[b] = wgc_gather(c, v0, sh, 2, 0, last0, 2, v1);
      break;
    }
    case 64: {
      size_t s2 = 2;
      st[b] = wgc_where(c, v0, &s2, 1, v0, &s3, 1, v0, &s3, 1, v1);
      break;
    }
    case 65: {
      size_t sc[2] = {1, 3}, sab[2] = {2, 3};
      st[b] = wgc_where(c, v0, sc, 2, v1, sab, 2, v1, sab, 2, v0);
      break;
    }
    case 66:
    case 67:
    case 68: {
      size_t sh[3] = {2, 3, 2}, ax[2] = {1, 1};
      if (op == 68)
        ax[1] = 3;
      st[b] = wgc_reduce_axes(c, WGC_REDUCE_SUM, v0, v1, sh, 3, ax,
                              op == 67 ? 0 : 2);
      break;
    }
    case 69: {
      size_t sh[2] = {3, 0};
      st[b] = wgc_argmax(c, v0, v1, sh, 2, 1);
      break;
    }
    case 70:
      st[b] = wgc_unary_params(
          c, (wgc_unary_op)(WGC_UNARY_OP_COUNT + s->dseed % 50), 1, 1, v0, v1,
          4);
      break;
    case 71:
    case 72:
    case 73: {
      wgc_gemm_epilogue ep = {.bias = op == 71 ? v1 + 4 : v0,
                              .bias_kind = WGC_BIAS_PER_COLUMN,
                              .activation = WGC_ACTIVATION_RELU};
      if (op == 72)
        ep.activation = (wgc_activation)(5 + s->dseed % 50);
      if (op == 73)
        ep.bias_kind = (wgc_bias_kind)(2 + s->dseed % 50);
      st[b] = wgc_gemm_ex(c, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 2, 2, 2,
                          1, v0, 2, v0, 2, 0, v1, 2, &ep);
      break;
    }
    case 74: {
      wgc_gemm_epilogue ep = {.bias = v0 + 2,
                              .bias_kind = WGC_BIAS_PER_ROW,
                              .activation = WGC_ACTIVATION_NONE};
      st[b] =
          wgc_gemm_batched_ex(c, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 2,
                              2, 2, 1, v0, 2, 4, v0, 2, 4, 0, v1, 2, 4, 2, &ep);
      break;
    }
    case 75: {
      size_t sh[2] = {2, 3};
      wgc_ptr end0 = base0 + 4 * (wgc_ptr)(n_all0 - 1);
      st[b] = wgc_layer_norm(c, v1, 0, end0, v1 + 32, sh, 2, 1, 1e-5f);
      break;
    }
    case 78:
    case 79:
    case 80: {
      static const float caps[3] = {-1.0f, NAN, INFINITY};
      if (op == 78)
        ad.softcap = caps[s->dseed % 3];
      if (op == 79) {
        ad.head_dim = 0;
        ad.head_dim_v = 2;
      }
      if (op == 80)
        ad.mask = v1 + 4; /* one row of seq_kv inside o */
      st[b] = wgc_attention(c, &ad, v0, v0, v0, v1);
      break;
    }
    case 77: {
      size_t sh[2] = {2, 3};
      st[b] = wgc_argmin(c, v0, v0 + 4, sh, 2, 1);
      break;
    }
    case 81:
      st[b] = wgc_cast(c, v0 + 1, WGC_DTYPE_F16, v1, WGC_DTYPE_F32, 4);
      break;
    case 82:
      st[b] = wgc_cast(c, v0, WGC_DTYPE_F32, v1, WGC_DTYPE_Q4_0, 48);
      break;
    case 83:
      st[b] = wgc_cast(c, v0, WGC_DTYPE_F32, v0 + 10, WGC_DTYPE_BF16, 8);
      break;
    case 84:
      st[b] = wgc_cast(c, v0, WGC_DTYPE_F32, v1, (wgc_dtype)WGC_DTYPE_COUNT, 4);
      break;
    case 85: {
      size_t sh[2] = {2, 3};
      st[b] = wgc_gather_ex(c, v0, WGC_DTYPE_I32, sh, 2, 0, v1, 2, v1 + 16,
                            WGC_DTYPE_F32);
      break;
    }
    case 86: {
      size_t sh[2] = {2, 32};
      st[b] = wgc_gather_ex(c, v0, WGC_DTYPE_F32, sh, 2, 0, v1, 2, v1 + 16,
                            WGC_DTYPE_Q8_0);
      break;
    }
    case 87: {
      size_t sh[2] = {2, 48};
      st[b] = wgc_gather_ex(c, v0, WGC_DTYPE_Q4_0, sh, 2, 0, v1, 2, v1 + 16,
                            WGC_DTYPE_F32);
      break;
    }
    case 88: {
      size_t sh[2] = {2, 3};
      st[b] = wgc_gather_ex(c, v0, WGC_DTYPE_F32, sh, 2, 0, v1, 2, v1 + 17,
                            WGC_DTYPE_F16);
      break;
    }
    default: {
      wgc_ptr none = 0;
      st[b] = wgc_alloc(c, 0, &none);
      break;
    }
    }
  }
  free(big);
  bool ok =
      st[0] == WGC_ERR_INVALID_ARGUMENT && st[1] == WGC_ERR_INVALID_ARGUMENT;
  if (!ok)
    snprintf(msg, size,
             "invalid call \"%s\" returned webgpu %s, cpu %s, want "
             "INVALID_ARGUMENT",
             names[op], wgc_status_name(st[0]), wgc_status_name(st[1]));
  for (int b = 0; b < 2 && ok; b++)
    if (!*wgc_last_error(e->ctx[b])) {
      snprintf(msg, size, "%s: invalid call \"%s\" left no wgc_last_error",
               fz_backend[b], names[op]);
      ok = false;
    }
  for (int b = 0; b < 2 && ok && op >= FIRST_NAMED; b++) {
    const char *word = param_words[op - FIRST_NAMED];
    if (!strstr(wgc_last_error(e->ctx[b]), word)) {
      snprintf(msg, size,
               "%s: invalid call \"%s\": wgc_last_error \"%s\" does not "
               "name %s",
               fz_backend[b], names[op], wgc_last_error(e->ctx[b]), word);
      ok = false;
    }
  }
  fz_want_alloc(p, 0);
  return ok;
}
