#!/usr/bin/env python3
"""Exports all-MiniLM-L6-v2 to ONNX for the bench's peers (transformers.js,
onnxruntime-web, onnxruntime): the BERT encoder of third_party/minilm's
model.safetensors (the weights wgc runs) through torch.onnx.export, in
f32, with input_ids, attention_mask and token_type_ids of any batch and
length, and last_hidden_state as output (pooling stays with the caller,
as transformers.js's feature-extraction pipeline expects).

The export is checked before it is kept: onnxruntime on the CPU embeds
every sentence of tests/data/minilm_reference.txt from its reference token
ids (mean pooling over the real tokens, L2 normalisation), each sentence
alone and all of them in one padded batch, and each embedding must reach
cosine >= 0.99999 with sentence-transformers'.

Writes OUT/all-MiniLM-L6-v2/ laid out as transformers.js reads a local
model: config.json, tokenizer.json, tokenizer_config.json (model_max_length
256, sentence-transformers' max_seq_length, where transformers.js would
otherwise truncate at 512) and onnx/model.onnx.

Run with build/bench-venv's python (tools/bootstrap.sh bench installs the
versions of bench/minilm/requirements.txt; the script checks them):
    build/bench-venv/bin/python bench/minilm/export_onnx.py build/bench/models
"""
import json
import math
import os
import shutil
import sys
from importlib.metadata import version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# name -> version, from the pinned requirements the venv was made from
with open(os.path.join(ROOT, "bench", "minilm", "requirements.txt")) as _f:
    PINS = dict(line.strip().split("==") for line in _f if "==" in line and not line.startswith("#"))
MODEL = os.path.join(ROOT, "third_party", "minilm")
REFERENCE = os.path.join(ROOT, "tests", "data", "minilm_reference.txt")
NAME = "all-MiniLM-L6-v2"
MIN_COSINE = 0.99999


def read_reference():
    """[(ids, embedding)] from tests/data/minilm_reference.txt."""
    cases, ids = [], None
    with open(REFERENCE) as f:
        for line in f:
            word, _, rest = line.partition(" ")
            if word == "ids":
                ids = [int(x) for x in rest.split()]
            elif word == "emb":
                cases.append((ids, [float(x) for x in rest.split()]))
    if not cases:
        sys.exit(f"{REFERENCE}: no cases")
    return cases


def embed(session, batch):
    """Unit-length mean-pooled embeddings of the sentences of batch (lists
    of ids), run as one padded batch."""
    import numpy as np
    n, length = len(batch), max(len(ids) for ids in batch)
    x, mask = np.zeros((n, length), np.int64), np.zeros((n, length), np.int64)
    for i, ids in enumerate(batch):
        x[i, :len(ids)], mask[i, :len(ids)] = ids, 1
    out = session.run(["last_hidden_state"], {
        "input_ids": x, "attention_mask": mask, "token_type_ids": np.zeros_like(x)})[0]
    m = mask[:, :, None].astype(np.float64)
    v = (out.astype(np.float64) * m).sum(1) / m.sum(1)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def check(path):
    """The worst cosine with the reference, each sentence alone and all of
    them in one padded batch (the padding mask traced right)."""
    import onnxruntime
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    cases = read_reference()
    alone = [embed(session, [ids])[0] for ids, _ in cases]
    batched = embed(session, [ids for ids, _ in cases])
    worst = 1.0
    for i, (_, want) in enumerate(cases):
        for what, got in (("alone", alone[i]), ("in a batch", batched[i])):
            cos = float(got @ want) / math.sqrt(sum(w * w for w in want))
            worst = min(worst, cos)
            if not cos >= MIN_COSINE:
                sys.exit(f"{path}: case {i} {what}: cosine {cos:.8f} with the reference, "
                         f"below {MIN_COSINE}")
    return worst


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for name, want in PINS.items():
        if version(name) != want:
            sys.exit(f"{name} {version(name)} installed, {want} pinned (tools/bootstrap.sh bench)")
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from transformers import BertModel

    out = os.path.join(os.path.abspath(sys.argv[1]), NAME)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "onnx"))
    model = BertModel.from_pretrained(MODEL, local_files_only=True, add_pooling_layer=False,
                                      attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):
        """last_hidden_state alone: the one output the peers pool."""

        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    ids = torch.tensor([[101, 1996, 4248, 2829, 102], [101, 7592, 102, 0, 0]])
    mask = (ids != 0).long()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    onnx_path = os.path.join(tmp, "onnx", "model.onnx")
    with torch.no_grad():
        torch.onnx.export(Encoder(model), (ids, mask, torch.zeros_like(ids)), onnx_path,
                          input_names=names, output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)
    worst = check(onnx_path)

    for f in ["config.json", "tokenizer.json"]:
        shutil.copy(os.path.join(MODEL, f), os.path.join(tmp, f))
    with open(os.path.join(MODEL, "sentence_bert_config.json")) as f:
        max_seq = json.load(f)["max_seq_length"]
    with open(os.path.join(tmp, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "BertTokenizer", "do_lower_case": True,
                   "model_max_length": max_seq, "cls_token": "[CLS]", "sep_token": "[SEP]",
                   "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]"}, f, indent=2)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    pins = ", ".join(f"{k}=={v}" for k, v in PINS.items())
    print(f"export_onnx: {out}/onnx/model.onnx ({pins}); worst cosine with the reference "
          f"over {len(read_reference())} sentences, alone and batched: {worst:.8f}")


if __name__ == "__main__":
    main()
