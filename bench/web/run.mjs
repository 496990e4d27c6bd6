// make bench-web: serves build/web (wgc.js, wgc.wasm), this folder (the page,
// TF.js) and bench/kernels on 127.0.0.1, runs the page in headless
// Chromium, prints the table and writes build/bench/bench-web.json in the
// schema of bench.json (bench/report.c). Environment: CHROMIUM (default
// /usr/bin/chromium), WGC_WEB (default build/web), WGC_BENCH_DIR (default
// build/bench), WGC_BENCH_REPS, WGC_BENCH_QUICK=1 (one GEMM size, fewer
// round trips), WGC_BENCH_ONLY (only the cases whose "group name" contains
// it, e.g. "host"; "minilm" for the model alone, "minilm cold" for its
// cold starts), WGC_BENCH_SLOW_REPS (runs of the peers that take seconds
// per MiniLM pass, default 3), WGC_BENCH_COLD_REPS (cold starts of each
// fast system, default 3; the slow ones get one).
//
// all-MiniLM-L6-v2's cold start runs here, after the page: each system in
// a fresh browser context (no cache, no compiled code kept), from the page
// ready to its first embedding (bench/web/minilm_cold.js).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { arch } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '../../tools/serve.mjs';
import { launch } from '../../tools/chromium.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
// Chromium as the tests run it (tools/chromium.mjs): WebGPU on SwiftShader,
// the adapter it has on a machine without a GPU.
const ADAPTER = 'chromium';
const TIMEOUT_MS = 1500000;

const web = resolve(root, process.env.WGC_WEB || 'build/web');
const outDir = resolve(root, process.env.WGC_BENCH_DIR || 'build/bench');
if (!existsSync(resolve(web, 'wgc.wasm'))) throw new Error(`${web}/wgc.wasm is missing (make wasm)`);
for (const m of ['@tensorflow/tfjs-backend-webgpu', '@huggingface/transformers', 'onnxruntime-web'])
  if (!existsSync(resolve(here, 'node_modules', m))) throw new Error(`${m} is missing (tools/bootstrap.sh bench-web)`);
// where the Makefile's export puts it, whatever WGC_BENCH_DIR says
const models = resolve(root, 'build/bench/models');
if (!existsSync(resolve(models, 'all-MiniLM-L6-v2/onnx/model.onnx')))
  throw new Error(`${models}/all-MiniLM-L6-v2 is missing (bench/minilm/export_onnx.py, make bench-web)`);
if (!existsSync(resolve(root, 'third_party/minilm/model.safetensors')))
  throw new Error('third_party/minilm is missing (tools/bootstrap.sh model)');
const ONLY = process.env.WGC_BENCH_ONLY ?? '';
const SLOW = new Set(['transformers.js:webgpu', 'ort-web:webgpu']);
const COLD_REPS = Math.max(1, Number(process.env.WGC_BENCH_COLD_REPS) || 3);

const started = Date.now();
const { server, url } = await serve(web, 0, {
  '/bench/': here, '/kernels/': resolve(root, 'bench/kernels'), '/bench-minilm/': resolve(root, 'bench/minilm'),
  '/models/': models, '/model/': resolve(root, 'third_party/minilm'),
});
let result;
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.exposeFunction('__benchLine', (l) => console.log(l));
  page.on('pageerror', (e) => console.log(`page error: ${e.message}`));
  const query = new URLSearchParams();
  if (process.env.WGC_BENCH_REPS) query.set('reps', process.env.WGC_BENCH_REPS);
  if (/^[^0]/.test(process.env.WGC_BENCH_QUICK ?? '')) query.set('quick', '1');
  if (process.env.WGC_BENCH_SLOW_REPS) query.set('slow_reps', process.env.WGC_BENCH_SLOW_REPS);
  if (ONLY) query.set('only', ONLY);
  query.set('isolated', '');
  await page.goto(`${url}bench/bench.html?${query}`);
  await page.waitForFunction(() => window.__benchDone, null, { timeout: TIMEOUT_MS, polling: 500 });
  result = await page.evaluate(() => window.__benchDone);
  await page.close();
  if (!result.error) result.rows.push(...await coldStarts(browser, url, result.notes));
  if (!result.error) result.rows.push(...await decoderFirstPass(browser, url));
} catch (e) {
  result = { error: String(e?.stack ?? e) };
} finally {
  await browser.close();
  server.close();
}
if (result.error) {
  console.error(`bench-web: the page failed: ${result.error}`);
  process.exit(1);
}

