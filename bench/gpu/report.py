"""The GPU check's reports, standard library only (the GPU machine has no
package registry):

  report.py compare ACTUAL.jsonl EXPECTED.jsonl RTOL STEPS
      per-step loss and grad_norm of two titan runs within RTOL relative
      (exit 1 if not, or if they do not both have STEPS steps);
  report.py cudnn BUILT.txt
      the cuDNN version the bundle was built against (BUILT.txt: the
      headers' MAJOR.MINOR.PATCH, or "none") beside the one the dynamic
      loader picks here (cudnnGetVersion of libcudnn.so.9) and PyTorch's;
      exit 1 when the majors differ or the runtime's minor is older than
      the headers' (cudnn-frontend may call what the older one lacks);
  report.py titan-step METRICS.jsonl WARMUP [IMPL]
      a titan run's tokens/s and MFU at the min and median step time after
      WARMUP steps (the first is eager, the second captures the graphs), in
      torch_llama_step.py's fields;
  report.py step FILE...           the step table, ratios to titan;
  report.py kernels TITAN.jsonl[,...] TORCH.jsonl[,...]
      the kernel table: titan vs PyTorch at the same shapes (the median of
      each round's median where there are several interleaved rounds, and
      their spread), and each memory-bound kernel's share of the copy
      bandwidth measured in the same run;
  report.py overlap ON.jsonl OFF.jsonl STEPS
      a run with communication overlap on against one with it off
      (debug.no_comm_overlap): the same bits (loss and grad_norm) over
      STEPS steps, and each run's median step time after the first two
      (eager, then the graphs' capture); exit 1 if the bits differ;
  report.py collectives BENCH.json
      titan-comm-bench's --json rows as nccl-tests' table; exit 1 when an
      element was wrong or there are no rows;
  report.py arenas GPU.bin CPU.bin [exact]
      a generated-kernel test's step run on the GPU against the same step
      on the host CPU from one input (whole arenas): bit for bit, or how
      many bytes differ and where (256-byte blocks, merged into ranges);
      exit 1 when the sizes differ, or with `exact` when any byte does;
  report.py summary SCRATCH OUT
      summary.md and results.json in OUT from what run.sh left in SCRATCH
      (checks.jsonl, env.txt, logs/, the kernel and step results): every
      check so far, the numerics errors, the cuDNN versions and the tables
      that have their inputs; run.sh calls it after every check.

Every command that checks something prints a last line "detail: ...",
which run.sh puts in the check's row.
"""
import ctypes
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def lines(path):
    """The JSON objects of a file, one a line ([] when the check that writes
    it failed before writing)."""
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip().startswith("{")]
    except (OSError, json.JSONDecodeError):
        return []


def compare(actual, expected, rtol, steps):
    a, e = lines(actual), lines(expected)
    if not a or len(a) != len(e) or len(a) != int(steps):
        print(f"FAIL: {len(a)} steps vs {len(e)} expected (want {steps})")
        print(f"detail: {len(a)} steps of {steps}")
        return 1
    worst = {}
    for key in ("loss", "grad_norm", "lr"):
        worst[key] = max(abs(x[key] - y[key]) / max(abs(y[key]), 1e-30)
                         for x, y in zip(a, e))
    ok = all(v <= float(rtol) for v in worst.values())
    for key, v in worst.items():
        print(f"{key:9s} max relative error {v:.3e} "
              f"{'ok' if v <= float(rtol) else 'FAIL'} (tolerance {rtol})")
    print(json.dumps({"numerics": {**worst, "rtol": float(rtol),
                                   "steps": int(steps), "ok": ok}}))
    print("detail: " + " ".join(f"{k} {v:.2e}" for k, v in worst.items())
          + f" (tol {rtol})")
    return 0 if ok else 1


def loaded_path(fragment):
    """The file of the first library mapped into this process whose path
    holds `fragment`."""
    try:
        with open("/proc/self/maps") as f:
            return next((l.split()[-1] for l in f if fragment in l), None)
    except OSError:
        return None


