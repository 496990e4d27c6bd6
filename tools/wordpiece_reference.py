#!/usr/bin/env python3
"""Expected token ids for tests/test_wordpiece.c, from Hugging Face
tokenizers (pinned below) running the model's own tokenizer.json, with
sentence-transformers' settings: truncation at max_seq_length (256, from
sentence_bert_config.json), no padding; tokenizer.json's own truncation
(128) and padding settings are replaced.

    python3 -m venv /tmp/wp && /tmp/wp/bin/pip install tokenizers==0.23.3
    /tmp/wp/bin/python tools/wordpiece_reference.py third_party/minilm \\
        > tests/data/wordpiece_ids.json

With --unicode-check it instead compares, code point by code point, the
library's BERT normalizer and pre-tokenizer with the same rules over
Python's unicodedata (what tools/gen_unicode.py puts in the C tables), and
lists where they differ: the library takes its categories, decompositions
and case mappings from crates of several Unicode versions.
"""
import json
import os
import random
import string
import sys
import unicodedata

import tokenizers
from tokenizers import Tokenizer, normalizers, pre_tokenizers

PINNED = "0.23.3"

CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
       (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF),
       (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]


def white_space(c):
    return chr(c).isspace() and not 0x1C <= c <= 0x1F


def model_normalize(c):
    """The BERT normalizer (all-MiniLM-L6-v2's flags) on one code point,
    by unicodedata."""
    cat = unicodedata.category(chr(c))
    if c in (0, 0xFFFD) or (cat in ("Cc", "Cf", "Co", "Cs")
                            and c not in (9, 10, 13)):
        return ""
    if c in (9, 10, 13) or white_space(c):
        return " "
    s = chr(c)
    if any(a <= c <= b for a, b in CJK):
        s = " " + s + " "
    s = unicodedata.normalize("NFD", s)
    s = "".join(x for x in s if unicodedata.category(x) != "Mn")
    return s.lower()


def model_pretokenize(s):
    out, cur = [], ""
    for x in s:
        if white_space(ord(x)):
            if cur:
                out.append(cur)
            cur = ""
        elif x in string.punctuation or unicodedata.category(x)[0] == "P":
            if cur:
                out.append(cur)
            out.extend([x])
            cur = ""
        else:
            cur += x
    if cur:
        out.append(cur)
    return out


NORM = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                  strip_accents=None, lowercase=True)
PRE = pre_tokenizers.BertPreTokenizer()


def agrees(c):
    s = "a" + chr(c) + "b"
    got = NORM.normalize_str(s)
    want = "a" + model_normalize(c) + "b"
    return got == want and [w for w, _ in PRE.pre_tokenize_str(got)] == \
        model_pretokenize(want)


def unicode_check():
    by_cat = {}
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF or agrees(c):
            continue
        cat = unicodedata.category(chr(c))
        by_cat.setdefault(cat, []).append(c)
    total = sum(len(v) for v in by_cat.values())
    print(f"tokenizers {tokenizers.__version__} against unicodedata "
          f"{unicodedata.unidata_version}: {total} code points differ")
    for cat, cs in sorted(by_cat.items(), key=lambda kv: -len(kv[1])):
        shown = " ".join(f"U+{c:04X}" for c in cs[:12])
        print(f"  {cat} ({unicodedata.unidata_version}): {len(cs)}: {shown}"
              + (" ..." if len(cs) > 12 else ""))


# Blocks the random cases draw from: Latin, Greek, Cyrillic, Arabic,
# Devanagari, Thai, Hangul, kana, CJK, punctuation, symbols, emoji, and a
# few controls and spaces.
BLOCKS = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF),
          (0x400, 0x4FF), (0x600, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F),
          (0x1E00, 0x1EFF), (0x2000, 0x206F), (0x2100, 0x22FF),
          (0x3000, 0x30FF), (0x4E00, 0x4FFF), (0xAC00, 0xAD00),
          (0xFF00, 0xFFEF), (0x1F300, 0x1F64F), (0x0, 0x1F)]


def random_text(rng, n):
    out = []
    while len(out) < n:
        lo, hi = rng.choice(BLOCKS)
        c = rng.randint(lo, hi)
        if unicodedata.category(chr(c)) == "Cn" or not agrees(c):
            continue
        out.append(chr(c))
        if rng.random() < 0.45:
            out.append(" ")
    return "".join(out)


