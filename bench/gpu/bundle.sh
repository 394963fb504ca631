#!/usr/bin/env bash
# Packs the GPU checks for a machine that has the CUDA libraries but not
# this build's other dependencies (LLVM, OpenBLAS, Open MPI) nor titan's
# compiler: the test and benchmark executables, training executables
# compiled here with titan-compile --target=cuda, the CPU target's reference
# runs of the same training (metrics to compare against), the generated-
# kernel tests' steps for the GPU and the host, titan's runtime
# libraries, and every library they load that is neither a CUDA library
# (found there under /usr/local/cuda or as NVIDIA's wheels beside PyTorch)
# nor glibc, and the cuDNN version the build's headers declare. Writes
# .gpu-bundle/bundle.tar.gz (in .gitignore), at most 60 MiB, for the device
# tool's `carry`; bench/gpu/run.sh unpacks and runs it there.
#   TITAN_BUILD       the build folder (default build)
#   TITAN_GPU_CARRY   where the bundle goes instead of .gpu-bundle (tests)
#   TITAN_BUNDLE_NO_STEP=1  leaves out the 8B-shaped step executables, the
#                     slowest to compile (the bundle dry-run test)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${TITAN_BUILD:-build}
carry=${TITAN_GPU_CARRY:-.gpu-bundle}
out=$(mktemp -d)/bundle # staged, then packed into $carry/bundle.tar.gz
compile="$build/bin/titan-compile"
py=/usr/bin/python3 # Debian's python3-torch, for the reference data
inputs=test/Integration/Inputs
tests=("$build/unittests/TitanCudaKernelTest" "$build/unittests/TitanCudaCollectiveMatmulTest"
       "$build/unittests/TitanNCCLCommunicatorTest" "$build/bench/TitanCudaKernelBench"
       "$build/bench/titan-comm-bench" "$build/bench/TitanCudaGeneratedStep"
       "$build/bench/TitanGeneratedStepHost")
for t in "${tests[@]}" "$compile"; do
  [ -x "$t" ] || { echo "bundle: $t is missing; build with CUDA first (bash scripts/build.sh)" >&2; exit 1; }
done
mkdir -p "$out/bin" "$out/lib" "$out/data"
cp "${tests[@]}" "$out/bin/"
echo "titan $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ' with changes'), packed $(date -u '+%Y-%m-%d %H:%M UTC')" > "$out/data/bundle.txt"

# The cuDNN the CUDA target was built against: the version header beside
# the cudnn.h CMake found, "none" where the build has no cuDNN attention
# (run.sh compares it with the cuDNN the GPU machine's loader finds).
cache_path() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
cudnn_include=$(cache_path CUDNN_INCLUDE_DIR)
if [ -f "$cudnn_include/cudnn_version.h" ] && [[ $(cache_path CUDNN_FRONTEND_INCLUDE_DIR) != *NOTFOUND ]]; then
  awk '/#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) / {v[$2] = $3}
       END {print v["CUDNN_MAJOR"] "." v["CUDNN_MINOR"] "." v["CUDNN_PATCHLEVEL"]}' \
    "$cudnn_include/cudnn_version.h" > "$out/data/cudnn-built.txt"
else
  echo "bundle: warning: this build has no cuDNN attention (cudnn.h or cudnn-frontend not found); bf16 attention runs the exact kernels" >&2
  echo none > "$out/data/cudnn-built.txt"
fi

# Training executables for the GPU, and the CPU target's runs of the same
# training here: the parity model from fixed weights and tokens, f32 (8
# steps) and bf16 mixed precision (20 steps).
parity=(--job.config_file "$inputs/parity.toml" --model.flavor "$inputs/parity-model.toml")
"$py" "$inputs/llama_reference.py" init --model "$inputs/parity-model.toml" --seed 1 --out "$out/data/w0.safetensors"
"$py" "$inputs/llama_reference.py" tokens --vocab 300 --count 40000 --seed 2 --out "$out/data/tokens.bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$(dirname "$out")"' EXIT
run_args=(--training.dataset_path "$out/data/tokens.bin" --checkpoint.initial_load_path "$out/data/w0.safetensors")
for precision in f32:float32:8 bf16:bfloat16:20; do
  IFS=: read -r name param steps <<< "$precision"
  common=("${parity[@]}" --training.mixed_precision_param "$param" --training.steps "$steps")
  "$compile" "${common[@]}" --target=cuda -o "$out/bin/parity-$name" 2>/dev/null
  "$compile" "${common[@]}" -o "$tmp/cpu-$name" 2>/dev/null
  "$tmp/cpu-$name" "${run_args[@]}" --job.dump_folder "$tmp/cpu-$name-out" > /dev/null
  cp "$tmp/cpu-$name-out/metrics.jsonl" "$out/data/cpu-$name.jsonl"
