#!/usr/bin/env bash
# The GPU check, in one run on a lent GPU (bench/gpu/bundle.sh packs it on
# the build machine first; the device tool carries .gpu-bundle/):
#   (a) numerics: every CUDA kernel against its CPU kernel (cuda-kernels),
#       the NCCL communicator on one GPU, the parity model's training on
#       the GPU against the CPU target's run of it (f32: 1e-4 over 8 steps;
#       bf16: 1e-2 over 20 steps; CUDA graphs on and off: the same bits;
#       Float8 tensorwise and rowwise: 2e-2 over 8 steps);
#   (b) kernels: GEMMs (bf16 and FP8), attention and the fused kernels at
#       8B shapes, against torch.matmul, torch._scaled_mm, PyTorch's SDPA
#       and the copy bandwidth;
#   (c) the step: an 8B-shaped model (16 layers) in tokens/s and MFU, beside
#       a plain PyTorch Llama eager and under torch.compile, interleaved,
#       and titan's step with Float8 (the ratio to bf16 titan).
# Prints the tables last, also into summary.md, and leaves every log and
# JSON file in $TITAN_GPU_OUT (default: the device tool's $OUT, whose
# files come back, else /tmp/titan-gpu); commit summary.md under
# bench/results/ with the date and the GPU. `--dry-run` checks the
# bundle's libraries resolve and says what it would run, on any machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
outdir=${TITAN_GPU_OUT:-${OUT:-/tmp/titan-gpu}}
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
# The bundle travels packed; unpack it outside the working tree.
packed=.gpu-bundle/bundle.tar.gz
[ -f "$packed" ] || { echo "run: no $packed; run bench/gpu/bundle.sh on the build machine" >&2; exit 1; }
unpacked=${TMPDIR:-/tmp}/titan-gpu-bundle
rm -rf "$unpacked" && mkdir -p "$unpacked" && tar -C "$unpacked" -xzf "$packed" || { echo "run: cannot unpack $packed" >&2; exit 1; }
bundle=$unpacked/bundle
export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
# Open MPI from the bundle: its components, and a singleton rank that starts
# no orted.
export OMPI_MCA_mca_base_component_path="$bundle/openmpi"
export OMPI_MCA_ess_singleton_isolated=1
[ -d "$bundle/openmpi-share" ] && export OPAL_PKGDATADIR="$bundle/openmpi-share"
missing=$(ldd "$bundle"/bin/* "$bundle"/lib/libtitanrt_comm.so 2>/dev/null | grep 'not found' | sort -u)
if [ -n "$missing" ]; then
  echo "run: libraries not found on this machine:" >&2
  echo "$missing" >&2
  exit 1
fi
py=$(command -v python3)
for f in bench/gpu/report.py bench/gpu/torch_kernels.py bench/gpu/torch_llama_step.py "$bundle/data/cpu-f32.jsonl"; do
  [ -f "$f" ] || { echo "run: $f is missing" >&2; exit 1; }
done
if [ "$dry" = 1 ]; then
  echo "dry run: every library resolves; python: $py; would run:"
  ls "$bundle/bin"
  exit 0
fi
mkdir -p "$outdir" && rm -rf "${outdir:?}"/*
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$outdir/gpu.txt"
"$py" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$outdir/gpu.txt"
declare -a rows
# Every check has a time limit, and all of them share a budget (the device
# tool gives one call 10 minutes): a check that would start with less than
# 10 s left is skipped, so the tables always print.
budget=${TITAN_GPU_BUDGET:-540}
began=$(date +%s)
check() { # name, limit in seconds, command... (exit 77: skipped)
  local name=$1 limit=$2; shift 2
  local start end rc left
  left=$(( budget - ($(date +%s) - began) ))
  if [ "$left" -lt 10 ]; then
    rows+=("$(printf '%-26s %-8s' "$name" "no time")")
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  start=$(date +%s%N)
  # Through bash, so the exported shell functions below run under timeout.
  timeout --kill-after=5 "$limit" bash -c '"$@"' bash "$@" > "$outdir/$name.log" 2>&1
  rc=$?
  end=$(date +%s%N)
  echo "== $name (exit $rc)"; tail -n 12 "$outdir/$name.log"
  local verdict=FAIL
  [ $rc = 0 ] && verdict=ok
  [ $rc = 77 ] && verdict=skipped
  [ $rc = 124 ] && verdict=timeout
  rows+=("$(printf '%-26s %-8s %6d ms' "$name" "$verdict" "$(( (end - start) / 1000000 ))")")
}
data=$bundle/data
train() { # executable, output folder, extra arguments
  local exe=$1 dir=$2; shift 2
  "$bundle/bin/$exe" --training.dataset_path "$data/tokens.bin" \
    --checkpoint.initial_load_path "$data/w0.safetensors" --job.dump_folder "$dir" "$@"
}

export bundle data outdir py
export -f train
# (a) numerics
check cuda-kernels 90 "$bundle/bin/TitanCudaKernelTest"
check nccl-communicator-1 30 "$bundle/bin/TitanNCCLCommunicatorTest"
check train-f32 45 train parity-f32 "$outdir/f32"
check parity-f32-vs-cpu 10 "$py" bench/gpu/report.py compare "$outdir/f32/metrics.jsonl" "$data/cpu-f32.jsonl" 1e-4 8
check train-bf16 45 train parity-bf16 "$outdir/bf16"
check parity-bf16-vs-cpu 10 "$py" bench/gpu/report.py compare "$outdir/bf16/metrics.jsonl" "$data/cpu-bf16.jsonl" 1e-2 20
check train-bf16-eager 45 train parity-bf16 "$outdir/bf16-eager" --debug.no_cuda_graphs
check graphs-vs-eager 10 "$py" bench/gpu/report.py compare "$outdir/bf16/metrics.jsonl" "$outdir/bf16-eager/metrics.jsonl" 0 20
for recipe in tensorwise rowwise; do
  check train-f8-$recipe 45 train parity-f8-$recipe "$outdir/f8-$recipe"
  check parity-f8-$recipe-vs-cpu 10 "$py" bench/gpu/report.py compare "$outdir/f8-$recipe/metrics.jsonl" "$data/cpu-f8-$recipe.jsonl" 2e-2 8
done

# (b) kernels
check kernels-titan 60 sh -c "'$bundle/bin/TitanCudaKernelBench' > '$outdir/kernels-titan.jsonl'"
check kernels-torch 60 sh -c "'$py' bench/gpu/torch_kernels.py > '$outdir/kernels-torch.jsonl'"

# (c) the step, interleaved: titan, eager, compiled, titan again.
layers=$(cat "$data/step-8b-layers.txt")
"$py" - "${TMPDIR:-/tmp}/titan-tokens-128k.bin" <<'PY'
import array, random, sys
random.seed(3)
array.array("I", (random.randrange(128256) for _ in range(1 << 20))).tofile(open(sys.argv[1], "wb"))
PY
step_titan() { # round [executable label]
  local exe=${2:-step-8b} label=${3:-titan --target=cuda}
  "$bundle/bin/$exe" --training.dataset_path "${TMPDIR:-/tmp}/titan-tokens-128k.bin" \
    --metrics.peak_tflops 989 --job.dump_folder "$outdir/step-titan-$1" &&
  "$py" bench/gpu/report.py titan-step "$outdir/step-titan-$1/metrics.jsonl" 3 "$label" > "$outdir/step-titan-$1.json"
}
export -f step_titan
check step-titan-1 120 step_titan 1
check step-torch-eager 120 sh -c "'$py' bench/gpu/torch_llama_step.py --mode eager --layers $layers > '$outdir/step-eager.json'"
check step-torch-compile 240 sh -c "'$py' bench/gpu/torch_llama_step.py --mode compile --layers $layers > '$outdir/step-compile.json'"
check step-titan-2 120 step_titan 2
check step-titan-fp8 120 step_titan fp8 step-8b-fp8 "titan --target=cuda float8"

{
echo
echo "== kernels"
"$py" bench/gpu/report.py kernels "$outdir/kernels-titan.jsonl" "$outdir/kernels-torch.jsonl" 2>&1
echo
echo "== step ($layers layers; titan's planned arena: $(cat "$data/step-8b-memory.txt"))"
"$py" bench/gpu/report.py step "$outdir"/step-titan-*.json "$outdir/step-eager.json" "$outdir/step-compile.json" 2>&1
echo
printf '%-26s %-8s %8s\n' check result time
printf '%s\n' "${rows[@]}"
} 2>&1 | tee "$outdir/summary.md"
