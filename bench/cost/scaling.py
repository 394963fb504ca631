#!/usr/bin/env python3
"""Weak scaling of Llama 3.1 8B, 70B and 405B from 8 to 512 GPUs, predicted.

Tokens per GPU are fixed as in TorchTitan's published runs (sequences of
8192): 8B 2 sequences per GPU (tables 1 and 3: local batch 2 on FSDP), 70B
2 per GPU (table 4: global batch 512 on 256 GPUs), 405B 1/2 per GPU (table
5: global batch 256 on 512 GPUs); the global batch is that times the GPU
count. At each size three plans are predicted (titan-compile --emit=cost):

- "planner": titan-compile --plan auto --plan-format json's best plan;
- "torchtitan": TorchTitan's published layout scaled: FSDP N (8B, compile
  + Float8, selective AC), FSDP N/8 x TP 8 (70B, full AC, Float8, async
  TP), FSDP N/64 x TP 8 x PP 8 Interleaved 1F1B (405B, full AC, Float8,
  async TP, microbatches of 4);
- "hsdp": TorchTitan's HSDP, FSDP over 8 GPUs (8B) or 8 x TP 8 (70B)
  and replicas across (from 16 and 128 GPUs);
- "tree": the seed's decision tree: <= 10B FSDP + compile + Float8;
  10-100B FSDP + TP 8 + async TP + selective AC; > 100B 3D with
  Interleaved 1F1B (TP 8, PP 8, full AC, Float8, async TP).

A fixed plan whose local batch does not fit is retried with a smaller
local batch and gradient accumulation (the global batch stays); one that
never fits is reported with its smallest peak. Weak-scaling efficiency =
tokens/s/GPU at N over tokens/s/GPU at the plan's smallest feasible size.

Usage:
  python3 bench/cost/scaling.py [--gpu h100 --gpu h100-96gb] [--jobs 2]
  python3 bench/cost/scaling.py --from-json bench/results/cost-model-scaling.json
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GIB = 1024.0 ** 3
SIZES = [8, 16, 32, 64, 128, 256, 512]
MODELS = ["8b", "70b", "405b"]
SEQ = 8192
# Sequences per GPU in TorchTitan's published runs (see the docstring).
SEQS_PER_GPU = {"8b": 2.0, "70b": 2.0, "405b": 0.5}
# Device memory (nvidia-smi's total: H100 SXM 81559 MiB, the 96 GB HBM2e
# part 95830 MiB) less 4 GiB for the CUDA context, NCCL's channels and
# cuBLAS/cuDNN handles, which no memory plan holds.
CAPACITY_GIB = {"h100": 81559 / 1024, "h100-96gb": 95830 / 1024,
                "h200": 143771 / 1024}
RESERVE_GIB = 4.0
SEED_CLAIM = 0.89

COMPILE = {"compile.enable": "true"}
FLOAT8 = {
    "model.converters": "float8",
    "quantize.linear.float8.enable_fsdp_float8_all_gather": "true",
    "quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp": "true",
}
BF16 = {"model.converters": ""}
ASYNC_TP = {"parallelism.enable_async_tensor_parallel": "true"}


def preset(model):
    return os.path.join(ROOT, "models", "llama3", "train_configs",
                        f"llama3_{model}.toml")


def global_batch(model, gpus):
    return max(1, int(SEQS_PER_GPU[model] * gpus))


def mesh(dp_shard, tp=1, pp=1, dp_replicate=1):
    return {"parallelism.data_parallel_replicate_degree": str(dp_replicate),
            "parallelism.data_parallel_shard_degree": str(dp_shard),
            "parallelism.tensor_parallel_degree": str(tp),
            "parallelism.pipeline_parallel_degree": str(pp),
            "parallelism.context_parallel_degree": "1"}


def fixed_plan(family, model, gpus):
    """The plan's name and its candidate overrides, largest local batch
    first; None where the layout does not exist at this size."""
    g = global_batch(model, gpus)
    base = {"training.seq_len": str(SEQ), "training.global_batch_size": str(g)}
    if family == "hsdp":
        # TorchTitan's HSDP: FSDP inside a node (8 GPUs; with TP 8 for
        # 70B: FSDP over 8 nodes), replicas across.
        if model == "405b":
            return None
        tp = 1 if model == "8b" else 8
        shard = 8
        if gpus < tp * shard * 2:
            return None
        rep = gpus // (tp * shard)
        dp = rep * shard
        name = (f"DDP {rep} x FSDP {shard}" + (" x TP 8" if tp > 1 else "")
                + ", compile + Float8, "
                + ("selective AC" if tp == 1 else "full AC, async TP"))
        fixed = {**base, **mesh(shard, tp=tp, dp_replicate=rep), **COMPILE,
                 **FLOAT8,
                 "activation_checkpoint.mode": "selective" if tp == 1
                 else "full"}
        if tp > 1:
            fixed.update(ASYNC_TP)
    elif model == "8b":
        name = f"FSDP {gpus}, compile + Float8, selective AC"
        fixed = {**base, **mesh(gpus), **COMPILE, **FLOAT8,
                 "activation_checkpoint.mode": "selective"}
        dp = gpus
    elif model == "70b":
        if gpus < 8:
            return None
        dp = gpus // 8
        fixed = {**base, **mesh(dp, tp=8), **COMPILE, **ASYNC_TP}
        if family == "torchtitan":
            name = f"FSDP {dp} x TP 8, full AC, Float8, async TP"
            fixed.update({**FLOAT8, "activation_checkpoint.mode": "full"})
        else:
            name = f"FSDP {dp} x TP 8, selective AC, async TP (bf16)"
            fixed.update({**BF16, "activation_checkpoint.mode": "selective"})
    else:
        if gpus < 64:
            return None
        dp = gpus // 64
        name = (f"FSDP {dp} x TP 8 x PP 8 Interleaved1F1B, full AC, Float8, "
                "async TP")
        fixed = {**base, **mesh(dp, tp=8, pp=8), **COMPILE, **FLOAT8,
                 **ASYNC_TP, "activation_checkpoint.mode": "full",
                 "parallelism.pipeline_parallel_schedule": "Interleaved1F1B"}
    local = g // dp
    candidates = []
    lb = local
    # Interleaved 1F1B needs a multiple of the pp degree (8) of microbatches.
    while lb >= (8 if model == "405b" else 1):
        c = dict(fixed)
        c["training.local_batch_size"] = str(lb)
        if model == "405b":
            # TorchTitan's 8 microbatches of 4, fewer as the batch shrinks.
            c["parallelism.pipeline_parallel_microbatch_size"] = str(
                max(1, min(4, lb // 8)))
        candidates.append(c)
        lb //= 2
    return name, candidates


def compiler_error(p):
    """titan-compile's errors (not its warnings), shortened."""
    lines = [l.strip() for l in p.stderr.splitlines() if l.strip()]
    errors = [l for l in lines if "error" in l] or lines
    return " ".join(errors[:2])[:300] or f"exit {p.returncode}"


