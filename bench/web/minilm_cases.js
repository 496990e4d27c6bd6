// make bench-web, all-MiniLM-L6-v2 in steady state: batch 1 at about 16
// and about 128 tokens and a batch of 8 sentences (bench/minilm/
// sentences.json), on wgc (WebGPU and its CPU backend), transformers.js
// (WebGPU and wasm, fp32) and onnxruntime-web (WebGPU). Each figure: the
// median of its timed runs after one warm-up run, the systems of a case
// taking turns; each run is sentences in, unit-length embeddings out on the
// host. The systems on SwiftShader's WebGPU other than wgc take seconds per
// run, so they get fewer runs (slowReps) than the others (reps).
// Cases pair each wgc backend with its peers: "(WebGPU)" wgc beside
// transformers.js and onnxruntime-web on WebGPU, "(CPU)" wgc's CPU backend
// beside transformers.js's wasm device.
// Before each timed run the page idles SETTLE_MS, so that the background
// work a run leaves behind (V8 optimising a module's hot functions on
// another thread, collecting its garbage) lands in no other system's time:
// without it, wgc's CPU backend right after a transformers.js run took
// twice its time alone (28 -> 55 ms at 17 tokens), and transformers.js
// after wgc up to 2.5 times its own.
import { SYSTEMS, setup, checkEmbeddings } from './minilm_systems.js';

const SLOW = new Set(['transformers.js:webgpu', 'ort-web:webgpu']);
const PAIRS = [
  ['WebGPU', ['wgc', 'transformers.js:webgpu', 'ort-web:webgpu']],
  ['CPU', ['wgc-cpu', 'transformers.js:wasm']],
];

const SETTLE_MS = 300;
const settle = () => new Promise((ok) => setTimeout(ok, SETTLE_MS));

// of times (sorted here, in place); bench.js's cases use it too
export const median = (t) => {
  t.sort((x, y) => x - y);
  return t.length % 2 ? t[t.length >> 1] : (t[t.length / 2 - 1] + t[t.length / 2]) / 2;
};

// Runs the cases whose "minilm <name>" contains only; returns rows in
// bench.js's form, and fills notes.
export async function runMiniLM({ reps, slowReps, only, line, notes }) {
  const sentences = await (await fetch('/bench-minilm/sentences.json')).json();
  const sizes = [['batch 1, short', [sentences.short]], ['batch 1, long', [sentences.long]],
                 ['batch 8', sentences.batch]];
  const wanted = (name) => !only || `minilm ${name}`.includes(only);
  const cases = [];
  for (const [size, input] of sizes)
    for (const [kind, systems] of PAIRS) if (wanted(`${size} (${kind})`)) cases.push({ size, input, kind, systems });
  if (!cases.length) return [];

  const sys = {};
  for (const name of SYSTEMS.filter((s) => cases.some((c) => c.systems.includes(s)) || s === 'wgc-cpu')) {
    const t0 = performance.now();
    sys[name] = await setup(name);
    notes[`minilm ${name}`] = sys[name].note;
    line(`  minilm set up ${name} in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${sys[name].note}`);
  }
  const rows = [];
  for (const c of cases) {
    // the reference and the token ids: wgc's CPU backend
    const ids = await sys['wgc-cpu'].tokenize(c.input);
    const want = await sys['wgc-cpu'].embed(c.input, ids);
    const tokens = ids.map((x) => x.length);
    const name = `${c.size} (${c.kind}): ${c.input.length} x ${Math.min(...tokens)}-${Math.max(...tokens)} tokens`;
    const run = async (s) => {
      const got = await sys[s].embed(c.input, ids);
      return checkEmbeddings(s, name, got, want);
    };
    for (const s of c.systems) await run(s); // warm-up, checked
    const times = Object.fromEntries(c.systems.map((s) => [s, []]));
    const worst = {};
    const rounds = Math.max(...c.systems.map((s) => (SLOW.has(s) ? slowReps : reps)));
    for (let r = 0; r < rounds; r++)
      for (let j = 0; j < c.systems.length; j++) {
        const s = c.systems[(r + j) % c.systems.length];
        if (times[s].length >= (SLOW.has(s) ? slowReps : reps)) continue;
        await settle();
        const t0 = performance.now();
        const got = await sys[s].embed(c.input, ids);
        times[s].push((performance.now() - t0) / 1000);
        worst[s] = Math.min(worst[s] ?? 1, checkEmbeddings(s, name, got, want));
      }
    for (const s of c.systems) {
      const seconds = median(times[s]);
      rows.push({ group: 'minilm', name, system: s, seconds, runs: times[s].length, work: 1, unit: 'ms',
                  cosine: worst[s] });
      line(`  minilm ${name.padEnd(44)} ${s.padEnd(24)} ${(seconds * 1e3).toFixed(1)} ms ` +
           `(${times[s].length} runs, worst cosine ${worst[s].toFixed(6)})`);
    }
  }
  return rows;
}
