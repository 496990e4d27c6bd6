// make bench-web, the demo decoder's first pass (web/gpt.js): in a fresh
// browser context, the prompt and one decode step on a new WebGPU
// context, its kernels compiled ahead (?ahead=1, as the demo page does)
// or on first use (?ahead=0). Result: window.__coldDone = {ms, kernels,
// ok} or {error}; ms is gpt.js's warmMs.
import * as W from '/wgc.js';
import * as GPT from '/gpt.js';

const ahead = new URLSearchParams(location.search).get('ahead') !== '0';

async function main() {
  const gpu = await W.create({ backend: W.BACKEND_WEBGPU });
  const cpu = await W.create({ backend: W.BACKEND_CPU });
  try {
    const r = await GPT.run(gpu, cpu, () => {}, { ahead });
    return { ms: r.warmMs, kernels: r.kernels, ok: r.ok };
  } finally {
    gpu.destroy();
    cpu.destroy();
  }
}

main().then((r) => { window.__coldDone = r; },
            (e) => { window.__coldDone = { error: String(e?.stack ?? e) }; });
