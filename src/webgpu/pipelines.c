/* The pipeline cache and the shader prelude: each launch's WGSL is its
 * bindings, accessor functions that add each operand's element offset, the
 * launch's constants, then the kernel files, compiled once per key. */
#include "wg.h"
#include "wgsl_fold.h"

#include "kernels.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const wgc_kernel_source *wgc_kernel_find(const char *name) {
  for (const wgc_kernel_source *k = wgc_kernels; k->name; k++)
    if (!strcmp(k->name, name))
      return k;
  return NULL;
}

static gpu_id pipeline_lookup(wg_state *st, const char *key) {
  for (size_t i = 0; i < st->pipe_count; i++)
    if (!strcmp(st->pipes[i].key, key))
      return st->pipes[i].id;
  return 0;
}

static bool pipeline_store(wg_state *st, const char *key, gpu_id id) {
  if (st->pipe_count == st->pipe_cap) {
    size_t cap = st->pipe_cap ? 2 * st->pipe_cap : 32;
    wg_pipeline *grown = realloc(st->pipes, cap * sizeof *grown);
    if (!grown)
      return false;
    st->pipes = grown;
    st->pipe_cap = cap;
  }
  char *copy = strdup(key);
  if (!copy)
    return false;
  st->pipes[st->pipe_count++] = (wg_pipeline){copy, id};
  return true;
}

/* A growable string for generated WGSL. */
typedef struct text {
  char *buf;
  size_t len, cap;
  bool failed;
} text;

static void text_add(text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void text_add(text *t, const char *fmt, ...) {
  if (t->failed)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->failed = true;
      return;
    }
    if ((size_t)n < t->cap - t->len) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = t->cap ? 2 * t->cap + (size_t)n : 4096 + (size_t)n;
    char *grown = realloc(t->buf, cap);
    if (!grown) {
      t->failed = true;
      return;
    }
    t->buf = grown;
    t->cap = cap;
  }
}

/* The accessors of operand i (see wg_launch), bound to binding b: in a
 * vec4 binding the scalar ones pick a lane, in a scalar binding the vec4
 * ones gather four floats. */
static void operand_accessors(text *t, const wg_operand *o, unsigned i,
                              unsigned b, bool write, bool vec4_bind,
                              bool vec4_op) {
  const char *off = i < 4 ? "off" : "off2", *n = o->name;
  unsigned k = i % 4;
  if (vec4_bind) {
    text_add(t,
             "fn %s_ld(i: u32) -> f32 { let j = P.%s[%u] + i; "
             "return wgc_buf%u[j >> 2u][j & 3u]; }\n"
             "fn %s_ld4(i: u32) -> vec4<f32> "
             "{ return wgc_buf%u[(P.%s[%u] >> 2u) + i]; }\n",
             n, off, k, b, n, b, off, k);
    if (write)
      text_add(t,
               "fn %s_st(i: u32, v: f32) { let j = P.%s[%u] + i; "
               "wgc_buf%u[j >> 2u][j & 3u] = v; }\n"
               "fn %s_st4(i: u32, v: vec4<f32>) "
               "{ wgc_buf%u[(P.%s[%u] >> 2u) + i] = v; }\n",
               n, off, k, b, n, b, off, k);
    return;
  }
  text_add(t, "fn %s_ld(i: u32) -> f32 { return wgc_buf%u[P.%s[%u] + i]; }\n",
           n, b, off, k);
  if (write)
    text_add(t, "fn %s_st(i: u32, v: f32) { wgc_buf%u[P.%s[%u] + i] = v; }\n",
             n, b, off, k);
  if (vec4_op) {
    text_add(t,
             "fn %s_ld4(i: u32) -> vec4<f32> { let j = P.%s[%u] + 4u * i; "
             "return vec4<f32>(wgc_buf%u[j], wgc_buf%u[j + 1u], "
             "wgc_buf%u[j + 2u], wgc_buf%u[j + 3u]); }\n",
             n, off, k, b, b, b, b);
    if (write)
      text_add(t,
               "fn %s_st4(i: u32, v: vec4<f32>) { let j = P.%s[%u] + 4u * i; "
               "wgc_buf%u[j] = v.x; wgc_buf%u[j + 1u] = v.y; "
               "wgc_buf%u[j + 2u] = v.z; wgc_buf%u[j + 3u] = v.w; }\n",
               n, off, k, b, b, b, b);
  }
}

