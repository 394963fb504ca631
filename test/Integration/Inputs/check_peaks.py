#!/usr/bin/env python3
"""Reads the `peak: N` line of each `titan-compile --emit=memory` report and
checks that the planned peaks strictly fall in the order given.

  check_peaks.py none.txt selective-op.txt full.txt
"""

import re
import sys


def peak(path):
    with open(path) as f:
        for line in f:
            m = re.match(r"peak: (\d+)", line)
            if m:
                return int(m.group(1))
    sys.exit(f"{path}: no 'peak:' line")


def main():
    peaks = [(p, peak(p)) for p in sys.argv[1:]]
    for path, value in peaks:
        print(f"{path.rsplit('/', 1)[-1]}: {value / 2**30:.2f} GiB")
    for (a, pa), (b, pb) in zip(peaks, peaks[1:]):
        if not pb < pa:
            sys.exit(f"FAIL: {b} ({pb}) is not below {a} ({pa})")
    print("peaks fall ok")


if __name__ == "__main__":
    main()
