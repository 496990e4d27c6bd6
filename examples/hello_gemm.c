/* The smallest wgc program that runs both natively and in the browser
 * unchanged: a 2x3 by 3x2 GEMM, checked against the same product in
 * double. It uses only the _async calls, because in the browser nothing
 * may wait: each step is a callback that starts the next, and the
 * callbacks fire from wgc_poll natively and from the event loop in the
 * browser.
 *
 *   native:  make build/hello_gemm && build/hello_gemm [cpu|webgpu]
 *   browser: make wasm, then (web/wgc.js)
 *            const app = await instantiate('hello_gemm.wasm',
 *                {env: {hello_report: (status, error) => ...}});
 *            app.hello_start(BACKEND_AUTO);
 */
#include <wgc.h>

#include <math.h>
#include <stdio.h>

#define M 2
#define N 2
#define K 3

static const float a_host[M * K] = {1, 2, 3, 4, 5, 6};
static const float b_host[K * N] = {0.5f, -1, 0.25f, 2, -0.125f, 1};

static struct {
  wgc_context *ctx;
  wgc_ptr a, b, c;
  float c_host[M * N];
  int finished; /* 1 once hello_report ran */
} app;

/* The page provides hello_report; natively it prints. status is a
 * wgc_status, error the largest difference from the double product. */
#ifdef __wasm__
__attribute__((import_module("env"), import_name("hello_report"))) void
hello_report(int status, double error);
#else
static void hello_report(int status, double error) {
  printf("%s: largest difference from double %.3g\n",
         wgc_status_name((wgc_status)status), error);
}
#endif

static void finish(wgc_status s) {
  double error = 0;
  for (int i = 0; i < M && s == WGC_OK; i++)
    for (int j = 0; j < N; j++) {
      double want = 0;
      for (int p = 0; p < K; p++)
        want += (double)a_host[i * K + p] * b_host[p * N + j];
      error = fmax(error, fabs(want - app.c_host[i * N + j]));
    }
  if (s != WGC_OK)
    printf("hello_gemm: %s\n", wgc_last_error(app.ctx));
  hello_report(s, error);
  app.finished = 1;
}

static void downloaded(wgc_status s, void *user) {
  (void)user;
  finish(s);
}

static void created(wgc_status s, wgc_context *ctx, void *user) {
  (void)user;
  app.ctx = ctx;
  if (s == WGC_OK)
    s = wgc_alloc(ctx, sizeof a_host, &app.a);
  if (s == WGC_OK)
    s = wgc_alloc(ctx, sizeof b_host, &app.b);
  if (s == WGC_OK)
    s = wgc_alloc(ctx, sizeof app.c_host, &app.c);
  if (s == WGC_OK)
    s = wgc_upload(ctx, app.a, a_host, sizeof a_host);
  if (s == WGC_OK)
    s = wgc_upload(ctx, app.b, b_host, sizeof b_host);
  if (s == WGC_OK) /* enqueued: nothing waits */
    s = wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, M, N, K, 1.0f,
                 app.a, K, app.b, N, 0.0f, app.c, N);
  if (s == WGC_OK) /* downloaded() runs once c_host holds the result */
    s = wgc_download_async(ctx, app.c_host, app.c, sizeof app.c_host,
                           downloaded, NULL);
  if (s != WGC_OK)
    finish(s);
}

/* Starts the program on backend (a wgc_backend); the answer comes through
 * hello_report. The page calls it: clang hides what a wasm module does not
 * name as an export. */
#ifdef __wasm__
__attribute__((export_name("hello_start")))
#endif
int hello_start(int backend) {
  wgc_options opt = {.backend = (wgc_backend)backend};
  return wgc_create_async(&opt, created, NULL);
}

#ifndef __wasm__
#include <string.h>

int main(int argc, char **argv) {
  wgc_backend b = WGC_BACKEND_AUTO;
  if (argc > 1)
    b = strcmp(argv[1], "cpu") == 0 ? WGC_BACKEND_CPU : WGC_BACKEND_WEBGPU;
  wgc_status s = hello_start(b);
  if (s != WGC_OK) {
    printf("hello_gemm: %s\n", wgc_last_error(NULL));
    return 1;
  }
  /* Natively the callbacks fire from wgc_poll (wgc_create_async's from
   * wgc_poll(NULL)) or from wgc_synchronize, which waits for the queued
   * work and then runs them. */
  while (!app.finished)
    s = app.ctx ? wgc_synchronize(app.ctx) : wgc_poll(NULL);
  (void)s;
  wgc_destroy(app.ctx);
  return 0;
}
#endif
