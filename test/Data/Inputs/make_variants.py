#!/usr/bin/env python3
"""Writes variants of the test tokenizer.json into OUTDIR, for the other
forms the loader reads:
  legacy/tokenizer.json  merges as "a b" strings (tokenizers before 0.20),
                         and added tokens that are not special: normalized
                         (matched after the special ones), one overlapping
                         another, one a prefix of a special token
  gpt2/tokenizer.json    GPT-2's pre-tokenizer: ByteLevel with use_regex,
                         no Split, no ignore_merges, no post-processor
Usage: make_variants.py TOKENIZER_JSON OUTDIR
"""

import copy
import json
import os
import sys


def write(outdir, name, data):
    os.makedirs(os.path.join(outdir, name), exist_ok=True)
    with open(os.path.join(outdir, name, "tokenizer.json"), "w") as f:
        json.dump(data, f, ensure_ascii=False)


def main():
    source, outdir = sys.argv[1:3]
    with open(source, encoding="utf-8") as f:
        data = json.load(f)
    legacy = copy.deepcopy(data)
    legacy["model"]["merges"] = [" ".join(m) for m in data["model"]["merges"]]
    next_id = max(t["id"] for t in data["added_tokens"]) + 1
    for i, content in enumerate(["tokenizer", "ize", "<|eot", " the"]):
        legacy["added_tokens"].append({
            "id": next_id + i, "content": content, "single_word": False,
            "lstrip": False, "rstrip": False, "normalized": True,
            "special": False})
    write(outdir, "legacy", legacy)
    gpt2 = copy.deepcopy(data)
    gpt2["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False,
                             "trim_offsets": True, "use_regex": True}
    gpt2["model"]["ignore_merges"] = False
    gpt2["post_processor"] = None
    write(outdir, "gpt2", gpt2)


if __name__ == "__main__":
    main()
