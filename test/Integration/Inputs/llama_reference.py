#!/usr/bin/env python3
"""An independent PyTorch implementation of one Llama 3 training run, the
reference titan's compiled executables are checked against.

Written from the model definition (TorchTitan's llama3: RMSNorm, RoPE on
interleaved pairs with Llama 3.1 frequency scaling, causal grouped-query
attention, SwiGLU FFN, untied output, mean cross-entropy), torch.optim.AdamW,
torch.nn.utils.clip_grad_norm_ and TorchTitan's warmup-stable-decay schedule.
Shares no code with titan.

  llama_reference.py init  --model M.toml --seed S --out weights.safetensors
  llama_reference.py train --model M.toml --config C.toml --weights W
                           --tokens T.bin --out metrics.jsonl [--save W2]
                           [--val-tokens V.bin --val-global-batch G]
  llama_reference.py tokens --vocab V --count N --seed S --out T.bin
"""

import argparse
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn.functional as F

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11 (Debian 12 ships 3.11)
    tomllib = None


def load_toml(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


# --- safetensors (float32), written and read by hand -------------------------

def save_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        data = t.detach().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        b, e = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[b:e]), dtype=torch.float32)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def load_checkpoint(folder):
    """A titan checkpoint folder (index.json + per-rank shard files),
    consolidated independently of the runtime: {"<kind>:<name>": tensor} for
    the parameters and AdamW moments. Checks that the blocks tile each
    tensor exactly once."""
    with open(os.path.join(folder, "index.json")) as f:
        index = json.load(f)
    assert index["format"] == "titan-checkpoint" and index["version"] == 1
    files = {}
    out = {}
    for key, info in index["tensors"].items():
        assert info["dtype"] == "F32", info
        t = torch.zeros(info["shape"], dtype=torch.float32)
        seen = torch.zeros(info["shape"], dtype=torch.int32)
        for b in info["blocks"]:
            if b["file"] not in files:
                files[b["file"]] = load_safetensors(
                    os.path.join(folder, b["file"]))
            block = files[b["file"]][key]
            assert list(block.shape) == b["size"], (key, b)
            where = tuple(slice(s, s + n) for s, n in zip(b["start"], b["size"]))
            t[where] = block
            seen[where] += 1
        assert (seen == 1).all(), f"blocks of {key} do not tile it"
        out[key] = t
    return out


def load_weights(path):
    """Tensors of a safetensors file, of a model-only export folder, or of a
    titan checkpoint folder (see load_checkpoint)."""
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, "index.json")):
            return load_checkpoint(path)
        path = os.path.join(path, "model.safetensors")
    return load_safetensors(path)


# --- the model ----------------------------------------------------------------

