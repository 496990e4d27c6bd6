// Runs the browser tests (tests.js) in headless Chromium through
// playwright-core: once on a normal page (WebGPU on SwiftShader vs the CPU
// backend) and once on a page whose navigator.gpu was removed by an init
// script (the CPU fallback); then the demo page's decoder (decoder.js).
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

const web = resolve(root, process.env.WGC_WEB || 'build/web');
if (!existsSync(resolve(web, 'wgc.wasm'))) {
  console.log(`FAIL setup: ${web}/wgc.wasm is missing (make wasm)`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const { server, url } = await serve(web, 0, { '/tests/': resolve(root, 'tests/browser') }, { faults: true });
let browser;
try {
  browser = await launch();
  const filter = process.env.WGC_FILTER ? `filter=${encodeURIComponent(process.env.WGC_FILTER)}` : '';
  await runPage(browser, `${url}tests/test.html?${filter}`, 'page');
  // SwiftShader spends most of a minute compiling the decoder's kernels.
  await runPage(browser, `${url}tests/decoder.html?${filter}`, 'demo page', null, 300000);
  await runPage(browser, `${url}tests/test.html?mode=fallback&${filter}`, 'fallback page',
                'delete Navigator.prototype.gpu;');
} catch (e) {
  line(`FAIL setup: ${String(e.message ?? e).split('\n')[0]}`);
} finally {
  await browser?.close();
  server.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed || !passed ? 1 : 0);
