#!/usr/bin/env python3
"""Calibrates the cost model's CPU description on this machine.

Writes a hardware TOML (`[hardware] base = "cpu"` plus the fitted keys;
titan-compile --hardware FILE reads it, include/titan/Cost/Hardware.h) from
two measurements:

Compute: the debug model's one-rank program (batch / R sequences, R =
--ranks, 4: the checked jobs' ranks) trains as R copies at once, each with
the OpenMP threads the runtime gives one of R ranks here (cores / R, at
least 1), with profiler traces on; `titan-compile --emit=cost
--cost-format=json` of that program gives its `units`: per roofline class
(gemm: linear and its gradients, the collective matmuls, scaled_matmul;
attention forward; attention backward; memory: the rest) the calls, FLOPs
and bytes of one forward_backward. Per class the measured time is the sum
of its kernels' spans in the traced forward_backward (mean over the traced
steps and the copies); the fit is one rate per class with no intercept,
the node's rate being R copies':
  peak_flops_f32                = R x gemm FLOPs / gemm seconds
                                  (gemm_efficiency is set to 1: the "peak"
                                  is the rate the GEMMs reach here;
                                  gemm_half_flops 0)
  attention_*_efficiency        = R x attention FLOPs / seconds / that peak
  memory_bytes_per_second       = R x memory bytes / seconds
                                  (memory_efficiency 1)
  kernel_overhead_seconds       = (forward_backward span - its kernels'
                                  spans) / calls: the host time between
                                  kernels, per call, as a copy saw it
so a copy's forward_backward is predicted exactly when R ranks share the
node (ranks_share_compute: each at 1/R of the node); each kernel's own
fixed cost is inside its class's rate. The same program on one rank with
every core is measured too (--json's copies_1 and sharing_efficiency: the
node's rate with R ranks over its rate with one), to check that sharing.

Communication: titan-comm-bench --json on 2 and 4 ranks (Open MPI, shared
memory, the progress thread on as in training). Per row the ring model
lib/Cost/CollectiveCost.cpp uses, t = steps x latency + bus bytes / bus
bandwidth (all_gather and reduce_scatter: n - 1 steps and (n-1)/n of the
size; all_reduce: 2(n - 1) steps and 2(n-1)/n; sendrecv: 1 step and the
size), fitted by least squares on relative error over every row of both
rank counts: intra_node_latency_seconds and intra_node_bus_bytes_per_second.

--json also records the cores other processes kept busy during the runs
and the cores the copies used (a loaded machine slows every rate).

OMP_NUM_THREADS is dropped from the runs' environment (lit sets it to 1 for
the suite): the calibration measures what an ordinary launch gets.

  /usr/bin/python3 scripts/calibrate-cpu.py [--build build] --out FILE.toml
        [--json DETAILS.json] [--seq-len 256] [--batch 8] [--steps 6]
        [--ranks 4] [--comm-max-bytes 4M] [--no-comm] [--quick]
"""

import argparse
import glob
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEBUG_MODEL = os.path.join(ROOT, "models", "llama3", "debugmodel.toml")
VOCAB = 2048  # the debug model's vocabulary

# Kernel spans' names are <kernel>_<dtype>; the class of each kernel as
# titan::cost::kernelWork puts it (KernelCost.h).
GEMM_KERNELS = ("linear", "linear_grad_input", "linear_grad_weight",
                "all_gather_linear", "linear_reduce_scatter", "scaled_matmul")
ATTENTION_FORWARD = ("attention", "context_attention")
ATTENTION_BACKWARD = ("attention_grad", "context_attention_grad")
DTYPES = ("f32", "bf16", "f64", "f16", "f8E4M3FN", "f8E5M2", "i32", "i64")
UNITS = ("gemm", "attention_forward", "attention_backward", "memory")


def fail(message):
    sys.exit(f"calibrate-cpu: error: {message}")


