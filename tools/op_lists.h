/* wgc.h's op lists as tables, for the host programs that generate the
 * JavaScript and Python constants from them (jsops.c, pyops.c). */
#ifndef WGC_TOOLS_OP_LISTS_H
#define WGC_TOOLS_OP_LISTS_H

#include "wgc.h"

typedef struct op_constant {
  const char *name;  /* "UNARY_RELU": the C name without WGC_ */
  const char *lower; /* "relu": the op's name in the list */
  int value;
} op_constant;

#define OP_CONSTANT_(PREFIX, NAME, name)                                       \
  {#PREFIX "_" #NAME, #name, WGC_##PREFIX##_##NAME},
#define OP_REDUCE_(NAME, name) OP_CONSTANT_(REDUCE, NAME, name)
#define OP_UNARY_(NAME, name) OP_CONSTANT_(UNARY, NAME, name)
#define OP_BINARY_(NAME, name) OP_CONSTANT_(BINARY, NAME, name)
static const op_constant reduce_ops[] = {WGC_REDUCE_OPS(OP_REDUCE_)};
static const op_constant unary_ops[] = {WGC_UNARY_OPS(OP_UNARY_)};
static const op_constant binary_ops[] = {WGC_BINARY_OPS(OP_BINARY_)};
#define OP_DTYPE_(NAME, name) OP_CONSTANT_(DTYPE, NAME, name)
static const op_constant dtypes[] = {WGC_DTYPES(OP_DTYPE_)};
#undef OP_DTYPE_
#undef OP_REDUCE_
#undef OP_UNARY_
#undef OP_BINARY_
#undef OP_CONSTANT_
_Static_assert(sizeof reduce_ops / sizeof *reduce_ops == WGC_REDUCE_OP_COUNT,
               "one constant per reduce op");
_Static_assert(sizeof unary_ops / sizeof *unary_ops == WGC_UNARY_OP_COUNT,
               "one constant per unary op");
_Static_assert(sizeof binary_ops / sizeof *binary_ops == WGC_BINARY_OP_COUNT,
               "one constant per binary op");
_Static_assert(sizeof dtypes / sizeof *dtypes == WGC_DTYPE_COUNT,
               "one constant per element type");

#endif
