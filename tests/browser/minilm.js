// Browser test of all-MiniLM-L6-v2 built from the same C files as
// build/minilm into minilm.wasm (make wasm), run by tests/browser/run.mjs:
// token ids and embeddings against sentence-transformers on PyTorch
// (tests/data/minilm_reference.txt, tools/minilm_reference.py), on WebGPU
// and on the CPU backend, with the bound test_minilm.c holds natively:
// cosine >= 0.99999 and max abs difference <= 1e-4 for every sentence;
// then f16 and Q8_0 weights on WebGPU over a few sentences (cosine >=
// 0.9999 and >= 0.999).
// One line per test: "ok NAME" or "FAIL NAME: why".
import { loadMiniLM, cosine, BACKEND_WEBGPU, BACKEND_CPU } from '../minilm.js';
import { moduleFile, relaxedSimdAvailable } from '../wgc.js';
import { check, finish, test } from './harness.js';

// SwiftShader compiles the model's kernels on the first pass: minutes on a
// loaded machine.
const slow = (name, fn) => test(name, fn, 300000);

// "case i tokens hex(text)", "ids ...", "emb ..." per sentence.
async function reference() {
  const text = await (await fetch('/data/minilm_reference.txt')).text();
  const cases = [];
  for (const line of text.split('\n')) {
    const [kind, ...rest] = line.split(' ');
    if (kind === 'case') {
      const hex = rest[2] ?? '';
      const bytes = Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
      cases.push({ index: Number(rest[0]), text: new TextDecoder().decode(bytes) });
    } else if (kind === 'ids') {
      cases.at(-1).ids = rest.map(Number);
    } else if (kind === 'emb') {
      cases.at(-1).emb = Float64Array.from(rest.map(Number));
    }
  }
  return cases;
}

function compare(cases, got, what, minCos = 0.99999, maxDiff = 1e-4) {
  let worstCos = 1, worstDiff = 0;
  cases.forEach((c, i) => {
    check(got.ids[i].join(' ') === c.ids.join(' '),
          `${what} case ${c.index}: ids ${got.ids[i].slice(0, 12).join(' ')}..., want ${c.ids.slice(0, 12).join(' ')}...`);
    const v = got.vectors[i];
    let diff = 0;
    for (let j = 0; j < v.length; j++) diff = Math.max(diff, Math.abs(v[j] - c.emb[j]));
    const cos = cosine(v, c.emb);
    check(cos >= minCos && diff <= maxDiff, `${what} case ${c.index}: cosine ${cos}, max abs difference ${diff}`);
    worstCos = Math.min(worstCos, cos);
    worstDiff = Math.max(worstDiff, diff);
  });
  return `worst cosine ${worstCos.toFixed(7)}, max abs difference ${worstDiff.toExponential(2)}`;
}