def kernel_of_span(name):
    """`linear_grad_input_f32` -> `linear_grad_input`."""
    for dtype in DTYPES:
        if name.endswith("_" + dtype):
            return name[: -len(dtype) - 1]
    return name


def unit_of_kernel(kernel):
    if kernel in GEMM_KERNELS:
        return "gemm"
    if kernel in ATTENTION_FORWARD:
        return "attention_forward"
    if kernel in ATTENTION_BACKWARD:
        return "attention_backward"
    return "memory"


def run_env():
    """The runs' environment: Open MPI as root, the runtime's own thread
    count (no OMP_NUM_THREADS from lit)."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.pop(var, None)
    return env


def run(cmd, env=None, quiet=False):
    if not quiet:
        print("+ " + " ".join(cmd), file=sys.stderr)
    proc = subprocess.run(cmd, env=env or run_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        fail(f"'{' '.join(cmd)}' exited {proc.returncode}:\n"
             + proc.stderr[-4000:])
    return proc.stdout


def tools(build):
    compiler = os.path.join(build, "bin", "titan-compile")
    bench = os.path.join(build, "bench", "titan-comm-bench")
    if not os.path.exists(compiler):
        fail(f"{compiler} does not exist; build titan first "
             "(bash scripts/build.sh)")
    return compiler, bench


def write_job(folder, seq_len, batch, steps, local_batch=None):
    """The job config and tokens every run of a size shares; returns the
    (config, tokens) paths."""
    config = os.path.join(folder, "job.toml")
    with open(config, "w") as f:
        f.write(f"""[model]
flavor = "{DEBUG_MODEL}"
[training]
global_batch_size = {batch}
local_batch_size = {local_batch or batch}
seq_len = {seq_len}
steps = {steps}
max_norm = 1.0
[optimizer]
lr = 8e-4
[lr_scheduler]
warmup_steps = 2
[checkpoint]
enable = false
""")
    tokens = os.path.join(folder, "tokens.bin")
    import array
    import random
    r = random.Random(2)
    count = (seq_len + 1) * batch * (steps + 1)
    with open(tokens, "wb") as f:
        array.array("I", [r.randrange(VOCAB) for _ in range(count)]).tofile(f)
    return config, tokens


def profiling_flags(profile_freq):
    # One traced step per cycle, no warm-up: the other steps stay untraced
    # and time the step.
    return ["--profiling.enable_profiling", "true",
            "--profiling.profile_freq", str(profile_freq),
            "--profiling.profiler_warmup", "0",
            "--profiling.profiler_active", "1"]


def predict(compiler, config, flags, hardware_flags):
    """titan-compile --emit=cost --cost-format=json of the job."""
    out = run([compiler, "--job.config_file", config, *flags, "--emit=cost",
               "--cost-format=json", *hardware_flags])
    try:
        return json.loads(out)
    except json.JSONDecodeError as e:
        fail(f"titan-compile --emit=cost --cost-format=json printed no JSON "
             f"object ({e}): {out[:400]}")


class LoadMeter:
    """The cores other processes kept busy while a run went on: the
    machine's busy time (/proc/stat) less this script's children's CPU
    time, over the wall time. A busy machine slows a run; the tables
    print this so a miss can be told from the model's error."""

    def __init__(self):
        self.start = self._sample()

    @staticmethod
    def _sample():
        import resource
        import time
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
            busy = (sum(fields) - fields[3] - fields[4]) / os.sysconf(
                "SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            busy = None
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.monotonic(), busy, r.ru_utime + r.ru_stime

    def other_cores(self):
        wall0, busy0, ours0 = self.start
        wall1, busy1, ours1 = self._sample()
        if busy0 is None or busy1 is None or wall1 <= wall0:
            return float("nan")
        return max(0.0, ((busy1 - busy0) - (ours1 - ours0)) / (wall1 - wall0))

    def our_cores(self):
        """The cores this script's children used, on average."""
        wall0, _, ours0 = self.start
        wall1, _, ours1 = self._sample()
        return (ours1 - ours0) / (wall1 - wall0) if wall1 > wall0 else 0.0


def launch(exe, ranks, tokens, out, extra=()):
    cmd = [exe, "--training.dataset_path", tokens, "--job.dump_folder", out,
           *extra]
    if ranks > 1:
        cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), *cmd]
    run(cmd)
    metrics = []
    with open(os.path.join(out, "metrics.jsonl")) as f:
        for line in f:
            if line.strip():
                m = json.loads(line)
                if "step_time_s" in m:
                    metrics.append(m)
    return metrics


