// Types of web/wgc.js: wgc in the browser. The C API (include/wgc.h) as
// methods of a context: same names without wgc_ in camelCase, same
// arguments in the same order without the context. Device addresses are
// BigInt, sizes are numbers (below 2^32: size_t is 32 bits on wasm32), descs
// are plain objects with the C field names (missing fields are 0).

/** Float16Array where the host has it (typed loosely for older lib files). */
export type Float16ArrayLike = ArrayLike<number> & ArrayBufferView;

/** A device address: an allocation's base plus a byte offset; 0n is null. */
export type Ptr = bigint;
/** Status names as in C without WGC_ and ERR_: "INVALID_ARGUMENT", ... */
export type StatusName =
  | 'OK' | 'INVALID_ARGUMENT' | 'UNSUPPORTED' | 'OUT_OF_MEMORY' | 'DEVICE'
  | 'DEVICE_LOST' | 'NO_ADAPTER' | 'WOULD_BLOCK' | 'CANCELLED';

/** Every failing call throws (or its promise rejects with) a WgcError. */
export class WgcError extends Error {
  /** The C status name, e.g. "INVALID_ARGUMENT". */
  readonly status: StatusName;
  /** The wgc_last_error text, e.g. "wgc_upload: dst: 64 bytes at offset 0 overrun the 16-byte allocation". */
  message: string;
}

export const OK: 0, ERR_INVALID_ARGUMENT: 1, ERR_UNSUPPORTED: 2, ERR_OUT_OF_MEMORY: 3,
  ERR_DEVICE: 4, ERR_DEVICE_LOST: 5, ERR_NO_ADAPTER: 6, ERR_WOULD_BLOCK: 7, ERR_CANCELLED: 8;
export const BACKEND_AUTO: 0, BACKEND_WEBGPU: 1, BACKEND_CPU: 2;
export const POWER_DEFAULT: 0, POWER_LOW: 1, POWER_HIGH: 2;
export const NO_TRANS: 0, TRANS: 1, CONJ_TRANS: 2;
export const COL_MAJOR: 0, ROW_MAJOR: 1;
export const CAUSAL_NONE: 0, CAUSAL_TOP_LEFT: 1, CAUSAL_BOTTOM_RIGHT: 2;
export const POOL_MAX: 0, POOL_AVG: 1;
export const ACTIVATION_NONE: 0, ACTIVATION_RELU: 1, ACTIVATION_GELU: 2,
  ACTIVATION_GELU_TANH: 3, ACTIVATION_SILU: 4;
export const BIAS_PER_COLUMN: 0, BIAS_PER_ROW: 1;
export const ROTARY_BSHD: 0, ROTARY_BHSD: 1;
// REDUCE_*, UNARY_*, BINARY_*, DTYPE_* and the unions ReduceOp, UnaryOp, BinaryOp, DType:
// generated from wgc.h's op lists at build time (tools/jsops.c).
export * from './ops.js';
import type { ReduceOp, UnaryOp, BinaryOp, DType } from './ops.js';
import type { DTYPE_F32, DTYPE_F16, DTYPE_BF16, DTYPE_I32, DTYPE_Q8_0, DTYPE_Q4_0 } from './ops.js';

export type Backend = 0 | 1 | 2;
export type Layout = 0 | 1;
export type Transpose = 0 | 1 | 2;
export type Causal = 0 | 1 | 2;
export type PoolMode = 0 | 1;
export type Activation = 0 | 1 | 2 | 3 | 4;
export type BiasKind = 0 | 1;
export type RotaryLayout = 0 | 1;

/** wgc_options; all fields optional (0 = default). */
export interface Options {
  backend?: Backend;
  power?: 0 | 1 | 2;
  /** ignored in the browser (one thread) */
  cpu_threads?: number;
  /** WebGPU: the largest buffer window one binding may cover; 0 = the device's */
  max_binding_bytes?: number;
  /** timing records from the start, with the GPU's own time where the
   * adapter has 'timestamp-query' (requested only then) */
  profile?: boolean | number;
}

