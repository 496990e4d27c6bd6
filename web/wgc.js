// wgc in the browser: the C library compiled to wgc.wasm, with the same
// functions as methods of a context object (see wgc.d.ts and
// shared/API.md, "Browser module"). This file only marshals arguments into
// wasm memory and turns statuses into exceptions and callbacks into
// promises; every check and all logic are in C. Nothing here waits: GPU
// completions arrive from the event loop (gpu.js), the CPU backend's queued
// work runs in short slices as background tasks, and callbacks that C makes
// due are fired by a poll queued as a task.
import { gpuImports } from './gpu.js';
import { DTYPE_F32, DTYPE_F16, DTYPE_BF16, DTYPE_I32 } from './ops.js';

// ---- enums, as in include/wgc.h without WGC_ ----
export const OK = 0, ERR_INVALID_ARGUMENT = 1, ERR_UNSUPPORTED = 2,
  ERR_OUT_OF_MEMORY = 3, ERR_DEVICE = 4, ERR_DEVICE_LOST = 5,
  ERR_NO_ADAPTER = 6, ERR_WOULD_BLOCK = 7, ERR_CANCELLED = 8;
export const BACKEND_AUTO = 0, BACKEND_WEBGPU = 1, BACKEND_CPU = 2;
export const POWER_DEFAULT = 0, POWER_LOW = 1, POWER_HIGH = 2;
export const NO_TRANS = 0, TRANS = 1, CONJ_TRANS = 2;
export const COL_MAJOR = 0, ROW_MAJOR = 1;
export const CAUSAL_NONE = 0, CAUSAL_TOP_LEFT = 1, CAUSAL_BOTTOM_RIGHT = 2;
export const POOL_MAX = 0, POOL_AVG = 1;
export const ACTIVATION_NONE = 0, ACTIVATION_RELU = 1, ACTIVATION_GELU = 2,
  ACTIVATION_GELU_TANH = 3, ACTIVATION_SILU = 4;
export const BIAS_PER_COLUMN = 0, BIAS_PER_ROW = 1;
export const ROTARY_BSHD = 0, ROTARY_BHSD = 1;
export const TIME_CPU = 0, TIME_SUBMIT_TO_DONE = 1, TIME_GPU = 2;
// The op constants (REDUCE_SUM, UNARY_RELU, BINARY_ADD, ...) are generated
// from wgc.h's op lists at build time (tools/jsops.c), so they cannot drift.
export * from './ops.js';

// A failed call: status is the C status name ("INVALID_ARGUMENT"), message
// the wgc_last_error text.
export class WgcError extends Error {
  constructor(status, message) {
    super(message);
    this.name = 'WgcError';
    this.status = status;
  }
}

// ---- the wasm instance (one per page, shared by every context) ----
const W = { exports: null, module: null, tokens: new Map(), lastToken: 0, scratch: 0, guarded: true, failed: null };
// scratch layout: a desc or options, four shapes (or stride and axis lists)
// of up to 8 size_t, out-params
const DESC = 0, DESC_BYTES = 256, SHAPES = [256, 288, 320, 352], OUT = 384, OUT2 = 392,
  SCRATCH_BYTES = 400;
let loading = null;

// bytes [p, p + n) of memory in an ArrayBuffer of their own (never shared,
// even when the memory is)
const ownCopy = (memory, p, n) => new Uint8Array(memory.buffer, p, n).slice().buffer;
const u8 = () => new Uint8Array(W.exports.memory.buffer);
const dv = () => new DataView(W.exports.memory.buffer);
const decoder = new TextDecoder(); // one: making one costs more than a short decode
function str(ptr) {
  const m = u8();
  let end = ptr;
  while (m[end]) end++;
  return decoder.decode(m.slice(ptr, end)); // a copy: not of shared memory
}
// "INVALID_ARGUMENT" for WGC_ERR_INVALID_ARGUMENT, "OK" for WGC_OK.
const nameOf = (s) => str(W.exports.wgc_status_name(s)).replace(/^ERR_/, '');
const fail = (s, ctxPtr) => new WgcError(nameOf(s), str(W.exports.wgc_last_error(ctxPtr)));

// Tokens stand for JS continuations while C holds a callback.
function token(fn) {
  do W.lastToken = (W.lastToken + 1) >>> 0;
  while (!W.lastToken || W.tokens.has(W.lastToken));
  W.tokens.set(W.lastToken, fn);
  return W.lastToken;
}

