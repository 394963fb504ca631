#!/usr/bin/env python3
"""Runs a command (a launcher, or one rank alone) with its output in a log,
and once a line of the log matches --after sends --signal to it
(--to launcher) or to one of its ranks (--to rank:N, the descendant whose
environment says OMPI_COMM_WORLD_RANK=N). Prints how it ended:

  exit <status>              (128 + n when signal n ended it, as a shell says)
  ended within <limit> s: yes|no   (after the signal)
  processes left: <n>        (the command's descendants still alive)

Nothing here waits forever: past --limit the command's processes are
killed and the status is the shell's 124 for a timeout.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time


def children(pid):
    """The pids of pid's descendants (from /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def rank_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for var in f.read().split(b"\0"):
                if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                    return int(var.split(b"=", 1)[1])
    except OSError:
        pass
    return None


def alive(pid):
    """Whether pid runs (a zombie waits only to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--after", required=True, help="regex of a log line")
    parser.add_argument("--signal", required=True, help="TERM, INT, KILL")
    parser.add_argument("--to", default="launcher", help="launcher or rank:N")
    parser.add_argument("--limit", type=float, default=30)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    sig = getattr(signal, "SIG" + args.signal)
    pattern = re.compile(args.after, re.M)
    with open(args.log, "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    target = None
    while target is None and proc.poll() is None:
        if time.monotonic() > deadline:
            break
        with open(args.log, errors="replace") as f:
            if pattern.search(f.read()):
                if args.to == "launcher":
                    target = proc.pid
                else:
                    want = int(args.to.split(":", 1)[1])
                    ranks = [p for p in children(proc.pid) if rank_of(p) == want]
                    target = ranks[-1] if ranks else None
                    if target is None:
                        sys.exit(f"no process of rank {want} under {proc.pid}")
                break
        time.sleep(0.02)
    if target is None:
        proc.kill()
        sys.exit(f"the command ended or never logged {args.after!r}")
    family = children(proc.pid)
    os.kill(target, sig)
    sent = time.monotonic()
    try:
        status = proc.wait(timeout=args.limit + 30)
    except subprocess.TimeoutExpired:
        for pid in [proc.pid] + family:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc.wait()
        status = 124
    took = time.monotonic() - sent
    # Ranks the launcher left behind would still run.
    time.sleep(0.2)
    left = [p for p in family if alive(p)]

    print(f"exit {128 - status if status < 0 else status}")
    print(f"ended within {args.limit:g} s: {'yes' if took <= args.limit else 'no'}")
    print(f"processes left: {len(left)}")
    print(f"seconds after the signal: {took:.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
