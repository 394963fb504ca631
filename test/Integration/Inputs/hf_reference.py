#!/usr/bin/env python3
"""transformers' side of the Hugging Face checkpoint tests (hf-*.test).

  hf_reference.py init --model M.toml --seed S --out DIR
                       [--max-shard-size 200KB] [--bf16-out DIR2]
      A LlamaForCausalLM of the titan model TOML's shape (random init),
      saved with save_pretrained (safetensors, float32), and with --bf16-out
      also in bfloat16 (one file).
  hf_reference.py loss --tokens T.bin --seq N --batch B [--tol 1e-5]
                       --check DIR METRICS.jsonl [--check ...]
      Loads each DIR into LlamaForCausalLM (eager attention, float32; every
      tensor must be in the checkpoint), computes the mean cross-entropy of
      titan's first step (samples 0..B-1 of N + 1 tokens of the uint32 token
      file: inputs the first N, labels the last N) and compares it with the
      first-step loss titan logged in METRICS.jsonl; exits 1 if one differs
      by more than the tolerance.

  hf_reference.py reshape --file F.safetensors --tensor NAME --shape A,B
      Rewrites the header of F so that tensor NAME has another shape of the
      same size (its bytes unchanged): a mis-shaped tensor.

The model's dimensions follow titan (and TorchTitan v0.2.0's
TransformerModelArgs / FeedForward): intermediate_size = multiple_of *
ceil(int(ffn_dim_multiplier * int(8 * dim / 3)) / multiple_of), and
[rope_scaling] becomes rope_scaling {"rope_type": "llama3", ...}.
"""

import argparse
import json
import struct
import sys
import tomllib

import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM


def llama_config(path):
    with open(path, "rb") as f:
        m = tomllib.load(f)
    dim, multiple_of = m["dim"], m.get("multiple_of", 256)
    hidden = int(2 * (4 * dim) / 3)
    if "ffn_dim_multiplier" in m:
        hidden = int(m["ffn_dim_multiplier"] * hidden)
    hidden = multiple_of * ((hidden + multiple_of - 1) // multiple_of)
    s = m.get("rope_scaling")
    return LlamaConfig(
        hidden_size=dim,
        intermediate_size=hidden,
        num_hidden_layers=m["n_layers"],
        num_attention_heads=m["n_heads"],
        num_key_value_heads=m.get("n_kv_heads", m["n_heads"]),
        head_dim=dim // m["n_heads"],
        vocab_size=m["vocab_size"],
        rms_norm_eps=m.get("norm_eps", 1e-5),
        rope_theta=m.get("rope_theta", 10000.0),
        rope_scaling=None if s is None else {
            "rope_type": "llama3",
            "factor": s["scaling_factor"],
            "low_freq_factor": s["low_freq_factor"],
            "high_freq_factor": s["high_freq_factor"],
            "original_max_position_embeddings":
                s["original_max_position_embeddings"]},
        max_position_embeddings=m.get("max_seq_len", 2048),
        tie_word_embeddings=False)


def init(args):
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(llama_config(args.model))
    # A wider init than transformers' (std 0.02), so the loss depends on
    # the weights well beyond the tolerance.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.5 / p.shape[1] ** 0.5)
            else:
                p.uniform_(0.5, 1.5)
    model.save_pretrained(args.out, safe_serialization=True,
                          max_shard_size=args.max_shard_size)
    if args.bf16_out:
        model.to(torch.bfloat16).save_pretrained(args.bf16_out,
                                                 safe_serialization=True)


def first_step_loss(titan_metrics):
    with open(titan_metrics) as f:
        for line in f:
            record = json.loads(line)
            if record["step"] == 1:
                return record["loss"]
    sys.exit(f"{titan_metrics}: no step 1")


def check(folder, titan_metrics, samples, tol):
    model, info = LlamaForCausalLM.from_pretrained(
        folder, torch_dtype=torch.float32, attn_implementation="eager",
        output_loading_info=True)
    if any(info[k] for k in ("missing_keys", "unexpected_keys",
                             "mismatched_keys", "error_msgs")):
        sys.exit(f"{folder}: transformers did not load every tensor: {info}")
    # The RoPE variant titan compiled (llama3 frequency scaling) is the one
    # transformers runs.
    rope = (model.config.rope_scaling or {}).get("rope_type", "default")
    model.eval()
    with torch.no_grad():
        logits = model(samples[:, :-1]).logits
        expected = F.cross_entropy(logits.flatten(0, 1).float(),
                                   samples[:, 1:].flatten()).item()
    actual = first_step_loss(titan_metrics)
    diff = abs(actual - expected)
    print(f"{folder}: rope {rope}, {len(list(model.parameters()))} tensors; "
          f"first-step loss: titan {actual:.9f} transformers {expected:.9f} "
          f"|difference| {diff:.3e} {'ok' if diff <= tol else 'FAIL'}")
    return diff <= tol


def loss(args):
    tokens = torch.frombuffer(bytearray(open(args.tokens, "rb").read()),
                              dtype=torch.int32).long()
    n = args.seq + 1
    samples = tokens[: args.batch * n].view(args.batch, n)
    ok = [check(folder, metrics, samples, args.tol)
          for folder, metrics in args.check]
    sys.exit(0 if all(ok) else 1)


def reshape(args):
    with open(args.file, "r+b") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        header[args.tensor]["shape"] = [int(d) for d in args.shape.split(",")]
        text = json.dumps(header, separators=(",", ":")).encode()
        assert len(text) <= n, "the new header must fit in the old one"
        f.seek(8)
        f.write(text + b" " * (n - len(text)))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("init")
    i.add_argument("--model", required=True)
    i.add_argument("--seed", type=int, default=0)
    i.add_argument("--out", required=True)
    i.add_argument("--max-shard-size", default="5GB")
    i.add_argument("--bf16-out")
    ls = sub.add_parser("loss")
    ls.add_argument("--tokens", required=True)
    ls.add_argument("--check", nargs=2, action="append", required=True,
                    metavar=("DIR", "METRICS"))
    ls.add_argument("--seq", type=int, required=True)
    ls.add_argument("--batch", type=int, required=True)
    ls.add_argument("--tol", type=float, default=1e-5)
    rs = sub.add_parser("reshape")
    for k in ("file", "tensor", "shape"):
        rs.add_argument("--" + k, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    {"init": init, "loss": loss, "reshape": reshape}[args.cmd](args)


if __name__ == "__main__":
    main()