// What a wasm module with wgc inside needs from its page: the WASI calls
// wasi-libc makes, the GPU layer (gpu.js), the continuations of the JS
// glue's callbacks (tokens), and the event-loop tasks that run the CPU
// backend's queued work and fire the callbacks C made due. mod is the
// module's {exports, tokens}, its exports filled in once instantiated:
// wgc.wasm's (W) or an application module's (instantiate).
//
// Callbacks C made due without an event of their own (the CPU backend
// completes at once) fire from a poll queued as a task, never inside the
// registering call; C asks for it (request_poll). GPU completions poll as
// they arrive. The CPU backend's queued work runs in slices of a few
// milliseconds, one task each (C asks for them through schedule_pump), so
// timers, input and rendering run in between. Tasks are queued with
// scheduler.postTask where the host has it (a CPU download asks for a
// poll: posting one costs 2.4 µs in Chromium against 11.7 for a
// postMessage), else through one MessageChannel; unlike setTimeout(0)
// neither is throttled to 4 ms once nested.
//
// A trap (wasm's unreachable, an access outside its memory, a stack
// overflow: a bug in C) leaves the module's state unknown, so the module
// fails for good: every continuation still waiting is called with FAILED
// (wgc.js's promises reject with mod.failed, a WgcError), tasks and GPU
// completions enter it no more, and mod.onFailure (an application's, see
// instantiate) hears of it once. For wgc.wasm every call fails from then
// on too (guardExports).
const FAILED = -1;
function runtime(mod) {
  const POLL = 0, PUMP = 1;
  let pollQueued = false, pumpQueued = false, channel = null;
  const fail = (e) => {
    if (mod.failed) return;
    mod.failed = new WgcError('DEVICE', `${mod.name} trapped (${e?.name ?? 'Error'}: ${e?.message ?? e}); ` +
                              'its state is lost, so it runs nothing more: load the page again');
    console.error(mod.failed.message);
    const waiting = [...mod.tokens.values()];
    mod.tokens.clear();
    for (const fn of waiting) fn(FAILED);
    mod.onFailure?.(mod.failed);
  };
  // Runs fn, which calls into the module from the event loop.
  const enter = (fn) => {
    if (mod.failed) return;
    try {
      fn();
    } catch (e) {
      fail(e);
    }
  };
  mod.fail = fail;
  // Outside browsers (Node, Deno: their ports have unref) an open port
  // keeps the process alive, so the channel is closed whenever no task is
  // queued and made again for the next one.
  const closeWhenIdle = typeof MessagePort !== 'undefined' && 'unref' in MessagePort.prototype;
  const onTask = (kind) => {
    if (kind === PUMP) pumpQueued = false;
    else pollQueued = false;
    enter(() => {
      if (kind === PUMP && mod.exports.wgc_js_cpu_pump()) schedulePump();
      mod.exports.wgc_poll_all();
    });
    if (closeWhenIdle && channel && !pollQueued && !pumpQueued) {
      channel.port1.close();
      channel = null;
    }
  };
  const post = (kind) => {
    if (kind === POLL && globalThis.scheduler?.postTask) {
      globalThis.scheduler.postTask(() => onTask(POLL));
      return;
    }
    if (!channel) {
      channel = new MessageChannel();
      channel.port1.onmessage = (e) => onTask(e.data);
    }
    channel.port2.postMessage(kind);
  };
  function schedulePoll() {
    if (pollQueued) return;
    pollQueued = true;
    post(POLL);
  }
  function schedulePump() {
    if (pumpQueued) return;
    pumpQueued = true;
    if (globalThis.scheduler?.postTask)
      globalThis.scheduler.postTask(() => onTask(PUMP), { priority: 'background' });
    else
      post(PUMP);
  }
  const answer = (t, ...a) => {
    const fn = mod.tokens.get(t);
    mod.tokens.delete(t);
    fn?.(...a);
  };
  const imports = {
    wasi_snapshot_preview1: wasi(mod),
    wgc_gpu: gpuImports(mod, schedulePoll, enter),
    wgc_js: {
      created: (t, s, ctx) => answer(t, s, ctx),
      done: (t, s) => answer(t, s),
      schedule_pump: schedulePump,
      threads: () => threadsFor(mod),
      spawn_thread: (stackTop, index) => spawnThread(mod, stackTop, index),
    },
  };
  return { imports, schedulePoll };
}

// ---- threads (README, "Threads in the browser") ----
// A module linked with shared memory runs the CPU backend's tasks on Web
// Workers too, when the page is cross-origin isolated (elsewhere it runs
// on the page's thread alone). Each worker instantiates the same module
// over the same memory and, on the stack C gave it, enters
// wgc_js_thread_main (src/cpu/pool_wasm.c), which never returns; it calls
// no import. The C side caps the count at 16, as natively.

// Whether this page can run a threaded module's workers: cross-origin
// isolated, with Web Workers. An application that builds both forms of
// its module picks one with it, as wgc.js does for itself.
export const threadsAvailable = () => globalThis.crossOriginIsolated === true && typeof Worker === 'function';
function threadsFor(mod) {
  if (!threadsAvailable() || !(mod.exports.memory.buffer instanceof SharedArrayBuffer)) return 1;
  return navigator.hardwareConcurrency || 1;
}

const THREAD_MAIN = `onmessage = async ({ data: { module, memory, stackTop, index } }) => {
  const imports = {};
  for (const { module: m, name, kind } of WebAssembly.Module.imports(module))
    (imports[m] ??= {})[name] = kind === 'memory' ? memory : () => {
      throw new Error('wgc thread ' + index + ': ' + m + '.' + name + ' called off the page thread');
    };
  const { exports } = await WebAssembly.instantiate(module, imports);
  exports.__stack_pointer.value = stackTop;
  try {
    exports.wgc_js_thread_main(index);
  } catch (e) {
    // a task trapped: told, the page's thread stops waiting for it and
    // traps in its turn; this worker runs nothing more
    exports.__stack_pointer.value = stackTop;
    exports.wgc_js_thread_trapped?.(index);
    console.error('wgc thread ' + index + ': a task failed: ' + (e?.message ?? e));
  }
};`;
let threadMainUrl = null;
// 1 when the worker was started, 0 when the page refuses (a content
// security policy without blob: workers, say): C then stops asking.
function spawnThread(mod, stackTop, index) {
  try {
    threadMainUrl ??= URL.createObjectURL(new Blob([THREAD_MAIN], { type: 'text/javascript' }));
    const worker = new Worker(threadMainUrl, { name: `wgc thread ${index}` });
    worker.onerror = (e) => console.error(`wgc thread ${index}: ${e.message}`);
    worker.postMessage({ module: mod.module, memory: mod.exports.memory, stackTop, index });
    return 1;
  } catch {
    return 0;
  }
}

// The memory a module imports (one linked for threads does): its limits,
// read from the import section of the module's bytes; null for a module
// with memory of its own.
function importedMemory(bytes) {
  const b = new Uint8Array(bytes);
  let at = 8;
  const leb = () => {
    let v = 0, shift = 0, byte;
    do { byte = b[at++]; v += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte & 0x80);
    return v;
  };
  const skip = (n) => { at += n; };
  while (at < b.length) {
    const id = b[at++], size = leb(), end = at + size;
    if (id === 2) {
      for (let n = leb(); n > 0; n--) {
        skip(leb());
        skip(leb());
        const kind = b[at++];
        if (kind === 2) {
          const flags = b[at++], initial = leb(), maximum = flags & 1 ? leb() : undefined;
          return { initial, maximum, shared: (flags & 2) !== 0 };
        }
        if (kind === 0) leb();
        else if (kind === 1) { at++; const f = b[at++]; leb(); if (f & 1) leb(); }
        else if (kind === 3) skip(2);
        else if (kind === 4) { at++; leb(); } // a tag
      }
      return null;
    }
    at = end;
  }
  return null;
}

