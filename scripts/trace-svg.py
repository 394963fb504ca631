#!/usr/bin/env python3
"""Draws one step of a merged titan trace as an SVG timeline.

Reads scripts/merge-traces.py's output (or one rank's trace) and draws the
step `--step N` (default: the last step in the file) as one row per rank
and track: kernels on the compute track (grey, nested pipeline actions
behind them), the compute thread's waits in red, each group's
collectives on its communication track in the group's colour, with a time
axis in milliseconds from the step's start.

usage: trace-svg.py merged.json -o step.svg [--step N] [--width PIXELS]
"""

import argparse
import json
import sys
from html import escape

GROUP_COLOURS = ["#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
                 "#8c564b", "#e377c2", "#bcbd22"]
ROW, GAP, LEFT, TOP = 18, 6, 170, 30


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--step", type=int)
    ap.add_argument("--width", type=int, default=1200)
    args = ap.parse_args()
    try:
        with open(args.trace) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"error: {args.trace}: not a readable JSON trace ({e})")
    events = data["traceEvents"] if isinstance(data, dict) else data
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    steps = {}
    for e in spans:
        if e.get("cat") == "step" and e["name"].startswith("step "):
            steps.setdefault(int(e["name"].split()[1]), []).append(e)
    if not steps:
        sys.exit(f"error: {args.trace} holds no step spans")
    step = args.step if args.step is not None else max(steps)
    if step not in steps:
        sys.exit(f"error: step {step} is not in {args.trace} (it holds "
                 f"{', '.join(map(str, sorted(steps)))})")
    begin = min(e["ts"] for e in steps[step])
    end = max(e["ts"] + e["dur"] for e in steps[step])
    span = max(end - begin, 1e-3)
    scale = (args.width - LEFT - 10) / span

    rows = sorted({(e["pid"], e["tid"]) for e in spans
                   if e["ts"] < end and e["ts"] + e["dur"] > begin},
                  key=lambda r: (r[0], r[1] % 1000, r[1]))
    # Communication tracks are 100 + axis mask, their lanes + 1000 x lane.
    groups = sorted({t % 1000 for _, t in rows if t % 1000 >= 100})
    colour = {t: GROUP_COLOURS[i % len(GROUP_COLOURS)]
              for i, t in enumerate(groups)}
    y = {row: TOP + i * (ROW + GAP) for i, row in enumerate(rows)}
    height = TOP + len(rows) * (ROW + GAP) + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{args.width}" '
           f'height="{height}" font-family="sans-serif" font-size="11">',
           f'<text x="{LEFT}" y="16">titan: step {step}, '
           f'{span / 1e3:.2f} ms (kernels grey, waits red, collectives by '
           'group)</text>']
    for (pid, tid), top in y.items():
        label = f"rank {pid} {names.get((pid, tid), f'track {tid}')}"
        out.append(f'<text x="4" y="{top + ROW - 5}">{escape(label)}</text>')
        out.append(f'<line x1="{LEFT}" x2="{args.width - 10}" '
                   f'y1="{top + ROW}" y2="{top + ROW}" stroke="#ddd"/>')

    def rect(e, fill, inset=0.0):
        x0 = max(e["ts"], begin)
        x1 = min(e["ts"] + e["dur"], end)
        if x1 <= x0:
            return
        top = y[(e["pid"], e["tid"])]
        title = e["name"]
        if "op" in e.get("args", {}):
            title += " " + e["args"]["op"]
        if "bytes" in e.get("args", {}):
            title += f" {e['args']['bytes']} B"
        title += f" {e['dur'] / 1e3:.3f} ms"
        out.append(
            f'<rect x="{LEFT + (x0 - begin) * scale:.2f}" '
            f'y="{top + inset:.1f}" '
            f'width="{max((x1 - x0) * scale, 0.5):.2f}" '
            f'height="{ROW - 2 * inset:.1f}" fill="{fill}">'
            f'<title>{escape(title)}</title></rect>')

    # Outer spans first, so that what they hold is drawn over them.
    order = {"step": 0, "kernel": 2, "collective": 2, "wait": 3}
    for e in sorted((e for e in spans if (e["pid"], e["tid"]) in y),
                    key=lambda e: (order.get(e.get("cat"), 1), e["ts"])):
        cat = e.get("cat")
        if cat == "step":
            rect(e, "#f0f0f0")
        elif cat == "kernel":
            rect(e, "#7f7f7f", 2)
        elif cat == "wait":
            rect(e, "#d62728", 1)
        elif cat == "collective":
            rect(e, colour.get(e["tid"] % 1000, "#1f77b4"), 2)
        else:  # pipeline actions and transfers
            rect(e, "#c6dbef", 0)
    axis = TOP + len(rows) * (ROW + GAP) + 12
    ticks = 5
    for i in range(ticks + 1):
        x = LEFT + i * (args.width - LEFT - 10) / ticks
        out.append(f'<text x="{x:.1f}" y="{axis}" text-anchor="middle">'
                   f'{i * span / ticks / 1e3:.2f} ms</text>')
    out.append("</svg>")
    with open(args.output, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
