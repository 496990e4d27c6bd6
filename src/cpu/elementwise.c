/* Element-wise operations. wgc_unary_ref and wgc_binary_ref define each
 * function once; the loops below switch on the op outside the loop and call
 * the same inline definitions. Transcendental functions are evaluated in
 * double and rounded once, so they are as close to the float64 reference
 * as a float can be and finite wherever the math is (sigmoid(-100),
 * gelu(-100), silu(-100)). An output may be exactly an input (in place):
 * every element is read before the same element is written. */
#include "cpu.h"
#include "dtype.h"
#include "split.h"

#include <math.h>

#define TASK_ELEMS 32768 /* elements per task */
/* Typed operands are converted in runs of this many elements through
 * float buffers, so the f32 loops below serve every type. */
#define RUN_ELEMS 256

static const double SQRT1_2 = 0.70710678118654752440;

/* 1/(1+e^-x) without overflow: the exponent is never positive. */
static double sigmoid(double x) {
  if (x >= 0.0)
    return 1.0 / (1.0 + exp(-x));
  double e = exp(x); /* also NaN for NaN */
  return e / (1.0 + e);
}

/* Every unary function takes the op's parameters (wgc_unary_params'
 * alpha and beta); most ignore them. */
#define NO_PARAMS (void)alpha, (void)beta

/* NaN propagates: only a number below 0 becomes 0. */
static inline float f_relu(float x, float alpha, float beta) {
  NO_PARAMS;
  return x < 0.0f ? 0.0f : x;
}
static inline float f_sigmoid(float x, float alpha, float beta) {
  NO_PARAMS;
  return (float)sigmoid(x);
}
static inline float f_tanh(float x, float alpha, float beta) {
  NO_PARAMS;
  return (float)tanh(x);
}
static inline float f_exp(float x, float alpha, float beta) {
  NO_PARAMS;
  return (float)exp(x);
}
static inline float f_log(float x, float alpha, float beta) {
  NO_PARAMS;
  return (float)log(x);
}
static inline float f_sqrt(float x, float alpha, float beta) {
  NO_PARAMS;
  return sqrtf(x);
}
static inline float f_abs(float x, float alpha, float beta) {
  NO_PARAMS;
  return fabsf(x);
}
static inline float f_neg(float x, float alpha, float beta) {
  NO_PARAMS;
  return -x;
}
/* 1 + erf(z) as erfc(-z): no cancellation for very negative x, so gelu(-100)
 * is -0 and gelu(-5) keeps its digits. */
static inline float f_gelu(float x, float alpha, float beta) {
  NO_PARAMS;
  return (float)(0.5 * x * erfc(-x * SQRT1_2));
}
static inline float f_silu(float x, float alpha, float beta) {
  NO_PARAMS;
  return (float)(x * sigmoid(x));
}
/* 0.5(1 + tanh(u)) is sigmoid(2u): no cancellation for very negative x.
 * x^3 in double cannot overflow. */
static inline float f_gelu_tanh(float x, float alpha, float beta) {
  NO_PARAMS;
  double d = x, u = 0.79788456080286535588 * (d + 0.044715 * d * d * d);
  return (float)(d * sigmoid(2.0 * u));
}
static inline float f_erf(float x, float alpha, float beta) {
  NO_PARAMS;
  return (float)erf(x);
}
static inline float f_reciprocal(float x, float alpha, float beta) {
  NO_PARAMS;
  return 1.0f / x;
}
static inline float f_floor(float x, float alpha, float beta) {
  NO_PARAMS;
  return floorf(x);
}
static inline float f_ceil(float x, float alpha, float beta) {
  NO_PARAMS;
  return ceilf(x);
}
/* Ties to even in the default rounding mode, which nothing here changes. */
static inline float f_round(float x, float alpha, float beta) {
  NO_PARAMS;
  return nearbyintf(x);
}
static inline float f_sin(float x, float alpha, float beta) {
  NO_PARAMS;
  return (float)sin(x);
}
static inline float f_cos(float x, float alpha, float beta) {
  NO_PARAMS;
  return (float)cos(x);
}
/* log(1 + e^x) = max(x, 0) + log1p(e^-|x|): e^x never overflows and small
 * results keep their digits. */
static inline float f_softplus(float x, float alpha, float beta) {
  NO_PARAMS;
  double d = x;
  return (float)((d > 0.0 ? d : 0.0) + log1p(exp(-fabs(d))));
}
/* The parameterised ops: NaN in x or in a parameter that the branch uses
 * propagates, as the arithmetic does. */