_CACHE = {}


def run_cost(binary, model, gpus, gpu, overrides, timeout):
    # Families that pick the same layout (8B's and 405B's TorchTitan layout
    # is the decision tree's) compile it once.
    key = (model, gpus, gpu, tuple(sorted(overrides.items())))
    if key not in _CACHE:
        _CACHE[key] = _run_cost(binary, model, gpus, gpu, overrides, timeout)
    return _CACHE[key]


def _run_cost(binary, model, gpus, gpu, overrides, timeout):
    cmd = [binary, "--job.config_file", preset(model)]
    cmd += [f"--{k}={v}" for k, v in overrides.items()]
    cmd += ["--world-size", str(gpus), "--emit=cost", "--gpu", gpu,
            "--cost-format=json"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"ran past {timeout} s"}
    if p.returncode != 0:
        return {"error": compiler_error(p)}
    return json.loads(p.stdout)


def fits(pred, gpu):
    peak = max(pred.get("peak_bytes") or [0]) / GIB
    return peak <= CAPACITY_GIB[gpu] - RESERVE_GIB


# Parameters (titan-compile --emit=summary) and the bytes each holds for
# the whole run: f32 weight, gradient and AdamW's two moments.
PARAMS = {"8b": 8.03e9, "70b": 70.55e9, "405b": 405.85e9}
STATE_BYTES_PER_PARAM = 16


