#!/usr/bin/env python3
"""Writes the generated seeds of titan's fuzz targets into fuzz/seeds.

Independent of titan's own writers: the files follow the formats as their
specifications give them (safetensors: 8-byte little-endian header length,
JSON header, data; titan's checkpoint index as docs/checkpoints.md gives
it; Hugging Face's model.safetensors.index.json; tokenizer.json and
tiktoken files cut from test/Data/Inputs/tokenizer). The model is
fuzz/RuntimeModel.cpp's. Run it again after changing either; the manifest
seeds come from titan-compile (see fuzz/README.md).
"""
import base64
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(HERE, "seeds")
SOURCE = os.path.dirname(HERE)

# fuzz/RuntimeModel.cpp's parameters, in its order.
MODEL = [
    ("tok_embeddings.weight", [16, 8]),
    ("layers.0.attention_norm.weight", [8]),
    ("layers.0.attention.wq.weight", [8, 8]),
    ("layers.0.attention.wk.weight", [8, 8]),
    ("layers.0.attention.wv.weight", [8, 8]),
    ("layers.0.attention.wo.weight", [8, 8]),
    ("layers.0.ffn_norm.weight", [8]),
    ("layers.0.feed_forward.w1.weight", [16, 8]),
    ("layers.0.feed_forward.w2.weight", [8, 16]),
    ("layers.0.feed_forward.w3.weight", [16, 8]),
    ("norm.weight", [8]),
    ("output.weight", [16, 8]),
]
# TorchTitan v0.2.0's Llama3StateDictAdapter names.
HF_LAYER = {
    "attention.wq.weight": "self_attn.q_proj.weight",
    "attention.wk.weight": "self_attn.k_proj.weight",
    "attention.wv.weight": "self_attn.v_proj.weight",
    "attention.wo.weight": "self_attn.o_proj.weight",
    "feed_forward.w1.weight": "mlp.gate_proj.weight",
    "feed_forward.w3.weight": "mlp.up_proj.weight",
    "feed_forward.w2.weight": "mlp.down_proj.weight",
    "attention_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
}
HF_MODEL = {
    "tok_embeddings.weight": "model.embed_tokens.weight",
    "norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}


def hf_name(name):
    if name in HF_MODEL:
        return HF_MODEL[name]
    _, layer, rest = name.split(".", 2)
    return f"model.layers.{layer}.{HF_LAYER[rest]}"


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def write(surface, name, data):
    folder = os.path.join(SEEDS, surface)
    os.makedirs(folder, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(folder, name), mode) as f:
        f.write(data)


def safetensors(tensors, dtype, metadata=None):
    size = {"F32": 4, "BF16": 2, "F16": 2}[dtype]
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, shape in tensors:
        end = offset + numel(shape) * size
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, end]}
        offset = end
    text = json.dumps(header, separators=(",", ":")).encode()
    data = bytes((i * 7) & 0xFF for i in range(offset))
    return struct.pack("<Q", len(text)) + text + data


def checkpoint_index(ranks):
    tensors = {}
    for kind in ("param", "exp_avg", "exp_avg_sq"):
        for name, shape in MODEL:
            rows = shape[0] // ranks
            blocks = []
            for r in range(ranks):
                start = [r * rows] + [0] * (len(shape) - 1)
                size = [rows] + shape[1:]
                blocks.append({
                    "file": f"shard-{r:05d}-of-{ranks:05d}.safetensors",
                    "start": start, "size": size,
                    "xxh3_64": f"{(r * 2654435761 + len(name)) & (2**64 - 1):016x}"})
            tensors[f"{kind}:{name}"] = {"shape": shape, "dtype": "F32",
                                         "blocks": blocks}
    return json.dumps({
        "format": "titan-checkpoint", "version": 1,
        "training_state": {
            "step": 10, "samples_consumed": 80, "tokens_seen": 20480,
            "rng": {"seed": 42},
            "data_positions": [{"document": 3, "token": 17}] * ranks},
        "tensors": tensors}, indent=1)


def small_tokenizer_json():
    with open(os.path.join(SOURCE, "test/Data/Inputs/tokenizer/tokenizer.json"),
              encoding="utf-8") as f:
        t = json.load(f)
    keep = {tok: i for tok, i in t["model"]["vocab"].items() if i < 300}
    t["model"]["vocab"] = keep
    t["model"]["merges"] = [m for m in t["model"]["merges"]
                            if m[0] in keep and m[1] in keep
                            and m[0] + m[1] in keep]
    added = t["added_tokens"][:4]
    for i, a in enumerate(added):
        a["id"] = 300 + i
    t["added_tokens"] = added
    renumber = {a["content"]: a["id"] for a in added}
    for processor in t["post_processor"].get("processors", []):
        for name, special in processor.get("special_tokens", {}).items():
            special["ids"] = [renumber[name]]
    return json.dumps(t, ensure_ascii=False, indent=1)


def small_tiktoken():
    lines = []
    for rank in range(256):
        lines.append(f"{base64.b64encode(bytes([rank])).decode()} {rank}")
    for rank, token in enumerate([b"th", b"he", b" t", b"the", b" the"], 256):
        lines.append(f"{base64.b64encode(token).decode()} {rank}")
    return "\n".join(lines) + "\n"


def main():
    write("safetensors", "titan-f32.safetensors", safetensors(MODEL, "F32"))
    write("safetensors", "hf-bf16.safetensors",
          safetensors([(hf_name(n), s) for n, s in MODEL], "BF16",
                      {"format": "pt"}))
    write("safetensors", "titan-f16.safetensors",
          safetensors(list(reversed(MODEL)), "F16"))
    write("checkpoint-index", "one-rank.json", checkpoint_index(1))
    write("checkpoint-index", "two-ranks.json", checkpoint_index(2))
    half = len(MODEL) // 2
    weight_map = {hf_name(n): f"model-0000{1 + (i >= half)}-of-00002.safetensors"
                  for i, (n, _) in enumerate(MODEL)}
    write("hf-index", "two-files.json", json.dumps(
        {"metadata": {"total_size": 4 * sum(numel(s) for _, s in MODEL)},
         "weight_map": weight_map}, indent=2))
    write("tokenizer-json", "small.json", small_tokenizer_json())
    write("tokenizer-model", "small.model", small_tiktoken())
    write("tokenize", "ascii.txt", "The quick brown fox jumps over the lazy dog.\n")
    write("tokenize", "special.txt",
          "<|begin_of_text|>Hello<|end_of_text|> <|eot_id|>\r\n\t 42 123456")
    write("tokenize", "invalid-utf8.bin", b"caf\xc3 \xff\xfe abc \xe6\x97\xa5\x80")


if __name__ == "__main__":
    main()