static inline float f_leaky_relu(float x, float alpha, float beta) {
  (void)beta;
  return x < 0.0f ? alpha * x : x;
}
static inline float f_elu(float x, float alpha, float beta) {
  (void)beta;
  return x < 0.0f ? (float)(alpha * expm1(x)) : x;
}
static inline float f_hard_sigmoid(float x, float alpha, float beta) {
  /* alpha*x of finite operands is a finite number even where float32
   * overflows it, so an infinite beta decides (not inf - inf = NaN) */
  float y =
      isinf(beta) && isfinite(alpha) && isfinite(x) ? beta : alpha * x + beta;
  return y != y ? y : y < 0.0f ? 0.0f : y > 1.0f ? 1.0f : y;
}
/* numpy.clip: a NaN input or bound gives NaN; min > max gives max. */
static inline float f_clip(float x, float alpha, float beta) {
  if (x != x || alpha != alpha || beta != beta)
    return NAN;
  float y = x < alpha ? alpha : x;
  return y > beta ? beta : y;
}

static inline float f_add(float a, float b) { return a + b; }
static inline float f_sub(float a, float b) { return a - b; }
static inline float f_mul(float a, float b) { return a * b; }
static inline float f_div(float a, float b) { return a / b; }
/* numpy maximum/minimum: a NaN on either side wins. */
static inline float f_max(float a, float b) {
  return a != a ? a : b != b ? b : a > b ? a : b;
}
static inline float f_min(float a, float b) {
  return a != a ? a : b != b ? b : a < b ? a : b;
}
static inline float f_pow(float a, float b) { return powf(a, b); }

/* Each op NAME of wgc.h's lists is the function f_<name> above: an op
 * without one does not compile. */
float wgc_unary_ref(wgc_unary_op op, float x, float alpha, float beta) {
  switch (op) {
#define UNARY_CASE(NAME, name)                                                 \
  case WGC_UNARY_##NAME:                                                       \
    return f_##name(x, alpha, beta);
    WGC_UNARY_OPS(UNARY_CASE)
#undef UNARY_CASE
  }
  return NAN; /* not an op: the front end never passes one */
}

float wgc_binary_ref(wgc_binary_op op, float a, float b) {
  switch (op) {
#define BINARY_CASE(NAME, name)                                                \
  case WGC_BINARY_##NAME:                                                      \
    return f_##name(a, b);
    WGC_BINARY_OPS(BINARY_CASE)
#undef BINARY_CASE
  }
  return NAN;
}

/* ---- unary -------------------------------------------------------------- */

typedef struct unary_job {
  wgc_unary_op op;
  float alpha, beta;
  size_t n;
  const float *in;
  float *out;
  wgc_dtype in_type, out_type; /* either not F32: unary_typed */
} unary_job;

static void unary_run(const unary_job *job, size_t i0, size_t n) {
  const float *in = job->in + i0;
  float *out = job->out + i0;
  float alpha = job->alpha, beta = job->beta;
  switch (job->op) {
#define UNARY_LOOP(NAME, name)                                                 \
  case WGC_UNARY_##NAME:                                                       \
    for (size_t i = 0; i < n; i++)                                             \
      out[i] = f_##name(in[i], alpha, beta);                                   \
    return;
    WGC_UNARY_OPS(UNARY_LOOP)
#undef UNARY_LOOP
  }
}

/* Element i of x (n elements from off, stride apart) into dst[i]. */
static void load_strided(const void *x, wgc_dtype t, size_t off, size_t stride,
                         size_t n, float *dst) {
  if (stride == 1) {
    wgc_dtype_load_run(x, t, off, n, dst);
    return;
  }
  for (size_t i = 0; i < n; i++)
    dst[i] = wgc_dtype_load(x, t, off + i * stride);
}

/* unary_run through float buffers; in place is same-typed, and each run
 * is read whole before it is written. */
static void unary_typed(const unary_job *job, size_t i0, size_t n) {
  float buf[RUN_ELEMS];
  unary_job j = *job;
  j.in = j.out = buf;
  for (size_t c = 0; c < n; c += RUN_ELEMS) {
    size_t m = n - c < RUN_ELEMS ? n - c : RUN_ELEMS;
    load_strided(job->in, job->in_type, i0 + c, 1, m, buf);
    unary_run(&j, 0, m);
    wgc_dtype_store_run(job->out, job->out_type, i0 + c, buf, m);
  }
}

static void unary_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const unary_job *job = arg;
  size_t i0 = task * TASK_ELEMS;
  size_t n = job->n - i0 < TASK_ELEMS ? job->n - i0 : TASK_ELEMS;
  if (job->in_type != WGC_DTYPE_F32 || job->out_type != WGC_DTYPE_F32)
    unary_typed(job, i0, n);
  else
    unary_run(job, i0, n);
}

