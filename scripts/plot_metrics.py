#!/usr/bin/env python3
"""Draws training curves from one or more metrics.jsonl files into a PNG:
loss, learning rate, gradient norm and throughput per step, one line per
run (labelled by its file's folder).

  python scripts/plot_metrics.py RUN/metrics.jsonl [OTHER/metrics.jsonl ...] \
      --out curves.png

Non-finite values (null in metrics.jsonl) are left as gaps. Needs matplotlib
(scripts/plot-metrics.sh installs it from PyPI into a virtual environment).
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = [("loss", "loss"), ("lr", "learning rate"),
          ("grad_norm", "gradient norm (before clipping)"),
          ("tokens_per_second", "tokens/s")]


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("metrics", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="titan training run")
    args = ap.parse_args()
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5))
    for path in args.metrics:
        # (Validation lines have no training metrics.)
        rows = [r for r in read(path) if "loss" in r]
        label = os.path.basename(os.path.dirname(os.path.abspath(path)))
        steps = [r["step"] for r in rows]
        for ax, (key, _) in zip(axes.flat, PANELS):
            values = [r.get(key) for r in rows]
            ax.plot(steps, [float("nan") if v is None else v for v in values],
                    label=label)
    for ax, (_, title) in zip(axes.flat, PANELS):
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes.flat[0].legend()
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
