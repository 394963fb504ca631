#!/usr/bin/env bash
# Trains the debug model the same number of steps on the same data under
# five parallel layouts on CPU ranks (mpirun) and draws their loss and
# gradient-norm curves on one plot: 1 rank, FSDP 4, FSDP 2 x TP 2,
# FSDP 2 x PP 2 and 3D (FSDP 2 x TP 2 x PP 2, 8 ranks). Every layout
# trains the global batch of 8 sequences in the same order from the same
# initial weights, so the curves lie on top of each other: only the order of
# floating-point sums differs.
#   bash scripts/compare-layouts.sh [--section.key value ...]
# Extra arguments go to every titan-compile. Outputs: outputs/compare-layouts/
# (each layout's metrics.jsonl) and the plot, docs/compare-layouts.png
# (TITAN_PLOT=FILE to write it elsewhere). TITAN_STEPS (default 30) and
# TITAN_SEQ_LEN (default 128) size the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=outputs/compare-layouts
steps=${TITAN_STEPS:-30}
seq=${TITAN_SEQ_LEN:-128}
plot=${TITAN_PLOT:-docs/compare-layouts.png}
mkdir -p "$out"
# The main job's text (scripts/run-main-job.sh): Debian's license texts,
# byte-tokenized.
corpus="$out/corpus.txt"
if ls /usr/share/common-licenses/* >/dev/null 2>&1; then
  cat /usr/share/common-licenses/* > "$corpus"
else
  cat README.md docs/*.md lib/*/*.cpp > "$corpus"
fi

# name ranks data-parallel-degree overrides...
layouts=(
  "1-rank 1 1"
  "fsdp4 4 4"
  "fsdp2-tp2 4 2 --parallelism.tensor_parallel_degree 2"
  "fsdp2-pp2 4 2 --parallelism.pipeline_parallel_degree 2"
  "fsdp2-tp2-pp2 8 2 --parallelism.tensor_parallel_degree 2 --parallelism.pipeline_parallel_degree 2"
)
global=8
metrics=()
for layout in "${layouts[@]}"; do
  read -r name ranks dp overrides <<< "$layout"
  mkdir -p "$out/$name"
  # shellcheck disable=SC2086  # overrides are words
  ./build/bin/titan-compile --job.config_file models/llama3/train_configs/debug_model.toml \
    --training.seq_len "$seq" --training.steps "$steps" --world-size "$ranks" \
    --training.local_batch_size $((global / dp)) --training.global_batch_size "$global" \
    $overrides "$@" -o "$out/$name/train"
  launch=()
  if [ "$ranks" -gt 1 ]; then
    launch=(mpirun --oversubscribe -np "$ranks")
    [ "$(id -u)" -ne 0 ] || launch+=(--allow-run-as-root)
  fi
  rm -f "$out/$name/metrics.jsonl"
  OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "${launch[@]}" "$out/$name/train" \
    --training.dataset_path "$corpus" --job.dump_folder "$out/$name" \
    --metrics.log_freq 10 | grep --line-buffered '^step'
  metrics+=("$out/$name/metrics.jsonl")
done
bash scripts/plot-metrics.sh "${metrics[@]}" --panels loss,grad_norm --out "$plot" \
  --title "titan: llama3 debugmodel, $steps steps of 8 x $seq tokens, five layouts on CPU ranks"