// The WASI calls wasi-libc may make; others answer ENOSYS (52).
function wasi(mod) {
  const mem8 = () => new Uint8Array(mod.exports.memory.buffer);
  const view = () => new DataView(mod.exports.memory.buffer);
  const known = {
    fd_write(fd, iovs, n, nwritten) {
      let total = 0, s = '';
      for (let i = 0; i < n; i++) {
        const p = view().getUint32(iovs + 8 * i, true), len = view().getUint32(iovs + 8 * i + 4, true);
        s += new TextDecoder().decode(mem8().slice(p, p + len));
        total += len;
      }
      view().setUint32(nwritten, total, true);
      if (s) (fd === 2 ? console.error : console.log)(s);
      return 0;
    },
    environ_sizes_get(count, size) { view().setUint32(count, 0, true); view().setUint32(size, 0, true); return 0; },
    environ_get: () => 0,
    args_sizes_get(count, size) { view().setUint32(count, 0, true); view().setUint32(size, 0, true); return 0; },
    args_get: () => 0,
    clock_time_get(id, precision, out) {
      view().setBigUint64(out, BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6)), true);
      return 0;
    },
    random_get(buf, len) {
      // filled apart: getRandomValues refuses a view of shared memory
      for (let i = 0; i < len; i += 65536)
        mem8().set(crypto.getRandomValues(new Uint8Array(Math.min(65536, len - i))), buf + i);
      return 0;
    },
    fd_close: () => 0,
    proc_exit(code) { throw new Error(`wasm module exited with status ${code}`); },
  };
  return new Proxy(known, { get: (t, k) => t[k] ?? (() => 52) });
}

// Why the module at url cannot be used, in words, or '' when it can.
function badResponse(response) {
  if (!response.ok) return `HTTP ${response.status} ${response.statusText}`.trim();
  const type = response.headers.get('content-type') ?? '';
  if (type.split(';')[0].trim().toLowerCase() !== 'application/wasm')
    return `it is served as "${type}", not application/wasm (WebAssembly.compileStreaming requires that type)`;
  return '';
}

// Node's fetch does not read files: a file: URL (Node, Deno) is read from
// disk. The module name is a variable so that bundlers leave it alone.
async function fetchModule(url) {
  if (!String(url).startsWith('file:')) return fetch(url);
  const fs = 'node:fs/promises';
  const { readFile } = await import(/* @vite-ignore */ fs);
  return new Response(await readFile(new URL(url)), { headers: { 'content-type': 'application/wasm' } });
}

// Fetches and instantiates the module at url with the runtime of mod (and
// the application's own imports), runs its _initialize and fills in
// mod.exports; rejects with a WgcError naming the url and the cause.
async function load(url, mod, own = {}) {
  const failed = (why) => new WgcError('DEVICE', `${url} could not be loaded: ${why}`);
  const rt = runtime(mod);
  const imports = { ...own, ...rt.imports };
  let response, module, instance;
  try {
    response = await fetchModule(url);
  } catch (e) {
    throw failed(`the request failed (${e?.message ?? e})`);
  }
  const why = badResponse(response);
  if (why) throw failed(why);
  // a copy of the bytes, read only for a module that imports its memory
  const copy = response.clone();
  try {
    module = await WebAssembly.compileStreaming(response);
  } catch (e) {
    copy.body?.cancel();
    throw failed(`${e?.name ?? 'Error'}: ${e?.message ?? e}`);
  }
  let memory = null;
  if (WebAssembly.Module.imports(module).some((i) => i.kind === 'memory')) {
    const limits = importedMemory(await copy.arrayBuffer());
    if (!limits) throw failed('its memory import could not be read');
    try {
      memory = new WebAssembly.Memory(limits);
    } catch (e) {
      throw failed(limits.shared
        ? 'it is linked with shared memory (threads), which this page cannot create: serve the page ' +
          'cross-origin isolated (COOP and COEP headers), or load the module built without threads'
        : `its memory could not be made (${e?.message ?? e})`);
    }
    imports.env = { ...imports.env, memory };
  } else {
    copy.body?.cancel();
  }
  try {
    instance = await WebAssembly.instantiate(module, imports);
  } catch (e) {
    throw failed(`${e?.name ?? 'Error'}: ${e?.message ?? e}`);
  }
  mod.module = module;
  mod.name = String(url);
  const exports = memory ? { ...instance.exports, memory } : instance.exports;
  mod.exports = mod.guarded ? guardExports(mod, exports) : Object.freeze({ ...exports });
  mod.exports._initialize?.();
  return rt;
}

// exports with each function wrapped: a call that traps fails the module
// (runtime) and throws on; once failed, every call throws mod.failed.
function guardExports(mod, exports) {
  const out = {};
  for (const [name, f] of Object.entries(exports))
    out[name] = typeof f !== 'function' ? f : (...a) => {
      if (mod.failed) throw mod.failed;
      try {
        return f(...a);
      } catch (e) {
        mod.fail(e);
        throw e;
      }
    };
  return Object.freeze(out);
}

// ---- modules (README, "Modules") ----
// make wasm links each module in four forms: name.wasm, name-threads.wasm
// (shared memory, for a cross-origin isolated page), name-relaxed.wasm
// (relaxed SIMD in the CPU backend's GEMM and attention) and
// name-threads-relaxed.wasm. Each is only a speed-up on the one before.

