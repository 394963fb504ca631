#!/usr/bin/env bash
# README command 1: set up the machine, build titan, compile the debug model
# into a training executable and train it on CPU for a few minutes on text
# found on the machine, printing a falling loss.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh

out=outputs/main-job
mkdir -p "$out"
# Text to learn from: the license texts every Debian system ships, else
# titan's own documentation and sources. Bytes are tokens (byte tokenizer).
corpus="$out/corpus.txt"
if ls /usr/share/common-licenses/* >/dev/null 2>&1; then
  cat /usr/share/common-licenses/* > "$corpus"
else
  cat README.md docs/*.md lib/*/*.cpp > "$corpus"
fi

# The debug model preset, with a shorter sequence so that a 2-core machine
# takes a few minutes; any --section.key override given here is passed on.
# TITAN_RANKS=N trains on N CPU ranks with mpirun: tensor parallel over
# TITAN_TP of them (default 1), FSDP over the rest.
ranks=${TITAN_RANKS:-1}
tp=${TITAN_TP:-1}
./build/bin/titan-compile --job.config_file models/llama3/train_configs/debug_model.toml \
  --training.seq_len 256 --training.steps 40 --world-size "$ranks" \
  --parallelism.tensor_parallel_degree "$tp" -o "$out/train"
launch=()
if [ "$ranks" -gt 1 ]; then
  launch=(mpirun --oversubscribe -np "$ranks")
  [ "$(id -u)" -ne 0 ] || launch+=(--allow-run-as-root)
fi
"${launch[@]}" "$out/train" --training.dataset_path "$corpus" --job.dump_folder "$out" \
  --metrics.log_freq 5 "$@"
echo "metrics: $out/metrics.jsonl"
# The curves, when matplotlib can be installed from PyPI (the run itself
# does not need it).
bash scripts/plot-metrics.sh "$out/metrics.jsonl" --out "$out/metrics.png" \
  --title "titan: llama3 debugmodel on the CPU" ||
  echo "(no plot: matplotlib could not be installed)"
