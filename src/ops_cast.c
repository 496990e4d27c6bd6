/* wgc_cast's entry point: types, whole blocks, alignment, footprints. */
#include "internal.h"

#include "dtype.h"
#include "table.h"
#include "validate.h"

#include <inttypes.h>

/* Checks one operand's type, block count and alignment, and describes its
 * footprint. */
static wgc_status cast_operand(wgc_context *ctx, const char *fn,
                               const char *param, const char *tparam,
                               wgc_ptr addr, wgc_dtype t, size_t n,
                               wgc_operand *op) {
  if (!wgc_dtype_valid(t))
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s %d is not a wgc_dtype", fn, tparam, (int)t);
  size_t block = wgc_dtype_block(t);
  if (n % block)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: n %zu is not a whole number of blocks of %s (%s "
                    "%s: %zu elements each)",
                    fn, n, param, tparam, wgc_dtype_name(t), block);
  uint64_t bytes = wgc_sat_mul(n / block, wgc_dtype_block_bytes(t));
  /* 2-byte types and blocks (their f16 scale) start at any even offset */
  uint32_t align = wgc_dtype_block_bytes(t) % 4 ? 2 : 4;
  if (n && addr && wgc_ptr_offset(addr) % align)
    return wgc_fail(ctx, WGC_ERR_INVALID_ARGUMENT,
                    "%s: %s 0x%016" PRIx64 " is not %u-byte aligned, as a %s "
                    "operand must be",
                    fn, param, addr, align, wgc_dtype_name(t));
  *op = (wgc_operand){.param = param,
                      .addr = addr,
                      .bytes = bytes,
                      .repeat = 1,
                      .align = align};
  return WGC_OK;
}

wgc_status wgc_cast(wgc_context *ctx, wgc_ptr src, wgc_dtype src_type,
                    wgc_ptr dst, wgc_dtype dst_type, size_t n) {
  const char *fn = "wgc_cast";
  if (!ctx)
    return wgc_fail(NULL, WGC_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  wgc_operand ops[2];
  wgc_status s =
      cast_operand(ctx, fn, "src", "src_type", src, src_type, n, &ops[0]);
  if (s == WGC_OK)
    s = cast_operand(ctx, fn, "dst", "dst_type", dst, dst_type, n, &ops[1]);
  if (s != WGC_OK || n == 0)
    return s;
  s = wgc_check_all(ctx, fn, ops, 2);
  if (s != WGC_OK)
    return s;
  wgc_cast_args a = {.n = n,
                     .src_type = src_type,
                     .dst_type = dst_type,
                     .src = ops[0].ref,
                     .dst = ops[1].ref,
                     .fn = fn};
  return ctx->be->cast(ctx, &a);
}
