#!/usr/bin/env bash
# The GPU check on a lent GPU (bench/gpu/bundle.sh packs it on the build
# machine first; the device tool carries .gpu-bundle/), each check under its
# own time limit within one budget (TITAN_GPU_BUDGET, default 420 s, well
# inside the device tool's 600-second call; a check that would start with
# under 10 s left is not run), most important first:
#   (a) the numerics that gate everything: the cuDNN the loader finds
#       against the one the bundle was built with; every CUDA kernel against
#       its CPU kernel (cuda-kernels); the NCCL communicator on one GPU; the
#       parity model's training on the GPU against the CPU target's run of
#       it (f32: 1e-4 over 8 steps; bf16: 1e-2 over 20 steps);
#   (b) the step: an 8B-shaped model (16 layers) in tokens/s and MFU, beside
#       a plain PyTorch Llama eager and under torch.compile, interleaved
#       (titan, eager, compiled, titan again), and titan's step with Float8
#       (the ratio to bf16 titan);
#   (c) the rest of the numerics: async TP's collective matmuls through the
#       kernel ABI on a ring of one (cuda-collective-matmuls: linear and
#       Float8, against the host's GEMMs); titan-comm-bench over NCCL on one GPU (a
#       1-rank communicator: nccl-tests' table, algbw; busbw is 0 with one
#       rank); the bf16 parity training with communication overlap off
#       (debug.no_comm_overlap) against overlap on (the same bits, and both
#       step times: one GPU has no collectives to overlap, so this checks
#       that the scheduler changes nothing there); CUDA graphs off against
#       on (the same bits); training.enable_cpu_offload against the
#       device's state (1e-3 over 20 steps: only AdamW's rounding on the
#       host differs); Float8 tensorwise and rowwise parity (2e-2 over
#       8 steps);
#   (d) kernels: GEMMs (bf16 and FP8), attention and the fused kernels at
#       8B shapes, against torch.matmul, torch._scaled_mm, PyTorch's SDPA
#       (default and deterministic backward) and the copy bandwidth, two
#       interleaved rounds of each side;
#   (e) the generated-kernel tests' kernels against their CPU results:
#       their steps (AdamW, the cross-entropy and loss parallel's pieces,
#       Float8's casts, the loss's gradients, RMSNorm's backward, RoPE) run
#       on the GPU and on the host from one input, their arenas compared
#       byte for byte, and the tests' PyTorch
#       references run on the GPU's (Float8's whole arena, SwiGLU's output
#       and the casts, must equal the host's bits;
#       the step's other generated kernels meet the CPU's in (a)'s and
#       (c)'s parity runs);
#   (f) compute-sanitizer: memcheck, racecheck and initcheck on the kernel
#       tests, memcheck on 2 steps of the f32 parity training (skipped where
#       compute-sanitizer does not support the GPU).
# The limits of (a) and (b) add up to 400 s, so one call reaches the step
# rows with 20 s left for what runs between checks (the dry run's limits
# are summed and checked by check-bundle.sh, ctest gpu-bundle). The rest
# runs in further calls, each a fresh scratch folder, with TITAN_GPU_ONLY:
#   TITAN_GPU_ONLY='^(train-bf16|cuda-collective|nccl-bench|overlap-|graphs-|offload-|train-f8|parity-f8|kernels-)'
#     (c) and (d), 375 s of limits (train-bf16 again: the comparisons read
#     its metrics);
#   TITAN_GPU_ONLY='^(generated|memcheck|racecheck|initcheck)-'   (e) and
#     (f), 335 s.
# CUDA executables run with TITAN_CUDNN_FALLBACK_FATAL=1 (below).
# After every check it rewrites, in $TITAN_GPU_OUT (default: the device
# tool's $OUT, whose files come back, else /tmp/titan-gpu-out), exactly
# three files: summary.md (the checks so far, the numerics errors, the
# tables that have their inputs), results.json (the same, machine-readable)
# and logs.tar.gz (every check's log), so a run cut off still reports;
# exits 1 when a check failed or timed out.
# Working files (the unpacked bundle, training dump folders, JSON lines)
# stay in a scratch folder outside it. Commit summary.md under
# bench/results/ with the date and the GPU.
#
# `--dry-run` (any machine, no GPU): unpacks the bundle, checks that its
# libraries resolve, prints where each CUDA library comes from, runs the
# cuDNN version check, and goes through every check without running it
# ("planned", with its limit), writing the three files into $TITAN_GPU_OUT
# (default: a new temporary folder), which it then lists.
#
# Libraries: the bundle's own, then /usr/local/cuda's (TITAN_GPU_CUDA_LIBS,
# ':'-separated, replaces them), then the `nvidia/*/lib` folders of the
# python3 that holds PyTorch, where the GPU machine has cuDNN, NCCL and
# cuBLAS as NVIDIA's wheels (TITAN_GPU_WHEEL_LIBS replaces them).
# TITAN_GPU_ONLY, an extended regular expression, runs only the checks
# whose names match (the calls above; '^step-' reruns the step alone).
set -uo pipefail
cd "$(dirname "$0")/../.."
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
if [ "$dry" = 1 ]; then
  outdir=${TITAN_GPU_OUT:-$(mktemp -d)}