class Args:
    def __init__(self, m):
        self.dim = m["dim"]
        self.n_layers = m["n_layers"]
        self.n_heads = m["n_heads"]
        self.n_kv_heads = m.get("n_kv_heads", self.n_heads)
        self.vocab_size = m["vocab_size"]
        self.norm_eps = m.get("norm_eps", 1e-5)
        self.rope_theta = m.get("rope_theta", 10000.0)
        self.rope_scaling = m.get("rope_scaling")
        multiple_of = m.get("multiple_of", 256)
        hidden = int(2 * (4 * self.dim) / 3)
        if "ffn_dim_multiplier" in m:
            hidden = int(m["ffn_dim_multiplier"] * hidden)
        self.hidden = multiple_of * ((hidden + multiple_of - 1) // multiple_of)
        self.head_dim = self.dim // self.n_heads
        # TorchTitan masks by document only with flex attention.
        self.block_causal = (m.get("use_flex_attn", False) and
                             m.get("attn_mask_type", "causal") == "block_causal")


def param_shapes(a):
    shapes = {"tok_embeddings.weight": (a.vocab_size, a.dim)}
    for i in range(a.n_layers):
        p = f"layers.{i}."
        shapes[p + "attention.wq.weight"] = (a.n_heads * a.head_dim, a.dim)
        shapes[p + "attention.wk.weight"] = (a.n_kv_heads * a.head_dim, a.dim)
        shapes[p + "attention.wv.weight"] = (a.n_kv_heads * a.head_dim, a.dim)
        shapes[p + "attention.wo.weight"] = (a.dim, a.n_heads * a.head_dim)
        shapes[p + "feed_forward.w1.weight"] = (a.hidden, a.dim)
        shapes[p + "feed_forward.w2.weight"] = (a.dim, a.hidden)
        shapes[p + "feed_forward.w3.weight"] = (a.hidden, a.dim)
        shapes[p + "attention_norm.weight"] = (a.dim,)
        shapes[p + "ffn_norm.weight"] = (a.dim,)
    shapes["norm.weight"] = (a.dim,)
    shapes["output.weight"] = (a.vocab_size, a.dim)
    return shapes


def rope_freqs(a, seq_len):
    dim = a.head_dim
    freqs = 1.0 / (a.rope_theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    s = a.rope_scaling
    if s:
        factor, low, high = s["scaling_factor"], s["low_freq_factor"], s["high_freq_factor"]
        old = s["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / freqs
        freqs = torch.where(wavelen > low_wavelen, freqs / factor, freqs)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * freqs / factor + smooth * freqs
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        freqs = torch.where(medium, smoothed, freqs)
    t = torch.arange(seq_len)
    angles = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(angles), angles)


def apply_rope(x, freqs_cis):
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    fc = freqs_cis.view(1, x.shape[1], 1, xc.shape[-1])
    return torch.view_as_real(xc * fc).flatten(3).type_as(x)


def rms_norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w


class RoundBf16(torch.autograd.Function):
    """Rounds to bfloat16 (nearest even) and back, in the forward and the
    backward: where titan's mixed-precision program holds a bf16 value."""

    @staticmethod
    def forward(ctx, x):
        return x.to(torch.bfloat16).float()

    @staticmethod
    def backward(ctx, g):
        return g.to(torch.bfloat16).float()


def identity(x):
    return x


def document_mask(tokens, eos_id):
    """TorchTitan v0.2.0's block-causal mask (models/attention.py,
    get_document_mask_mod and the causal mask_mod): [b, 1, s, s] additive,
    position q sees key k <= q of its own document, a position's document
    being the number of EOS tokens before it."""
    eos = tokens == eos_id
    eos[:, -1] = True
    cumulative = torch.cumsum(eos.long(), dim=1)
    doc = torch.zeros_like(cumulative)
    doc[:, 1:] = cumulative[:, :-1]
    seq = tokens.shape[1]
    causal = torch.ones(seq, seq, dtype=torch.bool).tril()
    same = doc[:, :, None] == doc[:, None, :]
    allowed = causal[None] & same
    return torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))[:, None]


def forward_loss(a, p, tokens, labels, freqs_cis, r=identity, eos_id=None):
    """The loss, computed in float32. With `r` = RoundBf16.apply it applies
    titan's bf16 mixed precision: bf16 copies of the parameters, each op's
    result rounded once to bf16 (float32 inside, as titan's kernels), the
    loss in float32 on the bf16 logits. A block-causal model masks by
    document, documents ending at `eos_id`."""
    bsz, seq = tokens.shape
    p = {n: r(w) for n, w in p.items()}
    h = p["tok_embeddings.weight"][tokens]
    if a.block_causal:
        assert eos_id is not None, "a block_causal model needs --eos-id"
        mask = document_mask(tokens, eos_id)
    else:
        mask = torch.full((seq, seq), float("-inf")).triu(1)
    groups = a.n_heads // a.n_kv_heads
    for i in range(a.n_layers):
        q = f"layers.{i}."
        x = r(rms_norm(h, p[q + "attention_norm.weight"], a.norm_eps))
        xq = r(x @ p[q + "attention.wq.weight"].T).view(bsz, seq, a.n_heads, a.head_dim)
        xk = r(x @ p[q + "attention.wk.weight"].T).view(bsz, seq, a.n_kv_heads, a.head_dim)
        xv = r(x @ p[q + "attention.wv.weight"].T).view(bsz, seq, a.n_kv_heads, a.head_dim)
        xq, xk = r(apply_rope(xq, freqs_cis)), r(apply_rope(xk, freqs_cis))
        xk = xk.repeat_interleave(groups, dim=2)
        xv = xv.repeat_interleave(groups, dim=2)
        qh, kh, vh = (t.transpose(1, 2) for t in (xq, xk, xv))
        scores = qh @ kh.transpose(-2, -1) / math.sqrt(a.head_dim) + mask
        o = r(torch.softmax(scores.float(), dim=-1).type_as(qh) @ vh).transpose(1, 2)
        h = r(h + r(o.reshape(bsz, seq, -1) @ p[q + "attention.wo.weight"].T))
        x = r(rms_norm(h, p[q + "ffn_norm.weight"], a.norm_eps))
        g = r(F.silu(r(x @ p[q + "feed_forward.w1.weight"].T)) *
              r(x @ p[q + "feed_forward.w3.weight"].T))
        h = r(h + r(g @ p[q + "feed_forward.w2.weight"].T))
    h = r(rms_norm(h, p["norm.weight"], a.norm_eps))
    logits = r(h @ p["output.weight"].T)
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))


