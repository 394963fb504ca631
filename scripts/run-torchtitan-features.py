#!/usr/bin/env python3
"""Runs TorchTitan v0.2.0's integration feature tests with titan, on CPU ranks.

TorchTitan's tests/integration_tests/run_tests.py runs each test of
features.py as `run_train.sh` on its base_config.toml plus the test's
override arguments, on ngpu GPUs, one run after another in the same dump
folder (artifacts-to-be-uploaded/<test name>). This harness does the same
with titan: for every run it compiles the unchanged base config with the
run's overrides (sized down only by --training.seq_len) into a training
executable and runs it on ngpu CPU ranks (mpirun --oversubscribe), in a
working folder that holds the paths the base config names
(./tests/assets/tokenizer, ./tests/assets/c4_test, and the schedule CSV of
pp_custom_csv).

Each test ends as PASS, FAIL (the run, the stage and titan's first error
line), XFAIL (it fails and test/Inputs/torchtitan-v0.2.0/features_missing.txt
names the titan feature it lacks), XPASS (listed there, but it passed: update
the list) or SKIP (the reason: it needs context parallelism, or the test
assets are not in the tree). The exit status is 1 if any test is FAIL or
XPASS.

    python3 scripts/run-torchtitan-features.py [--only a,b] [--work DIR]
"""

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPUTS = os.path.join(SRC, "test", "Inputs", "torchtitan-v0.2.0")

# What ./tests/assets holds in TorchTitan's checkout, from titan's tree.
ASSETS = {
    "tokenizer": os.path.join(SRC, "test", "Data", "Inputs", "tokenizer"),
    "c4_test": os.path.join(SRC, "test", "Inputs", "datasets", "c4_test"),
    "custom_schedule.csv": os.path.join(INPUTS, "custom_schedule.csv"),
}

# run_tests.py's output folder; its tests name paths under it
# (model_only_hf_checkpoint's initial_load_path).
OUTPUT_DIR = "artifacts-to-be-uploaded"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--titan-compile",
                    default=os.path.join(SRC, "build", "bin", "titan-compile"))
    ap.add_argument("--base-config",
                    default=os.path.join(INPUTS, "base_config.toml"),
                    help="as run_tests.py's --config_path")
    ap.add_argument("--tests", default=os.path.join(INPUTS,
                                                     "features_tests.json"))
    ap.add_argument("--missing", default=os.path.join(INPUTS,
                                                       "features_missing.txt"))
    ap.add_argument("--only", default="",
                    help="comma-separated test names (default: all)")
    ap.add_argument("--seq-len", type=int, default=32,
                    help="training.seq_len of every run (base: 2048)")
    ap.add_argument("--include-cp", action="store_true",
                    help="also run the tests that need context parallelism")
    ap.add_argument("--work", help="working folder (default: a temporary "
                    "one, removed at the end)")
    ap.add_argument("--compile-only", action="store_true",
                    help="compile every run but train none (a quick look)")
    ap.add_argument("--timeout", type=int, default=300,
                    help="seconds per compile or training run")
    return ap.parse_args()


def read_missing(path):
    """features_missing.txt: `test_name: the missing titan feature` lines."""
    missing = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, reason = line.split(":", 1)
                missing[name.strip()] = reason.strip()
    return missing


def override_words(run):
    """run_tests.py joins a run's arguments into one shell command line."""
    return shlex.split(" ".join(run))


def needs_context_parallel(test):
    key = "--parallelism.context_parallel_degree"
    for run in test["runs"]:
        words = override_words(run)
        for i, word in enumerate(words):
            if word == key and i + 1 < len(words):
                word = f"{key}={words[i + 1]}"
            if word.startswith(key + "=") and word != key + "=1":
                return True
    return False


