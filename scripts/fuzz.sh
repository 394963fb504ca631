#!/usr/bin/env bash
# titan's fuzz targets (fuzz/README.md) under libFuzzer, in the sanitized
# build (scripts/build-sanitized.sh: clang-22, AddressSanitizer +
# UndefinedBehaviorSanitizer, assertions, libFuzzer's coverage), then
#   bash scripts/fuzz.sh smoke       runs each target TITAN_FUZZ_SECONDS
#                                    (default 30) from its seeds: ctest -L fuzz
#                                    (scripts/run-tests.sh runs these with
#                                    the rest of the sanitized suite)
#   bash scripts/fuzz.sh campaign [RUNS] [SURFACE...]
#                                    fuzzes each target (default: all) for RUNS
#                                    executions (default 1000000), or
#                                    TITAN_FUZZ_MAX_SECONDS if set and sooner,
#                                    into <build>/campaign/<surface>/corpus
#                                    and prints a line of results per target
# A crash leaves its input in <build>/fuzz/smoke/<surface>/ or
# <build>/campaign/<surface>/; fix it and add that input to
# fuzz/seeds/<surface> (a regression test everywhere).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TITAN_SANITIZE_BUILD_DIR:-build-sanitize}
jobs=${TITAN_BUILD_JOBS:-$(nproc)}
bash scripts/build-sanitized.sh titan-fuzzers

# Leaks are not findings here: a refused input's error paths may keep what
# LLVM's and MLIR's uninstrumented libraries allocate.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mode=${1:-smoke}
case "$mode" in
smoke)
  exec ctest --test-dir "$build" -L fuzz --output-on-failure -j "$jobs" ;;
campaign)
  runs=${2:-1000000}
  shift $(( $# >= 2 ? 2 : $# ))
  surfaces=("$@")
  if [ ${#surfaces[@]} -eq 0 ]; then
    for bin in "$build"/bin/titan-*-fuzzer; do
      name=$(basename "$bin"); name=${name#titan-}; surfaces+=("${name%-fuzzer}")
    done
  fi
  for surface in "${surfaces[@]}"; do
    work=$build/campaign/$surface
    mkdir -p "$work/corpus"
    seeds=("$build/fuzz/tree-seeds/$surface")
    [ -d "fuzz/seeds/$surface" ] && seeds+=("fuzz/seeds/$surface")
    log=$work/fuzz.log
    status=0
    begin=$(date +%s)
    "$build/bin/titan-$surface-fuzzer" -runs="$runs" -timeout=20 \
      -max_total_time="${TITAN_FUZZ_MAX_SECONDS:-0}" \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/" \
      "$work/corpus" "${seeds[@]}" > "$log" 2>&1 || status=$?
    seconds=$(( $(date +%s) - begin ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    files=$(find "$work/corpus" -type f | wc -l)
    bytes=$(du -sb "$work/corpus" | cut -f1)
    findings=$(find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' \
      -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
    echo "$surface: ${execs:-?} executions in ${seconds} s, exit $status," \
      "coverage ${cov:-?} edges / ${ft:-?} features," \
      "corpus $files files / $bytes bytes, findings $findings"
  done ;;
*)
  echo "usage: bash scripts/fuzz.sh [smoke | campaign [RUNS] [SURFACE...]]" >&2
  exit 2 ;;
esac
