#!/usr/bin/env python3
"""The measured pipeline bubble of a traced step.

Reads the per-rank Chrome traces a pipeline-parallel titan executable wrote
with --profiling.enable_profiling true (<dump_folder>/profile_traces/
iteration_<step>/rank<r>_trace.json) and prints, over the schedule's
compute actions (F, B, I, W), each rank's busy time and the bubble
1 - busy / (ranks x makespan), the makespan running from the first action's
start to the last one's end on any rank (the ranks share the machine's
monotonic clock). Compare it with the planned bubble of
`titan-compile --emit=schedule` (unit costs) for the same configuration.

usage: trace_bubble.py ITERATION_FOLDER
"""
import glob
import json
import os
import sys

COMPUTE = {"F", "B", "I", "W"}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    files = sorted(glob.glob(os.path.join(sys.argv[1], "rank*_trace.json")))
    if not files:
        sys.exit(f"no rank*_trace.json in {sys.argv[1]}")
    busy, begin, end = {}, [], []
    waits = {}
    for path in files:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        for e in events:
            if e.get("ph") != "X":  # the track names' metadata events
                continue
            rank = e["pid"]
            if e["cat"] in COMPUTE:
                busy[rank] = busy.get(rank, 0.0) + e["dur"]
                begin.append(e["ts"])
                end.append(e["ts"] + e["dur"])
            elif e["cat"] == "transfer":
                waits[rank] = waits.get(rank, 0.0) + e["dur"]
    if not busy:
        sys.exit("the traces hold no pipeline actions (a run without "
                 "pipeline parallelism?)")
    makespan = max(end) - min(begin)
    for rank in sorted(busy):
        print(f"rank {rank}: busy {busy[rank] / 1e3:.3f} ms of "
              f"{makespan / 1e3:.3f} ms, waiting on transfers "
              f"{waits.get(rank, 0.0) / 1e3:.3f} ms")
    bubble = 1 - sum(busy.values()) / (len(busy) * makespan)
    print(f"measured bubble {bubble:.4f} over {len(busy)} ranks")


if __name__ == "__main__":
    main()
