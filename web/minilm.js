// all-MiniLM-L6-v2 in the page: loads minilm.wasm (the model's C code
// linked with wgc, examples/minilm/browser/minilm_app.c) through wgc.js,
// or the form of it that the page runs (wgc.js's moduleFile: in a
// cross-origin isolated page minilm-threads.wasm, whose CPU backend runs on
// every core; with relaxed SIMD minilm-relaxed.wasm; or both),
// fetches the model's files into its memory, and embeds sentences. The
// model itself is C; this file only moves bytes and turns the module's
// callbacks into promises.
import { instantiate, moduleFile, BACKEND_WEBGPU, BACKEND_CPU, DTYPE_F32, DTYPE_F16, DTYPE_BF16, DTYPE_Q8_0, DTYPE_Q4_0 } from './wgc.js';

export { BACKEND_WEBGPU, BACKEND_CPU };

const utf8 = new TextEncoder();

// The weight types load() takes, by their wgc_dtype names.
const WEIGHT_TYPES = { f32: DTYPE_F32, f16: DTYPE_F16, bf16: DTYPE_BF16, q8_0: DTYPE_Q8_0, q4_0: DTYPE_Q4_0 };

// Fetches url's body into the module's memory, reporting progress(bytes,
// total); resolves to [pointer, length]. Streams into one malloc'ed block,
// so the 90 MB of weights are never held twice in JavaScript.
async function fetchInto(app, url, progress) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const total = Number(response.headers.get('content-length')) || 0;
  if (!total || !response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    const p = app.malloc(bytes.length || 1);
    if (!p) throw new Error(`${url}: out of wasm memory for ${bytes.length} bytes`);
    new Uint8Array(app.memory.buffer).set(bytes, p);
    progress?.(bytes.length, bytes.length);
    return [p, bytes.length];
  }
  const p = app.malloc(total);
  if (!p) throw new Error(`${url}: out of wasm memory for ${total} bytes`);
  let got = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (got + value.length > total) {
      app.free(p);
      throw new Error(`${url}: longer than its content-length ${total}`);
    }
    new Uint8Array(app.memory.buffer).set(value, p + got);
    got += value.length;
    progress?.(got, total);
  }
  if (got !== total) {
    app.free(p);
    throw new Error(`${url}: ${got} of ${total} bytes arrived`);
  }
  return [p, total];
}

function weightTypeOf(name) {
  const wtype = WEIGHT_TYPES[name];
  if (wtype === undefined)
    throw new Error(`minilm: weight type ${name} is not one of ${Object.keys(WEIGHT_TYPES).join(', ')}`);
  return wtype;
}

// Calls fn(texts, lens) with the sentences as the module takes them: UTF-8
// one after the other at texts, their byte lengths (u32) at lens; freed
// after (the module tokenizes at once).
function withSentences(app, sentences, fn) {
  const bytes = sentences.map((s) => utf8.encode(s));
  const size = bytes.reduce((n, b) => n + b.length, 0);
  const p = app.malloc(size + 4 * bytes.length);
  if (!p) throw new Error('out of wasm memory for the sentences');
  const m = new Uint8Array(app.memory.buffer), view = new DataView(app.memory.buffer);
  let at = p + 4 * bytes.length;
  bytes.forEach((b, i) => {
    view.setUint32(p + 4 * i, b.length, true);
    m.set(b, at);
    at += b.length;
  });
  try {
    return fn(p + 4 * bytes.length, p);
  } finally {
    app.free(p);
  }
}

function cstring(app, ptr) {
  const m = new Uint8Array(app.memory.buffer);
  let end = ptr;
  while (m[end]) end++;
  return new TextDecoder().decode(m.slice(ptr, end));
}

