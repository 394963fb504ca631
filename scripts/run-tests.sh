#!/usr/bin/env bash
# README command 2: set up the machine, build, and run the whole test suite (lit + unit tests via ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "${TITAN_TEST_JOBS:-$(nproc)}"