/* How a binding is declared: f32s, vec4<f32>s, atomic<u32> words (2-byte
 * outputs stored by halves) or u32 words (2-byte outputs stored by whole
 * words, wg_launch.word_stores). */
typedef enum { BIND_F32, BIND_VEC4, BIND_ATOMIC, BIND_WORDS } bind_kind;

/* Whether launch l stores its operand i by whole words. */
static bool word_store(const wg_launch *l, unsigned i) {
  wgc_dtype t = l->ops[i].type;
  return l->ops[i].write && (l->word_stores >> i & 1) && wg_half_type(t);
}

/* The store of a word-stored 2-byte operand (see wg_launch.word_stores):
 * a whole word in one store; a word it has only one half of keeps the
 * other, read and written back by the one invocation that owns the word
 * (atomically where the binding is atomic: another operand's stores may
 * then share the word). */
static void word_store_accessors(text *t, const wg_operand *o, unsigned i,
                                 unsigned b, bool atomic) {
  const char *off = i < 4 ? "off" : "off2", *n = o->name;
  const char *conv =
      o->type == WGC_DTYPE_F16 ? "dt_f32_to_f16" : "dt_f32_to_bf16";
  unsigned k = i % 4;
  text_add(t,
           "fn %s_lead() -> u32 { return P.%s[%u] & 1u; }\n"
           "fn %s_stw(u: u32, lo: f32, hi: f32, a: bool, b: bool) { "
           "let j = (P.%s[%u] >> 1u) + u; let l = %s(bitcast<u32>(lo)); "
           "let h = %s(bitcast<u32>(hi)) * 65536u; ",
           n, off, k, n, off, k, conv, conv);
  if (atomic)
    text_add(t,
             "if (a && b) { atomicStore(&wgc_buf%u[j], l | h); return; } "
             "if (a) { atomicAnd(&wgc_buf%u[j], 0xffff0000u); "
             "atomicOr(&wgc_buf%u[j], l); } "
             "if (b) { atomicAnd(&wgc_buf%u[j], 0xffffu); "
             "atomicOr(&wgc_buf%u[j], h); } }\n",
             b, b, b, b, b);
  else
    text_add(t,
             "if (a && b) { wgc_buf%u[j] = l | h; return; } "
             "let w = wgc_buf%u[j]; "
             "wgc_buf%u[j] = select(w & 0xffffu, l, a) | "
             "select(w & 0xffff0000u, h, b); }\n",
             b, b, b);
}

/* Accessors of a typed operand (wg_operand.type) in binding b, as f32:
 * element i decoded on the bits (kernels/dtype.wgsl). Params.off counts
 * 2-byte elements, or bytes for a block type (wg_offset_unit). A written
 * 2-byte operand is stored by whole words (word_store_accessors) or its
 * binding is atomic (see wg_operand): its store then clears and sets its
 * own half of the word. Q8_0 and Q4_0 are read only. Only a written
 * operand gets a store: a read one may share a written binding that is
 * not atomic (an f16 A beside an f32 C). */