def evaluate_fixed(binary, family, model, gpus, gpu, timeout):
    plan = fixed_plan(family, model, gpus)
    if plan is None:
        return {"error": "layout needs more GPUs"}
    name, candidates = plan
    # A bound before compiling: the sharded state alone must fit (every
    # layout here shards the state over all GPUs).
    state = PARAMS[model] * STATE_BYTES_PER_PARAM / gpus / GIB
    if state > CAPACITY_GIB[gpu] - RESERVE_GIB:
        return {"plan": name, "error": f"does not fit: the sharded weights, "
                f"gradients and AdamW state alone need {state:.0f} GiB"}
    smallest = None
    for c in candidates:
        pred = run_cost(binary, model, gpus, gpu, c, timeout)
        if "error" in pred:
            return {"plan": name, "error": pred["error"]}
        peak = max(pred.get("peak_bytes") or [0]) / GIB
        if fits(pred, gpu):
            return {"plan": name + f", local batch "
                    f"{c['training.local_batch_size']}", "overrides": c,
                    "prediction": pred}
        if smallest is None or peak < smallest[0]:
            smallest = (peak, c, pred)
    # None fits: keep the smallest one's prediction, marked, so the
    # throughput of the layout is still seen (the table says it does not
    # fit and by how much).
    peak, c, pred = smallest
    return {"plan": name + f", local batch {c['training.local_batch_size']}",
            "overrides": c, "prediction": pred, "over_memory": True,
            "error": f"does not fit: needs {peak:.1f} GiB (of "
            f"{CAPACITY_GIB[gpu] - RESERVE_GIB:.1f})"}


def describe_candidate(c):
    """A planner candidate's layout in one line (--plan-format json's
    fields)."""
    m = c.get("mesh", {})
    parts = []
    for axis, label in (("dp_replicate", "DDP"), ("dp_shard", "FSDP"),
                        ("cp", "CP"), ("tp", "TP"), ("pp", "PP")):
        if m.get(axis, 1) > 1:
            parts.append(f"{label} {m[axis]}")
    text = " x ".join(parts) or "1 GPU"
    if m.get("pp", 1) > 1:
        text += (f" {c.get('schedule', '')}, microbatch "
                 f"{c.get('microbatch_size', '?')}")
    text += f", {c.get('activation_checkpoint', '?')} AC"
    if c.get("float8"):
        text += ", Float8"
    if c.get("async_tp"):
        text += ", async TP"
    text += f", local batch {c.get('local_batch_size', '?')}"
    if c.get("accumulation_steps", 1) > 1:
        text += f" x {c['accumulation_steps']} accumulation"
    return text


def evaluate_planner(binary, model, gpus, gpu, timeout):
    cmd = [binary, "--job.config_file", preset(model),
           f"--training.seq_len={SEQ}",
           f"--training.global_batch_size={global_batch(model, gpus)}",
           "--plan", "auto", "--gpus", str(gpus), "--gpu", gpu,
           "--plan-format", "json"]
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"planner ran past {timeout} s"}
    seconds = time.monotonic() - start
    if p.returncode != 0:
        return {"error": compiler_error(p), "seconds": round(seconds, 1)}
    out = json.loads(p.stdout)
    cands = out.get("candidates") or out.get("plans") or []
    if not cands:
        return {"error": "the planner kept no plan", "seconds":
                round(seconds, 1), "counts": out.get("counts")}
    best = cands[0]
    pred = dict(best.get("prediction", best))
    if not isinstance(pred.get("peak_bytes"), list):
        pred["peak_bytes"] = [pred.get("peak_bytes") or 0]
    return {"plan": best.get("name") or describe_candidate(best),
            "overrides": best.get("overrides"), "prediction": pred,
            "counts": out.get("counts"), "seconds": round(seconds, 1)}


def best_family(cell):
    """The fastest fitted plan of one size (the planner's pick or a fixed
    layout that beat it)."""
    fitted = [f for f, e in cell.items()
              if "prediction" in e and not e.get("over_memory")]
    return max(fitted, key=lambda f: tps(cell[f]), default=None)


def tps(entry):
    return (entry or {}).get("prediction", {}).get(
        "tokens_per_second_per_device")


def efficiency(results, gpu, model, family):
    """tokens/s/GPU at each size over that at the smallest feasible one
    (family "best": the best plan of each size)."""
    base = None
    eff = {}
    for n in SIZES:
        cell = results.get(gpu, {}).get(model, {}).get(str(n), {})
        f = best_family(cell) if family == "best" else family
        t = tps(cell.get(f))
        if t is None:
            continue
        if base is None:
            base = (n, t)
        eff[n] = t / base[1]
    return eff, base


