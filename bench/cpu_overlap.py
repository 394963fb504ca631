#!/usr/bin/env python3
"""Communication overlap on CPU ranks: step time and exposed communication.

For the debug model on CPU ranks (Open MPI), each configuration is compiled
twice and the two executables run in interleaved rounds:
  - FSDP 4, TP 2 x FSDP 2, PP 2 x FSDP 2: overlap on (the default) against
    overlap off (--debug.no_comm_overlap);
  - TP 2, TP 4, TP 2 Float8: async TP (--parallelism.enable_async_tensor_parallel)
    against sync TP, overlap on in both.
Per configuration it reports the step time (each round's median over the
untraced steps after the first; min / median over rounds) of both
variants and off/on, and the exposed communication per step: the time the
compute thread blocked in a collective's wait, i.e. the sum of the
`cat == "wait"` spans on the compute track (tid 0) of a rank's Chrome trace
(--profiling.enable_profiling, every --profile-freq-th step), the mean over
ranks and traced steps; min / median over rounds, and off/on.

scripts/merge-traces.py ITERATION_FOLDER --json (when present) supplies the
per-rank exposed_comm_ms; otherwise the traces are read here with the same
definition. A build whose titan-compile lacks debug.no_comm_overlap compiles
both variants alike (the table says so), so the harness runs before the
scheduler lands and picks it up after.

  /usr/bin/python3 bench/cpu_overlap.py [--rounds 3] [--steps 10]
        [--profile-freq 3] [--seq-len 256] [--batch 8] [--quick]
        [--configs REGEX] [--out bench/results/cpu-overlap-debugmodel.md]

--quick: one round of 4 steps at seq 64 (a smoke run, not a measurement).
With fewer cores than ranks the ranks time-share the cores, and
communication cannot hide behind compute that waits for a core: the ratios
then say little about a machine with a core per rank.
"""

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from common import ROOT, machine, prepare, read_metrics, run, write_result

ASYNC_TP = ["--parallelism.enable_async_tensor_parallel", "true"]
NO_OVERLAP = ["--debug.no_comm_overlap", "true"]

# name, ranks, mesh overrides, (label, flags) of the baseline ("off") and
# of the variant measured against it ("on").
CONFIGS = [
    ("FSDP 4", 4, ["--parallelism.data_parallel_shard_degree", "4"],
     ("overlap off", NO_OVERLAP), ("overlap on", [])),
    ("TP 2 x FSDP 2", 4, ["--parallelism.tensor_parallel_degree", "2",
                          "--parallelism.data_parallel_shard_degree", "2"],
     ("overlap off", NO_OVERLAP), ("overlap on", [])),
    ("PP 2 x FSDP 2", 4, ["--parallelism.pipeline_parallel_degree", "2",
                          "--parallelism.data_parallel_shard_degree", "2"],
     ("overlap off", NO_OVERLAP), ("overlap on", [])),
    ("TP 2", 2, ["--parallelism.tensor_parallel_degree", "2",
                 "--parallelism.data_parallel_shard_degree", "1"],
     ("sync TP", []), ("async TP", ASYNC_TP)),
    ("TP 4", 4, ["--parallelism.tensor_parallel_degree", "4",
                 "--parallelism.data_parallel_shard_degree", "1"],
     ("sync TP", []), ("async TP", ASYNC_TP)),
    # Float8 (tensorwise): float8 gathers; async TP's scaled collective
    # matmuls against the unfused scaled GEMMs.
    ("TP 2 Float8", 2, ["--parallelism.tensor_parallel_degree", "2",
                        "--parallelism.data_parallel_shard_degree", "1",
                        "--model.converters", "quantize.linear.float8"],
     ("sync TP", []), ("async TP", ASYNC_TP)),
]


def degree(overrides, key):
    flag = "--parallelism." + key
    return int(overrides[overrides.index(flag) + 1]) if flag in overrides else 1


