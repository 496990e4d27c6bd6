// The demo page: a transformer block and a GEMM size sweep on the WebGPU
// context, compared with the CPU backend. Operations a backend does not
// support yet show their error.
import * as W from './wgc.js';

const $ = (id) => document.getElementById(id);
const SEQ = 64, D = 128, HEADS = 4, HD = D / HEADS, FF = 4 * D;

let seed = 7;
function rand() { // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const randoms = (n, scale) => Float32Array.from({ length: n }, () => (2 * rand() - 1) * scale);

// Inputs and weights, the same for both backends.
const INPUTS = {
  x: randoms(SEQ * D, 1),
  wq: randoms(HEADS * D * HD, 1 / Math.sqrt(D)),
  wk: randoms(HEADS * D * HD, 1 / Math.sqrt(D)),
  wv: randoms(HEADS * D * HD, 1 / Math.sqrt(D)),
  wo: randoms(HEADS * HD * D, 1 / Math.sqrt(D)),
  w1: randoms(D * FF, 1 / Math.sqrt(D)),
  w2: randoms(FF * D, 1 / Math.sqrt(FF)),
};

// Issues the block on ctx; returns the addresses of its outputs.
function issueBlock(ctx, m) {
  const R = W.ROW_MAJOR, N = W.NO_TRANS;
  // per head h: Q[h] = x · Wq[h]  ([SEQ, D] · [D, HD]), x shared (stride 0)
  for (const [w, out] of [[m.wq, m.q], [m.wk, m.k], [m.wv, m.v]])
    ctx.gemmBatched(R, N, N, SEQ, HD, D, 1, m.x, D, 0, w, HD, D * HD, 0, out, HD, SEQ * HD, HEADS);
  ctx.attention({ batch: 1, heads: HEADS, heads_kv: HEADS, seq_q: SEQ, seq_kv: SEQ, head_dim: HD,
                  scale: 1 / Math.sqrt(HD), causal: W.CAUSAL_TOP_LEFT }, m.q, m.k, m.v, m.o);
  // per-head output projections, summed over heads by a reduction
  ctx.gemmBatched(R, N, N, SEQ, D, HD, 1, m.o, HD, SEQ * HD, m.wo, D, HD * D, 0, m.parts, D, SEQ * D, HEADS);
  ctx.reduce(W.REDUCE_SUM, m.parts, m.attn, [HEADS, SEQ, D], 3, 0);
  ctx.binary(W.BINARY_ADD, m.x, m.attn, m.h1, SEQ * D);
  ctx.gemm(R, N, N, SEQ, FF, D, 1, m.h1, D, m.w1, FF, 0, m.u, FF);
  ctx.unary(W.UNARY_GELU, m.u, m.u, SEQ * FF);
  ctx.gemm(R, N, N, SEQ, D, FF, 1, m.u, FF, m.w2, D, 0, m.y, D);
  ctx.binary(W.BINARY_ADD, m.h1, m.y, m.y, SEQ * D);
  ctx.reduce(W.REDUCE_MEAN, m.y, m.mean, [SEQ, D], 2, 1);
}

// Runs the block on ctx: result arrays and timings (first run, then the
// best of three).
async function runBlock(ctx) {
  const m = {};
  const sizes = { q: SEQ * D, k: SEQ * D, v: SEQ * D, o: SEQ * D, parts: HEADS * SEQ * D,
                  attn: SEQ * D, h1: SEQ * D, u: SEQ * FF, y: SEQ * D, mean: SEQ };
  try {
    for (const [name, data] of Object.entries(INPUTS)) {
      m[name] = ctx.alloc(4 * data.length);
      ctx.upload(m[name], data);
    }
    for (const [name, n] of Object.entries(sizes)) m[name] = ctx.alloc(4 * n);
    const times = [];
    let y, mean;
    for (let rep = 0; rep < 4; rep++) {
      const t0 = performance.now();
      issueBlock(ctx, m);
      [y, mean] = await Promise.all([ctx.download(m.y, SEQ * D), ctx.download(m.mean, SEQ)]);
      times.push(performance.now() - t0);
    }
    return { y, mean, first: times[0], best: Math.min(...times.slice(1)) };
  } finally {
    for (const p of Object.values(m)) ctx.free(p);
  }
}

const maxAbsDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const errText = (e) => `${e.status ?? e.name}: ${e.message}`;

async function blockSection(gpu, cpu) {
  const rows = [];
  const results = {};
  for (const [label, ctx] of [['webgpu', gpu], ['cpu', cpu]]) {
    if (!ctx) continue;
    try {
      results[label] = await runBlock(ctx);
      const r = results[label];
      rows.push(`<tr><td class="l">${label}</td><td>${fmt(r.first)}</td><td>${fmt(r.best)}</td>` +
                `<td>${fmt(r.mean[0], 4)}</td><td class="l" id="diff-${label}"></td></tr>`);
    } catch (e) {
      rows.push(`<tr><td class="l">${label}</td><td colspan="4" class="l err">${escape(errText(e))}</td></tr>`);
    }
  }
  $('block').innerHTML =
    `<table><tr><th class="l">backend</th><th>first run (ms)</th><th>best of 3 (ms)</th>` +
    `<th>mean[0]</th><th class="l">max |webgpu − cpu|</th></tr>${rows.join('')}</table>`;
  if (results.webgpu && results.cpu) {
    const d = Math.max(maxAbsDiff(results.webgpu.y, results.cpu.y), maxAbsDiff(results.webgpu.mean, results.cpu.mean));
    const cell = $('diff-webgpu');
    cell.textContent = `${d.toExponential(2)} ${d < 1e-3 ? '(agrees)' : '(DIFFERS)'}`;
    cell.className = `l ${d < 1e-3 ? 'ok' : 'err'}`;
  }
  return results;
}

// Times n×n GEMMs on ctx: GFLOP/s, or an error.
async function gemmRate(ctx, n) {
  const a = ctx.alloc(4 * n * n), b = ctx.alloc(4 * n * n), c = ctx.alloc(4 * n * n);
  try {
    ctx.upload(a, randoms(n * n, 1));
    ctx.upload(b, randoms(n * n, 1));
    const once = () => ctx.gemm(W.ROW_MAJOR, W.NO_TRANS, W.NO_TRANS, n, n, n, 1, a, n, b, n, 0, c, n);
    once();
    await ctx.synchronize(); // warm-up: compiles the kernels
    let reps = 0;
    const t0 = performance.now();
    do {
      once();
      reps++;
      await ctx.synchronize();
    } while (performance.now() - t0 < 250 && reps < 50);
    const s = (performance.now() - t0) / 1000;
    return { rate: (2 * n * n * n * reps) / s / 1e9, ms: (1000 * s) / reps };
  } finally {
    ctx.free(a); ctx.free(b); ctx.free(c);
  }
}

async function sweepSection(gpu, cpu) {
  const sizes = [32, 64, 128, 256, 512, 1024];
  const series = { webgpu: [], cpu: [] };
  const rows = [];
  const lastMs = {};
  for (const n of sizes) {
    const cells = [];
    for (const [label, ctx] of [['webgpu', gpu], ['cpu', cpu]]) {
      // a size 8x the work of one that took over 0.6 s is skipped
      if (!ctx || lastMs[label] > 600) { cells.push('<td colspan="2">skipped</td>'); continue; }
      try {
        const r = await gemmRate(ctx, n);
        lastMs[label] = r.ms;
        series[label].push([n, r.rate]);
        cells.push(`<td>${fmt(r.ms, 2)}</td><td>${fmt(r.rate, 2)}</td>`);
      } catch (e) {
        lastMs[label] = Infinity;
        cells.push(`<td colspan="2" class="l err">${escape(errText(e)).slice(0, 120)}</td>`);
      }
    }
    rows.push(`<tr><td>${n}</td>${cells.join('')}</tr>`);
    $('sweep').innerHTML =
      `<table><tr><th>n</th><th>webgpu ms</th><th>webgpu GFLOP/s</th><th>cpu ms</th><th>cpu GFLOP/s</th></tr>` +
      `${rows.join('')}</table>`;
    drawChart(series, sizes);
  }
  return series;
}

// GFLOP/s against n (log2 axis), one line per backend.
function drawChart(series, sizes) {
  const cv = $('chart'), g = cv.getContext('2d');
  const L = 60, R = 20, T = 20, B = 40, w = cv.width - L - R, h = cv.height - T - B;
  g.clearRect(0, 0, cv.width, cv.height);
  g.font = '12px system-ui, sans-serif';
  const all = Object.values(series).flat().map(([, r]) => r).filter((r) => r > 0);
  // log scales: n by powers of two, GFLOP/s by decades
  const lo = Math.floor(Math.log10(Math.min(1, ...all))), hi = Math.ceil(Math.log10(Math.max(1, ...all)));
  const lx = (n) => L + (w * Math.log2(n / sizes[0])) / Math.log2(sizes.at(-1) / sizes[0]);
  const ly = (r) => T + h - (h * (Math.log10(Math.max(r, 10 ** lo)) - lo)) / (hi - lo);
  g.strokeStyle = '#999';
  g.fillStyle = '#333';
  g.beginPath();
  g.moveTo(L, T); g.lineTo(L, T + h); g.lineTo(L + w, T + h);
  g.stroke();
  g.textAlign = 'center';
  for (const n of sizes) g.fillText(String(n), lx(n), T + h + 16);
  g.fillText('n (square GEMM)', L + w / 2, T + h + 34);
  g.textAlign = 'right';
  for (let e = lo; e <= hi; e++) {
    const r = 10 ** e;
    g.fillText(String(e < 0 ? r.toFixed(-e) : r), L - 6, ly(r) + 4);
    g.strokeStyle = '#eee';
    g.beginPath(); g.moveTo(L + 1, ly(r)); g.lineTo(L + w, ly(r)); g.stroke();
  }
  g.save();
  g.translate(14, T + h / 2); g.rotate(-Math.PI / 2); g.textAlign = 'center';
  g.fillText('GFLOP/s', 0, 0);
  g.restore();
  const colors = { webgpu: '#1f6fd1', cpu: '#d1701f' };
  let ly0 = T + 6;
  for (const [label, pts] of Object.entries(series)) {
    g.strokeStyle = g.fillStyle = colors[label];
    g.lineWidth = 2;
    g.beginPath();
    pts.forEach(([n, r], i) => (i ? g.lineTo(lx(n), ly(r)) : g.moveTo(lx(n), ly(r))));
    g.stroke();
    for (const [n, r] of pts) { g.beginPath(); g.arc(lx(n), ly(r), 3, 0, 2 * Math.PI); g.fill(); }
    g.textAlign = 'left';
    g.fillRect(L + 12, ly0 - 8, 10, 10);
    g.fillStyle = '#333';
    g.fillText(label, L + 28, ly0 + 1);
    ly0 += 16;
    g.lineWidth = 1;
  }
}

function escape(s) {
  return String(s).replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]);
}

async function main() {
  let gpu = null, cpu = null;
  try {
    gpu = await W.create({ backend: W.BACKEND_WEBGPU });
    $('adapter').textContent = `${gpu.adapterName} (webgpu)`;
  } catch (e) {
    $('adapter').innerHTML = `<span class="err">${escape(errText(e))}</span> — showing the CPU backend only`;
  }
  cpu = await W.create({ backend: W.BACKEND_CPU });
  const run = async () => {
    $('again').disabled = true;
    const block = await blockSection(gpu, cpu);
    const sweep = await sweepSection(gpu, cpu);
    $('again').disabled = false;
    return { block, sweep };
  };
  $('again').onclick = run;
  return run();
}

window.__demoDone = main().catch((e) => {
  document.body.insertAdjacentHTML('beforeend', `<p class="err">${escape(errText(e))}</p>`);
});
