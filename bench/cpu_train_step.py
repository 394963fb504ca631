#!/usr/bin/env python3
"""Throughput of titan's compiled CPU training step against PyTorch eager.

Both train the same model (a built-in flavor, by default the debug model)
from the same weights on the same tokens, with the same optimizer, schedule
and thread count, in one run on one machine. Prints tokens/s of each
(median over the timed steps, the first step excluded as warm-up), the
ratio, achieved GFLOP/s (6N + 12LHQT per token), and the loss of both runs
at the last step as a sanity check. Writes the table to --out (markdown).

  /usr/bin/python3 bench/cpu_train_step.py [--seq-len 256] [--batch 8]
        [--steps 6] [--threads 2] [--out bench/results/NAME.md]

OpenBLAS picks its kernels from the CPU it detects; both runs share the
environment, so OPENBLAS_CORETYPE (if set) applies to both.
"""

import argparse
import os
import subprocess
import sys
import tempfile

from common import PYTHON, REFERENCE, ROOT, machine, median_tokens_per_second, \
    model_path, prepare, read_metrics, run, write_result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--flavor", default="debugmodel")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out")
    args = ap.parse_args()

    model = model_path(args.flavor)
    with tempfile.TemporaryDirectory() as tmp:
        config, weights, tokens = prepare(tmp, args.flavor, args.seq_len,
                                          args.batch, args.steps)

        train = os.path.join(tmp, "train")
        run([os.path.join(args.build, "bin", "titan-compile"),
             "--job.config_file", config, "-o", train])
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads),
                   OMP_NUM_THREADS=str(args.threads))
        run([train, "--training.dataset_path", tokens,
             "--checkpoint.initial_load_path", weights,
             "--job.dump_folder", os.path.join(tmp, "titan")], env=env)
        titan = read_metrics(os.path.join(tmp, "titan", "metrics.jsonl"))
        ref_out = os.path.join(tmp, "torch.jsonl")
        run([PYTHON, REFERENCE, "train", "--model", model, "--config", config,
             "--weights", weights, "--tokens", tokens, "--out", ref_out,
             "--threads", str(args.threads)], env=env)
        torch_run = read_metrics(ref_out)

    tps = median_tokens_per_second

    sys.path.insert(0, os.path.dirname(REFERENCE))
    import llama_reference as ref  # noqa: E402

    a = ref.Args(ref.load_toml(model))
    n = sum(
        (lambda s: s[0] * (s[1] if len(s) > 1 else 1))(shape)
        for name, shape in ref.param_shapes(a).items()
        if name != "tok_embeddings.weight")
    flops = 6 * n + 12 * a.n_layers * a.n_heads * a.head_dim * args.seq_len
    t_titan, t_torch = tps(titan), tps(torch_run)
    lines = [
        f"# titan CPU training step vs PyTorch eager — {args.flavor}",
        "",
        f"Machine: {machine()}; {args.threads} threads; PyTorch {subprocess.run([PYTHON, '-c', 'import torch; print(torch.__version__)'], capture_output=True, text=True).stdout.strip()}.",
        f"Step: local batch {args.batch} x seq {args.seq_len} = "
        f"{args.batch * args.seq_len} tokens, float32, AdamW; median of steps 2-{args.steps}.",
        "",
        "| implementation | tokens/s | GFLOP/s | loss at last step |",
        "|---|---|---|---|",
        f"| titan (compiled) | {t_titan:.0f} | {t_titan * flops / 1e9:.1f} | {titan[-1]['loss']:.5f} |",
        f"| PyTorch eager | {t_torch:.0f} | {t_torch * flops / 1e9:.1f} | {torch_run[-1]['loss']:.5f} |",
        "",
        f"**Ratio titan / PyTorch: {t_titan / t_torch:.2f}x**",
    ]
    write_result("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
