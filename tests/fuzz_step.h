/* Inside one fuzz step: operands placed in allocations mirrored on both
 * contexts, the expected output elements, and the invalid-call table. */
#ifndef WGC_TEST_FUZZ_STEP_H
#define WGC_TEST_FUZZ_STEP_H

#include "fuzz.h"
#include "fuzz_ref.h"

#define FZ_MAX_ALLOC 6
#define FZ_MAX_OPND 6

typedef struct fz_alloc {
  wgc_ptr p[2]; /* [0] webgpu, [1] cpu */
  size_t n;     /* elements */
  float *init;  /* contents after the step's uploads, before the call */
  float *flush; /* init with subnormals flushed (the second reference) */
  bool freed;
} fz_alloc;

typedef struct fz_opnd {
  const char *name;
  size_t len; /* elements */
  int alias;  /* -1, or the operand whose place this one shares */
  int alloc;  /* placed: allocation index and element offset */
  size_t off;
  bool output;
} fz_opnd;

struct fz_pending {
  fz_step s;
  fz_rng data; /* stream of the step's data, from s.dseed */
  int nalloc, nopnd;
  fz_alloc al[FZ_MAX_ALLOC];
  fz_opnd op[FZ_MAX_OPND];
  size_t nout;            /* expected output elements */
  uint8_t *oa;            /* their allocation */
  size_t *opos;           /* their element in it */
  fz_want w[2];           /* [0] inputs as stored, [1] subnormals flushed */
  float *bits;            /* copy/upload: the exact expected bits instead */
  wgc_dtype otype;        /* F16/BF16: opos counts 2-byte elements */
  size_t gemm_strides[6]; /* lda, ldb, ldc, stride_a, stride_b, stride_c */
};

/* Operand definitions and placement (fuzz_step.c). */
int fz_add_opnd(fz_pending *p, const char *name, size_t len, bool output,
                int alias);
/* Places the operands and fills every allocation with guard bits. */
void fz_place(fz_pending *p);
float *fz_in(fz_pending *p, int v, int opnd); /* init (v 0) or flushed */
wgc_ptr fz_addr(const fz_pending *p, int opnd, int b);
void fz_want_alloc(fz_pending *p, size_t nout);
void fz_map_contiguous(fz_pending *p, size_t from, int opnd, size_t len);

/* Typed operands of the element-wise, normalization, reduce and where
 * steps (fuzz_step.c): an operand of type t (dta, dtb, dtc, dtcond; 0
 * f32) whose elements start sh bytes into its first word (tsh bit i). */
typedef struct fz_typed {
  wgc_dtype t;
  size_t sh, elems;
} fz_typed;
fz_typed fz_typed_make(int t, const fz_step *s, int i, size_t elems);
/* Adds the operand (alias as fz_add_opnd's). */
int fz_ew_add(fz_pending *p, const char *name, fz_typed o, bool out, int alias);
/* Fills it from dist, encoded as its type. */
void fz_ew_fill(fz_pending *p, int opnd, fz_typed o, int dist, double mag);
/* Variant v's inputs as floats (decoded when typed; free *owned after). */
const float *fz_ew_in(fz_pending *p, int v, int opnd, fz_typed o,
                      float **owned);
/* Maps the n outputs of operand O, of o's type. */
void fz_ew_map(fz_pending *p, int O, fz_typed o, size_t n);
/* Adds half an ulp of o's type to each of the n bounds. */
void fz_ew_round(fz_pending *p, fz_typed o, size_t n);
/* The bytes of a typed operand's elements on the host. */
uint8_t *fz_typed_bytes(fz_pending *p, int opnd, fz_typed o);

/* The model-level operations (fuzz_model.c): the kinds FZ_GEMM_EX ..
 * FZ_WHERE. */
bool fz_build_model(fz_env *e, fz_pending *p, char *msg, size_t size);
bool fz_upload_all(fz_env *e, fz_pending *p, char *msg, size_t size);
bool fz_statuses(fz_env *e, const wgc_status st[2], wgc_status want, char *msg,
                 size_t size);
void fz_fill_opnd(fz_pending *p, int opnd, int dist, double mag);
void fz_epilogue_want(const fz_step *s, const float *bias, fz_want w,
                      size_t nout);
void fz_describe_model(const fz_pending *p, size_t i, char *buf, size_t size);

/* Invalid calls (fuzz_invalid.c): issues call kind s->op on both contexts
 * against the step's allocations; false with the reason. */
extern const int fz_invalid_count;
bool fz_issue_invalid(fz_env *e, fz_pending *p, char *msg, size_t size);

#endif
