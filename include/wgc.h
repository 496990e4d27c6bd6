/*
 * wgc — BLAS/DNN operations on WebGPU, natively and in the browser.
 *
 * CONTEXT. A wgc_context owns one device, one queue and one table of
 * allocations. Every call takes the context first. A context is not
 * thread-safe: use it from one thread at a time. Two backends exist:
 * "webgpu" (native over webgpu.h, or navigator.gpu in the wasm32 build) and
 * "cpu" (the reference implementation and the fallback). Both run every
 * operation with the same results up to the accuracy stated below.
 *
 * DEVICE ADDRESSES. A wgc_ptr is an allocation's base plus a byte offset,
 * like a CUDA device pointer: base + 4*i addresses element i, and any address
 * inside a live allocation may be passed to any operation. 0 is the null
 * address. Bits 0..34 hold the byte offset (allocations up to 32 GiB) and
 * bits 35..63 the allocation's id. Ids are issued in turn from 1 to
 * 2^29 - 1 and then wrap, skipping ids still live, and at most 2^28 - 2
 * allocations are live at once: an address of a freed allocation is
 * rejected for at least the next 2^28 allocations (precisely, until the
 * counter has gone round all 2^29 - 1 ids), never aliased to a newer one.
 * The table never runs out: wgc_alloc fails only when memory does.
 *
 * ORDERING AND WAITING. Uploads, copies and operations take effect in the
 * order they were issued. Operations only enqueue work: they never wait for
 * the GPU. Only wgc_download, wgc_synchronize and wgc_create wait, and only
 * natively; in the browser build they return WGC_ERR_WOULD_BLOCK and the
 * _async forms are used instead (those exist natively too).
 *
 * CALLBACKS fire exactly once, never inside the call that registered them:
 * natively from wgc_poll or wgc_synchronize, in the browser from the event
 * loop. If the registering call returns an error, its callback never fires.
 * wgc_destroy fires every pending callback before it returns: natively after
 * waiting for the queued work (real statuses); where it cannot wait (the
 * browser) with WGC_ERR_CANCELLED, leaving their destinations unwritten.
 * A callback may call back into wgc: poll, memory calls, operations and new
 * async registrations (a registration made in a callback fires at the
 * earliest in the next wgc_poll; a wgc_poll or wgc_synchronize made inside a
 * callback does its work but leaves firing to the outer call). wgc_destroy
 * of the callback's own context takes effect when the callback returns, as
 * uv_close does; while wgc_destroy fires callbacks, a new async registration
 * on that context returns WGC_ERR_CANCELLED and never fires.
 *
 * ERRORS. Every fallible call returns a wgc_status. A NULL context, a NULL
 * out-pointer or a NULL host buffer with a non-zero size is
 * WGC_ERR_INVALID_ARGUMENT. Bad input never aborts, prints or leaves a
 * partial result: the call fails before anything changes on the device, and
 * wgc_last_error(ctx) names the function, the parameter and its value.
 * A GPU validation error or device loss becomes a status.
 *
 * LARGE TENSORS. An operation whose operands exceed the device's storage
 * binding limit (maxStorageBufferBindingSize) or whose work exceeds 65,535
 * workgroups per dimension runs as several launches over pieces of it; it
 * is not rejected. Allocations are limited by the device's maxBufferSize.
 *
 * ACCURACY (float32 data, checked against float64 references in tests/):
 *   add, sub, mul, div, max, min, relu, abs, neg, sqrt: 2e-6*|want| + 1e-6
 *   exp, log, pow, tanh, sigmoid, gelu, silu:            1e-5*|want| + 1e-6
 *   reciprocal, leaky_relu, hard_sigmoid, clip:          2e-6*|want| + 1e-6
 *     (hard_sigmoid rounds alpha*x + beta in float32 first, which adds up
 *     to 1.2e-7*(|alpha*x| + |beta|) where the two cancel)
 *   gelu_tanh, erf, softplus, elu:                       1e-5*|want| + 1e-6
 *   sin, cos: 1e-5*|want| + 1e-6 for every finite x: the argument is
 *     reduced exactly, without the GPU's builtins (WGSL bounds those only
 *     to 2^-11 on [-pi, pi]; SwiftShader's are off by 4e-4 relative at
 *     x = -7.7, and lavapipe's by 1 absolute at large x). Measured: 1.6e-7
 *     relative (8e-11 absolute below 1e-3) over |x| up to 2^128.
 *   floor, ceil, round: exact
 *   gemm, conv2d, attention: 1e-5*K*|alpha|*max|a|*max|b| + 1e-6*|beta|*max|c|
 *     (K = k for GEMM, c/groups*r*s for conv, head_dim for attention with
 *     max|q|*max|k|*max|v|), plus 1e-6*max|bias| for conv with a bias and
 *     4e-6*max|v| for attention's weighted mean. conv2d adds the bias after
 *     the whole sum (a bias of 1e6 does not swallow small taps). The CPU
 *     backend, the reference, sums conv2d and attention in double and GEMM
 *     in float blocks of 64 terms added in double. Natively on x86-64
 *     with FMA, and in the browser's relaxed SIMD modules (README,
 *     "Modules") where the machine has FMA, the float blocks of GEMM and
 *     of attention's products fuse each multiply-add: one rounding instead
 *     of two, other bits, the same bound.
 *   pow meets 1e-5*|want| relative wherever the result is finite and
 *     normal, for any base (measured: 2.6e-7 worst over 2^20 random cases
 *     on lavapipe and SwiftShader); y*log2|x| is formed in extended
 *     precision, so pow(0.999, -5000) keeps its digits. exp likewise
 *     meets 1e-6 relative over its whole finite range (measured 1e-7).
 *   sum and mean: at least pairwise-summation accuracy (2^20 values in
 *     [-1, 1) sum to within 1e-2 of the exact sum); both backends in fact
 *     accumulate compensated or in double, within about 1e-6*sum|x|.
 *
 * SPECIAL VALUES. NaN and infinities follow IEEE arithmetic on the math
 * each operation states (the unfused formula), on both backends alike; it
 * decides every special case an entry does not name. (Where GEMM's
 * multiply-adds are fused, as above, a product beyond FLT_MAX that the
 * running sum brings back within range stays finite.) A subnormal input to
 * any operation, or a subnormal parameter of one (wgc_unary_params' alpha
 * and beta, a scale or epsilon), counts either as its value or as a zero
 * of its sign (WGSL lets GPUs flush them), with the matching result:
 * log(1e-40) is -92.1 or -inf, never in between; leaky_relu(-inf) with
 * alpha 1e-40 is -inf or NaN (0 * -inf); the reduce PROD of [-inf, 1e-40]
 * is -inf or NaN, and SUM of [-3e-42] is -3e-42 or 0. GEMM's beta = NaN
 * makes C NaN; only an
 * exact beta == 0 leaves C unread. Attention follows the unfused
 * softmax(softcap(scale*Q K^T) + mask) V, as PyTorch's math SDPA: see
 * wgc_attention.
 */
#ifndef WGC_H
#define WGC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define WGC_API __attribute__((visibility("default")))
#else
#define WGC_API
#endif

/* ---- Version ------------------------------------------------------------ */

/* The one version of wgc: the C library, wgc.pc, the npm package and the
 * Python wheel all take their number from these lines (the Makefile reads
 * them). Semantic versioning; CHANGELOG.md says what each version added. */
#define WGC_VERSION_MAJOR 0
#define WGC_VERSION_MINOR 2
#define WGC_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the library actually linked, which may differ
 * from the header a program was compiled with. */
WGC_API const char *wgc_version(void);

/* ---- Status ------------------------------------------------------------ */

/* X(name, message): one list makes the enum, the names and the messages. */
#define WGC_STATUS_MAP(X)                                                      \
  X(OK, "success")                                                             \
  X(ERR_INVALID_ARGUMENT, "invalid argument")                                  \
  X(ERR_UNSUPPORTED, "operation not supported by this backend")                \
  X(ERR_OUT_OF_MEMORY, "out of memory")                                        \
  X(ERR_DEVICE, "GPU or runtime failure")                                      \
  X(ERR_DEVICE_LOST, "device lost")                                            \
  X(ERR_NO_ADAPTER, "no WebGPU adapter available")                             \
  X(ERR_WOULD_BLOCK, "call would block; use the _async form")                  \
  X(ERR_CANCELLED, "cancelled: the context was destroyed first")

typedef enum wgc_status {
#define WGC_STATUS_ENUM_(name, msg) WGC_##name,
  WGC_STATUS_MAP(WGC_STATUS_ENUM_)
#undef WGC_STATUS_ENUM_
} wgc_status;

/* "success", "invalid argument", ...; "unknown status" for other values. */
WGC_API const char *wgc_status_string(wgc_status s);
/* "OK", "INVALID_ARGUMENT", ... (the enum name without WGC_ and ERR_, as
 * the browser module's WgcError.status). */
WGC_API const char *wgc_status_name(wgc_status s);

typedef struct wgc_context wgc_context;

/* The most recent failure on ctx, as one sentence naming the function, the
 * parameter and its value; "" before any failure, never NULL. Successful
 * calls leave it alone. With ctx == NULL: the last failure of this thread
 * that had no context (wgc_create, wgc_conv2d_output_size, a NULL ctx). */
WGC_API const char *wgc_last_error(const wgc_context *ctx);

/* ---- Context ----------------------------------------------------------- */

/* AUTO takes any WebGPU adapter, a software one included (lavapipe,
 * SwiftShader: wgc_adapter_name tells). On a machine whose only adapter is
 * a software one, the CPU backend is the faster choice for models of
 * all-MiniLM-L6-v2's size: it embedded one to eight sentences 2.5 to 10
 * times faster than lavapipe or SwiftShader on the same cores, natively
 * and in Chromium; such a program asks for WGC_BACKEND_CPU. */
typedef enum wgc_backend {
  WGC_BACKEND_AUTO,   /* WebGPU when an adapter exists, else CPU */
  WGC_BACKEND_WEBGPU, /* never falls back: WGC_ERR_NO_ADAPTER without one */
  WGC_BACKEND_CPU
} wgc_backend;

typedef enum wgc_power_preference {
  WGC_POWER_DEFAULT, /* = WGC_POWER_HIGH: the fastest adapter */
  WGC_POWER_LOW,     /* prefer an integrated, power-saving adapter */
  WGC_POWER_HIGH
} wgc_power_preference;

