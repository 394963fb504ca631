#!/usr/bin/env bash
# The current PyTorch from PyPI in bench/.venv, for bench/cpu_train_step.py's
# baselines (eager, SDPA, torch.compile). PyTorch's CPU-only wheel index is
# tried first; where only PyPI is reachable its default wheel is used (it
# runs on the CPU; its CUDA libraries are simply not loaded).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
/usr/bin/python3 -m venv "$venv"
if ! "$venv/bin/pip" install --index-url https://download.pytorch.org/whl/cpu \
    torch numpy; then
  echo "setup-venv: PyTorch's CPU index is unreachable; using PyPI's wheel" >&2
  "$venv/bin/pip" install torch numpy
fi
"$venv/bin/python" -c 'import torch; print("bench/.venv: PyTorch", torch.__version__)'