# What the answer depends on (bench/results/cost-model-validation.md, "What
# the misses point at").
CAVEATS = """\
What these numbers rest on:

- FSDP over many nodes (the decision tree's plan for <= 10B) is predicted
  latency-bound: a ring over 512 ranks takes 511 steps, and even with
  NCCL's latency model (only the nNodes - 1 steps that cross the network
  pay its 6 us; the other 448 pay the 2 us intra-node step) each of the
  step's ~900 FSDP collectives and the Float8 amax all-reduces costs over
  a millisecond of latency. NCCL's LL protocols and newer algorithms (PAT,
  NVLS) cut that latency; the model does not have them, so the collapse
  at 256-512 GPUs is an upper bound on the loss. HSDP (FSDP inside a node,
  replicas across) is not affected (its cross-node collective is one
  all-reduce per step).
- titan's async TP does not fuse Float8's scaled GEMMs with the TP
  collectives, so for 70B the bf16 plan with async TP (the decision
  tree's) is predicted faster than TorchTitan's Float8 + full AC plan.
- The 405B 3D plans are predicted over the device memory at every size:
  titan's pipeline ranks keep their stages' gathered parameters and
  unsharded gradients in f32 for the whole step (TorchTitan's FSDP2 keeps
  bf16 parameters). Their throughput is shown, marked "over memory"; the
  smallest size where the layout exists (64 GPUs) cannot hold the
  sharded state, so 405B's efficiency is relative to 128 GPUs.
- Efficiency is relative to the smallest size where a plan fits; for 70B
  (16 GPUs) and 405B (128) memory forces a small local batch there (70B
  on 16: local batch 1 with 16 accumulation steps), so larger sizes exceed
  100%; compare the tokens/s column from the first unconstrained size.
- A plan family missing from a table was not run for it (on h100-96gb
  the 70B fixed layouts, which compile slowly with async TP).
- The planner runs with its default work budget (`--plan-budget 4000`),
  so its picks are the same on any machine; "best" is the fastest fitting
  plan of any family.
- Efficiency from the first size where memory does not constrain the
  local batch: 8B 12,807 (8 GPUs) -> 12,041 (512): 94%; 70B 1,760 (32) ->
  1,705: 97%; 405B 219 (128) -> 229: 105% (h100, planner).
"""