/* All-zero options are the defaults. */
typedef struct wgc_options {
  wgc_backend backend;
  wgc_power_preference power; /* adapter choice hint (WebGPU) */
  /* CPU backend worker threads; 0 picks the number of online cores
   * (at most 16). wasm32: a module linked with shared memory, in a
   * cross-origin isolated page, has navigator.hardwareConcurrency threads
   * (at most 16; README, "Threads in the browser"); any other has 1. */
  unsigned cpu_threads;
  /* WebGPU: the largest buffer window one kernel binding may cover; 0 means
   * the device's maxStorageBufferBindingSize. Smaller values make wgc split
   * operations as it does for tensors beyond the device limit (tests use it
   * to exercise that path on small data); any valid call still succeeds.
   * Values below 4096 act as 4096; others are rounded down to a multiple
   * of 256 (the binding offset alignment). */
  size_t max_binding_bytes;
  /* Non-zero: timing records (wgc_profile_start) from the first operation
   * on, and on WebGPU the adapter's timestamp queries are requested (only
   * then), so that records hold the GPU's own time of each operation
   * (WGC_TIME_GPU) where the adapter has them. 0: recording is off until
   * wgc_profile_start, whose records then measure submit to completion. */
  int profile;
  /* Natively: a file in which compiled pipelines persist across processes
   * (see "Pipeline cache" below); NULL or "": none (the default). Read
   * during wgc_create only. Ignored by the CPU backend and in the browser,
   * which keeps its own cache. */
  const char *pipeline_cache;
} wgc_options;

/* Creates a context. opt NULL = defaults. The environment variable
 * WGC_BACKEND=webgpu|cpu overrides WGC_BACKEND_AUTO only (unset or empty: no
 * override; another value: WGC_ERR_INVALID_ARGUMENT). Natively the WebGPU
 * runtime (libwgpu_native.so) is loaded from beside libwgc, the program's
 * rpath, or WGC_WGPU_LIBRARY (a file that is not a complete shared library
 * for this machine, or lacks the wgpu entry points, is not loaded: explicit
 * WebGPU is then WGC_ERR_NO_ADAPTER with a wgc_last_error(NULL) sentence
 * naming the file and the cause; a failed load is retried by the next
 * wgc_create). Vulkan drivers are found by the Vulkan loader, afresh for
 * each wgc_create that finds no adapter; when the loader offers none, the
 * user set neither VK_DRIVER_FILES nor VK_ICD_FILENAMES, and the process can
 * still map 512 MiB, SwiftShader from the chromium package is tried. The
 * loader and Mesa are steered by environment variables (VK_DRIVER_FILES,
 * VK_ICD_FILENAMES, MESA_VK_IGNORE_CONFORMANCE_WARNING, NODEVICE_SELECT):
 * wgc sets them only during wgc_create, under a lock, and restores them
 * before it returns, so programs started later see the environment as it
 * was; other threads reading or changing the environment meanwhile race
 * with this, as with any setenv. A device request that fails for lack of
 * memory is WGC_ERR_OUT_OF_MEMORY and is not retried on SwiftShader (AUTO
 * then takes the CPU backend, as it does without an adapter or when the
 * device fails to start).
 * Under a capped address space (RLIMIT_AS) the software drivers themselves
 * may kill the process, which wgc cannot prevent: lavapipe's
 * vkCreateDevice crashes (a double free) at some caps, wgpu aborts when a
 * host allocation fails (the Vulkan adapter query, and operations once
 * little address space is left), llvmpipe's shader compiler aborts
 * ("Unable to allocate section memory") when compiling a kernel, and
 * SwiftShader aborts when it cannot start a thread. Under such a cap
 * WebGPU transfers and operations (not wgc_alloc) first check that 64 MiB
 * of address space remain and otherwise fail with WGC_ERR_OUT_OF_MEMORY,
 * which narrows the window without closing it (queued work runs later);
 * running each operation once while memory is ample compiles its kernels
 * beforehand.
 * Some kernels come in two forms, one for GPUs (staging through
 * workgroup memory) and one for software adapters on the CPU (lavapipe,
 * SwiftShader), chosen from the adapter's type; WGC_KERNELS=gpu|cpu forces
 * a form (for testing). On CPU adapters long loops are split over launches
 * (llvmpipe stops an invocation after 65535 loop iterations). Errors:
 * WGC_ERR_NO_ADAPTER, WGC_ERR_DEVICE, WGC_ERR_OUT_OF_MEMORY,
 * WGC_ERR_WOULD_BLOCK (browser build with the WebGPU backend requested; use
 * wgc_create_async). */
WGC_API wgc_status wgc_create(const wgc_options *opt, wgc_context **out);

/* As wgc_create, without waiting. Argument errors are returned; everything
 * else, success included, arrives through done(status, ctx, user): natively
 * from wgc_poll(NULL), in the browser from the event loop. */
WGC_API wgc_status wgc_create_async(const wgc_options *opt,
                                    void (*done)(wgc_status, wgc_context *,
                                                 void *user),
                                    void *user);

/* Waits for queued work (natively), fires pending callbacks, releases
 * everything. NULL is a no-op. */
WGC_API void wgc_destroy(wgc_context *ctx);

/* "webgpu" or "cpu". */
WGC_API const char *wgc_backend_name(const wgc_context *ctx);
/* The adapter's description, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)";
 * "cpu (N threads)" on the CPU backend. */
WGC_API const char *wgc_adapter_name(const wgc_context *ctx);

/* ---- Memory ------------------------------------------------------------ */

typedef uint64_t wgc_ptr;

/* Allocates bytes (> 0) of device memory, zero-filled. Memory the device
 * cannot provide is WGC_ERR_OUT_OF_MEMORY, as is any other call that needs
 * memory it cannot get (a download's staging buffer, an operation's
 * scratch); such a call changes nothing and the context stays usable. */
WGC_API wgc_status wgc_alloc(wgc_context *ctx, size_t bytes, wgc_ptr *out);
/* Frees the allocation whose base is base. Work already queued that uses it
 * still completes; the memory is released after it. */
WGC_API wgc_status wgc_free(wgc_context *ctx, wgc_ptr base);

/* Transfers. Ranges lie inside one live allocation; addresses and sizes are
 * multiples of 4 bytes. A zero-byte transfer is a no-op that checks no
 * address. */
WGC_API wgc_status wgc_upload(wgc_context *ctx, wgc_ptr dst, const void *src,
                              size_t bytes);
/* Waits for the queued work that precedes it. */
WGC_API wgc_status wgc_download(wgc_context *ctx, void *dst, wgc_ptr src,
                                size_t bytes);
/* dst must stay valid until done ran; done(WGC_OK) also for zero bytes. */
WGC_API wgc_status wgc_download_async(wgc_context *ctx, void *dst, wgc_ptr src,
                                      size_t bytes,
                                      void (*done)(wgc_status, void *user),
                                      void *user);
/* Device-to-device; source and destination ranges must not overlap. */
WGC_API wgc_status wgc_copy(wgc_context *ctx, wgc_ptr dst, wgc_ptr src,
                            size_t bytes);
/* Waits for all queued work, then runs every due callback. */
WGC_API wgc_status wgc_synchronize(wgc_context *ctx);
WGC_API wgc_status wgc_synchronize_async(wgc_context *ctx,
                                         void (*done)(wgc_status, void *user),
                                         void *user);
/* Runs due callbacks; never waits. NULL: those of wgc_create_async. */
WGC_API wgc_status wgc_poll(wgc_context *ctx);

/* ---- Element types ------------------------------------------------------
 * Memory is untyped bytes; an operand's element type is given at the call.
 * X(NAME, name): the types in enum order; each block's elements and bytes
 * follow the list (block 1 for the scalar types).
 *   F32   IEEE binary32 (the default: a zeroed type field means f32)
 *   F16   IEEE binary16
 *   BF16  bfloat16, the upper half of an f32
 *   I32   two's complement int32 (indices)
 *   Q8_0  GGUF's (ggml's) block_q8_0: an f16 scale d, then 32 int8 q;
 *         element j is d*q[j]
 *   Q4_0  GGUF's block_q4_0: an f16 scale d, then 16 bytes whose low
 *         nibbles are elements 0-15 and high nibbles 16-31; element j is
 *         d*(q[j] - 8)
 * Blocks are packed (34 and 18 bytes), little-endian, exactly as in a
 * .gguf file, so quantized weights load unchanged. An operand's address is
 * a multiple of its element size: 4 bytes for F32 and I32, 2 for F16, BF16
 * and the block types (their f16 scale); a block operand holds whole
 * blocks. Transfers keep their 4-byte granularity, so an odd count of
 * 2-byte values travels with its padding. */
#define WGC_DTYPES(X)                                                          \
  X(F32, f32) X(F16, f16) X(BF16, bf16) X(I32, i32) X(Q8_0, q8_0) X(Q4_0, q4_0)

/* Each type's block: WGC_DTYPE_BLOCK_<NAME> elements in
 * WGC_DTYPE_BLOCK_BYTES_<NAME> bytes, so that an X(NAME, name) over the
 * list reaches them by name (WGC_DTYPE_BLOCK_##NAME). */
#define WGC_DTYPE_BLOCK_F32 1
#define WGC_DTYPE_BLOCK_BYTES_F32 4
#define WGC_DTYPE_BLOCK_F16 1
#define WGC_DTYPE_BLOCK_BYTES_F16 2
#define WGC_DTYPE_BLOCK_BF16 1
#define WGC_DTYPE_BLOCK_BYTES_BF16 2
#define WGC_DTYPE_BLOCK_I32 1
#define WGC_DTYPE_BLOCK_BYTES_I32 4
#define WGC_DTYPE_BLOCK_Q8_0 32
#define WGC_DTYPE_BLOCK_BYTES_Q8_0 34
#define WGC_DTYPE_BLOCK_Q4_0 32
#define WGC_DTYPE_BLOCK_BYTES_Q4_0 18

typedef enum wgc_dtype {
#define WGC_DTYPE_ENUM_(NAME, name) WGC_DTYPE_##NAME,
  WGC_DTYPES(WGC_DTYPE_ENUM_)
#undef WGC_DTYPE_ENUM_
} wgc_dtype;

#define WGC_DTYPE_COUNT_(NAME, name) +1
enum { WGC_DTYPE_COUNT = 0 WGC_DTYPES(WGC_DTYPE_COUNT_) };
#undef WGC_DTYPE_COUNT_

/* ---- Operations ---------------------------------------------------------
 * All validate every argument (sizes, leading dimensions, each operand's
 * footprint inside its allocation, no overlap between an output's span and an
 * input's span) and enqueue without waiting. Element-wise operations may
 * write exactly over an input of the output's shape (in place). When an
 * operation's output is empty the call is a successful no-op whose addresses
 * are not checked (leading dimensions and descs still are). */

typedef enum wgc_transpose {
  WGC_NO_TRANS,
  WGC_TRANS,
  WGC_CONJ_TRANS /* == WGC_TRANS for real data */
} wgc_transpose;