// Each system's cold start, wgc first (its first embedding is the
// reference, on the CPU backend unless only WebGPU runs; its ids go to
// onnxruntime-web); the slow systems once, the
// others COLD_REPS times, the median. Rows in the page's form.
async function coldStarts(browser, url, notes) {
  const pairs = [['CPU', ['wgc-cpu', 'transformers.js:wasm']],
                 ['WebGPU', ['wgc', 'transformers.js:webgpu', 'ort-web:webgpu']]];
  const rows = [];
  let ref = null, ids = null;
  for (const [kind, systems] of pairs) {
    const name = `cold start (${kind}): page ready to first embedding, batch 1 short`;
    if (ONLY && !`minilm ${name}`.includes(ONLY)) continue;
    for (const system of systems) {
      const times = [];
      let worst = 1;
      for (let r = 0; r < (SLOW.has(system) ? 1 : COLD_REPS); r++) {
        const context = await browser.newContext();
        try {
          const page = await context.newPage();
          page.on('pageerror', (e) => console.log(`page error: ${e.message}`));
          await page.addInitScript((x) => { window.__minilmIds = x; }, ids);
          await page.goto(`${url}bench/minilm_cold.html?system=${encodeURIComponent(system)}&isolated`);
          await page.waitForFunction(() => window.__coldDone, null, { timeout: TIMEOUT_MS, polling: 200 });
          const r = await page.evaluate(() => window.__coldDone);
          if (r.error) throw new Error(`minilm cold start, ${system}: ${r.error}`);
          ref ??= r.vector;
          ids ??= r.ids;
          const c = cosine(r.vector, ref);
          if (!(c >= 0.999)) throw new Error(`minilm cold start, ${system}: cosine ${c} with wgc's CPU backend, below 0.999`);
          worst = Math.min(worst, c);
          times.push(r.ms / 1000);
          notes[`minilm ${system}`] ??= r.note;
        } finally {
          await context.close();
        }
      }
      times.sort((a, b) => a - b);
      const n = times.length, seconds = n % 2 ? times[n >> 1] : (times[n / 2 - 1] + times[n / 2]) / 2;
      console.log(`  minilm ${name} ${system}: ${(seconds * 1e3).toFixed(0)} ms (${n} runs)`);
      rows.push({ group: 'minilm', name, system, seconds, runs: n, work: 1, unit: 'ms', cosine: worst });
    }
  }
  return rows;
}

// The demo decoder's first pass (prompt and one step, kernels compiled),
// each form in fresh browser contexts taking turns, COLD_REPS times:
// compiled ahead (wgc) and on first use.
async function decoderFirstPass(browser, url) {
  const name = 'decoder first pass (WebGPU): prompt and one step, kernels compiled';
  if (ONLY && !name.includes(ONLY)) return [];
  const forms = [['wgc', 1], ['wgc:first-use', 0]], times = { wgc: [], 'wgc:first-use': [] };
  for (let r = 0; r < COLD_REPS; r++)
    for (const [system, ahead] of forms) {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        await page.goto(`${url}bench/decoder_cold.html?ahead=${ahead}&isolated`);
        await page.waitForFunction(() => window.__coldDone, null, { timeout: TIMEOUT_MS, polling: 200 });
        const x = await page.evaluate(() => window.__coldDone);
        if (x.error || !x.ok) throw new Error(`decoder first pass, ${system}: ${x.error ?? 'logits differ from the CPU backend'}`);
        times[system].push(x.ms / 1000);
      } finally {
        await context.close();
      }
    }
  return forms.map(([system]) => {
    const t = times[system].sort((a, b) => a - b), n = t.length;
    const seconds = n % 2 ? t[n >> 1] : (t[n / 2 - 1] + t[n / 2]) / 2;
    console.log(`  ${name} ${system}: ${(seconds * 1e3).toFixed(0)} ms (${n} runs)`);
    return { group: 'decoder', name, system, seconds, runs: n, work: 1, unit: 'ms' };
  });
}