wgc_status cpu_unary(wgc_context *ctx, const wgc_unary_args *u) {
  unary_job job = {u->op,         u->alpha,          u->beta,
                   u->n,          cpu_ptr(u->input), cpu_ptr(u->output),
                   u->input_type, u->output_type};
  size_t tasks = (u->n + TASK_ELEMS - 1) / TASK_ELEMS;
  /* the transcendental ops cost tens of flops per element */
  double cost = 20.0;
  switch (u->op) {
  case WGC_UNARY_RELU:
  case WGC_UNARY_ABS:
  case WGC_UNARY_NEG:
  case WGC_UNARY_RECIPROCAL:
  case WGC_UNARY_FLOOR:
  case WGC_UNARY_CEIL:
  case WGC_UNARY_ROUND:
  case WGC_UNARY_LEAKY_RELU:
  case WGC_UNARY_HARD_SIGMOID:
  case WGC_UNARY_CLIP:
    cost = 1.0;
    break;
  default:
    break;
  }
  cpu_parallel(ctx, tasks, cost * (double)u->n, unary_task, &job);
  return WGC_OK;
}

/* ---- binary ------------------------------------------------------------- */

typedef struct binary_job {
  const wgc_binary_args *b;
  const float *a, *bb;
  float *out;
  bool typed; /* an operand not F32: binary_typed */
} binary_job;

/* out[i] = fn(a[i*sa], b[i*sb]) for i < n; the common stride pairs get
 * their own loops so that the compiler can vectorize them. */
