#!/usr/bin/env python3
"""An independent model of the samples TorchTitan v0.2.0's
HuggingFaceDataset (torchtitan/datasets/hf_datasets.py) yields for a local
dataset, with titan's byte tokenizer (id = byte, no BOS or EOS):

  - the documents: the "text" of every line of the folder's *.json / *.jsonl
    files in sorted path order;
  - split_dataset_by_node(ds, rank, world) of a map-style dataset, which is
    ds.shard(world, rank, contiguous=True): documents
    [rank * (n // world) + min(rank, n % world), ...), the first n % world
    ranks one more;
  - packing: the tokens of each document appended to a buffer, cut into
    windows of seq_len + 1, looping over the share forever.

  text_windows.py FOLDER --seq-len L --dp D --batch B --accumulation A
                  --steps S --out tokens.bin

writes the windows that a run of S steps reads, in the order titan's
trainer numbers its samples (step, microbatch, data-parallel rank, row), as
a .bin token file: training on it reads, sample for sample, what training
on the text with D data-parallel ranks reads. It prints each rank's
position after the S steps as JSON: [{"document": d, "token": t}, ...].
"""

import argparse
import json
import pathlib
import struct


def documents(folder):
    files = sorted(p for p in pathlib.Path(folder).rglob("*")
                   if p.suffix in (".json", ".jsonl"))
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                yield json.loads(line)["text"]


def stream(docs, begin, count, seq_len):
    """(window, where the next window starts: (document, token)) forever."""
    buffer, owners, doc = [], [], 0  # tokens, and (document, token) of each
    while True:
        while len(buffer) < seq_len + 1:
            ids = list(docs[begin + doc].encode("utf-8"))
            buffer += ids
            owners += [(begin + doc, t) for t in range(len(ids))]
            doc = (doc + 1) % count
        window = buffer[:seq_len + 1]
        buffer, owners = buffer[seq_len + 1:], owners[seq_len + 1:]
        yield window, owners[0] if owners else (begin + doc, 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    for name in ("seq-len", "dp", "batch", "accumulation", "steps"):
        ap.add_argument("--" + name, type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    docs = list(documents(args.folder))
    n, d = len(docs), args.dp
    per_rank, positions = [], []
    for r in range(d):
        begin = r * (n // d) + min(r, n % d)
        windows = stream(docs, begin, n // d + (r < n % d), args.seq_len)
        per_rank.append([])
        for _ in range(args.steps * args.accumulation * args.batch):
            window, position = next(windows)
            per_rank[r].append(window)
        positions.append(position)
    with open(args.out, "wb") as out:
        for s in range(args.steps):
            for m in range(args.accumulation):
                for r in range(d):
                    for row in range(args.batch):
                        i = (s * args.accumulation + m) * args.batch + row
                        out.write(struct.pack(f"<{args.seq_len + 1}I",
                                              *per_rank[r][i]))
    print(json.dumps([{"document": doc, "token": tok}
                      for doc, tok in positions]))


if __name__ == "__main__":
    main()
