#!/usr/bin/env bash
# Installs everything titan's build and test suite need on Debian 12. Idempotent:
# when every package is already present it does nothing (and needs no network).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache git
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools   # MLIR, lit, FileCheck
  libzstd-dev zlib1g-dev libxml2-dev libcurl4-openssl-dev libedit-dev  # LLVM link deps
  libtomlplusplus-dev                                       # TOML configs
  libopenblas-dev libopenmpi-dev openmpi-bin                # CPU GEMMs, MPI ranks
  libgtest-dev                                              # runtime unit tests
  python3-torch                                             # independent reference
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
