#!/usr/bin/env python3
"""Writes c4_test/data.json: a small stand-in for TorchTitan's
tests/assets/c4_test (JSON lines with C4's fields "text", "timestamp" and
"url"), made of titan's own text, not C4's: the paragraphs of README.md and
docs/*.md, plus generated lines of varied text (numbers, code, non-ASCII).

Deterministic: run it from the repository root to regenerate the committed
file (python3 test/Inputs/datasets/generate_c4_test.py).
"""

import json
import pathlib
import random

ROOT = pathlib.Path(__file__).resolve().parents[3]
OUT = pathlib.Path(__file__).resolve().parent / "c4_test" / "data.json"
MAX_BYTES = 250_000

WORDS = (
    "tensor shard rank mesh pipeline stage gradient optimizer checkpoint "
    "token sequence batch layer attention norm weight loss step compile "
    "kernel memory device collective reduce gather scatter schedule"
).split()
EXTRA = [
    "Zürich, Kraków and São Paulo are cities; naïve café résumé.",
    "数据并行的每个进程读取自己的文档。",
    "データ並列の各ランクは自分の文書を読む。",
    "Ёлки-палки, это тест токенизатора.",
    "emoji 🚀🔥 and symbols ∑ ∫ ≤ ≥ → ←",
    "    indented    with   runs of   spaces\tand\ttabs",
]


def paragraphs():
    """The non-empty paragraphs of the project's own documentation."""
    files = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    for path in files:
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            text = " ".join(line.strip() for line in block.splitlines()).strip()
            if len(text) > 40:
                yield text


def generated(rng, count):
    """Lines of varied text: arithmetic, code, word salad, non-ASCII."""
    for i in range(count):
        kind = i % 4
        if kind == 0:
            a, b = rng.randrange(10**6), rng.randrange(10**6)
            yield f"Sample {i}: {a} + {b} = {a + b}; {a} x 3 = {a * 3}."
        elif kind == 1:
            name = rng.choice(WORDS)
            yield (f"def {name}_{i}(x):\n    return x * {rng.randrange(100)}"
                   f" + {rng.random():.4f}  # {name}")
        elif kind == 2:
            yield " ".join(rng.choice(WORDS) for _ in range(rng.randrange(5, 60)))
        else:
            yield rng.choice(EXTRA) + f" ({i})"


def main():
    rng = random.Random(24)
    texts = list(paragraphs())
    texts += list(generated(rng, 400))
    rng.shuffle(texts)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    with OUT.open("w", encoding="utf-8") as out:
        for i, text in enumerate(texts):
            line = json.dumps({
                "text": text,
                "timestamp": f"2026-12-{1 + i % 28:02d}T00:00:00Z",
                "url": f"https://titan.invalid/doc/{i}",
            }, ensure_ascii=False) + "\n"
            size += len(line.encode("utf-8"))
            if size > MAX_BYTES:
                break
            out.write(line)


if __name__ == "__main__":
    main()
