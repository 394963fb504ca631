#!/usr/bin/env python3
"""Draws docs/cost-model-scaling.svg from bench/results/cost-model-scaling.json
(bench/cost/scaling.py's predictions): tokens/s per GPU against the GPU
count (log2) for Llama 3.1 8B, 70B and 405B, and the chosen plans' peak
memory per rank against the device's memory. Standard library only.

Usage: python3 scripts/cost-scaling-svg.py [--gpu h100] [--json F] [--out F]
"""

import argparse
import json
import math
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 1024.0 ** 3
SIZES = [8, 16, 32, 64, 128, 256, 512]
MODELS = [("8b", "Llama 3.1 8B", "#1f77b4"), ("70b", "Llama 3.1 70B", "#d62728"),
          ("405b", "Llama 3.1 405B", "#2ca02c")]
CAPACITY_GIB = {"h100": 81559 / 1024, "h100-96gb": 95830 / 1024,
                "h200": 143771 / 1024}
# Solid: the best predicted plan at each size; dashed: TorchTitan's
# layout scaled; dotted: the seed's decision tree.
FAMILIES = [("best", ""), ("torchtitan", "6,4"), ("tree", "2,3")]

W, H = 960, 420
PANEL_W, PANEL_H = 380, 300
LEFT = [(70, 50), (560, 50)]


def best(cell):
    """The fastest predicted plan of a size that fits: the planner's pick
    or a fixed layout that beat it."""
    fitted = [e for e in cell.values()
              if "prediction" in e and not e.get("over_memory")]
    return max(fitted, key=lambda e: e["prediction"][
        "tokens_per_second_per_device"], default=None)


def series(results, gpu, model, family, key):
    pts = []
    for n in SIZES:
        cell = results.get(gpu, {}).get(model, {}).get(str(n), {})
        e = best(cell) if family == "best" else cell.get(family)
        if not e or "prediction" not in e:
            continue
        p = e["prediction"]
        over = bool(e.get("over_memory"))
        if key == "tps":
            pts.append((n, p["tokens_per_second_per_device"], over))
        else:
            pts.append((n, max(p.get("peak_bytes") or [0]) / GIB, over))
    return pts


def xpos(origin, n):
    return origin[0] + PANEL_W * (math.log2(n) - 3) / 6.0


