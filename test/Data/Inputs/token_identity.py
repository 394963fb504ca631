#!/usr/bin/env python3
"""Checks that titan-tokenize gives the ids `tokenizers` or `tiktoken` gives.

  token_identity.py hf TITAN_TOKENIZE TOKENIZER_JSON WORKDIR CORPUS...
  token_identity.py tiktoken TITAN_TOKENIZE TOKENIZER_MODEL WORKDIR CORPUS...

Documents: every line of every corpus file, every whole file, adversarial
strings and 500 seeded random strings of characters regex engines may
disagree on. The reference is tokenizers' Tokenizer.from_file(...)
.encode(text).ids (its post-processor's BOS included, as titan-tokenize
--print-ids prints), or tiktoken.Encoding(Llama 3's pattern, the file's
ranks, Llama 3's 256 special tokens from len(ranks) on, as Meta's
llama3/tokenizer.py builds it).encode(text, allowed_special="all"). Also
checks that the reference decodes titan's ids back to each document. Prints
the first mismatch with its context and exits 1; else prints a summary.
"""

import base64
import os
import random
import subprocess
import sys

LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_SPECIALS = [
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|reserved_special_token_2|>",
    "<|reserved_special_token_3|>", "<|start_header_id|>",
    "<|end_header_id|>", "<|reserved_special_token_4|>", "<|eot_id|>",
] + [f"<|reserved_special_token_{i}|>" for i in range(5, 256 - 5)]

ADVERSARIAL = [
    "", " ", "  ", "      ", "\t", "\n", "\n\n\n", "\r\n\r\n", " \n \n ",
    "a", "ab", "   leading", "trailing   ", "x" * 500, " " * 300,
    "1" * 100, "12345678901234567890", "3.14159265358979323846",
    "=" * 200, "!!!???...", "''''", "'s 'S 'll 'LL 'Ve",
    "<|begin_of_text|>", "<|end_of_text|>", "<|begin_of_text|>hello",
    "text<|eot_id|>more<|start_header_id|>user<|end_header_id|>\n\nhi",
    "<|begin_of_text|><|begin_of_text|>", "<|reserved_special_token_100|>",
    "<|not_special|>", "<|begin_of_text", "<|reserved_special_token_250|>",
    "Hello世界Привет مرحبا नमस्ते 123abc456",
    "😀😀😀👨‍👩‍👧‍👦🇫🇷", "中文中文中文中文中文中文", "\u00a0\u2003\u3000\u200b",
    "\u0085 next line \u2028 line sep \u2029 para sep",
    "e\u0301\u0301\u0301", "Ǆǅǆ ﬁﬂ ẞß ſ'S K",
    "tabs\t\t\tand spaces   \t  mixed\t \t",
]


# Characters where regex engines may differ: Unicode spaces (NEL, NBSP, line
# separator), case folding in the contractions (long s, Kelvin sign, dotted
# I), digits and numbers of other scripts, combining marks, ZWJ sequences,
# and pieces of special tokens.
FUZZ_POOL = list(
    "aAbBsStTdDmMlLrReEvV'\u2019 \t\n\r\u00a0\u0085\u2028\u3000\u200b"
    "0123456789\u0661\u0662\u096a\u00bd\u00b2\u216b\u217b.,!?-_=+*/<>|(){}"
    "[]\"#@$%^&~`\\\u017f\u212a\u00df\u0130\u0131\u01c5\u4e2d\u6587\ud55c"
    "\u0645\u0631\u0928\u092e\u041f\u03a9\U0001f600\U0001f44d\U0001f3fd"
    "\u0301\u200d\U0001f1eb\U0001f1f7") + [
        "<|begin_of_text|>", "<|eot_id|>", "<|", "|>", "'s", "'LL", "'ve"]


def fuzz(count, seed=1):
    """`count` random strings of up to 40 pieces of FUZZ_POOL."""
    rng = random.Random(seed)
    return ["".join(rng.choice(FUZZ_POOL) for _ in range(rng.randint(0, 40)))
            for _ in range(count)]


def documents(corpus_files):
    docs = list(ADVERSARIAL) + fuzz(500)
    for path in corpus_files:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
        docs.append(text)
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        docs += lines
    return docs


def reference(kind, path):
    """(encode, decode) of the reference library."""
    if kind == "hf":
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(path)
        return (lambda text: tok.encode(text).ids,
                lambda ids: tok.decode(ids, skip_special_tokens=False))
    import tiktoken
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    specials = {t: len(ranks) + i for i, t in enumerate(LLAMA3_SPECIALS)}
    enc = tiktoken.Encoding(name="titan-test", pat_str=LLAMA3_PATTERN,
                            mergeable_ranks=ranks, special_tokens=specials)
    return (lambda text: enc.encode(text, allowed_special="all"),
            lambda ids: enc.decode(ids))


def titan_ids(titan_tokenize, tokenizer, workdir, docs):
    """titan-tokenize --print-ids on each document (one file each)."""
    os.makedirs(workdir, exist_ok=True)
    files = []
    for i, doc in enumerate(docs):
        path = os.path.join(workdir, f"doc{i}.txt")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(doc)
        files.append(path)
    out = subprocess.run(
        [titan_tokenize, "--tokenizer", tokenizer, "--print-ids", "--whole-files"] + files,
        check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout
    lines = out.decode().split("\n")
    assert lines[-1] == "" and len(lines) == len(docs) + 1, "one line per doc"
    return [[int(t) for t in line.split()] for line in lines[:-1]]


def report(i, doc, got, want, decode):
    at = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b),
              min(len(got), len(want)))
    lo = max(0, at - 5)
    print(f"MISMATCH in document {i} ({len(doc)} chars): {doc[:200]!r}")
    print(f"  first difference at id {at} (titan {len(got)} ids, reference "
          f"{len(want)})")
    print(f"  titan:     {got[lo:at + 5]} = "
          f"{[decode([t]) for t in got[lo:at + 5]]}")
    print(f"  reference: {want[lo:at + 5]} = "
          f"{[decode([t]) for t in want[lo:at + 5]]}")


def main():
    kind, titan_tokenize, tokenizer, workdir = sys.argv[1:5]
    docs = documents(sys.argv[5:])
    encode, decode = reference(kind, tokenizer)
    got_all = titan_ids(titan_tokenize, tokenizer, workdir, docs)
    # What the post-processor adds (tokenizers: the template's BOS).
    prefix = decode(encode(""))
    tokens = 0
    for i, (doc, got) in enumerate(zip(docs, got_all)):
        want = encode(doc)
        if got != want:
            report(i, doc, got, want, decode)
            return 1
        text = decode(got)
        if text != prefix + doc:
            print(f"ROUND TRIP in document {i}: {doc[:200]!r} -> {text[:200]!r}")
            return 1
        tokens += len(got)
    print(f"{kind}: {len(docs)} documents, {tokens} ids identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