def lr_factor(step, warmup, steps, decay_ratio, decay_type, min_lr):
    # TorchTitan v0.2.0, torchtitan/components/lr_scheduler.py,
    # build_lr_schedulers and linear_warmup_stable_decay.
    warmup = min(warmup, steps)
    if decay_ratio is not None:
        decay = round(steps * decay_ratio)
        if warmup + decay > steps:
            decay = steps - warmup
    else:
        decay = steps - warmup
    stable = steps + 1 - warmup - decay  # the "virtual last step"
    if step < warmup:
        return (step + 1) / warmup
    if step < warmup + stable:
        return 1.0
    progress = ((step + 1) - (warmup + stable)) / decay
    adj = {"linear": 1 - progress, "sqrt": 1 - math.sqrt(progress),
           "cosine": 0.5 * (1 + math.cos(math.pi * progress))}[decay_type]
    return min_lr + (1 - min_lr) * adj


def training_inputs(a, weights_path, tokens_path, seq):
    """The parameters' names, the parameters (leaf tensors loaded from
    `weights_path`) and the token file's samples of seq + 1 tokens."""
    weights = load_safetensors(weights_path)
    names = list(param_shapes(a))
    params = {n: weights[n].clone().requires_grad_(True) for n in names}
    tokens = torch.frombuffer(bytearray(open(tokens_path, "rb").read()),
                              dtype=torch.int32).long()
    samples = tokens.numel() // (seq + 1)
    return names, params, tokens[: samples * (seq + 1)].view(samples, seq + 1)


def optimizer(params, names, o, s, steps, foreach=None):
    """torch.optim.AdamW with the config's [optimizer] `o` and TorchTitan's
    schedule from its [lr_scheduler] `s`."""
    opt = torch.optim.AdamW([params[n] for n in names], lr=o["lr"],
                            betas=(o.get("beta1", 0.9), o.get("beta2", 0.95)),
                            eps=o.get("eps", 1e-8),
                            weight_decay=o.get("weight_decay", 0.1),
                            foreach=foreach)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(
        step, s.get("warmup_steps", 200), steps, s.get("decay_ratio"),
        s.get("decay_type", "linear"), s.get("min_lr_factor", 0.0)))
    return opt, sched