typedef enum wgc_layout { WGC_COL_MAJOR, WGC_ROW_MAJOR } wgc_layout;

/* C := alpha*op(A)*op(B) + beta*C, exactly cblas_sgemm: op(A) is m x k,
 * op(B) k x n, C m x n. lda >= max(1, rows of A as stored) and likewise ldb,
 * ldc. m == 0 || n == 0: nothing. k == 0 or alpha == 0: C := beta*C without
 * reading A or B. beta == 0: C is overwritten, never read (NaN in C does not
 * propagate); any other beta, NaN included, reads C. The products are summed
 * in float32 before alpha scales them (as cblas_sgemm does), so sums beyond
 * FLT_MAX give +-inf even where a small alpha would bring them back. */
WGC_API wgc_status wgc_gemm(wgc_context *ctx, wgc_layout layout,
                            wgc_transpose ta, wgc_transpose tb, size_t m,
                            size_t n, size_t k, float alpha, wgc_ptr a,
                            size_t lda, wgc_ptr b, size_t ldb, float beta,
                            wgc_ptr c, size_t ldc);

/* cublasSgemmStridedBatched: batch i uses a + i*stride_a elements, etc.
 * stride_a or stride_b may be 0 (shared). C batches must not overlap.
 * A, B and C may live in one allocation. */
WGC_API wgc_status wgc_gemm_batched(wgc_context *ctx, wgc_layout layout,
                                    wgc_transpose ta, wgc_transpose tb,
                                    size_t m, size_t n, size_t k, float alpha,
                                    wgc_ptr a, size_t lda, size_t stride_a,
                                    wgc_ptr b, size_t ldb, size_t stride_b,
                                    float beta, wgc_ptr c, size_t ldc,
                                    size_t stride_c, size_t batch_count);

/* The epilogue of a GEMM, applied in its own kernel (cuBLASLt-style):
 * C := act(alpha*op(A)*op(B) + beta*C + bias). */
typedef enum wgc_activation {
  WGC_ACTIVATION_NONE,
  WGC_ACTIVATION_RELU,
  WGC_ACTIVATION_GELU,      /* exact, as WGC_UNARY_GELU */
  WGC_ACTIVATION_GELU_TANH, /* tanh approximation, as WGC_UNARY_GELU_TANH */
  WGC_ACTIVATION_SILU
} wgc_activation;

typedef enum wgc_bias_kind {
  WGC_BIAS_PER_COLUMN, /* bias[n]: one per output column (a linear layer) */
  WGC_BIAS_PER_ROW     /* bias[m]: one per output row */
} wgc_bias_kind;

/* The options of the _ex forms: the epilogue, and the operands' element
 * types (a zeroed field is f32, so a zeroed struct is the plain f32
 * call). See wgc_gemm_ex. */
typedef struct wgc_gemm_epilogue {
  wgc_ptr bias; /* 0: none; shared by every batch */
  wgc_bias_kind bias_kind;
  wgc_activation activation;
  wgc_dtype a_type, b_type, c_type, bias_type; /* zeroed: f32 */
} wgc_gemm_epilogue;

/* wgc_gemm and wgc_gemm_batched with an epilogue; ep NULL or all zero is
 * the plain call. With k == 0 or alpha == 0 the epilogue still applies
 * (act(beta*C + bias); A and B are not read). The bias indexes the logical
 * m x n C whatever the layout (per column: bias[j] for C[i,j]); its n (or m)
 * floats are read-only and may not overlap any batch of C (overlapping A or
 * B is fine). The epilogue runs in the kernel that writes C, on the same
 * sum: one launch wherever the plain GEMM is one. The bias and C add in
 * the arithmetic of the sum (double on the CPU backend, float on WebGPU);
 * NaN and infinities follow IEEE arithmetic on the unfused formula (a NaN
 * bias makes its column NaN; relu(NaN) is NaN; gelu(-inf) and silu(-inf)
 * are NaN, as the unary ops), and beta == 0 still never reads C. Accuracy:
 * the GEMM's bound on the pre-activation, times the activation's slope
 * (at most 1.13), plus 1e-5 relative for the activation itself (measured:
 * within 1.7 float epsilons of |alpha|*sum|a*b| + |beta*c| + |bias| on
 * both backends, k up to 2048; the CPU backend computes GELU in float
 * arithmetic, within 1.9e-6 relative and 1.8 float epsilons of |x|).
 * Errors name the parameter: ep->bias
 * (outside its allocation, misaligned, overlapping C), ep->bias_kind,
 * ep->activation (values outside the enums).
 *
 * Types (ep->a_type, b_type, c_type, bias_type; zeroed = f32): A and C
 * are F32, F16 or BF16; B is those or Q8_0 or Q4_0 (weights); the bias is
 * F32 or F16. Leading dimensions, batch strides and the addresses' offsets
 * count elements of each operand's own type; an address is a multiple of
 * its element size (4 bytes for f32, 2 for the others, a block's f16
 * scale included). Inputs convert exactly to f32 (Q8_0/Q4_0 as
 * wgc_dequantize does; a subnormal f16 or bf16 element may count as a
 * zero of its sign on a device that flushes subnormals, as SPECIAL VALUES
 * say), the arithmetic is that of the f32 call (beta*C
 * reads C in its type), and an F16 or BF16 C is rounded once, to nearest
 * even, from the backend's sum (float on WebGPU, double on the CPU
 * backend). Accuracy: the f32 bound above on the converted inputs, plus
 * half a unit in the last place of C's type (2^-11 |c| for f16, 2^-8 for
 * bf16). A block B runs its blocks along k: k must be B's contiguous
 * dimension (WGC_ROW_MAJOR with tb = WGC_TRANS, i.e. a linear layer's
 * [n, k] weights, or WGC_COL_MAJOR with WGC_NO_TRANS), and k, ldb and
 * stride_b multiples of 32 (whole blocks). Rejected, naming the operand
 * and its type: a type outside wgc_dtype, I32 anywhere, Q8_0/Q4_0 for A,
 * C or the bias, BF16 for the bias, a block B laid out along n or with k,
 * ldb or stride_b not whole blocks, and a misaligned address. The GEMM
 * entries without ep are the f32 call. On WebGPU a 2-byte C is written
 * with atomic operations on its 32-bit words (neighbouring elements may
 * belong to other invocations). */
WGC_API wgc_status wgc_gemm_ex(wgc_context *ctx, wgc_layout layout,
                               wgc_transpose ta, wgc_transpose tb, size_t m,
                               size_t n, size_t k, float alpha, wgc_ptr a,
                               size_t lda, wgc_ptr b, size_t ldb, float beta,
                               wgc_ptr c, size_t ldc,
                               const wgc_gemm_epilogue *ep);
WGC_API wgc_status wgc_gemm_batched_ex(
    wgc_context *ctx, wgc_layout layout, wgc_transpose ta, wgc_transpose tb,
    size_t m, size_t n, size_t k, float alpha, wgc_ptr a, size_t lda,
    size_t stride_a, wgc_ptr b, size_t ldb, size_t stride_b, float beta,
    wgc_ptr c, size_t ldc, size_t stride_c, size_t batch_count,
    const wgc_gemm_epilogue *ep);

/* 2-D convolution (cross-correlation, as cuDNN and PyTorch), NCHW. */
typedef struct wgc_conv2d_desc {
  size_t n, c, h, w;         /* input  [n, c, h, w] */
  size_t k, r, s;            /* filter [k, c/groups, r, s]; r, s >= 1 */
  size_t stride_h, stride_w; /* 0 means 1 */
  size_t pad_h, pad_w;
  size_t dilation_h, dilation_w; /* 0 means 1 */
  size_t groups;                 /* 0 means 1; c and k divisible by it */
  /* Element types (zeroed: f32): input, filter and output F32, F16 or
   * BF16; the bias F32 or F16. See wgc_conv2d. */
  wgc_dtype input_type, filter_type, bias_type, output_type;
} wgc_conv2d_desc;

/* p = (h + 2*pad_h - dilation_h*(r-1) - 1)/stride_h + 1, likewise q.
 * A dilated filter larger than the padded input is invalid, and so are
 * h + 2*pad_h, w + 2*pad_w, dilation_h*(r-1), dilation_w*(s-1), stride_h
 * or stride_w of 2^31 or more (the kernels' 32-bit coordinates; the same
 * limit as pool2d, on every backend). Errors are read with
 * wgc_last_error(NULL). */
WGC_API wgc_status wgc_conv2d_output_size(const wgc_conv2d_desc *d, size_t *p,
                                          size_t *q);
/* output [n, k, p, q] = conv(input, filter) + bias; bias 0 = none, else [k].
 * No input channels (c == 0) gives the bias (or zeros), as does an output
 * whose window lies wholly in the padding. d is checked as by
 * wgc_conv2d_output_size (sizes below 2^31 there); within that, any
 * padding, stride and dilation runs on every backend.
 *
 * Types (d->input_type, filter_type, bias_type, output_type): the inputs
 * convert exactly to f32, the sum is the f32 call's (double on the CPU
 * backend, float on WebGPU, the bias added after it), and an F16 or BF16
 * output is rounded once, to nearest even, from it (beyond 65520 an f16
 * output is inf): the bound above on the converted inputs plus half a
 * unit in the last place of the output type. Sizes count elements; a
 * 2-byte operand starts at any even byte offset. Errors
 * (WGC_ERR_INVALID_ARGUMENT naming the field and its type; nothing is
 * written): a type outside wgc_dtype or one the operand does not take
 * (I32, the block types, a BF16 bias; a type is checked also where its
 * operand is absent), a misaligned typed operand. */
WGC_API wgc_status wgc_conv2d(wgc_context *ctx, const wgc_conv2d_desc *d,
                              wgc_ptr input, wgc_ptr filter, wgc_ptr bias,
                              wgc_ptr output);

typedef enum wgc_pool_mode {
  WGC_POOL_MAX, /* the largest element of the window */
  WGC_POOL_AVG  /* the mean of the window */
} wgc_pool_mode;

/* 2-D pooling of an NCHW tensor, as ONNX MaxPool and AveragePool (and
 * PyTorch's max_pool2d and avg_pool2d) with ceil_mode 0: each channel of
 * each image on its own. */
typedef struct wgc_pool2d_desc {
  size_t n, c, h, w;             /* input [n, c, h, w] */
  size_t r, s;                   /* window rows and columns; >= 1 */
  size_t stride_h, stride_w;     /* 0 means 1 */
  size_t pad_h, pad_w;           /* on both sides */
  size_t dilation_h, dilation_w; /* 0 means 1 */
  wgc_pool_mode mode;
  /* AVG: nonzero divides by all r*s positions of the window, padding
   * included (ONNX count_include_pad = 1); 0 by the positions inside the
   * input (ONNX's default). MAX ignores it. */
  int count_include_pad;
  /* Element types (zeroed: f32): F32, F16 or BF16 each. See wgc_pool2d. */
  wgc_dtype input_type, output_type;
} wgc_pool2d_desc;

