#!/usr/bin/env python3
"""Compile time of titan-compile on the Llama presets: wall time per stage
(from --mlir-timing), total wall time and peak RSS (from /usr/bin/time) of
`titan-compile ... -o train`, min / median over interleaved rounds.

  /usr/bin/python3 bench/compile_time.py --rounds 3 [--baseline OLD/titan-compile] \
      --out bench/results/compile-time.md

With --baseline, each round compiles every preset with the baseline build
too (interleaved, same machine), and the table gives the ratio. Float8 is
turned off (not implemented yet); the world sizes are the published ones
(8B: FSDP 8; 70B: FSDP 32 x TP 8; 405B: FSDP 64 x TP 8).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, machine, write_result  # noqa: E402

PRESETS = [
    ("debugmodel", "debug_model.toml", 1),
    ("8B", "llama3_8b.toml", 8),
    ("70B", "llama3_70b.toml", 256),
    ("405B", "llama3_405b.toml", 512),
]
STAGE = re.compile(r"^\s*([0-9.]+) \(\s*[0-9.]+%\)\s+(.+?)\s*$")


def compile_once(tool, preset, world, out):
    """(total wall s, peak RSS MiB, {stage: wall s}) of one compile."""
    config = os.path.join(ROOT, "models", "llama3", "train_configs", preset)
    cmd = ["/usr/bin/time", "-f", "TIME %e %M", tool, "--job.config_file", config,
           "--world-size", str(world), "--model.converters", "",
           "--mlir-timing", "-o", out]
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{result.stderr}")
    stages, total, rss = {}, None, None
    for line in result.stderr.splitlines():
        if line.startswith("TIME "):
            _, wall, kib = line.split()
            total, rss = float(wall), int(kib) / 1024
        elif (m := STAGE.match(line)) and m.group(2) not in ("Total", "Name"):
            stages[m.group(2)] = float(m.group(1))
    return total, rss, stages


def fmt(values):
    return f"{min(values):.2f} / {statistics.median(values):.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", default=os.path.join(ROOT, "build", "bin", "titan-compile"))
    ap.add_argument("--baseline", help="another titan-compile to compare with")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()

    tools = [("titan", args.tool)] + ([("baseline", args.baseline)] if args.baseline else [])
    runs = {(t, p[0]): [] for t, _ in tools for p in PRESETS}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for name, preset, world in PRESETS:
                for tool, path in tools:
                    runs[(tool, name)].append(
                        compile_once(path, preset, world, os.path.join(tmp, "train")))

    lines = [f"# titan-compile: compile time of the presets ({args.rounds} rounds, "
             "min / median seconds)", "", f"Machine: {machine()}.", "",
             "`titan-compile --job.config_file <preset> --world-size N "
             "--model.converters '' -o train` (the executable, linked).", ""]
    header = "| preset | ranks | wall s | peak RSS MiB |"
    if args.baseline:
        header += " baseline wall s | baseline peak RSS MiB | speedup (median) |"
    lines += [header, "|" + "---|" * (header.count("|") - 1)]
    for name, _, world in PRESETS:
        mine = runs[("titan", name)]
        row = (f"| {name} | {world} | {fmt([r[0] for r in mine])} | "
               f"{fmt([r[1] for r in mine])} |")
        if args.baseline:
            base = runs[("baseline", name)]
            speedup = (statistics.median(r[0] for r in base) /
                       statistics.median(r[0] for r in mine))
            row += (f" {fmt([r[0] for r in base])} | {fmt([r[1] for r in base])} | "
                    f"{speedup:.1f}x |")
        lines.append(row)

    lines += ["", "Wall seconds per stage (median; titan):", ""]
    stage_names = []
    for name, _, _ in PRESETS:
        for stage in runs[("titan", name)][0][2]:
            if stage not in stage_names:
                stage_names.append(stage)
    lines.append("| stage | " + " | ".join(p[0] for p in PRESETS) + " |")
    lines.append("|---|" + "---|" * len(PRESETS))
    for stage in stage_names:
        cells = []
        for name, _, _ in PRESETS:
            values = [r[2].get(stage, 0.0) for r in runs[("titan", name)]]
            cells.append(f"{statistics.median(values):.3f}")
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    write_result("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
