/* The raw webgpu.h baselines: the naive and the plain 4x4 register-tile
 * GEMM, unfused attention (scores, softmax, PV: three dispatches over the
 * full score matrix), the adapter's buffer-copy bandwidth that bounds a
 * streaming op, and the bare dispatch loop that bounds the host cost of an
 * operation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "parts.h"
#include "raw_gpu.h"
#include "shapes.h"

static uint32_t groups(size_t n, size_t per) {
  return (uint32_t)((n + per - 1) / per);
}

/* A baseline that computed something else would make its ratios
 * meaningless: sampled outputs are checked against float64 sums. */
static void expect(const char *what, double got, double want, double scale) {
  if (!(fabs(got - want) <= 1e-4 * scale + 1e-6))
    bench_die("baseline %s is wrong: %g, expected %g", what, got, want);
}

/* ---- GEMM ------------------------------------------------------------------
 */

typedef struct gemm_params {
  uint32_t m, n, k, batch;
  uint32_t a_row, a_col, a_batch, b_row;
  uint32_t b_col, b_batch, c_batch, pad;
} gemm_params;

typedef struct one_pass {
  raw_gpu *g;
  const raw_kernel *k[3];
  uint32_t dims[3][3];
  int count;
} one_pass;

/* Every dispatch of the run in one encoder and one pass, then wait. */
static void run_pass(void *arg) {
  one_pass *r = arg;
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(r->g->device, NULL);
  WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(enc, NULL);
  for (int i = 0; i < r->count; i++)
    raw_dispatch(pass, r->k[i], r->dims[i][0], r->dims[i][1], r->dims[i][2]);
  wgpuComputePassEncoderEnd(pass);
  wgpuComputePassEncoderRelease(pass);
  raw_submit_wait(r->g, enc);
}

static void gemm_case(raw_gpu *g, const gemm_shape *s, int tile) {
  gemm_params p;
  memset(&p, 0, sizeof p);
  p.m = (uint32_t)s->m, p.n = (uint32_t)s->n, p.k = (uint32_t)s->k;
  p.batch = (uint32_t)s->batch;
  p.a_row = s->ta ? 1 : (uint32_t)s->k;
  p.a_col = s->ta ? (uint32_t)s->m : 1;
  p.b_row = s->tb ? 1 : (uint32_t)s->n;
  p.b_col = s->tb ? (uint32_t)s->k : 1;
  p.a_batch = (uint32_t)(s->m * s->k);
  p.b_batch = (uint32_t)(s->k * s->n);
  p.c_batch = (uint32_t)(s->m * s->n);
  WGPUBuffer b[4] = {raw_buffer(g, 4ull * p.a_batch * s->batch),
                     raw_buffer(g, 4ull * p.b_batch * s->batch),
                     raw_buffer(g, 4ull * p.c_batch * s->batch),
                     raw_uniform(g, &p, sizeof p)};
  float *ha = raw_upload_random(g, b[0], p.a_batch * s->batch, 1);
  float *hb = raw_upload_random(g, b[1], p.b_batch * s->batch, 2);
  raw_kernel k = raw_kernel_make(g, tile ? "gemm_tile4x4" : "gemm_naive", b, 4);
  one_pass r = {g, {&k}, {{0}}, 1};
  r.dims[0][0] = tile ? groups(s->n / 4, 8) : groups(s->n, 8);
  r.dims[0][1] = tile ? groups(s->m / 4, 8) : groups(s->m, 8);
  r.dims[0][2] = (uint32_t)s->batch;
  int reps = bench_reps();
  double t = bench_median(run_pass, &r, reps);
  record("gemm", s->name, tile ? "tile4x4" : "naive", t, reps, gemm_flops(s),
         "GFLOP/s", 0);
  float *hc = raw_download(g, b[2], 4ull * p.c_batch * s->batch);
  for (unsigned t_ = 0; t_ < 64; t_++) {
    size_t z = t_ % s->batch, i = (t_ * 7919u) % s->m,
           j = (t_ * 104729u) % s->n;
    double want = 0, scale = 0;
    for (size_t l = 0; l < s->k; l++) {
      double x = ha[z * p.a_batch + i * p.a_row + l * p.a_col];
      double y = hb[z * p.b_batch + l * p.b_row + j * p.b_col];
      want += x * y;
      scale += fabs(x * y);
    }
    expect(s->name, hc[z * p.c_batch + i * s->n + j], want, scale);
  }
  free(ha);
  free(hb);
  free(hc);
  raw_kernel_free(&k);
  for (int i = 0; i < 4; i++)
    wgpuBufferRelease(b[i]);
}

/* ---- unfused attention
 * ------------------------------------------------------- */