/* p = (h + 2*pad_h - dilation_h*(r-1) - 1)/stride_h + 1, likewise q, as for
 * conv2d; a dilated window larger than the padded input is invalid. It
 * checks the whole desc as wgc_pool2d does, mode included (a value outside
 * wgc_pool_mode is WGC_ERR_INVALID_ARGUMENT naming d->mode), so every size
 * it returns is one wgc_pool2d accepts. Errors are read with
 * wgc_last_error(NULL). */
WGC_API wgc_status wgc_pool2d_output_size(const wgc_pool2d_desc *d, size_t *p,
                                          size_t *q);
/* output [n, c, p, q]: element (y, x) of a plane pools the input positions
 * (y*stride_h - pad_h + i*dilation_h, x*stride_w - pad_w + j*dilation_w)
 * for i < r, j < s that lie inside the input; padding takes no part (as
 * ONNX's -inf for MAX, and excluded or counted as 0 for AVG).
 *   MAX: exact; NaN when any of those elements is NaN; -inf for a window
 *        with no position inside the input (dilation can make one).
 *   AVG: their sum divided by the count (see count_include_pad); 0 for a
 *        window with no position inside the input and count_include_pad
 *        0. The CPU sums in double; WebGPU sums in float32, in windows of
 *        rows of the window, within (r*s + 1) * 2^-24 * mean(|x|) plus one
 *        rounding of the result; its partial sums may overflow to +-inf
 *        where the window's sum of |x| exceeds FLT_MAX.
 * output must not overlap input. Input and output each hold fewer than
 * 2^31 elements, and h + 2*pad_h and w + 2*pad_w are below 2^31.
 *
 * Types (d->input_type, output_type): the input converts exactly to f32;
 * MAX is exact (an input's value, rounded once where the output type is
 * narrower; a NaN stays a NaN); AVG sums as the f32 call does and an F16
 * or BF16 output is rounded once, to nearest even, from the mean (beyond
 * 65520 an f16 output is inf): the bound above plus half a unit in the
 * last place of the output type. A 2-byte operand starts at any even
 * byte offset. Errors (WGC_ERR_INVALID_ARGUMENT naming the field and its
 * type; nothing is written): a type outside wgc_dtype or one the operand
 * does not take (I32, the block types), a misaligned typed operand. */
WGC_API wgc_status wgc_pool2d(wgc_context *ctx, const wgc_pool2d_desc *d,
                              wgc_ptr input, wgc_ptr output);

typedef enum wgc_causal {
  WGC_CAUSAL_NONE,
  WGC_CAUSAL_TOP_LEFT,    /* query i sees keys j <= i (PyTorch is_causal) */
  WGC_CAUSAL_BOTTOM_RIGHT /* query i sees keys j <= i + seq_kv - seq_q */
} wgc_causal;

/* Element strides of a 4-D attention operand over (batch, head, seq); the
 * last dimension (head_dim) is contiguous. All three 0 means the contiguous
 * [batch, heads, seq, dim] layout. */
typedef struct wgc_attention_strides {
  size_t batch, head, seq;
} wgc_attention_strides;

typedef struct wgc_attention_desc {
  size_t batch, heads, heads_kv; /* heads_kv 0 means heads; heads % heads_kv
                                    == 0 (GQA/MQA) */
  size_t seq_q, seq_kv, head_dim;
  float scale; /* finite and > 0, typically 1/sqrt(head_dim) */
  wgc_causal causal;
  /* Fields below: all zero keeps the plain contiguous form above. */
  size_t head_dim_v; /* V's and O's head size; 0 means head_dim */
  float softcap;     /* 0: none; > 0: scores := softcap*tanh(scores/softcap) */
  /* 0: none; else an additive float mask (ONNX attn_mask), element
   * (b, h, i, j) at mask + size*(b*mask_stride.batch + h*mask_stride.head +
   * i*mask_stride.seq + j), size the bytes of mask_type (4 for f32); a
   * stride of 0 broadcasts (all 0: one row of seq_kv shared by all) */
  wgc_ptr mask;
  wgc_attention_strides mask_stride;
  /* Layouts of Q, K, V and O (e.g. [batch, seq, heads, dim], packed QKV, a
   * KV cache allocated for a longer sequence). */
  wgc_attention_strides q_stride, k_stride, v_stride, o_stride;
  /* Element types of Q, K, V, O and the mask: F32, F16 or BF16 each
   * (zeroed: f32). Strides and the mask's layout count elements of each
   * operand's own type. */
  wgc_dtype q_type, k_type, v_type, o_type, mask_type;
} wgc_attention_desc;

/* O = softmax(softcap(scale * Q K^T) + mask) V, max-subtracted. Q and O are
 * [batch, heads, seq_q, head_dim(_v)], K and V [batch, heads_kv, seq_kv,
 * head_dim(_v)], contiguous unless strides are given. Query head h reads
 * key/value head h / (heads / heads_kv). The causal mask and the additive
 * mask both apply: keys the causal mask hides contribute nothing (whatever
 * their K, V and mask entries hold), the others get score + mask. A row
 * that sees no key (and seq_kv == 0) is zeros.
 *
 * Strides: any element strides (0 included, for inputs) over batch, head
 * and seq, so a decode step reads a KV cache allocated for max_seq keys in
 * place: seq_kv = the current length, k_stride = {heads_kv*max_seq*dim,
 * max_seq*dim, dim} (or {max_seq*heads_kv*dim, dim, heads_kv*dim} for a
 * [batch, seq, heads, dim] cache); packed QKV [batch, seq, 3, heads, dim]
 * is q = base, k = base + 4*heads*dim, v = base + 8*heads*dim, each with
 * strides {seq*3*heads*dim, dim, 3*heads*dim}. Each operand must lie
 * inside its allocation from its address to its last element; o's rows may
 * not overlap one another, and o's span (first to last element) may not
 * overlap the span of q, k, v or the mask, even where its rows would fall
 * between theirs. head_dim 0 with head_dim_v > 0 is rejected (scores need
 * a key dimension); softcap must be finite and >= 0. The kernels index in
 * 32 bits: seq_q and seq_kv must be below 2^31, head_dim and head_dim_v at
 * most 2^28, and batch * heads below 2^32, on every backend (the same
 * WGC_ERR_INVALID_ARGUMENT and message), even where strides of 0 keep the
 * operands small. Within that any call runs; keys that the causal mask
 * hides from every row (TOP_LEFT: j >= seq_q) cost nothing.
 *
 * Softcap and the mask: softcap applies to the scores and the mask is
 * added after it, as ONNX Attention (opset 23: its schema's diagram and
 * reference implementation), Gemma 2, PyTorch and flash-attention do, so
 * a -inf mask entry still masks its key.
 *
 * Special values as in the unfused formula: a NaN in the row's query, in
 * a key it sees, in its scores or in its mask entries, or a +inf score or
 * mask entry (exp(inf - inf)), makes the row NaN; a -inf score (a -inf
 * mask entry) gives weight 0, and a row whose visible scores are all -inf
 * is NaN. A weight exp(s - max) below e^-87 (1.6e-38, the bottom of
 * float32's normal range, so devices that flush subnormals agree), a score
 * more than 87 below the row's largest, is 0 too: such a key, like a
 * masked one, does not reach the row whatever its V holds. A NaN or
 * infinity in V reaches exactly the rows that give its key a non-zero
 * weight, however the row's max was reached, on every backend and path
 * (fused, split-KV, unfused), and combines there as IEEE adds: +inf with
 * -inf, or any NaN, gives NaN. (The fused WebGPU kernels decide weights
 * against a running max as they stream keys; a row whose sums end
 * non-finite is walked again against its final max, which costs nothing
 * while they stay finite.) With softcap a +inf scale*q.k becomes softcap
 * (tanh), a finite score. Keys hidden by the causal mask contribute
 * nothing. The WebGPU kernels sum unnormalised weights times V in f32
 * before dividing, so values whose magnitude times the visible keys
 * exceeds FLT_MAX may give +-inf where the exact mean is finite.
 * Accuracy: the bound at the top of this file plus 1e-6*max|mask|*max|v|
 * (the score's rounding after the mask is added); softcap does not
 * enlarge it (tanh' <= 1).
 *
 * Types (d->q_type, k_type, v_type, o_type, mask_type; zeroed = f32):
 * each operand is F32, F16 or BF16, independently (an f16 KV cache read
 * in place beside f32 activations, say). Strides, the mask's layout and
 * the addresses' offsets count elements of each operand's own type; an
 * address is a multiple of its element size (a 2-byte operand may start
 * 2 bytes into a word). Inputs convert exactly to f32, the arithmetic is
 * that of the f32 call, and an F16 or BF16 O is rounded once, to nearest
 * even, from the backend's result (float on WebGPU, double on the CPU
 * backend); the special values above hold on every type (a NaN or
 * infinity of an f16 V reaches exactly the rows that give its key a
 * non-zero weight). Accuracy: the f32 bound on the converted inputs plus
 * half a unit in the last place of O's type. Rejected, naming the
 * operand's field and its type: a type outside wgc_dtype, I32, Q8_0 or
 * Q4_0, and a misaligned 2-byte operand. On WebGPU a 2-byte O is written
 * by the split-KV combine (its sums stay f32 until then): by whole 32-bit
 * words where every row of O starts a word (an even head_dim_v, even
 * strides, O at a 4-byte boundary), else with atomic operations on them. */
WGC_API wgc_status wgc_attention(wgc_context *ctx, const wgc_attention_desc *d,
                                 wgc_ptr q, wgc_ptr k, wgc_ptr v, wgc_ptr o);

/* X(NAME, name): the reduce ops in enum order. Tables that follow the
 * order (names, the CPU code, the kernels' WGSL constants, the tests) are
 * generated from the list or check their size against its _OP_COUNT. */
#define WGC_REDUCE_OPS(X)                                                      \
  X(SUM, sum)                                                                  \
  X(MAX, max) /* NaN-propagating, as numpy */                                  \
  X(MIN, min) /* NaN-propagating, as numpy */                                  \
  X(MEAN, mean)                                                                \
  X(PROD, prod)                                                                \
  X(SUM_SQUARE, sum_square)   /* sum of x * x */                               \
  X(L1, l1)                   /* sum of |x| */                                 \
  X(L2, l2)                   /* sqrt of the sum of x * x */                   \
  X(LOG_SUM_EXP, log_sum_exp) /* log of the sum of exp(x), max-subtracted */

