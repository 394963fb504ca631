#!/usr/bin/env python3
"""Tokens/s of titan's tokenizers against `tokenizers` and `tiktoken`.

Both sides encode the same synthetic corpus (the lines of the multilingual
test corpus, README.md and docs/*.md, shuffled and joined by spaces into
documents of about --doc-kib KiB, a C4 document's size, up to --mib MiB),
on one thread: titan-tokenize (one document per line; the encoding
time it reports, not loading or reading) against Tokenizer.encode called per
document (encode_batch, which runs on several threads, is not used) and
tiktoken's Encoding.encode per document. Interleaved rounds; the best and the median
round's tokens/s, and the ratio of the medians.

  .venv/bin/python bench/tokenizer/tokenizer_throughput.py \
      --out bench/results/tokenizer-throughput.md
"""

import argparse
import glob
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import common  # noqa: E402

INPUTS = os.path.join(common.ROOT, "test", "Data", "Inputs")
sys.path.insert(0, INPUTS)
import token_identity  # noqa: E402


def corpus(mib, doc_kib, seed=0):
    sources = [os.path.join(INPUTS, "corpus-multilingual.txt"),
               os.path.join(common.ROOT, "README.md")]
    sources += sorted(glob.glob(os.path.join(common.ROOT, "docs", "*.md")))
    lines = []
    for path in sources:
        with open(path, encoding="utf-8") as f:
            lines += [l for l in f.read().split("\n") if l.strip()]
    rng = random.Random(seed)
    docs, doc, size = [], [], 0
    while size < mib * 1048576:
        line = rng.choice(lines)
        doc.append(line)
        size += len(line.encode()) + 1
        if sum(len(l) + 1 for l in doc) >= doc_kib * 1024:
            docs.append(" ".join(doc))
            doc = []
    return docs


def titan_rate(titan, tokenizer, path):
    err = subprocess.run(
        [titan, "--tokenizer", tokenizer, "-o", os.devnull, path],
        check=True, stderr=subprocess.PIPE, text=True).stderr
    match = re.search(r"(\d+) tokens, .* ([0-9.]+) tokens/s encoding", err)
    return int(match.group(1)), float(match.group(2))


def python_rate(encode, lines):
    start = time.perf_counter()
    tokens = sum(len(encode(line)) for line in lines)
    return tokens, tokens / (time.perf_counter() - start)


def row(name, titan, ref):
    ratio = statistics.median(titan) / statistics.median(ref)
    fmt = lambda r: f"{max(r) / 1e6:.2f} / {statistics.median(r) / 1e6:.2f}"
    return f"| {name} | {fmt(titan)} | {fmt(ref)} | {ratio:.2f}x |"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--titan-tokenize",
                        default=os.path.join(common.ROOT, "build", "bin",
                                             "titan-tokenize"))
    parser.add_argument("--mib", type=float, default=4)
    parser.add_argument("--doc-kib", type=float, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--llama3-model",
                        help="Meta's Llama 3 tokenizer.model (llama-models "
                             "ships it): also measured against tiktoken")
    parser.add_argument("--out")
    args = parser.parse_args()

    from tokenizers import Tokenizer
    tokdir = os.path.join(INPUTS, "tokenizer")
    hf = Tokenizer.from_file(os.path.join(tokdir, "tokenizer.json"))
    model = os.path.join(tokdir, "tokenizer.model")
    tiktoken_encode, _ = token_identity.reference("tiktoken", model)
    lines = corpus(args.mib, args.doc_kib)
    measured = [
        ("titan-hf", lambda: titan_rate(args.titan_tokenize,
                                        os.path.join(tokdir, "tokenizer.json"), path)),
        ("tokenizers", lambda: python_rate(lambda t: hf.encode(t).ids, lines)),
        ("titan-tt", lambda: titan_rate(args.titan_tokenize, model, path)),
        ("tiktoken", lambda: python_rate(tiktoken_encode, lines)),
    ]
    if args.llama3_model:
        llama3_encode, _ = token_identity.reference("tiktoken", args.llama3_model)
        measured += [
            ("titan-llama3", lambda: titan_rate(args.titan_tokenize,
                                                args.llama3_model, path)),
            ("tiktoken-llama3", lambda: python_rate(llama3_encode, lines)),
        ]
    rates = {key: [] for key, _ in measured}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        counts = {}
        for _ in range(args.rounds):
            for key, measure in measured:
                counts[key], rate = measure()
                rates[key].append(rate)
    size = sum(len(l.encode()) + 1 for l in lines) / 1048576
    text = f"""# Tokenizer throughput: titan against tokenizers and tiktoken ({args.rounds} rounds, best / median)

Machine: {common.machine()}; load average {os.getloadavg()[0]:.1f} at the
end (the machine is shared: both sides ran interleaved under the same load).

One thread; {len(lines)} documents of about {args.doc_kib:g} KiB, {size:.1f} MiB, from the
lines of the test corpus, README.md and docs/*.md; the test tokenizer
(test/Data/Inputs/tokenizer: 1792 BPE tokens + 256 specials, Llama 3's regex).
titan: `titan-tokenize -o /dev/null` (the encoding time it reports; with
BOS/EOS per document: {counts['titan-hf']} ids). tokenizers 0.20.3:
`Tokenizer.encode(document)` per document ({counts['tokenizers']} ids, BOS by its
post-processor, no EOS). tiktoken 0.14.0: `Encoding.encode(document,
allowed_special="all")` ({counts['tiktoken']} ids; titan {counts['titan-tt']}
with BOS/EOS).

| format | titan M tokens/s | reference M tokens/s | titan / reference (median) |
|---|---|---|---|
{row("tokenizer.json vs tokenizers", rates["titan-hf"], rates["tokenizers"])}
{row("tokenizer.model vs tiktoken", rates["titan-tt"], rates["tiktoken"])}
"""
    if args.llama3_model:
        text += row("Meta's Llama 3 tokenizer.model (128256 ids) vs tiktoken",
                    rates["titan-llama3"], rates["tiktoken-llama3"]) + "\n"
    common.write_result(text, args.out)


if __name__ == "__main__":
    main()