else
  outdir=${TITAN_GPU_OUT:-${OUT:-/tmp/titan-gpu-out}}
fi
began=$(date +%s)
# The bundle travels packed; unpack it outside the working tree, beside the
# check's other working files.
packed=${TITAN_GPU_CARRY:-.gpu-bundle}/bundle.tar.gz
[ -f "$packed" ] || { echo "run: no $packed; run bench/gpu/bundle.sh on the build machine" >&2; exit 1; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/titan-gpu.XXXXXX")
mkdir -p "$scratch/logs"
tar -C "$scratch" -xzf "$packed" || { echo "run: cannot unpack $packed" >&2; exit 1; }
bundle=$scratch/bundle
data=$bundle/data
py=$(command -v python3)
for f in bench/gpu/report.py bench/gpu/torch_kernels.py bench/gpu/torch_llama_step.py "$data/cpu-f32.jsonl"; do
  [ -f "$f" ] || { echo "run: $f is missing" >&2; exit 1; }
done

# PyTorch's Python runs under its own library path (its wheels' RPATHs);
# titan's executables under the bundle's, CUDA's and those wheels' folders.
export TITAN_ORIGINAL_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
wheel_libs=${TITAN_GPU_WHEEL_LIBS-$("$py" - 2>/dev/null <<'PY'
import glob, os, site
roots = {os.path.join(d, "nvidia") for d in site.getsitepackages() + [site.getusersitepackages()]}
try:
    import nvidia  # a namespace package: every folder named nvidia on the path
    roots.update(nvidia.__path__)
except ImportError:
    pass
print(":".join(sorted({p for r in roots for p in glob.glob(os.path.join(r, "*", "lib"))
                       if os.path.isdir(p)})))
PY
)}
cuda_libs=${TITAN_GPU_CUDA_LIBS-/usr/local/cuda/lib64:/usr/local/cuda/lib}
export LD_LIBRARY_PATH="$bundle/lib${cuda_libs:+:$cuda_libs}${wheel_libs:+:$wheel_libs}${TITAN_ORIGINAL_LD_LIBRARY_PATH:+:$TITAN_ORIGINAL_LD_LIBRARY_PATH}"
# Open MPI from the bundle: its components, and a singleton rank that starts
# no orted.
export OMPI_MCA_mca_base_component_path="$bundle/openmpi"
export OMPI_MCA_ess_singleton_isolated=1
[ -d "$bundle/openmpi-share" ] && export OPAL_PKGDATADIR="$bundle/openmpi-share"
# cuDNN attention that would fall back to the exact O(S^2) kernels stops
# titan's CUDA executables with an error instead: every check here means
# cuDNN's attention (the parity runs, the kernel test and bench, the step,
# whose seq 8192 the exact kernels would also make far slower), and a
# silent fallback would pass the numerics and mislead the tables.
export TITAN_CUDNN_FALLBACK_FATAL=1
# Each cuDNN graph's engine and workspace in the logs (once per graph).
export TITAN_CUDNN_LOG=1

mkdir -p "$outdir" && rm -rf "${outdir:?}"/*
{
  echo "bundle: $(cat "$data/bundle.txt" 2>/dev/null)"
  echo "wheel library folders: ${wheel_libs:-none}"
  echo "CUDA library folders: ${cuda_libs:-none}"
  echo "8B-shaped step: $(cat "$data/step-8b-layers.txt") layers; titan's planned arena: $(cat "$data/step-8b-memory.txt" 2>/dev/null)"
} > "$scratch/env.txt"
# summary.md, results.json and logs.tar.gz, rewritten whole after every
# check (the tarball staged in the scratch folder, then moved).
write_summary() {
  "$py" bench/gpu/report.py summary "$scratch" "$outdir" ||
    echo "run: the summary could not be written" >&2
  tar -C "$scratch" -czf "$scratch/logs.tar.gz" logs env.txt checks.jsonl 2>/dev/null
  mv "$scratch/logs.tar.gz" "$outdir/logs.tar.gz"
}
row() { # name, verdict, seconds, limit, detail
  printf '{"name": "%s", "verdict": "%s", "seconds": %s, "limit": %s, "detail": "%s"}\n' \
    "$1" "$2" "$3" "$4" "$(printf '%s' "$5" | tr -d '"\\' | tr '\n\t\r' '   ')" >> "$scratch/checks.jsonl"
}
touch "$scratch/checks.jsonl"

# Where the dynamic linker finds each library, CUDA's named; none missing.
ldd "$bundle"/bin/* "$bundle"/lib/libtitanrt_comm.so "$bundle"/lib/libtitanrt_nccl.so "$bundle"/lib/generated-*-cpu.so 2>/dev/null |
  awk '/=>/ {print $1, ($3 == "not" ? "not found" : $3)}' | sort -u > "$scratch/logs/libraries.log"
grep -E '^lib(cuda|cublas|cudnn|nccl|nvrtc|nvJitLink)' "$scratch/logs/libraries.log" | tee -a "$scratch/env.txt"
missing=$(grep 'not found' "$scratch/logs/libraries.log")
if [ -n "$missing" ]; then
  echo "run: libraries not found on this machine:" >&2
  echo "$missing" >&2
  row libraries FAIL 0 0 "not found: $(echo "$missing" | cut -d' ' -f1 | tr '\n' ' ')"
  write_summary
  exit 1
fi
row libraries ok 0 0 "every library resolves"

if [ "$dry" = 0 ]; then
  {
    command -v nvidia-smi >/dev/null &&
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    LD_LIBRARY_PATH=$TITAN_ORIGINAL_LD_LIBRARY_PATH "$py" -c \
      "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  } >> "$scratch/env.txt" 2>&1
  cat "$scratch/env.txt"
fi
budget=${TITAN_GPU_BUDGET:-420}
check() { # name, limit in seconds, command... (exit 77: skipped)
  local name=$1 limit=$2; shift 2
  local start end rc left verdict detail
  if [ -n "${TITAN_GPU_ONLY:-}" ] && ! [[ $name =~ $TITAN_GPU_ONLY ]]; then
    return
  fi
  left=$(( budget - ($(date +%s) - began) ))
  if [ "$dry" = 1 ] && [ "$name" != cudnn-version ]; then
    row "$name" planned 0 "$limit" "$*"
    : > "$scratch/logs/$name.log"
    write_summary
    return
  fi
  if [ "$left" -lt 10 ]; then
    row "$name" "no time" 0 "$limit" "${left}s of the budget left"
    write_summary
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  start=$(date +%s%N)
  # Through bash, so the exported shell functions below run under timeout.
  timeout --kill-after=5 "$limit" bash -c '"$@"' bash "$@" > "$scratch/logs/$name.log" 2>&1
  rc=$?
  end=$(date +%s%N)
  echo "== $name (exit $rc)"; tail -n 12 "$scratch/logs/$name.log"
  verdict=FAIL
  [ $rc = 0 ] && verdict=ok
  [ $rc = 77 ] && verdict=skipped
  [ $rc = 124 ] || [ $rc = 137 ] && verdict=timeout
  detail=$(grep '^detail: ' "$scratch/logs/$name.log" | tail -n 1 | cut -c9-)
  [ -z "$detail" ] && [ $rc != 0 ] && detail="exit $rc"
  row "$name" "$verdict" "$(( (end - start) / 1000000 ))e-3" "$limit" "$detail"
  write_summary
}
train() { # executable, output folder, extra arguments ($TITAN_RUNNER wraps it)
  local exe=$1 dir=$2; shift 2
  ${TITAN_RUNNER:-} "$bundle/bin/$exe" --training.dataset_path "$data/tokens.bin" \
    --checkpoint.initial_load_path "$data/w0.safetensors" --job.dump_folder "$dir" "$@"
}
bundled() { # executable, arguments ($TITAN_RUNNER wraps it)
  local exe=$1; shift
  ${TITAN_RUNNER:-} "$bundle/bin/$exe" "$@"
}
torch_py() { # python3 with PyTorch's own library path
  LD_LIBRARY_PATH=$TITAN_ORIGINAL_LD_LIBRARY_PATH "$py" "$@"
}
kernels() { # side (titan or torch), round: one JSON line per kernel
  if [ "$1" = titan ]; then
    "$bundle/bin/TitanCudaKernelBench" > "$scratch/kernels-titan-$2.jsonl"
  else
    torch_py bench/gpu/torch_kernels.py > "$scratch/kernels-torch-$2.jsonl"
  fi
}
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
  /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1)
sanitize() { # tool, command (train or bundled)...: its program under compute-sanitizer
  local tool=$1 log rc errors unsupported
  shift
  [ -n "$sanitizer" ] || { echo "detail: no compute-sanitizer on this machine"; exit 77; }
  log=$(mktemp "$scratch/sanitizer.XXXXXX")
  TITAN_RUNNER="$sanitizer --tool $tool --print-limit 20" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  errors=$(grep -oE 'ERROR SUMMARY: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+$')
  # A compute-sanitizer that does not support this GPU says so on its own
  # lines (prefixed "========="; "Device not supported", "not supported on
  # this device") and checks nothing: skipped, not failed. The program's own
  # output (a cuDNN refusal, a gtest failure) is not compute-sanitizer's
  # word; memcheck's reports of API calls that returned "operation not
  # supported" ("Program hit ...") are findings, and so is any error counted.
  unsupported=$(grep -iE '^=+ .*not supported' "$log" | grep -v 'Program hit' | head -n 1 | sed 's/^=* *//')
  rm -f "$log"
  [ "$rc" = 77 ] && exit 77
  if [ -n "$unsupported" ] && [ "${errors:-0}" = 0 ]; then
    echo "detail: compute-sanitizer: $unsupported (exit $rc)"
    exit 77
  fi
  if [ -z "$errors" ]; then
    echo "detail: no ERROR SUMMARY (exit $rc)"
    exit 1
  fi
  echo "detail: $errors errors (exit $rc)"
  [ "$errors" = 0 ] && [ "$rc" = 0 ]
}
nccl_bench() { # one rank, no mpirun: nccl-tests' sizes 8 B to 256 MiB by 4x
  bundled titan-comm-bench --backend nccl -b 8 -e 256M -f 4 -n 20 -w 5 -d bfloat16 \
    --json "$scratch/comm-nccl.json" || exit 1
  "$py" bench/gpu/report.py collectives "$scratch/comm-nccl.json"
}
generated() { # test: its step on the GPU and on the host from one input
  local t=$1 dir=$scratch/generated-$1 checker=$data/generated/$1/check.py
  local arenas verdict
  mkdir -p "$dir"
  torch_py "$checker" inputs "$dir/in.bin" || exit 1
  bundled TitanCudaGeneratedStep "$bundle/lib/generated-$t-cuda.so" "$dir/in.bin" "$dir/gpu.bin" || exit 1
  OMP_NUM_THREADS=2 bundled TitanGeneratedStepHost "$bundle/lib/generated-$t-cpu.so" "$dir/in.bin" "$dir/cpu.bin" || exit 1
  # Float8's references need the library's codes, which only its test's
  # own harness writes: its casts must be the host's bit for bit.
  if [ "$t" = float8 ]; then
    "$py" bench/gpu/report.py arenas "$dir/gpu.bin" "$dir/cpu.bin" exact
    exit
  fi
  arenas=$("$py" bench/gpu/report.py arenas "$dir/gpu.bin" "$dir/cpu.bin" | sed -n 's/^detail: //p')
  echo "$arenas"
  torch_py "$checker" compare "$dir/gpu.bin" && verdict=PASS || verdict=FAIL
  echo "detail: $arenas; the test's references on the GPU's: $verdict"
  [ "$verdict" = PASS ]
}
no_overlap() { # skipped (77) where titan-compile had no debug.no_comm_overlap
  [ -f "$data/no-overlap-missing.txt" ] && { echo "detail: $(cat "$data/no-overlap-missing.txt")"; exit 77; }
  if [ "$1" = train ]; then
    train parity-bf16-no-overlap "$scratch/bf16-no-overlap"
  else
    "$py" bench/gpu/report.py overlap "$scratch/bf16/metrics.jsonl" "$scratch/bf16-no-overlap/metrics.jsonl" 20
  fi
}
layers=$(cat "$data/step-8b-layers.txt")
tokens=$scratch/tokens-128k.bin
step_titan() { # round [executable label]
  local exe=${2:-step-8b} label=${3:-titan --target=cuda}
  "$bundle/bin/$exe" --training.dataset_path "$tokens" --training.steps 10 \
    --metrics.peak_tflops 989 --job.dump_folder "$scratch/step-titan-$1" &&
  "$py" bench/gpu/report.py titan-step "$scratch/step-titan-$1/metrics.jsonl" 3 "$label" > "$scratch/step-titan-$1.json"
}
step_torch() { # mode
  torch_py bench/gpu/torch_llama_step.py --mode "$1" --layers "$layers" --steps 7 > "$scratch/step-$1.json"
}
export bundle data scratch py sanitizer tokens layers
nccl_torchrun() { # the same test started by PyTorch's torchrun: NCCL's ranks
  # meet at titan's TCP store, without MPI (the worker keeps the bundle's
  # library path; torchrun itself runs with PyTorch's)
  torch_py -m torch.distributed.run --standalone --nproc_per_node 1 --no_python \
    env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" "$bundle/bin/TitanNCCLCommunicatorTest"
}
export -f train bundled torch_py nccl_torchrun kernels sanitize nccl_bench generated no_overlap step_titan step_torch