static void typed_accessors(text *t, const wg_launch *l, unsigned i, unsigned b,
                            bind_kind kind) {
  const wg_operand *o = &l->ops[i];
  bool atomic = kind == BIND_ATOMIC, vec4_bind = kind == BIND_VEC4,
       vec4_op = l->vec4 >> i & 1;
  const char *off = i < 4 ? "off" : "off2", *n = o->name;
  unsigned k = i % 4;
  /* the word j of the binding, and four from word j on (see words4) */
  if (vec4_bind)
    text_add(t,
             "fn %s_w(j: u32) -> u32 { return bitcast<u32>(wgc_buf%u[j >> "
             "2u][j & 3u]); }\n"
             "fn %s_w4(j: u32) -> vec4<u32> { return "
             "bitcast<vec4<u32>>(wgc_buf%u[j >> 2u]); }\n",
             n, b, n, b);
  else if (atomic)
    text_add(t,
             "fn %s_w(j: u32) -> u32 { return atomicLoad(&wgc_buf%u[j]); }\n",
             n, b);
  else if (kind == BIND_WORDS)
    text_add(t, "fn %s_w(j: u32) -> u32 { return wgc_buf%u[j]; }\n", n, b);
  else
    text_add(t,
             "fn %s_w(j: u32) -> u32 { return bitcast<u32>(wgc_buf%u[j]); }\n",
             n, b);
  if (!vec4_bind)
    text_add(t,
             "fn %s_w4(j: u32) -> vec4<u32> { return vec4<u32>(%s_w(j), "
             "%s_w(j + 1u), %s_w(j + 2u), %s_w(j + 3u)); }\n",
             n, n, n, n, n);
  switch (o->type) {
  case WGC_DTYPE_F16:
  case WGC_DTYPE_BF16:
    text_add(t,
             "fn %s_ld(i: u32) -> f32 { let e = P.%s[%u] + i; return "
             "bitcast<f32>(%s(%s_w(e >> 1u), (e & 1u) != 0u)); }\n",
             n, off, k, o->type == WGC_DTYPE_F16 ? "dt_f16_in" : "dt_bf16_in",
             n);
    if (word_store(l, i))
      word_store_accessors(t, o, i, b, atomic);
    else if (o->write)
      text_add(t,
               "fn %s_st(i: u32, v: f32) { let e = P.%s[%u] + i; "
               "let sh = (e & 1u) * 16u; let h = %s(bitcast<u32>(v)); "
               "atomicAnd(&wgc_buf%u[e >> 1u], ~(0xffffu << sh)); "
               "atomicOr(&wgc_buf%u[e >> 1u], h << sh); }\n",
               n, off, k,
               o->type == WGC_DTYPE_F16 ? "dt_f32_to_f16" : "dt_f32_to_bf16", b,
               b);
    break;
  default: { /* Q8_0, Q4_0: d*q in f32, exact; NaN scales as wgc_cast */
    bool q8 = o->type == WGC_DTYPE_Q8_0;
    text_add(t,
             "fn %s_ld(i: u32) -> f32 { let y = P.%s[%u] + (i >> 5u) * %uu; "
             "let j = i & 31u; let d = dt_f16_in(%s_w(y >> 2u), (y & 2u) != "
             "0u); ",
             n, off, k, q8 ? 34u : 18u, n);
    if (q8)
      text_add(t,
               "let z = y + 2u + j; let q = dt_q8_in(%s_w(z >> 2u), z & 3u); ",
               n);
    else
      text_add(t,
               "let z = y + 2u + (j & 15u); let q = dt_q4_in(%s_w(z >> 2u), z "
               "& 3u, j >= 16u); ",
               n);
    text_add(t, "return bitcast<f32>(dt_block_of(d, q)); }\n");
    break;
  }
  }
  if (vec4_op)
    text_add(t,
             "fn %s_ld4(i: u32) -> vec4<f32> { let j = 4u * i; return "
             "vec4<f32>(%s_ld(j), %s_ld(j + 1u), %s_ld(j + 2u), %s_ld(j + "
             "3u)); }\n",
             n, n, n, n, n);
}

/* An f32 operand in a binding of words, atomic or not (shared with a
 * typed output). */