// A module of one function, f32x4.relaxed_madd of its three v128 params:
// valid where the engine has relaxed SIMD (Chrome 114, Node 22).
const RELAXED_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 8, 1, 96, 3, 123, 123, 123, 1, 123,
  3, 2, 1, 0, 10, 13, 1, 11, 0, 32, 0, 32, 1, 32, 2, 253, 133, 2, 11]);
let relaxed = null;
export function relaxedSimdAvailable() {
  relaxed ??= typeof WebAssembly.validate === 'function' && WebAssembly.validate(RELAXED_PROBE);
  return relaxed;
}

// The forms wanted (moduleOptions), and the file wgc.js loaded.
const wanted = { threads: true, relaxedSimd: true };
let loadedFile = null;

// Before wgc.js loads its module (the first create() or call): whether it
// may load a threaded form and a relaxed-SIMD form where the page runs
// them (both true by default). {relaxedSimd: false} keeps every result's
// bits the same on every machine (relaxed_madd rounds once where the
// machine fuses, twice where it does not). minilm.js's default follows.
export function moduleOptions({ threads = wanted.threads, relaxedSimd = wanted.relaxedSimd } = {}) {
  if (loading) throw new WgcError('INVALID_ARGUMENT', `moduleOptions: wgc.js's module is already ${loadedFile ? `loaded (${loadedFile})` : 'loading'}`);
  wanted.threads = threads;
  wanted.relaxedSimd = relaxedSimd;
}

// The file of module name's form for this page: threads where it is
// cross-origin isolated and relaxed SIMD where the engine has it, each
// unless moduleOptions (or the arguments) say no.
export function moduleFile(name, { threads = wanted.threads, relaxedSimd = wanted.relaxedSimd } = {}) {
  const t = threads && threadsAvailable(), r = relaxedSimd && relaxedSimdAvailable();
  return `${name}${t ? '-threads' : ''}${r ? '-relaxed' : ''}.wasm`;
}

// The file of wgc.js's own module once loaded (wgc-threads-relaxed.wasm,
// say), else null.
export const loadedModule = () => loadedFile;

// Each written out, so that bundlers see the files and copy them.
const ownUrl = (file) => ({
  'wgc.wasm': () => new URL('wgc.wasm', import.meta.url),
  'wgc-threads.wasm': () => new URL('wgc-threads.wasm', import.meta.url),
  'wgc-relaxed.wasm': () => new URL('wgc-relaxed.wasm', import.meta.url),
  'wgc-threads-relaxed.wasm': () => new URL('wgc-threads-relaxed.wasm', import.meta.url),
})[file]();

let schedulePoll = () => {};
function instance() {
  loading ??= (async () => {
    // the page's form, then without threads, then wgc.wasm: each a fallback
    const files = [...new Set([moduleFile('wgc'), moduleFile('wgc', { threads: false }), 'wgc.wasm'])];
    let rt = null;
    for (const [i, file] of files.entries()) {
      const last = i === files.length - 1;
      rt = await load(ownUrl(file), W).catch((e) => { if (last) throw e; return null; });
      if (rt) {
        loadedFile = file;
        break;
      }
    }
    schedulePoll = rt.schedulePoll;
    W.scratch = W.exports.malloc(SCRATCH_BYTES);
  })().catch((e) => {
    loading = null;
    throw e instanceof WgcError ? e : new WgcError('DEVICE', `wgc.wasm could not be loaded: ${e?.message ?? e}`);
  });
  return loading;
}

// Tasks that the CPU backend's worker threads have run in this page: 0
// unless wgc-threads.wasm was loaded (a cross-origin isolated page) and a
// call was large enough to share.
export function cpuThreadTasks() {
  return W.exports ? W.exports.wgc_js_thread_tasks() : 0;
}

// An application module: C code written against wgc.h, linked with wgc's
// wasm32 static library (make wasm: build/web/lib/libwgc.a, README "C
// programs in the browser") into one wasm file. Fetches and instantiates
// it with everything wgc inside it imports (the GPU layer, WASI, the event
// loop's tasks) plus the application's own imports ({env: {...}}), runs
// its _initialize, and resolves to its exports. Its C code uses the _async
// calls; their callbacks fire from the event loop. Rejects with a WgcError
// naming the url and the cause when the module cannot be loaded.
// onFailure(error) hears once of a trap in the module's work from the event
// loop (its CPU backend's queued work, a GPU completion, a callback of its
// own): error is a WgcError (status DEVICE) naming url and the trap, and
// the runtime enters the module no more, so whatever the application still
// waits for must be settled there. A trap in a call the application makes
// throws to it, as any call's exception.
export async function instantiate(url, imports = {}, { onFailure } = {}) {
  if (onFailure !== undefined && typeof onFailure !== 'function')
    throw new WgcError('INVALID_ARGUMENT', 'instantiate: onFailure is not a function');
  const mod = { exports: null, module: null, tokens: new Map(), onFailure, failed: null };
  try {
    await load(url, mod, imports);
  } catch (e) {
    throw e instanceof WgcError ? e : new WgcError('DEVICE', `${url} could not be loaded: ${e?.message ?? e}`);
  }
  return mod.exports;
}

// ---- argument marshalling ----
const invalid = (fn, what) => new WgcError('INVALID_ARGUMENT', `${fn}: ${what}`);

// The bytes of count elements of dtype (wgc_dtype_bytes); its refusal
// (a type outside the list, count not whole blocks) as fn's error.
function dtypeBytes(fn, dtype, count) {
  if (dtype === DTYPE_F32 || dtype === DTYPE_I32) return 4 * count;
  const out = W.scratch + OUT;
  if (W.exports.wgc_dtype_bytes(dtype, count, out) !== OK)
    throw invalid(fn, str(W.exports.wgc_last_error(0)).replace(/^wgc_dtype_bytes: (t|n) /, (_, x) => (x === 't' ? 'dtype ' : 'count ')));
  return dv().getUint32(out, true);
}

