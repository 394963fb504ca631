#!/usr/bin/env python3
"""Writes Llama 3's tokenizer.json from Meta's tokenizer.model as Meta's
Hugging Face file was made: transformers' TikTokenConverter (Llama 3's
pattern and special tokens: the Split + ByteLevel pre-tokenizer,
ignore_merges, 280147 merges), and the post-processor adding
<|begin_of_text|>, with a tokenizer_config.json naming BOS and EOS.
Usage: llama3_to_json.py TOKENIZER_MODEL OUTDIR
"""

import json
import os
import sys

from tokenizers import processors
from transformers.convert_slow_tokenizer import TikTokenConverter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from token_identity import LLAMA3_PATTERN, LLAMA3_SPECIALS  # noqa: E402


def main():
    model, outdir = sys.argv[1:3]
    tokenizer = TikTokenConverter(
        vocab_file=model, pattern=LLAMA3_PATTERN,
        additional_special_tokens=LLAMA3_SPECIALS).converted()
    bos = tokenizer.token_to_id("<|begin_of_text|>")
    tokenizer.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(
            single="<|begin_of_text|> $A",
            pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
            special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    os.makedirs(outdir, exist_ok=True)
    tokenizer.save(os.path.join(outdir, "tokenizer.json"))
    with open(os.path.join(outdir, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<|begin_of_text|>",
                   "eos_token": "<|end_of_text|>"}, f)


if __name__ == "__main__":
    main()