static void word_accessors(text *t, const wg_operand *o, unsigned i, unsigned b,
                           bool write, bool vec4_op, bool atomic) {
  const char *off = i < 4 ? "off" : "off2", *n = o->name;
  unsigned k = i % 4;
  if (atomic)
    text_add(t,
             "fn %s_ld(i: u32) -> f32 { return "
             "bitcast<f32>(atomicLoad(&wgc_buf%u[P.%s[%u] + i])); }\n",
             n, b, off, k);
  else
    text_add(t,
             "fn %s_ld(i: u32) -> f32 { return "
             "bitcast<f32>(wgc_buf%u[P.%s[%u] + i]); }\n",
             n, b, off, k);
  if (write && atomic)
    text_add(t,
             "fn %s_st(i: u32, v: f32) { atomicStore(&wgc_buf%u[P.%s[%u] + "
             "i], bitcast<u32>(v)); }\n",
             n, b, off, k);
  else if (write)
    text_add(t,
             "fn %s_st(i: u32, v: f32) { wgc_buf%u[P.%s[%u] + i] = "
             "bitcast<u32>(v); }\n",
             n, b, off, k);
  if (vec4_op) {
    text_add(t,
             "fn %s_ld4(i: u32) -> vec4<f32> { let j = 4u * i; return "
             "vec4<f32>(%s_ld(j), %s_ld(j + 1u), %s_ld(j + 2u), %s_ld(j + "
             "3u)); }\n",
             n, n, n, n, n);
    if (write)
      text_add(t,
               "fn %s_st4(i: u32, v: vec4<f32>) { let j = 4u * i; "
               "%s_st(j, v.x); %s_st(j + 1u, v.y); %s_st(j + 2u, v.z); "
               "%s_st(j + 3u, v.w); }\n",
               n, n, n, n, n);
  }
}

/* The WGSL of launch l with its operands bound as op_bind maps them, into
 * t; WGC_ERR_UNSUPPORTED (with a message) when a kernel file is missing. */
static wgc_status kernel_source(wgc_context *ctx, const char *fn, text *t,
                                const wg_launch *l, const unsigned *op_bind,
                                const bool *write, const bind_kind *kind,
                                unsigned nb, bool typed) {
  static const char *const decl[] = {"f32", "vec4<f32>", "atomic<u32>", "u32"};
  for (unsigned b = 0; b < nb; b++)
    text_add(t,
             "@group(0) @binding(%u) var<storage, %s> wgc_buf%u: "
             "array<%s>;\n",
             b, write[b] ? "read_write" : "read", b, decl[kind[b]]);
  text_add(t, "@group(0) @binding(%u) var<uniform> P: Params;\n", nb);
  for (unsigned i = 0; i < l->nops; i++) {
    unsigned b = op_bind[i];
    if (l->ops[i].type != WGC_DTYPE_F32)
      typed_accessors(t, l, i, b, kind[b]);
    else if (kind[b] == BIND_ATOMIC || kind[b] == BIND_WORDS)
      word_accessors(t, &l->ops[i], i, b, write[b], l->vec4 >> i & 1,
                     kind[b] == BIND_ATOMIC);
    else
      operand_accessors(t, &l->ops[i], i, b, write[b], kind[b] == BIND_VEC4,
                        l->vec4 >> i & 1);
  }
  text_add(t,
           "fn wg_linear_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 "
           "{ return wid.x + wid.y * nwg.x; }\n%s\n",
           l->consts ? l->consts : "");
  /* typed accessors decode with kernels/dtype.wgsl */
  if (typed && !strstr(l->kernel, "dtype")) {
    const wgc_kernel_source *src = wgc_kernel_find("dtype");
    if (src)
      text_add(t, "%.*s\n", (int)src->length, src->text);
  }
  /* "math+unary": the files are concatenated in order. */
  for (const char *name = l->kernel; *name;) {
    size_t len = strcspn(name, "+");
    char part[64];
    snprintf(part, sizeof part, "%.*s", (int)len, name);
    const wgc_kernel_source *src = wgc_kernel_find(part);
    if (!src)
      return wgc_fail(ctx, WGC_ERR_UNSUPPORTED, "%s: kernel %s is missing", fn,
                      part);
    text_add(t, "%.*s\n", (int)src->length, src->text);
    name += len + (name[len] == '+');
  }
  if (t->failed)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  /* Blocks under false constant conditions go before the compiler sees
   * them (where memory is short, the compiler folds them itself). */
  char *folded = malloc(t->len + 1);
  if (folded) {
    t->len = wg_wgsl_fold(t->buf, t->len, folded);
    free(t->buf);
    t->buf = folded;
    t->cap = t->len + 1;
  }
  return WGC_OK;
}

