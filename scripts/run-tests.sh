#!/usr/bin/env bash
# README command 2: set up the machine, build, and run the whole test suite
# (lit + unit tests via ctest), then the same suite again on the sanitized
# build (scripts/build-sanitized.sh: clang, AddressSanitizer +
# UndefinedBehaviorSanitizer on the compiler, the runtime and the training
# executables the tests compile), whose ctest also runs each fuzz target
# under libFuzzer for TITAN_FUZZ_SECONDS (ctest -L fuzz; scripts/fuzz.sh).
# TITAN_SKIP_SANITIZERS=1 skips the second pass.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TITAN_TEST_JOBS:-$(nproc)}
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$jobs"
[ "${TITAN_SKIP_SANITIZERS:-0}" = 1 ] && exit 0

echo "== sanitized build (clang: ASan + UBSan, libFuzzer; CPU target) =="
bash scripts/build-sanitized.sh
# detect_leaks=0: Open MPI unloads its plugins at finalize, and what they
# keep until exit then has no module a suppression could name; a refused
# fuzz input's error paths may keep what LLVM's and MLIR's uninstrumented
# libraries allocate.
# allow_user_poisoning=0: Debian's LLVM/MLIR libraries are not instrumented,
# and LLVM's allocators poison memory only from instrumented inline code, so
# the mix reports use-after-poison on valid memory.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir build-sanitize --output-on-failure -j "$jobs"