/** wgc_conv2d_desc: input [n, c, h, w], filter [k, c/groups, r, s]. */
export interface Conv2dDesc {
  n: number; c: number; h: number; w: number;
  k: number; r: number; s: number;
  stride_h?: number; stride_w?: number; pad_h?: number; pad_w?: number;
  dilation_h?: number; dilation_w?: number; groups?: number;
  /** element types (default DTYPE_F32): input, filter and output DTYPE_F32,
   * DTYPE_F16 or DTYPE_BF16; bias DTYPE_F32 or DTYPE_F16 */
  input_type?: DType; filter_type?: DType; bias_type?: DType; output_type?: DType;
}

/** wgc_pool2d_desc: input [n, c, h, w], window [r, s], output [n, c, p, q]. */
export interface Pool2dDesc {
  n: number; c: number; h: number; w: number;
  r: number; s: number;
  stride_h?: number; stride_w?: number; pad_h?: number; pad_w?: number;
  dilation_h?: number; dilation_w?: number;
  /** POOL_MAX (the default, 0) or POOL_AVG */
  mode?: PoolMode;
  /** AVG: true (or nonzero) divides by all r*s positions, padding included;
   * false (the default) by the positions inside the input. MAX ignores it. */
  count_include_pad?: boolean | number;
  /** element types (default DTYPE_F32): DTYPE_F32, DTYPE_F16 or DTYPE_BF16 */
  input_type?: DType; output_type?: DType;
}

/** wgc_attention_strides: element strides over (batch, head, seq); all 0
 * (or the object left out) means the contiguous layout. */
export interface AttentionStrides {
  batch?: number; head?: number; seq?: number;
}

/** wgc_attention_desc. */
export interface AttentionDesc {
  batch: number; heads: number; heads_kv?: number;
  seq_q: number; seq_kv: number; head_dim: number;
  scale: number; causal?: Causal;
  /** V's and O's head size; 0 = head_dim */
  head_dim_v?: number;
  /** 0: none; > 0: scores := softcap * tanh(scores / softcap), before the mask */
  softcap?: number;
  /** additive mask (0n: none), element (b, h, i, j) at mask + size *
   * (b*mask_stride.batch + h*mask_stride.head + i*mask_stride.seq + j),
   * size the bytes of mask_type (4 for f32) */
  mask?: Ptr;
  mask_stride?: AttentionStrides;
  q_stride?: AttentionStrides; k_stride?: AttentionStrides;
  v_stride?: AttentionStrides; o_stride?: AttentionStrides;
  /** operand types: DTYPE_F32 (the default), DTYPE_F16 or DTYPE_BF16 each;
   * strides count each operand's own elements */
  q_type?: DType; k_type?: DType; v_type?: DType; o_type?: DType;
  mask_type?: DType;
}

/** wgc_gemm_epilogue: C := act(alpha*op(A)*op(B) + beta*C + bias). */
export interface GemmEpilogue {
  /** 0n or absent: no bias; else n floats (per column) or m (per row), for every batch */
  bias?: Ptr;
  bias_kind?: BiasKind;
  activation?: Activation;
  /** operand types (DTYPE_*; absent: f32): A and C f32/f16/bf16, B also
   * q8_0/q4_0 with k its contiguous dimension, the bias f32/f16 */
  a_type?: DType; b_type?: DType; c_type?: DType; bias_type?: DType;
}

/** wgc_rotary_desc; missing fields are 0 (rotary_dim 0: head_dim). */
export interface RotaryDesc {
  batch: number; seq: number; heads: number; head_dim: number;
  rotary_dim?: number; interleaved?: number; layout?: RotaryLayout;
  max_positions?: number;
  /** element types (default DTYPE_F32): input and output DTYPE_F32,
   * DTYPE_F16 or DTYPE_BF16; cos and sin caches DTYPE_F32 or DTYPE_F16 */
  input_type?: DType; output_type?: DType; cache_type?: DType;
}

/** wgc_time_source: where a record's duration comes from. */
export const TIME_CPU: 0;
export const TIME_SUBMIT_TO_DONE: 1;
export const TIME_GPU: 2;
export type TimeSource = 0 | 1 | 2;

/** wgc_profile_record: one operation's timing; microseconds of the host's
 * monotonic clock from profileStart. */
export interface ProfileRecord {
  /** the C entry point, e.g. "wgc_gemm_ex" */
  name: string;
  /** its shape in short, e.g. "m=128 n=384 k=1536" */
  shape: string;
  /** kernel dispatches; 0 on the CPU backend */
  launches: number;
  source: TimeSource;
  start_us: number;
  duration_us: number;
}

