#!/usr/bin/env python3
"""What a checkpoint save costs the training loop, synchronous against
checkpoint.async_mode ("async", "async_with_pinned_mem"), on the CPU target.

A model where saving matters: a Llama of 1024 wide, 12 layers, 32000 tokens
(about 0.24 B parameters: 2.8 GB of f32 state, parameters and AdamW's two
moments), batch 1 x 64 tokens, so a save writes far more than a step
computes. Each run trains 26 steps with checkpoint.interval 12: saves after
steps 12 and 24 (the mode's; far enough apart for a background write to
end before the next save), and after step 26 (always synchronous, as
TorchTitan's last save). For each save step s the loop pays
elapsed(s + 1) - elapsed(s) - step_time(s + 1): the save itself when
synchronous, the copy to host staging when async. The run's total time
adds what the background writer takes from the steps beside it (two cores
here: it competes with the step's threads). Runs interleave the modes,
three rounds; the first save apart (it allocates the staging buffers),
min and median over the rounds.

Usage: /usr/bin/python3 bench/checkpoint/async_vs_sync.py
           [--titan-compile build/bin/titan-compile] [--out FILE]
"""

import argparse
import datetime
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

MODEL = """dim = 1024
n_layers = 12
n_heads = 16
n_kv_heads = 8
vocab_size = 32000
multiple_of = 256
norm_eps = 1e-5
rope_theta = 500000
max_seq_len = 1024
"""

MODES = ["disabled", "async", "async_with_pinned_mem"]
STEPS, INTERVAL = 26, 12
SAVE_STEPS = [12, 24]


def run_mode(exe, tokens, folder, mode):
    shutil.rmtree(folder, ignore_errors=True)
    common.run([exe, "--training.dataset_path", tokens, "--job.dump_folder",
                folder, "--checkpoint.async_mode", mode])
    metrics = common.read_metrics(os.path.join(folder, "metrics.jsonl"))
    by_step = {m["step"]: m for m in metrics}
    paid = [by_step[s + 1]["elapsed_s"] - by_step[s]["elapsed_s"]
            - by_step[s + 1]["step_time_s"] for s in SAVE_STEPS]
    steps = [m["step_time_s"] for m in metrics if m["step"] > 1]
    # Up to the last step's start: the last save is synchronous in every mode.
    total = by_step[STEPS - 1]["elapsed_s"]
    shutil.rmtree(folder, ignore_errors=True)
    return paid, steps, total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--titan-compile",
                        default=os.path.join(common.ROOT, "build", "bin",
                                             "titan-compile"))
    parser.add_argument("--out", default=os.path.join(
        common.ROOT, "bench", "results", "checkpoint-async.md"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="titan-ckpt-bench-")
    model = os.path.join(tmp, "model.toml")
    with open(model, "w") as f:
        f.write(MODEL)
    tokens = os.path.join(tmp, "tokens.bin")
    common.run([common.PYTHON, common.REFERENCE, "tokens", "--vocab", "32000",
                "--count", "20000", "--seed", "2", "--out", tokens])
    exe = os.path.join(tmp, "train")
    common.run([args.titan_compile, "--model.flavor", model,
                "--training.local_batch_size", "1", "--training.seq_len", "64",
                "--training.steps", str(STEPS), "--checkpoint.enable",
                "--checkpoint.interval", str(INTERVAL),
                "--checkpoint.last_save_model_only", "false",
                "--metrics.log_freq", "1", "-o", exe])
    paid = {m: [] for m in MODES}
    steps = {m: [] for m in MODES}
    totals = {m: [] for m in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            p, s, t = run_mode(exe, tokens, os.path.join(tmp, "out"), mode)
            paid[mode] += p
            steps[mode] += s
            totals[mode].append(t)
    shutil.rmtree(tmp, ignore_errors=True)

    syncTotal = statistics.median(totals["disabled"])
    lines = [
        "# Checkpoint saves: synchronous against checkpoint.async_mode",
        "",
        f"Generated {datetime.date.today()} on {common.machine()} by "
        "`/usr/bin/python3 bench/checkpoint/async_vs_sync.py` (the CPU "
        "target; runs interleaved, "
        f"{args.rounds} rounds). Model: Llama 1024 wide, 12 layers, "
        "vocabulary 32000 (0.24 B parameters; each save writes 2.8 GB of "
        f"f32 parameters and AdamW moments), batch 1 x 64 tokens, {STEPS} "
        f"steps, saves after steps {SAVE_STEPS[0]} and {SAVE_STEPS[1]} in "
        f"the mode under test (and after {STEPS}, always synchronous). "
        "\"Paid\" is what the loop waits for at a save step: elapsed(s+1) "
        "- elapsed(s) - step_time(s+1). \"Run\" is the time to the start "
        f"of step {STEPS}: every step and the two saves, with what the "
        "background writes take from the steps beside them.",
        "",
        f"| async_mode | paid at step {SAVE_STEPS[0]} (first save: "
        f"allocates staging), median s | paid at step {SAVE_STEPS[1]}, min "
        "s | median s | vs sync (median) | step time, median s | run, "
        "median s | run vs sync |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        first, later = paid[mode][0::2], paid[mode][1::2]
        syncLater = statistics.median(paid["disabled"][1::2])
        lines.append(
            f"| {mode} | {statistics.median(first):.3f} | "
            f"{min(later):.3f} | {statistics.median(later):.3f} | "
            f"{statistics.median(later) / syncLater:.3f} | "
            f"{statistics.median(steps[mode]):.3f} | "
            f"{statistics.median(totals[mode]):.1f} | "
            f"{statistics.median(totals[mode]) / syncTotal:.3f} |")
    lines += [
        "",
        "The step-time column includes the steps that ran beside a "
        "background write: on this machine's two cores the writer (the "
        "file's write, fsync and checksums) competes with the step's "
        "threads. On the CPU target the staging memory is ordinary memory "
        "(async_with_pinned_mem pins through the device, a no-op without "
        "a bus); on a GPU it is page-locked, which this machine cannot "
        "measure.",
        "",
    ]
    common.write_result("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
