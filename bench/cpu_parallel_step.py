#!/usr/bin/env python3
"""Throughput and per-rank memory of titan's parallel configurations on CPU.

Every configuration trains the same model from the same weights on the same
tokens with the same global batch, so the runs compute the same steps (the
last-step losses are printed to show it). Each configuration is compared
with the single-rank executable measured in the same run, on the same
machine, with the same total number of BLAS threads (the single rank uses
all of them, N ranks one each, oversubscribing when N exceeds the cores).
Prints tokens/s (median over the timed steps, the first excluded), the ratio
to one rank, and the per-rank parameter and optimizer-state bytes the
executable reports. Writes the table to --out (markdown).

  /usr/bin/python3 bench/cpu_parallel_step.py [--seq-len 256] [--batch 8]
        [--steps 6] [--out bench/results/NAME.md]

On a machine with fewer cores than ranks this measures the overhead of the
partitioned program and its MPI collectives, not a speed-up.
"""

import argparse
import os
import re
import tempfile

from common import ROOT, machine, median_tokens_per_second, prepare, \
    read_metrics, run, write_result

# name, ranks, compile-time overrides (the global batch stays the same).
CONFIGS = [
    ("1 rank", 1, []),
    ("DDP 2", 2, ["--parallelism.data_parallel_replicate_degree", "2",
                  "--parallelism.data_parallel_shard_degree", "1"]),
    ("FSDP 2", 2, []),
    ("TP 2 (SP, loss parallel)", 2, ["--parallelism.tensor_parallel_degree", "2",
                                     "--parallelism.data_parallel_shard_degree", "1"]),
    ("TP 2, no loss parallel", 2, ["--parallelism.tensor_parallel_degree", "2",
                                   "--parallelism.data_parallel_shard_degree", "1",
                                   "--parallelism.disable_loss_parallel", "true"]),
    ("FSDP 2 x TP 2", 4, ["--parallelism.tensor_parallel_degree", "2"]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--flavor", default="debugmodel")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8, help="global batch")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--out")
    args = ap.parse_args()
    cores = os.cpu_count()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        config, weights, tokens = prepare(tmp, args.flavor, args.seq_len,
                                          args.batch, args.steps,
                                          batch_key="global_batch_size")

        for name, ranks, overrides in CONFIGS:
            tp = 1
            if "--parallelism.tensor_parallel_degree" in overrides:
                tp = int(overrides[overrides.index("--parallelism.tensor_parallel_degree") + 1])
            local = args.batch // (ranks // tp)
            exe = os.path.join(tmp, re.sub(r"\W+", "_", name))
            run([os.path.join(args.build, "bin", "titan-compile"),
                 "--job.config_file", config, "--world-size", str(ranks),
                 "--training.local_batch_size", str(local), *overrides,
                 "-o", exe])
            threads = max(1, cores // ranks)
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
                       OMP_NUM_THREADS=str(threads), OMPI_ALLOW_RUN_AS_ROOT="1",
                       OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            out = os.path.join(tmp, os.path.basename(exe) + "-out")
            launch = [] if ranks == 1 else ["mpirun", "--oversubscribe", "-np", str(ranks)]
            log = run([*launch, exe, "--training.dataset_path", tokens,
                       "--checkpoint.initial_load_path", weights,
                       "--job.dump_folder", out], env=env)
            metrics = read_metrics(os.path.join(out, "metrics.jsonl"))
            mem = re.search(r"parameters (\d+) bytes, optimizer state (\d+) bytes", log)
            params, state = (int(mem.group(1)), int(mem.group(2))) if mem else (None, None)
            if params is None:  # one rank: everything
                params = int(re.search(r"(\d+) parameters", log).group(1)) * 4
                state = 2 * params
            tps = median_tokens_per_second(metrics)
            rows.append((name, ranks, threads, tps, params, state, metrics[-1]["loss"]))

    base = rows[0][3]
    lines = [
        f"# titan parallel configurations on CPU — {args.flavor}",
        "",
        f"Machine: {machine()}; MPI: Open MPI "
        f"(shared memory). Global batch {args.batch} x seq {args.seq_len} = "
        f"{args.batch * args.seq_len} tokens per step, float32, AdamW; median of "
        f"steps 2-{args.steps}.",
        "",
        "| configuration | ranks | BLAS threads / rank | tokens/s | vs 1 rank | "
        "parameters / rank (bytes) | optimizer state / rank (bytes) | loss at last step |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, ranks, threads, tps, params, state, loss in rows:
        lines.append(f"| {name} | {ranks} | {threads} | {tps:.0f} | {tps / base:.2f}x | "
                     f"{params:,} | {state:,} | {loss:.5f} |")
    lines += ["", "The single-rank executable runs only its GEMMs multi-threaded "
              "(OpenBLAS); attention's softmax, norms, elementwise ops and AdamW run "
              "on one thread. Ranks split that work as well, which is why two ranks "
              "can beat one rank with two BLAS threads."]
    if cores < max(r[1] for r in rows):
        lines += ["", f"With {cores} cores, configurations of more ranks than cores "
                  "time-share them: the ratios show the cost of partitioning and "
                  "communication, not scaling."]
    write_result("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
