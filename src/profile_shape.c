/* Each op family's shape in short, for timing records: the sizes a user
 * reads to tell one call from another ("m=128 n=384 k=1536"). */
#include "profile.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NAME_(NAME, name) #name,
static const char *const unary_names[] = {WGC_UNARY_OPS(NAME_)};
static const char *const binary_names[] = {WGC_BINARY_OPS(NAME_)};
static const char *const reduce_names[] = {WGC_REDUCE_OPS(NAME_)};
#undef NAME_
_Static_assert(sizeof unary_names / sizeof *unary_names == WGC_UNARY_OP_COUNT,
               "one name per unary op");
_Static_assert(sizeof binary_names / sizeof *binary_names ==
                   WGC_BINARY_OP_COUNT,
               "one name per binary op");
_Static_assert(sizeof reduce_names / sizeof *reduce_names ==
                   WGC_REDUCE_OP_COUNT,
               "one name per reduce op");

static const char *pick(const char *const *names, size_t count, int op) {
  return op >= 0 && (size_t)op < count ? names[op] : "?";
}
#define PICK(names, op) pick(names, sizeof names / sizeof *names, (int)(op))

static void put(char *out, size_t cap, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void put(char *out, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out, cap, fmt, ap);
  va_end(ap);
}

/* "2x3x4" for a shape of rank dims. */
static void dims(char *out, size_t cap, const size_t *shape, size_t rank) {
  size_t used = 0;
  out[0] = 0;
  for (size_t d = 0; d < rank && used < cap; d++) {
    int n = snprintf(out + used, cap - used, d ? "x%zu" : "%zu", shape[d]);
    if (n < 0)
      break;
    used += (size_t)n;
  }
}

/* Appends " types=a,b,..." (the operands' types, in the order below) to
 * the shape in out, unless they are all f32: f32 shapes read as before. */
static void typed(char *out, size_t cap, size_t n, const wgc_dtype *t) {
  bool any = false;
  for (size_t i = 0; i < n; i++)
    any = any || t[i] != WGC_DTYPE_F32;
  size_t at = strlen(out);
  for (size_t i = 0; any && i < n && at < cap; i++) {
    int k = snprintf(out + at, cap - at, "%s%s",
                     i ? "," : " types=", wgc_dtype_name(t[i]));
    at += k > 0 ? (size_t)k : 0;
  }
}
#define TYPED(out, cap, ...)                                                   \
  typed(out, cap, sizeof((wgc_dtype[]){__VA_ARGS__}) / sizeof(wgc_dtype),      \
        (wgc_dtype[]){__VA_ARGS__})

void wgc_shape_gemm(const wgc_gemm_args *a, char *out, size_t cap) {
  if (a->batch > 1)
    put(out, cap, "batch=%zu m=%zu n=%zu k=%zu", a->batch, a->m, a->n, a->k);
  else
    put(out, cap, "m=%zu n=%zu k=%zu", a->m, a->n, a->k);
  TYPED(out, cap, a->a_type, a->b_type, a->c_type, a->bias_type);
}

void wgc_shape_conv2d(const wgc_conv2d_args *a, char *out, size_t cap) {
  const wgc_conv2d_desc *d = &a->d;
  put(out, cap, "n=%zu c=%zu h=%zu w=%zu k=%zu r=%zu s=%zu p=%zu q=%zu", d->n,
      d->c, d->h, d->w, d->k, d->r, d->s, a->p, a->q);
  TYPED(out, cap, d->input_type, d->filter_type, d->bias_type, d->output_type);
}

void wgc_shape_pool2d(const wgc_pool2d_args *a, char *out, size_t cap) {
  const wgc_pool2d_desc *d = &a->d;
  put(out, cap, "n=%zu c=%zu h=%zu w=%zu r=%zu s=%zu p=%zu q=%zu", d->n, d->c,
      d->h, d->w, d->r, d->s, a->p, a->q);
  TYPED(out, cap, d->input_type, d->output_type);
}

void wgc_shape_attention(const wgc_attention_args *a, char *out, size_t cap) {
  const wgc_attention_desc *d = &a->d;
  put(out, cap, "batch=%zu heads=%zu seq_q=%zu seq_kv=%zu head_dim=%zu",
      d->batch, d->heads, d->seq_q, d->seq_kv, d->head_dim);
  TYPED(out, cap, d->q_type, d->k_type, d->v_type, d->o_type, d->mask_type);
}

void wgc_shape_reduce(const wgc_reduce_args *a, char *out, size_t cap) {
  const char *op = a->arg == WGC_ARG_MAX   ? "argmax"
                   : a->arg == WGC_ARG_MIN ? "argmin"
                                           : PICK(reduce_names, a->op);
  put(out, cap, "op=%s outer=%zu len=%zu inner=%zu", op, a->outer, a->len,
      a->inner);
  TYPED(out, cap, a->input_type, a->output_type);
}

void wgc_shape_unary(const wgc_unary_args *a, char *out, size_t cap) {
  put(out, cap, "op=%s n=%zu", PICK(unary_names, a->op), a->n);
  TYPED(out, cap, a->input_type, a->output_type);
}

void wgc_shape_binary(const wgc_binary_args *a, char *out, size_t cap) {
  char s[64];
  dims(s, sizeof s, a->shape, a->rank);
  put(out, cap, "op=%s shape=%s", PICK(binary_names, a->op), s);
  TYPED(out, cap, a->a_type, a->b_type, a->out_type);
}

void wgc_shape_copy_strided(const wgc_copy_strided_args *a, char *out,
                            size_t cap) {
  char s[64];
  dims(s, sizeof s, a->shape, a->rank);
  put(out, cap, "shape=%s", s);
  TYPED(out, cap, a->src_type, a->dst_type);
}

void wgc_shape_gather(const wgc_gather_args *a, char *out, size_t cap) {
  put(out, cap, "outer=%zu len=%zu inner=%zu indices=%zu data=%s output=%s",
      a->outer, a->len, a->inner, a->n_indices, wgc_dtype_name(a->data_type),
      wgc_dtype_name(a->output_type));
}

void wgc_shape_where(const wgc_where_args *a, char *out, size_t cap) {
  char s[64];
  dims(s, sizeof s, a->shape, a->rank);
  put(out, cap, "shape=%s", s);
  TYPED(out, cap, a->cond_type, a->a_type, a->b_type, a->out_type);
}

void wgc_shape_norm(const wgc_norm_args *a, char *out, size_t cap) {
  put(out, cap, "outer=%zu len=%zu inner=%zu", a->outer, a->len, a->inner);
  TYPED(out, cap, a->input_type, a->output_type, a->scale_type, a->bias_type);
}

void wgc_shape_rotary(const wgc_rotary_args *a, char *out, size_t cap) {
  const wgc_rotary_desc *d = &a->d;
  put(out, cap, "batch=%zu seq=%zu heads=%zu head_dim=%zu rotary_dim=%zu",
      d->batch, d->seq, d->heads, d->head_dim, d->rotary_dim);
  TYPED(out, cap, d->input_type, d->output_type, d->cache_type);
}

void wgc_shape_cast(const wgc_cast_args *a, char *out, size_t cap) {
  put(out, cap, "%s->%s n=%zu", wgc_dtype_name(a->src_type),
      wgc_dtype_name(a->dst_type), a->n);
}
