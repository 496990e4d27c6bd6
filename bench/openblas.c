/* OpenBLAS sgemm on the same shapes: what this machine's cores reach, the
 * roofline the software adapters run under. Loaded at run time so that
 * the bench builds without it. */
#include <dlfcn.h>
#include <stdlib.h>

#include "bench.h"
#include "parts.h"
#include "shapes.h"

/* cblas.h's values */
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k,
                         float alpha, const float *a, int lda, const float *b,
                         int ldb, float beta, float *c, int ldc);
typedef char *(*text_fn)(void);

typedef struct blas_run {
  sgemm_fn sgemm;
  const gemm_shape *s;
  float *a, *b, *c;
} blas_run;

static void run_sgemm(void *arg) {
  blas_run *r = arg;
  const gemm_shape *s = r->s;
  int lda = (int)(s->ta ? s->m : s->k), ldb = (int)(s->tb ? s->k : s->n);
  size_t sa = s->m * s->k, sb = s->k * s->n, sc = s->m * s->n;
  for (size_t i = 0; i < s->batch; i++)
    r->sgemm(ROW_MAJOR, s->ta ? TRANS : NO_TRANS, s->tb ? TRANS : NO_TRANS,
             (int)s->m, (int)s->n, (int)s->k, 1.0f, r->a + i * sa, lda,
             r->b + i * sb, ldb, 0.0f, r->c + i * sc, (int)s->n);
}

static float *random_floats(size_t n) {
  float *h = malloc(n * sizeof *h);
  if (!h)
    bench_die("out of host memory");
  for (size_t i = 0; i < n; i++)
    h[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  return h;
}

void part_openblas(void) {
  void *lib = dlopen("libopenblas.so.0", RTLD_NOW);
  if (!lib) {
    record_note("openblas", "missing (tools/bootstrap.sh bench installs it)");
    return;
  }
  blas_run r = {(sgemm_fn)(void (*)(void))dlsym(lib, "cblas_sgemm"), 0, 0, 0,
                0};
  text_fn config = (text_fn)(void (*)(void))dlsym(lib, "openblas_get_config");
  text_fn core = (text_fn)(void (*)(void))dlsym(lib, "openblas_get_corename");
  if (!r.sgemm)
    bench_die("libopenblas.so.0 has no cblas_sgemm");
  if (config)
    record_note("openblas config", config());
  if (core)
    record_note("openblas kernel", core());
  size_t n;
  const gemm_shape *gs = gemm_shapes(ON_CPU, &n);
  int reps = bench_reps();
  for (size_t i = 0; i < n; i++) {
    r.s = &gs[i];
    r.a = random_floats(gs[i].m * gs[i].k * gs[i].batch);
    r.b = random_floats(gs[i].k * gs[i].n * gs[i].batch);
    r.c = random_floats(gs[i].m * gs[i].n * gs[i].batch);
    double t = bench_median(run_sgemm, &r, reps);
    record("gemm", gs[i].name, "openblas", t, reps, gemm_flops(&gs[i]),
           "GFLOP/s", 0);
    free(r.a);
    free(r.b);
    free(r.c);
  }
  dlclose(lib);
}