def render(results, out, generated, families):
    # Only the families that ran.
    ran = {f for g in results.values() for m in g.values() for c in m.values()
           for f in c}
    families = [f for f in families if f in ran]
    lines = []
    w = lines.append
    w("# Predicted weak scaling: Llama 3.1 8B, 70B, 405B, 8 to 512 GPUs")
    w("")
    w(f"Generated {generated} on the build machine (no GPU: titan's cost "
      "model over the compiled per-rank programs) by")
    w("")
    w("```")
    w("python3 bench/cost/scaling.py --jobs 2            # plans and predicts")
    w("python3 bench/cost/scaling.py --from-json bench/results/"
      "cost-model-scaling.json   # re-renders")
    w("python3 scripts/cost-scaling-svg.py               # the picture")
    w("```")
    w("")
    w("Weak scaling: tokens per GPU fixed as in TorchTitan's published runs "
      "(seq 8192; global batch = 2 x GPUs sequences for 8B and 70B, GPUs / 2 "
      "for 405B). Plans: " + ", ".join(f"`{f}`" for f in families) +
      " (see `bench/cost/scaling.py`). Memory: the largest per-rank memory "
      f"plan; a plan fits when it is at most the device's memory less "
      f"{RESERVE_GIB:.0f} GiB (CUDA context, NCCL, library handles). "
      "Efficiency: tokens/s/GPU over the same plan family's at its smallest "
      "feasible size (405B: the first size where the layout exists and "
      "fits, not 8).")
    w("")
    for gpu in results:
        for model in MODELS:
            w(f"## {model.upper()} on {gpu}")
            w("")
            w("| GPUs | plan | layout | tok/s/GPU | MFU | peak GiB | "
              "efficiency | best |")
            w("|---:|---|---|---:|---:|---:|---:|---|")
            effs = {f: efficiency(results, gpu, model, f)[0]
                    for f in families}
            for n in SIZES:
                cell = results.get(gpu, {}).get(model, {}).get(str(n), {})
                top = best_family(cell)
                for f in families:
                    e = cell.get(f)
                    if e is None:
                        continue
                    if "prediction" not in e:
                        w(f"| {n} | {f} | {e.get('plan', '')} | — | — | — | "
                          f"— | {e.get('error', '')} |")
                        continue
                    p = e["prediction"]
                    peak = max(p.get("peak_bytes") or [0]) / GIB
                    eff = effs[f].get(n)
                    if e.get("over_memory"):
                        top_mark = "over memory"
                    else:
                        top_mark = "best" if f == top else ""
                    w(f"| {n} | {f} | {e['plan']} | "
                      f"{p['tokens_per_second_per_device']:,.0f} | "
                      f"{100 * p.get('mfu', 0):.1f}% | {peak:.1f} | "
                      f"{'' if eff is None else f'{100 * eff:.0f}%'} | "
                      f"{top_mark} |")
            w("")
    w("## The seed's \"89% efficiency at 512 GPUs\"")
    w("")
    for gpu in results:
        for model in MODELS:
            for f in ["best"] + families:
                eff, base = efficiency(results, gpu, model, f)
                if 512 not in eff or base is None:
                    continue
                verdict = "holds" if eff[512] >= SEED_CLAIM else "does not hold"
                cell = results[gpu][model]["512"]
                fam = best_family(cell) if f == "best" else f
                e = cell.get(fam, {})
                over = (" — but its memory plan " + e["error"]
                        if e.get("over_memory") else "")
                w(f"- {model.upper()} on {gpu}, `{f}`"
                  + (f" ({fam}: {e.get('plan', '')})" if f == "best" else "")
                  + f": {100 * eff[512]:.0f}% at 512 relative to {base[0]} "
                  f"GPUs: {verdict}{over}.")
    w("")
    w(CAVEATS)
    text = "\n".join(lines) + "\n"
    with open(out, "w") as fh:
        fh.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--titan-compile", default=os.path.join(
        ROOT, "build", "bin", "titan-compile"))
    ap.add_argument("--gpu", action="append",
                    help="hardware descriptions (default h100, h100-96gb)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--families", default="planner,torchtitan,hsdp,tree")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--from-json")
    ap.add_argument("--save-json", default=os.path.join(
        ROOT, "bench", "results", "cost-model-scaling.json"))
    ap.add_argument("--out", default=os.path.join(
        ROOT, "bench", "results", "cost-model-scaling.md"))
    ap.add_argument("--date")
    args = ap.parse_args()
    families = args.families.split(",")

    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)
    else:
        gpus_kinds = args.gpu or ["h100", "h100-96gb"]
        models = args.models.split(",")
        sizes = [int(s) for s in args.sizes.split(",")]
        results = {}
        if os.path.exists(args.save_json):
            with open(args.save_json) as f:
                results = json.load(f)
        jobs = []
        for gpu in gpus_kinds:
            for model in models:
                for n in sizes:
                    for fam in families:
                        jobs.append((gpu, model, n, fam))

        def work(job):
            gpu, model, n, fam = job
            start = time.monotonic()
            if fam == "planner":
                r = evaluate_planner(args.titan_compile, model, n, gpu,
                                     args.timeout)
            else:
                r = evaluate_fixed(args.titan_compile, fam, model, n, gpu,
                                   args.timeout)
            r["wall_seconds"] = round(time.monotonic() - start, 1)
            return job, r

        def save():
            with open(args.save_json, "w") as f:
                json.dump(results, f, indent=1, sort_keys=True)
                f.write("\n")

        # Saved after every result: a long run can be stopped and resumed
        # (--sizes/--models/--families select what to redo).
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(work, job) for job in jobs]
            for fut in concurrent.futures.as_completed(futures):
                (gpu, model, n, fam), r = fut.result()
                results.setdefault(gpu, {}).setdefault(model, {}).setdefault(
                    str(n), {})[fam] = r
                save()
                t = tps(r)
                print(f"{gpu} {model} {n} {fam}: "
                      f"{'%.0f tok/s/GPU' % t if t else r.get('error')} "
                      f"({r['wall_seconds']} s)", file=sys.stderr, flush=True)
    render(results, args.out, args.date or datetime.date.today().isoformat(),
           families)


if __name__ == "__main__":
    main()
