"""The training step bench/gpu/run.sh compares titan with: a plain PyTorch
Llama (TorchTitan's llama3 model: RMSNorm, RoPE, GQA attention on SDPA,
SwiGLU FFN, untied output), fp32 master weights under bf16 autocast, f32
logits for the loss, clip_grad_norm_ and fused AdamW; eager or under
torch.compile. Prints one JSON line: tokens/s and MFU (TorchTitan's 6 N +
12 L H Q T FLOPs per token, N without the embedding) at the min and median
step time after the warm-up steps."""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope_angles(seq, head_dim, theta, device):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    return torch.outer(torch.arange(seq, device=device).float(), inv)


def apply_rope(x, angles):
    # x: B S H D, pairs (2j, 2j+1) rotated as TorchTitan's complex product.
    x2 = x.float().unflatten(-1, (-1, 2))
    c, s = angles.cos()[None, :, None, :], angles.sin()[None, :, None, :]
    a, b = x2[..., 0], x2[..., 1]
    return torch.stack((a * c - b * s, a * s + b * c), -1).flatten(-2).type_as(x)


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.h, self.kv, self.hd = a.heads, a.kv_heads, a.dim // a.heads
        self.attention_norm = RMSNorm(a.dim, 1e-5)
        self.ffn_norm = RMSNorm(a.dim, 1e-5)
        self.wq = nn.Linear(a.dim, a.heads * self.hd, bias=False)
        self.wk = nn.Linear(a.dim, a.kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(a.dim, a.kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(a.heads * self.hd, a.dim, bias=False)
        self.w1 = nn.Linear(a.dim, a.ffn, bias=False)
        self.w2 = nn.Linear(a.ffn, a.dim, bias=False)
        self.w3 = nn.Linear(a.dim, a.ffn, bias=False)

    def forward(self, x, angles):
        b, s, _ = x.shape
        h = self.attention_norm(x)
        q = apply_rope(self.wq(h).view(b, s, self.h, self.hd), angles)
        k = apply_rope(self.wk(h).view(b, s, self.kv, self.hd), angles)
        v = self.wv(h).view(b, s, self.kv, self.hd)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True,
                                           enable_gqa=True)
        x = x + self.wo(o.transpose(1, 2).reshape(b, s, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tok_embeddings = nn.Embedding(a.vocab, a.dim)
        self.layers = nn.ModuleList(Block(a) for _ in range(a.layers))
        self.norm = RMSNorm(a.dim, 1e-5)
        self.output = nn.Linear(a.dim, a.vocab, bias=False)
        self.register_buffer("angles", rope_angles(a.seq, a.dim // a.heads, 500000.0,
                                                   "cuda"), persistent=False)

    def forward(self, tokens):
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x, self.angles)
        return self.output(self.norm(x)).float()


def main():
    try:
        run()
    except torch.cuda.OutOfMemoryError as e:
        # Itself a result: the model does not fit this way.
        print(json.dumps({"impl": "pytorch " + sys.argv[sys.argv.index("--mode") + 1]
                          if "--mode" in sys.argv else "pytorch",
                          "error": "out of GPU memory: " + str(e).split("\n")[0]}),
              flush=True)


def run():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--dim", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    a = ap.parse_args()
    torch.manual_seed(0)
    # Built on the GPU: a 16-layer 8B-shaped model's default init on the CPU
    # takes most of 20 s of the check's time limit.
    with torch.device("cuda"):
        model = Llama(a)
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.normal_(p, std=0.02)
    step_model = torch.compile(model) if a.mode == "compile" else model
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95),
                            eps=1e-8, weight_decay=0.1, fused=True)
    n_params = sum(p.numel() for p in model.parameters())
    n_embed = model.tok_embeddings.weight.numel()
    hd = a.dim // a.heads
    flops_per_token = 6 * (n_params - n_embed) + 12 * a.layers * a.heads * hd * a.seq
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), device="cuda")
    times, losses = [], []
    for step in range(a.warmup + a.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = step_model(tokens[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        torch.cuda.synchronize()
        if step >= a.warmup:
            times.append(time.perf_counter() - start)
    times.sort()
    per_step = a.batch * a.seq
    best, median = times[0], times[len(times) // 2]
    print(json.dumps({
        "impl": "pytorch " + a.mode + " " + torch.__version__,
        "layers": a.layers, "params": n_params,
        "tokens_per_second_best": round(per_step / best, 1),
        "tokens_per_second_median": round(per_step / median, 1),
        "mfu_median": round(per_step / median * flops_per_token / (a.peak_tflops * 1e12), 4),
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "loss_first": round(losses[0], 4), "loss_last": round(losses[-1], 4)}),
        flush=True)


if __name__ == "__main__":
    main()