export interface Context {
  /** "webgpu" or "cpu" */
  readonly backendName: string;
  /** e.g. "google swiftshader"; "cpu (1 thread)" on the CPU backend */
  readonly adapterName: string;

  /** Zero-filled device memory of bytes (> 0); returns its base address. */
  alloc(bytes: number): Ptr;
  free(base: Ptr): void;
  /** Copies data (its bytes) to dst. */
  upload(dst: Ptr, data: Float32Array | ArrayBufferView | ArrayBuffer): void;
  /** count elements of dtype (default DTYPE_F32) at src, once the work
   * issued before has run: Float32Array, Int32Array (DTYPE_I32),
   * Float16Array for DTYPE_F16 where the host has it, else Uint16Array (the
   * bits; always for DTYPE_BF16), Uint8Array of whole blocks (DTYPE_Q8_0,
   * DTYPE_Q4_0). An odd count of 2-byte values also reads the 2 bytes after
   * them (transfers move whole 4-byte words). */
  download(src: Ptr, count: number, dtype?: typeof DTYPE_F32): Promise<Float32Array>;
  download(src: Ptr, count: number, dtype: typeof DTYPE_I32): Promise<Int32Array>;
  download(src: Ptr, count: number, dtype: typeof DTYPE_F16 | typeof DTYPE_BF16): Promise<Uint16Array | Float16ArrayLike>;
  download(src: Ptr, count: number, dtype: typeof DTYPE_Q8_0 | typeof DTYPE_Q4_0): Promise<Uint8Array>;
  copy(dst: Ptr, src: Ptr, bytes: number): void;
  /** Resolves once all work issued so far is done. */
  synchronize(): Promise<void>;
  /** The same as download: the C _async form. */
  downloadAsync(src: Ptr, count: number, dtype?: typeof DTYPE_F32): Promise<Float32Array>;
  downloadAsync(src: Ptr, count: number, dtype: typeof DTYPE_I32): Promise<Int32Array>;
  downloadAsync(src: Ptr, count: number, dtype: typeof DTYPE_F16 | typeof DTYPE_BF16): Promise<Uint16Array | Float16ArrayLike>;
  downloadAsync(src: Ptr, count: number, dtype: typeof DTYPE_Q8_0 | typeof DTYPE_Q4_0): Promise<Uint8Array>;
  /** The same as synchronize: the C _async form. */
  synchronizeAsync(): Promise<void>;
  /** Runs due callbacks (they also run by themselves from the event loop). */
  poll(): void;
  /** Pending downloads and synchronizations reject with CANCELLED; later calls fail. */
  destroy(): void;

