#!/usr/bin/env bash
# Writes every --emit stage of titan-compile for a matrix of configurations
# (both targets) into OUTDIR, one file per stage: run it before and after a
# refactoring and `diff -r` the two folders; compiler output is
# deterministic, so any difference is a change of behavior or spelling.
#   scripts/emit-matrix.sh OUTDIR [BUILD_DIR]
set -uo pipefail
out=${1:?usage: scripts/emit-matrix.sh OUTDIR [BUILD_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
tc=${2:-$root/build}/bin/titan-compile
configs=$root/models/llama3/train_configs
mkdir -p "$out"
dbg="--job.config_file $configs/debug_model.toml"
declare -A matrix=(
  [dbg]="$dbg"
  [fsdp2tp2f8]="$dbg --parallelism.data_parallel_shard_degree 2 --parallelism.tensor_parallel_degree 2 --model.converters float8 --training.mixed_precision_param bfloat16"
  [fsdp2tp2bf16]="$dbg --parallelism.data_parallel_shard_degree 2 --parallelism.tensor_parallel_degree 2 --training.mixed_precision_param bfloat16"
  [cp2tp2]="$dbg --parallelism.context_parallel_degree 2 --parallelism.tensor_parallel_degree 2"
  [pp2zbv]="$dbg --parallelism.pipeline_parallel_degree 2 --parallelism.pipeline_parallel_schedule ZBVZeroBubble"
  [fullac]="$dbg --activation_checkpoint.mode full"
  [8bfsdp8]="--job.config_file $configs/llama3_8b.toml --parallelism.data_parallel_shard_degree 8"
)
for name in "${!matrix[@]}"; do
  for target in cpu cuda; do
    for stage in summary schedule pipeline partitioned train kernel memory llvm cost; do
      # The 8B model's LLVM dialect is large and adds nothing to the kernel IR.
      [ "$name" = 8bfsdp8 ] && [ "$stage" = llvm ] && continue
      extra=()
      [ "$stage" = cost ] && [ "$target" = cuda ] && extra=(--gpu h100)
      f=$out/$name.$target.$stage
      # shellcheck disable=SC2086
      "$tc" ${matrix[$name]} --target=$target --emit=$stage "${extra[@]}" \
        >"$f.out" 2>"$f.err"
      echo "exit $?" >>"$f.err"
    done
  done
done
