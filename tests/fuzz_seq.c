/* A seed's run: its contexts, its sequence of steps (some checked at once,
 * some left queued behind later steps, their inputs freed early), stray
 * asynchronous registrations, destroying a context from its own callback,
 * and for each failure the shrunk step that reproduces it alone. */
#include "fuzz.h"

#include "ops_ref.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int fz_invalid_callbacks_fired(void);

bool fz_env_create(fz_env *e, size_t mbb, int gpu_kernels, unsigned threads) {
  memset(e, 0, sizeof *e);
  e->mbb = mbb;
  e->gpu_kernels = gpu_kernels;
  e->threads = threads;
  /* The seed chooses the kernel form: never the suite's WGC_KERNELS, so
   * that a seed replays alike in every run. Failures are the seed's own
   * FUZZ lines, not a harness case. */
  wgc_options w = {.backend = WGC_BACKEND_WEBGPU, .max_binding_bytes = mbb};
  wgc_status s0 =
      create_ctx(&w, gpu_kernels ? KERNELS_GPU : KERNELS_ADAPTER, &e->ctx[0]);
  wgc_options c = {.backend = WGC_BACKEND_CPU, .cpu_threads = threads};
  wgc_status s1 = wgc_create(&c, &e->ctx[1]);
  if (s0 != WGC_OK || s1 != WGC_OK) {
    printf("FUZZ FAIL: wgc_create: webgpu %s, cpu %s (%s)\n",
           wgc_status_name(s0), wgc_status_name(s1), wgc_last_error(NULL));
    fz_env_destroy(e);
    return false;
  }
  return true;
}

void fz_env_destroy(fz_env *e) {
  for (int b = 0; b < 2; b++) {
    wgc_destroy(e->ctx[b]);
    e->ctx[b] = NULL;
  }
}

static void env_line(const fz_env *e, char *buf, size_t size) {
  snprintf(buf, size, "mbb=%zu gpuk=%d threads=%u", e->mbb, e->gpu_kernels,
           e->threads);
}

/* ---- shrinking ------------------------------------------------------------
 */

static bool conv_valid(const wgc_conv2d_desc *d) {
  size_t g = d->groups ? d->groups : 1;
  size_t dh = d->dilation_h ? d->dilation_h : 1;
  size_t dw = d->dilation_w ? d->dilation_w : 1;
  return d->r && d->s && d->k && d->c % g == 0 && d->k % g == 0 &&
         d->h + 2 * d->pad_h >= dh * (d->r - 1) + 1 &&
         d->w + 2 * d->pad_w >= dw * (d->s - 1) + 1;
}

static bool step_valid(const fz_step *s) {
  if (s->kind == FZ_CONV)
    return conv_valid(&s->cv);
  if (s->kind == FZ_ATTN) {
    size_t hkv = s->at.heads_kv ? s->at.heads_kv : s->at.heads;
    /* head_dim 0 with head_dim_v is invalid (no key dimension) */
    return s->at.heads && s->at.heads % hkv == 0 &&
           (s->at.head_dim || !s->at.head_dim_v);
  }
  if (s->kind == FZ_REDUCE)
    return s->axis < s->sh.rank;
  if (s->kind == FZ_GEMM_EX &&
      (s->dtb == WGC_DTYPE_Q8_0 || s->dtb == WGC_DTYPE_Q4_0))
    return s->k % 32 == 0 && s->ldb % 32 == 0 && s->sb % 32 == 0;
  if (s->kind == FZ_BCAST || s->kind == FZ_WHERE) {
    size_t out[16], rank, out2[16], rank2;
    return ref_broadcast_shape(s->sh.d, s->sh.rank, s->shb.d, s->shb.rank, out,
                               &rank) &&
           ref_broadcast_shape(out, rank, s->shc.d, s->shc.rank, out2, &rank2);
  }
  return true;
}

