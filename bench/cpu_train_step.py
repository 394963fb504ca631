#!/usr/bin/env python3
"""Throughput of titan's compiled CPU training step against the PyTorch a
user would run on the same machine.

Every system trains the same model (a built-in flavor, by default the
debug model) from the same weights on the same tokens with AdamW, the
schedule and clipping, on the same threads, without activation
checkpointing (none of the PyTorch baselines recomputes). Systems:

  titan             the compiled step (titan-compile + ./train), f32;
  titan bf16        the same with mixed_precision_param = bfloat16;
  torch <v> ref     PyTorch eager on the test suite's independent model
                    (test/Integration/Inputs/llama_reference.py): explicit
                    scores and softmax;
  torch <v> sdpa    eager with F.scaled_dot_product_attention(is_causal);
  torch <v> compile torch.compile of the sdpa model (inductor);
  ... bf16          the sdpa/compile models under torch.autocast(bfloat16);

for Debian's PyTorch (/usr/bin/python3, the ref model only) and for the
current PyTorch from PyPI in bench/.venv (bash bench/setup-venv.sh), when
present. The systems run in interleaved rounds (each round every system in
turn, --steps steps each); a round's figure is its median over the steps
after the first (warm-up: compilation, oneDNN's JIT), and the table gives
the min and median over rounds. It also gives the GFLOP/s (TorchTitan's
6N + 12LHQT per token), the last step's loss of every system, and the
roofline: the step's FLOPs at the machine's best measured f32 GEMM rate at
the step's linear shapes (TitanCpuGemmPeak, built with titan, run in every
round; the median), as tokens/s, and titan's fraction of it. --profile adds titan's per-kernel
profile (TITAN_KERNEL_PROFILE) of one extra run.

  /usr/bin/python3 bench/cpu_train_step.py [--seq-len 256] [--batch 8]
        [--steps 6] [--rounds 4] [--threads 2] [--no-bf16] [--profile]
        [--out bench/results/NAME.md]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from common import PYTHON, REFERENCE, ROOT, machine, model_path, prepare, \
    read_metrics, run, write_result

VENV_PYTHON = os.path.join(ROOT, "bench", ".venv", "bin", "python")
TORCH_STEP = os.path.join(ROOT, "bench", "torch_step.py")


def torch_version(python):
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True).stdout.strip()


def titan_commit():
    out = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                         capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next(l.split(":", 1)[1].split() for l in f
                         if l.startswith("flags"))
    except (OSError, StopIteration):
        return "unknown"
    keep = [x for x in flags if x.startswith(("avx", "amx", "fma", "f16c"))]
    return " ".join(sorted(keep))


def linear_shapes(a, tokens):
    """(m, n, k, transA, transB) of every linear GEMM of one step, forward
    and backward, with its count."""
    per_layer = [(a.dim, a.n_heads * a.head_dim), (a.dim, a.n_kv_heads * a.head_dim),
                 (a.dim, a.n_kv_heads * a.head_dim), (a.n_heads * a.head_dim, a.dim),
                 (a.dim, a.hidden), (a.dim, a.hidden), (a.hidden, a.dim)]
    counts = {}
    for k, n in per_layer * a.n_layers + [(a.dim, a.vocab_size)]:
        for shape in ((tokens, n, k, 0, 1),   # y = x W^T
                      (tokens, k, n, 0, 0),   # dx = dy W
                      (n, k, tokens, 1, 0)):  # dW = dy^T x
            counts[shape] = counts.get(shape, 0) + 1
    return counts


def gemm_roofline(build, a, tokens, threads):
    """The machine's GEMM rate over the step's linear GEMMs (their FLOPs at
    each shape's best measured f32 rate), and the per-shape table."""
    counts = linear_shapes(a, tokens)
    tool = os.path.join(build, "bench", "TitanCpuGemmPeak")
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = run([tool, "--reps", "10"] + [",".join(map(str, s)) for s in counts],
              env=env)
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    flops = seconds = 0.0
    for r in rows:
        shape = (r["m"], r["n"], r["k"], r["transA"], r["transB"])
        f = 2.0 * r["m"] * r["n"] * r["k"] * counts[shape]
        flops += f
        seconds += f / (max(r["sgemm_gflops"], r["matmul_f32_gflops"]) * 1e9)
    return flops / seconds / 1e9, rows


def round_figure(metrics):
    """A round's tokens/s: the median over the steps after the first."""
    return statistics.median(m["tokens_per_second"] for m in metrics[1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--flavor", default="debugmodel")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--no-bf16", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()

    model = model_path(args.flavor)
    sys.path.insert(0, os.path.dirname(REFERENCE))
    import llama_reference as ref  # noqa: E402
    a = ref.Args(ref.load_toml(model))
    tokens = args.batch * args.seq_len
    n = sum(s[0] * (s[1] if len(s) > 1 else 1)
            for name, s in ref.param_shapes(a).items()
            if name != "tok_embeddings.weight")
    flops = 6 * n + 12 * a.n_layers * a.n_heads * a.head_dim * args.seq_len
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads),
               OMP_NUM_THREADS=str(args.threads))
    has_venv = os.path.exists(VENV_PYTHON)
    pypi = torch_version(VENV_PYTHON) if has_venv else None
    debian = torch_version(PYTHON)

    results = {}
    profile = None
    with tempfile.TemporaryDirectory() as tmp:
        config, weights, data = prepare(tmp, args.flavor, args.seq_len,
                                        args.batch, args.steps)
        with open(config, "a") as f:
            f.write("[activation_checkpoint]\nmode = \"none\"\n")

        systems = []  # (name, command that writes metrics to the path given)

        def titan_system(name, precision):
            exe = os.path.join(tmp, "train-" + precision)
            run([os.path.join(args.build, "bin", "titan-compile"),
                 "--job.config_file", config, "--training.mixed_precision_param",
                 precision, "-o", exe])

            def command(out):
                dump = out + ".dump"
                return ([exe, "--training.dataset_path", data,
                         "--checkpoint.initial_load_path", weights,
                         "--job.dump_folder", dump],
                        os.path.join(dump, "metrics.jsonl"))
            systems.append((name, command))

        def torch_system(name, python, variant, dtype):
            def command(out):
                return ([python, TORCH_STEP, "--model", model, "--config", config,
                         "--weights", weights, "--tokens", data, "--out", out,
                         "--variant", variant, "--dtype", dtype,
                         "--threads", str(args.threads)], out)
            systems.append((name, command))

        titan_system("titan", "float32")
        torch_system(f"PyTorch {debian} (Debian) eager, reference model",
                     PYTHON, "reference", "f32")
        if has_venv:
            torch_system(f"PyTorch {pypi} eager, reference model", VENV_PYTHON,
                         "reference", "f32")
            torch_system(f"PyTorch {pypi} eager + SDPA", VENV_PYTHON, "sdpa", "f32")
            torch_system(f"PyTorch {pypi} torch.compile + SDPA", VENV_PYTHON,
                         "compile", "f32")
        if not args.no_bf16:
            titan_system("titan bf16", "bfloat16")
            if has_venv:
                torch_system(f"PyTorch {pypi} eager + SDPA, autocast bf16",
                             VENV_PYTHON, "sdpa", "bf16")
                torch_system(f"PyTorch {pypi} torch.compile + SDPA, autocast bf16",
                             VENV_PYTHON, "compile", "bf16")

        peaks, gemm_rows = [], None
        for r in range(args.rounds):
            # The GEMM peak joins the rounds too: the machine's speed drifts.
            peak, gemm_rows = gemm_roofline(args.build, a, tokens, args.threads)
            peaks.append(peak)
            for i, (name, command) in enumerate(systems):
                out = os.path.join(tmp, f"m{r}-{i}.jsonl")
                cmd, metrics = command(out)
                run(cmd, env=env)
                m = read_metrics(metrics)
                results.setdefault(name, []).append(
                    (round_figure(m), m[-1]["loss"]))

        if args.profile:
            cmd, _ = systems[0][1](os.path.join(tmp, "profile.jsonl"))
            profile = subprocess.run(
                cmd, env=dict(env, TITAN_KERNEL_PROFILE="1"), check=True,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True).stderr
            profile = profile[profile.index("titan kernel profile"):]

    peak = statistics.median(peaks)
    roofline_tps = peak * 1e9 / flops

    lines = [
        f"# titan CPU training step vs PyTorch — {args.flavor}",
        "",
        f"Machine: {machine()}; {args.threads} threads; titan {titan_commit()}.",
        f"CPU flags: {cpu_flags()}.",
        f"Step: local batch {args.batch} x seq {args.seq_len} = {tokens} tokens, "
        "AdamW, no activation checkpointing; "
        f"{args.rounds} interleaved rounds of {args.steps} steps, each round's "
        "median over steps 2+; min / median over rounds.",
        "",
        "| system | tokens/s min | tokens/s median | GFLOP/s (median) | "
        "titan f32 / system | loss at last step |",
        "|---|---|---|---|---|---|",
    ]
    titan_median = statistics.median(x for x, _ in results["titan"])
    for name, rounds in results.items():
        figures = [x for x, _ in rounds]
        med = statistics.median(figures)
        lines.append(f"| {name} | {min(figures):.0f} | {med:.0f} | "
                     f"{med * flops / 1e9:.1f} | {titan_median / med:.2f}x | "
                     f"{rounds[-1][1]:.5f} |")
    lines += [
        "",
        f"**Roofline:** the step's linear GEMMs at the best measured f32 rate per "
        f"shape (dnnl_sgemm or the matmul primitive, {args.threads} threads; "
        f"measured in every round: {min(peaks):.0f} to {max(peaks):.0f}, median "
        f"{peak:.0f} GFLOP/s) give {roofline_tps:.0f} tokens/s for the step's "
        f"{flops / 1e6:.1f} MFLOP per token. titan f32's median reaches "
        f"{titan_median / roofline_tps:.0%} of it.",
        "",
        "The last round's rates per shape:",
        "",
        "| GEMM m x n x k (transA, transB) | sgemm GFLOP/s | matmul f32 | matmul bf16 |",
        "|---|---|---|---|",
    ]
    def rate(gflops):
        return "no kernel" if gflops is None else f"{gflops:.0f}"

    for r in gemm_rows:
        lines.append(f"| {r['m']} x {r['n']} x {r['k']} ({r['transA']}, {r['transB']}) "
                     f"| {r['sgemm_gflops']:.0f} | {r['matmul_f32_gflops']:.0f} "
                     f"| {rate(r['matmul_bf16_gflops'])} |")
    if profile:
        lines += ["", "titan f32's per-kernel profile (one more run, all steps):",
                  "", "```", profile.rstrip(), "```"]
    if not has_venv:
        lines += ["", "(No bench/.venv: the current-PyTorch rows need "
                  "`bash bench/setup-venv.sh`.)"]
    write_result("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