class OptimizersInBackward:
    """TorchTitan v0.2.0's OptimizersInBackwardContainer
    (components/optimizer.py, optimizer.early_step_in_backward): one AdamW
    and one LR schedule per parameter, stepped by the parameter's
    post-accumulate-grad hook, which then drops the gradient. Nothing is
    clipped (clip_grad_norm_ finds no gradients); the norm of the gradients
    the hooks saw is what titan reports as grad_norm. PyTorch before 2.1 has
    no such hook: the updates then run after the backward, the same values
    (each reads only its own parameter's gradient and state)."""

    def __init__(self, params, names, o, s, steps):
        self.params = [params[n] for n in names]
        self.opts = {}
        self.scheds = []
        for p in self.params:
            opt, sched = optimizer({"p": p}, ["p"], o, s, steps, foreach=False)
            self.opts[p] = opt
            self.scheds.append(sched)
        self.hooked = hasattr(torch.Tensor, "register_post_accumulate_grad_hook")
        if self.hooked:
            for p in self.params:
                p.register_post_accumulate_grad_hook(self.step_param)
        self.squares = 0.0

    def step_param(self, p):
        self.squares += p.grad.double().pow(2).sum().item()
        self.opts[p].step()
        self.opts[p].zero_grad(set_to_none=True)

    def lr(self):
        return self.opts[self.params[0]].param_groups[0]["lr"]

    def after_backward(self):
        if not self.hooked:
            for p in self.params:
                self.step_param(p)
        norm, self.squares = math.sqrt(self.squares), 0.0
        for sched in self.scheds:
            sched.step()
        return norm


def write_metrics(out, step, loss, norm, lr, tokens, step_start, start):
    now = time.perf_counter()
    out.write(json.dumps({
        "step": step + 1, "loss": loss, "grad_norm": norm, "lr": lr,
        "tokens_per_second": tokens / (now - step_start),
        "elapsed_s": now - start}) + "\n")
    out.flush()


def optimizer_step(opt, sched, params, max_norm, out, step, loss, tokens,
                   step_start, start):
    """Clips the gradients, steps AdamW and the schedule, and writes the
    step's metrics line (titan's metrics.jsonl keys) to `out`."""
    lr = opt.param_groups[0]["lr"]
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    opt.step()
    sched.step()
    write_metrics(out, step, loss, norm.item(), lr, tokens, step_start, start)


def validation_loss(a, params, val, val_cfg, global_batch, freqs_cis, rounding,
                    eos_id=None):
    """TorchTitan v0.2.0's Validator.validate (components/validate.py): the
    mean of the batches' mean losses, without gradients. Batches of
    `global_batch` samples from the set's start: validation.steps of them
    (wrapping around), or with -1 every whole batch once. A block_causal
    model masks by document there too (`eos_id`)."""
    steps = val_cfg.get("steps", -1)
    batches = steps if steps > 0 else val.shape[0] // global_batch
    total = 0.0
    with torch.no_grad():
        for b in range(batches):
            rows = [(b * global_batch + r) % val.shape[0]
                    for r in range(global_batch)]
            batch = val[rows]
            total += forward_loss(a, params, batch[:, :-1], batch[:, 1:],
                                  freqs_cis, rounding, eos_id).item()
    return total / batches


