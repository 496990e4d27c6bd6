// make bench-web, all-MiniLM-L6-v2: each system that embeds sentences in
// the page, set up by name. Every system resolves to
// {system, note, embed(sentences, ids) -> Float32Array[] (unit length)}.
// ids: each sentence's token ids from wgc's tokenizer (the model's
// tokenizer.json, truncated at 256 as sentence-transformers does), which
// onnxruntime-web, having no tokenizer, is given; the others tokenize in
// their embed, inside the timing.
//
// Local files only: wgc's model from /model/ (third_party/minilm), the ONNX
// export (bench/minilm/export_onnx.py) from /models/, the runtimes from
// /bench/node_modules. Every page is cross-origin isolated (make bench-web
// serves it so), so both wasm systems may use threads: wgc's CPU backend
// takes every core by default (minilm-threads.wasm); onnxruntime-web's
// default would be half of them (at most 4), so it is given every core
// too, the best setting a user could pick.
import { loadMiniLM, BACKEND_WEBGPU, BACKEND_CPU } from '/minilm.js';
import { moduleFile } from '/wgc.js';

const NM = '/bench/node_modules';
const TJS = `${NM}/@huggingface/transformers`;
const MODEL = 'all-MiniLM-L6-v2';
const ONNX = `/models/${MODEL}/onnx/model.onnx`;

export const SYSTEMS = ['wgc', 'wgc-cpu', 'transformers.js:webgpu', 'transformers.js:wasm', 'ort-web:webgpu'];

const rows = (data, n, dim) => Array.from({ length: n }, (_, i) => data.slice(i * dim, (i + 1) * dim));

// wgc: minilm.wasm (the model's C code linked with wgc) in the form this
// page runs (minilm-threads-relaxed.wasm here), one module, a slot per
// backend.
let wgcApp = null;
// first: the sentences of the first pass, whose kernels compile while the
// weights download (minilm.js prepare()).
async function wgcSystem(system, backend, first) {
  wgcApp ??= await loadMiniLM();
  const slot = backend === BACKEND_WEBGPU ? 0 : 1;
  const info = await wgcApp.create(slot, backend);
  if (first) wgcApp.prepare(slot, 'f32', first);
  await wgcApp.load([slot]);
  const app = wgcApp;
  return {
    system, note: `${moduleFile('minilm')}, ${info.backend === 'cpu' ? info.adapter : `webgpu (${info.adapter})`}`,
    embed: async (sentences) => (await app.embed(slot, sentences)).vectors,
    tokenize: async (sentences) => (await app.embed(slot, sentences)).ids,
  };
}

// transformers.js: its own bundle (onnxruntime-web inside), the wasm
// files from the onnxruntime-web it was built with.
let tjs = null;
async function transformersSystem(system, device) {
  if (!tjs) {
    tjs = await import(`${TJS}/dist/transformers.min.js`);
    tjs.env.allowRemoteModels = false;
    tjs.env.allowLocalModels = true;
    tjs.env.localModelPath = '/models/';
    tjs.env.useBrowserCache = false;
    tjs.env.backends.onnx.wasm.wasmPaths = `${TJS}/node_modules/onnxruntime-web/dist/`;
    tjs.env.backends.onnx.wasm.numThreads = crossOriginIsolated ? Math.min(16, navigator.hardwareConcurrency || 1) : 1;
  }
  const extractor = await tjs.pipeline('feature-extraction', MODEL, { device, dtype: 'fp32' });
  return {
    system, note: `${tjs.env.version} on ${device}, fp32${device === 'wasm' ? `, ${tjs.env.backends.onnx.wasm.numThreads} threads` : ''}`,
    embed: async (sentences) => {
      const out = await extractor(sentences, { pooling: 'mean', normalize: true });
      const v = rows(out.data, sentences.length, out.dims[1]);
      out.dispose?.();
      return v;
    },
  };
}

// onnxruntime-web with its WebGPU execution provider on the same export;
// mean pooling over the real tokens and L2 normalisation here.
async function ortSystem(system) {
  const ort = await import(`${NM}/onnxruntime-web/dist/ort.webgpu.bundle.min.mjs`);
  ort.env.wasm.wasmPaths = `${NM}/onnxruntime-web/dist/`;
  const session = await ort.InferenceSession.create(ONNX, { executionProviders: ['webgpu'] });
  return {
    system, note: `onnxruntime-web ${ort.env.versions?.web ?? ''} on ${session.handler?.backend ?? 'webgpu'}`.trim(),
    embed: async (sentences, ids) => {
      const n = ids.length, len = Math.max(...ids.map((x) => x.length));
      const input = new BigInt64Array(n * len), mask = new BigInt64Array(n * len);
      ids.forEach((x, i) => x.forEach((id, j) => {
        input[i * len + j] = BigInt(id);
        mask[i * len + j] = 1n;
      }));
      const t = (a) => new ort.Tensor('int64', a, [n, len]);
      const feeds = { input_ids: t(input), attention_mask: t(mask), token_type_ids: t(new BigInt64Array(n * len)) };
      const { last_hidden_state: h } = await session.run(feeds);
      const dim = h.dims[2], data = await h.getData();
      h.dispose?.();
      return ids.map((x, i) => {
        const v = new Float64Array(dim);
        for (let j = 0; j < x.length; j++)
          for (let k = 0; k < dim; k++) v[k] += data[(i * len + j) * dim + k];
        let s = 0;
        for (const e of v) s += e * e;
        return Float32Array.from(v, (e) => e / Math.sqrt(s));
      });
    },
  };
}

// first (optional): the sentences the first embed will take, for the
// systems that can prepare for them.
export function setup(system, first) {
  switch (system) {
  case 'wgc': return wgcSystem(system, BACKEND_WEBGPU, first);
  case 'wgc-cpu': return wgcSystem(system, BACKEND_CPU, first);
  case 'transformers.js:webgpu': return transformersSystem(system, 'webgpu');
  case 'transformers.js:wasm': return transformersSystem(system, 'wasm');
  case 'ort-web:webgpu': return ortSystem(system);
  default: throw new Error(`unknown system ${system}`);
  }
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

// Each of got's embeddings against want's (wgc's CPU backend, itself held
// to sentence-transformers by the tests): throws below 0.999.
export function checkEmbeddings(system, what, got, want) {
  if (got.length !== want.length) throw new Error(`${system}, ${what}: ${got.length} embeddings, expected ${want.length}`);
  got.forEach((g, i) => {
    const c = cosine(g, want[i]);
    if (!(g.length === want[i].length && c >= 0.999))
      throw new Error(`${system}, ${what}: sentence ${i}: cosine ${c} with wgc's CPU backend, below 0.999`);
  });
  return Math.min(...got.map((g, i) => cosine(g, want[i])));
}