// count elements of dtype over buf (download's result types).
function typedArray(dtype, buf, count) {
  switch (dtype) {
    case DTYPE_F32: return new Float32Array(buf, 0, count);
    case DTYPE_I32: return new Int32Array(buf, 0, count);
    case DTYPE_F16: return globalThis.Float16Array ? new globalThis.Float16Array(buf, 0, count) : new Uint16Array(buf, 0, count);
    case DTYPE_BF16: return new Uint16Array(buf, 0, count);
    default: return new Uint8Array(buf);
  }
}
const CHECK = {
  p(fn, name, v) { // device address
    if (typeof v !== 'bigint') throw invalid(fn, `${name} ${v} is not a BigInt device address`);
    return v;
  },
  z(fn, name, v) { // size_t: 32 bits on wasm32
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff)
      throw invalid(fn, `${name} ${v} is not a size (an integer in [0, 2^32) on wasm32)`);
    return v;
  },
  e(fn, name, v) { // enum
    if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff)
      throw invalid(fn, `${name} ${v} is not an enum value`);
    return v;
  },
  f(fn, name, v) { // float
    if (typeof v !== 'number') throw invalid(fn, `${name} ${v} is not a number`);
    return v;
  },
  b(fn, name, v) { // int flag: a boolean or an integer, written as 0 or 1
    if (typeof v !== 'boolean' && !Number.isInteger(v))
      throw invalid(fn, `${name} ${v} is not a boolean or an integer`);
    return v ? 1 : 0;
  },
};

// Writes a desc (plain object, C field names, missing fields 0) at DESC.
// Fields are 4-byte words in order, a device address (p) an 8-byte word
// at the next multiple of 8; "a.b" is field b of the nested object a.
const DESCS = {
  options: 'backend:e power:e cpu_threads:z max_binding_bytes:z profile:b',
  conv: 'n:z c:z h:z w:z k:z r:z s:z stride_h:z stride_w:z pad_h:z pad_w:z dilation_h:z dilation_w:z groups:z ' +
    'input_type:e filter_type:e bias_type:e output_type:e',
  pool: 'n:z c:z h:z w:z r:z s:z stride_h:z stride_w:z pad_h:z pad_w:z dilation_h:z dilation_w:z ' +
    'mode:e count_include_pad:b input_type:e output_type:e',
  attn: 'batch:z heads:z heads_kv:z seq_q:z seq_kv:z head_dim:z scale:f causal:e ' +
    'head_dim_v:z softcap:f mask:p' +
    ['mask_stride', 'q_stride', 'k_stride', 'v_stride', 'o_stride']
      .map((s) => ` ${s}.batch:z ${s}.head:z ${s}.seq:z`).join('') +
    ' q_type:e k_type:e v_type:e o_type:e mask_type:e',
  ep: 'bias:p bias_kind:e activation:e a_type:e b_type:e c_type:e bias_type:e',
  rotary: 'batch:z seq:z heads:z head_dim:z rotary_dim:z interleaved:e layout:e max_positions:z ' +
    'input_type:e output_type:e cache_type:e',
};
function writeDesc(fn, kind, d) {
  if (d === null || d === undefined) return 0; // NULL: C decides
  const what = kind === 'options' ? 'opt' : kind === 'ep' ? 'ep' : 'd';
  if (typeof d !== 'object') throw invalid(fn, `${what} is not an object`);
  const at = W.scratch + DESC, view = dv();
  u8().fill(0, at, at + DESC_BYTES);
  let off = 0; // fields of 4 bytes, device addresses of 8 (8-aligned)
  for (const field of DESCS[kind].split(' ')) {
    const [name, type] = field.split(':');
    const given = name.split('.').reduce((o, key) => o?.[key], d); // "a.b": d.a.b
    const v = CHECK[type](fn, `${what}->${name}`, given ?? (type === 'p' ? 0n : 0));
    if (type === 'p') {
      off = (off + 7) & ~7;
      view.setBigUint64(at + off, v, true);
      off += 8;
      continue;
    }
    if (type === 'f') view.setFloat32(at + off, v, true);
    else view.setUint32(at + off, v >>> 0, true);
    off += 4;
  }
  return at;
}

// Writes shape (an array of sizes) for a call whose next argument is its
// rank; which: the scratch slot.
function writeShape(fn, name, shape, rank, which) {
  if (shape === null || shape === undefined) return 0;
  if (typeof shape !== 'object' || typeof shape.length !== 'number')
    throw invalid(fn, `${name} is not an array`);
  if (Number.isInteger(rank) && rank <= 8 && shape.length < rank)
    throw invalid(fn, `${name} has ${shape.length} entries, fewer than its rank ${rank}`);
  const at = W.scratch + SHAPES[which], view = dv();
  for (let i = 0; i < Math.min(shape.length, 8); i++)
    view.setUint32(at + 4 * i, CHECK.z(fn, `${name}[${i}]`, shape[i]), true);
  return at;
}

