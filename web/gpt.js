// The decoder of examples/gpt_model.c in JavaScript, on wgc.js: the same
// config, the same weights (the generator below reproduces the C one bit
// for bit), the same sequence of calls. The weights are random, so the text
// is meaningless; the arithmetic is real. Every call only enqueues; the
// only awaits are the downloads of each step's logits and token.
import * as W from './wgc.js';

export const CONFIG = Object.freeze({
  vocab: 256, d_model: 128, heads: 4, layers: 4, d_ff: 512, context: 128, seed: 20240611,
});
export const PROMPT = 'wgc runs a decoder on WebGPU, one token at a time:';
export const GENERATE = 64;

// Element offsets of every weight in one array, in the order of
// gpt_layout().
export function layout(c) {
  const d = c.d_model, f = c.d_ff, o = { layer: [] };
  let at = 0;
  const take = (obj, name, n) => { obj[name] = at; at += n; };
  take(o, 'wte', c.vocab * d);
  take(o, 'wpe', c.context * d);
  for (let l = 0; l < c.layers; l++) {
    const L = {};
    for (const [name, n] of [['ln1_g', d], ['ln1_b', d], ['w_qkv', 3 * d * d], ['b_qkv', 3 * d],
      ['w_o', d * d], ['b_o', d], ['ln2_g', d], ['ln2_b', d], ['w_fc', d * f], ['b_fc', f],
      ['w_proj', f * d], ['b_proj', d]])
      take(L, name, n);
    o.layer.push(L);
  }
  take(o, 'lnf_g', d);
  take(o, 'lnf_b', d);
  take(o, 'w_head', d * c.vocab);
  take(o, 'b_head', c.vocab);
  o.total = at;
  return o;
}

// gpt_weights_new(): mulberry32, 24-bit uniforms, float32 arithmetic.
export function weights(c) {
  const o = layout(c), w = new Float32Array(o.total), f32 = Math.fround;
  let s = c.seed | 0;
  const next = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  const fill = (at, n, offset, scale) => {
    for (let i = 0; i < n; i++) {
      const r = (next() >>> 8) / 16777216;
      w[at + i] = f32(offset + f32(scale * (2 * r - 1)));
    }
  };
  const d = c.d_model, ff = c.d_ff;
  const inD = f32(Math.sqrt(f32(3 / d))), inF = f32(Math.sqrt(f32(3 / ff)));
  const resid = f32(1 / f32(Math.sqrt(2 * c.layers)));
  fill(o.wte, c.vocab * d, 0, 1);
  fill(o.wpe, c.context * d, 0, 0.5);
  const tenth = f32(0.1);
  for (const L of o.layer) {
    fill(L.ln1_g, d, 1, tenth);
    fill(L.ln1_b, d, 0, tenth);
    fill(L.w_qkv, 3 * d * d, 0, inD);
    fill(L.b_qkv, 3 * d, 0, tenth);
    fill(L.w_o, d * d, 0, f32(inD * resid));
    fill(L.b_o, d, 0, tenth);
    fill(L.ln2_g, d, 1, tenth);
    fill(L.ln2_b, d, 0, tenth);
    fill(L.w_fc, d * ff, 0, inD);
    fill(L.b_fc, ff, 0, tenth);
    fill(L.w_proj, ff * d, 0, f32(inF * resid));
    fill(L.b_proj, d, 0, tenth);
  }
  fill(o.lnf_g, d, 1, tenth);
  fill(o.lnf_b, d, 0, tenth);
  fill(o.w_head, d * c.vocab, 0, 2 * inD);
  fill(o.b_head, c.vocab, 0, tenth);
  for (let v = 0; v < c.vocab; v++) if (v < 32 || v > 126) w[o.b_head + v] -= 4;
  return w;
}

// gpt_logit_tolerance(): wgc.h's GEMM bound for the logits projection,
// 1e-5*K*max|a|*max|b| with max|a| <= sqrt(d - 1)*max|gain| + max|bias| after
// the final layer norm, once per residual branch and once for the
// projection, twice for two backends.
export function logitTolerance(c, w, perBackend = false) {
  const o = layout(c), d = c.d_model;
  const maxAbs = (at, n) => { let m = 0; for (let i = 0; i < n; i++) m = Math.max(m, Math.abs(w[at + i])); return m; };
  const a = Math.sqrt(d - 1) * maxAbs(o.lnf_g, d) + maxAbs(o.lnf_b, d);
  const one = 1e-5 * d * a * maxAbs(o.w_head, d * c.vocab) + 1e-6 * maxAbs(o.b_head, c.vocab);
  const bound = (1 + 2 * c.layers) * one;
  return perBackend ? bound : 2 * bound;
}

