#!/usr/bin/env bash
# Configures and builds titan (Release, ninja, ccache when present).
#   TITAN_BUILD_DIR    the build folder (default ./build)
#   TITAN_ENABLE_CUDA  CUDA is picked up automatically when nvcc is found;
#                      OFF forces a CPU-only build
# The sanitized build (ASan + UBSan, clang) is scripts/build-sanitized.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TITAN_BUILD_JOBS:-$(nproc)}
build=${TITAN_BUILD_DIR:-build}
# ccache keys on paths relative to the checkout, so another clone (CI's, a
# worktree) reuses this one's objects.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    ${TITAN_ENABLE_CUDA:+-DTITAN_ENABLE_CUDA=$TITAN_ENABLE_CUDA}
fi
cmake --build "$build" -j "$jobs"
