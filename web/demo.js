// The demo page: the GPT-2-style decoder of gpt.js on the WebGPU context,
// checked against the CPU backend at every token, then a GEMM size sweep.
// Operations a backend does not support yet show their error.
import * as W from './wgc.js';
import * as GPT from './gpt.js';
import { drawOpChart } from './opchart.js';

const $ = (id) => document.getElementById(id);

let seed = 7;
function rand() { // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const randoms = (n, scale) => Float32Array.from({ length: n }, () => (2 * rand() - 1) * scale);

const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const errText = (e) => `${e.status ?? e.name}: ${e.message}`;

// Runs the decoder, showing each token as it arrives; resolves to
// gpt.js's summary. Without WebGPU it runs the CPU backend against itself.
async function decoderSection(gpu, cpu) {
  $('prompt').textContent = GPT.PROMPT;
  $('text').textContent = '';
  $('steps').textContent = '';
  $('tps').textContent = '–';
  $('check').textContent = 'running…';
  $('check').className = '';
  const tokens = [];
  try {
    const r = await GPT.run(gpu ?? cpu, cpu, (st) => {
      tokens.push(st.token);
      $('text').textContent = GPT.escapeBytes(tokens);
      if (st.i) $('tps').textContent = fmt(st.tokensPerSecond);
      const cell = document.createElement('span');
      cell.title = `token ${st.i + 1}: byte ${st.token}, logits differ by ${st.diff.toExponential(2)}`;
      if (!st.ok) cell.className = 'bad';
      $('steps').append(cell);
    });
    drawOpChart($('opchart'), r.stepRecords, `one decoding step on ${gpu ? 'WebGPU' : 'the CPU backend'}`);
    const bad = r.steps.filter((st) => !st.ok).length;
    $('tps').textContent = fmt(r.tokensPerSecond);
    $('check').textContent = `${bad ? `${bad} of ${r.steps.length} tokens DIFFER` : `all ${r.steps.length} tokens agree`}` +
      ` with the CPU backend (largest logit difference ${r.worst.toExponential(2)}, allowed ${r.tol.toExponential(2)};` +
      ` prompt of ${GPT.PROMPT.length} tokens in ${fmt(r.promptMs)} ms; first pass, compiling ${r.kernels} kernels,` +
      ` ${fmt(r.warmMs / 1000)} s; CPU backend ${fmt(r.cpuMs / 1000)} s)`;
    $('check').className = r.ok ? 'ok' : 'err';
    return r;
  } catch (e) {
    $('check').textContent = errText(e);
    $('check').className = 'err';
    return { ok: false, error: errText(e), tokens, steps: [] };
  }
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
    const gpt = await decoderSection(gpu, cpu);
    decoderFinished(gpt);
    const sweep = await sweepSection(gpu, cpu);
    $('again').disabled = false;
    return { gpt, sweep };
  };
  $('again').onclick = run;
  return run();
}

// The first decoder run's summary, for tests/browser/decoder.js.
let decoderFinished;
window.__decoderDone = new Promise((resolve) => { decoderFinished = resolve; });

window.__demoDone = main().catch((e) => {
  decoderFinished({ ok: false, error: errText(e), tokens: [], steps: [] });
  document.body.insertAdjacentHTML('beforeend', `<p class="err">${escape(errText(e))}</p>`);
});
