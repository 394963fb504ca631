"""The GPU check's reports, standard library only (the GPU machine has no
package registry):

  report.py compare ACTUAL.jsonl EXPECTED.jsonl RTOL STEPS
      per-step loss and grad_norm of two titan runs within RTOL relative
      (exit 1 if not, or if they do not both have STEPS steps);
  report.py titan-step METRICS.jsonl WARMUP [IMPL]
      a titan run's tokens/s and MFU at the min and median step time after
      WARMUP steps (the first is eager, the second captures the graphs), in
      torch_llama_step.py's fields;
  report.py step FILE...           the step table, ratios to titan;
  report.py kernels TITAN.jsonl TORCH.jsonl
      the kernel table: titan vs PyTorch at the same shapes, and each
      memory-bound kernel's share of the measured copy bandwidth.
"""
import json
import sys


def lines(path):
    """The JSON objects of a file, one a line ([] when the check that writes
    it failed before writing)."""
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip().startswith("{")]
    except (OSError, json.JSONDecodeError):
        print(f"(no results in {path})")
        return []


def compare(actual, expected, rtol, steps):
    a, e = lines(actual), lines(expected)
    if not a or len(a) != len(e) or len(a) != int(steps):
        print(f"FAIL: {len(a)} steps vs {len(e)} expected (want {steps})")
        return 1
    worst = {}
    for key in ("loss", "grad_norm", "lr"):
        worst[key] = max(abs(x[key] - y[key]) / max(abs(y[key]), 1e-30)
                         for x, y in zip(a, e))
    ok = all(v <= float(rtol) for v in worst.values())
    for key, v in worst.items():
        print(f"{key:9s} max relative error {v:.3e} "
              f"{'ok' if v <= float(rtol) else 'FAIL'} (tolerance {rtol})")
    return 0 if ok else 1


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


def step_table(paths):
    rows = []
    for p in paths:
        rows += lines(p)
    base = next((r for r in rows if r["impl"] == "titan --target=cuda"), None)
    print(f"{'step (8B-shaped, seq 8192, bf16)':36s} {'tok/s med':>10s} "
          f"{'tok/s best':>10s} {'MFU':>7s} {'mem GiB':>8s} {'vs titan':>9s}")
    for r in rows:
        if "error" in r:
            print(f"{r['impl'][:36]:36s} {r['error']}")
            continue
        ratio = (r["tokens_per_second_median"] / base["tokens_per_second_median"]
                 if base else float("nan"))
        mfu = r.get("mfu_median")
        print(f"{r['impl'][:36]:36s} {r['tokens_per_second_median']:10.0f} "
              f"{r['tokens_per_second_best']:10.0f} "
              f"{(f'{100 * mfu:6.1f}%') if mfu is not None else '      -':>7s} "
              f"{r.get('peak_memory_gib', 0):8.1f} {ratio:9.3f}")
    return 0


def kernels(titan_path, torch_path):
    titan, torch = lines(titan_path), lines(torch_path)
    copy = next((r for r in titan if r["kind"] == "copy"), None)
    by_name = {r["name"]: r for r in torch}
    print(f"{'kernel (8B shapes, bf16)':34s} {'titan':>9s} {'torch':>9s} "
          f"{'ratio':>6s} {'of copy':>8s} unit (median)")
    torch_attention = {"cuDNN flash forward": "SDPA flash forward",
                       "cuDNN flash backward": "SDPA flash backward"}
    for r in titan:
        other = by_name.get(torch_attention.get(r["name"], r["name"]))
        ratio = r["median"] / other["median"] if other else None
        share = (r["median"] / copy["median"]
                 if copy and r["unit"] == "GB/s" and r is not copy else None)
        print(f"{r['name'][:34]:34s} {r['median']:9.1f} "
              f"{(other['median'] if other else float('nan')):9.1f} "
              f"{(f'{ratio:6.2f}') if ratio else '     -'} "
              f"{(f'{100 * share:7.1f}%') if share else '       -'} {r['unit']}")
    return 0


def main(argv):
    cmd = argv[1]
    if cmd == "compare":
        return compare(*argv[2:6])
    if cmd == "titan-step":
        return titan_step(*argv[2:5])
    if cmd == "step":
        return step_table(argv[2:])
    if cmd == "kernels":
        return kernels(argv[2], argv[3])
    sys.exit("unknown report " + cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
