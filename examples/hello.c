/* The smallest wgc program: C = A * B on the default backend. Build it
 * against an installed wgc with
 *   cc hello.c $(pkg-config --cflags --libs wgc)                          */
#include <wgc.h>

#include <stdio.h>

int main(void) {
  wgc_context *ctx;
  if (wgc_create(NULL, &ctx) != WGC_OK) {
    fprintf(stderr, "hello: %s\n", wgc_last_error(NULL));
    return 1;
  }
  /* Row-major 2x3 times 3x2. */
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, c[4];
  wgc_ptr da, db, dc;
  if (wgc_alloc(ctx, sizeof a, &da) || wgc_alloc(ctx, sizeof b, &db) ||
      wgc_alloc(ctx, sizeof c, &dc) || wgc_upload(ctx, da, a, sizeof a) ||
      wgc_upload(ctx, db, b, sizeof b) ||
      wgc_gemm(ctx, WGC_ROW_MAJOR, WGC_NO_TRANS, WGC_NO_TRANS, 2, 2, 3, 1.0f,
               da, 3, db, 2, 0.0f, dc, 2) ||
      wgc_download(ctx, c, dc, sizeof c)) {
    fprintf(stderr, "hello: %s\n", wgc_last_error(ctx));
    wgc_destroy(ctx);
    return 1;
  }
  printf("wgc %s, %s on %s: [[%g, %g], [%g, %g]]\n", wgc_version(),
         wgc_backend_name(ctx), wgc_adapter_name(ctx), c[0], c[1], c[2], c[3]);
  wgc_destroy(ctx);
  /* 1*7+2*9+3*11 = 58, 64, 139, 154 */
  return c[0] == 58 && c[1] == 64 && c[2] == 139 && c[3] == 154 ? 0 : 1;
}
