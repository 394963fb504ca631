#!/usr/bin/env python3
"""Reads the flight records of a failed titan run and says where it stopped.

Each rank of a multi-rank run keeps its last [comm] trace_buf_size
collectives and dumps them when the run fails, to
<job.dump_folder>/<comm.save_traces_folder>/<comm.save_traces_file_prefix><rank>
(docs/runtime.md, "CPU communication progress and the flight recorder",
has the format). Like PyTorch's
fr_trace analyzer, this script lines the ranks' records up per group
(the ranks a collective runs over) by sequence number and reports:

  - the collective each rank was stuck in (issued, never completed);
  - per group, the ranks that are behind: those that have not issued the
    collective the others are waiting in (the lower sequence number), and
    for point-to-point transfers (pipeline stages), the peers a rank waits
    for that have no transfer with it in flight;
  - the ranks whose record is missing.

Usage: flight-recorder.py FOLDER_OR_FILES...   (exit status 0; 2 on no
records or unreadable ones)
"""

import argparse
import json
import os
import sys


def load(paths):
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(
                os.path.join(path, name)
                for name in os.listdir(path)
                if not name.endswith(".tmp")
                and os.path.isfile(os.path.join(path, name)))
        else:
            files.append(path)
    records = {}
    for name in files:
        try:
            with open(name) as f:
                record = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"flight-recorder.py: cannot read {name}: {e}")
        if record.get("format") != "titan-flight-recorder":
            sys.exit(f"flight-recorder.py: {name} is not a titan flight record")
        if record.get("version") != 1:
            sys.exit(f"flight-recorder.py: {name} has format version "
                     f"{record.get('version')}; this script reads version 1")
        records[record["rank"]] = record
    if not records:
        sys.exit("flight-recorder.py: no flight records found in " +
                 ", ".join(paths))
    return records


def describe(entry, record):
    axes = record["groups"][entry["group"]]["axes"]
    text = f"{entry['collective']} over [{', '.join(axes)}]"
    if "peer" in entry:
        text += f" with rank {entry['peer']}"
    return (f"{text} (seq {entry['seq']}, {entry['count']} x "
            f"{entry['dtype']}, {entry['bytes']} bytes) at {entry['context']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+",
                        help="a flight-record folder or the ranks' files")
    args = parser.parse_args()
    records = load(args.paths)
    world = max(r["world_size"] for r in records.values())

    print(f"flight records: {len(records)} of {world} ranks")
    missing = [r for r in range(world) if r not in records]
    if missing:
        print("no record from ranks " + ", ".join(map(str, missing)) +
              " (killed, stopped, or without a progress thread to answer)")

    # Per rank: where it stopped.
    for rank in sorted(records):
        record = records[rank]
        entries = record["entries"]
        stuck = [e for e in entries if e["state"] == "issued"]
        print(f"rank {rank}: {record['reason']}")
        if stuck:
            first = stuck[0]
            waited = (record["dumped_us"] - first["issued_us"]) / 1e6
            print(f"  stuck in {describe(first, record)}, issued "
                  f"{waited:.1f} s before the dump")
            for e in stuck[1:]:
                print(f"  also in flight: {describe(e, record)}")
        elif entries:
            print(f"  no collective in flight; last completed: "
                  f"{describe(entries[-1], record)}")
        else:
            print("  no collective recorded")

    # Per group (its ranks; point-to-point transfers apart), the last
    # sequence number each member issued: the members below the highest
    # have not reached the collective the others wait in.
    groups = {}
    for rank, record in records.items():
        for e in record["entries"]:
            ranks = tuple(record["groups"][e["group"]]["ranks"])
            key = (ranks, "peer" in e)
            axes = record["groups"][e["group"]]["axes"]
            g = groups.setdefault(key, {"axes": axes, "last": {},
                                        "stuck": {}})
            g["last"][rank] = max(g["last"].get(rank, -1), e["seq"])
            # The oldest collective still issued: the one the rank waits
            # in (those after it were issued ahead, prefetched).
            if e["state"] == "issued":
                g["stuck"][rank] = min(g["stuck"].get(rank, e["seq"]),
                                       e["seq"])
    behind_any = False
    for (ranks, p2p), g in sorted(groups.items()):
        if p2p:
            continue  # each pair has its own order; the stuck lines say it
        last = {r: g["last"].get(r) for r in ranks if r in records}
        known = [s for s in last.values() if s is not None]
        if not known:
            continue
        top = max(known)
        behind = [r for r, s in last.items() if s is None or s < top]
        if not behind:
            continue
        behind_any = True
        axes = ", ".join(g["axes"])
        print(f"group [{axes}] of ranks {list(ranks)}: seq mismatch, "
              f"{', '.join(f'rank {r} at {s}' for r, s in sorted(last.items()))}")
        for r in behind:
            mine = last[r] if last[r] is not None else -1
            waiting = {x: q for x, q in g["stuck"].items() if q > mine}
            if not waiting:
                waiting = {x: s for x, s in last.items() if s == top}
            seq = min(waiting.values())
            print(f"  rank {r} is behind: it has not issued seq {seq} "
                  f"that rank(s) "
                  f"{', '.join(str(x) for x, q in sorted(waiting.items()) if q == seq)}"
                  f" wait in")
    # Point-to-point transfers (pipeline stages): a rank waiting in a
    # transfer with a peer that has none in flight with it waits for a peer
    # that is behind.
    for rank in sorted(records):
        waiting = {}
        for e in records[rank]["entries"]:
            if e["state"] == "issued" and "peer" in e:
                waiting.setdefault(e["peer"], e)
        for peer, e in sorted(waiting.items()):
            other = records.get(peer)
            if other is None or any(
                    x["state"] == "issued" and x.get("peer") == rank
                    for x in other["entries"]):
                continue
            behind_any = True
            print(f"rank {peer} is behind: rank {rank} waits in "
                  f"{e['collective']} with it (seq {e['seq']}) and rank "
                  f"{peer} has no transfer with rank {rank} in flight")
    if not behind_any:
        print("no rank is behind another: no group has ranks at different "
              "sequence numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
