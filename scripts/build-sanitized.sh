#!/usr/bin/env bash
# Configures and builds the sanitized build (default ./build-sanitize): the
# CPU target under clang-22 with AddressSanitizer, UndefinedBehaviorSanitizer
# (LLVM's flags), assertions and libFuzzer's coverage. One build serves both
# the suite's sanitized pass (scripts/run-tests.sh) and the fuzz targets
# (scripts/fuzz.sh), whose libFuzzer needs clang. Its CPU kernels run on one
# thread: no OpenMP for clang here (CMakeLists.txt, titan_find_openmp).
#   bash scripts/build-sanitized.sh [TARGET...]   (default: everything)
#   TITAN_SANITIZE_BUILD_DIR  the build folder
#   TITAN_FUZZ_SECONDS        each fuzz target's smoke run (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TITAN_SANITIZE_BUILD_DIR:-build-sanitize}
jobs=${TITAN_BUILD_JOBS:-$(nproc)}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# LLVM's own build defines its UBSan flags (LLVM_UBSAN_FLAGS), its installed
# CMake files do not: these are LLVM's (vptr and function checks off, as
# the RTTI-less LLVM libraries need).
ubsan="-fsanitize=undefined -fno-sanitize=vptr,function -fno-sanitize-recover=all"
fresh=()
# A folder configured by another compiler (an older gcc sanitized build)
# is configured afresh.
if [ -f "$build/CMakeCache.txt" ] &&
  ! grep -q '^CMAKE_CXX_COMPILER:FILEPATH=.*clang++-22$' "$build/CMakeCache.txt"; then
  fresh=(--fresh)
fi
if [ ! -f "$build/build.ninja" ] || [ ${#fresh[@]} -gt 0 ]; then
  CC=clang-22 CXX=clang++-22 cmake "${fresh[@]}" -S . -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DTITAN_ENABLE_CUDA=OFF \
    -DLLVM_USE_SANITIZER="Address;Undefined" -DLLVM_USE_SANITIZE_COVERAGE=ON \
    -DLLVM_UBSAN_FLAGS="$ubsan" \
    -DLLVM_ENABLE_ASSERTIONS=ON \
    ${TITAN_FUZZ_SECONDS:+-DTITAN_FUZZ_SECONDS=$TITAN_FUZZ_SECONDS}
fi
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
