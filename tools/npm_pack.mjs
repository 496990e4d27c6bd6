// Builds wgc's npm package from the browser build: stages the module files
// of build/web with a package.json whose version is include/wgc.h's, and
// runs `npm pack` into the output folder. Prints the tarball's path.
//   node tools/npm_pack.mjs build/web build
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const [web = 'build/web', out = 'build'] = process.argv.slice(2);
const header = readFileSync('include/wgc.h', 'utf8');
const part = (p) => {
  const m = header.match(new RegExp(`^#define WGC_VERSION_${p} (\\d+)$`, 'm'));
  if (!m) throw new Error(`include/wgc.h has no WGC_VERSION_${p}`);
  return m[1];
};
const version = `${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}`;

const stage = resolve(out, 'npm/package');
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
// The ES module, its GPU layer, the op constants, typings and the wasm;
// the wasm32 library and header for C programs linked into a module.
const files = ['wgc.js', 'gpu.js', 'ops.js', 'wgc.d.ts', 'ops.d.ts', 'wgc.wasm', 'wgc-threads.wasm',
               'wgc-relaxed.wasm', 'wgc-threads-relaxed.wasm', 'lib/libwgc.a', 'lib/libwgc-relaxed.a',
               'include/wgc.h'];
for (const f of files) cpSync(join(web, f), join(stage, f));
cpSync('CHANGELOG.md', join(stage, 'CHANGELOG.md'));
writeFileSync(join(stage, 'README.md'), `# wgc ${version}

BLAS and DNN operations (GEMM, conv2d, pooling, attention, reductions,
normalizations, element-wise, data movement) as WGSL kernels on WebGPU,
with a CPU backend (WebAssembly) that is the reference and the fallback.

\`\`\`js
import { create, ROW_MAJOR, NO_TRANS } from 'wgc';
const ctx = await create();              // WebGPU where there is an adapter, else the CPU
const a = ctx.alloc(4 * 6);
ctx.upload(a, new Float32Array([1, 2, 3, 4, 5, 6]));
const x = await ctx.download(a, 6);      // a Float32Array
\`\`\`

In Node, pass a GPU object: \`create({ gpu })\` with the \`webgpu\` package's
\`create([])\`; without one, \`create({ backend: BACKEND_CPU })\`. Deno has
WebGPU built in. The wasm files are found with
\`new URL('./wgc.wasm', import.meta.url)\` and the like, so bundlers copy
them. wgc.js loads the fastest form the page runs: in a cross-origin
isolated page (COOP and COEP headers) \`wgc-threads.wasm\`, whose CPU
backend runs on every core; where the engine has relaxed SIMD (Chrome 114,
Node 22) \`wgc-relaxed.wasm\`, whose CPU GEMM and attention fuse their
multiply-adds; \`wgc-threads-relaxed.wasm\` where both hold; else
\`wgc.wasm\`. \`moduleOptions({ relaxedSimd: false })\` before the first
call keeps every result's bits the same on every machine.
`);
writeFileSync(join(stage, 'package.json'), JSON.stringify({
  name: 'wgc',
  version,
  description: 'BLAS/DNN operations on WebGPU in the browser, Deno and Node, with a WebAssembly CPU fallback',
  type: 'module',
  main: './wgc.js',
  types: './wgc.d.ts',
  exports: {
    '.': { types: './wgc.d.ts', default: './wgc.js' },
    './wgc.wasm': './wgc.wasm',
    './wgc-threads.wasm': './wgc-threads.wasm',
    './wgc-relaxed.wasm': './wgc-relaxed.wasm',
    './wgc-threads-relaxed.wasm': './wgc-threads-relaxed.wasm',
    './lib/libwgc.a': './lib/libwgc.a',
    './lib/libwgc-relaxed.a': './lib/libwgc-relaxed.a',
    './include/wgc.h': './include/wgc.h',
    './package.json': './package.json',
  },
  files: [...files, 'README.md', 'CHANGELOG.md'],
  sideEffects: false,
  engines: { node: '>=20' },
}, null, 2) + '\n');
const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', resolve(out)],
                          { cwd: stage, encoding: 'utf8' }).trim().split('\n').pop();
console.log(resolve(out, name));
