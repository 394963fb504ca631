#!/usr/bin/env python3
"""Reads one rank's profiler trace (titan's Chrome trace JSON) and prints
what profiling.test checks: the process and track names, the steps, the
kernel spans against the kernel IR's calls, the op paths, collectives and
waits.

usage: check_trace.py TRACE.json [--kernel-ir FILE --runs FUNC=N,...]
  --kernel-ir: `titan-compile --emit=kernel` of the same configuration;
  --runs: how often each compiled step runs per training step (the
  forward_backward step once per microbatch). With both, the kernel spans
  of every traced step, counted per kernel, must equal the kernel.call ops
  of those functions times their runs.
"""
import argparse
import collections
import json
import re
import sys

DTYPE = re.compile(r"_(f32|f64|bf16|f16|i32)$")


def ir_calls(path, runs):
    """kernel name -> calls per training step."""
    calls = collections.Counter()
    func = None
    for line in open(path):
        m = re.match(r"\s*func\.func @(\w+)", line)
        if m:
            func = m.group(1)
            continue
        m = re.search(r'kernel\.call "(\w+)"', line)
        if m and func in runs:
            calls[m.group(1)] += runs[func]
        # Generated kernels' spans are all named "generated"; a row
        # kernel with column sums (a workspace) runs a second pass, their
        # totals.
        if "kernel.generic" in line and func in runs:
            passes = 2 if " workspace(" in line else 1
            calls["generated"] += passes * runs[func]
    return calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--kernel-ir")
    ap.add_argument("--runs", default="")
    args = ap.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    spans = [e for e in events if e["ph"] == "X"]
    assert len(meta) + len(spans) == len(events), "only M and X events"
    process = [e["args"]["name"] for e in meta if e["name"] == "process_name"]
    tracks = {e["tid"]: e["args"]["name"] for e in meta
              if e["name"] == "thread_name"}
    print(f"process: {', '.join(process)}")
    print(f"tracks: {', '.join(tracks[t] for t in sorted(tracks))}")
    for e in spans:
        assert e["tid"] in tracks, f"span on an unnamed track: {e}"
        assert e["dur"] >= 0, f"negative duration: {e}"
    steps = sorted(int(e["name"].split()[1]) for e in spans
                   if e["cat"] == "step" and e["name"].startswith("step "))
    print(f"steps: {' '.join(map(str, steps))}")
    kernels = [e for e in spans if e["cat"] == "kernel"]
    assert all(tracks[e["tid"]] == "compute" for e in kernels)
    # Every kernel span lies inside a step span (nesting on one track).
    step_spans = [e for e in spans if e["cat"] == "step"
                  and e["name"].startswith("step ")]
    outside = [e for e in kernels if not any(
        s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"]
        for s in step_spans)]
    print(f"kernel spans: {len(kernels)}, outside a step: {len(outside)}")
    ops = sorted({e["args"]["op"] for e in kernels if "op" in e.get("args",
                                                                  {})})
    without = sum(1 for e in kernels if "op" not in e.get("args", {}))
    print(f"kernel op paths: {len(ops)} distinct, {without} spans without")
    for prefix in ("layers.0.attention", "layers.1.feed_forward", "output"):
        hits = [o for o in ops if o.startswith(prefix)]
        print(f"op {prefix}: {'yes' if hits else 'no'}")
    if args.kernel_ir:
        runs = {k: int(v) for k, v in
                (r.split("=") for r in args.runs.split(",") if r)}
        want = ir_calls(args.kernel_ir, runs)
        got = collections.Counter(DTYPE.sub("", e["name"]) for e in kernels)
        n = len(steps)
        diff = {k: (got[k], want[k] * n) for k in set(got) | set(want)
                if got[k] != want[k] * n}
        if diff:
            print(f"kernel counts differ (trace, IR x runs x steps): {diff}")
        else:
            print(f"kernel counts equal the IR's: {sum(want.values())} calls "
                  f"per step, {len(want)} kernels")
    by_cat = collections.Counter(e["cat"] for e in spans)
    collectives = [e for e in spans if e["cat"] == "collective"]
    with_bytes = sum(1 for e in collectives
                     if e.get("args", {}).get("bytes", 0) > 0)
    on_comm = sum(1 for e in collectives
                  if tracks[e["tid"]].startswith("comm "))
    print(f"collective spans: {len(collectives)}, with bytes {with_bytes}, "
          f"on comm tracks {on_comm}")
    waits = [e for e in spans if e["cat"] == "wait"]
    print(f"wait spans: {len(waits)}, on compute "
          f"{sum(1 for e in waits if tracks[e['tid']] == 'compute')}")
    print(f"categories: {', '.join(sorted(by_cat))}")


if __name__ == "__main__":
    main()