// Loads the module and the model's configuration and tokenizer from
// modelUrl (a folder with config.json, sentence_bert_config.json,
// tokenizer.json and model.safetensors). Resolves to a MiniLM object.
export async function loadMiniLM({ wasmUrl = new URL(moduleFile('minilm'), import.meta.url),
                                   modelUrl = new URL('model/', import.meta.url) } = {}) {
  const waiting = { created: new Map(), embedded: new Map() };
  const settle = (map, slot, value) => {
    const r = map.get(slot);
    map.delete(slot);
    r?.ok(value);
  };
  // A trap in the module (a bug) fails it: what waits rejects, and every
  // later call throws the same error (destroy does nothing).
  let failure = null;
  const alive = () => {
    if (failure) throw failure;
  };
  const until = (map, slot) => new Promise((ok, no) => map.set(slot, { ok, no }));
  const onFailure = (e) => {
    failure = e;
    for (const map of Object.values(waiting)) {
      for (const { no } of map.values()) no(e);
      map.clear();
    }
  };
  const app = await instantiate(wasmUrl, {
    env: {
      mw_created: (slot, status) => settle(waiting.created, slot, { status }),
      mw_embedded: (slot, status, ptr, n, dim) => {
        const vectors = [];
        if (status === 0)
          for (let i = 0; i < n; i++)
            vectors.push(new Float32Array(new Float32Array(app.memory.buffer, ptr + 4 * i * dim, dim)));
        settle(waiting.embedded, slot, { status, vectors });
      },
    },
  }, { onFailure });
  const fail = (what) => new Error(`${what}: ${cstring(app, app.mw_error())}`);
  // the three fetched at once; whatever arrived is freed after
  const names = ['config.json', 'sentence_bert_config.json', 'tokenizer.json'];
  const got = await Promise.allSettled(names.map((name) => fetchInto(app, new URL(name, modelUrl))));
  const files = got.filter((r) => r.status === 'fulfilled').map((r) => r.value);
  try {
    const bad = got.find((r) => r.status === 'rejected');
    if (bad) throw bad.reason;
    if (app.mw_configure(files[0][0], files[0][1], files[1][0], files[1][1], files[2][0], files[2][1]))
      throw fail('the model configuration');
  } finally {
    files.forEach(([p]) => app.free(p));
  }
  let weights = null;
  return {
    // Opens slot's context on backend (BACKEND_WEBGPU, BACKEND_CPU, ...).
    async create(slot, backend) {
      alive();
      const created = until(waiting.created, slot);
      if (app.mw_create(slot, backend)) {
        waiting.created.delete(slot);
        throw fail('wgc_create_async');
      }
      const { status } = await created;
      if (status) throw fail(`wgc_create_async (status ${status})`);
      return { backend: cstring(app, app.mw_backend_name(slot)), adapter: cstring(app, app.mw_adapter_name(slot)) };
    },
    // Before load: allocates slot's model for weightType and compiles the
    // kernels of a first pass over sentences ahead, so that they compile
    // while load() fetches the weights (nothing waits for them here).
    prepare(slot, weightType = 'f32', sentences = ['']) {
      alive();
      const wtype = weightTypeOf(weightType);
      withSentences(app, sentences, (texts, lens) => {
        if (app.mw_prepare(slot, wtype, texts, lens, sentences.length)) throw fail('minilm: compiling ahead');
      });
    },
    // Fetches model.safetensors once (progress(bytes, total) as it comes)
    // and uploads it to each slot's context, the linear weights and the
    // embedding tables as weightType ('f32', 'f16', 'bf16', 'q8_0' or
    // 'q4_0', converted at load); the host copy then goes.
    async load(slots, progress, weightType = 'f32') {
      alive();
      const wtype = weightTypeOf(weightType);
      weights ??= await fetchInto(app, new URL('model.safetensors', modelUrl), progress);
      if (failure) {
        weights = null;
        throw failure;
      }
      try {
        for (const slot of slots)
          if (app.mw_load(slot, weights[0], weights[1], wtype)) throw fail('model.safetensors');
      } finally {
        app.free(weights[0]);
        weights = null;
      }
    },
    // Embeds sentences in one pass on slot's model: resolves to
    // {vectors: Float32Array[] (unit length), ids: the token ids of each}.
    // With profile, the result's records are the pass's operations (wgc's
    // timing records: {name, shape, duration_us}).
    async embed(slot, sentences, { profile = false } = {}) {
      alive();
      if (profile && app.mw_profile(slot, 1)) throw fail('minilm: timing records');
      const done = until(waiting.embedded, slot);
      withSentences(app, sentences, (texts, lens) => {
        if (app.mw_embed(slot, texts, lens, sentences.length)) {
          waiting.embedded.delete(slot);
          throw fail('minilm');
        }
      });
      const { status, vectors } = await done;
      if (status) throw fail(`minilm (status ${status})`);
      const ids = sentences.map((_, i) =>
        Array.from(new Int32Array(app.memory.buffer, app.mw_token_ids(slot, i), app.mw_tokens(slot, i))));
      if (!profile) return { vectors, ids };
      app.mw_profile(slot, 0);
      const trace = app.mw_trace(slot);
      if (!trace) throw fail('minilm: timing records');
      const events = JSON.parse(cstring(app, trace)).traceEvents ?? [];
      const records = events.filter((e) => e.ph === 'X')
        .map((e) => ({ name: e.name, shape: e.args?.shape ?? '', duration_us: e.dur }));
      return { vectors, ids, records };
    },
    destroy(slot) {
      if (!failure) app.mw_destroy(slot);
    },
  };
}

export function cosine(a, b) {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}