def first_error(text):
    """titan's first error line, else the last line of the output."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for line in lines:
        if re.search(r"\berror\b|fatal|Error:", line):
            return line[:300]
    return lines[-1][:300] if lines else "(no output)"


def run_command(cmd, cwd, timeout, log):
    log.write("$ " + shlex.join(cmd) + "\n")
    log.flush()
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        out = out.decode() if isinstance(out, bytes) else out
        log.write(out)
        return False, f"timed out after {timeout} s"
    except OSError as e:
        return False, f"cannot run {cmd[0]}: {e.strerror}"
    log.write(p.stdout)
    return p.returncode == 0, (None if p.returncode == 0 else
                               f"exit {p.returncode}: {first_error(p.stdout)}")


def run_test(test, args, work, log):
    """Compiles and trains each run of `test`; returns (ok, detail)."""
    name, ngpu = test["name"], test["ngpu"]
    notes = []
    for idx, run in enumerate(test["runs"]):
        if name == "test_generate" and idx == 1:
            # run_tests.py replaces this run by TorchTitan's generation
            # script; titan has no generation tool.
            notes.append("run 2 (TorchTitan's generate script) not run")
            continue
        exe = os.path.join(work, "bin", f"{name}.{idx}")
        compile_cmd = [args.titan_compile,
                       "--job.config_file", args.base_config,
                       "--world-size", str(ngpu),
                       "--job.dump_folder", f"{OUTPUT_DIR}/{name}",
                       *override_words(run),
                       "--training.seq_len", str(args.seq_len), "-o", exe]
        ok, err = run_command(compile_cmd, work, args.timeout, log)
        if not ok:
            return False, f"run {idx + 1} compile: {err}"
        if args.compile_only:
            continue
        train_cmd = ["mpirun", "--oversubscribe", "-np", str(ngpu), exe]
        ok, err = run_command(train_cmd, work, args.timeout, log)
        if not ok:
            return False, f"run {idx + 1} train: {err}"
    return True, "; ".join(notes)


def prepare(work):
    """The working folder's ./tests/assets; what is missing to run."""
    assets = os.path.join(work, "tests", "assets")
    os.makedirs(assets, exist_ok=True)
    os.makedirs(os.path.join(work, "bin"), exist_ok=True)
    absent = []
    for name, source in ASSETS.items():
        link = os.path.join(assets, name)
        if os.path.lexists(link):
            os.remove(link)
        if os.path.exists(source):
            os.symlink(source, link)
        else:
            absent.append(os.path.relpath(source, SRC))
    if not shutil.which("mpirun"):
        absent.append("mpirun")
    return absent


def main():
    args = parse_args()
    with open(args.tests) as f:
        tests = json.load(f)["tests"]
    missing = read_missing(args.missing)
    only = set(filter(None, args.only.split(",")))
    for var in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
        os.environ.setdefault(var, "1")
    # The ranks share the machine's cores (titan's kernels give the same
    # values for any thread count).
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    work = args.work or tempfile.mkdtemp(prefix="titan-features-")
    os.makedirs(work, exist_ok=True)
    absent = prepare(work)
    counts = {}
    start = time.monotonic()
    with open(os.path.join(work, "log.txt"), "w") as log:
        for test in tests:
            name = test["name"]
            if only and name not in only:
                continue
            log.write(f"===== {name} ({test['descr']}), ngpu {test['ngpu']}\n")
            t0 = time.monotonic()
            disabled = " (disabled in TorchTitan)" if test["disabled"] else ""
            if needs_context_parallel(test) and not args.include_cp:
                status, detail = "SKIP", "needs context parallelism"
            elif absent:
                status, detail = "SKIP", "missing: " + ", ".join(absent)
            else:
                ok, detail = run_test(test, args, work, log)
                if name in missing:
                    status = "XPASS" if ok else "XFAIL"
                    detail = (detail if ok else
                              f"missing: {missing[name]} [{detail}]")
                else:
                    status = "PASS" if ok else "FAIL"
            counts[status] = counts.get(status, 0) + 1
            print(f"{status:5} {name:34} ngpu {test['ngpu']} "
                  f"{time.monotonic() - t0:6.1f} s{disabled}"
                  + (f"  {detail}" if detail else ""), flush=True)
    failed = bool(counts.get("FAIL") or counts.get("XPASS"))
    # A temporary working folder stays only when something failed.
    keep = args.work or failed
    # CPU time too: on a shared machine the wall time says little.
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"summary: {len(tests) if not only else len(only)} tests, " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
          f" in {time.monotonic() - start:.0f} s, "
          f"{used.ru_utime + used.ru_stime:.0f} CPU s (log: "
          f"{os.path.join(work, 'log.txt') if keep else 'removed'})")
    if not keep:
        shutil.rmtree(work)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