function cosine(a, b) {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}

// As bench/report.c: a case per (group, name); ratios are the other
// system's median time over wgc's (above 1: wgc is faster).
const value = (r) => (r.unit === 'us/op' ? (r.seconds / r.work) * 1e6
  : r.unit === 'ms' ? (r.seconds / r.work) * 1e3 : (r.work / r.seconds) * 1e-9);
const cases = [];
for (const r of result.rows) {
  let c = cases.find((k) => k.group === r.group && k.name === r.name);
  if (!c) cases.push((c = { group: r.group, name: r.name, adapter: ADAPTER, unit: r.unit, primary: 'wgc', rows: [] }));
  c.rows.push(r);
}
console.log("\nEvery figure: the median of its timed runs; (Nx): wgc's speed over that system's, measured in this run;" +
            "\nfor MiniLM (ms) (wgc/peer N): wgc's latency over that system's (below 1: wgc is faster).");
const json = {
  schema: 'wgc-bench-1', date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), host: arch(), large: 0,
  ratio: "other system's median time / wgc's: wgc's speedup over it",
  notes: Object.entries(result.notes).map(([key, v]) => ({ adapter: ADAPTER, key, value: v })),
  cases: cases.map((c) => {
    // MiniLM's CPU cases lead with wgc's CPU backend
    const p = c.rows.find((r) => r.system === 'wgc') ?? c.rows[0];
    const ratios = Object.fromEntries(c.rows.filter((r) => r !== p).map((r) => [r.system, r.seconds / p.seconds]));
    const ms = c.unit === 'ms';
    console.log(`  ${c.group.padEnd(5)} ${c.name.padEnd(38)} ${c.rows.map((r) =>
      `| ${r.system} ${value(r).toPrecision(3)} ${r.unit}${r === p ? ''
        : ms ? ` (wgc/peer ${(1 / ratios[r.system]).toPrecision(3)})` : ` (${ratios[r.system].toPrecision(3)}x)`}`).join(' ')}`);
    return {
      group: c.group, name: c.name, adapter: c.adapter, unit: c.unit, primary: p.system,
      results: c.rows.map((r) => ({ system: r.system, adapter: ADAPTER, median_s: r.seconds, runs: r.runs,
                                    work: r.work, value: value(r), device_bytes: 0,
                                    ...(r.cosine !== undefined && { worst_cosine: r.cosine }),
                                    ...(r.slowShare !== undefined &&
                                        { slow_share: r.slowShare, fast_median_s: r.fastSeconds,
                                          mean_s: r.meanSeconds, p90_s: r.p90Seconds }) })),
      ratios,
      // the targets are latency ratios: wgc's median over the peer's
      ...(ms && { latency_ratios: Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, 1 / v])) }),
    };
  }),
};
for (const n of json.notes) console.log(`${n.key}: ${n.value}`);
// What a page downloads before its first call: the modules, raw and
// gzipped (level 9, as a server would send them).
const forms = (name) => ['', '-threads', '-relaxed', '-threads-relaxed'].map((f) => `${name}${f}.wasm`);
json.payload = [...forms('wgc'), ...forms('minilm'), 'wgc.js', 'gpu.js'].filter((f) => existsSync(resolve(web, f))).map((f) => {
  const bytes = readFileSync(resolve(web, f));
  return { file: f, bytes: bytes.length, gzip_bytes: gzipSync(bytes, { level: 9 }).length };
});
for (const f of json.payload)
  console.log(`payload ${f.file}: ${(f.bytes / 1024).toFixed(1)} KiB, ${(f.gzip_bytes / 1024).toFixed(1)} KiB gzipped`);
mkdirSync(outDir, { recursive: true });
writeFileSync(resolve(outDir, 'bench-web.json'), JSON.stringify(json, null, 2) + '\n');
console.log(`\nwrote ${resolve(outDir, 'bench-web.json')}`);
console.log(`bench-web: the page took ${Math.round((Date.now() - started) / 1000)} s`);
