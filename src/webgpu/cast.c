/* wgc_cast on WebGPU: kernels/cast.wgsl over windows of whole blocks. */
#include "plan.h"

#include "dtype.h"

#include <stdio.h>

#define UNIT 32u /* elements per window step: whole blocks of every type */

_Static_assert(WGC_DTYPE_F32 == 0 && WGC_DTYPE_F16 == 1 &&
                   WGC_DTYPE_BF16 == 2 && WGC_DTYPE_I32 == 3 &&
                   WGC_DTYPE_Q8_0 == 4 && WGC_DTYPE_Q4_0 == 5 &&
                   WGC_DTYPE_COUNT == 6,
               "kernels/dtype.wgsl's T_* constants follow WGC_DTYPES");

/* Matches struct Params of kernels/cast.wgsl. */
typedef struct cast_params {
  uint32_t off[4];
  uint32_t count, n, sh, dh, dbytes, zero;
} cast_params;

typedef struct cast_job {
  const wgc_cast_args *a;
  char consts[64];
} cast_job;

static uint64_t type_bytes(wgc_dtype t, uint64_t n) {
  return n / wgc_dtype_block(t) * wgc_dtype_block_bytes(t);
}

/* ref at byte offset bytes past r, moved back to a 4-byte boundary; the
 * bytes moved back in *lead. */
static wgc_ref word_ref(wgc_ref r, uint64_t bytes, uint32_t *lead) {
  r.offset += bytes;
  *lead = (uint32_t)(r.offset & 3);
  r.offset -= *lead;
  return r;
}

static void cast_window(void *user, uint64_t at, uint64_t units, wg_launch *l,
                        void *params) {
  const cast_job *j = user;
  const wgc_cast_args *a = j->a;
  uint64_t e0 = at * UNIT, e1 = (at + units) * UNIT;
  if (e1 > a->n)
    e1 = a->n;
  cast_params *p = params;
  *p = (cast_params){.n = (uint32_t)(e1 - e0)};
  wgc_ref src = word_ref(a->src, type_bytes(a->src_type, e0), &p->sh);
  wgc_ref dst = word_ref(a->dst, type_bytes(a->dst_type, e0), &p->dh);
  uint64_t sbytes = type_bytes(a->src_type, e1 - e0);
  p->dbytes = (uint32_t)type_bytes(a->dst_type, e1 - e0);
  uint64_t swin = (p->sh + sbytes + 3) & ~(uint64_t)3,
           dwin = (p->dh + p->dbytes + 3) & ~(uint64_t)3;
  p->count = (uint32_t)(dwin / 4);
  *l = (wg_launch){
      .kernel = "dtype+cast",
      .consts = j->consts,
      .ops = {{.name = "src", .ref = src, .bytes = swin, .write = false},
              {.name = "dst", .ref = dst, .bytes = dwin, .write = true}},
      .nops = 2,
      .params_size = sizeof *p,
      .groups = wg_ceil_div(p->count, 256)};
}

wgc_status wg_cast(wgc_context *ctx, const wgc_cast_args *a) {
  wg_plan plan;
  wg_plan_init(&plan, ctx, a->fn);
  cast_job j = {.a = a};
  snprintf(j.consts, sizeof j.consts, "const ST = %du;\nconst DT = %du;\n",
           (int)a->src_type, (int)a->dst_type);
  /* a window's words stay below what one launch's grid and binding hold */
  uint64_t most = wg_chunk_elems(plan.pol, 256) / UNIT;
  if (most == 0)
    most = 1;
  wgc_status s =
      wg_plan_windows(&plan, wg_ceil_div(a->n, UNIT), most, cast_window, &j);
  return wg_plan_finish(&plan, s);
}
