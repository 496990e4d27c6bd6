// Installs the npm package (make npm's tarball) into a fresh project and runs
// the same checks (checks.mjs) on every host the package promises:
//   - a page built by a real bundler (Vite), in headless Chromium, on WebGPU
//     (SwiftShader) and on the CPU backend;
//   - Deno, on its built-in WebGPU;
//   - Node with the webgpu package (Dawn) as the GPU, and Node with no GPU
//     on the CPU backend.
// Every host must also exit by itself once its work is done.
// Prints one line per check and ends on "N passed, N failed".
//   node tests/npm/run.mjs TARBALL
// The pinned tools (Vite, Deno, webgpu) are installed from npm once into
// build/npm-tools (WGC_NPM_TOOLS).
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '../../tools/serve.mjs';
import { launch } from '../../tools/chromium.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const TOOLS = { vite: '7.3.8', deno: '2.9.6', webgpu: '0.6.2' };
const HOST_TIMEOUT_MS = 240000;
// Dawn finds no usable Vulkan feature set in lavapipe; SwiftShader's works.
const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

let passed = 0, failed = 0;
const line = (l) => {
  if (/^ok /.test(l)) passed++;
  else if (/^FAIL /.test(l)) failed++;
  else if (!/^ {3}/.test(l)) return; // only results and notes
  console.log(l);
};