typedef enum wgc_reduce_op {
#define WGC_REDUCE_ENUM_(NAME, name) WGC_REDUCE_##NAME,
  WGC_REDUCE_OPS(WGC_REDUCE_ENUM_)
#undef WGC_REDUCE_ENUM_
} wgc_reduce_op;

/* Reduces axis of the contiguous row-major tensor of shape[rank] (rank 1..8);
 * the output is the shape without that axis, contiguous. Semantics are
 * ONNX's Reduce* (opset 18) with keepdims left to the caller's shapes.
 *
 * An axis of length 0 gives the op's identity, as ONNX: 0 for SUM,
 * SUM_SQUARE, L1 and L2, 1 for PROD, -inf for LOG_SUM_EXP; MAX, MIN and
 * MEAN of nothing are WGC_ERR_INVALID_ARGUMENT.
 *
 * Special values follow IEEE arithmetic on each op's formula: a NaN
 * anywhere in the span gives NaN (MAX and MIN too, as numpy); SUM of +inf
 * and -inf is NaN; PROD of 0 and inf is NaN. LOG_SUM_EXP is computed as
 * m + log(sum(exp(x - m))) with m the largest element, so inputs up to
 * FLT_MAX do not overflow; a +inf element gives +inf, an all -inf span -i
 * -inf. A subnormal element counts as its value or as a zero of its sign
 * (SPECIAL VALUES at the top: PROD of [-inf, 1e-40] is -inf or NaN).
 *
 * Accuracy (float32 result vs the exact value): SUM, MEAN, SUM_SQUARE, L1
 * and L2 are accumulated as if in double (CPU: double; WebGPU: float pairs
 * that keep each addition's and each square's rounding error), within
 * (ceil(log2 len) + 2) * 2^-23 * sum(|terms|) (divided by len for MEAN, plus
 * its one division), L2 within half that relative plus one rounding; in
 * practice within 2 units in the last place. PROD: the CPU multiplies in
 * double, the WebGPU kernels keep each product's rounding error (Dekker's
 * product), within (4 + (2 * len)^2 * 2^-24) * 2^-24 relative plus
 * 2^-125 for results near the float32 underflow (in practice 3 units in
 * the last place for 10^6 factors). LOG_SUM_EXP: within (len + 2) * 2^-24
 * + 2^-21 * (|result| + 1) absolute at worst (the WebGPU kernels sum the
 * exponentials in plain float32; in practice 3 units in the last place).
 * MAX and MIN are exact.
 *
 * Range: the CPU accumulates squares in double, so L2 never overflows or
 * underflows where its result is a float32. The WebGPU kernels square in
 * float32: SUM_SQUARE and L2 give +inf once a square or the sum of squares
 * exceeds FLT_MAX (|x| >= 2^64), and squares below the float32 range
 * (|x| < 2^-75, or < 2^-63 where the device flushes subnormals) count as
 * 0. PROD over- and underflows as float32 products (in the kernels' order)
 * do on WebGPU and as double ones on the CPU, so a product whose partial
 * products leave the float32 range may be +-inf or 0 on WebGPU where the
 * CPU gives a finite result. */
WGC_API wgc_status wgc_reduce(wgc_context *ctx, wgc_reduce_op op, wgc_ptr input,
                              wgc_ptr output, const size_t *shape, size_t rank,
                              size_t axis);
/* As wgc_reduce over the naxes (1..rank) distinct axes listed in axes, in
 * any order; the output is the shape without them, contiguous. As accurate
 * as one reduction over their product: MEAN divides once by the product of
 * the lengths, the partials between axes are kept as (sum, compensation)
 * pairs or (max, sum of exponentials) for LOG_SUM_EXP, and L2 takes one
 * square root of the whole sum of squares. Any reduced axis of length 0
 * gives the identity (see wgc_reduce). */
WGC_API wgc_status wgc_reduce_axes(wgc_context *ctx, wgc_reduce_op op,
                                   wgc_ptr input, wgc_ptr output,
                                   const size_t *shape, size_t rank,
                                   const size_t *axes, size_t naxes);
/* Typed forms of wgc_reduce and wgc_reduce_axes (f16 and bf16
 * activations): input F32, F16 or BF16, output F32 or the input's type;
 * the plain forms are these with both F32. The reduction runs as the f32
 * one does on the exactly converted input (its bounds and special values
 * hold), and its float32 result is rounded to nearest even into an f16 or
 * bf16 output (beyond 65520 an f16 output is inf): the bound is the f32
 * op's plus half a unit in the last place of the output type. A 2-byte
 * operand starts at any even byte offset. Errors (WGC_ERR_INVALID_ARGUMENT
 * naming the operand and its type; nothing is written): an input type
 * other than F32, F16 or BF16, an output type other than F32 or the
 * input's, a misaligned typed operand, and the plain form's own. */
WGC_API wgc_status wgc_reduce_ex(wgc_context *ctx, wgc_reduce_op op,
                                 wgc_ptr input, wgc_dtype input_type,
                                 wgc_ptr output, wgc_dtype output_type,
                                 const size_t *shape, size_t rank, size_t axis);
WGC_API wgc_status wgc_reduce_axes_ex(wgc_context *ctx, wgc_reduce_op op,
                                      wgc_ptr input, wgc_dtype input_type,
                                      wgc_ptr output, wgc_dtype output_type,
                                      const size_t *shape, size_t rank,
                                      const size_t *axes, size_t naxes);
/* The int32 index of the largest (smallest) element along axis, as ONNX
 * ArgMax/ArgMin with select_last_index = 0: the first index on ties (-0
 * ties with +0); a NaN counts as larger (smaller) than every number, so
 * the first NaN wins, as numpy. output is int32, the shape without axis;
 * an axis of length 0, or longer than INT32_MAX, is
 * WGC_ERR_INVALID_ARGUMENT. Devices that flush subnormals compare them as
 * zeros. */
WGC_API wgc_status wgc_argmax(wgc_context *ctx, wgc_ptr input, wgc_ptr output,
                              const size_t *shape, size_t rank, size_t axis);
WGC_API wgc_status wgc_argmin(wgc_context *ctx, wgc_ptr input, wgc_ptr output,
                              const size_t *shape, size_t rank, size_t axis);

/* X(NAME, name): the unary ops in enum order (see WGC_REDUCE_OPS). */
#define WGC_UNARY_OPS(X)                                                       \
  X(RELU, relu) /* NaN propagates */                                           \
  X(SIGMOID, sigmoid)                                                          \
  X(TANH, tanh)                                                                \
  X(EXP, exp)                                                                  \
  X(LOG, log)                                                                  \
  X(SQRT, sqrt)                                                                \
  X(ABS, abs)                                                                  \
  X(NEG, neg)                                                                  \
  X(GELU, gelu)           /* exact: 0.5*x*(1 + erf(x/sqrt(2))) */              \
  X(SILU, silu)           /* x*sigmoid(x) */                                   \
  X(GELU_TANH, gelu_tanh) /* 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) */    \
  X(ERF, erf)                                                                  \
  X(RECIPROCAL, reciprocal) /* 1/x */                                          \
  X(FLOOR, floor)                                                              \
  X(CEIL, ceil)                                                                \
  X(ROUND, round) /* half to even, as ONNX Round */                            \
  X(SIN, sin)                                                                  \
  X(COS, cos)                                                                  \
  X(SOFTPLUS, softplus)         /* log(1 + e^x) */                             \
  X(LEAKY_RELU, leaky_relu)     /* x < 0 ? alpha*x : x */                      \
  X(ELU, elu)                   /* x < 0 ? alpha*(e^x - 1) : x */              \
  X(HARD_SIGMOID, hard_sigmoid) /* max(0, min(1, alpha*x + beta)) */           \
  X(CLIP, clip)                 /* min(max(x, alpha), beta), as numpy.clip */

typedef enum wgc_unary_op {
#define WGC_UNARY_ENUM_(NAME, name) WGC_UNARY_##NAME,
  WGC_UNARY_OPS(WGC_UNARY_ENUM_)
#undef WGC_UNARY_ENUM_
} wgc_unary_op;

/* X(NAME, name): the binary ops in enum order (see WGC_REDUCE_OPS). */
#define WGC_BINARY_OPS(X)                                                      \
  X(ADD, add)                                                                  \
  X(SUB, sub)                                                                  \
  X(MUL, mul)                                                                  \
  X(DIV, div)                                                                  \
  X(MAX, max) /* NaN propagates (numpy maximum) */                             \
  X(MIN, min) /* NaN propagates (numpy minimum) */                             \
  X(POW, pow) /* agrees with C powf, (-2)^3 = -8 */

typedef enum wgc_binary_op {
#define WGC_BINARY_ENUM_(NAME, name) WGC_BINARY_##NAME,
  WGC_BINARY_OPS(WGC_BINARY_ENUM_)
#undef WGC_BINARY_ENUM_
} wgc_binary_op;

/* How many ops each list holds: one past the last valid value. Kept out of
 * the op enums so that a switch over one needs no case for it. */
#define WGC_OP_COUNT_(NAME, name) +1
enum {
  WGC_REDUCE_OP_COUNT = 0 WGC_REDUCE_OPS(WGC_OP_COUNT_),
  WGC_UNARY_OP_COUNT = 0 WGC_UNARY_OPS(WGC_OP_COUNT_),
  WGC_BINARY_OP_COUNT = 0 WGC_BINARY_OPS(WGC_OP_COUNT_)
};
#undef WGC_OP_COUNT_

/* output[i] = op(input[i]) for n elements; output == input is allowed. */
WGC_API wgc_status wgc_unary(wgc_context *ctx, wgc_unary_op op, wgc_ptr input,
                             wgc_ptr output, size_t n);
/* As wgc_unary for the ops that take parameters (ONNX attributes), which
 * wgc_unary runs with ONNX's defaults: LEAKY_RELU alpha (0.01), ELU alpha
 * (1), HARD_SIGMOID alpha and beta (0.2, 0.5), CLIP min = alpha and max =
 * beta (-inf, +inf); other ops ignore alpha and beta. Any float is a valid
 * parameter and follows the op's formula in IEEE arithmetic: a NaN alpha
 * makes LEAKY_RELU and ELU NaN for x < 0 and HARD_SIGMOID NaN everywhere;
 * HARD_SIGMOID's alpha*x of a finite alpha and x is a finite number even
 * where float32 overflows it, so an infinite beta gives 0 or 1 there;
 * CLIP is numpy.clip's min(max(x, alpha), beta), so a NaN bound makes every
 * element NaN and alpha > beta makes every non-NaN element beta (as ONNX
 * Clip). A NaN x gives NaN in every op. */
WGC_API wgc_status wgc_unary_params(wgc_context *ctx, wgc_unary_op op,
                                    float alpha, float beta, wgc_ptr input,
                                    wgc_ptr output, size_t n);