def train(args):
    a = Args(load_toml(args.model))
    c = load_toml(args.config)
    t, o, s = c["training"], c["optimizer"], c["lr_scheduler"]
    seq, local, steps = t["seq_len"], t["local_batch_size"], t["steps"]
    global_batch = t.get("global_batch_size", -1)
    global_batch = local if global_batch < 0 else global_batch
    accum = global_batch // local

    names, params, tokens = training_inputs(a, args.weights, args.tokens, seq)
    samples = tokens.shape[0]
    in_backward = o.get("early_step_in_backward", False)
    if in_backward:
        assert accum == 1, "early_step_in_backward steps once per backward"
        opts = OptimizersInBackward(params, names, o, s, steps)
    else:
        opt, sched = optimizer(params, names, o, s, steps, foreach=False)
    freqs_cis = rope_freqs(a, seq)
    # titan's CPU target computes in f32 unless the config asks for bf16.
    rounding = (RoundBf16.apply if t.get("mixed_precision_param") == "bfloat16"
                else identity)

    v = c.get("validation", {})
    if args.val_tokens:
        val_seq = v.get("seq_len", 2048)
        val = torch.frombuffer(bytearray(open(args.val_tokens, "rb").read()),
                               dtype=torch.int32).long()
        val_samples = val.numel() // (val_seq + 1)
        val = val[: val_samples * (val_seq + 1)].view(val_samples, val_seq + 1)
        val_freqs = rope_freqs(a, val_seq)
        val_batch = args.val_global_batch or v.get("local_batch_size", 8)

    start = time.perf_counter()
    with open(args.out, "w") as out:
        for step in range(steps):
            step_start = time.perf_counter()
            if not in_backward:
                opt.zero_grad()
            total = 0.0
            for micro in range(accum):
                rows = [(step * global_batch + micro * local + r) % samples
                        for r in range(local)]
                batch = tokens[rows]
                loss = forward_loss(a, params, batch[:, :-1], batch[:, 1:], freqs_cis,
                                    rounding, args.eos_id)
                (loss / accum).backward()
                total += loss.item()
            if in_backward:
                lr = opts.lr()
                write_metrics(out, step, total, opts.after_backward(), lr,
                              global_batch * seq, step_start, start)
            else:
                optimizer_step(opt, sched, [params[n] for n in names],
                               t.get("max_norm", 1.0), out, step,
                               total / accum, global_batch * seq, step_start,
                               start)
            # After the update, at step 1 and every validation.freq steps
            # (Validator.should_validate).
            if args.val_tokens and (step + 1 == 1 or
                                    (step + 1) % v.get("freq", 10) == 0):
                loss = validation_loss(a, params, val, v, val_batch, val_freqs,
                                       rounding, args.eos_id)
                out.write(json.dumps({"step": step + 1,
                                      "validation_loss": loss}) + "\n")
    if args.save:
        save_safetensors(args.save, {n: params[n] for n in names})


def init(args):
    a = Args(load_toml(args.model))
    g = torch.Generator().manual_seed(args.seed)
    tensors = {}
    for name, shape in param_shapes(a).items():
        if name.endswith("norm.weight"):
            t = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif name == "tok_embeddings.weight":
            t = torch.randn(shape, generator=g)
        else:
            t = torch.randn(shape, generator=g) * (0.5 / math.sqrt(shape[1]))
        tensors[name] = t
    save_safetensors(args.out, tensors)


def make_tokens(args):
    g = torch.Generator().manual_seed(args.seed)
    # A skewed distribution with repeated phrases, so a model can learn it.
    phrase = torch.randint(0, args.vocab, (37,), generator=g)
    ids = []
    while len(ids) < args.count:
        if torch.rand(1, generator=g).item() < 0.5:
            ids.extend(phrase.tolist())
        else:
            ids.extend(torch.randint(0, args.vocab, (11,), generator=g).tolist())
        if args.eos_id is not None and torch.rand(1, generator=g).item() < 0.3:
            ids.append(args.eos_id)
    with open(args.out, "wb") as f:
        f.write(struct.pack(f"<{args.count}I", *ids[: args.count]))


def main():
    if tomllib is None:
        sys.exit("llama_reference.py needs Python >= 3.11 (tomllib)")
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("init")
    i.add_argument("--model", required=True)
    i.add_argument("--seed", type=int, default=0)
    i.add_argument("--out", required=True)
    tr = sub.add_parser("train")
    for k in ("model", "config", "weights", "tokens", "out"):
        tr.add_argument("--" + k, required=True)
    tr.add_argument("--save")
    tr.add_argument("--val-tokens")
    tr.add_argument("--val-global-batch", type=int)
    tr.add_argument("--threads", type=int, default=1)
    tr.add_argument("--eos-id", type=int,
                    help="the tokenizer's EOS id (block_causal models)")
    tk = sub.add_parser("tokens")
    tk.add_argument("--vocab", type=int, required=True)
    tk.add_argument("--count", type=int, required=True)
    tk.add_argument("--seed", type=int, default=0)
    tk.add_argument("--eos-id", type=int,
                    help="end a document after about one chunk in three")
    tk.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.set_num_threads(getattr(args, "threads", 1))
    {"init": init, "train": train, "tokens": make_tokens}[args.cmd](args)


if __name__ == "__main__":
    main()
