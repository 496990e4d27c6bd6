/* The pipeline cache and the shader prelude: each launch's WGSL is its
 * bindings, accessor functions that add each operand's element offset, the
 * launch's constants, then the kernel files, compiled once per key. */
#include "wg.h"

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

wgc_status wg_pipeline_get(wgc_context *ctx, const char *fn, const wg_launch *l,
                           const unsigned *op_bind, const bool *write,
                           unsigned nb, gpu_id *out) {
  wg_state *st = ctx->impl;
  /* The cache key names everything the generated source depends on. */
  char key[512];
  int kl = snprintf(key, sizeof key, "%s|%s|", l->kernel,
                    l->consts ? l->consts : "");
  for (unsigned i = 0; i < l->nops && kl > 0 && (size_t)kl < sizeof key; i++)
    kl += snprintf(key + kl, sizeof key - (size_t)kl, "%s%u%c,", l->ops[i].name,
                   op_bind[i], write[op_bind[i]] ? 'w' : 'r');
  if (kl < 0 || (size_t)kl >= sizeof key)
    return wgc_fail(ctx, WGC_ERR_DEVICE, "%s: kernel key too long", fn);

  gpu_id pipe = pipeline_lookup(st, key);
  if (!pipe) {
    text t = {0};
    for (unsigned b = 0; b < nb; b++)
      text_add(&t,
               "@group(0) @binding(%u) var<storage, %s> wgc_buf%u: "
               "array<f32>;\n",
               b, write[b] ? "read_write" : "read", b);
    text_add(&t, "@group(0) @binding(%u) var<uniform> P: Params;\n", nb);
    for (unsigned i = 0; i < l->nops; i++) {
      const char *off = i < 4 ? "off" : "off2";
      text_add(&t,
               "fn %s_ld(i: u32) -> f32 { return wgc_buf%u[P.%s[%u] + i]; "
               "}\n",
               l->ops[i].name, op_bind[i], off, i % 4);
      if (write[op_bind[i]])
        text_add(&t,
                 "fn %s_st(i: u32, v: f32) { wgc_buf%u[P.%s[%u] + i] = v; "
                 "}\n",
                 l->ops[i].name, op_bind[i], off, i % 4);
    }
    text_add(&t,
             "fn wg_linear_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 "
             "{ return wid.x + wid.y * nwg.x; }\n%s\n",
             l->consts ? l->consts : "");
    /* "math+unary": the files are concatenated in order. */
    for (const char *name = l->kernel; *name;) {
      size_t len = strcspn(name, "+");
      char part[64];
      snprintf(part, sizeof part, "%.*s", (int)len, name);
      const wgc_kernel_source *src = wgc_kernel_find(part);
      if (!src) {
        free(t.buf);
        return wgc_fail(ctx, WGC_ERR_UNSUPPORTED, "%s: kernel %s is missing",
                        fn, part);
      }
      text_add(&t, "%.*s\n", (int)src->length, src->text);
      name += len + (name[len] == '+');
    }
    if (t.failed) {
      free(t.buf);
      return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    pipe = gpu_pipeline_create(st->dev, t.buf, t.len);
    free(t.buf);
    if (!pipe) {
      wgc_status s = wg_device_error(ctx, fn);
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
  }

  *out = pipe;
  return WGC_OK;
}

void wg_pipelines_release(wg_state *st) {
  for (size_t i = 0; i < st->pipe_count; i++) {
    gpu_pipeline_release(st->pipes[i].id);
    free(st->pipes[i].key);
  }
  free(st->pipes);
  st->pipes = NULL;
  st->pipe_count = st->pipe_cap = 0;
}
