#!/usr/bin/env bash
# README command 1: set up the machine, build, and run the main job on the debug model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/bin/titan-compile --job.config_file models/llama3/train_configs/debug_model.toml --emit=summary "$@"
