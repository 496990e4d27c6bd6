// Browser test of the demo page, run by tests/browser/run.mjs: loads the
// page (/index.html) in a frame, waits for its decoder to generate, and
// checks that tokens were generated, that the CPU-backend check passed at
// every token (in the summary and on the page), and that the first and the
// last step's logits match a float64 model written here from the model's
// definition (so a slip in gpt.js that both backends share is caught too).
// One line per test: "ok NAME" or "FAIL NAME: why".
import * as GPT from '../gpt.js';
import { check, filter, finish, report, test } from './harness.js';

// The decoder in float64: logits of the last of ids, recomputing the whole
// prefix (no KV cache), GPT-2's pre-norm block with causal attention.
function referenceLogits(c, w, ids) {
  const o = GPT.layout(c), d = c.d_model, f = c.d_ff, hd = d / c.heads, n = ids.length;
  const norm = (x, at, g, b) => {
    let mean = 0, varsum = 0;
    for (let i = 0; i < d; i++) mean += x[at + i];
    mean /= d;
    for (let i = 0; i < d; i++) varsum += (x[at + i] - mean) ** 2;
    const r = 1 / Math.sqrt(varsum / d + Math.fround(1e-5));
    return Float64Array.from({ length: d }, (_, i) => (x[at + i] - mean) * r * w[g + i] + w[b + i]);
  };
  const dense = (x, rows, inn, out, wAt, bAt, y = new Float64Array(rows * out), acc = false) => {
    for (let r = 0; r < rows; r++)
      for (let j = 0; j < out; j++) {
        let s = w[bAt + j];
        for (let p = 0; p < inn; p++) s += x[r * inn + p] * w[wAt + p * out + j];
        y[r * out + j] = acc ? y[r * out + j] + s : s;
      }
    return y;
  };
  const x = new Float64Array(n * d);
  for (let t = 0; t < n; t++)
    for (let i = 0; i < d; i++) x[t * d + i] = w[o.wte + ids[t] * d + i] + w[o.wpe + t * d + i];
  const rows = (g, b) => {
    const h = new Float64Array(n * d);
    for (let t = 0; t < n; t++) h.set(norm(x, t * d, g, b), t * d);
    return h;
  };
  for (const L of o.layer) {
    const qkv = dense(rows(L.ln1_g, L.ln1_b), n, d, 3 * d, L.w_qkv, L.b_qkv);
    const att = new Float64Array(n * d), p = new Float64Array(n);
    for (let a = 0; a < c.heads; a++)
      for (let t = 0; t < n; t++) {
        let mx = -Infinity, sum = 0;
        for (let j = 0; j <= t; j++) {
          let s = 0;
          for (let i = 0; i < hd; i++) s += qkv[t * 3 * d + a * hd + i] * qkv[j * 3 * d + d + a * hd + i];
          p[j] = s / Math.sqrt(hd);
          mx = Math.max(mx, p[j]);
        }
        for (let j = 0; j <= t; j++) sum += (p[j] = Math.exp(p[j] - mx));
        for (let i = 0; i < hd; i++) {
          let s = 0;
          for (let j = 0; j <= t; j++) s += p[j] * qkv[j * 3 * d + 2 * d + a * hd + i];
          att[t * d + a * hd + i] = s / sum;
        }
      }
    dense(att, n, d, d, L.w_o, L.b_o, x, true);
    const u = dense(rows(L.ln2_g, L.ln2_b), n, d, f, L.w_fc, L.b_fc);
    const k = Math.sqrt(2 / Math.PI);
    for (let i = 0; i < u.length; i++) u[i] = 0.5 * u[i] * (1 + Math.tanh(k * (u[i] + 0.044715 * u[i] ** 3)));
    dense(u, n, f, d, L.w_proj, L.b_proj, x, true);
  }
  return dense(norm(x, (n - 1) * d, o.lnf_g, o.lnf_b), 1, d, c.vocab, o.w_head, o.b_head);
}

async function withTimeout(promise, ms, what) {
  let timer;
  try {
    return await Promise.race([promise, new Promise((_, no) => {
      timer = setTimeout(() => no(new Error(`${what} timed out after ${ms / 1000} s`)), ms);
    })]);
  } finally {
    clearTimeout(timer);
  }
}

