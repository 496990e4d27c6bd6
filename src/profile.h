/* Per-operation timing (profile.c): the records, and each op family's
 * shape in short (profile_shape.c). */
#ifndef WGC_PROFILE_H
#define WGC_PROFILE_H

#include "internal.h"

/* Writes family name's shape of a into out (cap bytes, NUL included). */
#define WGC_SHAPE_DECLARE_(NAME, name)                                         \
  void wgc_shape_##name(const wgc_##name##_args *a, char *out, size_t cap);
WGC_OP_FAMILIES(WGC_SHAPE_DECLARE_)
#undef WGC_SHAPE_DECLARE_

/* The done records of ctx's recording, in order, as the trace writer
 * (profile_trace.c) reads them: *count of them at *recs, and the
 * context's track number (track may be NULL). An error naming fn when
 * recording was never started. */
wgc_status wgc_profile_view(wgc_context *ctx, const char *fn,
                            const wgc_profile_record **recs, size_t *count,
                            unsigned *track);

#endif