# The limits: what each check should take on an H200, with room. The first
# call must reach the last step row: (a) and (b) add up to 400 s.
# (a) The numerics that gate everything, 115 s. The cuDNN check dlopens
# cuDNN and imports torch afresh (a few seconds; the environment line above
# imported it already); the kernel test is 34 tests at small shapes, mostly
# the CUDA context, cuBLASLt and cuDNN loading and cuDNN's graph builds;
# NCCL's init of one rank takes 1-3 s; the parity model's steps take
# milliseconds, its runs are the start (context, handles, plans, the graphs'
# capture, ~5 s); a comparison reads two small files.
check cudnn-version 15 "$py" bench/gpu/report.py cudnn "$data/cudnn-built.txt"
check cuda-kernels 35 bundled TitanCudaKernelTest
check nccl-communicator-1 15 bundled TitanNCCLCommunicatorTest
check train-f32 20 train parity-f32 "$scratch/f32"
check parity-f32-vs-cpu 5 "$py" bench/gpu/report.py compare "$scratch/f32/metrics.jsonl" "$data/cpu-f32.jsonl" 1e-4 8
check train-bf16 20 train parity-bf16 "$scratch/bf16"
check parity-bf16-vs-cpu 5 "$py" bench/gpu/report.py compare "$scratch/bf16/metrics.jsonl" "$data/cpu-bf16.jsonl" 1e-2 20