def untraced_step_seconds(metrics, profile_freq, warmup_steps):
    """Step times after `warmup_steps`, without the traced steps."""
    times = [m["step_time_s"] for m in metrics
             if m["step"] > warmup_steps and m["step"] % profile_freq != 0]
    if not times:
        fail("no untraced step after the warm-up to time; run more steps")
    return times


def load_events(path):
    with open(path) as f:
        events = json.load(f)
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    return [e for e in events if e.get("ph") == "X"]


def trace_files(out, rank, after_step):
    """rank<r>_trace.json of each traced step after `after_step`."""
    files = []
    for d in glob.glob(os.path.join(out, "profile_traces", "iteration_*")):
        step = int(d.rsplit("_", 1)[1])
        path = os.path.join(d, f"rank{rank}_trace.json")
        if step > after_step and os.path.exists(path):
            files.append((step, path))
    return [p for _, p in sorted(files)]


def within(e, span):
    return e["ts"] >= span["ts"] and e["ts"] + e["dur"] <= span["ts"] + span["dur"] + 1e-3


def trace_summary(path):
    """One traced step of one rank: per class the kernel seconds and calls
    inside forward_backward spans (all microbatches), the forward_backward
    spans' seconds, the step's seconds, its kernels' seconds and the
    compute thread's waits (exposed communication)."""
    events = load_events(path)
    fbs = [e for e in events if e.get("cat") == "step"
           and e["name"].startswith("forward_backward")]
    steps = [e for e in events if e.get("cat") == "step"
             and re.fullmatch(r"step \d+", e["name"])]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    units = {u: {"calls": 0, "seconds": 0.0} for u in UNITS}
    for k in kernels:
        if any(within(k, fb) for fb in fbs):
            u = units[unit_of_kernel(kernel_of_span(k["name"]))]
            u["calls"] += 1
            u["seconds"] += k["dur"] * 1e-6
    waits = sum(e["dur"] for e in events
                if e.get("cat") == "wait" and e.get("tid") == 0) * 1e-6
    return {
        "units": units,
        "forward_backward_seconds": sum(e["dur"] for e in fbs) * 1e-6,
        "microbatches": len(fbs),
        "step_seconds": sum(e["dur"] for e in steps) * 1e-6,
        "kernel_seconds": sum(e["dur"] for e in kernels) * 1e-6,
        "exposed_comm_seconds": waits,
    }


def mean_summary(summaries):
    """The per-field mean of several trace_summary results."""
    n = len(summaries)
    out = {"units": {u: {"calls": summaries[0]["units"][u]["calls"],
                         "seconds": sum(s["units"][u]["seconds"]
                                        for s in summaries) / n}
                     for u in UNITS}}
    for key in ("forward_backward_seconds", "step_seconds", "kernel_seconds",
                "exposed_comm_seconds"):
        out[key] = sum(s[key] for s in summaries) / n
    out["microbatches"] = summaries[0]["microbatches"]
    return out


