#!/usr/bin/env python3
"""Merges the ranks' profiler traces of titan into one timeline.

Each rank of a run with --profiling.enable_profiling writes
<dump_folder>/<save_traces_folder>/iteration_<step>/rank<r>_trace.json
(Chrome trace JSON: one process per rank, named "rank <r>"; the tracks
"compute" and "comm <mesh axes>" of each collective group, with lanes
"comm <mesh axes> #2"... for collectives in flight together). This script
concatenates them into one file that Perfetto (ui.perfetto.dev) or
chrome://tracing opens as one timeline, one process per rank with its
tracks kept. The ranks of one machine share its monotonic clock, so their
spans line up as they ran.

It prints, per rank, what the file's steps spent, per step (the mean over
the file's steps: profiling.profiler_active of them):
  step        the step span ("step N": the compiled steps and the update)
  kernels     the kernel spans (compute track)
  collectives per group: issue to completion of each collective on the
              group's track (it runs while compute runs: not exposed)
  exposed     the wait spans on the compute track: the time the compute
              thread blocked on communication that had not finished

usage: merge-traces.py ITERATION_FOLDER|TRACE.json... [-o merged.json]
                       [--json]
--json prints the summary as JSON instead: {"ranks": [{"rank", "steps",
"step_ms", "kernel_ms", "kernel_calls", "collective_ms": {group: ms},
"collective_bytes": {group: bytes}, "exposed_comm_ms"}...]}.
"""

import argparse
import glob
import json
import os
import re
import sys


def trace_files(inputs):
    files = []
    for path in inputs:
        if os.path.isdir(path):
            found = sorted(glob.glob(os.path.join(path, "rank*_trace.json")),
                           key=rank_of_name)
            if not found:
                sys.exit(f"error: no rank*_trace.json in {path}")
            files += found
        elif os.path.isfile(path):
            files.append(path)
        else:
            sys.exit(f"error: {path}: no such file or folder")
    return files


def rank_of_name(path):
    m = re.search(r"rank(\d+)_trace\.json$", path)
    return int(m.group(1)) if m else 0


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"error: {path}: not a readable JSON trace ({e})")
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        sys.exit(f"error: {path}: no traceEvents list")
    return events


def summarize(events):
    """Per rank: the per-step means of the spans' durations (ms)."""
    names = {}  # (pid, tid) -> track name
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    ranks = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        r = ranks.setdefault(e["pid"], {
            "rank": e["pid"], "steps": 0, "step_ms": 0.0, "kernel_ms": 0.0,
            "kernel_calls": 0, "collective_ms": {}, "collective_bytes": {},
            "exposed_comm_ms": 0.0})
        ms = e["dur"] / 1e3
        cat = e.get("cat")
        if cat == "step" and e["name"].startswith("step "):
            r["steps"] += 1
            r["step_ms"] += ms
        elif cat == "kernel":
            r["kernel_ms"] += ms
            r["kernel_calls"] += 1
        elif cat == "collective":
            group = names.get((e["pid"], e["tid"]), f"track {e['tid']}")
            group = group[len("comm "):] if group.startswith("comm ") else group
            # Collectives in flight together are drawn on lanes "#2"...
            group = re.sub(r" #\d+$", "", group)
            r["collective_ms"][group] = r["collective_ms"].get(group, 0) + ms
            r["collective_bytes"][group] = (r["collective_bytes"].get(group, 0)
                                            + e.get("args", {}).get("bytes", 0))
        elif cat == "wait":
            r["exposed_comm_ms"] += ms
    out = []
    for pid in sorted(ranks):
        r = ranks[pid]
        n = max(r["steps"], 1)
        for key in ("step_ms", "kernel_ms", "exposed_comm_ms"):
            r[key] = round(r[key] / n, 4)
        r["kernel_calls"] //= n
        r["collective_ms"] = {g: round(v / n, 4)
                              for g, v in sorted(r["collective_ms"].items())}
        r["collective_bytes"] = {g: v // n for g, v in
                                 sorted(r["collective_bytes"].items())}
        out.append(r)
    return out


def main():
    ap = argparse.ArgumentParser(
        description="Merges titan's per-rank profiler traces into one "
        "timeline and prints a per-rank summary.")
    ap.add_argument("inputs", nargs="+",
                    help="an iteration_<step> folder or rank traces")
    ap.add_argument("-o", "--output", help="the merged trace to write")
    ap.add_argument("--json", action="store_true",
                    help="print the summary as JSON")
    args = ap.parse_args()
    merged = []
    seen = {}
    for path in trace_files(args.inputs):
        events = load(path)
        pids = {e.get("pid") for e in events if "pid" in e}
        for pid in pids:
            if pid in seen:
                sys.exit(f"error: rank {pid} is in both {seen[pid]} and "
                         f"{path}")
            seen[pid] = path
        merged += events
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"traceEvents": merged, "displayTimeUnit": "ms"}, f)
    summary = summarize(merged)
    if args.json:
        print(json.dumps({"ranks": summary}, indent=1))
        return
    for r in summary:
        groups = ", ".join(f"{g} {ms:.3f} ms ({r['collective_bytes'][g]} B)"
                           for g, ms in r["collective_ms"].items()) or "none"
        print(f"rank {r['rank']}: {r['steps']} steps, per step: "
              f"step {r['step_ms']:.3f} ms | kernels {r['kernel_ms']:.3f} ms "
              f"({r['kernel_calls']} calls) | collectives: {groups} | "
              f"exposed communication {r['exposed_comm_ms']:.3f} ms")


if __name__ == "__main__":
    main()
