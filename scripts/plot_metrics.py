#!/usr/bin/env python3
"""Draws training curves from one or more metrics.jsonl files into a PNG:
loss, learning rate, gradient norm and throughput per step, one line per
run (labelled by its file's folder).

  python scripts/plot_metrics.py RUN/metrics.jsonl [OTHER/metrics.jsonl ...] \
      --out curves.png [--panels loss,grad_norm]

Non-finite values (null in metrics.jsonl) are left as gaps. Needs matplotlib
(scripts/plot-metrics.sh installs it from PyPI into a virtual environment).
"""

import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PANELS = {"loss": "loss", "lr": "learning rate",
          "grad_norm": "gradient norm (before clipping)",
          "tokens_per_second": "tokens/s"}
# Runs that train the same model draw on top of each other: each run's line
# is thinner and dashed differently from the one below it.
STYLES = [dict(linewidth=4.0, alpha=0.5), dict(linewidth=2.5),
          dict(linewidth=1.8, linestyle="--"), dict(linewidth=1.4,
                                                    linestyle="-."),
          dict(linewidth=1.0, linestyle=":")]


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("metrics", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="titan training run")
    ap.add_argument("--panels", default=",".join(PANELS),
                    help="comma-separated metrics to draw, of " +
                    ", ".join(PANELS))
    args = ap.parse_args()
    panels = args.panels.split(",")
    unknown = [p for p in panels if p not in PANELS]
    if unknown:
        ap.error(f"unknown panel {unknown[0]!r}; known: {', '.join(PANELS)}")
    ncols = min(len(panels), 2)
    nrows = (len(panels) + 1) // 2
    fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 3.25 * nrows),
                             squeeze=False)
    styled = len(args.metrics) > 1 and len(args.metrics) <= len(STYLES)
    for i, path in enumerate(args.metrics):
        # (Validation lines have no training metrics.)
        rows = [r for r in read(path) if "loss" in r]
        label = os.path.basename(os.path.dirname(os.path.abspath(path)))
        steps = [r["step"] for r in rows]
        for ax, key in zip(axes.flat, panels):
            values = [r.get(key) for r in rows]
            ax.plot(steps, [float("nan") if v is None else v for v in values],
                    label=label, **(STYLES[i] if styled else {}))
    for ax, key in zip(axes.flat, panels):
        ax.set_title(PANELS[key])
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes.flat[0].legend()
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
