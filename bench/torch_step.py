#!/usr/bin/env python3
"""The PyTorch baselines of bench/cpu_train_step.py: the same Llama training
steps as titan's, written the ways a PyTorch user would run them on a CPU.

  --variant reference  the test suite's independent model
                       (test/Integration/Inputs/llama_reference.py) as is:
                       explicit scores, mask and softmax, K/V repeated per
                       query head;
  --variant sdpa       the same model with
                       F.scaled_dot_product_attention(is_causal=True) on
                       K/V expanded per group (PyTorch's fused CPU flash
                       attention);
  --variant compile    the sdpa model's loss under torch.compile (inductor).
  --dtype bf16         runs the model under torch.autocast("cpu", bfloat16)
                       (f32 master weights and AdamW, bf16 GEMMs and
                       attention), what a CPU user would pick; titan's bf16
                       is the TorchTitan mixed-precision policy instead, so
                       the two compare throughput, not bits.

Weights, tokens, AdamW, clipping and the schedule are the reference's; the
metrics (one JSON line per step, tokens_per_second) are written to --out in
the reference's format. Runs under any PyTorch >= 2.1 (the bench's venv).
"""

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "test", "Integration", "Inputs"))
import llama_reference as ref  # noqa: E402


def forward_loss_sdpa(a, p, tokens, labels, freqs_cis):
    """llama_reference.forward_loss with PyTorch's fused causal attention."""
    bsz, seq = tokens.shape
    h = p["tok_embeddings.weight"][tokens]
    groups = a.n_heads // a.n_kv_heads
    for i in range(a.n_layers):
        q = f"layers.{i}."
        x = ref.rms_norm(h, p[q + "attention_norm.weight"], a.norm_eps)
        xq = (x @ p[q + "attention.wq.weight"].T).view(bsz, seq, a.n_heads, a.head_dim)
        xk = (x @ p[q + "attention.wk.weight"].T).view(bsz, seq, a.n_kv_heads, a.head_dim)
        xv = (x @ p[q + "attention.wv.weight"].T).view(bsz, seq, a.n_kv_heads, a.head_dim)
        xq, xk = ref.apply_rope(xq, freqs_cis), ref.apply_rope(xk, freqs_cis)
        if groups > 1:
            xk = xk.repeat_interleave(groups, dim=2)
            xv = xv.repeat_interleave(groups, dim=2)
        o = F.scaled_dot_product_attention(
            xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2),
            is_causal=True).transpose(1, 2)
        h = h + o.reshape(bsz, seq, -1) @ p[q + "attention.wo.weight"].T
        x = ref.rms_norm(h, p[q + "ffn_norm.weight"], a.norm_eps)
        g = F.silu(x @ p[q + "feed_forward.w1.weight"].T) * (
            x @ p[q + "feed_forward.w3.weight"].T)
        h = h + g @ p[q + "feed_forward.w2.weight"].T
    h = ref.rms_norm(h, p["norm.weight"], a.norm_eps)
    logits = h @ p["output.weight"].T
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))


def main():
    ap = argparse.ArgumentParser()
    for k in ("model", "config", "weights", "tokens", "out"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--variant", choices=["reference", "sdpa", "compile"],
                    required=True)
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    a = ref.Args(ref.load_toml(args.model))
    c = ref.load_toml(args.config)
    t, o, s = c["training"], c["optimizer"], c["lr_scheduler"]
    seq, batch, steps = t["seq_len"], t["local_batch_size"], t["steps"]
    names, params, tokens = ref.training_inputs(a, args.weights, args.tokens,
                                                 seq)
    samples = tokens.shape[0]
    opt, sched = ref.optimizer(params, names, o, s, steps)
    freqs_cis = ref.rope_freqs(a, seq)

    loss_fn = (ref.forward_loss if args.variant == "reference"
               else forward_loss_sdpa)
    if args.variant == "compile":
        loss_fn = torch.compile(loss_fn)

    def step_loss(x, y):
        if args.dtype == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return loss_fn(a, params, x, y, freqs_cis)
        return loss_fn(a, params, x, y, freqs_cis)

    start = time.perf_counter()
    with open(args.out, "w") as out:
        for step in range(steps):
            step_start = time.perf_counter()
            opt.zero_grad()
            rows = [(step * batch + r) % samples for r in range(batch)]
            b = tokens[rows]
            loss = step_loss(b[:, :-1], b[:, 1:])
            loss.backward()
            ref.optimizer_step(opt, sched, [params[n] for n in names],
                               t.get("max_norm", 1.0), out, step, loss.item(),
                               batch * seq, step_start, start)


if __name__ == "__main__":
    main()
