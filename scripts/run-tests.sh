#!/usr/bin/env bash
# README command 2: set up the machine, build, and run the whole test suite
# (lit + unit tests via ctest), then the same suite again on a CPU-only
# AddressSanitizer build (compiler, runtime and the training executables the
# tests compile; LLVM_USE_SANITIZER asks for UBSan too, whose flags
# LLVM_UBSAN_FLAGS Debian's LLVM CMake files do not define: not applied yet,
# docs/testing.md), then a smoke run of each fuzz
# target under libFuzzer (scripts/fuzz.sh: clang, ASan + UBSan,
# TITAN_FUZZ_SECONDS each). TITAN_SKIP_SANITIZERS=1 skips the second and
# third passes.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TITAN_TEST_JOBS:-$(nproc)}
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$jobs"
[ "${TITAN_SKIP_SANITIZERS:-0}" = 1 ] && exit 0

echo "== sanitized build (ASan, CPU target) =="
TITAN_BUILD_DIR=build-sanitize TITAN_ENABLE_CUDA=OFF \
  TITAN_SANITIZER="Address;Undefined" bash scripts/build.sh
# detect_leaks=0: Open MPI unloads its plugins at finalize, and what they
# keep until exit then has no module a suppression could name.
# allow_user_poisoning=0: Debian's LLVM/MLIR libraries are not instrumented,
# and LLVM's allocators poison memory only from instrumented inline code, so
# the mix reports use-after-poison on valid memory.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir build-sanitize --output-on-failure -j "$jobs"

echo "== fuzz smoke (libFuzzer, clang-22, ASan + UBSan) =="
bash scripts/fuzz.sh smoke