/* Candidate i of the smaller steps tried from s; false past the last. */
static bool candidate(const fz_step *s, int i, fz_step *t) {
  *t = *s;
  size_t *sizes[] = {&t->m,
                     &t->n,
                     &t->k,
                     &t->batch,
                     &t->cv.n,
                     &t->cv.c,
                     &t->cv.h,
                     &t->cv.w,
                     &t->cv.k,
                     &t->cv.r,
                     &t->cv.s,
                     &t->at.batch,
                     &t->at.heads,
                     &t->at.seq_q,
                     &t->at.seq_kv,
                     &t->at.head_dim,
                     &t->lda,
                     &t->ldb,
                     &t->ldc,
                     &t->sa,
                     &t->sb,
                     &t->sc,
                     &t->cv.pad_h,
                     &t->cv.pad_w,
                     &t->cv.stride_h,
                     &t->cv.stride_w,
                     &t->cv.dilation_h,
                     &t->cv.dilation_w,
                     &t->rd.batch,
                     &t->rd.seq,
                     &t->rd.heads};
  const int nsizes = (int)(sizeof sizes / sizeof *sizes);
  int c = 0;
  /* Each size at 1 first: most failures need no more; then fewer
   * specials, which names the value class behind a failure; then halves. */
  for (int k = 0; k < nsizes; k++)
    if (i == c++) {
      *sizes[k] = *sizes[k] > 1 ? 1 : *sizes[k];
      return true;
    }
  if (i == c++) {
    t->sp = 0;
    t->spk = 0;
    return true;
  }
  for (int bit = 0; bit < 6; bit++)
    if (i == c++) {
      t->spk &= ~(1u << bit);
      return true;
    }
  if (i == c++) {
    t->sp = t->sp ? 1000 : 0;
    return true;
  }
  if (i == c++) {
    t->sp = t->sp > 1 ? t->sp / 2 : 0;
    return true;
  }
  for (int k = 0; k < nsizes; k++)
    if (i == c++) {
      *sizes[k] /= 2;
      return true;
    }
  for (int d = 0; d < 8; d++) {
    if (i == c++) {
      t->sh.d[d] = t->sh.d[d] > 1 ? t->sh.d[d] / 2 : t->sh.d[d];
      return true;
    }
    if (i == c++) { /* broadcast: a dimension of 1 on both sides */
      if (d < (int)t->sh.rank)
        t->sh.d[d] = 1;
      if (d < (int)t->shb.rank)
        t->shb.d[d] = 1;
      return true;
    }
  }
  if (i == c++) {
    t->at.heads_kv = 0;
    return true;
  }
  if (i == c++) {
    t->cv.groups = 0;
    return true;
  }
  if (i == c++) {
    t->gap = 0;
    return true;
  }
  if (i == c++) {
    t->pack = 0;
    return true;
  }
  if (i == c++) {
    t->inplace = 0;
    return true;
  }
  if (i == c++) {
    t->nullptrs = 0;
    return true;
  }
  if (i == c++) {
    t->bias = 0;
    return true;
  }
  return false;
}

int fz_shrink(fz_env *e, fz_step *s, int index, char *msg, size_t size) {
  int runs = 0;
  char tmsg[1024];
  bool progress = true;
  while (progress && runs < 30) {
    progress = false;
    fz_step t;
    for (int i = 0; candidate(s, i, &t) && runs < 30; i++) {
      if (!memcmp(&t, s, sizeof t) || !step_valid(&t))
        continue;
      runs++;
      tmsg[0] = 0;
      char line[1024];
      fz_format(&t, line, sizeof line);
      /* Progress for the parent's hang watch, and the step if one hangs. */
      printf("step %d: shrinking, run %d: %s\n", index, runs, line);
      fflush(stdout);
      if (!fz_run_alone(e, &t, tmsg, sizeof tmsg)) {
        *s = t;
        snprintf(msg, size, "%s", tmsg);
        progress = true;
      }
    }
  }
  return runs;
}

/* ---- reporting ------------------------------------------------------------
 */

static int failures;