async function main() {
  // Running the page takes a while: only when a test here is selected.
  const names = ['demo: the page uses a WebGPU adapter', 'demo: the decoder generated',
    'demo: the CPU-backend check passed', 'demo: the first and last logits'];
  if (!names.some((n) => n.includes(filter) || filter.startsWith(n))) return;
  const frame = document.createElement('iframe');
  const loaded = new Promise((resolve) => { frame.onload = resolve; });
  frame.src = '/index.html';
  document.body.append(frame);
  let r = null;
  try {
    await withTimeout(loaded, 30000, 'loading the page');
    r = await withTimeout(frame.contentWindow.__decoderDone, 240000, 'the decoder');
  } catch (e) {
    r = { ok: false, error: e.message, tokens: [], steps: [] };
  }
  const doc = frame.contentDocument;
  await test('demo: the page uses a WebGPU adapter', () => {
    check(!doc.querySelector('#adapter .err'), `adapter: ${doc.getElementById('adapter').textContent}`);
  });
  await test(`demo: the decoder generated ${GPT.GENERATE} tokens`, () => {
    check(!r.error, r.error);
    check(r.tokens.length === GPT.GENERATE, `${r.tokens.length} tokens`);
    check(r.tokens.every((t) => Number.isInteger(t) && t >= 0 && t < GPT.CONFIG.vocab), `tokens ${r.tokens}`);
    check(new Set(r.tokens).size > 1, `every token is ${r.tokens[0]}`);
    check(r.tokensPerSecond > 0, `tokens/s ${r.tokensPerSecond}`);
    report(`# demo: "${GPT.escapeBytes(r.tokens)}" at ${r.tokensPerSecond.toFixed(1)} tokens/s ` +
           `(first pass ${(r.warmMs / 1000).toFixed(1)} s, CPU backend ${(r.cpuMs / 1000).toFixed(1)} s)`);
  });
  await test('demo: the CPU-backend check passed at every token, also on the page', () => {
    check(r.steps.length === GPT.GENERATE, `${r.steps.length} steps`);
    const bad = r.steps.filter((s) => !s.ok).map((s) => `${s.i} (${s.diff})`);
    check(!bad.length, `steps ${bad.join(', ')} failed (allowed ${r.tol})`);
    check(r.worst <= r.tol, `largest difference ${r.worst}, allowed ${r.tol}`);
    check(doc.getElementById('check').className === 'ok', `page says: ${doc.getElementById('check').textContent}`);
    check(doc.querySelectorAll('#steps span').length === GPT.GENERATE &&
          !doc.querySelector('#steps span.bad'), 'the per-token squares are not all green');
    report(`# demo: largest logit difference ${r.worst.toExponential(2)} (allowed ${r.tol.toExponential(2)})`);
  });
  await test('demo: one decoding step\'s timing records, one per operation, in the chart', () => {
    const want = 2 + 7 * GPT.CONFIG.layers + 3; // embeddings, layers, final norm, head, argmax
    const recs = r.stepRecords ?? [];
    check(recs.length === want, `${recs.length} records, want ${want}`);
    check(recs.every((x) => x.duration_us > 0 && /^wgc_/.test(x.name)), `records ${JSON.stringify(recs.slice(0, 2))}`);
    check(doc.getElementById('opchart').height > 40, 'the chart was not drawn');
  });
  frame.remove(); // stops the page's GEMM sweep
  await test('demo: the first and last logits match a float64 model', () => {
    check(r.steps.length === GPT.GENERATE, 'no steps');
    const c = GPT.CONFIG, w = GPT.weights(c), tol = GPT.logitTolerance(c, w, true);
    const prompt = Array.from(new TextEncoder().encode(GPT.PROMPT));
    for (const i of [0, GPT.GENERATE - 1]) {
      const want = referenceLogits(c, w, [...prompt, ...r.tokens.slice(0, i)]);
      const got = r.steps[i].logits;
      let worst = 0;
      for (let v = 0; v < c.vocab; v++) worst = Math.max(worst, Math.abs(got[v] - want[v]));
      check(worst <= tol, `step ${i}: logits ${worst} from float64, allowed ${tol}`);
      report(`# demo: step ${i} logits within ${worst.toExponential(2)} of float64`);
    }
  });
}

finish(main);
