#!/usr/bin/env bash
# The GPU checks, in one run on a lent GPU (see bench/gpu/bundle.sh, which
# packs them here first; the device tool carries .gpu-bundle/):
#   - cuda-kernels: each CUDA kernel against the CPU kernel (so far the
#     cuBLASLt linear GEMMs, f32 and bf16, with accumulation);
#   - nccl-communicator-1: the NCCL communicator's collectives on one GPU.
# Prints a table last. `--dry-run` checks the bundle's libraries resolve
# and says what it would run, on any machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=.gpu-bundle
dry=0
[ "${1:-}" = "--dry-run" ] && dry=1
[ -d "$bundle/bin" ] || { echo "run: no $bundle; run bench/gpu/bundle.sh on the build machine" >&2; exit 1; }
export LD_LIBRARY_PATH="$PWD/$bundle/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
# Open MPI from the bundle: its components, and a singleton rank that starts
# no orted.
export OMPI_MCA_mca_base_component_path="$PWD/$bundle/openmpi"
export OMPI_MCA_ess_singleton_isolated=1
[ -d "$bundle/openmpi-share" ] && export OPAL_PKGDATADIR="$PWD/$bundle/openmpi-share"
missing=$(ldd "$bundle"/bin/* "$bundle"/lib/libtitanrt_comm.so 2>/dev/null | grep 'not found' | sort -u)
if [ -n "$missing" ]; then
  echo "run: libraries not found on this machine:" >&2
  echo "$missing" >&2
  exit 1
fi
if [ "$dry" = 1 ]; then
  echo "dry run: every library resolves; would run:"
  ls "$bundle/bin"
  exit 0
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
declare -a rows
check() { # name, command...
  local name=$1; shift
  local start end rc
  start=$(date +%s.%N)
  "$@" > "/tmp/titan-gpu-$name.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  tail -n 30 "/tmp/titan-gpu-$name.log"
  local verdict=FAIL
  [ $rc = 0 ] && verdict=ok
  [ $rc = 77 ] && verdict=skipped
  rows+=("$(printf '%-22s %-8s %6.1f s' "$name" "$verdict" "$(echo "$end - $start" | bc)")")
}
check cuda-kernels "$bundle/bin/TitanCudaKernelTest"
check nccl-communicator-1 "$bundle/bin/TitanNCCLCommunicatorTest"
echo
printf '%-22s %-8s %8s\n' check result time
printf '%s\n' "${rows[@]}"