const tarball = resolve(process.argv[2] ?? '');
if (!process.argv[2] || !existsSync(tarball)) {
  console.log(`FAIL setup: the package tarball ${tarball} is missing (make npm)`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const version = JSON.parse(execFileSync('tar', ['xzf', tarball, '-O', 'package/package.json'])).version;

// ---- the pinned tools, once ----
const tools = resolve(root, process.env.WGC_NPM_TOOLS || 'build/npm-tools');
const npm = (args, cwd) => execFileSync('npm', ['--no-audit', '--no-fund', '--loglevel=error', ...args],
                                        { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
const toolVersion = (name) => {
  try {
    return JSON.parse(readFileSync(join(tools, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
};
if (Object.entries(TOOLS).some(([n, v]) => toolVersion(n) !== v)) {
  mkdirSync(tools, { recursive: true });
  writeFileSync(join(tools, 'package.json'), '{"private": true}\n');
  npm(['install', '--no-save', ...Object.entries(TOOLS).map(([n, v]) => `${n}@${v}`)], tools);
}
const bin = (name) => join(tools, 'node_modules/.bin', name);

// ---- a fresh project with the package installed from the tarball ----
const project = resolve(root, 'build/npm-test');
rmSync(project, { recursive: true, force: true });
mkdirSync(project, { recursive: true });
writeFileSync(join(project, 'package.json'),
              JSON.stringify({ name: 'wgc-npm-test', private: true, type: 'module' }) + '\n');
npm(['install', tarball], project);
cpSync(join(here, 'checks.mjs'), join(project, 'checks.mjs'));
// `npm install webgpu`, from the pinned copy (its own dependencies resolve
// from there).
symlinkSync(join(tools, 'node_modules/webgpu'), join(project, 'node_modules/webgpu'), 'dir');

// Runs cmd in the project; resolves to its output (stdout and stderr),
// exit code and the signal that ended it (SIGKILL past HOST_TIMEOUT_MS).
function run(cmd, args, env = {}) {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: project, env: { ...process.env, ...env } });
    let text = '';
    child.stdout.on('data', (d) => { text += d; });
    child.stderr.on('data', (d) => { text += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), HOST_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ text, code, signal });
    });
  });
}

// Runs a host's script; its lines are results; it must exit by itself.
async function host(name, cmd, args, env = {}) {
  const { text, code, signal } = await run(cmd, args, env);
  const lines = text.split('\n');
  lines.filter((l) => /^(ok|FAIL) |^ {3}/.test(l)).forEach(line);
  if (signal)
    line(`FAIL ${name}: did not exit within ${HOST_TIMEOUT_MS / 1000} s (${lines.slice(-3).join(' | ')})`);
  else if (code !== 0)
    line(`FAIL ${name}: exit status ${code}: ${lines.filter(Boolean).slice(-3).join(' | ')}`);
  else if (!lines.some((l) => /^ok /.test(l)))
    line(`FAIL ${name}: ran no check: ${lines.filter(Boolean).slice(-3).join(' | ')}`);
  else
    line(`ok ${name}: exited by itself`);
}

// ---- Node: no GPU (CPU backend), and the webgpu package (Dawn) ----
writeFileSync(join(project, 'node-cpu.mjs'), `import * as W from 'wgc';
import { runChecks } from './checks.mjs';
await runChecks(W, 'node, no GPU', { backend: W.BACKEND_CPU }, console.log, process.argv[2]);
`);
writeFileSync(join(project, 'node-webgpu.mjs'), `import * as W from 'wgc';
import { runChecks } from './checks.mjs';
import { create, globals } from 'webgpu';
Object.assign(globalThis, globals);
const gpu = create([]);
await runChecks(W, 'node, webgpu package', { backend: W.BACKEND_WEBGPU, gpu }, console.log, process.argv[2]);
`);
await host('node, no GPU', process.execPath, ['node-cpu.mjs', version]);
await host('node, webgpu package', process.execPath, ['node-webgpu.mjs', version],
           { VK_ICD_FILENAMES: SWIFTSHADER_ICD });

// ---- Deno: its own WebGPU, the package from node_modules ----
writeFileSync(join(project, 'deno.mjs'), `import * as W from 'wgc';
import { runChecks } from './checks.mjs';
await runChecks(W, 'deno', { backend: W.BACKEND_WEBGPU }, console.log, Deno.args[0]);
await runChecks(W, 'deno, CPU backend', { backend: W.BACKEND_CPU }, console.log, Deno.args[0]);
`);
await host('deno', bin('deno'), ['run', '--quiet', '--allow-read', 'deno.mjs', version],
           { DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' });

// ---- the README's examples, word for word ----
// Each js block of README.md that opens with "// NAME.mjs:" runs on the
// host its name says, and must print the values its "// [values]" comment
// names.
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const examples = [...readme.matchAll(/```js\n(\/\/ ([\w-]+\.mjs):[^\n]*\n[\s\S]*?)```/g)];
if (examples.length < 3) line(`FAIL README: ${examples.length} runnable examples found, want 3`);
for (const [, code, file] of examples) {
  writeFileSync(join(project, file), code);
  const want = code.match(/\/\/ \[([^\]]+)\]/)?.[1] ?? '(no "// [values]" comment)';
  const how = file.startsWith('deno')
    ? [bin('deno'), ['run', '--quiet', '--allow-read', file], { DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' }]
    : [process.execPath, [file], file.includes('webgpu') ? { VK_ICD_FILENAMES: SWIFTSHADER_ICD } : {}];
  const out = await run(...how);
  const printed = out.text.replace(/\s+/g, ' ');
  if (out.signal || out.code !== 0)
    line(`FAIL README ${file}: ${out.signal ? 'did not exit' : `exit status ${out.code}`}: ${printed.slice(-200)}`);
  else if (!printed.includes(want))
    line(`FAIL README ${file}: printed "${printed.trim().slice(0, 200)}", not ${want}`);
  else
    line(`ok README ${file}: prints ${want} and exits`);
}

// ---- a page built with Vite, in Chromium ----
writeFileSync(join(project, 'index.html'),
              '<!doctype html><meta charset="utf-8"><pre id="out"></pre><script type="module" src="./main.js"></script>\n');
writeFileSync(join(project, 'main.js'), `import * as W from 'wgc';
import { runChecks } from './checks.mjs';
const version = new URLSearchParams(location.search).get('version');
const lines = [];
const report = (l) => { lines.push(l); document.getElementById('out').textContent += l + '\\n'; };
window.__wgcDone = (async () => {
  await runChecks(W, 'vite page, WebGPU', { backend: W.BACKEND_WEBGPU }, report, version);
  await runChecks(W, 'vite page, CPU backend', { backend: W.BACKEND_CPU }, report, version);
  return lines;
})();
`);
try {
  execFileSync(process.execPath, [bin('vite'), 'build', '--logLevel', 'error', '--outDir', 'dist'],
               { cwd: project, stdio: ['ignore', 'ignore', 'pipe'] });
  const assets = readdirSync(join(project, 'dist/assets'));
  // every form of the module (named NAME-HASH.wasm, the hash 8 characters
  // of base64url, which may hold a '-' itself), so that any can load
  const forms = ['wgc', 'wgc-threads', 'wgc-relaxed', 'wgc-threads-relaxed'];
  const stem = (a) => a.match(/^(.*)-[A-Za-z0-9_-]{8}\.wasm$/)?.[1];
  const copied = forms.filter((f) => assets.some((a) => stem(a) === f));
  if (copied.length === forms.length) line('ok vite: the build copied the four forms of wgc.wasm into its assets');
  else line(`FAIL vite: the built assets hold ${copied.join(', ') || 'no form'} of ${forms.join(', ')} (${assets.join(', ')})`);
  const { server, url } = await serve(join(project, 'dist'));
  let browser;
  try {
    browser = await launch();
    const page = await browser.newPage();
    page.on('pageerror', (e) => line(`FAIL vite page: uncaught ${String(e.message ?? e).split('\n')[0]}`));
    await page.goto(`${url}?version=${version}`);
    await page.waitForFunction(() => window.__wgcDone !== undefined, null, { timeout: 30000 });
    (await page.evaluate(() => window.__wgcDone)).forEach(line);
  } finally {
    await browser?.close();
    server.close();
  }
} catch (e) {
  line(`FAIL vite page: ${String(e.stderr ?? e.message ?? e).split('\n').filter(Boolean).slice(0, 3).join(' | ')}`);
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed || !passed ? 1 : 0);