done
# The bf16 run with communication overlap off (debug.no_comm_overlap):
# run.sh compares its bits and step time with parity-bf16's. A compiler
# without the key leaves a note instead, and run.sh skips the check.
if "$compile" --help 2>/dev/null | grep no_comm_overlap > /dev/null; then
  "$compile" "${parity[@]}" --training.mixed_precision_param bfloat16 --training.steps 20 \
    --debug.no_comm_overlap true --target=cuda -o "$out/bin/parity-bf16-no-overlap" 2>/dev/null
else
  echo "this titan-compile has no debug.no_comm_overlap" > "$out/data/no-overlap-missing.txt"
fi
# The bf16 run with training.enable_cpu_offload (the state in pinned host
# memory, AdamW on the host through libtitanrt_host, the copies on the copy
# stream): run.sh compares it with parity-bf16's.
"$compile" "${parity[@]}" --training.mixed_precision_param bfloat16 --training.steps 20 \
  --training.enable_cpu_offload true --target=cuda -o "$out/bin/parity-bf16-offload" 2>/dev/null
# Float8 (bf16 compute, 8 steps) per recipe: cuBLASLt's FP8 GEMMs against
# the CPU target's bit-exact emulation of the casts.
for recipe in tensorwise rowwise; do
  common=("${parity[@]}" --training.mixed_precision_param bfloat16 --training.steps 8
          --model.converters quantize.linear.float8 --quantize.linear.float8.recipe_name "$recipe")
  "$compile" "${common[@]}" --target=cuda -o "$out/bin/parity-f8-$recipe" 2>/dev/null
  "$compile" "${common[@]}" -o "$tmp/cpu-f8-$recipe" 2>/dev/null
  "$tmp/cpu-f8-$recipe" "${run_args[@]}" --job.dump_folder "$tmp/cpu-f8-$recipe-out" > /dev/null
  cp "$tmp/cpu-f8-$recipe-out/metrics.jsonl" "$out/data/cpu-f8-$recipe.jsonl"
done

# The 8B-shaped step: Llama 3 8B's dimensions (dim 4096, 32/8 heads, FFN
# 14336, vocabulary 128256), bf16 mixed precision, local batch 1, seq 8192,
# with 16 of its 32 layers: titan plans 96 GiB for them with AdamW's state
# and every activation kept (22 layers would plan 125 GiB of the H200's
# 141, but PyTorch eager keeps an f32 residual stream and bf16 weight
# copies, and must fit too for the comparison).
layers=${TITAN_BENCH_LAYERS:-16}
echo "$layers" > "$out/data/step-8b-layers.txt"
if [ "${TITAN_BUNDLE_NO_STEP:-0}" != 1 ]; then
  sed "s/^n_layers = 32/n_layers = $layers/" models/llama3/8B.toml > "$tmp/8B-$layers.toml"
  step=(--job.config_file models/llama3/train_configs/llama3_8b.toml --model.flavor "$tmp/8B-$layers.toml"
          --activation_checkpoint.mode none --metrics.enable_tensorboard false --metrics.log_freq 1
          --training.steps 15 --lr_scheduler.warmup_steps 2)
  "$compile" "${step[@]}" --target=cuda -o "$out/bin/step-8b"
  "$compile" "${step[@]}" --target=cuda --emit=memory | grep -E "peak:" > "$out/data/step-8b-memory.txt"
  # The same step with TorchTitan's Float8 (tensorwise; the output linear in
  # bf16, as TorchTitan's presets filter it).
  "$compile" "${step[@]}" --target=cuda --model.converters quantize.linear.float8 \
    --quantize.linear.float8.filter_fqns output -o "$out/bin/step-8b-fp8"
fi