def cases():
    long_word = "supercalifragilistic" * 6
    paragraph = ("Sentence embeddings map text to vectors; similar meanings "
                 "land close together, unrelated ones far apart. ")
    rng = random.Random(17)
    c = [
        ("ascii", "The quick brown fox jumps over the lazy dog.", 256),
        ("punctuation", "Hello, world! (Really?) \"quoted\" \u2014 em-dash"
         "\u2026 \u00bfQu\u00e9? \u00abguillemets\u00bb a/b\\c @user #tag $5 "
         "100% x^2 a_b {x|y} ~tilde `tick` <a>=b+c;d:e", 256),
        ("numbers", "In 2023, 3.14159 \u2248 \u03c0; call 555-0123 or +1 "
         "(800) 123-4567; 1,000,000 and 42nd, \u00bd \u2167 \u2460", 256),
        ("accented Latin", "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 "
         "\u00c5ngstr\u00f6m \u00d8resund Stra\u00dfe Cr\u00e8me "
         "br\u00fbl\u00e9e \u00c9COLE \u0141\u00f3d\u017a \u0218tefan "
         "\u1ec7 \u01c5emal", 256),
        ("combining marks", "e\u0301 a\u0300\u0316 q\u0307\u0323 "
         "\u1e0b\u0323 o\u0308\u0304 n\u0303", 256),
        ("Greek and Turkish case", "\u03a3\u038a\u03a3\u03a5\u03a6\u039f"
         "\u03a3 \u039f\u03b4\u03c5\u03c3\u03c3\u03ad\u03b1\u03c2 "
         "\u0130stanbul D\u0130YARBAKIR \ufb01ne \u2160", 256),
        ("CJK", "\u6211\u7231\u5317\u4eac\u5929\u5b89\u95e8 \u65e5\u672c"
         "\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \ud55c\uad6d\uc5b4 "
         "\ud14d\uc2a4\ud2b8 \u4e2d\u6587\uff0c\u6807\u70b9\u3002 "
         "\U00020000\U0002b820\U0002b920", 256),
        ("other scripts", "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438"
         "\u0440! \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac "
         "\u05e2\u05d1\u05e8\u05d9\u05ea \u0627\u0644\u0639\u0631\u0628"
         "\u064a\u0629 \u0939\u093f\u0928\u094d\u0926\u0940 \u0e44\u0e17"
         "\u0e22", 256),
        ("emoji", "I love pizza \U0001f355! \U0001f600\U0001f600 "
         "\U0001f44d\U0001f3fd family: \U0001f468\u200d\U0001f469\u200d"
         "\U0001f467 flags \U0001f1eb\U0001f1f7 and \u2665 \u2605 "
         "hi\U0001f600", 256),
        ("control characters", "tab\there\nnew line\r\ncarriage\x00nul "
         "\x07bell \x1b[0m escape \u200bzero\u200dwidth \ufffd "
         "replacement \x85nel \x7fdel \ue000private", 256),
        ("repeated whitespace", "  many    spaces\t\t\tand\u00a0nbsp"
         "\u3000ideographic \u2003em\u2028line   \n\n  end  ", 256),
        ("long words", long_word + " short " + "a" * 100 + " " + "b" * 101
         + " " + "\u00e9" * 101 + " " + "x" * 99 + "\u0301", 256),
        ("empty", "", 256),
        ("only whitespace", "   \t\n \u3000 ", 256),
        ("added tokens", "a [MASK] b [CLS][SEP] [mask] [UNK]x [PAD][MAS", 256),
        ("code", "def f(x): return x**2 # comment <tag attr='v'>&amp;</tag> "
         "http://example.com/a?b=c&d=e", 256),
        ("truncation at 256", paragraph * 20, 256),
        ("truncation mid-word", "unbelievably " * 300, 256),
        ("truncation to 5", "The quick brown fox jumps.", 5),
        ("truncation to 2", "The quick brown fox jumps.", 2),
    ]
    for i in range(12):
        c.append((f"random {i}", random_text(rng, 60), 256))
    return c


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--unicode-check":
        unicode_check()
        return
    if len(sys.argv) != 2:
        sys.exit("usage: wordpiece_reference.py MODEL_DIR | --unicode-check")
    if tokenizers.__version__ != PINNED:
        sys.exit(f"tokenizers {tokenizers.__version__}; pinned {PINNED}")
    folder = sys.argv[1]
    with open(os.path.join(folder, "sentence_bert_config.json")) as f:
        max_seq = json.load(f)["max_seq_length"]
    assert max_seq == 256
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tok.no_padding()
    out = []
    for name, text, max_len in cases():
        tok.enable_truncation(max_length=max_len)
        ids = tok.encode(text).ids
        out.append({"name": name, "text": text, "max_len": max_len,
                    "ids": ids})
    # ASCII only, one case per line: small diffs when cases change.
    print("{\"tokenizers\": %s, \"cases\": [" % json.dumps(PINNED))
    print(",\n".join(json.dumps(c, ensure_ascii=True) for c in out))
    print("]}")


main()
