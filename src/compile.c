/* Compiling ahead (wgc.h): while the context compiles ahead, the backends'
 * op members only ask for their kernels; wgc_compile_end has them
 * compiled together. */
#include "internal.h"

static wgc_status check(wgc_context *ctx, const char *fn, bool compiling) {
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (ctx->compiling != compiling)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    compiling ? "%s: the context is not compiling ahead "
                                "(wgc_compile_begin)"
                              : "%s: the context is already compiling ahead",
                    fn);
  return WGC_OK;
}

wgc_status wgc_compile_begin(wgc_context *ctx) {
  wgc_status s = check(ctx, "wgc_compile_begin", false);
  if (s == WGC_OK)
    ctx->compiling = true;
  return s;
}

/* Leaves the mode and compiles; p completes once the kernels are ready. */
static wgc_status compile_end(wgc_context *ctx, const char *fn,
                              wgc_pending *p) {
  ctx->compiling = false;
  if (ctx->be->compile_ahead)
    return ctx->be->compile_ahead(ctx, fn, p);
  if (p)
    wgc_pending_complete(p, WGC_OK);
  return WGC_OK;
}

wgc_status wgc_compile_end(wgc_context *ctx) {
  wgc_status s = check(ctx, "wgc_compile_end", true);
  return s == WGC_OK ? compile_end(ctx, "wgc_compile_end", NULL) : s;
}

wgc_status wgc_compile_end_async(wgc_context *ctx,
                                 void (*done)(wgc_status, void *user),
                                 void *user) {
  const char *fn = "wgc_compile_end_async";
  wgc_status s = check(ctx, fn, true);
  if (s != WGC_OK)
    return s;
  if (!done)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "%s: done is NULL", fn);
  wgc_pending *p;
  s = wgc_pending_new(ctx, fn, done, user, &p);
  if (s != WGC_OK)
    return s;
  return wgc_pending_started(ctx, p, compile_end(ctx, fn, p));
}
