#!/usr/bin/env bash
# Installs everything titan's build and test suite need on Debian 12. Idempotent:
# when every package is already present it does nothing (and needs no network).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache git
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools   # MLIR, lit, FileCheck
  libzstd-dev zlib1g-dev libxml2-dev libcurl4-openssl-dev libedit-dev  # LLVM link deps
  libtomlplusplus-dev                                       # TOML configs
  libdnnl-dev libopenblas-dev                               # CPU GEMMs (f32, f64)
  libopenmpi-dev openmpi-bin                                # MPI ranks
  libgtest-dev                                              # runtime unit tests
  libpcre2-dev                                              # tokenizer split regex
  libxxhash-dev                                             # checkpoint checksums
  libboost-dev                                              # CRC32C (TensorBoard records)
  python3-torch python3-venv                                # independent reference
  clang-22 libclang-rt-22-dev                               # the sanitized build and libFuzzer (scripts/build-sanitized.sh)
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

# The CUDA target's attention uses cuDNN through its header-only C++ API,
# cudnn-frontend, whose headers ship in PyPI's nvidia-cudnn-frontend wheel:
# unpacked into .deps/ (only where the CUDA toolkit is installed).
frontend_version=1.32.0
frontend=.deps/cudnn-frontend
if { command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; } &&
   [ ! -f "$frontend/include/cudnn_frontend.h" ]; then
  echo "setup: fetching cudnn-frontend $frontend_version headers (PyPI)"
  py=$(command -v python3)
  tmp=$(mktemp -d)
  if "$py" -m pip download --quiet --no-deps --dest "$tmp" \
       "nvidia-cudnn-frontend==$frontend_version"; then
    rm -rf "$frontend" && mkdir -p "$frontend"
    "$py" - "$tmp" "$frontend" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("include/"):
            z.extract(name, sys.argv[2])
PY
  else
    echo "setup: warning: could not fetch nvidia-cudnn-frontend; the CUDA target's attention will use its exact kernels" >&2
  fi
  rm -rf "$tmp"
fi

# The PyPI packages the suite compares titan with (transformers, tokenizers,
# tiktoken, tensorboard) go into .venv, which also sees Debian's torch.
# Reinstalled only when scripts/requirements-test.txt changes.
venv=.venv
requirements=scripts/requirements-test.txt
stamp="$venv/.requirements"
if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
  echo "setup: installing $requirements into $venv (PyPI)"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  # Meta's Llama 3 tokenizer.model (test/Data/llama3-tokenizer.test) as
  # llama-models ships it; only the file is used, not its dependencies.
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    llama-models==0.3.0
  cp "$requirements" "$stamp"
fi