/* out[i] = op(a[i], b[i]); out may equal a or b exactly. */
WGC_API wgc_status wgc_binary(wgc_context *ctx, wgc_binary_op op, wgc_ptr a,
                              wgc_ptr b, wgc_ptr out, size_t n);
/* numpy broadcasting of shapes of rank 0 (scalar) to 8; out has the
 * broadcast shape, contiguous. out may equal an input whose shape is the
 * broadcast shape. */
WGC_API wgc_status wgc_binary_broadcast(wgc_context *ctx, wgc_binary_op op,
                                        wgc_ptr a, const size_t *shape_a,
                                        size_t rank_a, wgc_ptr b,
                                        const size_t *shape_b, size_t rank_b,
                                        wgc_ptr out);

/* out = cond ? a : b, elementwise (ONNX Where), with numpy broadcasting of
 * the three shapes (rank 0..8); out has the broadcast shape, contiguous.
 * cond is float (ONNX's is bool): true when != 0 (NaN is true, as in C;
 * -0 is false; a subnormal is true on every backend, as cond is tested by
 * its bits). The chosen value is copied exactly, NaN payloads included. out
 * may equal an input whose shape is the broadcast shape and may not
 * overlap an input otherwise. An empty output is a no-op. */
WGC_API wgc_status wgc_where(wgc_context *ctx, wgc_ptr cond,
                             const size_t *shape_cond, size_t rank_cond,
                             wgc_ptr a, const size_t *shape_a, size_t rank_a,
                             wgc_ptr b, const size_t *shape_b, size_t rank_b,
                             wgc_ptr out);

/* Typed forms of the element-wise ops (f16 and bf16 activations): each
 * operand's type beside its address, as wgc_gather_ex has them, since the
 * plain forms' arguments are positional too; the plain forms are these
 * with every type F32. Every operand is F32, F16 or BF16, in any mix. The
 * op computes in float32 on the exactly converted inputs (the CPU backend
 * as its f32 path does) and rounds its result once, to nearest even, into
 * an f16 or bf16 output (beyond 65520 an f16 output is inf); the bound is
 * the f32 op's plus half a unit in the last place of the output type.
 * wgc_where_ex copies the chosen value, converting it as wgc_cast does
 * (exact where the output type holds it; NaN stays NaN); an f16 or bf16
 * cond is true unless +-0, by its bits. Typed operands run on both
 * backends without the vec4 paths. A 2-byte operand starts at any even
 * byte offset. In place needs the same type on both sides (the spans must
 * be identical). Errors (WGC_ERR_INVALID_ARGUMENT naming the operand and
 * its type; nothing is written): a type outside wgc_dtype, I32, Q8_0 or
 * Q4_0, a misaligned typed operand, and the plain form's own. */
WGC_API wgc_status wgc_unary_ex(wgc_context *ctx, wgc_unary_op op,
                                wgc_ptr input, wgc_dtype input_type,
                                wgc_ptr output, wgc_dtype output_type,
                                size_t n);
WGC_API wgc_status wgc_unary_params_ex(wgc_context *ctx, wgc_unary_op op,
                                       float alpha, float beta, wgc_ptr input,
                                       wgc_dtype input_type, wgc_ptr output,
                                       wgc_dtype output_type, size_t n);
WGC_API wgc_status wgc_binary_ex(wgc_context *ctx, wgc_binary_op op, wgc_ptr a,
                                 wgc_dtype a_type, wgc_ptr b, wgc_dtype b_type,
                                 wgc_ptr out, wgc_dtype out_type, size_t n);
WGC_API wgc_status wgc_binary_broadcast_ex(wgc_context *ctx, wgc_binary_op op,
                                           wgc_ptr a, wgc_dtype a_type,
                                           const size_t *shape_a, size_t rank_a,
                                           wgc_ptr b, wgc_dtype b_type,
                                           const size_t *shape_b, size_t rank_b,
                                           wgc_ptr out, wgc_dtype out_type);
WGC_API wgc_status wgc_where_ex(wgc_context *ctx, wgc_ptr cond,
                                wgc_dtype cond_type, const size_t *shape_cond,
                                size_t rank_cond, wgc_ptr a, wgc_dtype a_type,
                                const size_t *shape_a, size_t rank_a, wgc_ptr b,
                                wgc_dtype b_type, const size_t *shape_b,
                                size_t rank_b, wgc_ptr out, wgc_dtype out_type);

/* ---- Normalization ------------------------------------------------------
 * Tensors are contiguous row-major of shape[rank] (rank 1..8); the output
 * has the input's shape and may equal the input (in place). */

/* softmax along axis (ONNX Softmax, opset 13+): exp(x - max) / sum, the
 * max subtracted first, so magnitudes up to FLT_MAX do not overflow. A row
 * holding +inf or NaN is NaN; all -inf is NaN; -inf elements give 0
 * (softmax of [-inf, 0] is [0, 1]); an axis of length 1 gives 1. Within
 * 1e-5 * |y| + 1e-6 of the exact result. */
WGC_API wgc_status wgc_softmax(wgc_context *ctx, wgc_ptr input, wgc_ptr output,
                               const size_t *shape, size_t rank, size_t axis);
/* log(softmax) along axis (ONNX LogSoftmax): x - max - log(sum exp(x -
 * max)), never log of a rounded-to-zero quotient. Special values as for
 * wgc_softmax (a -inf element gives -inf). Within 1e-5 * |y| + 2e-6. */
WGC_API wgc_status wgc_log_softmax(wgc_context *ctx, wgc_ptr input,
                                   wgc_ptr output, const size_t *shape,
                                   size_t rank, size_t axis);
/* ONNX LayerNormalization: each group of the axes axis..rank-1 is
 * normalised, (x - mean) / sqrt(var + epsilon) * scale + bias, the variance
 * the biased one, mean and variance in two passes (or an equally stable
 * form). scale and bias are contiguous of shape[axis..rank-1]; scale 0
 * means ones, bias 0 zeros. epsilon finite and >= 0 (ONNX's default 1e-5).
 * A constant group gives exactly bias when epsilon > 0 (x - mean is
 * exactly 0), and NaN with epsilon 0 (0 / 0, as the formula); a NaN or
 * infinity makes its group NaN. Within 1e-5 * |y| + 1e-5 for |scale| and
 * |bias| up to a few. The WebGPU backend keeps the statistics in float32
 * (as ONNX's default stash_type), so a group whose |x - mean| exceeds
 * about 1e19 overflows there, and one whose squared deviations fall below
 * float32's range (|x - mean| under about 1e-19, with epsilon small
 * enough not to dominate) loses digits or gives +-inf, where a float64
 * computation would not; the CPU backend computes in double. */
WGC_API wgc_status wgc_layer_norm(wgc_context *ctx, wgc_ptr input,
                                  wgc_ptr scale, wgc_ptr bias, wgc_ptr output,
                                  const size_t *shape, size_t rank, size_t axis,
                                  float epsilon);
/* ONNX RMSNormalization: x / sqrt(mean(x^2) + epsilon) * scale over the axes
 * axis..rank-1; scale as for wgc_layer_norm. epsilon finite and >= 0. As
 * the formula gives: a group holding an infinity (and no NaN) is NaN at
 * the infinities and 0 (of x's sign) at its finite elements (x / inf); a
 * NaN makes its group NaN; an all-zero group with epsilon 0 is NaN (0 / 0).
 * Within 1e-5 * |y| + 1e-6. As
 * for wgc_layer_norm, the WebGPU backend sums x^2 in float32 (compensated),
 * so |x| beyond about 1e19 overflows there, and groups whose squares fall
 * below float32's range (|x| under about 1e-19, epsilon 0) lose digits or
 * give inf. */
WGC_API wgc_status wgc_rms_norm(wgc_context *ctx, wgc_ptr input, wgc_ptr scale,
                                wgc_ptr output, const size_t *shape,
                                size_t rank, size_t axis, float epsilon);

/* Typed forms of softmax, log-softmax, LayerNorm and RMSNorm (f16 and
 * bf16 activations), each operand's type beside its address as for
 * wgc_unary_ex; the plain forms are these with every type F32. input and
 * output are F32, F16 or BF16, in any mix; scale and bias F32 or F16 (a
 * type is checked also where its operand is absent). The statistics and
 * the output are computed as the f32 op does on the exactly converted
 * inputs, and the output is rounded once, to nearest even, into an f16 or
 * bf16 output (beyond 65520 an f16 output is inf); the bound is the plain
 * op's plus half a unit in the last place of the output type. A 2-byte
 * operand starts at any even byte offset. In place needs the same type on
 * both sides. Errors (WGC_ERR_INVALID_ARGUMENT naming the operand and its
 * type; nothing is written): a type outside wgc_dtype or one the operand
 * does not take, a misaligned typed operand, and the plain form's own. */
WGC_API wgc_status wgc_softmax_ex(wgc_context *ctx, wgc_ptr input,
                                  wgc_dtype input_type, wgc_ptr output,
                                  wgc_dtype output_type, const size_t *shape,
                                  size_t rank, size_t axis);
WGC_API wgc_status wgc_log_softmax_ex(wgc_context *ctx, wgc_ptr input,
                                      wgc_dtype input_type, wgc_ptr output,
                                      wgc_dtype output_type,
                                      const size_t *shape, size_t rank,
                                      size_t axis);
WGC_API wgc_status wgc_layer_norm_ex(wgc_context *ctx, wgc_ptr input,
                                     wgc_dtype input_type, wgc_ptr scale,
                                     wgc_dtype scale_type, wgc_ptr bias,
                                     wgc_dtype bias_type, wgc_ptr output,
                                     wgc_dtype output_type, const size_t *shape,
                                     size_t rank, size_t axis, float epsilon);
WGC_API wgc_status wgc_rms_norm_ex(wgc_context *ctx, wgc_ptr input,
                                   wgc_dtype input_type, wgc_ptr scale,
                                   wgc_dtype scale_type, wgc_ptr output,
                                   wgc_dtype output_type, const size_t *shape,
                                   size_t rank, size_t axis, float epsilon);

typedef enum wgc_rotary_layout {
  WGC_ROTARY_BSHD, /* input [batch, seq, heads, head_dim] (ONNX 3-D form) */
  WGC_ROTARY_BHSD  /* input [batch, heads, seq, head_dim] (ONNX 4-D form) */
} wgc_rotary_layout;

