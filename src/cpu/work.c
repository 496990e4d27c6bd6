/* Work values (work.h) run whole, or planned and run in pieces (split.h):
 * one switch per use over the kinds, generated from WGC_OP_FAMILIES for the
 * operations, written out for the memory steps. */
#include "work.h"

#include "cpu.h"

#include <stdlib.h>
#include <string.h>

wgc_status cpu_work_run(wgc_context *ctx, const cpu_work *w) {
  switch (w->kind) {
#define RUN_(NAME, name)                                                       \
  case CPU_WORK_##NAME:                                                        \
    return cpu_##name(ctx, &w->u.name);
    WGC_OP_FAMILIES(RUN_)
#undef RUN_
  case CPU_WORK_UPLOAD:
    memcpy(cpu_ptr(w->u.mem.dst), w->u.mem.host_src, w->u.mem.bytes);
    return WGC_OK;
  case CPU_WORK_COPY:
    /* The front end rejects overlap; memmove costs nothing extra anyway. */
    memmove(cpu_ptr(w->u.mem.dst), cpu_ptr(w->u.mem.src), w->u.mem.bytes);
    return WGC_OK;
  case CPU_WORK_DOWNLOAD:
    memcpy(w->u.mem.host_dst, cpu_ptr(w->u.mem.src), w->u.mem.bytes);
    wgc_pending_complete(w->u.mem.done, WGC_OK); /* fired later */
    return WGC_OK;
  case CPU_WORK_SYNC:
    wgc_pending_complete(w->u.mem.done, WGC_OK);
    return WGC_OK;
  case CPU_WORK_FREE:
    free(w->u.mem.mem);
    return WGC_OK;
  }
  return WGC_OK;
}

const char *cpu_work_fn(const cpu_work *w) {
  switch (w->kind) {
#define FN_(NAME, name)                                                        \
  case CPU_WORK_##NAME:                                                        \
    return w->u.name.fn;
    WGC_OP_FAMILIES(FN_)
#undef FN_
  case CPU_WORK_UPLOAD:
    return "wgc_upload";
  case CPU_WORK_COPY:
    return "wgc_copy";
  case CPU_WORK_DOWNLOAD:
    return "wgc_download_async";
  case CPU_WORK_SYNC:
    return "wgc_synchronize_async";
  case CPU_WORK_FREE:
    return "wgc_free";
  }
  return "wgc";
}

wgc_status cpu_split_plan(const cpu_work *w, double piece_work, cpu_split *s) {
  *s = (cpu_split){.piece_work = piece_work, .pieces = 1};
  switch (w->kind) {
#define PLAN_(NAME, name)                                                      \
  case CPU_WORK_##NAME:                                                        \
    return cpu_split_##name##_plan(&w->u.name, s);
    WGC_OP_FAMILIES(PLAN_)
#undef PLAN_
  case CPU_WORK_UPLOAD:
  case CPU_WORK_COPY:
  case CPU_WORK_DOWNLOAD:
    s->group = piece_work < 2.0 ? 4 : (size_t)(2.0 * piece_work) / 4 * 4;
    s->pieces = cpu_div_up(w->u.mem.bytes, s->group);
    s->work = (double)w->u.mem.bytes / 4.0;
    break;
  case CPU_WORK_SYNC:
  case CPU_WORK_FREE:
    break;
  }
  return WGC_OK;
}

/* Bytes [i*group, +len) of a memory step. */
static void run_bytes(const cpu_work *w, const cpu_split *s, size_t i) {
  size_t off = i * s->group, len = cpu_min(s->group, w->u.mem.bytes - off);
  if (w->kind == CPU_WORK_UPLOAD)
    memcpy((char *)cpu_ptr(w->u.mem.dst) + off,
           (const char *)w->u.mem.host_src + off, len);
  else if (w->kind == CPU_WORK_COPY)
    memcpy((char *)cpu_ptr(w->u.mem.dst) + off,
           (const char *)cpu_ptr(w->u.mem.src) + off, len);
  else
    memcpy((char *)w->u.mem.host_dst + off,
           (const char *)cpu_ptr(w->u.mem.src) + off, len);
}

wgc_status cpu_split_run(wgc_context *ctx, const cpu_work *w, cpu_split *s,
                         size_t i) {
  switch (w->kind) {
#define RUN_PIECE_(NAME, name)                                                 \
  case CPU_WORK_##NAME:                                                        \
    return cpu_split_##name##_run(ctx, &w->u.name, s, i);
    WGC_OP_FAMILIES(RUN_PIECE_)
#undef RUN_PIECE_
  case CPU_WORK_UPLOAD:
  case CPU_WORK_COPY:
  case CPU_WORK_DOWNLOAD:
    run_bytes(w, s, i);
    break;
  case CPU_WORK_SYNC:
  case CPU_WORK_FREE:
    break;
  }
  return WGC_OK;
}

void cpu_split_release(cpu_split *s) {
  free(s->acc);
  s->acc = NULL;
}
