#!/usr/bin/env python3
"""Makes the test tokenizer in tokenizer/: a byte-level BPE trained with
`tokenizers` on titan's own text (README.md, docs/*.md) and
corpus-multilingual.txt, with Llama 3's split regex and special tokens, in
both of Llama 3's formats:

  tokenizer.json         as Meta's Hugging Face file (Split + ByteLevel
                         pre-tokenizer, ignore_merges, a TemplateProcessing
                         post-processor adding <|begin_of_text|>)
  tokenizer_config.json  bos/eos and added_tokens_decoder as Llama 3's
  tokenizer.model        the same BPE as tiktoken ranks ("<base64> <rank>")

1792 regular tokens + 256 special ones = 2048, the debug model's vocab_size.
Run from the repository root: .venv/bin/python test/Data/Inputs/make_tokenizer.py
The committed files are the tests' (titan-tokenize.test names some of their
ids): README.md and docs/ have changed since, so a rerun trains another BPE.
"""

import base64
import glob
import json
import os

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models
from tokenizers import pre_tokenizers, processors, trainers

# Meta's llama3/tokenizer.py pat_str; its tokenizer.json's Split regex.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Meta's llama3/tokenizer.py special_tokens (256, ids from the regular ones on).
LLAMA3_SPECIALS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|reserved_special_token_2|>",
    "<|reserved_special_token_3|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|reserved_special_token_4|>",
    "<|eot_id|>",
] + [f"<|reserved_special_token_{i}|>" for i in range(5, 256 - 5)]
REGULAR_TOKENS = 1792


def byte_decoder():
    """GPT-2's bytes_to_unicode, inverted: byte-level character -> byte."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD))
          + list(range(0xAE, 0x100)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", "..", ".."))
    sources = [os.path.join(root, "README.md")]
    sources += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    sources.append(os.path.join(here, "corpus-multilingual.txt"))
    texts = []
    for path in sources:
        with open(path, encoding="utf-8") as f:
            texts += f.read().split("\n\n")

    tokenizer = Tokenizer(models.BPE(ignore_merges=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated",
                             invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=REGULAR_TOKENS, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer)
    assert tokenizer.get_vocab_size() == REGULAR_TOKENS
    tokenizer.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t in LLAMA3_SPECIALS])
    bos = tokenizer.token_to_id("<|begin_of_text|>")
    tokenizer.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(
            single="<|begin_of_text|> $A",
            pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
            special_tokens=[("<|begin_of_text|>", bos)]),
    ])

    out = os.path.join(here, "tokenizer")
    os.makedirs(out, exist_ok=True)
    tokenizer.save(os.path.join(out, "tokenizer.json"))

    config = {
        "bos_token": "<|begin_of_text|>",
        "eos_token": "<|end_of_text|>",
        "added_tokens_decoder": {
            str(REGULAR_TOKENS + i): {
                "content": t, "lstrip": False, "normalized": False,
                "rstrip": False, "single_word": False, "special": True}
            for i, t in enumerate(LLAMA3_SPECIALS)
        },
        "clean_up_tokenization_spaces": True,
        "model_input_names": ["input_ids", "attention_mask"],
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")

    decoder = byte_decoder()
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    with open(os.path.join(out, "tokenizer.model"), "w") as f:
        for token, rank in sorted(vocab.items(), key=lambda item: item[1]):
            raw = bytes(decoder[c] for c in token)
            f.write(f"{base64.b64encode(raw).decode()} {rank}\n")


if __name__ == "__main__":
    main()