// The plain operations: C name and parameters (name:type) after ctx.
const SIGS = {
  free: 'wgc_free base:p',
  copy: 'wgc_copy dst:p src:p bytes:z',
  poll: 'wgc_poll',
  gemm: 'wgc_gemm layout:e ta:e tb:e m:z n:z k:z alpha:f a:p lda:z b:p ldb:z beta:f c:p ldc:z',
  gemmBatched: 'wgc_gemm_batched layout:e ta:e tb:e m:z n:z k:z alpha:f a:p lda:z stride_a:z ' +
    'b:p ldb:z stride_b:z beta:f c:p ldc:z stride_c:z batch_count:z',
  gemmEx: 'wgc_gemm_ex layout:e ta:e tb:e m:z n:z k:z alpha:f a:p lda:z b:p ldb:z beta:f c:p ldc:z ep:ep',
  gemmBatchedEx: 'wgc_gemm_batched_ex layout:e ta:e tb:e m:z n:z k:z alpha:f a:p lda:z stride_a:z ' +
    'b:p ldb:z stride_b:z beta:f c:p ldc:z stride_c:z batch_count:z ep:ep',
  conv2d: 'wgc_conv2d d:conv input:p filter:p bias:p output:p',
  pool2d: 'wgc_pool2d d:pool input:p output:p',
  attention: 'wgc_attention d:attn q:p k:p v:p o:p',
  reduce: 'wgc_reduce op:e input:p output:p shape:shape rank:z axis:z',
  reduceAxes: 'wgc_reduce_axes op:e input:p output:p shape:shape rank:z axes:shape naxes:z',
  reduceEx: 'wgc_reduce_ex op:e input:p input_type:e output:p output_type:e shape:shape rank:z axis:z',
  reduceAxesEx: 'wgc_reduce_axes_ex op:e input:p input_type:e output:p output_type:e shape:shape rank:z ' +
    'axes:shape naxes:z',
  argmax: 'wgc_argmax input:p output:p shape:shape rank:z axis:z',
  argmin: 'wgc_argmin input:p output:p shape:shape rank:z axis:z',
  unary: 'wgc_unary op:e input:p output:p n:z',
  unaryParams: 'wgc_unary_params op:e alpha:f beta:f input:p output:p n:z',
  binary: 'wgc_binary op:e a:p b:p out:p n:z',
  binaryBroadcast: 'wgc_binary_broadcast op:e a:p shape_a:shape rank_a:z b:p shape_b:shape rank_b:z out:p',
  where: 'wgc_where cond:p shape_cond:shape rank_cond:z a:p shape_a:shape rank_a:z b:p shape_b:shape rank_b:z out:p',
  unaryEx: 'wgc_unary_ex op:e input:p input_type:e output:p output_type:e n:z',
  unaryParamsEx: 'wgc_unary_params_ex op:e alpha:f beta:f input:p input_type:e output:p output_type:e n:z',
  binaryEx: 'wgc_binary_ex op:e a:p a_type:e b:p b_type:e out:p out_type:e n:z',
  binaryBroadcastEx: 'wgc_binary_broadcast_ex op:e a:p a_type:e shape_a:shape rank_a:z b:p b_type:e ' +
    'shape_b:shape rank_b:z out:p out_type:e',
  whereEx: 'wgc_where_ex cond:p cond_type:e shape_cond:shape rank_cond:z a:p a_type:e shape_a:shape rank_a:z ' +
    'b:p b_type:e shape_b:shape rank_b:z out:p out_type:e',
  copyStrided: 'wgc_copy_strided dst:p dst_strides:strides src:p src_strides:strides shape:shape rank:z',
  copyStridedEx: 'wgc_copy_strided_ex dst:p dst_type:e dst_strides:strides src:p src_type:e ' +
    'src_strides:strides shape:shape rank:z',
  gather: 'wgc_gather data:p shape:shape rank:z axis:z indices:p n_indices:z output:p',
  gatherEx: 'wgc_gather_ex data:p data_type:e shape:shape rank:z axis:z indices:p n_indices:z output:p output_type:e',
  cast: 'wgc_cast src:p src_type:e dst:p dst_type:e n:z',
  softmax: 'wgc_softmax input:p output:p shape:shape rank:z axis:z',
  logSoftmax: 'wgc_log_softmax input:p output:p shape:shape rank:z axis:z',
  layerNorm: 'wgc_layer_norm input:p scale:p bias:p output:p shape:shape rank:z axis:z epsilon:f',
  rmsNorm: 'wgc_rms_norm input:p scale:p output:p shape:shape rank:z axis:z epsilon:f',
  softmaxEx: 'wgc_softmax_ex input:p input_type:e output:p output_type:e shape:shape rank:z axis:z',
  logSoftmaxEx: 'wgc_log_softmax_ex input:p input_type:e output:p output_type:e shape:shape rank:z axis:z',
  layerNormEx: 'wgc_layer_norm_ex input:p input_type:e scale:p scale_type:e bias:p bias_type:e ' +
    'output:p output_type:e shape:shape rank:z axis:z epsilon:f',
  rmsNormEx: 'wgc_rms_norm_ex input:p input_type:e scale:p scale_type:e output:p output_type:e ' +
    'shape:shape rank:z axis:z epsilon:f',
  rotaryEmbedding: 'wgc_rotary_embedding d:rotary input:p position_ids:p cos_cache:p sin_cache:p output:p',
};

function marshal(fn, params, args) {
  if (args.length !== params.length)
    throw invalid(fn, `takes ${params.length} arguments after the context, got ${args.length}`);
  let shapes = 0;
  return params.map(([name, type], i) => {
    const v = args[i];
    if (type === 'conv' || type === 'pool' || type === 'attn' || type === 'rotary' || type === 'ep')
      return writeDesc(fn, type, v);
    if (type === 'shape') return writeShape(fn, name, v, args[i + 1], shapes++);
    // strides arrays have the call's rank entries, like its shape
    if (type === 'strides')
      return writeShape(fn, name, v, args[params.findIndex(([n]) => n === 'rank')], shapes++);
    return CHECK[type](fn, name, v);
  });
}

class Context {
  constructor(ptr) {
    Object.defineProperty(this, '_ptr', { value: ptr, writable: true });
    this.backendName = str(W.exports.wgc_backend_name(ptr));
    this.adapterName = str(W.exports.wgc_adapter_name(ptr));
  }

  // A status that is not OK becomes a WgcError.
  _check(s) {
    if (s !== OK) throw fail(s, this._ptr);
  }