# (b) The step, interleaved: titan, eager, compiled, titan again; then
# Float8. 285 s. A step (seq 8192, 16 layers: ~250 TFLOP with attention)
# takes ~0.6 s at 40% of the H200's 989 bf16 TFLOP/s, ~1 s at 25%, so 10
# steps ~10 s; the rest is the start. titan: 4.5 B parameters drawn on the
# CPU's 16 cores (~5 s), 18 GB copied to the GPU, the first step eager and
# the second captured (~25 s in all; 50 s cold, 35 s warm, 40 s for Float8's
# extra casts and cuBLASLt's FP8 heuristics). PyTorch: import (~5 s), the
# model built and initialized on the GPU (seconds), 10 steps: ~20 s; 45 s
# leaves room for cuDNN's and cuBLAS's first-use setup; torch.compile adds
# the whole 16-layer
# model's forward and backward through Dynamo, AOTAutograd, Inductor and
# Triton with an empty cache (~60 s; the identical layers share kernels):
# 115 s.
[ "$dry" = 1 ] || "$py" - "$tokens" <<'PY'
import array, random, sys
random.seed(3)
array.array("I", (random.randrange(128256) for _ in range(1 << 20))).tofile(open(sys.argv[1], "wb"))
PY
check step-titan-1 50 step_titan 1
check step-torch-eager 45 step_torch eager
check step-torch-compile 115 step_torch compile
check step-titan-2 35 step_titan 2
check step-titan-fp8 40 step_titan fp8 step-8b-fp8 "titan --target=cuda float8"