def cudnn(built_path):
    built = open(built_path).read().strip()
    info = {"cudnn_built": built}
    try:
        lib = ctypes.CDLL("libcudnn.so.9")
        lib.cudnnGetVersion.restype = ctypes.c_size_t
        v = lib.cudnnGetVersion()  # cuDNN 9: major * 10000 + minor * 100 + patch
        runtime = (v // 10000, v // 100 % 100, v % 100)
        info["cudnn_runtime"] = "%d.%d.%d" % runtime
        info["cudnn_runtime_path"] = loaded_path("libcudnn.so")
    except (OSError, AttributeError) as e:
        runtime = None
        info["cudnn_runtime"] = f"not loadable: {e}"
    # PyTorch's own, in a fresh process (this one's libcudnn.so.9 would be
    # reused) under PyTorch's own library path, as its benchmarks run.
    env = dict(os.environ, LD_LIBRARY_PATH=os.environ.get("TITAN_ORIGINAL_LD_LIBRARY_PATH", ""))
    try:
        torch = subprocess.run(
            [sys.executable, "-c", "import torch; print(torch.backends.cudnn.version())"],
            env=env, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        torch = f"unknown ({e})"
    info["torch_cudnn"] = torch or "no torch"
    if built == "none":
        verdict, why = True, "built without cuDNN"
    elif runtime is None:
        verdict, why = False, "no libcudnn.so.9 the loader finds"
    else:
        b = tuple(int(x) for x in built.split("."))
        if runtime[0] != b[0]:
            verdict, why = False, "major differs"
        elif runtime[1] < b[1]:
            verdict, why = False, "runtime minor older than the headers"
        else:
            verdict, why = True, "compatible"
    info["ok"] = verdict
    print(f"cuDNN built against {built}; runtime {info['cudnn_runtime']} "
          f"({info.get('cudnn_runtime_path')}); torch.backends.cudnn.version() {info['torch_cudnn']}: {why}")
    print(json.dumps({"cudnn": info}))
    print(f"detail: built {built}, runtime {info['cudnn_runtime']}, torch {info['torch_cudnn']}: {why}")
    return 0 if verdict else 1


def titan_step(path, warmup, impl="titan --target=cuda"):
    m = [x for x in lines(path) if x.get("tokens_per_second")]
    if len(m) <= int(warmup):
        print(f"{path}: {len(m)} steps, not more than the {warmup} of warm-up")
        return 1
    first = m[0]
    timed = m[int(warmup):]
    tps = sorted(x["tokens_per_second"] for x in timed)
    mfu = sorted(x["mfu"] for x in timed if x.get("mfu") is not None)
    print(json.dumps({
        "impl": impl,
        "tokens_per_second_best": tps[-1],
        "tokens_per_second_median": tps[len(tps) // 2],
        "mfu_median": mfu[len(mfu) // 2] if mfu else None,
        "peak_memory_gib": round(first.get("arena_planned_bytes", 0) / 2**30, 2),
        "loss_first": m[0]["loss"], "loss_last": m[-1]["loss"]}))
    return 0


def step_rows(paths):
    rows = []
    for p in paths:
        rows += lines(p)
    return rows


def step_table(rows):
    base = next((r for r in rows if r.get("impl") == "titan --target=cuda"
                 and "error" not in r), None)
    out = [f"{'step (8B-shaped, seq 8192, bf16)':36s} {'tok/s med':>10s} "
           f"{'tok/s best':>10s} {'MFU':>7s} {'mem GiB':>8s} {'vs titan':>9s}"]
    for r in rows:
        if "error" in r:
            out.append(f"{r['impl'][:36]:36s} {r['error']}")
            continue
        ratio = (r["tokens_per_second_median"] / base["tokens_per_second_median"]
                 if base else float("nan"))
        mfu = r.get("mfu_median")
        out.append(f"{r['impl'][:36]:36s} {r['tokens_per_second_median']:10.0f} "
                   f"{r['tokens_per_second_best']:10.0f} "
                   f"{(f'{100 * mfu:6.1f}%') if mfu is not None else '      -':>7s} "
                   f"{r.get('peak_memory_gib', 0):8.1f} {ratio:9.3f}")
    return out


def merge_rounds(paths):
    """One row per kernel over interleaved rounds: the median of the rounds'
    medians, the best of their bests, and the rounds' spread (max - min over
    the median: ratios closer than that are noise)."""
    by_name = {}
    for p in paths:
        for r in lines(p):
            by_name.setdefault(r["name"], []).append(r)
    merged = []
    for name, rs in by_name.items():
        ok = [r for r in rs if "median" in r]
        if not ok:
            merged.append(rs[0])
            continue
        medians = [r["median"] for r in ok]
        row = dict(ok[0], median=statistics.median(medians),
                   best=max(r["best"] for r in ok), rounds=len(ok))
        row["spread"] = (max(medians) - min(medians)) / row["median"] if row["median"] else 0
        merged.append(row)
    return merged


# titan's attention rows and their PyTorch counterparts: the forward against
# SDPA's default; titan's default (non-deterministic) backward against
# SDPA's default one, titan's debug.deterministic backward against SDPA's
# under torch.use_deterministic_algorithms.
TORCH_ATTENTION = {
    "cuDNN flash forward": [("", "SDPA default forward")],
    "cuDNN flash backward": [("", "SDPA default backward")],
    "cuDNN flash backward deterministic": [("", "SDPA deterministic backward")],
}


def kernel_rows(titan, torch):
    """The kernel table's rows as dicts (results.json) from merged rows."""
    copy = next((r for r in titan if r.get("kind") == "copy"), None)
    by_name = {r["name"]: r for r in torch}
    rows = []
    for r in titan:
        if "median" not in r:
            continue
        for suffix, other_name in TORCH_ATTENTION.get(r["name"], [("", r["name"])]):
            other = by_name.get(other_name)
            other_median = other.get("median") if other else None
            rows.append({
                "name": r["name"] + suffix, "unit": r["unit"], "titan": r["median"],
                "torch": other_median, "torch_name": other_name if other else None,
                "torch_error": other.get("error") if other else None,
                "ratio": r["median"] / other_median if other_median else None,
                "of_copy": (r["median"] / copy["median"]
                            if copy and r["unit"] == "GB/s" and r is not copy else None),
                "spread": r.get("spread")})
    return rows


def kernel_table(rows):
    out = [f"{'kernel (8B shapes, bf16)':34s} {'titan':>9s} {'torch':>9s} "
           f"{'ratio':>6s} {'of copy':>8s} unit (median) spread"]
    for r in rows:
        torch = r["torch"] if r["torch"] is not None else float("nan")
        ratio = f"{r['ratio']:6.2f}" if r["ratio"] else "     -"
        share = f"{100 * r['of_copy']:7.1f}%" if r["of_copy"] else "       -"
        spread = f" {100 * r['spread']:.1f}%" if r.get("spread") is not None else ""
        error = f" (torch: {r['torch_error']})" if r["torch_error"] else ""
        out.append(f"{r['name'][:34]:34s} {r['titan']:9.1f} {torch:9.1f} {ratio} "
                   f"{share} {r['unit']}{spread}{error}")
    return out


def kernels(titan_paths, torch_paths):
    rows = kernel_rows(merge_rounds(titan_paths.split(",")),
                       merge_rounds(torch_paths.split(",")))
    print("\n".join(kernel_table(rows)))
    return 0


def overlap(on_path, off_path, steps):
    on, off = lines(on_path), lines(off_path)
    if not on or len(on) != len(off) or len(on) != int(steps):
        print(f"FAIL: {len(on)} steps on, {len(off)} off (want {steps})")
        print(f"detail: {len(on)} / {len(off)} steps of {steps}")
        return 1
    differ = [a["step"] for a, b in zip(on, off)
              if (a["loss"], a.get("grad_norm")) != (b["loss"], b.get("grad_norm"))]

    def median_ms(m):
        times = sorted(x["step_time_s"] for x in m[2:] if "step_time_s" in x)
        return 1e3 * times[len(times) // 2] if times else None

    info = {"steps": int(steps), "same_bits": not differ,
            "first_differing_step": differ[0] if differ else None,
            "step_ms_on": median_ms(on), "step_ms_off": median_ms(off)}
    print(json.dumps({"overlap": info}))
    fmt = lambda v: f"{v:.2f} ms" if v is not None else "-"
    print(f"detail: {'same bits' if not differ else f'bits differ from step {differ[0]}'}; "
          f"median step {fmt(info['step_ms_on'])} on, {fmt(info['step_ms_off'])} off")
    return 0 if not differ else 1


def comm_table(path):
    """titan-comm-bench's --json rows as nccl-tests' columns."""
    try:
        with open(path) as f:
            bench = json.load(f)
    except (OSError, json.JSONDecodeError):
        return None, []
    out = [f"{'collective':>14s} {'size (B)':>12s} {'count':>12s} {'type':>8s} "
           f"{'redop':>6s} {'time (us)':>10s} {'algbw':>8s} {'busbw':>8s} {'#wrong':>6s}"]
    for r in bench.get("results", []):
        out.append(f"{r['collective']:>14s} {r['size']:12d} {r['count']:12d} {r['type']:>8s} "
                   f"{r['redop']:>6s} {r['time_us']:10.2f} {r['algbw_gbps']:8.2f} "
                   f"{r['busbw_gbps']:8.2f} {r['wrong']:6d}")
    return bench, out


def collectives(path):
    bench, table = comm_table(path)
    rows = (bench or {}).get("results", [])
    if not rows:
        print(f"detail: no rows in {path}")
        return 1
    print("\n".join(table))
    wrong = sum(r["wrong"] for r in rows)
    big = max(rows, key=lambda r: (r["collective"] == "all_reduce", r["size"]))
    print(f"detail: {len(rows)} rows, {wrong} wrong elements; {big['collective']} "
          f"{big['size'] >> 20} MiB: {big['time_us']:.0f} us, algbw {big['algbw_gbps']:.1f} GB/s")
    return 1 if wrong else 0


def log_objects(scratch, name, key):
    """The `key` objects a check printed into its log."""
    return [o[key] for o in lines(os.path.join(scratch, "logs", name + ".log")) if key in o]


def summary(scratch, outdir):
    checks = lines(os.path.join(scratch, "checks.jsonl"))
    try:
        env = open(os.path.join(scratch, "env.txt")).read().strip().splitlines()
    except OSError:
        env = []
    numerics = [dict(check=c["name"], **n) for c in checks
                for n in log_objects(scratch, c["name"], "numerics")]
    cudnn_info = next((i for c in checks for i in log_objects(scratch, c["name"], "cudnn")), None)
    kernel_result = kernel_rows(
        merge_rounds(sorted(glob.glob(os.path.join(scratch, "kernels-titan-*.jsonl")))),
        merge_rounds(sorted(glob.glob(os.path.join(scratch, "kernels-torch-*.jsonl")))))
    steps = step_rows(sorted(glob.glob(os.path.join(scratch, "step-titan-*.json")))
                      + [os.path.join(scratch, f"step-{m}.json") for m in ("eager", "compile")])
    overlap_info = next(iter(log_objects(scratch, "overlap-vs-no-overlap", "overlap")), None)
    comm, comm_lines = comm_table(os.path.join(scratch, "comm-nccl.json"))
    elapsed = sum(c.get("seconds", 0) for c in checks)
    md = ["# titan GPU check", "", f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"{len(checks)} checks so far, {elapsed:.0f} s of checks", ""]
    md += [f"- {l}" for l in env]
    if cudnn_info:
        md.append(f"- cuDNN: built against {cudnn_info['cudnn_built']}, runtime "
                  f"{cudnn_info['cudnn_runtime']} ({cudnn_info.get('cudnn_runtime_path')}), "
                  f"torch {cudnn_info['torch_cudnn']}")
    md += ["", "## Checks", "", "| check | result | seconds | limit | detail |", "|---|---|---|---|---|"]
    md += [f"| {c['name']} | {c['verdict']} | {c.get('seconds', 0):.1f} | {c.get('limit', '')} "
           f"| {c.get('detail', '')} |" for c in checks]
    if numerics:
        md += ["", "## Numerics (max relative error against the reference run)", "",
               "| check | loss | grad_norm | lr | tolerance | ok |", "|---|---|---|---|---|---|"]
        md += [f"| {n['check']} | {n['loss']:.3e} | {n['grad_norm']:.3e} | {n['lr']:.3e} "
               f"| {n['rtol']:g} | {'yes' if n['ok'] else 'NO'} |" for n in numerics]
    if kernel_result:
        md += ["", "## Kernels", "", "```"] + kernel_table(kernel_result) + ["```"]
    if steps:
        md += ["", "## Step", "", "```"] + step_table(steps) + ["```"]
    if comm_lines:
        md += ["", f"## Collectives (titan-comm-bench, {str(comm.get('backend')).upper()}, "
               f"{comm.get('ranks')} rank(s), "
               f"{comm.get('iters')} iterations; algbw = size / time, GB/s)", "", "```"] \
            + comm_lines + ["```"]
    if overlap_info:
        o = overlap_info
        ms = lambda v: f"{v:.2f}" if v is not None else "-"
        md += ["", "## Communication overlap (bf16 parity training, one GPU)", "",
               "| overlap | median step (ms) |", "|---|---|",
               f"| on | {ms(o['step_ms_on'])} |", f"| off (debug.no_comm_overlap) | {ms(o['step_ms_off'])} |",
               "", f"Same bits over {o['steps']} steps: {'yes' if o['same_bits'] else 'NO'}."]
    results = {"environment": env, "checks": checks, "numerics": numerics,
               "cudnn": cudnn_info, "kernels": kernel_result, "step": steps,
               "collectives": comm, "overlap": overlap_info}
    # Written beside the scratch files, then moved: a run cut off mid-write
    # leaves the previous whole file, never a partial one or a stray name.
    for name, text in (("summary.md", "\n".join(md) + "\n"),
                       ("results.json", json.dumps(results, indent=1) + "\n")):
        staged = os.path.join(scratch, name)
        with open(staged, "w") as f:
            f.write(text)
        shutil.move(staged, os.path.join(outdir, name))
    return 0


def arenas(gpu_path, cpu_path, exact=""):
    with open(gpu_path, "rb") as f:
        gpu = f.read()
    with open(cpu_path, "rb") as f:
        cpu = f.read()
    if len(gpu) != len(cpu):
        print(f"detail: arenas of {len(gpu)} (GPU) and {len(cpu)} (CPU) bytes")
        return 1
    block = 256
    ranges, differing = [], 0
    for start in range(0, len(gpu), block):
        a, b = gpu[start:start + block], cpu[start:start + block]
        if a == b:
            continue
        differing += sum(x != y for x, y in zip(a, b))
        if ranges and ranges[-1][1] == start:
            ranges[-1][1] = start + block
        else:
            ranges.append([start, start + block])
    if not differing:
        print("detail: the GPU's arena is the CPU's bit for bit")
        return 0
    where = ", ".join(f"{lo:#x}-{hi:#x}" for lo, hi in ranges[:8])
    more = f" and {len(ranges) - 8} more" if len(ranges) > 8 else ""
    print(f"detail: {differing} of {len(gpu)} bytes differ from the CPU's, in "
          f"{where}{more}")
    return 1 if exact == "exact" else 0


def main(argv):
    cmd = argv[1]
    if cmd == "arenas":
        return arenas(*argv[2:5])
    if cmd == "compare":
        return compare(*argv[2:6])
    if cmd == "cudnn":
        return cudnn(argv[2])
    if cmd == "titan-step":
        return titan_step(*argv[2:5])
    if cmd == "step":
        print("\n".join(step_table(step_rows(argv[2:]))))
        return 0
    if cmd == "kernels":
        return kernels(argv[2], argv[3])
    if cmd == "collectives":
        return collectives(argv[2])
    if cmd == "overlap":
        return overlap(*argv[2:5])
    if cmd == "summary":
        return summary(argv[2], argv[3])
    sys.exit("unknown report " + cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
