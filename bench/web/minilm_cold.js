// make bench-web, all-MiniLM-L6-v2's cold start: one system (?system=) in a
// fresh browser context, from this module's start (the page ready) to the
// first embedding of the short sentence on the host: the runtime's and
// the model's fetches, compilation, the weights' upload and the first pass.
// window.__minilmIds (set by run.mjs before the page loads): the sentence's
// token ids from wgc's tokenizer, for onnxruntime-web, which has none.
// Result: window.__coldDone = {ms, vector, ids, note} or {error}.
import { setup } from './minilm_systems.js';

const t0 = performance.now();
const system = new URLSearchParams(location.search).get('system');

async function main() {
  const sentences = await (await fetch('/bench-minilm/sentences.json')).json();
  const s = await setup(system, [sentences.short]);
  const [vector] = await s.embed([sentences.short], window.__minilmIds);
  const ms = performance.now() - t0;
  // outside the timing: the ids, from wgc, for the next pages
  const ids = s.tokenize ? await s.tokenize([sentences.short]) : null;
  return { ms, vector: Array.from(vector), ids, note: s.note };
}

main().then((r) => { window.__coldDone = r; },
            (e) => { window.__coldDone = { error: String(e?.stack ?? e) }; });