/* Sampled rows of O against softmax(scale Q K^T + mask) V in float64. */
static void attn_check(const attn_shape *s, float scale, float *q, float *k,
                       float *v, float *o) {
  size_t seq = s->seq, dim = s->dim, rows = attn_rows(s);
  double *w = malloc(seq * sizeof *w);
  if (!w)
    bench_die("out of host memory");
  for (unsigned t = 0; t < 8; t++) {
    size_t h = t % ATTN_HEADS, i = (t * 7919u) % rows, d = (t * 31u) % dim;
    size_t keys = s->causal ? i + 1 : seq;
    double m = -INFINITY, sum = 0, want = 0, scale_abs = 0;
    for (size_t j = 0; j < keys; j++) {
      double acc = 0;
      for (size_t e = 0; e < dim; e++)
        acc += (double)q[(h * rows + i) * dim + e] * k[(h * seq + j) * dim + e];
      w[j] = acc * scale;
      m = w[j] > m ? w[j] : m;
    }
    for (size_t j = 0; j < keys; j++) {
      w[j] = exp(w[j] - m);
      sum += w[j];
    }
    for (size_t j = 0; j < keys; j++) {
      want += w[j] / sum * v[(h * seq + j) * dim + d];
      scale_abs += w[j] / sum * fabs(v[(h * seq + j) * dim + d]);
    }
    expect("unfused attention", o[(h * rows + i) * dim + d], want, scale_abs);
  }
  free(w);
  free(q);
  free(k);
  free(v);
  free(o);
}

typedef struct attn_params {
  uint32_t seq, dim, causal, heads;
  float scale;
  uint32_t rows, pad[2];
} attn_params;

static void attn_case(raw_gpu *g, const attn_shape *s) {
  attn_params p = {(uint32_t)s->seq,
                   (uint32_t)s->dim,
                   (uint32_t)s->causal,
                   ATTN_HEADS,
                   1.0f / (s->dim == 64 ? 8.0f : 11.3137085f),
                   (uint32_t)attn_rows(s),
                   {0}};
  size_t n = ATTN_HEADS * s->seq * s->dim;
  size_t nq = ATTN_HEADS * attn_rows(s) * s->dim;
  uint64_t score_bytes = 4ull * ATTN_HEADS * attn_rows(s) * s->seq;
  WGPUBuffer q = raw_buffer(g, 4 * nq), k = raw_buffer(g, 4 * n),
             v = raw_buffer(g, 4 * n), o = raw_buffer(g, 4 * nq),
             sc = raw_buffer(g, score_bytes), u = raw_uniform(g, &p, sizeof p);
  float *hq = raw_upload_random(g, q, nq, 5);
  float *hk = raw_upload_random(g, k, n, 6);
  float *hv = raw_upload_random(g, v, n, 7);
  WGPUBuffer b1[4] = {q, k, sc, u}, b2[2] = {sc, u}, b3[4] = {sc, v, o, u};
  raw_kernel k1 = raw_kernel_make(g, "attn_scores", b1, 4);
  raw_kernel k2 = raw_kernel_make(g, "attn_softmax", b2, 2);
  raw_kernel k3 = raw_kernel_make(g, "attn_pv", b3, 4);
  one_pass r = {g,
                {&k1, &k2, &k3},
                {{groups(s->seq, 8), groups(attn_rows(s), 8), ATTN_HEADS},
                 {groups(ATTN_HEADS * attn_rows(s), 64), 1, 1},
                 {groups(s->dim, 8), groups(attn_rows(s), 8), ATTN_HEADS}},
                3};
  int reps = bench_reps();
  double t = bench_median(run_pass, &r, reps);
  char name[64];
  record("attention", attn_name(s, name, sizeof name), "unfused", t, reps,
         attn_flops(s), "GFLOP/s",
         4.0 * 2 * (double)(n + nq) + (double)score_bytes);
  attn_check(s, p.scale, hq, hk, hv, raw_download(g, o, 4 * nq));
  raw_kernel_free(&k1);
  raw_kernel_free(&k2);
  raw_kernel_free(&k3);
  WGPUBuffer all[6] = {q, k, v, o, sc, u};
  for (int i = 0; i < 6; i++)
    wgpuBufferRelease(all[i]);
}

/* ---- buffer copies
 * ------------------------------------------------------------ */

typedef struct copy_run {
  raw_gpu *g;
  WGPUBuffer x, y;
  const raw_kernel *k; /* NULL: copyBufferToBuffer */
} copy_run;

static void run_copy(void *arg) {
  copy_run *r = arg;
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(r->g->device, NULL);
  if (r->k) {
    WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(enc, NULL);
    raw_dispatch(pass, r->k, (uint32_t)(ELEMENTWISE_N / 4 / 256 / 64), 64, 1);
    wgpuComputePassEncoderEnd(pass);
    wgpuComputePassEncoderRelease(pass);
  } else
    wgpuCommandEncoderCopyBufferToBuffer(enc, r->x, 0, r->y, 0,
                                         4 * ELEMENTWISE_N);
  raw_submit_wait(r->g, enc);
}

