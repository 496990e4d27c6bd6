/* The differential fuzzer: seeded random steps (operations, memory calls,
 * invalid calls, asynchronous completion) issued identically on a "webgpu"
 * and a "cpu" context, every result judged against a float64 reference
 * computed here, and every byte outside an output checked unchanged.
 *
 * A step is a flat parameter record (fz_step) that prints as one line of
 * name=value words and parses back, so a failing step can be replayed alone
 * and shrunk. fuzz_ref.c holds the references, fuzz_step.c builds and runs
 * one step, fuzz_seq.c runs a seed's sequence, fuzz_test.c the test cases,
 * child processes and the `make fuzz` driver. */
#ifndef WGC_TEST_FUZZ_H
#define WGC_TEST_FUZZ_H

#include "wgc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- random numbers ----------------------------------------------------- */
typedef struct fz_rng {
  uint64_t s;
} fz_rng;
fz_rng fz_rng_make(uint64_t seed);
uint64_t fz_next(fz_rng *r);
size_t fz_below(fz_rng *r, size_t n); /* [0, n); 0 when n == 0 */
double fz_unit(fz_rng *r);            /* [0, 1) */
bool fz_chance(fz_rng *r, double p);

/* ---- values ------------------------------------------------------------- */
/* Kinds of special values mixed into inputs (bits of fz_step.spk). */
enum {
  FZ_SP_ZERO = 1,    /* +0, -0 */
  FZ_SP_SUBNORM = 2, /* 1e-40, -3e-39 */
  FZ_SP_INF = 4,
  FZ_SP_NAN = 8,
  FZ_SP_HUGE = 16, /* +-3e38 */
  FZ_SP_TINY = 32, /* +-1.2e-38, smallest normals */
  FZ_SP_ALL = 63
};
/* Value families, so that each function sees inputs where it is
 * interesting. */
enum {
  FZ_DIST_UNIT,    /* [-1, 1) */
  FZ_DIST_WIDE,    /* +-[1e-3, 1e3], log-uniform */
  FZ_DIST_EXP,     /* [-100, 100): the saturating and overflowing ends */
  FZ_DIST_POS,     /* mostly positive, log-uniform */
  FZ_DIST_BASE,    /* pow bases: near 1, integers, negatives */
  FZ_DIST_EXPON,   /* pow exponents: integers, halves, +-5000 */
  FZ_DIST_BITS,    /* any 32-bit pattern (guards) */
  FZ_DIST_POSUNIT, /* [0, 1): sums that do not cancel */
  FZ_DIST_OFFSET   /* mag * (1 +- 1e-3): a large mean, a small spread */
};
/* Fills x with values of a family; with probability sp/1000 a value is a
 * special of a kind in spk. */
void fz_fill(fz_rng *r, float *x, size_t n, int dist, double mag, int sp,
             unsigned spk);
/* x with subnormals replaced by zeros of their sign. */
float fz_flush(float x);
bool fz_is_subnormal(float x);

/* ---- steps -------------------------------------------------------------- */
typedef enum fz_kind {
  FZ_NONE,
  FZ_GEMM,
  FZ_CONV,
  FZ_ATTN,
  FZ_REDUCE,
  FZ_UNARY,
  FZ_BINARY,
  FZ_BCAST,
  FZ_COPY,
  FZ_UPLOAD,
  FZ_CHAIN,
  FZ_INVALID,
  FZ_GEMM_EX,     /* wgc_gemm_ex / wgc_gemm_batched_ex */
  FZ_UNARY_P,     /* wgc_unary_params */
  FZ_REDUCE_AXES, /* wgc_reduce_axes, or wgc_reduce over one axis */
  FZ_ARG,         /* wgc_argmax (op 0), wgc_argmin (op 1) */
  FZ_NORM,        /* softmax, log_softmax, layer_norm, rms_norm (op 0..3) */
  FZ_ROTARY,
  FZ_STRIDED, /* wgc_copy_strided */
  FZ_GATHER,
  FZ_WHERE,
  FZ_POOL, /* wgc_pool2d */
  FZ_CAST, /* wgc_cast: ta source type, tb destination type, m/k 2-byte shifts
            */
  FZ_KIND_COUNT
} fz_kind;

typedef struct fz_shape {
  size_t rank;
  size_t d[8];
} fz_shape;

/* One step. Fields unused by its kind stay 0; every field prints as
 * name=value when it is not 0 (fuzz_step.c keeps the table). */
