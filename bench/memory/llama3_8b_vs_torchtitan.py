#!/usr/bin/env python3
"""titan's planned peak per rank for TorchTitan's 8B benchmark configuration
(FSDP 8, local batch 2, seq 8192, bf16 compute, selective op activation
checkpointing, the CUDA target's kernels) beside TorchTitan's measured 82.4
GiB (77.0 with torch.compile; ../shared/reference/published-performance.md),
with the items that differ sized from the model's dimensions.

  /usr/bin/python3 bench/memory/llama3_8b_vs_torchtitan.py [--titan-compile PATH]
"""

import argparse
import re
import subprocess

GIB = 2**30


def plan(compile_path, extra):
    out = subprocess.run(
        [compile_path, "--job.config_file", "models/llama3/train_configs/llama3_8b.toml",
         "--world-size", "8", "--target=cuda", "--training.local_batch_size", "2",
         "--training.mixed_precision_param", "bfloat16", "--metrics.enable_tensorboard", "false",
         "--emit=memory", *extra], check=True, capture_output=True, text=True).stdout
    items = {}
    section = None
    for line in out.splitlines():
        if line.strip().startswith("@forward_backward"):
            section = "step"
        elif line.strip().startswith("@optimizer_step"):
            section = None
        m = re.match(r"\s+([a-z][a-z -]+?)\s{2,}([\d,]+) bytes", line)
        if m and (section == "step" or m.group(1) in
                  ("parameters", "gradients", "optimizer state", "arena")):
            items[m.group(1)] = int(m.group(2).replace(",", ""))
    items["peak"] = int(re.search(r"^peak: (\d+)", out, re.M).group(1))
    return items


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--titan-compile", default="build/bin/titan-compile")
    args = ap.parse_args()
    titan = plan(args.titan_compile, [])
    b, s, vocab, dim, ffn = 2, 8192, 128256, 4096, 14336
    print("Llama 3 8B, FSDP 8, local batch 2, seq 8192, bf16, selective op AC; GiB per rank")
    print(f"{'item':56s} {'titan plan':>10s}")
    for key in ("parameters", "gradients", "optimizer state", "activations",
                "temporaries", "collective buffers", "workspaces"):
        print(f"  {key:54s} {titan.get(key, 0) / GIB:10.2f}")
    print(f"  {'planned peak (arena)':54s} {titan['peak'] / GIB:10.2f}")
    print()
    print("TorchTitan measured (H100, max reserved): 82.4 GiB; with torch.compile 77.0 GiB")
    print("What TorchTitan holds that titan's plan does not (sized from the model):")
    fp32_logits = b * s * vocab * 4
    print(f"  {'loss on an f32 copy of the logits (pred.float())':54s} {fp32_logits / GIB:10.2f}")
    print(f"  {'log_softmax output kept for the backward (f32)':54s} {fp32_logits / GIB:10.2f}")
    layer = (2 * dim * dim + 2 * dim * 1024 + 3 * dim * ffn)  # wq, wo, wk, wv, w1-3
    print(f"  {'FSDP2 prefetch: the next layer gathered (bf16)':54s} {layer * 2 / GIB:10.2f}")
    print(f"  {'FSDP2 reduce-scatter input, one layer (f32 grads)':54s} {layer * 4 / GIB:10.2f}")
    known = titan["peak"] + 2 * fp32_logits + layer * 6
    print(f"  {'titan plan + these':54s} {known / GIB:10.2f}")
    print(f"  {'left for the caching allocator, CUDA/cuBLAS/NCCL, eager temporaries':54s} "
          f"{82.4 - known / GIB:10.2f}")


if __name__ == "__main__":
    main()