static void binary_run(wgc_binary_op op, const float *a, size_t sa,
                       const float *b, size_t sb, float *out, size_t n) {
#define BINARY_STRIDED(fn, ia, ib)                                             \
  for (size_t i = 0; i < n; i++)                                               \
    out[i] = fn(a[ia], b[ib]);
#define BINARY_LOOP(NAME, name)                                                \
  case WGC_BINARY_##NAME:                                                      \
    if (sa == 1 && sb == 1) {                                                  \
      BINARY_STRIDED(f_##name, i, i)                                           \
    } else if (sa == 1 && sb == 0) {                                           \
      BINARY_STRIDED(f_##name, i, 0)                                           \
    } else if (sa == 0 && sb == 1) {                                           \
      BINARY_STRIDED(f_##name, 0, i)                                           \
    } else {                                                                   \
      BINARY_STRIDED(f_##name, (i * sa), (i * sb))                             \
    }                                                                          \
    return;
  switch (op) { WGC_BINARY_OPS(BINARY_LOOP) }
#undef BINARY_LOOP
#undef BINARY_STRIDED
}

/* binary_run of out[pos..pos+n) through float buffers. */
static void binary_typed(const binary_job *job, size_t oa, size_t sa, size_t ob,
                         size_t sb, size_t pos, size_t n) {
  const wgc_binary_args *g = job->b;
  float x[RUN_ELEMS], y[RUN_ELEMS];
  for (size_t c = 0; c < n; c += RUN_ELEMS) {
    size_t m = n - c < RUN_ELEMS ? n - c : RUN_ELEMS;
    load_strided(job->a, g->a_type, oa + c * sa, sa, m, x);
    load_strided(job->bb, g->b_type, ob + c * sb, sb, m, y);
    binary_run(g->op, x, 1, y, 1, x, m);
    wgc_dtype_store_run(job->out, g->out_type, pos + c, x, m);
  }
}

static void binary_task(void *arg, size_t task, unsigned worker) {
  (void)worker;
  const binary_job *job = arg;
  const wgc_binary_args *g = job->b;
  size_t pos = task * TASK_ELEMS;
  size_t end = g->count - pos < TASK_ELEMS ? g->count : pos + TASK_ELEMS;
  if (g->rank == 0) { /* a scalar with a scalar */
    binary_typed(job, 0, 0, 0, 0, 0, 1);
    return;
  }
  /* the multi-index of pos, and the input offsets it maps to */
  size_t idx[WGC_MAX_RANK], oa = 0, ob = 0, rest = pos;
  for (size_t d = g->rank; d-- > 0;) {
    idx[d] = rest % g->shape[d];
    rest /= g->shape[d];
    oa += idx[d] * g->stride_a[d];
    ob += idx[d] * g->stride_b[d];
  }
  size_t last = g->rank - 1;
  while (pos < end) {
    size_t run = g->shape[last] - idx[last];
    if (run > end - pos)
      run = end - pos;
    if (job->typed)
      binary_typed(job, oa, g->stride_a[last], ob, g->stride_b[last], pos, run);
    else
      binary_run(g->op, job->a + oa, g->stride_a[last], job->bb + ob,
                 g->stride_b[last], job->out + pos, run);
    pos += run;
    /* step the index past the run, carrying into outer dimensions */
    idx[last] += run;
    oa += run * g->stride_a[last];
    ob += run * g->stride_b[last];
    for (size_t d = last; d > 0 && idx[d] == g->shape[d]; d--) {
      oa -= idx[d] * g->stride_a[d];
      ob -= idx[d] * g->stride_b[d];
      idx[d] = 0;
      idx[d - 1]++;
      oa += g->stride_a[d - 1];
      ob += g->stride_b[d - 1];
    }
  }
}

wgc_status cpu_binary(wgc_context *ctx, const wgc_binary_args *b) {
  binary_job job = {b, cpu_ptr(b->a), cpu_ptr(b->b), cpu_ptr(b->out),
                    b->a_type != WGC_DTYPE_F32 || b->b_type != WGC_DTYPE_F32 ||
                        b->out_type != WGC_DTYPE_F32};
  size_t tasks = (b->count + TASK_ELEMS - 1) / TASK_ELEMS;
  double cost = b->op == WGC_BINARY_POW ? 20.0 : 1.0;
  cpu_parallel(ctx, tasks, cost * (double)b->count, binary_task, &job);
  return WGC_OK;
}

/* ---- pieces for the wasm32 queue (split.h) -------------------------------
 * Unary: element ranges. Binary: the output is cut at dimension
 * blocks[0], the outermost whose inner elements (block_size[0]) fit a
 * piece: each piece is one index of the dimensions before it and a run of
 * group indices along it, a smaller broadcast of the same strides. */
/* A libm call in wasm32 costs some 50 ns, as much as 100 flops of GEMM. */
static double unary_cost(wgc_unary_op op) {
  return op == WGC_UNARY_RELU || op == WGC_UNARY_ABS || op == WGC_UNARY_NEG
             ? 1.0
             : 100.0;
}

wgc_status cpu_split_unary_plan(const wgc_unary_args *u, cpu_split *s) {
  s->work = unary_cost(u->op) * (double)u->n;
  s->group = cpu_fit(s, unary_cost(u->op), u->n);
  s->pieces = cpu_div_up(u->n, s->group);
  return WGC_OK;
}

wgc_status cpu_split_unary_run(wgc_context *ctx, const wgc_unary_args *u,
                               cpu_split *s, size_t i) {
  wgc_unary_args a = *u;
  size_t i0 = i * s->group;
  a.n = cpu_min(s->group, u->n - i0);
  a.input = cpu_ref_typed(u->input, u->input_type, i0);
  a.output = cpu_ref_typed(u->output, u->output_type, i0);
  return cpu_unary(ctx, &a);
}

wgc_status cpu_split_binary_plan(const wgc_binary_args *b, cpu_split *s) {
  double cost = b->op == WGC_BINARY_POW ? 100.0 : 1.0;
  s->work = cost * (double)b->count;
  s->pieces = 1;
  if (b->rank == 0)
    return WGC_OK;
  size_t fit = cpu_fit(s, cost, b->count), inner = 1, d = b->rank - 1;
  while (d > 0 && inner * b->shape[d] <= fit)
    inner *= b->shape[d--];
  s->blocks[0] = d;
  s->block_size[0] = inner;
  s->group = cpu_fit(s, cost * (double)inner, b->shape[d]);
  s->blocks[1] = cpu_div_up(b->shape[d], s->group);
  s->pieces = b->count / (inner * b->shape[d]) * s->blocks[1];
  return WGC_OK;
}

wgc_status cpu_split_binary_run(wgc_context *ctx, const wgc_binary_args *b,
                                cpu_split *s, size_t i) {
  if (b->rank == 0)
    return cpu_binary(ctx, b);
  size_t d = s->blocks[0], inner = s->block_size[0];
  size_t j0 = i % s->blocks[1] * s->group, outer = i / s->blocks[1];
  size_t oa = j0 * b->stride_a[d], ob = j0 * b->stride_b[d];
  size_t out = (outer * b->shape[d] + j0) * inner;
  for (size_t x = d, rest = outer; x-- > 0;) {
    size_t idx = rest % b->shape[x];
    rest /= b->shape[x];
    oa += idx * b->stride_a[x];
    ob += idx * b->stride_b[x];
  }
  wgc_binary_args a = {.op = b->op,
                       .rank = b->rank - d,
                       .a_type = b->a_type,
                       .b_type = b->b_type,
                       .out_type = b->out_type,
                       .fn = b->fn};
  for (size_t x = d; x < b->rank; x++) {
    a.shape[x - d] = b->shape[x];
    a.stride_a[x - d] = b->stride_a[x];
    a.stride_b[x - d] = b->stride_b[x];
  }
  a.shape[0] = cpu_min(s->group, b->shape[d] - j0);
  a.count = a.shape[0] * inner;
  a.a = cpu_ref_typed(b->a, b->a_type, oa);
  a.b = cpu_ref_typed(b->b, b->b_type, ob);
  a.out = cpu_ref_typed(b->out, b->out_type, out);
  return cpu_binary(ctx, &a);
}
