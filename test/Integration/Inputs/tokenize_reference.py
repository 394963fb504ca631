#!/usr/bin/env python3
"""The .bin titan-tokenize must write for a JSON-lines dataset, by the
`tokenizers` package and TorchTitan v0.2.0's HuggingFaceTokenizer.encode
(torchtitan/components/tokenizer.py): tokenizer.encode(text).ids, then BOS
(tokenizer_config.json's bos_token) inserted and EOS appended unless the
tokenizer's post-processor already adds them (TorchTitan probes that by
encoding a test string).

  tokenize_reference.py TOKENIZER_DIR DATA.json OUT.bin
"""

import json
import pathlib
import struct
import sys

from tokenizers import Tokenizer


def main():
    folder, data, out = sys.argv[1:]
    tok = Tokenizer.from_file(str(pathlib.Path(folder) / "tokenizer.json"))
    config = json.loads((pathlib.Path(folder) / "tokenizer_config.json").read_text())

    def special(name):
        token = config.get(name)
        if isinstance(token, dict):
            token = token["content"]
        return tok.token_to_id(token) if token else None

    bos, eos = special("bos_token"), special("eos_token")
    probe = tok.encode("test").ids
    adds_bos = bool(probe) and probe[0] == bos
    adds_eos = bool(probe) and probe[-1] == eos
    ids = []
    for line in open(data, encoding="utf-8"):
        if not line.strip():
            continue
        doc = tok.encode(json.loads(line)["text"]).ids
        if bos is not None and not adds_bos:
            doc.insert(0, bos)
        if eos is not None and not adds_eos:
            doc.append(eos)
        ids += doc
    pathlib.Path(out).write_bytes(struct.pack(f"<{len(ids)}I", *ids))


if __name__ == "__main__":
    main()