/* A kernel asked for while the context compiles ahead (see
 * wg_pipelines_compile_ahead): its key, the kernel's name for messages,
 * and its source. */
struct wg_ahead {
  char *key, *kernel;
  text src;
  uint32_t bindings, writable;
};

static bool ahead_has(const wg_state *st, const char *key) {
  for (size_t i = 0; i < st->ahead_count; i++)
    if (!strcmp(st->ahead[i].key, key))
      return true;
  return false;
}

static void ahead_clear(wg_state *st) {
  for (size_t i = 0; i < st->ahead_count; i++) {
    free(st->ahead[i].key);
    free(st->ahead[i].kernel);
    free(st->ahead[i].src.buf);
  }
  free(st->ahead);
  st->ahead = NULL;
  st->ahead_count = st->ahead_cap = 0;
}

/* Keeps src (taken over, also on failure) for wg_pipelines_compile_ahead. */
static wgc_status ahead_add(wgc_context *ctx, const char *fn, const char *key,
                            const char *kernel, text src, uint32_t bindings,
                            uint32_t writable) {
  wg_state *st = ctx->impl;
  if (st->ahead_count == st->ahead_cap) {
    size_t cap = st->ahead_cap ? 2 * st->ahead_cap : 16;
    struct wg_ahead *grown = realloc(st->ahead, cap * sizeof *grown);
    if (!grown) {
      free(src.buf);
      return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    st->ahead = grown;
    st->ahead_cap = cap;
  }
  struct wg_ahead a = {strdup(key), strdup(kernel), src, bindings, writable};
  if (!a.key || !a.kernel) {
    free(a.key);
    free(a.kernel);
    free(src.buf);
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  }
  st->ahead[st->ahead_count++] = a;
  return WGC_OK;
}

_Static_assert(WG_MAX_OPERANDS <= 10, "a binding's number is one digit");

wgc_status wg_pipeline_get(wgc_context *ctx, const char *fn, const wg_launch *l,
                           const unsigned *op_bind, const bool *write,
                           const bool *vec4, unsigned nb, gpu_id *out) {
  wg_state *st = ctx->impl;
  /* Bindings that a 2-byte output writes are words: atomic ones unless
   * every such output in them is stored by whole words (wg_operand). */
  bind_kind kind[WG_MAX_OPERANDS];
  bool typed = false;
  for (unsigned b = 0; b < nb; b++)
    kind[b] = vec4[b] ? BIND_VEC4 : BIND_F32;
  for (unsigned i = 0; i < l->nops; i++) {
    wgc_dtype t = l->ops[i].type;
    unsigned b = op_bind[i];
    typed = typed || t != WGC_DTYPE_F32;
    if (word_store(l, i) && kind[b] != BIND_ATOMIC)
      kind[b] = BIND_WORDS;
    else if (l->ops[i].write && wg_half_type(t))
      kind[b] = BIND_ATOMIC;
  }
  /* The cache key names everything the generated source depends on. It is
   * built on every launch, so without printf: in the browser, formatting
   * it was the largest part of a small op's host time. */
  char key[512];
  wg_str k = {key, sizeof key, 0};
  wg_str_put(&k, l->kernel);
  wg_str_chr(&k, '|');
  wg_str_put(&k, l->consts ? l->consts : "");
  wg_str_chr(&k, '|');
  for (unsigned i = 0; i < l->nops; i++) {
    unsigned b = op_bind[i];
    wg_str_put(&k, l->ops[i].name);
    wg_str_chr(&k, (char)('0' + b));
    wg_str_chr(&k, write[b] ? 'w' : 'r');
    if (kind[b] != BIND_F32 || (l->vec4 >> i & 1))
      wg_str_chr(&k, "svau"[kind[b]]);
    if (word_store(l, i))
      wg_str_chr(&k, 'W');
    if (l->ops[i].type) {
      wg_str_chr(&k, ':');
      wg_str_put(&k, wgc_dtype_name(l->ops[i].type));
    }
    wg_str_chr(&k, ',');
  }
  if (!wg_str_end(&k))
    return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: kernel key too long", fn);

  *out = pipeline_lookup(st, key);
  /* Compiling ahead, a kernel already asked for is not asked for twice. */
  if (*out || (ctx->compiling && ahead_has(st, key)))
    return WGC_OK;
  text t = {0};
  wgc_status s = kernel_source(ctx, fn, &t, l, op_bind, write, kind, nb, typed);
  if (s != WGC_OK) {
    free(t.buf);
    return s;
  }
  uint32_t writable = 0;
  for (unsigned b = 0; b < nb; b++)
    writable |= (uint32_t)write[b] << b;
  if (ctx->compiling)
    return ahead_add(ctx, fn, key, l->kernel, t, nb, writable);
  gpu_id pipe =
      gpu_pipeline_create(st->dev, &(gpu_shader){t.buf, t.len, nb, writable});
  free(t.buf);
  if (!pipe) {
    s = wg_device_error(ctx, fn);
    return s != WGC_OK
               ? s
               : wgc_fail(ctx, WGC_ERR_DEVICE,
                          "%s: kernel %s failed to compile", fn, l->kernel);
  }
  st->compiled++;
  if (!pipeline_store(st, key, pipe)) {
    gpu_pipeline_release(pipe);
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  }
  *out = pipe;
  return WGC_OK;
}

wgc_status wg_pipelines_compile_ahead(wgc_context *ctx, const char *fn) {
  wg_state *st = ctx->impl;
  size_t n = st->ahead_count;
  if (!n)
    return WGC_OK;
  gpu_shader *src = malloc(n * sizeof *src);
  gpu_id *ids = calloc(n, sizeof *ids);
  wgc_status s = WGC_OK;
  if (!src || !ids) {
    s = wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  } else {
    for (size_t i = 0; i < n; i++)
      src[i] = (gpu_shader){st->ahead[i].src.buf, st->ahead[i].src.len,
                            st->ahead[i].bindings, st->ahead[i].writable};
    gpu_pipelines_create(st->dev, src, n, ids);
  }
  /* Those that failed compile again (and report why) on first use. */
  for (size_t i = 0; ids && i < n; i++) {
    if (!ids[i]) {
      if (s == WGC_OK) {
        s = wg_device_error(ctx, fn);
        if (s == WGC_OK)
          s = wgc_fail(ctx, WGC_ERR_DEVICE, "%s: kernel %s failed to compile",
                       fn, st->ahead[i].kernel);
      }
      continue;
    }
    st->compiled++;
    if (!pipeline_store(st, st->ahead[i].key, ids[i])) {
      gpu_pipeline_release(ids[i]);
      if (s == WGC_OK)
        s = wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
  }
  free(src);
  free(ids);
  ahead_clear(st);
  return s;
}

void wg_pipelines_release(wg_state *st) {
  for (size_t i = 0; i < st->pipe_count; i++) {
    gpu_pipeline_release(st->pipes[i].id);
    free(st->pipes[i].key);
  }
  free(st->pipes);
  st->pipes = NULL;
  st->pipe_count = st->pipe_cap = 0;
  ahead_clear(st);
}
