"""What the CPU benchmarks share: the job config, the same weights and
tokens for every run, launching, metrics and a description of the machine."""

import json
import os
import platform
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "test", "Integration", "Inputs", "llama_reference.py")
PYTHON = "/usr/bin/python3"


def run(cmd, env=None):
    """Runs `cmd` (echoed to stderr) and returns its stdout."""
    print("+ " + " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, env=env, stdout=subprocess.PIPE,
                          text=True).stdout


def read_metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def model_path(flavor):
    return os.path.join(ROOT, "models", "llama3", flavor + ".toml")


def prepare(tmp, flavor, seq_len, batch, steps, batch_key="local_batch_size"):
    """Writes the job config and the shared initial weights and tokens into
    `tmp`; returns (config, weights, tokens) paths. `batch_key` says whether
    `batch` is the per-rank or the global batch."""
    model = model_path(flavor)
    config = os.path.join(tmp, "bench.toml")
    with open(config, "w") as f:
        f.write(f"""[model]
flavor = "{model}"
[training]
{batch_key} = {batch}
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
    weights = os.path.join(tmp, "w0.safetensors")
    tokens = os.path.join(tmp, "tokens.bin")
    run([PYTHON, REFERENCE, "init", "--model", model, "--seed", "0", "--out", weights])
    count = (seq_len + 1) * batch * (steps + 1)
    run([PYTHON, REFERENCE, "tokens", "--vocab", "2048", "--count", str(count),
         "--out", tokens])
    return config, weights, tokens


def median_tokens_per_second(metrics):
    """The median over the steps after the first (warm-up)."""
    return statistics.median(m["tokens_per_second"] for m in metrics[1:])


def machine():
    """"<CPU model>, N cores; OpenBLAS core type: <type>"."""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor() or platform.machine()
    blas = os.environ.get("OPENBLAS_CORETYPE", "auto-detected")
    return f"{cpu}, {os.cpu_count()} cores; OpenBLAS core type: {blas}"


def write_result(text, out):
    print(text)
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write(text)