  gemm(layout: Layout, ta: Transpose, tb: Transpose, m: number, n: number, k: number,
       alpha: number, a: Ptr, lda: number, b: Ptr, ldb: number,
       beta: number, c: Ptr, ldc: number): void;
  gemmBatched(layout: Layout, ta: Transpose, tb: Transpose, m: number, n: number, k: number,
              alpha: number, a: Ptr, lda: number, stride_a: number,
              b: Ptr, ldb: number, stride_b: number, beta: number,
              c: Ptr, ldc: number, stride_c: number, batch_count: number): void;
  /** gemm with a fused bias and activation; ep null or {} is the plain gemm. */
  gemmEx(layout: Layout, ta: Transpose, tb: Transpose, m: number, n: number, k: number,
         alpha: number, a: Ptr, lda: number, b: Ptr, ldb: number,
         beta: number, c: Ptr, ldc: number, ep: GemmEpilogue | null): void;
  gemmBatchedEx(layout: Layout, ta: Transpose, tb: Transpose, m: number, n: number, k: number,
                alpha: number, a: Ptr, lda: number, stride_a: number,
                b: Ptr, ldb: number, stride_b: number, beta: number,
                c: Ptr, ldc: number, stride_c: number, batch_count: number,
                ep: GemmEpilogue | null): void;
  conv2d(d: Conv2dDesc, input: Ptr, filter: Ptr, bias: Ptr, output: Ptr): void;
  conv2dOutputSize(d: Conv2dDesc): { p: number; q: number };
  pool2d(d: Pool2dDesc, input: Ptr, output: Ptr): void;
  pool2dOutputSize(d: Pool2dDesc): { p: number; q: number };
  attention(d: AttentionDesc, q: Ptr, k: Ptr, v: Ptr, o: Ptr): void;
  reduce(op: ReduceOp, input: Ptr, output: Ptr, shape: ArrayLike<number>, rank: number,
         axis: number): void;
  reduceAxes(op: ReduceOp, input: Ptr, output: Ptr, shape: ArrayLike<number>, rank: number,
             axes: ArrayLike<number>, naxes: number): void;
  /** reduce and reduceAxes with the input DTYPE_F32, DTYPE_F16 or
   * DTYPE_BF16 and the output DTYPE_F32 or the input's type (rounded once
   * from the f32 result). */
  reduceEx(op: ReduceOp, input: Ptr, input_type: DType, output: Ptr, output_type: DType,
           shape: ArrayLike<number>, rank: number, axis: number): void;
  reduceAxesEx(op: ReduceOp, input: Ptr, input_type: DType, output: Ptr, output_type: DType,
               shape: ArrayLike<number>, rank: number, axes: ArrayLike<number>,
               naxes: number): void;
  /** output holds int32 indices: view the download's buffer as an Int32Array. */
  argmax(input: Ptr, output: Ptr, shape: ArrayLike<number>, rank: number, axis: number): void;
  argmin(input: Ptr, output: Ptr, shape: ArrayLike<number>, rank: number, axis: number): void;
  unary(op: UnaryOp, input: Ptr, output: Ptr, n: number): void;
  /** wgc_unary_params: alpha and beta of LEAKY_RELU, ELU, HARD_SIGMOID, CLIP */
  unaryParams(op: UnaryOp, alpha: number, beta: number, input: Ptr, output: Ptr,
              n: number): void;
  binary(op: BinaryOp, a: Ptr, b: Ptr, out: Ptr, n: number): void;
  binaryBroadcast(op: BinaryOp, a: Ptr, shape_a: ArrayLike<number>, rank_a: number,
                  b: Ptr, shape_b: ArrayLike<number>, rank_b: number, out: Ptr): void;
  /** out = cond ? a : b with numpy broadcasting; cond is true unless +-0 (NaN is true). */
  where(cond: Ptr, shape_cond: ArrayLike<number>, rank_cond: number,
        a: Ptr, shape_a: ArrayLike<number>, rank_a: number,
        b: Ptr, shape_b: ArrayLike<number>, rank_b: number, out: Ptr): void;
  /** The element-wise ops with each operand's type beside it (DTYPE_F32,
   * DTYPE_F16 or DTYPE_BF16 in any mix): f32 arithmetic, an f16/bf16
   * output rounded once to nearest even. */
  unaryEx(op: UnaryOp, input: Ptr, input_type: DType, output: Ptr, output_type: DType,
          n: number): void;
  unaryParamsEx(op: UnaryOp, alpha: number, beta: number, input: Ptr, input_type: DType,
                output: Ptr, output_type: DType, n: number): void;
  binaryEx(op: BinaryOp, a: Ptr, a_type: DType, b: Ptr, b_type: DType, out: Ptr,
           out_type: DType, n: number): void;
  binaryBroadcastEx(op: BinaryOp, a: Ptr, a_type: DType, shape_a: ArrayLike<number>,
                    rank_a: number, b: Ptr, b_type: DType, shape_b: ArrayLike<number>,
                    rank_b: number, out: Ptr, out_type: DType): void;
  whereEx(cond: Ptr, cond_type: DType, shape_cond: ArrayLike<number>, rank_cond: number,
          a: Ptr, a_type: DType, shape_a: ArrayLike<number>, rank_a: number,
          b: Ptr, b_type: DType, shape_b: ArrayLike<number>, rank_b: number,
          out: Ptr, out_type: DType): void;
  /** dst[i] = src[i] over shape, element strides on each side (src stride 0 broadcasts). */
  copyStrided(dst: Ptr, dst_strides: ArrayLike<number>, src: Ptr, src_strides: ArrayLike<number>,
              shape: ArrayLike<number>, rank: number): void;
  /** copyStrided with each side's type (DTYPE_F32, DTYPE_F16 or
   * DTYPE_BF16) beside it: the same type copies the bits, another
   * converts as cast does. */
  copyStridedEx(dst: Ptr, dst_type: DType, dst_strides: ArrayLike<number>, src: Ptr,
                src_type: DType, src_strides: ArrayLike<number>, shape: ArrayLike<number>,
                rank: number): void;
  /** ONNX Gather along axis by n_indices int32 indices (upload an Int32Array);
   * an index outside [-shape[axis], shape[axis]) gives zeros. */
  gather(data: Ptr, shape: ArrayLike<number>, rank: number, axis: number,
         indices: Ptr, n_indices: number, output: Ptr): void;
  /** gather from a table of data_type (any type but DTYPE_I32; Q8_0/Q4_0
   * rows, the product of shape after axis, whole 32-element blocks) into
   * an output of output_type (DTYPE_F32, DTYPE_F16 or DTYPE_BF16). */
  gatherEx(data: Ptr, data_type: DType, shape: ArrayLike<number>, rank: number,
           axis: number, indices: Ptr, n_indices: number, output: Ptr,
           output_type: DType): void;
  /** n elements of src_type at src converted into dst_type at dst (any two
   * types; n whole blocks for Q8_0 and Q4_0). Upload and download the
   * bytes of 2-byte and block types through a Float32Array view of the
   * same buffer (4-byte granularity). */
  cast(src: Ptr, src_type: DType, dst: Ptr, dst_type: DType, n: number): void;
  softmax(input: Ptr, output: Ptr, shape: ArrayLike<number>, rank: number, axis: number): void;
  logSoftmax(input: Ptr, output: Ptr, shape: ArrayLike<number>, rank: number, axis: number): void;
  /** scale and bias 0n: ones and zeros. */
  layerNorm(input: Ptr, scale: Ptr, bias: Ptr, output: Ptr, shape: ArrayLike<number>,
            rank: number, axis: number, epsilon: number): void;
  rmsNorm(input: Ptr, scale: Ptr, output: Ptr, shape: ArrayLike<number>, rank: number,
          axis: number, epsilon: number): void;
  /** The normalizations with each operand's type beside it: input and
   * output DTYPE_F32, DTYPE_F16 or DTYPE_BF16 in any mix, scale and bias
   * DTYPE_F32 or DTYPE_F16; an f16/bf16 output rounded once. */
  softmaxEx(input: Ptr, input_type: DType, output: Ptr, output_type: DType,
            shape: ArrayLike<number>, rank: number, axis: number): void;
  logSoftmaxEx(input: Ptr, input_type: DType, output: Ptr, output_type: DType,
               shape: ArrayLike<number>, rank: number, axis: number): void;
  layerNormEx(input: Ptr, input_type: DType, scale: Ptr, scale_type: DType, bias: Ptr,
              bias_type: DType, output: Ptr, output_type: DType, shape: ArrayLike<number>,
              rank: number, axis: number, epsilon: number): void;
  rmsNormEx(input: Ptr, input_type: DType, scale: Ptr, scale_type: DType, output: Ptr,
            output_type: DType, shape: ArrayLike<number>, rank: number, axis: number,
            epsilon: number): void;
  /** position_ids 0n: the caches are [batch, seq, rotary_dim / 2]. */
  rotaryEmbedding(d: RotaryDesc, input: Ptr, position_ids: Ptr, cos_cache: Ptr,
                  sin_cache: Ptr, output: Ptr): void;