  // The error of a completion with status s: the context's message if the
  // call's failure recorded one (its error count moved on from before) or
  // the device failed (the poll that fired it recorded the reason, which
  // may be an earlier one), else the status's own.
  _asyncError(s, fn, before) {
    const recorded = this._ptr && W.exports.wgc_js_error_count(this._ptr) !== before;
    const device = s === ERR_DEVICE || s === ERR_DEVICE_LOST || s === ERR_OUT_OF_MEMORY;
    const now = this._ptr && (recorded || device) ? str(W.exports.wgc_last_error(this._ptr)) : '';
    const msg = now || `${fn}: ${str(W.exports.wgc_status_string(s))}`;
    return new WgcError(nameOf(s), msg);
  }

  alloc(bytes) {
    CHECK.z('wgc_alloc', 'bytes', bytes);
    this._check(W.exports.wgc_alloc(this._ptr, bytes, W.scratch + OUT));
    return dv().getBigUint64(W.scratch + OUT, true);
  }

  upload(dst, data) {
    const fn = 'wgc_upload';
    CHECK.p(fn, 'dst', dst);
    if (!ArrayBuffer.isView(data) && !(data instanceof ArrayBuffer))
      throw invalid(fn, 'src is not a Float32Array (or another ArrayBuffer view)');
    const bytes = new Uint8Array(data.buffer ?? data, data.byteOffset ?? 0, data.byteLength);
    const p = bytes.length ? W.exports.malloc(bytes.length) : 0;
    if (bytes.length && !p)
      throw new WgcError('OUT_OF_MEMORY', `${fn}: cannot stage ${bytes.length} bytes in wasm memory`);
    try {
      u8().set(bytes, p);
      this._check(W.exports.wgc_upload(this._ptr, dst, p, bytes.length));
    } finally {
      if (p) W.exports.free(p);
    }
  }

  // Resolves to count elements of type dtype read at src, as a new typed
  // array: Float32Array (DTYPE_F32, the default), Int32Array (DTYPE_I32),
  // Float16Array for DTYPE_F16 where the host has it, else Uint16Array
  // (the bits; always for DTYPE_BF16), Uint8Array of whole blocks (DTYPE_Q8_0,
  // DTYPE_Q4_0). Transfers move whole 4-byte words: an odd count of 2-byte
  // values reads the 2 bytes after them too, which must lie in the
  // allocation.
  async download(src, count, dtype = DTYPE_F32) {
    const fn = 'wgc_download_async';
    CHECK.p(fn, 'src', src);
    CHECK.z(fn, 'count', count);
    CHECK.e(fn, 'dtype', dtype);
    const size = dtypeBytes(fn, dtype, count);
    const bytes = Math.ceil(size / 4) * 4;
    if (bytes > 0xffffffff) throw invalid(fn, `count ${count} exceeds wasm32's address space`);
    const dst = bytes ? W.exports.malloc(bytes) : 0;
    if (bytes && !dst)
      throw new WgcError('OUT_OF_MEMORY', `${fn}: cannot stage ${bytes} bytes in wasm memory`);
    const before = W.exports.wgc_js_error_count(this._ptr);
    return new Promise((resolve, reject) => {
      const t = token((s) => {
        if (s === FAILED) return reject(W.failed);
        const out = s === OK ? typedArray(dtype, ownCopy(W.exports.memory, dst, size), count) : null;
        if (dst) W.exports.free(dst);
        if (s === OK) resolve(out);
        else reject(this._asyncError(s, fn, before));
      });
      const s = W.exports.wgc_js_download_async(this._ptr, dst, src, bytes, t);
      if (s !== OK) {
        W.tokens.delete(t);
        if (dst) W.exports.free(dst);
        reject(fail(s, this._ptr));
      }
    });
  }

  // Resolves once all work issued so far is done.
  async synchronize() {
    const fn = 'wgc_synchronize_async';
    const before = W.exports.wgc_js_error_count(this._ptr);
    return new Promise((resolve, reject) => {
      const t = token((s) => (s === OK ? resolve() : reject(s === FAILED ? W.failed : this._asyncError(s, fn, before))));
      const s = W.exports.wgc_js_synchronize_async(this._ptr, t);
      if (s !== OK) {
        W.tokens.delete(t);
        reject(fail(s, this._ptr));
      }
    });
  }

  // Compiling ahead (wgc_compile_begin/_end): between the two, operation
  // calls ask for their kernels and run nothing; compileEnd() starts every
  // kernel compiling concurrently and resolves once all are compiled.
  // Work issued meanwhile waits for the kernels it needs in the runtime,
  // never in the page, so awaiting compileEnd() is optional.
  compileBegin() { this._check(W.exports.wgc_compile_begin(this._ptr)); }
  async compileEnd() {
    const fn = 'wgc_compile_end_async';
    const before = W.exports.wgc_js_error_count(this._ptr);
    return new Promise((resolve, reject) => {
      const t = token((s) => (s === OK ? resolve() : reject(s === FAILED ? W.failed : this._asyncError(s, fn, before))));
      const s = W.exports.wgc_js_compile_end_async(this._ptr, t);
      if (s !== OK) {
        W.tokens.delete(t);
        reject(fail(s, this._ptr));
      }
    });
  }

  // Pending downloads and synchronizations reject with CANCELLED. Every
  // later call fails as on a NULL context.
  destroy() {
    const p = this._ptr;
    this._ptr = 0;
    if (!W.failed) W.exports.wgc_destroy(p); // a failed module runs nothing
  }

  // The C _async forms: in JS every completion is a promise already.
  downloadAsync(src, count, dtype = DTYPE_F32) { return this.download(src, count, dtype); }
  synchronizeAsync() { return this.synchronize(); }

  lastError() { return str(W.exports.wgc_last_error(this._ptr)); }
  pipelinesCompiled() { return W.exports.wgc_pipelines_compiled(this._ptr) >>> 0; }

  // Per-operation timing (wgc_profile_*): records arrive as the work
  // completes, read from the event loop; nothing here waits.
  profileStart() { this._check(W.exports.wgc_profile_start(this._ptr)); }
  profileStop() { this._check(W.exports.wgc_profile_stop(this._ptr)); }