// The model on one context (gpt_model in C).
export class Gpt {
  constructor(ctx, c, w) {
    this.ctx = ctx;
    this.c = c;
    this.off = layout(c);
    const d = c.d_model, n = c.context;
    this.bufs = [];
    const alloc = (floats) => { const p = ctx.alloc(4 * floats); this.bufs.push(p); return p; };
    try {
      this.weights = alloc(this.off.total);
      this.tokens = alloc(n); // int32: the prompt, then each argmax
      this.x = alloc(n * d);
      this.h = alloc(n * d);
      this.att = alloc(n * d);
      this.u = alloc(n * c.d_ff);
      this.qkv = Array.from({ length: c.layers }, () => alloc(n * 3 * d));
      this.hf = alloc(d);
      this.logits = alloc(c.vocab);
      ctx.upload(this.weights, w);
    } catch (e) {
      this.free();
      throw e;
    }
  }

  free() {
    for (const p of this.bufs) this.ctx.free(p);
    this.bufs = [];
  }

  setTokens(pos, ids) {
    this.ctx.upload(this.tokens + BigInt(4 * pos), Int32Array.from(ids));
  }

  // gpt_forward(): positions pos..pos+n-1; with choose, the argmax of the
  // last one's logits becomes tokens[pos + n].
  forward(pos, n, choose = true) {
    const { ctx, c, off } = this, d = c.d_model, hd = d / c.heads, f = c.d_ff, ld = 3 * d;
    const at = (p, i) => p + BigInt(4 * i);
    const wt = (i) => at(this.weights, i);
    const linear = (rows, inn, out, x, w, b, beta, y, ldy, activation) =>
      ctx.gemmEx(W.ROW_MAJOR, W.NO_TRANS, W.NO_TRANS, rows, out, inn, 1, x, inn, w, out, beta, y, ldy,
                 { bias: b, bias_kind: W.BIAS_PER_COLUMN, activation });
    ctx.gather(wt(off.wte), [c.vocab, d], 2, 0, at(this.tokens, pos), n, this.x);
    ctx.binary(W.BINARY_ADD, this.x, wt(off.wpe + pos * d), this.x, n * d);
    const packed = { batch: c.context * ld, head: hd, seq: ld };
    for (let l = 0; l < c.layers; l++) {
      const L = off.layer[l], qkv = this.qkv[l];
      ctx.layerNorm(this.x, wt(L.ln1_g), wt(L.ln1_b), this.h, [n, d], 2, 1, 1e-5);
      linear(n, d, 3 * d, this.h, wt(L.w_qkv), wt(L.b_qkv), 0, at(qkv, pos * ld), ld, W.ACTIVATION_NONE);
      ctx.attention({
        batch: 1, heads: c.heads, seq_q: n, seq_kv: pos + n, head_dim: hd, scale: 1 / Math.sqrt(hd),
        causal: W.CAUSAL_BOTTOM_RIGHT, q_stride: packed, k_stride: packed, v_stride: packed,
        o_stride: { batch: c.context * d, head: hd, seq: d },
      }, at(qkv, pos * ld), at(qkv, d), at(qkv, 2 * d), this.att);
      linear(n, d, d, this.att, wt(L.w_o), wt(L.b_o), 1, this.x, d, W.ACTIVATION_NONE);
      ctx.layerNorm(this.x, wt(L.ln2_g), wt(L.ln2_b), this.h, [n, d], 2, 1, 1e-5);
      linear(n, d, f, this.h, wt(L.w_fc), wt(L.b_fc), 0, this.u, f, W.ACTIVATION_GELU_TANH);
      linear(n, f, d, this.u, wt(L.w_proj), wt(L.b_proj), 1, this.x, d, W.ACTIVATION_NONE);
    }
    ctx.layerNorm(at(this.x, (n - 1) * d), wt(off.lnf_g), wt(off.lnf_b), this.hf, [1, d], 2, 1, 1e-5);
    linear(1, d, c.vocab, this.hf, wt(off.w_head), wt(off.b_head), 0, this.logits, c.vocab, W.ACTIVATION_NONE);
    if (choose && pos + n < c.context)
      ctx.argmax(this.logits, at(this.tokens, pos + n), [1, c.vocab], 2, 1);
  }