typedef struct wgc_rotary_desc {
  size_t batch, seq, heads, head_dim;
  size_t rotary_dim; /* even, <= head_dim; 0 means head_dim. Dimensions
                        past it pass through unchanged */
  int interleaved;   /* 0: pairs (x[i], x[i + rotary_dim/2]); else pairs
                        (x[2i], x[2i+1]) */
  wgc_rotary_layout layout;
  size_t max_positions; /* rows of cos_cache and sin_cache */
  /* Element types (zeroed: f32): input and output F32, F16 or BF16 in
   * any mix; cos_cache and sin_cache both of cache_type, F32 or F16. */
  wgc_dtype input_type, output_type, cache_type;
} wgc_rotary_desc;

/* ONNX RotaryEmbedding (opset 23). cos_cache and sin_cache are
 * [max_positions, rotary_dim/2]; position_ids holds int32 [batch, seq]
 * rows of them; with position_ids, max_positions must be at least 1 (0 is
 * WGC_ERR_INVALID_ARGUMENT on both backends: caches of no rows). With
 * position_ids 0 the caches are [batch, seq, rotary_dim/2] (max_positions
 * ignored). A position id outside
 * [0, max_positions) rotates by cos = sin = 0, which gives zeros for its
 * rotated dimensions of finite input (an enqueued GPU op cannot report
 * it), and is never read outside the caches. output may equal input. Any
 * head_dim runs on every device: a row longer than a storage binding is
 * rotated in pieces. Each rotated element is within 4e-7 * (|x1| + |x2|) *
 * (|cos| + |sin|) of the exact result.
 *
 * Types (d->input_type, output_type, cache_type): the inputs convert
 * exactly to f32, the rotation is the f32 call's (double on the CPU
 * backend), and an F16 or BF16 output is rounded once, to nearest even
 * (beyond 65520 an f16 output is inf): the bound above plus half a unit
 * in the last place of the output type. Dimensions past rotary_dim are
 * copied as wgc_copy_strided_ex copies them (the bits where the types
 * match, else converted as wgc_cast does). Shapes count elements of each
 * operand's type; a 2-byte operand starts at any even byte offset; in
 * place needs one type on both sides. Errors (WGC_ERR_INVALID_ARGUMENT
 * naming the field and its type; nothing is written): a type outside
 * wgc_dtype or one the operand does not take (I32, the block types, a
 * BF16 cache), a misaligned typed operand. position_ids stay int32. */
WGC_API wgc_status wgc_rotary_embedding(wgc_context *ctx,
                                        const wgc_rotary_desc *d, wgc_ptr input,
                                        wgc_ptr position_ids, wgc_ptr cos_cache,
                                        wgc_ptr sin_cache, wgc_ptr output);

/* ---- Data movement ------------------------------------------------------ */

/* dst[i] = src[i] for every index i of shape[rank] (rank 0..8), element i at
 * sum(i[d] * stride[d]) on each side (strides in elements): transpose,
 * slice, concatenation into a destination, expand. Values are copied
 * exactly. Rank 0 copies one element (shape and strides may be NULL). A
 * source stride of 0 broadcasts; the stride of a dimension of size 1 is
 * ignored; destination strides must give every index its own element.
 * That is checked exactly wherever it is cheap: taken by increasing
 * stride, a dimension whose stride passes the last element the smaller
 * ones reach keeps indices distinct; where one does not, it and the
 * smaller ones are decided exactly, two dimensions by their strides' gcd
 * (strides {2, 3} for shape {3, 2} address 0 2 4 3 5 7: accepted), more
 * element by element when they span at most 2^20 elements. Interleaved
 * dimensions beyond that span are rejected as not provably free of
 * overlap (WGC_ERR_INVALID_ARGUMENT, as for a layout that does overlap).
 * The spans of source and destination (first to last element each
 * touches) must not overlap, even where their elements would interleave.
 * An empty shape is a no-op. */
WGC_API wgc_status wgc_copy_strided(wgc_context *ctx, wgc_ptr dst,
                                    const size_t *dst_strides, wgc_ptr src,
                                    const size_t *src_strides,
                                    const size_t *shape, size_t rank);
/* wgc_copy_strided with typed operands, each type beside its address as
 * for wgc_gather_ex; wgc_copy_strided is this with both F32. src_type and
 * dst_type are F32, F16 or BF16, and strides count elements of each
 * side's own type. The same type on both sides copies the bits exactly
 * (NaN payloads and subnormals included); different types convert each
 * element exactly as wgc_cast does, on the bits (exact where dst_type
 * holds the value, else rounded once to nearest even, beyond 65520 an
 * f16 infinity; a NaN keeps its sign and the top bits of its payload).
 * A 2-byte operand starts at any even byte offset. Errors
 * (WGC_ERR_INVALID_ARGUMENT naming the operand and its type; nothing is
 * written): a type outside wgc_dtype or one the operand does not take
 * (I32 and the block types), a misaligned typed operand, and
 * wgc_copy_strided's own. */
WGC_API wgc_status wgc_copy_strided_ex(wgc_context *ctx, wgc_ptr dst,
                                       wgc_dtype dst_type,
                                       const size_t *dst_strides, wgc_ptr src,
                                       wgc_dtype src_type,
                                       const size_t *src_strides,
                                       const size_t *shape, size_t rank);
/* ONNX Gather: output = data indexed along axis by the n_indices int32
 * indices, shape shape[0..axis) + [n_indices] + shape(axis..rank),
 * contiguous (indices of any shape are passed flattened). data has rank
 * 1..8 and is contiguous; indices are int32 words in device memory (upload
 * an int32_t array). Values are copied exactly. A negative index counts
 * from the end; one outside [-shape[axis], shape[axis]) gives zeros on
 * every backend (ONNX makes it an error, which an enqueued GPU op cannot
 * report), never a read outside data. output may overlap neither data nor
 * indices. An empty output (n_indices 0, or a 0 outside axis) is a no-op. */
WGC_API wgc_status wgc_gather(wgc_context *ctx, wgc_ptr data,
                              const size_t *shape, size_t rank, size_t axis,
                              wgc_ptr indices, size_t n_indices,
                              wgc_ptr output);
/* wgc_gather with a typed table and output (an embedding table kept in
 * f16 or quantized): data of data_type (any type but I32), output of
 * output_type (F32, F16 or BF16); wgc_gather is this with both F32. A
 * form with the types beside their addresses, as wgc_cast has them,
 * rather than a desc: the call's other arguments are positional too.
 * Each gathered element is converted as wgc_cast does (exact where the
 * output type holds it, else rounded once to nearest even; Q8_0/Q4_0 rows
 * dequantized). A block table (Q8_0, Q4_0) holds its blocks along the
 * contiguous dimension: the gathered rows (the product of shape(axis..rank))
 * must be whole blocks, so axis < rank - 1 and that product a multiple of
 * 32. data and output are aligned to their type's element (2 bytes for
 * f16, bf16 and the block types). Errors (WGC_ERR_INVALID_ARGUMENT, naming
 * the operand and its type; nothing is written): a type outside wgc_dtype
 * or one the operand does not take, block rows that are not whole blocks,
 * a misaligned typed operand, and wgc_gather's own. */
WGC_API wgc_status wgc_gather_ex(wgc_context *ctx, wgc_ptr data,
                                 wgc_dtype data_type, const size_t *shape,
                                 size_t rank, size_t axis, wgc_ptr indices,
                                 size_t n_indices, wgc_ptr output,
                                 wgc_dtype output_type);

/* ---- Element types: conversions (the types are declared above) ------ */

/* "f32", "f16", "bf16", "i32", "q8_0", "q4_0"; "unknown dtype" for other
 * values. */
WGC_API const char *wgc_dtype_name(wgc_dtype t);
/* Elements per block: 32 for Q8_0 and Q4_0, 1 for the others; 0 for a
 * value outside the list. */
WGC_API size_t wgc_dtype_block_size(wgc_dtype t);
/* The bytes of n elements of type t, into *bytes. WGC_ERR_INVALID_ARGUMENT
 * (read with wgc_last_error(NULL)) naming the parameter when t is not a
 * wgc_dtype, n is not a whole number of t's blocks, the size overflows a
 * size_t, or bytes is NULL. */
WGC_API wgc_status wgc_dtype_bytes(wgc_dtype t, size_t n, size_t *bytes);

/* Host conversions, no context needed (preparing weights): src's n floats
 * into dst as type dst_type (wgc_dtype_bytes(dst_type, n) bytes), and
 * back. They convert exactly as wgc_cast does from and to F32. Errors
 * (wgc_last_error(NULL)): a type outside the list, n not whole blocks,
 * NULL buffers with n > 0. */
WGC_API wgc_status wgc_quantize(const float *src, void *dst, wgc_dtype dst_type,
                                size_t n);
WGC_API wgc_status wgc_dequantize(const void *src, wgc_dtype src_type,
                                  float *dst, size_t n);

/* dst[i] = src[i] converted from src_type to dst_type, for n elements
 * (n whole blocks where either type is a block type), any pair of types,
 * the same type included (an exact copy). Conversions:
 *   - exact wherever the destination holds the value (f16 and bf16 to
 *     f32, any float to a wider one, dequantization, i32 to f32 below
 *     2^24); otherwise rounded once to nearest even, overflowing to +-inf
 *     (an f32 beyond 65520 gives an f16 inf), subnormals kept (f16's and
 *     bf16's), i32 to f16 or bf16 rounded once from the exact integer;
 *   - NaN stays NaN with its sign and the top bits of its payload (as
 *     many as the destination's mantissa holds: f32 to f16 keeps payload
 *     bits 22..13, to bf16 bits 22..16, and drops the rest); where the
 *     kept bits are all zero the quiet bit is set, so the result is still
 *     a NaN. f16 and bf16 to f32 keep the whole payload, so every f16 and
 *     bf16 bit pattern round-trips through f32;
 *   - to i32: truncated toward zero (as C's cast), saturating at
 *     INT32_MIN and INT32_MAX (infinities too); NaN gives 0 (as WGSL's
 *     and Rust's conversions);
 *   - to Q8_0 and Q4_0: each block of 32 values (first converted to f32)
 *     quantized exactly as ggml's quantize_row_q8_0_ref and
 *     quantize_row_q4_0_ref: Q8_0 d = amax/127, id = 1/d (0 when d is 0),
 *     q = roundf(x*id) (halves away from zero); Q4_0 d = max/-8 with max
 *     the first element of largest magnitude, q = min(15, (int)(x*id +
 *     8.5)); d is stored as f16 (rounded to nearest even, so a block whose
 *     d exceeds 65504 stores inf). A block holding a NaN or an infinity
 *     (where ggml's result is undefined) gets d = NaN (f16 0x7e00) and q
 *     0 (Q8_0) or 8 (Q4_0), so it dequantizes to NaN throughout. An
 *     all-zero block gets q 0 (Q8_0) or 8 (Q4_0) and d = +0 (Q8_0) or
 *     -0 (Q4_0: 0/-8, as ggml). Where 1/d overflows (blocks whose largest
 *     magnitude is below about 4e-37), which ggml leaves undefined, x*id
 *     follows IEEE infinities, 0*inf counts as 0, and quants saturate
 *     (Q8_0 at +-127, Q4_0 at 0 and 15);
 *   - from Q8_0 and Q4_0: d*q (d*(q - 8)) in f32, exact; a NaN d gives d
 *     itself, an infinite d with a zero factor the NaN 0x7fc00000.
 * The WebGPU backend gives the same bits as the CPU backend (conversions
 * are done on the bits, divisions correctly rounded), except that a
 * device that flushes subnormals may quantize a block whose f32 values or
 * 1/d lie below 2^-126 as if they were zeros (see SPECIAL VALUES).
 * Errors name the parameter and its type: src_type or dst_type outside
 * wgc_dtype; n not whole blocks; src or dst misaligned for its type
 * (4-byte f32 and i32, 2-byte others) or outside its allocation; dst's
 * bytes overlapping src's. n == 0 is a no-op. */