  // The done records: [{name, shape, launches, source, start_us,
  // duration_us}], source a TIME_* constant; wgc_profile_record's layout
  // (152 bytes: name[32], shape[96], u32, enum, two doubles).
  profileRecords() {
    const count = () => dv().getUint32(W.scratch + OUT, true);
    this._check(W.exports.wgc_profile_records(this._ptr, 0, 0, W.scratch + OUT));
    const n = count(), size = 152;
    if (!n) return [];
    const p = W.exports.malloc(n * size);
    if (!p) throw new WgcError('OUT_OF_MEMORY', `wgc_profile_records: cannot stage ${n} records in wasm memory`);
    try {
      this._check(W.exports.wgc_profile_records(this._ptr, p, n, W.scratch + OUT));
      const out = [], d = dv();
      for (let i = 0; i < Math.min(n, count()); i++) {
        const r = p + i * size;
        out.push({
          name: str(r), shape: str(r + 32), launches: d.getUint32(r + 128, true), source: d.getInt32(r + 132, true),
          start_us: d.getFloat64(r + 136, true), duration_us: d.getFloat64(r + 144, true),
        });
      }
      return out;
    } finally {
      W.exports.free(p);
    }
  }

  // The records as Chrome trace-event JSON text (chrome://tracing, Perfetto).
  profileTrace() {
    this._check(W.exports.wgc_profile_trace(this._ptr, 0, 0, W.scratch + OUT));
    const len = dv().getUint32(W.scratch + OUT, true);
    const p = W.exports.malloc(len + 1);
    if (!p) throw new WgcError('OUT_OF_MEMORY', `wgc_profile_trace: cannot stage ${len + 1} bytes in wasm memory`);
    try {
      this._check(W.exports.wgc_profile_trace(this._ptr, p, len + 1, W.scratch + OUT));
      return str(p);
    } finally {
      W.exports.free(p);
    }
  }

  // No files in the browser: throws UNSUPPORTED (use profileTrace).
  profileWriteTrace(path) {
    const bytes = new TextEncoder().encode(`${path}\0`);
    const p = W.exports.malloc(bytes.length);
    if (!p) throw new WgcError('OUT_OF_MEMORY', 'wgc_profile_write_trace: cannot stage the path in wasm memory');
    try {
      u8().set(bytes, p);
      this._check(W.exports.wgc_profile_write_trace(this._ptr, p));
    } finally {
      W.exports.free(p);
    }
  }
  conv2dOutputSize(d) { return conv2dOutputSize(d); }
  pool2dOutputSize(d) { return pool2dOutputSize(d); }
  statusName(s) { return nameOf(s); }
  statusString(s) { return str(W.exports.wgc_status_string(s)); }
}

for (const [method, sig] of Object.entries(SIGS)) {
  const [fn, ...rest] = sig.split(' ');
  const params = rest.map((p) => p.split(':'));
  Context.prototype[method] = function (...args) {
    const a = marshal(fn, params, args);
    this._check(W.exports[fn](this._ptr, ...a));
  };
}

// ---- module functions ----

// options: {backend, power, cpu_threads, max_binding_bytes, profile} as wgc_options
// (missing fields 0, the defaults), and gpu: the GPU object to use where
// there is no navigator.gpu (Node: the webgpu package's create()); resolves
// to a
// context, rejects with a WgcError (e.g. status "NO_ADAPTER" for
// {backend: BACKEND_WEBGPU} without an adapter).
export async function create(options) {
  await instance();
  const opt = writeDesc('wgc_create_async', 'options', options);
  if (options?.gpu !== undefined && (typeof options.gpu !== 'object' || typeof options.gpu?.requestAdapter !== 'function'))
    throw invalid('wgc_create_async', 'opt->gpu is not a GPU object (one with requestAdapter)');
  W.gpu = options?.gpu ?? null; // read by gpu.js while this call starts
  return new Promise((resolve, reject) => {
    const t = token((s, ptr) => (s === OK ? resolve(new Context(ptr)) : reject(s === FAILED ? W.failed : fail(s, 0))));
    const s = W.exports.wgc_js_create_async(opt, t);
    if (s !== OK) {
      W.tokens.delete(t);
      reject(fail(s, 0));
    } else {
      schedulePoll();
    }
  });
}

function loaded(fn) {
  if (!W.exports) throw new WgcError('INVALID_ARGUMENT', `${fn}: the module is not loaded yet; await create() first`);
}

// {p, q} of wgc_conv2d_output_size; needs the module loaded (by create).
export function conv2dOutputSize(d) {
  const fn = 'wgc_conv2d_output_size';
  loaded(fn);
  const s = W.exports.wgc_conv2d_output_size(writeDesc(fn, 'conv', d), W.scratch + OUT, W.scratch + OUT2);
  if (s !== OK) throw fail(s, 0);
  return { p: dv().getUint32(W.scratch + OUT, true), q: dv().getUint32(W.scratch + OUT2, true) };
}

// {p, q} of wgc_pool2d_output_size; needs the module loaded (by create).
export function pool2dOutputSize(d) {
  const fn = 'wgc_pool2d_output_size';
  loaded(fn);
  const s = W.exports.wgc_pool2d_output_size(writeDesc(fn, 'pool', d), W.scratch + OUT, W.scratch + OUT2);
  if (s !== OK) throw fail(s, 0);
  return { p: dv().getUint32(W.scratch + OUT, true), q: dv().getUint32(W.scratch + OUT2, true) };
}

// wgc_version(): "MAJOR.MINOR.PATCH" of the loaded module.
export function version() { loaded('wgc_version'); return str(W.exports.wgc_version()); }
export function statusName(s) { loaded('wgc_status_name'); return nameOf(s); }
export function statusString(s) { loaded('wgc_status_string'); return str(W.exports.wgc_status_string(s)); }
// wgc_last_error(NULL): the last failure that had no context.
export function lastError() { loaded('wgc_last_error'); return str(W.exports.wgc_last_error(0)); }
