"""Reads titan's TensorBoard event files back with tensorboard (PyPI).

Usage: read_tensorboard.py <save_tb_folder> [--metrics <metrics.jsonl>]
                            [--show <tag>]

For each folder holding event files (relative to <save_tb_folder>, the
datetime folder printed as DATETIME) prints its event file's name pattern,
its scalar tags and the steps of each tag, as TensorBoard's EventAccumulator
reads them. Every record's length and data CRC32C are checked with
tensorboard's own record reader (which raises DataLossError on a bad one;
EventAccumulator would only warn). With --metrics, the loss, grad_norm and
lr at every logged step must equal the values in titan's metrics file to
float32 precision: TensorBoard's simple_value is the float32 of titan's
double, metrics.jsonl has it to 10 significant digits, so the two
roundings may be one float32 ulp apart. --show prints a tag's first value.
"""

import argparse
import json
import os
import re
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow


def check_records(path):
    """The file's events, every record's CRCs checked."""
    reader = pywrap_tensorflow.PyRecordReader_New(path)
    events = []
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return events
        event = event_pb2.Event()
        event.ParseFromString(reader.record())
        events.append(event)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--metrics")
    parser.add_argument("--show")
    args = parser.parse_args()
    metrics = {}
    if args.metrics:
        with open(args.metrics) as f:
            for line in f:
                m = json.loads(line)
                metrics[m["step"]] = m
    failures = 0
    for folder, _, files in sorted(os.walk(args.root)):
        files = [f for f in files if f.startswith("events.out.tfevents.")]
        if not files:
            continue
        rel = os.path.relpath(folder, args.root)
        rel = re.sub(r"^\d{8}-\d{4}", "DATETIME", rel)
        print(f"run {rel}")
        for name in files:
            pattern = re.fullmatch(r"events\.out\.tfevents\.(\d+)\.(.+)\.(\d+)", name)
            print("file events.out.tfevents.<time>.<host>.<pid>" if pattern else f"file {name}")
            events = check_records(os.path.join(folder, name))
            print(f"first event: {events[0].file_version}; {len(events)} records")
        acc = EventAccumulator(folder, size_guidance={"scalars": 0})
        acc.Reload()
        for tag in sorted(acc.Tags()["scalars"]):
            steps = [e.step for e in acc.Scalars(tag)]
            print(f"tag {tag}: steps {' '.join(map(str, steps))}")
        if args.show:
            print(f"{args.show} = {acc.Scalars(args.show)[0].value!r}")
        if not metrics:
            continue
        compared = 0
        for tag, key in [
            ("loss_metrics/global_avg_loss", "loss"),
            ("grad_norm", "grad_norm"),
            ("lr", "lr"),
        ]:
            for e in acc.Scalars(tag):
                want = metrics[e.step][key]
                if abs(e.value - want) > abs(want) * 2.0**-23:
                    print(f"MISMATCH {tag} step {e.step}: {e.value!r} != {want!r}")
                    failures += 1
                compared += 1
        print(f"loss, grad_norm, lr: {compared} values equal metrics.jsonl's")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
