#!/usr/bin/env python3
"""make bench, all-MiniLM-L6-v2 natively, for context: wgc (build/minilm) on
its CPU backend, on lavapipe and on SwiftShader, beside onnxruntime (CPU,
on bench/minilm/export_onnx.py's export) and PyTorch (CPU, transformers'
BertModel on the same safetensors weights), on the sentences of
bench/minilm/sentences.json: batch 1 short (17 tokens), batch 1 long (127
tokens), a batch of 8.

Each figure: the median of REPS passes after the first; "first pass" is the
first after the model is loaded (wgc compiles its kernels then). Every
pass is token ids in, unit-length embeddings out; wgc and the peers
tokenize outside the timing (wgc's command line tokenizes before it
times; the peers get the ids of the model's tokenizer.json, truncated at
256). Every system uses all the cores it finds. Every embedding is checked
against PyTorch's (cosine >= 0.999), so no ratio compares against
something that computed something else. Ratios: wgc's latency over the
peer's (below 1: wgc is faster).

    build/bench-venv/bin/python bench/minilm/native_bench.py build/minilm \\
        build/bench/models build/bench/bench-minilm.json
Environment: WGC_BENCH_REPS (default 5), WGC_BENCH_ADAPTERS=lavapipe
(skip SwiftShader), as bench_wgc reads them.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "third_party", "minilm")
LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json"
REPS = max(1, int(os.environ.get("WGC_BENCH_REPS") or 5))
MIN_COSINE = 0.999


def sizes():
    with open(os.path.join(ROOT, "bench", "minilm", "sentences.json")) as f:
        s = json.load(f)
    return [("batch 1, short", [s["short"]]), ("batch 1, long", [s["long"]]),
            ("batch 8", s["batch"])]


def tokenize(texts):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(MODEL, "tokenizer.json"))
    with open(os.path.join(MODEL, "sentence_bert_config.json")) as f:
        tok.enable_truncation(json.load(f)["max_seq_length"])
    tok.no_padding()
    return [e.ids for e in tok.encode_batch(texts)]


def padded(ids):
    import numpy as np
    n, length = len(ids), max(len(x) for x in ids)
    x, mask = np.zeros((n, length), np.int64), np.zeros((n, length), np.int64)
    for i, row in enumerate(ids):
        x[i, :len(row)], mask[i, :len(row)] = row, 1
    return x, mask


def pool(hidden, mask):
    import numpy as np
    m = mask[:, :, None].astype(np.float64)
    v = (hidden.astype(np.float64) * m).sum(1) / m.sum(1)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def timed(fn):
    first_t = time.perf_counter()
    out = fn()
    first = time.perf_counter() - first_t
    times = []
    for _ in range(REPS):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return first, statistics.median(times), out


def torch_system():
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from transformers import BertModel
    model = BertModel.from_pretrained(MODEL, local_files_only=True, add_pooling_layer=False).eval()

    def run(ids):
        x, mask = padded(ids)
        with torch.no_grad():
            h = model(input_ids=torch.from_numpy(x), attention_mask=torch.from_numpy(mask),
                      token_type_ids=torch.zeros_like(torch.from_numpy(x))).last_hidden_state
        return pool(h.numpy(), mask)
    return f"torch {torch.__version__}, {torch.get_num_threads()} threads", run


def ort_system(models):
    import numpy as np
    import onnxruntime
    path = os.path.join(models, "all-MiniLM-L6-v2", "onnx", "model.onnx")
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])

    def run(ids):
        x, mask = padded(ids)
        h = session.run(["last_hidden_state"], {"input_ids": x, "attention_mask": mask,
                                                "token_type_ids": np.zeros_like(x)})[0]
        return pool(h, mask)
    return f"onnxruntime {onnxruntime.__version__} (CPUExecutionProvider)", run


def wgc_run(minilm, backend, icd, texts):
    """build/minilm's first pass and median, and its embeddings."""
    import numpy as np
    env = dict(os.environ, WGC_GEMM_EAGER=os.environ.get("WGC_GEMM_EAGER", "1"))
    if icd:
        env["VK_DRIVER_FILES"] = icd
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "emb.json")
        p = subprocess.run([minilm, "--backend", backend, "--repeat", str(REPS), "--json", out,
                            "--model", MODEL, "--"] + texts, env=env, capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"native_bench: build/minilm --backend {backend} failed: {p.stderr.strip()}")
        with open(out) as f:
            emb = np.array([s["embedding"] for s in json.load(f)["sentences"]])
    first = float(re.search(r"first pass[^:]*: ([0-9.]+) ms", p.stdout).group(1)) / 1e3
    median = float(re.search(r"median of \d+ more passes: ([0-9.]+) ms", p.stdout).group(1)) / 1e3
    adapter = re.search(r"all-MiniLM-L6-v2 on (.*?): \d+ sentences", p.stdout).group(1)
    return first, median, emb, adapter


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    minilm, models, out_json = sys.argv[1:]
    import numpy as np
    wgcs = [("wgc-cpu", "cpu", None), ("wgc:lavapipe", "webgpu", LAVAPIPE_ICD)]
    if os.environ.get("WGC_BENCH_ADAPTERS", "") != "lavapipe" and os.path.exists(SWIFTSHADER_ICD):
        wgcs.append(("wgc:swiftshader", "webgpu", SWIFTSHADER_ICD))
    peers = [("onnxruntime", *ort_system(models)), ("torch", *torch_system())]
    notes = {name: note for name, note, _ in peers}
    cases = []
    print(f"\nall-MiniLM-L6-v2, native (median of {REPS} passes after the first; "
          "wgc/peer: wgc's latency over the peer's, below 1: wgc is faster)")
    for size, texts in sizes():
        ids = tokenize(texts)
        name = f"{size}: {len(ids)} x {min(map(len, ids))}-{max(map(len, ids))} tokens"
        results = {}
        for system, _, run in peers:
            first, median, emb = timed(lambda: run(ids))
            results[system] = (first, median, emb)
        want = results["torch"][2]
        for system, backend, icd in wgcs:
            first, median, emb, adapter = wgc_run(minilm, backend, icd, texts)
            notes[system] = adapter
            results[system] = (first, median, emb)
        for system, (first, median, emb) in results.items():
            cos = min(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) for a, b in zip(emb, want))
            if not cos >= MIN_COSINE:
                sys.exit(f"native_bench: {system}, {name}: cosine {cos} with PyTorch, below {MIN_COSINE}")
            results[system] = (first, median, cos)
        for what, k in (("steady", 1), ("first pass", 0)):
            case = {"group": "minilm", "name": f"{name}, {what}", "adapter": "native", "unit": "ms",
                    "primary": "wgc-cpu", "results": [], "latency_ratios": {}}
            line = f"  {case['name']:<48}"
            for system, r in results.items():
                case["results"].append({"system": system, "adapter": notes[system], "median_s": r[k],
                                        "runs": REPS if k else 1, "work": 1, "value": r[k] * 1e3,
                                        "worst_cosine": r[2]})
                line += f" | {system} {r[k] * 1e3:.1f} ms"
            for w, _, _ in wgcs:
                case["latency_ratios"][w] = {p: results[w][k] / results[p][k] for p, _, _ in peers}
            case["ratios"] = {s: results[s][k] / results["wgc-cpu"][k] for s in results if s != "wgc-cpu"}
            print(line)
            print("      wgc/peer: " + "; ".join(
                f"{w} " + ", ".join(f"{p} {v:.2f}" for p, v in r.items())
                for w, r in case["latency_ratios"].items()))
            cases.append(case)
    for k, v in notes.items():
        print(f"  {k}: {v}")
    with open(out_json, "w") as f:
        json.dump({"schema": "wgc-bench-1", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "ratio": "other system's median time / wgc-cpu's; latency_ratios: wgc's over the peer's",
                   "notes": [{"adapter": "native", "key": k, "value": v} for k, v in notes.items()],
                   "versions": {p: version(p) for p in ("onnxruntime", "torch", "transformers")},
                   "cases": cases}, f, indent=2)
        f.write("\n")
    print(f"wrote {out_json}")


if __name__ == "__main__":
    main()