  /** wgc_last_error(ctx) */
  lastError(): string;
  pipelinesCompiled(): number;
  /** wgc_compile_begin: until compileEnd, operation calls check their
   * arguments and ask for their kernels but run nothing; transfers throw. */
  compileBegin(): void;
  /** wgc_compile_end_async: compiles what the calls asked for,
   * concurrently; resolves once every kernel is compiled. Work issued
   * before that waits for its kernels in the runtime, not in the page. */
  compileEnd(): Promise<void>;

  /** wgc_profile_start: records every operation issued from now on,
   * discarding earlier records. */
  profileStart(): void;
  /** wgc_profile_stop: ends recording; the records stay readable. */
  profileStop(): void;
  /** wgc_profile_records: the records whose work is done, in issue order
   * (more arrive from the event loop); throws INVALID_ARGUMENT when
   * recording was never started. */
  profileRecords(): ProfileRecord[];
  /** wgc_profile_trace: the done records as Chrome trace-event JSON text,
   * which chrome://tracing and Perfetto open. */
  profileTrace(): string;
  /** wgc_profile_write_trace: the browser has no files, so this throws
   * UNSUPPORTED; use profileTrace. */
  profileWriteTrace(path: string): void;
  statusName(s: number): string;
  statusString(s: number): string;
}