WGC_API wgc_status wgc_cast(wgc_context *ctx, wgc_ptr src, wgc_dtype src_type,
                            wgc_ptr dst, wgc_dtype dst_type, size_t n);

/* ---- Compiling ahead --------------------------------------------------- */

/* An operation's first call on the WebGPU backend compiles the kernels it
 * needs. To compile them before they are needed (say while a model's
 * weights download), make the same calls between these two: from
 * wgc_compile_begin to wgc_compile_end, operation calls check their
 * arguments as usual and ask for the kernels that the same calls (same
 * shapes, types and layouts) will need, but run nothing, write nothing and
 * allocate no device memory. Transfers (wgc_upload, wgc_download,
 * wgc_download_async, wgc_copy) are refused meanwhile with
 * WGC_ERR_INVALID_ARGUMENT, as they would run; wgc_alloc and wgc_free work
 * as always, since the calls need their operands' addresses.
 *
 * wgc_compile_end leaves the mode and compiles what was asked for,
 * concurrently: natively on worker threads, returning once all are
 * compiled; in the browser it returns at once, every kernel compiling
 * asynchronously (createComputePipelineAsync), and work that needs one
 * waits for it in the runtime, never stalling the page. Afterwards the
 * same calls compile nothing (wgc_pipelines_compiled does not grow). A
 * kernel that fails to compile returns WGC_ERR_DEVICE naming it (natively;
 * in the browser the failure arrives as a device error) and is compiled
 * again, with its error, on first use. wgc_compile_end_async is
 * wgc_compile_end whose done fires once every kernel is compiled (WGC_OK,
 * or WGC_ERR_DEVICE). On the CPU backend the mode runs nothing either and
 * there is nothing to compile. wgc_compile_begin while already compiling
 * ahead, or wgc_compile_end without it, is WGC_ERR_INVALID_ARGUMENT. */
WGC_API wgc_status wgc_compile_begin(wgc_context *ctx);
WGC_API wgc_status wgc_compile_end(wgc_context *ctx);
WGC_API wgc_status wgc_compile_end_async(wgc_context *ctx,
                                         void (*done)(wgc_status, void *user),
                                         void *user);

/* ---- Introspection ----------------------------------------------------- */

/* Number of compute pipelines this context compiled so far (WebGPU); each
 * kernel variant compiles once and is cached. 0 on the CPU backend. */
WGC_API size_t wgc_pipelines_compiled(const wgc_context *ctx);

/* ---- Pipeline cache ---------------------------------------------------- */

/* wgc_options.pipeline_cache names a file P in which compiled pipelines
 * persist, so that a later process (or context) compiles its kernels
 * faster. wgpu-native 0.32 has no pipeline cache in its C API (wgpu-core
 * has one; wgpu.h exposes only its feature bit), so wgc cannot hand
 * compiled pipelines to the runtime. Instead it directs the driver's own
 * on-disk shader cache into a folder beside P: Mesa's Vulkan drivers
 * (lavapipe, RADV, ANV, ...) cache compiled shaders in MESA_SHADER_CACHE_DIR.
 *
 * - P is a small text header that wgc writes: its format, wgc's version,
 *   the adapter and the driver that filled the cache, and a checksum; the
 *   driver's cache lives in the folder "P.d". A header written by another
 *   wgc version, for another adapter or driver, or damaged (truncated,
 *   altered), empties P.d and is rewritten. A file at P that is not a wgc
 *   header is left as it is and nothing is cached; so is a path whose
 *   folder cannot be written. None of this fails wgc_create or prints
 *   anything: wgc_pipeline_cache_status says what happened.
 * - For the span of wgc_create (under the lock that guards the other
 *   variables wgc sets; see wgc_create) MESA_SHADER_CACHE_DIR is P.d and
 *   MESA_SHADER_CACHE_DISABLE is "false", overriding the user's settings
 *   for this context: the option asks for a cache. Mesa reads them when it
 *   opens the device (lavapipe, per VkDevice) or when an instance first
 *   enumerates the adapter (RADV, ANV), so each context with the option
 *   gets a Vulkan instance and device of its own; contexts without it
 *   share one instance and keep the driver's default (Mesa's is
 *   ~/.cache/mesa_shader_cache, or none with MESA_SHADER_CACHE_DISABLE=true).
 *   So the option applies per context, not per process: contexts in one
 *   process may name different files, or none, and several contexts, in
 *   one process or several, may name the same file.
 * - The driver writes its cache in the background; wgc_destroy waits for
 *   those writes. A process that exits without wgc_destroy may lose some.
 * - Other drivers persist nothing: SwiftShader keeps compiled pipelines in
 *   memory only (its VkPipelineCache data is a bare header), and drivers
 *   outside Mesa have caches of their own that wgc does not direct. The
 *   status says so; P is then not written.
 * - Mesa's disk cache is off in a process whose effective user is not its
 *   real one (set-user-id programs).
 * - What persists is the driver's code generation (on lavapipe, LLVM's,
 *   the largest part); wgpu's translation of each kernel from WGSL and
 *   lavapipe's own front end (SPIR-V to NIR, at pipeline creation, which
 *   Mesa 22.3 does not cache) still run in every process. MiniLM's first
 *   pass on lavapipe (build/minilm, 2 loaded cores, medians of 3): 3.7 s
 *   with no driver cache; with the option, 3.65 s in the first process and
 *   0.84 s in the next (the steady pass takes 0.03 s), as with Mesa's
 *   default cache (3.8 s, then 0.77 s). On SwiftShader 1.6 to 1.8 s in
 *   every process.
 *
 * Returns the pipeline cache's status as a sentence that starts with
 * "pipeline cache P: ", e.g. "... created (...)", "... reused (...)",
 * "... written by wgc 0.1.0; emptied and started afresh", "... ignored: the
 * file is not a wgc pipeline cache (left as it is); nothing is cached",
 * "... nothing is persisted: ...". "" when the option was off, on the CPU
 * backend, in the browser, or for NULL. Never NULL. */
WGC_API const char *wgc_pipeline_cache_status(const wgc_context *ctx);

/* ---- Per-operation timing ---------------------------------------------- */

/* Where a record's duration comes from. */
typedef enum wgc_time_source {
  /* the CPU backend: host time the operation's work ran (in the browser,
   * summed over the slices it ran in) */
  WGC_TIME_CPU = 0,
  /* WebGPU: from the operation's submit to the queue's report that it is
   * done, less any time the queue was still busy with earlier work; an
   * upper bound of the GPU time, including the submit and the runtime's
   * completion latency */
  WGC_TIME_SUBMIT_TO_DONE = 1,
  /* WebGPU: the GPU's own clock (timestamp queries) from just before the
   * operation's first kernel to just after its last, on a context created
   * with wgc_options.profile where the adapter has timestamp queries and
   * the operation's work went in one submit (up to 64 launches); its
   * start_us is placed where the host saw it complete, or right after the
   * previous record */
  WGC_TIME_GPU = 2,
} wgc_time_source;

/* One operation's record. Times are microseconds of the host's monotonic
 * clock, counted from the wgc_profile_start that began the recording. */
typedef struct wgc_profile_record {
  char name[32];     /* the entry point, e.g. "wgc_gemm_ex" */
  char shape[96];    /* its shape in short, e.g. "m=128 n=384 k=1536" */
  uint32_t launches; /* kernel dispatches it made; 0 on the CPU backend */
  wgc_time_source source;
  double start_us;    /* when its work began (as source measures it) */
  double duration_us; /* > 0 */
} wgc_profile_record;

/* Begins recording on ctx: every operation issued from now on (not
 * uploads, downloads or copies) gets one record, in issue order. Records
 * of an earlier recording are discarded. Off by default; while off an
 * operation costs nothing more. Recording changes how WebGPU work is
 * batched: each operation is submitted on its own, so that its completion
 * can be timed, and never waits for the GPU. An operation that fails
 * leaves no record. */
WGC_API wgc_status wgc_profile_start(wgc_context *ctx);
/* Ends recording; the records stay readable (and those still running
 * complete) until the next wgc_profile_start or wgc_destroy, which free
 * them (they take about 400 bytes of host memory each). */
WGC_API wgc_status wgc_profile_stop(wgc_context *ctx);
/* The records whose work is done, in issue order: *count receives how many
 * there are, and the first min(cap, *count) are copied to out (NULL when
 * cap is 0). A record becomes done when the GPU reports it (seen by
 * wgc_poll, wgc_synchronize or the browser's event loop); nothing here
 * waits. WGC_ERR_INVALID_ARGUMENT when recording was never started on ctx,
 * count is NULL, or out is NULL with cap > 0. */
WGC_API wgc_status wgc_profile_records(wgc_context *ctx,
                                       wgc_profile_record *out, size_t cap,
                                       size_t *count);
/* The done records as Chrome trace-event JSON, the format chrome://tracing
 * and Perfetto (ui.perfetto.dev) open: one complete event ("ph": "X") per
 * record, ts and dur in microseconds, the record's name, and args holding
 * its shape, launches and time source; one track per context. Writes at
 * most cap bytes, NUL included, into buf, and the length the whole text
 * needs (without the NUL) into *len; a text that does not fit is cut (call
 * again with *len + 1 bytes). buf may be NULL when cap is 0. Errors as for
 * wgc_profile_records. */
WGC_API wgc_status wgc_profile_trace(wgc_context *ctx, char *buf, size_t cap,
                                     size_t *len);
/* As wgc_profile_trace, into the file path (replaced). Natively only; the
 * wasm32 build has no files (WGC_ERR_UNSUPPORTED). WGC_ERR_DEVICE naming
 * the path and the cause when it cannot be written. */
WGC_API wgc_status wgc_profile_write_trace(wgc_context *ctx, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* WGC_H */