def compile_accepts(compiler, key):
    """Whether titan-compile knows the config key (its --help lists it)."""
    help_text = subprocess.run([compiler, "--help"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True).stdout
    return key in help_text


def exposed_from_trace(path):
    """Microseconds of `wait` spans on the compute track (tid 0)."""
    with open(path) as f:
        events = json.load(f)
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    return sum(float(e.get("dur", 0)) for e in events
               if e.get("cat") == "wait" and e.get("tid") == 0
               and e.get("ph") == "X")


# merge-traces.py --json's per-rank figure (the per-step mean over the
# file's traced steps), and its scale to microseconds.
EXPOSED_KEYS = {"exposed_comm_ms": 1e3, "exposed_communication_us": 1.0}


def find_exposed(value, found):
    """Collects every per-rank exposed-communication figure (in us) of a
    JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k in EXPOSED_KEYS and isinstance(v, (int, float)):
                found.append(float(v) * EXPOSED_KEYS[k])
            else:
                find_exposed(v, found)
    elif isinstance(value, list):
        for v in value:
            find_exposed(v, found)


def exposed_per_rank(step_dir, ranks):
    """Per-rank exposed microseconds of one traced step, and where they came
    from: merge-traces.py --json, or this script's reading of the traces."""
    files = sorted(glob.glob(os.path.join(step_dir, "rank*_trace.json")))
    if len(files) != ranks:
        raise SystemExit(f"cpu_overlap: {step_dir} holds {len(files)} rank "
                         f"traces, expected {ranks}")
    merge = os.path.join(ROOT, "scripts", "merge-traces.py")
    if os.path.exists(merge):
        proc = subprocess.run([sys.executable, merge, step_dir, "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        if proc.returncode == 0:
            try:
                found = []
                find_exposed(json.loads(proc.stdout), found)
                if len(found) == ranks:
                    return found, "merge-traces.py"
            except json.JSONDecodeError:
                pass
    return [exposed_from_trace(f) for f in files], "traces"


def run_once(exe, ranks, tokens, weights, out, threads, profile_freq):
    """One run: (median step seconds over the untraced steps after the
    first, mean exposed us per traced step (mean over ranks), source)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launch = ["mpirun", "--oversubscribe", "-np", str(ranks)]
    run([*launch, exe, "--training.dataset_path", tokens,
         "--checkpoint.initial_load_path", weights, "--job.dump_folder", out],
        env=env)
    metrics = [m for m in read_metrics(os.path.join(out, "metrics.jsonl"))
               if "step_time_s" in m]
    untraced = [m["step_time_s"] for m in metrics[1:]
                if m["step"] % profile_freq != 0]
    if not untraced:  # every step after the first traced
        untraced = [m["step_time_s"] for m in metrics[1:]]
    steps = sorted(glob.glob(os.path.join(out, "profile_traces", "iteration_*")),
                   key=lambda d: int(d.rsplit("_", 1)[1]))
    steps = [d for d in steps if int(d.rsplit("_", 1)[1]) > 1] or steps
    if not steps:
        raise SystemExit(f"cpu_overlap: {out} has no traced step; is "
                         "--profiling.enable_profiling honoured?")
    per_step, source = [], "traces"
    for d in steps:
        values, source = exposed_per_rank(d, ranks)
        per_step.append(statistics.mean(values))
    return statistics.median(untraced), statistics.mean(per_step), source, \
        [m["loss"] for m in metrics]


def ratio(off, on):
    return f"{off / on:.2f}x" if on > 0 else "-"


def loss_difference(a, b):
    """The largest relative difference of two runs' per-step losses (0:
    the same bits)."""
    if len(a) != len(b):
        return float("inf")
    return max((abs(x - y) / abs(y) if y else abs(x - y)) for x, y in zip(a, b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--flavor", default="debugmodel")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8, help="global batch")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--profile-freq", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--configs", default="", help="regex over the names")
    ap.add_argument("--quick", action="store_true",
                    help="one round of 4 steps at seq 64: a smoke run")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.steps, args.profile_freq = 1, 4, 2
        args.seq_len = min(args.seq_len, 64)
    if args.profile_freq < 2 or args.steps < 2 * args.profile_freq:
        ap.error("--steps must cover two traced steps (2 x --profile-freq, "
                 "--profile-freq >= 2) so an untraced step follows the first")
    configs = [c for c in CONFIGS if re.search(args.configs, c[0])]
    if not configs:
        ap.error(f"--configs '{args.configs}' matches none of: "
                 + ", ".join(c[0] for c in CONFIGS))
    compiler = os.path.join(args.build, "bin", "titan-compile")
    has_off = compile_accepts(compiler, "no_comm_overlap")
    cores = os.cpu_count()

    results = {}  # (config, label) -> list of (step s, exposed us)
    sources, losses = set(), {}
    with tempfile.TemporaryDirectory() as tmp:
        config, weights, tokens = prepare(tmp, args.flavor, args.seq_len,
                                          args.batch, args.steps,
                                          batch_key="global_batch_size")
        exes = {}
        for name, ranks, mesh, off, on in configs:
            dp = degree(mesh, "data_parallel_shard_degree")
            for label, flags in (off, on):
                if flags is NO_OVERLAP and not has_off:
                    flags = []
                exe = os.path.join(tmp, re.sub(r"\W+", "_", f"{name} {label}"))
                run([compiler, "--job.config_file", config,
                     "--world-size", str(ranks),
                     "--training.local_batch_size", str(args.batch // dp),
                     "--profiling.enable_profiling", "true",
                     "--profiling.profile_freq", str(args.profile_freq),
                     # One traced step per cycle and no warm-up (TorchTitan's
                     # schedule needs profile_freq >= warmup + active): the
                     # other steps stay untraced and time the step.
                     "--profiling.profiler_warmup", "0",
                     *mesh, *flags, "-o", exe])
                exes[(name, label)] = exe
        for r in range(args.rounds):
            for name, ranks, mesh, off, on in configs:
                # Alternate the order each round: neither variant always
                # runs on a machine the other just warmed.
                pair = (off, on) if r % 2 == 0 else (on, off)
                for label, _ in pair:
                    exe = exes[(name, label)]
                    out = os.path.join(tmp, f"{os.path.basename(exe)}-{r}")
                    step, exposed, source, curve = run_once(
                        exe, ranks, tokens, weights, out,
                        max(1, cores // ranks), args.profile_freq)
                    sources.add(source)
                    losses.setdefault((name, label), []).append(curve)
                    results.setdefault((name, label), []).append((step, exposed))

    def stats(key, i):
        values = [x[i] for x in results[key]]
        return min(values), statistics.median(values)

    lines = [
        f"# Communication overlap on CPU ranks — {args.flavor}",
        "",
        f"Machine: {machine()}; MPI: Open MPI (shared memory). Global batch "
        f"{args.batch} x seq {args.seq_len}, float32, AdamW; {args.steps} "
        f"steps per run, one in {args.profile_freq} traced; "
        f"{args.rounds} interleaved round(s). Step time: each round's median "
        "over the untraced steps after the first. Exposed communication: the "
        "sum of the `wait` spans on the compute track (tid 0) per rank and "
        "traced step, mean over ranks and traced steps (from "
        f"{' and '.join(sorted(sources))}). min / median over rounds; "
        "the ratios are baseline / variant of the medians (above 1: the "
        "variant is faster or exposes less). Loss: the largest relative "
        "difference of the two variants' per-step losses over every round "
        "(0: the same bits; overlap must not change them, async TP's "
        "reduce-scatter side may by up to 1e-6).",
        "",
        "| configuration | ranks | baseline | variant | step ms baseline "
        "(min / med) | step ms variant (min / med) | step ratio | exposed "
        "ms baseline (min / med) | exposed ms variant (min / med) | exposed "
        "ratio | loss, max rel. diff |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, ranks, mesh, off, on in configs:
        b, v = (name, off[0]), (name, on[0])
        sb, sv = stats(b, 0), stats(v, 0)
        eb, ev = stats(b, 1), stats(v, 1)
        lines.append(
            f"| {name} | {ranks} | {off[0]} | {on[0]} | "
            f"{sb[0] * 1e3:.1f} / {sb[1] * 1e3:.1f} | "
            f"{sv[0] * 1e3:.1f} / {sv[1] * 1e3:.1f} | {ratio(sb[1], sv[1])} | "
            f"{eb[0] / 1e3:.2f} / {eb[1] / 1e3:.2f} | "
            f"{ev[0] / 1e3:.2f} / {ev[1] / 1e3:.2f} | {ratio(eb[1], ev[1])} | "
            f"{max(loss_difference(x, y) for x, y in zip(losses[v], losses[b])):.1e} |")
    notes = []
    if not has_off and any(c[3][1] is NO_OVERLAP for c in configs):
        notes.append("This build's titan-compile has no debug.no_comm_overlap: "
                     "'overlap off' was compiled like 'overlap on'.")
    if all(x[1] == 0 for rs in results.values() for x in rs):
        notes.append("No run recorded a `wait` span: this build's "
                     "communicators do not trace their waits yet.")
    if cores < max(c[1] for c in configs):
        notes.append(f"With {cores} cores, configurations of more ranks than "
                     "cores time-share them: a transfer cannot progress on a "
                     "core that computes, so overlap shows less than on a "
                     "machine with a core per rank.")
    if args.quick:
        notes.append("--quick: one round of a few steps, a smoke run, not "
                     "a measurement.")
    if notes:
        lines += [""] + notes
    write_result("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