# (c) The rest of the numerics, 200 s: async TP's collective matmuls
# through the kernel ABI on a ring of one (linear and Float8, against the
# host's GEMMs: the CUDA context and cuBLASLt's plans, 20 s); NCCL's init
# and 13 sizes of four collectives on one rank; the NCCL communicator test
# started by torchrun (the TCP store, no MPI); parity runs and
# comparisons as in (a).
check cuda-collective-matmuls 20 bundled TitanCudaCollectiveMatmulTest
check nccl-bench 30 nccl_bench
check nccl-torchrun-1 25 nccl_torchrun
check train-bf16-no-overlap 20 no_overlap train
check overlap-vs-no-overlap 5 no_overlap compare
check train-bf16-eager 20 train parity-bf16 "$scratch/bf16-eager" --debug.no_cuda_graphs
check graphs-vs-eager 5 "$py" bench/gpu/report.py compare "$scratch/bf16/metrics.jsonl" "$scratch/bf16-eager/metrics.jsonl" 0 20
check train-bf16-offload 20 train parity-bf16-offload "$scratch/bf16-offload"
check offload-vs-device 5 "$py" bench/gpu/report.py compare "$scratch/bf16-offload/metrics.jsonl" "$scratch/bf16/metrics.jsonl" 1e-3 20
for recipe in tensorwise rowwise; do
  check train-f8-$recipe 20 train parity-f8-$recipe "$scratch/f8-$recipe"
  check parity-f8-$recipe-vs-cpu 5 "$py" bench/gpu/report.py compare "$scratch/f8-$recipe/metrics.jsonl" "$data/cpu-f8-$recipe.jsonl" 2e-2 8
