#!/usr/bin/env python3
"""titan's planned peak per rank for TorchTitan's published long-context
rows (benchmarks/llama3_h100_202412_torchtitan.md, in
../shared/reference/published-performance.md) beside TorchTitan's measured
max reserved GiB, item by item: Llama 3.1 8B on 8 GPUs with FSDP x CP and
405B on 512 GPUs with TP 8 x PP 8 (1F1B) x FSDP x CP, full activation
checkpointing, Float8 (the presets' tensorwise scaling with the float8
all-gather), bf16 compute, the CUDA target's plan.
It is the plan (no GPU needed); the 405B rows plan every pipeline rank and
report the largest.

  /usr/bin/python3 bench/memory/long_context_vs_torchtitan.py [--titan-compile PATH]
"""

import argparse
import re
import subprocess
import time

GIB = 2**30

# (model, config, GPUs, FSDP, CP, TP, PP, local batch, seq, TorchTitan GiB)
ROWS = [
    ("8B", "llama3_8b.toml", 8, 8, 1, 1, 1, 1, 32768, 83.9),
    ("8B", "llama3_8b.toml", 8, 4, 2, 1, 1, 1, 65536, 84.2),
    ("8B", "llama3_8b.toml", 8, 2, 4, 1, 1, 1, 131072, 84.0),
    ("8B", "llama3_8b.toml", 8, 1, 8, 1, 1, 1, 262144, 84.5),
    ("405B", "llama3_405b.toml", 512, 8, 1, 8, 8, 8, 32768, 75.3),
    ("405B", "llama3_405b.toml", 512, 4, 2, 8, 8, 8, 65536, 75.9),
    ("405B", "llama3_405b.toml", 512, 2, 4, 8, 8, 8, 131072, 77.1),
    ("405B", "llama3_405b.toml", 512, 1, 8, 8, 8, 8, 262144, 84.9),
]

ITEMS = ("parameters", "gradients", "optimizer state", "gathered parameters",
         "unsharded gradients", "low-precision copies", "activations",
         "temporaries", "collective buffers", "workspaces")


def plan(compile_path, row):
    _, config, gpus, fsdp, cp, tp, pp, batch, seq, _ = row
    cmd = [compile_path, "--job.config_file", f"models/llama3/train_configs/{config}",
           "--world-size", str(gpus), "--target=cuda",
           "--parallelism.data_parallel_shard_degree", str(fsdp),
           "--parallelism.context_parallel_degree", str(cp),
           "--parallelism.tensor_parallel_degree", str(tp),
           "--parallelism.pipeline_parallel_degree", str(pp),
           "--training.local_batch_size", str(batch),
           "--training.global_batch_size", str(batch * fsdp),
           "--training.seq_len", str(seq),
           "--activation_checkpoint.mode", "full",
           "--model.converters", "quantize.linear.float8",
           "--training.mixed_precision_param", "bfloat16",
           "--metrics.enable_tensorboard", "false", "--emit=memory"]
    if pp > 1:
        cmd += ["--parallelism.pipeline_parallel_schedule", "1F1B"]
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    seconds = time.perf_counter() - start
    # One section per pipeline rank (or one for the whole program).
    sections = re.split(r"^pipeline rank \d+ \(stages", out, flags=re.M)
    best = None
    for text in sections:
        peak = re.search(r"^pipeline rank \d+ peak: (\d+) bytes .*frames (\d+)"
                         r"(?: \+ send buffers (\d+))?\)",
                         text, re.M) or re.search(r"^peak: (\d+) bytes", text, re.M)
        if not peak:
            continue
        items = {"peak": int(peak.group(1)),
                 "pipeline frames": int(peak.group(2)) if peak.re.groups > 1 else 0,
                 "send buffers": int(peak.group(3) or 0) if peak.re.groups > 2 else 0}
        # The state, then the items of the function that sets the peak.
        for name in ITEMS[:5]:
            m = re.search(rf"^\s+{name}\s+([\d,]+) bytes", text, re.M)
            items[name] = int(m.group(1).replace(",", "")) if m else 0
        arena = int(re.search(r"^\s+arena\s+([\d,]+) bytes", text, re.M)
                    .group(1).replace(",", ""))
        for fn in re.finditer(r"planned peak ([\d,]+) bytes.*\n((?:\s{4}.*\n)+)", text):
            if int(fn.group(1).replace(",", "")) == arena:
                for name in ITEMS[5:]:
                    m = re.search(rf"{name}\s+([\d,]+) bytes", fn.group(2))
                    items[name] = int(m.group(1).replace(",", "")) if m else 0
                break
        if best is None or items["peak"] > best["peak"]:
            best = items
    return best, seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--titan-compile", default="build/bin/titan-compile")
    args = ap.parse_args()
    print("Per rank, GiB: titan's plan (CUDA target) against TorchTitan's measured max reserved")
    header = ["row", "state", "gathered", "low-prec", "activ.", "temp.",
              "coll.", "wksp.", "frames", "sends", "titan peak", "TorchTitan",
              "compile s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in ROWS:
        model, _, gpus, fsdp, cp, tp, pp, batch, seq, measured = row
        items, seconds = plan(args.titan_compile, row)
        state = sum(items[k] for k in ("parameters", "gradients", "optimizer state"))
        gathered = items["gathered parameters"] + items["unsharded gradients"]
        name = (f"{model} {gpus} GPUs FSDP {fsdp} x CP {cp}"
                + (f" x TP {tp} x PP {pp}" if pp > 1 else "") + f", seq {seq}, bs {batch}")
        cells = [name] + [f"{v / GIB:.2f}" for v in (
            state, gathered, items["low-precision copies"], items["activations"],
            items["temporaries"], items["collective buffers"], items["workspaces"],
            items["pipeline frames"], items["send buffers"], items["peak"])] + [f"{measured}", f"{seconds:.1f}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