def draw(results, gpu):
    out = []
    a = out.append
    a(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
      f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">')
    a(f'<rect width="{W}" height="{H}" fill="white"/>')
    a(f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">'
      f'titan cost model: predicted weak scaling on {gpu} (seq 8192; '
      'hollow: over memory)</text>')

    families = [f for f in FAMILIES if any(
        series(results, gpu, m, f[0], "tps") for m, _, _ in MODELS)]

    # Panel 1: tokens/s/GPU, log10 y from 10 to 100,000.
    o = LEFT[0]
    ylo, yhi = 1.0, 5.0

    def y1(v):
        v = max(v, 10 ** ylo)
        return o[1] + PANEL_H * (1 - (math.log10(v) - ylo) / (yhi - ylo))

    a(f'<rect x="{o[0]}" y="{o[1]}" width="{PANEL_W}" height="{PANEL_H}" '
      'fill="none" stroke="#444"/>')
    for e in range(int(ylo), int(yhi) + 1):
        y = y1(10 ** e)
        a(f'<line x1="{o[0]}" y1="{y:.1f}" x2="{o[0] + PANEL_W}" y2="{y:.1f}" '
          'stroke="#ddd"/>')
        a(f'<text x="{o[0] - 6}" y="{y + 4:.1f}" text-anchor="end">'
          f'{10 ** e:,}</text>')
    a(f'<text x="{o[0] - 55}" y="{o[1] + PANEL_H / 2}" text-anchor="middle" '
      f'transform="rotate(-90 {o[0] - 55} {o[1] + PANEL_H / 2})">'
      'predicted tokens/s per GPU</text>')

    # Panel 2: peak memory per rank, GiB, linear.
    o2 = LEFT[1]
    cap = CAPACITY_GIB.get(gpu, 80.0)
    mhi = 20 * math.ceil((cap + 10) / 20)

    def y2(v):
        return o2[1] + PANEL_H * (1 - min(v, mhi) / mhi)

    a(f'<rect x="{o2[0]}" y="{o2[1]}" width="{PANEL_W}" height="{PANEL_H}" '
      'fill="none" stroke="#444"/>')
    for v in range(0, int(mhi) + 1, 20):
        y = y2(v)
        a(f'<line x1="{o2[0]}" y1="{y:.1f}" x2="{o2[0] + PANEL_W}" '
          f'y2="{y:.1f}" stroke="#ddd"/>')
        a(f'<text x="{o2[0] - 6}" y="{y + 4:.1f}" text-anchor="end">{v}</text>')
    a(f'<line x1="{o2[0]}" y1="{y2(cap):.1f}" x2="{o2[0] + PANEL_W}" '
      f'y2="{y2(cap):.1f}" stroke="black" stroke-dasharray="8,3"/>')
    a(f'<text x="{o2[0] + PANEL_W - 4}" y="{y2(cap) - 5:.1f}" '
      f'text-anchor="end">{gpu} memory {cap:.1f} GiB</text>')
    a(f'<text x="{o2[0] - 40}" y="{o2[1] + PANEL_H / 2}" text-anchor="middle" '
      f'transform="rotate(-90 {o2[0] - 40} {o2[1] + PANEL_H / 2})">'
      'peak memory per rank (GiB, memory plan)</text>')

    for org in LEFT:
        for n in SIZES:
            x = xpos(org, n)
            a(f'<line x1="{x:.1f}" y1="{org[1] + PANEL_H}" x2="{x:.1f}" '
              f'y2="{org[1] + PANEL_H + 5}" stroke="#444"/>')
            a(f'<text x="{x:.1f}" y="{org[1] + PANEL_H + 18}" '
              f'text-anchor="middle">{n}</text>')
        a(f'<text x="{org[0] + PANEL_W / 2}" y="{org[1] + PANEL_H + 36}" '
          'text-anchor="middle">GPUs (log2)</text>')

    for model, label, color in MODELS:
        for family, dash in families:
            style = f' stroke-dasharray="{dash}"' if dash else ""
            for key, org, yf in (("tps", LEFT[0], y1), ("mem", LEFT[1], y2)):
                if key == "mem" and family != "best":
                    continue  # the chosen plans' memory only
                pts = series(results, gpu, model, family, key)
                if not pts:
                    continue
                path = " ".join(f"{xpos(org, n):.1f},{yf(v):.1f}"
                                for n, v, _ in pts)
                a(f'<polyline points="{path}" fill="none" stroke="{color}" '
                  f'stroke-width="2"{style}/>')
                for n, v, over in pts:
                    # Hollow: the layout's memory plan does not fit.
                    fill = "white" if over else color
                    a(f'<circle cx="{xpos(org, n):.1f}" cy="{yf(v):.1f}" '
                      f'r="3" fill="{fill}" stroke="{color}"/>')

    # Legend.
    lx, ly = LEFT[0][0] + 10, LEFT[0][1] + PANEL_H + 55
    for i, (model, label, color) in enumerate(MODELS):
        x = lx + 150 * i
        a(f'<line x1="{x}" y1="{ly}" x2="{x + 24}" y2="{ly}" stroke="{color}" '
          'stroke-width="3"/>')
        a(f'<text x="{x + 30}" y="{ly + 4}">{label}</text>')
    for i, (family, dash) in enumerate(families):
        x = lx + 440 + 125 * i
        style = f' stroke-dasharray="{dash}"' if dash else ""
        a(f'<line x1="{x}" y1="{ly}" x2="{x + 24}" y2="{ly}" stroke="#444" '
          f'stroke-width="2"{style}/>')
        name = {"best": "best plan", "torchtitan":
                "TorchTitan's layout", "tree": "seed's decision tree"}
        a(f'<text x="{x + 30}" y="{ly + 4}">{name[family]}</text>')
    a("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--json", default=os.path.join(
        ROOT, "bench", "results", "cost-model-scaling.json"))
    ap.add_argument("--out", default=os.path.join(
        ROOT, "docs", "cost-model-scaling.svg"))
    args = ap.parse_args()
    with open(args.json) as f:
        results = json.load(f)
    if args.gpu not in results:
        raise SystemExit(f"cost-scaling-svg.py: no predictions for "
                         f"'{args.gpu}' in {args.json} (has: "
                         f"{', '.join(sorted(results))})")
    with open(args.out, "w") as f:
        f.write(draw(results, args.gpu))


if __name__ == "__main__":
    main()
