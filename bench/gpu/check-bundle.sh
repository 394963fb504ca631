#!/usr/bin/env bash
# ctest gpu-bundle (any machine with the CUDA target built; no GPU): packs
# the GPU check with bundle.sh (without the 8B step executables, the
# slowest to compile) into a temporary folder, then dry-runs it with run.sh
# as the GPU machine would load it: CUDA's libraries only from "wheel
# folders" laid out as NVIDIA's wheels lay them out (nvidia/cu13/lib,
# nvidia/cudnn/lib, nvidia/nccl/lib; here links to this build's CUDA
# libraries), none from /usr/local/cuda. Checks that
#   - the bundle is under the device tool's 64 MiB;
#   - every library resolves, each CUDA one from a wheel folder;
#   - the cuDNN there is one the bundle's headers accept;
#   - run.sh leaves at most 8 files, at most 2 folders deep, in $OUT:
#     summary.md, results.json and logs.tar.gz;
#   - one call reaches the 8B step rows: the planned checks' limits, summed
#     in run.sh's order through step-titan-fp8, plus 20 s for what runs
#     between checks, are within the 420-second budget, and the step rows
#     come after the numerics that gate everything and before the kernel
#     bench and the sanitizers.
# Leaves nothing in the source tree.
set -euo pipefail
build=$(cd "${1:?usage: check-bundle.sh BUILD_FOLDER}" && pwd)
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-bundle: FAIL: $*" >&2; exit 1; }

TITAN_BUILD=$build TITAN_GPU_CARRY=$tmp/carry TITAN_BUNDLE_NO_STEP=1 \
  bash bench/gpu/bundle.sh
bytes=$(stat -c %s "$tmp/carry/bundle.tar.gz")
[ "$bytes" -lt $((64 * 1048576)) ] || fail "bundle is $bytes bytes, over 64 MiB"

# The wheel folders: this build's CUDA, cuDNN and NCCL libraries (the
# folders CMake found them in), split as the wheels split them.
cache_dir() { dirname "$(sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt")"; }
site=$tmp/site-packages/nvidia
mkdir -p "$site/cu13/lib" "$site/cudnn/lib" "$site/nccl/lib"
for dir in $(for v in CUDA_cudart_LIBRARY CUDA_cublas_LIBRARY CUDA_nvrtc_LIBRARY \
                      CUDNN_LIBRARY NCCL_LIBRARY; do cache_dir $v; done | sort -u); do
  for lib in "$dir"/lib{cudart,cublas,cublasLt,nvrtc,nvrtc-builtins,nvJitLink,cudnn,nccl}*.so.*; do
    [ -e "$lib" ] || continue
    case "$(basename "$lib")" in
      libcudnn*) wheel=cudnn ;;
      libnccl*) wheel=nccl ;;
      *) wheel=cu13 ;;
    esac
    ln -sf "$(readlink -f "$lib")" "$site/$wheel/lib/$(basename "$lib")"
  done
done

# Every check planned (no TITAN_GPU_ONLY from the caller's environment).
env -u TITAN_GPU_ONLY TITAN_GPU_CARRY="$tmp/carry" TITAN_GPU_CUDA_LIBS= \
  TITAN_GPU_WHEEL_LIBS="$site/cu13/lib:$site/cudnn/lib:$site/nccl/lib" \
  TITAN_GPU_OUT="$tmp/out" TMPDIR="$tmp" bash bench/gpu/run.sh --dry-run | tee "$tmp/dry.log" ||
  fail "run.sh --dry-run exited $?"

# Each CUDA library from a wheel folder (the loader's cache would find
# this machine's copies anyway: the paths tell).
cuda=$(grep -E '^lib(cudart|cublas|cudnn|nccl|nvrtc|nvJitLink)' "$tmp/dry.log" || true)
[ -n "$cuda" ] || fail "run.sh named no CUDA library"
stray=$(echo "$cuda" | awk -v site="$site/" 'index($2, site) != 1')
[ -z "$stray" ] || fail "CUDA libraries not from the wheel folders: $stray"

files=$(cd "$tmp/out" && find . -type f | sort | tr '\n' ' ')
count=$(find "$tmp/out" -type f | wc -l)
[ "$count" -le 8 ] || fail "run.sh leaves $count files in \$OUT: $files"
[ -z "$(find "$tmp/out" -mindepth 3 -type d)" ] || fail "folders past 2 deep in \$OUT"
for f in summary.md results.json logs.tar.gz; do
  [ -s "$tmp/out/$f" ] || fail "no $f in \$OUT ($files)"
done
python3 - "$tmp/out/results.json" <<'PY' || fail "results.json: unexpected checks"
import json, sys
checks = json.load(open(sys.argv[1]))["checks"]
verdicts = {c["name"]: c["verdict"] for c in checks}
assert verdicts.pop("libraries") == "ok", "libraries"
assert verdicts.pop("cudnn-version") == "ok", "cudnn-version"
assert len(verdicts) > 20 and set(verdicts.values()) == {"planned"}, verdicts
PY
# The first call's plan, from each check's limit in run.sh's order: the
# budget is the 420 s run.sh gives itself inside the device tool's 600-s
# call, less 20 s for what runs between checks (unpacking, the library
# check, PyTorch's version, the token file, a summary after each check).
python3 - "$tmp/out/results.json" <<'PY' || fail "the first call does not reach the step rows (above)"
import json, re, sys
budget, between = 420, 20
checks = json.load(open(sys.argv[1]))["checks"]
names = [c["name"] for c in checks]
gating = ["cudnn-version", "cuda-kernels", "nccl-communicator-1", "train-f32", "parity-f32-vs-cpu",
          "train-bf16", "parity-bf16-vs-cpu"]
steps = ["step-titan-1", "step-torch-eager", "step-torch-compile", "step-titan-2", "step-titan-fp8"]
problems = [f"no check {n}" for n in gating + steps if n not in names]
if not problems:
    at = names.index
    last = at("step-titan-fp8")
    used = sum(float(c["limit"]) for c in checks[:last + 1])
    plan = ", ".join(f"{c['name']} {c['limit']}" for c in checks[1:last + 1])
    if used + between > budget:
        problems.append(f"the limits through step-titan-fp8 add up to {used:g} s; with {between} s "
                        f"between checks that is over the {budget}-s budget by {used + between - budget:g} s "
                        f"({plan})")
    first_step = min(at(n) for n in steps)
    late = [n for n in gating if at(n) > first_step]
    if late:
        problems.append(f"{', '.join(late)} after the first step row {names[first_step]}")
    later = [n for n in names if re.match(r"(memcheck|racecheck|initcheck|kernels)-", n)]
    early = [n for n in later if at(n) < last]
    if early:
        problems.append(f"{', '.join(early)} before the last step row step-titan-fp8")
    sanitizers = [at(n) for n in names if re.match(r"(memcheck|racecheck|initcheck)-", n)]
    bench = [at(n) for n in names if n.startswith("kernels-")]
    if sanitizers and bench and min(sanitizers) < max(bench):
        problems.append("a sanitizer check before the kernel bench")
    if not sanitizers:
        problems.append("no sanitizer checks")
for p in problems:
    print("check-bundle: " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
# grep -c reads all of tar's listing: grep -q could stop early and fail
# tar with SIGPIPE under pipefail.
tar -tzf "$tmp/out/logs.tar.gz" | grep -c 'logs/libraries.log' > /dev/null || fail "logs.tar.gz has no logs"
echo "check-bundle: ok: $((bytes / 1048576)) MiB bundle, $count files in \$OUT ($files); the step rows within the first call's budget"