def launch_copies(exe, copies, tokens, folder, threads):
    """Runs `copies` one-rank trainings of `exe` at once (each with
    `threads` OpenMP threads: what the runtime gives each of that many
    ranks on this machine); returns each copy's dump folder."""
    env = run_env()
    env["OMP_NUM_THREADS"] = str(threads)
    procs, outs = [], []
    for c in range(copies):
        out = os.path.join(folder, f"copy{c}")
        cmd = [exe, "--training.dataset_path", tokens, "--job.dump_folder", out]
        print("+ " + " ".join(cmd), file=sys.stderr)
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))
        outs.append(out)
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            fail(f"'{exe}' exited {proc.returncode}:\n{err[-4000:]}")
    return outs


def fit_compute(units, measured, copies):
    """The compute keys from `units` (the cost model's work of one
    forward_backward) and the measured class times of one copy, when
    `copies` ran at once (the node's rate is `copies` times a copy's)."""
    seconds = {u: measured["units"][u]["seconds"] / copies for u in UNITS}
    peak = units["gemm"]["flops"] / seconds["gemm"]
    keys = {"peak_flops_f32": peak, "gemm_efficiency": 1.0,
            "gemm_half_flops": 0.0}
    for u, key in (("attention_forward", "attention_forward_efficiency"),
                   ("attention_backward", "attention_backward_efficiency")):
        if units[u]["flops"] > 0:
            keys[key] = min(1.0, units[u]["flops"] / seconds[u] / peak)
    keys["memory_bytes_per_second"] = units["memory"]["bytes"] / seconds["memory"]
    keys["memory_efficiency"] = 1.0
    # The host time between kernels, per call, as a copy saw it (the cost
    # model does not divide the overhead among sharing ranks).
    calls = sum(units[u]["calls"] for u in UNITS)
    inside = sum(measured["units"][u]["seconds"] for u in UNITS)
    keys["kernel_overhead_seconds"] = max(
        0.0, (measured["forward_backward_seconds"] - inside) / calls)
    return keys