/* Prints a failure, then shrinks the step and prints the reproduction. */
static void report(fz_env *e, uint64_t seed, int index, const fz_step *s,
                   const char *msg) {
  char line[1024], env[96];
  failures++;
  fz_format(s, line, sizeof line);
  env_line(e, env, sizeof env);
  printf("FUZZ FAIL seed=%llu step=%d %s\n", (unsigned long long)seed, index,
         env);
  printf("FUZZ   step: %s\n", line);
  printf("FUZZ   %s\n", msg);
  if (failures > 3) {
    printf("FUZZ   (not shrunk: more than 3 failures in this seed)\n");
    return;
  }
  char amsg[1024];
  if (fz_run_alone(e, s, amsg, sizeof amsg)) {
    printf("FUZZ   passes when run alone: it needs the steps before it; "
           "replay with make fuzz SEED=%llu\n",
           (unsigned long long)seed);
    return;
  }
  fz_step t = *s;
  int runs = fz_shrink(e, &t, index, amsg, sizeof amsg);
  fz_format(&t, line, sizeof line);
  printf("FUZZ   shrunk (%d runs): %s\n", runs, amsg);
  printf("FUZZ   repro: FUZZ_REPRO='%s %s' build/test_wgc child_fuzz_seed\n",
         env, line);
  fflush(stdout);
}

/* ---- destroying a context from its own callback ---------------------------
 */

typedef struct life {
  wgc_context *ctx;
  int fired_first, fired_second, fired_late;
  wgc_status st_first, st_second, late_reg;
  bool destroying, registered_late;
} life;

static void late_done(wgc_status st, void *user) {
  life *l = user;
  (void)st;
  l->fired_late++;
}

/* got is want negated twice: the same bits, a zero where want is
 * subnormal and the adapter flushes subnormals, or a NaN where want is one
 * (an adapter may quiet a signalling NaN). */
static bool same_or_flushed(const float *want, const float *got, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (memcmp(&want[i], &got[i], 4) &&
        !(fpclassify(want[i]) == FP_SUBNORMAL && got[i] == 0.0f) &&
        !(isnan(want[i]) && isnan(got[i])))
      return false;
  return true;
}

static void first_done(wgc_status st, void *user) {
  life *l = user;
  l->fired_first++;
  l->st_first = st;
  l->destroying = true;
  wgc_destroy(l->ctx);
}

static void second_done(wgc_status st, void *user) {
  life *l = user;
  l->fired_second++;
  l->st_second = st;
  /* A registration while the context is being destroyed is CANCELLED and
   * never fires; before that it is an ordinary registration. */
  l->late_reg = wgc_synchronize_async(l->ctx, late_done, l);
  l->registered_late = true;
}

