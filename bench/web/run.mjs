// make bench-web: serves build/web (wgc.js, wgc.wasm), this folder (the page,
// TF.js) and bench/kernels on 127.0.0.1, runs the page in headless
// Chromium, prints the table and writes build/bench/bench-web.json in the
// schema of bench.json (bench/report.c). Environment: CHROMIUM (default
// /usr/bin/chromium), WGC_WEB (default build/web), WGC_BENCH_DIR (default
// build/bench), WGC_BENCH_REPS, WGC_BENCH_QUICK=1 (one GEMM size, fewer
// round trips), WGC_BENCH_ONLY (only the cases whose "group name" contains
// it, e.g. "host").
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
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
const TIMEOUT_MS = 600000;

const web = resolve(root, process.env.WGC_WEB || 'build/web');
const outDir = resolve(root, process.env.WGC_BENCH_DIR || 'build/bench');
if (!existsSync(resolve(web, 'wgc.wasm'))) throw new Error(`${web}/wgc.wasm is missing (make wasm)`);
if (!existsSync(resolve(here, 'node_modules/@tensorflow/tfjs-backend-webgpu')))
  throw new Error('TF.js is missing (tools/bootstrap.sh bench-web)');

const started = Date.now();
const { server, url } = await serve(web, 0, {
  '/bench/': here, '/kernels/': resolve(root, 'bench/kernels'),
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
  if (process.env.WGC_BENCH_ONLY) query.set('only', process.env.WGC_BENCH_ONLY);
  await page.goto(`${url}bench/bench.html?${query}`);
  await page.waitForFunction(() => window.__benchDone, null, { timeout: TIMEOUT_MS, polling: 500 });
  result = await page.evaluate(() => window.__benchDone);
} finally {
  await browser.close();
  server.close();
}
if (result.error) {
  console.error(`bench-web: the page failed: ${result.error}`);
  process.exit(1);
}

// As bench/report.c: a case per (group, name); ratios are the other
// system's median time over wgc's (above 1: wgc is faster).
const value = (r) => (r.unit === 'us/op' ? (r.seconds / r.work) * 1e6 : (r.work / r.seconds) * 1e-9);
const cases = [];
for (const r of result.rows) {
  let c = cases.find((k) => k.group === r.group && k.name === r.name);
  if (!c) cases.push((c = { group: r.group, name: r.name, adapter: ADAPTER, unit: r.unit, primary: 'wgc', rows: [] }));
  c.rows.push(r);
}
console.log("\nEvery figure: the median of its timed runs; (Nx): wgc's speed over that system's, measured in this run.");
const json = {
  schema: 'wgc-bench-1', date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), host: arch(), large: 0,
  ratio: "other system's median time / wgc's: wgc's speedup over it",
  notes: Object.entries(result.notes).map(([key, v]) => ({ adapter: ADAPTER, key, value: v })),
  cases: cases.map((c) => {
    const p = c.rows.find((r) => r.system === 'wgc') ?? c.rows[0];
    const ratios = Object.fromEntries(c.rows.filter((r) => r !== p).map((r) => [r.system, r.seconds / p.seconds]));
    console.log(`  ${c.group.padEnd(5)} ${c.name.padEnd(38)} ${c.rows.map((r) =>
      `| ${r.system} ${value(r).toPrecision(3)} ${r.unit}${r === p ? '' : ` (${ratios[r.system].toPrecision(3)}x)`}`).join(' ')}`);
    return {
      group: c.group, name: c.name, adapter: c.adapter, unit: c.unit, primary: p.system,
      results: c.rows.map((r) => ({ system: r.system, adapter: ADAPTER, median_s: r.seconds, runs: r.runs,
                                    work: r.work, value: value(r), device_bytes: 0 })),
      ratios,
    };
  }),
};
for (const n of json.notes) console.log(`${n.key}: ${n.value}`);
mkdirSync(outDir, { recursive: true });
writeFileSync(resolve(outDir, 'bench-web.json'), JSON.stringify(json, null, 2) + '\n');
console.log(`\nwrote ${resolve(outDir, 'bench-web.json')}`);
console.log(`bench-web: the page took ${Math.round((Date.now() - started) / 1000)} s`);