typedef struct fz_step {
  int kind;
  int op;     /* unary/binary/reduce op, GEMM layout, or invalid-call kind */
  int ta, tb; /* GEMM transposes */
  size_t m, n, k, batch;
  int batched;           /* wgc_gemm_batched (batch may be 0) */
  size_t lda, ldb, ldc;  /* padding over the smallest legal value */
  size_t sa, sb, sc;     /* batch strides over the span (sa0/sb0: 0) */
  int sa0, sb0;          /* shared A or B */
  float alpha, beta;     /* GEMM */
  wgc_conv2d_desc cv;    /* conv2d */
  int bias;              /* conv2d with a bias; attention: a mask (2: ramped) */
  float bmag;            /* conv2d bias magnitude */
  wgc_attention_desc at; /* attention */
  fz_shape sh, shb;      /* reduce (sh), broadcast (sh = a, shb = b) */
  size_t axis;
  int inplace;    /* element-wise: 1 out == a, 2 out == b, 3 a == b */
  int dist;       /* value family of the inputs */
  float mag;      /* input magnitude */
  int sp;         /* specials per thousand */
  unsigned spk;   /* FZ_SP_* kinds allowed */
  int pack;       /* 0 each operand alone, 1 all in one allocation */
  int gap;        /* largest random gap (elements) around operands */
  uint32_t dseed; /* data and placement */
  int nullptrs;   /* empty output: pass wild or null addresses */
  int act, bkind; /* GEMM epilogue: activation, bias kind (bias: present) */
  unsigned axes;  /* reduce_axes: bit d reduces dimension d */
  float eps;      /* layer_norm, rms_norm */
  wgc_rotary_desc rd;
  int posids;        /* rotary: position ids (oor: out of range ones) */
  int oor;           /* per thousand indices out of range (gather, rotary) */
  fz_shape shc;      /* where: cond's shape */
  fz_shape sst, dst; /* copy_strided: source and destination strides */
  wgc_pool2d_desc pl;
  int dta, dtb, dtc, dtbias; /* GEMM_EX operand types (wgc_dtype; 0 f32) */
  int dtcond;                /* where: cond's type */
  unsigned tsh;              /* GEMM_EX: bit i shifts operand i (A, B, C,
                                bias) 2 bytes into a word where 2-byte */
} fz_step;

/* The contexts a seed runs on and their settings (printed with a step). */
typedef struct fz_env {
  wgc_context *ctx[2]; /* [0] webgpu, [1] cpu */
  size_t mbb;          /* max_binding_bytes of the webgpu context */
  int gpu_kernels;     /* WGC_KERNELS=gpu at its creation */
  unsigned threads;    /* cpu_threads */
} fz_env;
extern const char *const fz_backend[2];

bool fz_env_create(fz_env *e, size_t mbb, int gpu_kernels, unsigned threads);
void fz_env_destroy(fz_env *e);

/* Random parameters of a step of the given kind (FZ_NONE: any). */
void fz_gen_step(fz_rng *r, fz_step *s, fz_kind kind);
/* Prints "kind name=value ..." into buf; parses it back (false on an
 * unknown word). */
void fz_format(const fz_step *s, char *buf, size_t size);
bool fz_parse(const char *line, fz_step *s);
const char *fz_kind_name(int kind);
/* The kind named (FZ_NONE for an unknown name). */
fz_kind fz_kind_from_name(const char *name);

/* ---- running a step ------------------------------------------------------
 * A step placed into allocations on both contexts, issued, waiting for its
 * results to be checked. */
typedef struct fz_pending fz_pending;

/* Builds, uploads and issues the step on both contexts. Returns NULL when
 * the step failed already (message in msg: statuses differ, etc.). */
fz_pending *fz_issue(fz_env *e, const fz_step *s, fz_rng *r, char *msg,
                     size_t size);
/* Frees, early, allocations the step only reads (the work is queued). */
void fz_free_inputs(fz_env *e, fz_pending *p);
/* Downloads (how: 0 blocking, 1 async + synchronize, 2 async + poll) and
 * checks results and guards; false with the first mismatch in msg. Frees
 * the step's allocations and p. */
bool fz_check(fz_env *e, fz_pending *p, int how, fz_rng *r, char *msg,
              size_t size);
/* Frees without checking (after a failure elsewhere). */
void fz_drop(fz_env *e, fz_pending *p);
/* Issues and checks one step at once; false with the message. */
bool fz_run_alone(fz_env *e, const fz_step *s, char *msg, size_t size);

/* Addresses of freed allocations, for stale-address calls. */
void fz_remember_freed(wgc_ptr webgpu, wgc_ptr cpu);
bool fz_stale(fz_rng *r, wgc_ptr out[2]);

/* Shrinks a failing step: smaller shapes, fewer specials, while
 * fz_run_alone still fails; index names the step in progress lines.
 * Returns the number of runs made. */
int fz_shrink(fz_env *e, fz_step *s, int index, char *msg, size_t size);

/* Prints the worst error/bound ratio seen per step kind and backend. */
void fz_print_worst(void);

/* Runs one seed: its contexts and its sequence; prints "FUZZ ..." lines on
 * failures and "step ..." lines before each step (the parent process shows
 * the last one after a hang or crash). Returns the number of failures. */
int fz_run_seed(uint64_t seed, int steps);
/* Replays one step line (FUZZ_REPRO) on contexts of its settings. */
int fz_run_repro(const char *line);

#endif
