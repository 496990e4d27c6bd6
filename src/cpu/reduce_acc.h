/* One reduction's running state in double, for every op and the arg
 * reductions, fed elements in order along the reduced span (reduce.c,
 * split_reduce.c). Sums of float32 terms in double are exact up to 2^29
 * terms of one binade; LOG_SUM_EXP keeps (max so far, sum of exp(x - max))
 * and rescales the sum when the max grows, so no exponential overflows. */
#ifndef WGC_CPU_REDUCE_ACC_H
#define WGC_CPU_REDUCE_ACC_H

#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct racc {
  double a; /* sum, product, extreme or max so far */
  double b; /* LOG_SUM_EXP: sum of exp(x - a); arg: index, -1 before any */
} racc;

static inline racc racc_init(const wgc_reduce_args *r) {
  if (r->arg == WGC_ARG_MAX)
    return (racc){-INFINITY, -1.0};
  if (r->arg == WGC_ARG_MIN)
    return (racc){INFINITY, -1.0};
  switch (r->op) {
  case WGC_REDUCE_MAX:
  case WGC_REDUCE_LOG_SUM_EXP:
    return (racc){-INFINITY, 0.0};
  case WGC_REDUCE_MIN:
    return (racc){INFINITY, 0.0};
  case WGC_REDUCE_PROD:
    return (racc){1.0, 0.0};
  case WGC_REDUCE_SUM:
  case WGC_REDUCE_MEAN:
  case WGC_REDUCE_SUM_SQUARE:
  case WGC_REDUCE_L1:
  case WGC_REDUCE_L2:
    break;
  }
  return (racc){0.0, 0.0};
}

/* x is element k of the span (k counts only for the arg reductions). */
static inline void racc_add(const wgc_reduce_args *r, racc *s, double x,
                            size_t k) {
  if (r->arg != WGC_ARG_NONE) {
    /* the first NaN wins; ties keep the earlier index */
    bool better = r->arg == WGC_ARG_MAX ? x > s->a : x < s->a;
    if (s->b < 0 || (!isnan(s->a) && (isnan(x) || better))) {
      s->a = x;
      s->b = (double)k;
    }
    return;
  }
  switch (r->op) {
  case WGC_REDUCE_SUM:
  case WGC_REDUCE_MEAN:
    s->a += x;
    return;
  case WGC_REDUCE_MAX:
    s->a = x > s->a || isnan(x) ? x : s->a;
    return;
  case WGC_REDUCE_MIN:
    s->a = x < s->a || isnan(x) ? x : s->a;
    return;
  case WGC_REDUCE_PROD:
    s->a *= x;
    return;
  case WGC_REDUCE_SUM_SQUARE:
  case WGC_REDUCE_L2:
    s->a += x * x;
    return;
  case WGC_REDUCE_L1:
    s->a += fabs(x);
    return;
  case WGC_REDUCE_LOG_SUM_EXP:
    if (isnan(s->a) || isnan(x)) {
      s->a = NAN; /* sticks, even after +inf */
      return;
    }
    if (x == -INFINITY || s->a == INFINITY)
      return; /* -inf adds nothing; +inf is the result unless NaN comes */
    if (x > s->a) {
      s->b = s->b * exp(s->a - x) + 1.0;
      s->a = x;
    } else
      s->b += exp(x - s->a);
    return;
  }
}

/* Stores the result of a span of count elements at out: a float, or the
 * int32 index for the arg reductions. */
static inline void racc_store(const wgc_reduce_args *r, const racc *s,
                              size_t count, float *out) {
  float v = (float)s->a;
  if (r->arg != WGC_ARG_NONE) {
    int32_t k = (int32_t)s->b;
    memcpy(out, &k, sizeof k);
    return;
  }
  switch (r->op) {
  case WGC_REDUCE_MEAN:
    v = (float)(s->a / (double)count);
    break;
  case WGC_REDUCE_L2:
    v = (float)sqrt(s->a);
    break;
  case WGC_REDUCE_LOG_SUM_EXP:
    v = (float)(isfinite(s->a) ? s->a + log(s->b) : s->a);
    break;
  case WGC_REDUCE_SUM:
  case WGC_REDUCE_MAX:
  case WGC_REDUCE_MIN:
  case WGC_REDUCE_PROD:
  case WGC_REDUCE_SUM_SQUARE:
  case WGC_REDUCE_L1:
    break;
  }
  *out = v;
}

/* Feeds elements [r0, r1) of output k's span to s, for the nd > 0 form
 * (reduce.c). */
void cpu_reduce_span(const wgc_reduce_args *r, size_t k, size_t r0, size_t r1,
                     racc *s);

#endif /* WGC_CPU_REDUCE_ACC_H */
