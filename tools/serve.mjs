// A tiny static file server on 127.0.0.1 for the browser module, its demo
// and its tests (WebGPU needs a secure context: localhost is one).
//   node tools/serve.mjs ROOT [PORT [/PREFIX/=DIR ...]]
// (PORT 0 or busy: a free port; /PREFIX/=DIR serves DIR under /PREFIX/).
// As a module: serve(root, port, mounts, options) resolves to {server, url};
// mounts maps URL prefixes ("/tests/") to further folders. options.faults
// adds /faults/KIND/..., the root again but with wgc.wasm broken, and each
// of its other forms (wgc-threads-relaxed.wasm...) alike, for the tests of
// load errors: KIND missing (404), 500, mime (the real module as
// text/plain) or garbage (not a module, as application/wasm); and expose,
// the real module with a wgc.js that also exports its module's state
// (exposedModule(), for the tests of a trap).
// A page asked for with ?isolated in its query is served cross-origin
// isolated (COOP same-origin, COEP require-corp), as wasm threads need.
// Every other file carries the headers too: a worker's script decides its
// own isolation, and for the rest (same-origin) they change nothing.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { resolve, extname, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8', '.ts': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm', '.json': 'application/json', '.css': 'text/css',
  '.png': 'image/png', '.svg': 'image/svg+xml', '.txt': 'text/plain; charset=utf-8',
};

const FAULTS = {
  missing: (res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n'),
  500: (res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error\n'),
  mime: (res, body) => res.writeHead(200, { 'content-type': 'text/plain' }).end(body),
  garbage: (res) => res.writeHead(200, { 'content-type': 'application/wasm' }).end('this is not wasm\n'),
};

export function serve(root, port = 0, mounts = {}, { faults = false } = {}) {
  const roots = [...Object.entries(mounts), ['/', root]].map(([prefix, dir]) => [prefix, resolve(dir)]);
  const server = createServer(async (req, res) => {
    const asked = new URL(req.url, 'http://x');
    let path = decodeURIComponent(asked.pathname);
    const page = path.endsWith('/') || extname(path) === '.html';
    const isolation = !page || asked.searchParams.has('isolated')
      ? { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' } : {};
    const fault = faults && /^\/faults\/([a-z0-9]+)\/(.*)$/.exec(path);
    if (fault && (FAULTS[fault[1]] || fault[1] === 'expose')) {
      if (FAULTS[fault[1]] && /^wgc(-threads)?(-relaxed)?\.wasm$/.test(fault[2])) {
        FAULTS[fault[1]](res, await readFile(resolve(root, fault[2])).catch(() => ''));
        return;
      }
      if (fault[1] === 'expose' && fault[2] === 'wgc.js') {
        const body = await readFile(resolve(root, 'wgc.js'), 'utf8');
        res.writeHead(200, { 'content-type': TYPES['.js'], 'cache-control': 'no-store', ...isolation });
        res.end(`${body}\nexport const exposedModule = () => W;\n`);
        return;
      }
      path = '/' + fault[2];
    }
    const [prefix, dir] = roots.find(([p]) => path.startsWith(p));
    let file = resolve(dir, '.' + path.slice(prefix.length - 1));
    if (file !== dir && !file.startsWith(dir + sep)) { res.writeHead(403).end(); return; }
    if (path.endsWith('/')) file = resolve(file, 'index.html');
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
                           'cache-control': 'no-store', ...isolation });
      res.end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  return new Promise((ok, fail) => {
    const listen = (p) => server.listen(p, '127.0.0.1');
    server.once('listening', () => ok({ server, url: `http://127.0.0.1:${server.address().port}/` }));
    server.on('error', (e) => (e.code === 'EADDRINUSE' && port ? listen(0) : fail(e)));
    listen(port);
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [root = 'build/web', port = '8080', ...more] = process.argv.slice(2);
  const mounts = Object.fromEntries(more.map((m) => m.split('=')));
  const { url } = await serve(root, Number(port), mounts);
  console.log(`serving ${root} at ${url} (Ctrl-C stops)`);
  console.log('  a page with ?isolated in its URL is cross-origin isolated: the CPU backend on every core');
  for (const [prefix, dir] of Object.entries(mounts)) console.log(`  ${url.slice(0, -1)}${prefix} -> ${dir}`);
}