finish(async () => {
  let model = null, cases = [];
  // Chromium has relaxed SIMD, so the page's form is minilm-relaxed.wasm
  // (the plain minilm.wasm is tested below).
  const file = moduleFile('minilm');
  await slow(`minilm: ${file} and the model files load`, async () => {
    check(relaxedSimdAvailable() && file === 'minilm-relaxed.wasm', `relaxed SIMD ${relaxedSimdAvailable()}, ${file}`);
    cases = await reference();
    check(cases.length > 10, `${cases.length} reference cases`);
    model = await loadMiniLM({ modelUrl: new URL('/model/', location.origin) });
  });
  const slots = [['WebGPU', 0, BACKEND_WEBGPU], ['the CPU backend', 1, BACKEND_CPU]];
  if (model) {
    for (const [label, slot, backend] of slots)
      await slow(`minilm: a context on ${label}`, async () => {
        const c = await model.create(slot, backend);
        return `${c.backend}, ${c.adapter}`;
      });
    let bytes = 0;
    await slow('minilm: the weights upload to both contexts', async () => {
      await model.load([0, 1], (got) => { bytes = got; });
      return `${(bytes / 1e6).toFixed(1)} MB fetched once`;
    });
  }
  // The sentences of at most 16 tokens, as one batch (test_minilm.c's).
  const short = cases.filter((c) => c.ids.length <= 16);
  const longest = cases.reduce((a, c) => (c.ids.length > (a?.ids.length ?? 0) ? c : a), null);
  for (const [label, slot] of slots) {
    await slow(`minilm: ${short.length} sentences in one batch on ${label} match sentence-transformers`, async () => {
      check(model && short.length >= 10, 'no model or too few short cases');
      const t0 = performance.now();
      const got = await model.embed(slot, short.map((c) => c.text));
      const ms = performance.now() - t0;
      return `${compare(short, got, label)}, ${ms.toFixed(0)} ms`;
    });
    await slow(`minilm: the longest sentence alone on ${label} matches sentence-transformers`, async () => {
      check(model && longest, 'no model');
      const t0 = performance.now();
      const got = await model.embed(slot, [longest.text]);
      const ms = performance.now() - t0;
      return `${longest.ids.length} tokens, ${compare([longest], got, label)}, ${ms.toFixed(0)} ms`;
    });
  }
  // Typed weights (their targets: cosine >= 0.9999 with f16, >= 0.999
  // with Q8_0), each once on WebGPU in slots of their own, over a few short
  // sentences to keep the suite's time.
  const few = short.slice(0, 4);
  for (const [type, slot, minCos] of [['f16', 2, 0.9999], ['q8_0', 3, 0.999]])
    await slow(`minilm: ${type} weights on WebGPU match sentence-transformers (${few.length} sentences)`, async () => {
      check(model && few.length === 4, 'no model');
      await model.create(slot, BACKEND_WEBGPU);
      await model.load([slot], null, type);
      const t0 = performance.now();
      const got = await model.embed(slot, few.map((c) => c.text));
      const ms = performance.now() - t0;
      model.destroy(slot);
      return `${compare(few, got, `${type} weights`, minCos, 1)}, ${ms.toFixed(0)} ms`;
    });
  await slow('minilm: a bad call is refused with a message', async () => {
    check(model, 'no model');
    let err = null;
    try {
      await model.embed(3, ['no model in this slot']);
    } catch (e) {
      err = e;
    }
    check(err && /slot 3 has no model/.test(err.message), `error: ${err?.message}`);
  });
  // Another form of the module on the CPU backend, over the few sentences.
  const other = async (name, fn) => {
    check(model && few.length === 4, 'no model');
    const m = await loadMiniLM({ wasmUrl: new URL(`/${name}`, location.origin),
                                 modelUrl: new URL('/model/', location.origin) });
    try {
      const info = await m.create(0, BACKEND_CPU);
      await m.load([0]);
      return await fn(await m.embed(0, few.map((c) => c.text)), info);
    } finally {
      m.destroy(0);
    }
  };
  // The threaded module where the page is not isolated: it still loads
  // (this browser makes its shared memory) and runs on one thread, giving
  // the same bits as the form without threads.
  await slow(`minilm: minilm-threads-relaxed.wasm in a page that is not isolated runs on one thread, as ${file}`,
    () => other('minilm-threads-relaxed.wasm', async (got, info) => {
      check(info.adapter === 'cpu (1 thread)', `adapter ${info.adapter}`);
      const want = await model.embed(1, few.map((c) => c.text));
      got.vectors.forEach((v, i) => v.forEach((x, j) => check(Object.is(x, want.vectors[i][j]),
        `sentence ${i}, element ${j}: ${x}, ${file} ${want.vectors[i][j]}`)));
    }));
  // The plain-SIMD form, which browsers without relaxed SIMD load.
  await slow('minilm: minilm.wasm (no relaxed SIMD) on the CPU backend matches sentence-transformers',
    () => other('minilm.wasm', async (got) => compare(few, got, 'minilm.wasm')));
  model?.destroy(0);
  model?.destroy(1);
});