# The generated-kernel tests' steps (test/Integration/generated-*.test),
# each lowered as its test lowers it, once for sm_90a and once for the host
# (x86-64-v3: any GPU machine's CPU), as shared objects the two
# GeneratedStep programs load; with each test's check.py (its inputs and
# PyTorch references) for run.sh to compare the GPU's run with the host's.
llvm_bin=$(cd "$(cache_path LLVM_DIR)/../../../bin" && pwd)
mkdir -p "$out/data/generated"
cp "$inputs/arena_slots.py" "$out/data/generated/"
for t in adamw cross-entropy float8 loss-grad loss-parallel rms-norm-grad rope; do
  pipeline=$(grep -o 'pass-pipeline="[^"]*titan-lowering-pipeline)"' "test/Integration/generated-$t.test" |
    head -n 1 | sed 's/^pass-pipeline="//; s/"$//')
  [ -n "$pipeline" ] || { echo "bundle: no lowering pipeline in generated-$t.test" >&2; exit 1; }
  for side in cpu cuda; do
    lowering=$pipeline
    [ "$side" = cuda ] && lowering=$(echo "$pipeline" |
      sed 's/titan-lowering-pipeline)/titan-lowering-pipeline{device-chip=sm_90a})/')
    "$build/bin/titan-opt" "$inputs/generated-$t/step.mlir" --pass-pipeline="$lowering" -o "$tmp/$t-$side.mlir"
    "$llvm_bin/mlir-translate" --mlir-to-llvmir "$tmp/$t-$side.mlir" | "$llvm_bin/opt" -O2 -mcpu=x86-64-v3 |
      "$llvm_bin/llc" -O2 -mcpu=x86-64-v3 -filetype=obj -relocation-model=pic -o "$tmp/$t-$side.o"
    # The plan must fit the programs' 32 MiB arena.
    arena=$(grep -o 'kernel.arena_bytes = [0-9]*' "$tmp/$t-$side.mlir" | head -n 1 | grep -o '[0-9]*$')
    [ "${arena:-0}" -le $((32 << 20)) ] ||
      { echo "bundle: generated-$t plans $arena bytes, over GeneratedStep's 32 MiB arena" >&2; exit 1; }
    so=$out/lib/generated-$t-$side.so
    if [ "$side" = cpu ]; then
      c++ -shared "$tmp/$t-$side.o" -L"$build/lib" -ltitanrt_cpu -ltitanrt \
        -Wl,-rpath,"\$ORIGIN:$(cd "$build/lib" && pwd)" -o "$so"
      runner=$build/bench/TitanGeneratedStepHost
    else # its calls resolve against TitanCudaGeneratedStep's runtime
      c++ -shared "$tmp/$t-$side.o" -o "$so"
      runner=$build/bench/TitanCudaGeneratedStep
    fi
    # Loaded as run.sh will load it (no input here: it stops after that).
    if "$runner" "$so" "$tmp/no-input" "$tmp/no-output" 2>&1 | grep -E 'cannot load|no titan_step' >&2; then
      echo "bundle: $(basename "$so") does not load in $(basename "$runner")" >&2
      exit 1
    fi
  done
  mkdir -p "$out/data/generated/$t"
  cp "$inputs/generated-$t/check.py" "$out/data/generated/$t/"
done

# The communicator libraries libtitanrt loads: MPI's for runs under mpirun,
# NCCL's for GPU ranks.
cp "$build/lib/libtitanrt_comm.so" "$build/lib/libtitanrt_nccl.so" "$out/lib/"
# What the dynamic linker resolves here, minus what the GPU machine has.
ldd "$out"/bin/* "$out"/lib/libtitanrt_comm.so "$out"/lib/libtitanrt_nccl.so "$out"/lib/generated-*-cpu.so | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
    libcuda*|libcublas*|libcudnn*|libnccl*|libnvrtc*|libnvJitLink*) ;;
    *) [ -e "$out/lib/$(basename "$lib")" ] || cp -L "$lib" "$out/lib/" ;;
  esac
done
strip --strip-unneeded "$out"/bin/* "$out"/lib/libtitanrt*.so 2>/dev/null || true
# Open MPI's components (the NCCL test bootstraps over MPI, as one singleton
# rank) and its help texts.
mpi_components=$(dirname "$(ldd "$out/lib/libtitanrt_comm.so" | awk '/libmpi.so/ {print $3}')")/openmpi/lib/openmpi3
[ -d "$mpi_components" ] || mpi_components=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
cp -r "$mpi_components" "$out/openmpi"
[ -d /usr/share/openmpi ] && cp -r /usr/share/openmpi "$out/openmpi-share"
mkdir -p "$carry" && rm -f "$carry/bundle.tar.gz"
tar -C "$(dirname "$out")" -czf "$carry/bundle.tar.gz" bundle
bytes=$(stat -c %s "$carry/bundle.tar.gz")
echo "bundle: $carry/bundle.tar.gz, $((bytes / 1048576)) MiB ($(du -sm "$out" | cut -f1) MiB unpacked): $(ls "$out/bin" | tr '\n' ' ')"
[ "$bytes" -le $((60 * 1048576)) ] || { echo "bundle: over 60 MiB" >&2; exit 1; }