static bool lifecycle(const fz_env *e, fz_rng *r, char *msg, size_t size) {
  for (int b = 0; b < 2; b++) {
    fz_env tmp;
    memset(&tmp, 0, sizeof tmp);
    wgc_context *ctx = NULL;
    wgc_options o = {.backend = b ? WGC_BACKEND_CPU : WGC_BACKEND_WEBGPU,
                     .max_binding_bytes = e->mbb,
                     .cpu_threads = e->threads};
    if (wgc_create(&o, &ctx) != WGC_OK) {
      snprintf(msg, size, "%s: wgc_create: %s", fz_backend[b],
               wgc_last_error(NULL));
      return false;
    }
    size_t n = 1 + fz_below(r, 300);
    float *src = calloc(n, 4), *d1 = calloc(n, 4), *d2 = calloc(n, 4);
    fz_fill(r, src, n, FZ_DIST_BITS, 1, 0, 0);
    wgc_ptr p = 0;
    life *l = calloc(1, sizeof *l);
    l->ctx = ctx;
    bool ok = wgc_alloc(ctx, n * 4, &p) == WGC_OK &&
              wgc_upload(ctx, p, src, n * 4) == WGC_OK &&
              wgc_unary(ctx, WGC_UNARY_NEG, p, p, n) == WGC_OK &&
              wgc_unary(ctx, WGC_UNARY_NEG, p, p, n) == WGC_OK &&
              wgc_download_async(ctx, d1, p, n * 4, first_done, l) == WGC_OK &&
              wgc_download_async(ctx, d2, p, n * 4, second_done, l) == WGC_OK;
    if (!ok) {
      snprintf(msg, size, "%s: setting up: %s", fz_backend[b],
               wgc_last_error(ctx));
      wgc_destroy(ctx);
      return false;
    }
    if (fz_chance(r, 0.5))
      wgc_free(ctx, p); /* still used by the queued downloads */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!l->fired_first) {
      wgc_poll(ctx);
      clock_gettime(CLOCK_MONOTONIC, &t);
      if (t.tv_sec - t0.tv_sec > 60)
        break;
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
    /* From here the context is gone: its callbacks must all have fired. */
    if (!l->fired_first) {
      snprintf(msg, size, "%s: download_async never called back",
               fz_backend[b]);
      return false; /* everything leaks: callbacks may still come */
    }
    if (l->fired_first != 1 || l->fired_second != 1 || l->st_first != WGC_OK ||
        l->st_second != WGC_OK)
      snprintf(msg, size,
               "%s: destroying the context inside a callback: first fired %d "
               "(%s), second fired %d (%s)",
               fz_backend[b], l->fired_first, wgc_status_name(l->st_first),
               l->fired_second, wgc_status_name(l->st_second)),
          ok = false;
    else if (!same_or_flushed(src, d1, n) || !same_or_flushed(src, d2, n))
      snprintf(msg, size, "%s: a download around the destroy read wrong data",
               fz_backend[b]),
          ok = false;
    else if (l->registered_late && l->late_reg == WGC_OK && l->fired_late != 1)
      snprintf(msg, size,
               "%s: wgc_synchronize_async made inside a callback, before the "
               "destroy took effect, fired %d times",
               fz_backend[b], l->fired_late),
          ok = false;
    else if (l->registered_late && l->late_reg != WGC_OK &&
             (l->late_reg != WGC_ERR_CANCELLED || l->fired_late))
      snprintf(msg, size,
               "%s: a registration during wgc_destroy returned %s and fired "
               "%d times (want CANCELLED, never)",
               fz_backend[b], wgc_status_name(l->late_reg), l->fired_late),
          ok = false;
    free(src);
    free(d1);
    free(d2);
    free(l);
    if (!ok)
      return false;
  }
  return true;
}

/* ---- a seed -----------------------------------------------------------------
 */

static void stray_done(wgc_status st, void *user) {
  int *fired = user;
  (void)st;
  (*fired)++;
}

#define MAX_QUEUED 8

