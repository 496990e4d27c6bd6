/* Allocation, transfers and copies: validation, then the backend. */
#include "internal.h"

#include "table.h"
#include "validate.h"

#include <inttypes.h>

#define CHECK_CTX(fn)                                                          \
  do {                                                                         \
    if (!ctx)                                                                  \
      return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, fn ": ctx is NULL");     \
  } while (0)

wgc_status wgc_alloc(wgc_context *ctx, size_t bytes, wgc_ptr *out) {
  CHECK_CTX("wgc_alloc");
  if (!out)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT, "wgc_alloc: out is NULL");
  if (bytes == 0)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_alloc: bytes is 0; allocations hold at least 1 byte");
  if ((uint64_t)bytes > WGC_MAX_ALLOC_BYTES)
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_alloc: bytes %zu exceeds the largest allocation "
                    "(%" PRIu64 " bytes)",
                    bytes, (uint64_t)WGC_MAX_ALLOC_BYTES);
  void *mem = NULL;
  /* Round up so whole 4-byte elements always fit. */
  size_t padded = (bytes + 3) & ~(size_t)3;
  wgc_status s = ctx->be->alloc(ctx, padded, &mem);
  if (s != WGC_OK)
    return s;
  if (!wgc_table_add(&ctx->table, mem, bytes, out)) {
    ctx->be->free(ctx, mem);
    return wgc_fail(ctx, WGC_ERR_OUT_OF_MEMORY,
                    "wgc_alloc: no host memory for the allocation's record");
  }
  return WGC_OK;
}

wgc_status wgc_free(wgc_context *ctx, wgc_ptr base) {
  CHECK_CTX("wgc_free");
  wgc_slot *s = base ? wgc_table_lookup(&ctx->table, base) : NULL;
  if (!s)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_free: base 0x%016" PRIx64
                    " is not a live allocation (freed or never allocated)",
                    base);
  if (wgc_ptr_offset(base))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_free: base 0x%016" PRIx64 " points %" PRIu64
                    " bytes into its allocation, not at "
                    "its base",
                    base, wgc_ptr_offset(base));
  ctx->be->free(ctx, s->mem);
  wgc_table_remove(&ctx->table, s);
  return WGC_OK;
}

/* Transfers would run: refused while the context compiles ahead. */
#define CHECK_NOT_COMPILING(fn)                                                \
  do {                                                                         \
    if (ctx->compiling)                                                        \
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,                           \
                      fn ": the context is compiling ahead (between "          \
                         "wgc_compile_begin and wgc_compile_end), where "      \
                         "nothing runs");                                      \
  } while (0)

/* Checks a transfer range: aligned size, then the address. */
static wgc_status check_range(wgc_context *ctx, const char *fn,
                              const char *param, wgc_ptr addr, size_t bytes,
                              wgc_operand *op) {
  if (bytes % 4)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: bytes %zu is not a multiple of 4", fn, bytes);
  *op =
      (wgc_operand){.param = param, .addr = addr, .bytes = bytes, .repeat = 1};
  return wgc_check_operand(ctx, fn, op);
}

wgc_status wgc_upload(wgc_context *ctx, wgc_ptr dst, const void *src,
                      size_t bytes) {
  CHECK_CTX("wgc_upload");
  CHECK_NOT_COMPILING("wgc_upload");
  if (bytes == 0)
    return WGC_OK;
  if (!src)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_upload: src is NULL with bytes %zu", bytes);
  wgc_operand d;
  wgc_status s = check_range(ctx, "wgc_upload", "dst", dst, bytes, &d);
  if (s != WGC_OK)
    return s;
  return ctx->be->upload(ctx, d.ref, src, bytes);
}

wgc_status wgc_download(wgc_context *ctx, void *dst, wgc_ptr src,
                        size_t bytes) {
  CHECK_CTX("wgc_download");
  CHECK_NOT_COMPILING("wgc_download");
  if (bytes == 0)
    return WGC_OK;
  if (!dst)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_download: dst is NULL with bytes %zu", bytes);
  wgc_operand o;
  wgc_status s = check_range(ctx, "wgc_download", "src", src, bytes, &o);
  if (s != WGC_OK)
    return s;
  s = ctx->be->download(ctx, dst, o.ref, bytes);
  if (s == WGC_ERR_WOULD_BLOCK)
    return wgc_fail(ctx, s,
                    "wgc_download: cannot wait here; use wgc_download_async");
  return s;
}

wgc_status wgc_download_async(wgc_context *ctx, void *dst, wgc_ptr src,
                              size_t bytes, void (*done)(wgc_status, void *),
                              void *user) {
  CHECK_CTX("wgc_download_async");
  CHECK_NOT_COMPILING("wgc_download_async");
  if (!done)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "wgc_download_async: done is NULL");
  wgc_operand o = {0};
  if (bytes) {
    if (!dst)
      return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                      "wgc_download_async: dst is NULL with bytes %zu", bytes);
    wgc_status s =
        check_range(ctx, "wgc_download_async", "src", src, bytes, &o);
    if (s != WGC_OK)
      return s;
  }
  wgc_pending *p;
  wgc_status s = wgc_pending_new(ctx, "wgc_download_async", done, user, &p);
  if (s != WGC_OK)
    return s;
  if (!bytes) {
    wgc_pending_complete(p, WGC_OK);
    return wgc_pending_started(ctx, p, WGC_OK);
  }
  return wgc_pending_started(
      ctx, p, ctx->be->download_async(ctx, dst, o.ref, bytes, p));
}

wgc_status wgc_copy(wgc_context *ctx, wgc_ptr dst, wgc_ptr src, size_t bytes) {
  CHECK_CTX("wgc_copy");
  CHECK_NOT_COMPILING("wgc_copy");
  if (bytes == 0)
    return WGC_OK;
  wgc_operand d, sr;
  wgc_status s = check_range(ctx, "wgc_copy", "dst", dst, bytes, &d);
  if (s == WGC_OK)
    s = check_range(ctx, "wgc_copy", "src", src, bytes, &sr);
  if (s == WGC_OK)
    s = wgc_check_no_overlap(ctx, "wgc_copy", &d, &sr, false);
  if (s != WGC_OK)
    return s;
  return ctx->be->copy(ctx, d.ref, sr.ref, bytes);
}
