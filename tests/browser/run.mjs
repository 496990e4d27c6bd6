// Runs the browser tests (tests.js) in headless Chromium through
// playwright-core: once on a normal page (WebGPU on SwiftShader vs the CPU
// backend) and once on a page whose navigator.gpu was removed by an init
// script (the CPU fallback), that again cross-origin isolated (the CPU
// backend on worker threads); then the demo page's decoder (decoder.js).
// Prints one line per test and then "N passed, N failed"; exits 1 on any
// failure. WebGPU missing is a failure.
//   node tests/browser/run.mjs        (after make wasm)
// Environment: CHROMIUM (default /usr/bin/chromium), WGC_WEB (the built
// module's folder, default build/web), WGC_FILTER (run only the tests whose
// name contains it).
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '../../tools/serve.mjs';
import { launch } from '../../tools/chromium.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PAGE_TIMEOUT_MS = 170000;

let passed = 0, failed = 0;
const line = (l) => {
  console.log(l);
  if (/^ok /.test(l)) passed++;
  else if (/^FAIL /.test(l)) failed++;
};

async function runPage(browser, url, name, initScript, timeoutMs = PAGE_TIMEOUT_MS) {
  const context = await browser.newContext();
  if (initScript) await context.addInitScript(initScript);
  const page = await context.newPage();
  await page.exposeFunction('__wgcLine', (l) => { if (!/^\d+ passed, \d+ failed$/.test(l)) line(l); });
  page.on('pageerror', (e) => line(`FAIL ${name}: uncaught ${String(e.message ?? e).split('\n')[0]}`));
  try {
    await page.goto(url);
    // The predicate must not return the promise itself: Playwright would
    // wait for the whole run under this start-up timeout.
    await page.waitForFunction(() => window.__wgcFinished !== undefined, null, { timeout: 30000 });
    let timer;
    await Promise.race([
      page.evaluate(() => window.__wgcFinished),
      new Promise((_, no) => {
        timer = setTimeout(() => no(new Error(`timed out after ${timeoutMs / 1000} s`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
  } catch (e) {
    line(`FAIL ${name}: the page did not finish: ${String(e.message ?? e).split('\n')[0]}`);
  } finally {
    await context.close();
  }
}

// The MiniLM demo page (minilm.html): its first batch must finish with the
// CPU-backend check passing (that backend on every core: the page is
// served cross-origin isolated), paraphrases scoring above unrelated pairs.
async function minilmDemo(browser, url) {
  const name = 'minilm demo page';
  const page = await browser.newPage();
  try {
    // cross-origin isolated, as a page gets threads: minilm-threads.wasm
    await page.goto(`${url}minilm.html?isolated`);
    await page.waitForFunction(() => window.__minilmResult !== undefined, null, { timeout: 300000 });
    const r = await page.evaluate(() => window.__minilmResult);
    if (r.error) throw new Error(r.error);
    const [para, unrelated] = [r.sims[0][1], r.sims[0][2]];
    if (!r.ok) throw new Error(`WebGPU and the CPU backend differ by ${r.worst}`);
    if (r.weightType !== 'f32') throw new Error(`the page loaded ${r.weightType} weights, want f32 by default`);
    const threads = Math.min(16, await page.evaluate(() => navigator.hardwareConcurrency));
    if (r.cpuAdapter !== `cpu (${threads} thread${threads > 1 ? 's' : ''})`)
      throw new Error(`the CPU backend is "${r.cpuAdapter}" in an isolated page, want ${threads} threads`);
    // the adapter's name crosses shared memory there too
    if (!/swiftshader/i.test(r.gpuAdapter))
      throw new Error(`the WebGPU adapter is named "${r.gpuAdapter}" in an isolated page`);
    // the chart's records: one per operation of the pass (embeddings 6,
    // 7 per layer, pooling and normalisation 4), each timed
    if (r.records.length !== 6 + 7 * 6 + 4 || !r.records.every((x) => x.duration_us > 0 && /^wgc_/.test(x.name)))
      throw new Error(`the chart's timing records: ${JSON.stringify(r.records.slice(0, 3))} (${r.records.length})`);
    if (!(para > 0.8 && unrelated < 0.3))
      throw new Error(`"${r.sentences[0]}" scores ${para} with its paraphrase and ${unrelated} with "${r.sentences[2]}"`);
    line(`ok ${name}: ${r.sentences.length} sentences, WebGPU ${r.gpuMs.toFixed(0)} ms (${r.gpuAdapter}), CPU backend ` +
         `${r.cpuMs.toFixed(0)} ms (${r.cpuAdapter}), paraphrase ${para.toFixed(2)}, unrelated ${unrelated.toFixed(2)}, ` +
         `backends within ${r.worst.toExponential(1)}`);
  } catch (e) {
    line(`FAIL ${name}: ${String(e.message ?? e).split('\n')[0]}`);
  } finally {
    await page.close();
  }
}

const web = resolve(root, process.env.WGC_WEB || 'build/web');
if (!existsSync(resolve(web, 'wgc.wasm'))) {
  console.log(`FAIL setup: ${web}/wgc.wasm is missing (make wasm)`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
// /model/: all-MiniLM-L6-v2's files (tools/bootstrap.sh model), /data/:
// the references the tests compare with.
const { server, url } = await serve(web, 0, {
  '/tests/': resolve(root, 'tests/browser'), '/model/': resolve(root, 'third_party/minilm'),
  '/data/': resolve(root, 'tests/data'),
}, { faults: true });
let browser;
try {
  browser = await launch();
  const filter = process.env.WGC_FILTER ? `filter=${encodeURIComponent(process.env.WGC_FILTER)}` : '';
  await runPage(browser, `${url}tests/test.html?${filter}`, 'page');
  // SwiftShader spends most of a minute compiling the decoder's kernels.
  await runPage(browser, `${url}tests/decoder.html?${filter}`, 'demo page', null, 300000);
  await runPage(browser, `${url}tests/test.html?mode=fallback&${filter}`, 'fallback page',
                'delete Navigator.prototype.gpu;');
  // the same, cross-origin isolated: wgc-threads.wasm, whose CPU backend
  // runs its tasks on Web Workers too
  await runPage(browser, `${url}tests/test.html?mode=fallback&isolated&${filter}`, 'threads page',
                'delete Navigator.prototype.gpu;');
  // all-MiniLM-L6-v2's C code in the page, on both backends, and the
  // MiniLM demo page as a visitor sees it.
  await runPage(browser, `${url}tests/minilm.html?${filter}`, 'minilm page', null, 600000);
  if ('minilm demo page'.includes(process.env.WGC_FILTER ?? '')) await minilmDemo(browser, url);
} catch (e) {
  line(`FAIL setup: ${String(e.message ?? e).split('\n')[0]}`);
} finally {
  await browser?.close();
  server.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed || !passed ? 1 : 0);