/** wgc_create_async: loads wgc.wasm (once per page) and creates a context.
 * When wgc.wasm cannot be loaded (missing, an HTTP error, a type other than
 * application/wasm, not a module) it rejects with a WgcError of status
 * DEVICE whose message names the URL and the cause. Should wgc.wasm ever
 * trap (a bug), its state is lost: every pending promise rejects with a
 * WgcError of status DEVICE naming the trap, and so does every later call
 * (destroy excepted, which does nothing). */
export function create(options?: Options | null): Promise<Context>;
/**
 * Loads an application module: C code written against wgc.h and linked
 * with wgc's wasm32 static library (make wasm: build/web/lib/libwgc.a)
 * into one wasm file. Supplies the imports wgc inside it needs (GPU layer,
 * WASI, event-loop tasks) plus the application's own (e.g. `{env: {...}}`),
 * runs its `_initialize`, and resolves to its exports. Its C code uses the
 * `_async` calls, whose callbacks fire from the event loop. Rejects with a
 * WgcError naming the URL and the cause when the module cannot be loaded.
 * `onFailure` hears once of a trap in the module's work from the event loop
 * (its CPU backend's queued work, a GPU completion, its own callbacks): a
 * WgcError of status DEVICE naming the URL and the trap. The module's state
 * is then unknown and the runtime enters it no more, so the application
 * settles there whatever it still waits for.
 */
export function instantiate(
  url: string | URL,
  imports?: WebAssembly.Imports,
  options?: { onFailure?: (error: WgcError) => void },
): Promise<WebAssembly.Exports>;
/** Tasks the CPU backend's worker threads have run in this page: 0 unless
 * the page is cross-origin isolated (wgc.js then loads wgc-threads.wasm,
 * whose CPU backend runs on every core, at most 16) and a call was large
 * enough to share. */
export function cpuThreadTasks(): number;
/** Whether this page can run a threaded module's workers (cross-origin
 * isolated, with Web Workers): an application built both with and without
 * threads (README, "Threads in the browser") picks its module with it. */
export function threadsAvailable(): boolean;
/** Whether the engine has relaxed SIMD (Chrome 114, Node 22): wgc.js then
 * loads a relaxed form of its module (README, "Modules"). */
export function relaxedSimdAvailable(): boolean;
/** Which forms wgc.js may load, called before its module loads (the first
 * create() or call; later it throws a WgcError): both true by default.
 * `relaxedSimd: false` keeps every result's bits the same on every machine
 * (relaxed_madd rounds once where the machine fuses, twice elsewhere). */
export function moduleOptions(options?: { threads?: boolean; relaxedSimd?: boolean }): void;
/** The file of the form of module `name` (built in four forms by make wasm:
 * name.wasm, name-threads.wasm, name-relaxed.wasm,
 * name-threads-relaxed.wasm) that this page runs, within moduleOptions or
 * the options given: `moduleFile('minilm')` is `'minilm-relaxed.wasm'` in a
 * page that is not isolated, in Chrome. */
export function moduleFile(name: string, options?: { threads?: boolean; relaxedSimd?: boolean }): string;
/** The file wgc.js loaded for itself (`'wgc-threads-relaxed.wasm'`, say),
 * null before. */
export function loadedModule(): string | null;

/** The functions without a context; they need the module loaded by create(). */
/** wgc_version(): "MAJOR.MINOR.PATCH" of the loaded wgc.wasm. */
export function version(): string;
export function conv2dOutputSize(d: Conv2dDesc): { p: number; q: number };
export function pool2dOutputSize(d: Pool2dDesc): { p: number; q: number };
/** wgc_last_error(NULL): the last failure that had no context. */
export function lastError(): string;
export function statusName(s: number): string;
export function statusString(s: number): string;