  // forward() and the downloads of the logits and the chosen token.
  async step(pos, n) {
    this.forward(pos, n);
    const [logits, tok] = await Promise.all([
      this.ctx.download(this.logits, this.c.vocab),
      this.ctx.download(this.tokens + BigInt(4 * (pos + n)), 1),
    ]);
    return { logits, token: new Int32Array(tok.buffer)[0] };
  }
}

const maxAbsDiff = (a, b) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const e = Math.abs(a[i] - b[i]);
    if (!(e <= m)) m = e; // NaN wins
  }
  return m;
};

// Prompts the model on gpu and on cpu (the reference) in lockstep and
// generates GENERATE tokens, comparing the logits at every step as
// examples/gpt.c does. onStep({i, token, diff, ok, tokensPerSecond}) is
// called after each; the result sums it up. Only the WebGPU steps are
// timed.
// ahead: compile the kernels of both step shapes ahead (compileBegin),
// concurrently, rather than on first use.
export async function run(gpu, cpu, onStep = () => {}, { ahead = true } = {}) {
  const c = CONFIG, w = weights(c), tol = logitTolerance(c, w);
  const ids = Array.from(new TextEncoder().encode(PROMPT));
  const dev = new Gpt(gpu, c, w), ref = new Gpt(cpu, c, w);
  try {
    // The kernels of both step shapes compile ahead, concurrently; a first
    // pass then waits for them.
    const w0 = performance.now();
    if (ahead) {
      gpu.compileBegin();
      try {
        dev.forward(0, ids.length);
        dev.forward(ids.length, 1);
      } finally {
        gpu.compileEnd().catch(() => {}); // a failure shows in the steps too
      }
    }
    dev.setTokens(0, ids);
    await dev.step(0, ids.length);
    await dev.step(ids.length, 1);
    const warmMs = performance.now() - w0, kernels = gpu.pipelinesCompiled();
    dev.setTokens(0, ids);
    ref.setTokens(0, ids);
    const steps = [], tokens = [];
    let pos = 0, n = ids.length, decodeMs = 0, promptMs = 0, cpuMs = 0, worst = 0;
    for (let i = 0; i < GENERATE; i++) {
      const t0 = performance.now();
      const g = await dev.step(pos, n);
      const ms = performance.now() - t0;
      if (i === 0) promptMs = ms;
      else decodeMs += ms;
      const t1 = performance.now();
      const r = await ref.step(pos, n);
      cpuMs += performance.now() - t1;
      const diff = maxAbsDiff(g.logits, r.logits);
      worst = diff > worst || Number.isNaN(diff) ? diff : worst;
      let ok = diff <= tol;
      if (g.token !== r.token) {
        // Only a near-tie may choose differently; both go on with the
        // WebGPU token.
        const gap = Math.max(Math.abs(g.logits[g.token] - g.logits[r.token]),
                             Math.abs(r.logits[g.token] - r.logits[r.token]));
        ok &&= gap <= tol;
        ref.setTokens(pos + n, [g.token]);
      }
      tokens.push(g.token);
      const step = {
        i, token: g.token, cpuToken: r.token, logits: g.logits, diff, ok,
        tokensPerSecond: i ? (1000 * i) / decodeMs : NaN,
      };
      steps.push(step);
      onStep(step);
      pos += n;
      n = 1;
    }
    // one more step with timing records, for the per-operation chart
    let stepRecords = [];
    if (pos < c.context) {
      gpu.profileStart();
      try {
        await dev.step(pos, 1);
        await gpu.synchronize();
      } finally {
        gpu.profileStop();
      }
      stepRecords = gpu.profileRecords();
    }
    return {
      prompt: PROMPT, tokens, steps, worst, tol, kernels, warmMs, promptMs, decodeMs, cpuMs, stepRecords,
      tokensPerSecond: (1000 * (GENERATE - 1)) / decodeMs, ok: steps.every((s) => s.ok),
    };
  } finally {
    dev.free();
    ref.free();
  }
}

// Bytes as text, with escapes for what is not printable ASCII.
export function escapeBytes(tokens) {
  return tokens.map((t) => (t === 92 ? '\\\\' : t === 34 ? '\\"' : t >= 32 && t < 127
    ? String.fromCharCode(t) : t === 10 ? '\\n' : `\\x${t.toString(16).padStart(2, '0')}`)).join('');
}