/* The same 16M floats as wgc's element-wise ops, copied by the copy engine
 * and by a plain vec4 kernel; recorded as the bytes they read and write,
 * so the report's ratio is wgc's share of the copy bandwidth. */
static void copy_cases(raw_gpu *g, const char *name) {
  uint32_t p[4] = {(uint32_t)(ELEMENTWISE_N / 4), 0, 0, 0};
  WGPUBuffer x = raw_buffer(g, 4 * ELEMENTWISE_N),
             y = raw_buffer(g, 4 * ELEMENTWISE_N),
             u = raw_uniform(g, p, sizeof p);
  float *hx = raw_upload_random(g, x, ELEMENTWISE_N, 11);
  WGPUBuffer b[3] = {x, y, u};
  raw_kernel k = raw_kernel_make(g, "copy_vec4", b, 3);
  int reps = bench_reps();
  for (int kernel = 0; kernel < 2; kernel++) {
    WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(g->device, NULL);
    wgpuCommandEncoderClearBuffer(enc, y, 0, 4 * ELEMENTWISE_N);
    raw_submit_wait(g, enc);
    copy_run r = {g, x, y, kernel ? &k : NULL};
    double t = bench_median(run_copy, &r, reps);
    record("elementwise", name, kernel ? "copy-kernel" : "copy", t, reps,
           8.0 * ELEMENTWISE_N, "GB/s", 0);
    float *hy = raw_download(g, y, 4 * ELEMENTWISE_N);
    for (size_t i = 0; i < ELEMENTWISE_N; i += 4099)
      expect("buffer copy", hy[i], hx[i], 1);
    expect("buffer copy", hy[ELEMENTWISE_N - 1], hx[ELEMENTWISE_N - 1], 1);
    free(hy);
  }
  free(hx);
  raw_kernel_free(&k);
  wgpuBufferRelease(x);
  wgpuBufferRelease(y);
  wgpuBufferRelease(u);
}

/* ---- the dispatch loop
 * --------------------------------------------------------- */

typedef struct tiny_run {
  raw_gpu *g;
  raw_kernel k;
  WGPUBuffer x, staging;
  int download_each;
} tiny_run;

static void run_tiny(void *arg) {
  tiny_run *r = arg;
  float out[TINY_N];
  int per = r->download_each ? 1 : TINY_OPS;
  for (int done = 0; done < TINY_OPS; done += per) {
    WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(r->g->device, NULL);
    WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(enc, NULL);
    for (int i = 0; i < per; i++)
      raw_dispatch(pass, &r->k, 1, 1, 1);
    wgpuComputePassEncoderEnd(pass);
    wgpuComputePassEncoderRelease(pass);
    raw_read(r->g, enc, r->x, r->staging, out, sizeof out);
  }
}

static void host_cases(raw_gpu *g) {
  uint32_t p[4] = {TINY_N, 0, 0, 0};
  tiny_run r = {
      g, {0}, raw_buffer(g, 4 * TINY_N), raw_staging(g, 4 * TINY_N), 0};
  WGPUBuffer b[2] = {r.x, raw_uniform(g, p, sizeof p)};
  r.k = raw_kernel_make(g, "tiny_neg", b, 2);
  int reps = bench_reps();
  double t = bench_median(run_tiny, &r, reps);
  record("host", HOST_CHAIN, "raw", t, reps, TINY_OPS, "us/op", 0);
  r.download_each = 1;
  t = bench_median(run_tiny, &r, reps);
  record("host", HOST_ROUND_TRIP, "raw", t, reps, TINY_OPS, "us/op", 0);
  raw_kernel_free(&r.k);
  wgpuBufferRelease(r.x);
  wgpuBufferRelease(r.staging);
  wgpuBufferRelease(b[1]);
}

static raw_gpu g_raw;
static where g_where;

void raw_side_open(const char *adapter) {
  g_where = where_from(adapter);
  raw_open(&g_raw);
  record_note("raw adapter", g_raw.name);
}

void raw_side_case(const char *group, size_t i) {
  size_t n;
  if (strcmp(group, "gemm") == 0) {
    const gemm_shape *s = &gemm_shapes(g_where, &n)[i];
    if (s->baselines)
      gemm_case(&g_raw, s, 0);
    /* vec4 loads need B stored row-major */
    if (!s->tb)
      gemm_case(&g_raw, s, 1);
  } else if (strcmp(group, "attention") == 0)
    attn_case(&g_raw, &attn_shapes(g_where, &n)[i]);
  else if (strcmp(group, "elementwise") == 0)
    copy_cases(&g_raw, i ? BINARY_CASE : UNARY_CASE);
  else if (strcmp(group, "host") == 0)
    host_cases(&g_raw);
}

void raw_side_close(void) { raw_close(&g_raw); }