int fz_run_seed(uint64_t seed, int steps) {
  fz_rng r = fz_rng_make(seed);
  failures = 0;
  /* The webgpu context's settings: small binding windows force splitting,
   * the GPU kernel form runs the code real GPUs get. */
  size_t mbb = 0;
  double u = fz_unit(&r);
  if (u < 0.1)
    mbb = 4096 + 4 * fz_below(&r, 64);
  else if (u < 0.45)
    mbb = 4096 + 4 * fz_below(&r, 3073);
  int gpuk = fz_chance(&r, 0.5);
  unsigned threads = 1 + (unsigned)fz_below(&r, 4);
  fz_env e;
  if (!fz_env_create(&e, mbb, gpuk, threads))
    return 1;
  char env[96];
  env_line(&e, env, sizeof env);
  printf("seed %llu: %s\n", (unsigned long long)seed, env);
  fflush(stdout);

  struct {
    fz_pending *p;
    fz_step s;
    int index;
  } queued[MAX_QUEUED];
  int nq = 0;
  int stray_fired[2] = {0, 0}, stray_want[2] = {0, 0};
  char msg[1024], line[1024];
  /* FUZZ_KIND=name: every step of that kind, for aiming at one op. */
  const char *only = getenv("FUZZ_KIND");
  fz_kind kind = only ? fz_kind_from_name(only) : FZ_NONE;
  for (int i = 0; i < steps; i++) {
    fz_step s;
    fz_gen_step(&r, &s, kind);
    fz_format(&s, line, sizeof line);
    printf("step %d: %s\n", i, line);
    fflush(stdout);
    msg[0] = 0;
    fz_pending *p = fz_issue(&e, &s, &r, msg, sizeof msg);
    if (!p) {
      report(&e, seed, i, &s, msg);
      continue;
    }
    if (fz_chance(&r, 0.3))
      fz_free_inputs(&e, p);
    if (fz_chance(&r, 0.1))
      for (int b = 0; b < 2; b++)
        wgc_poll(e.ctx[b]);
    if (fz_chance(&r, 0.08))
      for (int b = 0; b < 2; b++)
        if (wgc_synchronize_async(e.ctx[b], stray_done, &stray_fired[b]) ==
            WGC_OK)
          stray_want[b]++;
    queued[nq].p = p;
    queued[nq].s = s;
    queued[nq].index = i;
    nq++;
    /* Checked now, or left queued behind later steps. */
    bool last = i == steps - 1;
    if (last || nq == MAX_QUEUED || fz_chance(&r, 0.45)) {
      int how = (int)fz_below(&r, 3);
      printf("step %d: checking steps %d..%d (%s)\n", i, queued[0].index,
             queued[nq - 1].index,
             how == 0 ? "wgc_download"
             : how == 1
                 ? "wgc_download_async, wgc_synchronize"
                 : "wgc_download_async, wgc_synchronize_async, wgc_poll");
      fflush(stdout);
      for (int q = 0; q < nq; q++) {
        msg[0] = 0;
        if (!fz_check(&e, queued[q].p, how, &r, msg, sizeof msg))
          report(&e, seed, queued[q].index, &queued[q].s, msg);
      }
      nq = 0;
    }
  }
  for (int b = 0; b < 2; b++)
    wgc_synchronize(e.ctx[b]);
  for (int b = 0; b < 2; b++)
    wgc_poll(e.ctx[b]);
  for (int b = 0; b < 2; b++)
    if (stray_fired[b] != stray_want[b]) {
      failures++;
      printf("FUZZ FAIL seed=%llu %s: %d of %d wgc_synchronize_async callbacks "
             "fired after wgc_synchronize\n",
             (unsigned long long)seed, fz_backend[b], stray_fired[b],
             stray_want[b]);
    }
  if (fz_invalid_callbacks_fired()) {
    failures++;
    printf("FUZZ FAIL seed=%llu: a callback of a rejected registration "
           "fired\n",
           (unsigned long long)seed);
  }
  if (fz_chance(&r, 0.5)) {
    printf("step %d: lifecycle (wgc_destroy inside a callback)\n", steps);
    fflush(stdout);
    msg[0] = 0;
    if (!lifecycle(&e, &r, msg, sizeof msg)) {
      failures++;
      printf("FUZZ FAIL seed=%llu step=%d %s\nFUZZ   lifecycle: %s\n",
             (unsigned long long)seed, steps, env, msg);
    }
  }
  fz_env_destroy(&e);
  fz_print_worst();
  printf("seed %llu: %d failures\n", (unsigned long long)seed, failures);
  fflush(stdout);
  return failures;
}

int fz_run_repro(const char *text) {
  size_t mbb = 0;
  int gpuk = 0;
  unsigned threads = 0;
  char rest[1024] = "";
  size_t used = 0;
  const char *c = text;
  char word[160];
  int n;
  while (sscanf(c, "%159s%n", word, &n) == 1) {
    c += n;
    if (!strncmp(word, "mbb=", 4))
      mbb = (size_t)strtoull(word + 4, NULL, 10);
    else if (!strncmp(word, "gpuk=", 5))
      gpuk = atoi(word + 5);
    else if (!strncmp(word, "threads=", 8))
      threads = (unsigned)atoi(word + 8);
    else
      used += (size_t)snprintf(rest + used, sizeof rest - used, "%s%s",
                               used ? " " : "", word);
  }
  fz_step s;
  if (!fz_parse(rest, &s)) {
    printf("FUZZ FAIL: cannot parse the step \"%s\"\n", rest);
    return 1;
  }
  fz_env e;
  if (!fz_env_create(&e, mbb, gpuk, threads))
    return 1;
  char msg[1024] = "", line[1024];
  fz_format(&s, line, sizeof line);
  printf("step 0: %s\n", line);
  fflush(stdout);
  bool ok = fz_run_alone(&e, &s, msg, sizeof msg);
  if (!ok)
    printf("FUZZ FAIL repro: %s\nFUZZ   %s\n", line, msg);
  fz_env_destroy(&e);
  return ok ? 0 : 1;
}
