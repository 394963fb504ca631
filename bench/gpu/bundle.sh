#!/usr/bin/env bash
# Packs the GPU checks for a machine that has the CUDA libraries but not
# this build's other dependencies (LLVM, OpenBLAS, Open MPI): the test
# executables, titan's runtime libraries, and every library they load that
# is neither a CUDA library (found there under /usr/local/cuda) nor glibc.
# Writes .gpu-bundle/ (git-ignored), at most 60 MiB, for the device tool's
# `carry`; bench/gpu/run.sh runs it there.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${TITAN_BUILD:-build}
out=.gpu-bundle
tests=("$build/unittests/TitanCudaKernelTest" "$build/unittests/TitanNCCLCommunicatorTest")
for t in "${tests[@]}"; do
  [ -x "$t" ] || { echo "bundle: $t is missing; build with CUDA first (bash scripts/build.sh)" >&2; exit 1; }
done
# The communicator library libtitanrt loads for multi-rank (and NCCL) runs.
plugins=("$build/lib/libtitanrt_comm.so")
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
cp "${tests[@]}" "$out/bin/"
cp "${plugins[@]}" "$out/lib/"
# What the dynamic linker resolves here, minus what the GPU machine has.
ldd "${tests[@]}" "${plugins[@]}" | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
    libcuda*|libcublas*|libcudnn*|libnccl*|libnvrtc*|libnvJitLink*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
# Open MPI's components (the NCCL test bootstraps over MPI, as one singleton
# rank) and its help texts.
mpi_components=$(dirname "$(ldd "${plugins[0]}" | awk '/libmpi.so/ {print $3}')")/openmpi/lib/openmpi3
[ -d "$mpi_components" ] || mpi_components=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
cp -r "$mpi_components" "$out/openmpi"
[ -d /usr/share/openmpi ] && cp -r /usr/share/openmpi "$out/openmpi-share"
grep -qx '/.gpu-bundle/' .git/info/exclude 2>/dev/null || echo '/.gpu-bundle/' >> .git/info/exclude
bytes=$(du -sb "$out" | cut -f1)
echo "bundle: $out, $((bytes / 1048576)) MiB: $(ls "$out/bin" | tr '\n' ' ')"
[ "$bytes" -le $((60 * 1048576)) ] || { echo "bundle: over 60 MiB" >&2; exit 1; }
