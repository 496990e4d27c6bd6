// The MiniLM demo page (minilm.html): loads the model with a progress bar,
// embeds the text area's lines on WebGPU (slot 0) and on the CPU backend
// (slot 1), draws the cosine similarities as a heatmap and reports the
// latency of each batch and the largest difference between the backends.
// The weights selector (?weights=f16 or q8_0) reloads the page with the
// linear weights and embedding tables converted to that type at load.
import { loadMiniLM, cosine, BACKEND_WEBGPU, BACKEND_CPU } from './minilm.js';
import { drawOpChart } from './opchart.js';

const $ = (id) => document.getElementById(id);
const status = (text, bad = false) => { $('status').textContent = text; $('status').className = bad ? 'bad' : ''; };

function heatmap(sentences, vectors) {
  const canvas = $('heatmap'), g = canvas.getContext('2d'), n = vectors.length;
  const label = 220, cell = Math.min(48, Math.floor((canvas.width - label) / Math.max(n, 1)));
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.font = '12px system-ui';
  for (let i = 0; i < n; i++) {
    const text = sentences[i].length > 32 ? sentences[i].slice(0, 31) + '…' : sentences[i];
    g.fillStyle = '#000';
    g.textAlign = 'right';
    g.fillText(text, label - 6, label + i * cell + cell / 2 + 4);
    g.save();
    g.translate(label + i * cell + cell / 2 + 4, label - 6);
    g.rotate(-Math.PI / 2);
    g.textAlign = 'left';
    g.fillText(text, 0, 0);
    g.restore();
    for (let j = 0; j < n; j++) {
      const c = cosine(vectors[i], vectors[j]); // -1 (blue) .. 1 (red)
      const t = (c + 1) / 2;
      g.fillStyle = `rgb(${Math.round(255 * t)}, ${Math.round(255 * (1 - Math.abs(c)) * 0.9)}, ${Math.round(255 * (1 - t))})`;
      g.fillRect(label + j * cell, label + i * cell, cell - 1, cell - 1);
      g.fillStyle = Math.abs(c) > 0.5 ? '#fff' : '#000';
      g.textAlign = 'center';
      g.fillText(c.toFixed(2), label + j * cell + cell / 2, label + i * cell + cell / 2 + 4);
    }
  }
}

const sentencesOf = () => $('sentences').value.split('\n').map((s) => s.trim()).filter(Boolean);

let model = null, cpuAdapter = '', gpuAdapter = '';
async function run() {
  const sentences = sentencesOf();
  if (!sentences.length) return;
  $('run').disabled = true;
  try {
    status(`embedding ${sentences.length} sentences on WebGPU…`);
    let t0 = performance.now();
    const gpu = await model.embed(0, sentences);
    const gpuMs = performance.now() - t0;
    heatmap(sentences, gpu.vectors);
    // the same batch again with timing records, for the chart
    const timed = await model.embed(0, sentences, { profile: true });
    drawOpChart($('opchart'), timed.records, `one batch of ${sentences.length} on WebGPU`);
    status('checking on the CPU backend…');
    t0 = performance.now();
    const cpu = await model.embed(1, sentences);
    const cpuMs = performance.now() - t0;
    const tokens = gpu.ids.reduce((n, ids) => n + ids.length, 0);
    $('timing').textContent = `${sentences.length} sentences, ${tokens} tokens in one batch, ${weightType} weights: ` +
      `WebGPU ${gpuMs.toFixed(0)} ms, CPU backend ${cpuMs.toFixed(0)} ms (${cpuAdapter})`;
    let worst = 0;
    gpu.vectors.forEach((v, i) => v.forEach((x, j) => { worst = Math.max(worst, Math.abs(x - cpu.vectors[i][j])); }));
    const ok = worst <= 2e-4; // both within 1e-4 of sentence-transformers
    $('check').textContent = `WebGPU against the CPU backend: largest difference ${worst.toExponential(2)} (${ok ? 'ok' : 'FAIL'})`;
    $('check').className = ok ? '' : 'bad';
    status('done');
    const sims = gpu.vectors.map((a) => gpu.vectors.map((b) => cosine(a, b)));
    window.__minilmResult = { sentences, gpuMs, cpuMs, cpuAdapter, gpuAdapter, worst, ok, sims, weightType,
      records: timed.records.map((r) => ({ name: r.name, duration_us: r.duration_us })) };
  } catch (e) {
    status(String(e.message ?? e), true);
    window.__minilmResult = { error: String(e.message ?? e) };
  } finally {
    $('run').disabled = false;
  }
}

const weightType = new URLSearchParams(location.search).get('weights') ?? 'f32';
$('weights').value = weightType;
$('weights').onchange = () => {
  const url = new URL(location.href);
  url.searchParams.set('weights', $('weights').value);
  location.href = url.href;
};

try {
  model = await loadMiniLM();
  const gpu = await model.create(0, BACKEND_WEBGPU).catch(() => null);
  if (!gpu) throw new Error('no WebGPU adapter in this browser; the CPU backend alone is not compared');
  gpuAdapter = gpu.adapter;
  cpuAdapter = (await model.create(1, BACKEND_CPU)).adapter;
  // the kernels of the first pass compile while the weights download
  model.prepare(0, weightType, sentencesOf().length ? sentencesOf() : ['']);
  status(`fetching the weights (WebGPU: ${gpu.adapter})…`);
  await model.load([0, 1], (got, total) => {
    $('progress').value = total ? got / total : 0;
    status(`fetching the weights: ${(got / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB`);
  }, weightType);
  $('progress').value = 1;
  $('run').disabled = false;
  $('run').onclick = run;
  await run();
} catch (e) {
  status(String(e.message ?? e), true);
  window.__minilmResult = { error: String(e.message ?? e) };
}