done

# (d) Kernels, interleaved: titan, PyTorch, titan, PyTorch. 45 s each: the
# start (PyTorch's import, cuBLASLt's and cuDNN's plans) and 55 timed calls
# of each kernel at 8B shapes.
for round in 1 2; do
  check kernels-titan-$round 45 kernels titan $round
  check kernels-torch-$round 45 kernels torch $round
done

# (e) The generated kernels against their CPU results, 140 s: each test's
# inputs and references import PyTorch (~5 s each), the GPU's run is the
# CUDA context and one launch a kernel, the host's milliseconds.
for t in adamw cross-entropy float8 loss-grad loss-parallel rms-norm-grad rope; do
  check generated-$t 20 generated $t
done

# (f) compute-sanitizer, 195 s. memcheck runs every kernel test. racecheck
# (shared memory hazards, the slowest tool) and initcheck skip the tests
# whose kernels are cuBLAS's, cuBLASLt's and cuDNN's (GEMMs, FP8 scaled
# matmuls, cuDNN attention, context attention's cuDNN pairs): they are not
# titan's code, would take most of the limit, and initcheck reports
# library-internal reads of workspaces.
library_tests='-*Cudnn*:*Pairs*:*Gemm*:*ScaledMatmul*'
check memcheck-kernels 60 sanitize memcheck bundled TitanCudaKernelTest
check racecheck-kernels 45 sanitize racecheck bundled TitanCudaKernelTest --gtest_filter="$library_tests"
check initcheck-kernels 45 sanitize initcheck bundled TitanCudaKernelTest --gtest_filter="$library_tests"
check memcheck-train-f32 45 sanitize memcheck train parity-f32 "$scratch/f32-memcheck" --training.steps 2

cat "$outdir/summary.md"
if [ "$dry" = 1 ]; then
  echo "dry run: python $py; the files it leaves in $outdir:"
  (cd "$outdir" && find . -type f | sort)
fi
# Exit 1 when a check failed or ran out of its time.
failed=$(grep -cE '"verdict": "(FAIL|timeout)"' "$scratch/checks.jsonl")
rm -rf "$scratch"
[ "$failed" = 0 ]