def measure_compute(compiler, folder, seq_len, batch, steps, copies):
    """One-rank trainings of batch / copies sequences, `copies` at once;
    returns (the cost model's units of one forward_backward, the measured
    summary averaged over the copies, their untraced step seconds)."""
    profile_freq = 2
    os.makedirs(folder, exist_ok=True)
    local = max(1, batch // copies)
    config, tokens = write_job(folder, seq_len, local, steps)
    exe = os.path.join(folder, "single")
    run([compiler, "--job.config_file", config,
         *profiling_flags(profile_freq), "-o", exe])
    units = predict(compiler, config, [], ["--gpu", "cpu"]).get("units")
    if not isinstance(units, dict) or not all(u in units for u in UNITS):
        fail("titan-compile --emit=cost's JSON has no `units` with "
             + ", ".join(UNITS))
    threads = max(1, (os.cpu_count() or 1) // copies)
    summaries, step_times = [], []
    meter = LoadMeter()
    outs = launch_copies(exe, copies, tokens, folder, threads)
    other, ours = meter.other_cores(), meter.our_cores()
    for out in outs:
        # Step 1 warms caches and pages in the arena; the traced steps
        # after it.
        files = trace_files(out, 0, 1)
        if not files:
            fail(f"{out} holds no traced step after the first")
        summaries.append(mean_summary([trace_summary(f) for f in files]))
        with open(os.path.join(out, "metrics.jsonl")) as f:
            metrics = [json.loads(l) for l in f if l.strip()]
        step_times += untraced_step_seconds(
            [m for m in metrics if "step_time_s" in m], profile_freq, 1)
    measured = mean_summary(summaries)
    if measured["microbatches"] != 1:
        fail(f"the calibration job ran {measured['microbatches']} "
             "forward_backward per step; expected 1")
    for u in UNITS:
        want, got = units[u]["calls"], measured["units"][u]["calls"]
        if want != got:
            print(f"calibrate-cpu: warning: {u}: the trace has {got} kernel "
                  f"calls per forward_backward, the cost model {want}",
                  file=sys.stderr)
        if want and measured["units"][u]["seconds"] <= 0:
            fail(f"{u}: the trace recorded no time for its kernels")
    return units, measured, step_times, (other, ours)


def calibrate_compute(compiler, tmp, seq_len, batch, steps, ranks):
    """Fits the compute keys from `ranks` one-rank copies at once (batch /
    ranks each); also measures one rank alone on every core to say how
    well ranks share the cores. Returns (keys, details)."""
    details = {"job": {"seq_len": seq_len, "batch": batch, "steps": steps,
                       "ranks": ranks}}
    fits = {}
    for copies in sorted({1, ranks}):
        units, measured, step_times, other = measure_compute(
            compiler, os.path.join(tmp, f"compute-{copies}"), seq_len, batch,
            steps, copies)
        fits[copies] = fit_compute(units, measured, copies)
        details[f"copies_{copies}"] = {
            "units": units, "measured_forward_backward": measured,
            "step_seconds_untraced": step_times, "fit": fits[copies],
            "other_processes_cores": other[0], "our_cores": other[1]}
    # Per class: the node's rate with `ranks` ranks sharing it over its
    # rate with one rank (1: the 1/R sharing holds exactly).
    one, shared = fits[1], fits[ranks]
    details["sharing_efficiency"] = {
        "gemm": shared["peak_flops_f32"] / one["peak_flops_f32"],
        "memory": shared["memory_bytes_per_second"]
        / one["memory_bytes_per_second"],
    }
    return shared, details


def measure_job(exe, ranks, tokens, out, profile_freq, warmup):
    """Trains `exe` on `ranks` ranks: (the median untraced step seconds
    after `warmup` steps, and per rank, mean over ranks and traced steps,
    the kernels' seconds and the compute thread's waits; the cores other
    processes kept busy meanwhile)."""
    meter = LoadMeter()
    metrics = launch(exe, ranks, tokens, out)
    other = meter.other_cores()
    step = statistics.median(
        untraced_step_seconds(metrics, profile_freq, warmup))
    summaries = []
    for rank in range(ranks):
        files = trace_files(out, rank, warmup)
        if not files:
            fail(f"{out}: rank {rank} traced no step after step {warmup}")
        summaries.append(mean_summary([trace_summary(f) for f in files]))
    kernels = statistics.mean(s["kernel_seconds"] for s in summaries)
    exposed = statistics.mean(s["exposed_comm_seconds"] for s in summaries)
    return step, kernels, exposed, other


SIZE = re.compile(r"^(\d+)([KMG]?)$")


def parse_size(text):
    m = SIZE.match(text)
    if not m:
        fail(f"'{text}' is not a size in bytes (an integer with K, M or G)")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def ring_terms(collective, ranks, size):
    """(latency steps, bus bytes) of one row under the ring model."""
    n = ranks
    if collective in ("all_gather", "reduce_scatter"):
        return n - 1, size * (n - 1) / n
    if collective == "all_reduce":
        return 2 * (n - 1), size * 2 * (n - 1) / n
    return 1, size  # sendrecv


def calibrate_comm(bench, tmp, max_bytes, quick):
    """Runs titan-comm-bench on 2 and 4 ranks and fits the ring model's
    latency and bus bandwidth; returns (keys, details)."""
    if not os.path.exists(bench):
        fail(f"{bench} does not exist; build it (ninja -C build "
             "titan-comm-bench)")
    if not shutil.which("mpirun"):
        fail("mpirun is not on PATH: the communication calibration runs "
             "titan-comm-bench under Open MPI (--no-comm skips it)")
    rows = []
    for ranks in (2, 4):
        out = os.path.join(tmp, f"comm-np{ranks}.json")
        iters = ["-n", "5", "-w", "2"] if quick else ["-n", "20", "-w", "5"]
        run(["mpirun", "--oversubscribe", "-np", str(ranks), bench,
             "-b", "1K", "-e", str(max_bytes), "-f", "4", *iters,
             "--json", out])
        with open(out) as f:
            data = json.load(f)
        for r in data.get("results", data.get("rows", [])):
            rows.append((r["collective"], ranks, r["size"], r["time_us"] * 1e-6))
    if not rows:
        fail("titan-comm-bench's JSON holds no rows")
    # Least squares on relative error: minimize sum ((a s + b B - t) / t)^2
    # over latency a and inverse bandwidth b (2 x 2 normal equations).
    saa = sab = sbb = sat = sbt = 0.0
    for collective, ranks, size, t in rows:
        s, bb = ring_terms(collective, ranks, size)
        s, bb = s / t, bb / t
        saa += s * s
        sab += s * bb
        sbb += bb * bb
        sat += s
        sbt += bb
    det = saa * sbb - sab * sab
    if det <= 0:
        fail("the communication rows do not determine latency and bandwidth")
    latency = (sat * sbb - sbt * sab) / det
    inverse_bw = (saa * sbt - sab * sat) / det
    if latency <= 0 or inverse_bw <= 0:
        fail(f"the ring fit is not physical (latency {latency:.3g} s, "
             f"1/bandwidth {inverse_bw:.3g} s/B)")
    keys = {"intra_node_latency_seconds": latency,
            "intra_node_bus_bytes_per_second": 1.0 / inverse_bw}
    errors = []
    for collective, ranks, size, t in rows:
        s, bb = ring_terms(collective, ranks, size)
        errors.append((collective, ranks, size, t,
                       s * latency + bb * inverse_bw))
    return keys, {"rows": [{"collective": c, "ranks": n, "size": z,
                            "measured_s": t, "fitted_s": p}
                           for c, n, z, t, p in errors]}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_toml(path, keys):
    lines = [
        f"# The cost model's CPU description, calibrated by "
        f"scripts/calibrate-cpu.py on {cpu_name()}, {os.cpu_count()} cores.",
        "[hardware]",
        'base = "cpu"',
        f'description = "{cpu_name()}, {os.cpu_count()} cores '
        '(calibrate-cpu.py)"',
        f"devices_per_node = {max(64, os.cpu_count())}",
    ]
    for key in sorted(keys):
        lines.append(f"{key} = {keys[key]:.6g}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", required=True, help="the hardware TOML")
    ap.add_argument("--json", help="the measurements and fits, as JSON")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=6,
                    help="steps of the one-rank run (every 2nd traced)")
    ap.add_argument("--ranks", type=int, default=4,
                    help="fit the node's rate with this many ranks sharing "
                    "it (the checked configurations' rank count)")
    ap.add_argument("--comm-max-bytes", default="4M")
    ap.add_argument("--no-comm", action="store_true",
                    help="keep the shipped description's network keys")
    ap.add_argument("--quick", action="store_true",
                    help="fewer benchmark iterations (the suite's check)")
    args = ap.parse_args()
    if args.steps < 4:
        ap.error("--steps must be at least 4 (two traced steps after the first)")
    if args.ranks < 1 or args.batch % args.ranks:
        ap.error("--ranks must be positive and divide --batch")
    compiler, bench = tools(args.build)
    with tempfile.TemporaryDirectory(prefix="calibrate-cpu-") as tmp:
        keys, details = calibrate_compute(compiler, tmp, args.seq_len,
                                          args.batch, args.steps, args.ranks)
        if not args.no_comm:
            comm_keys, comm = calibrate_comm(
                bench, tmp, parse_size(args.comm_max_bytes), args.quick)
            keys.update(comm_keys)
            details["comm"] = comm
    write_toml(args.out, keys)
    details["keys"] = keys
    details["machine"] = {"cpu": cpu_name(), "cores": os.cpu_count()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(details, f, indent=1)
    for key in sorted(keys):
        print(f"{key} = {keys[key]:.6g}")


if __name__ == "__main__":
    main()
