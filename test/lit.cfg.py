# -*- Python -*-
# lit configuration for titan's regression suite.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "titan"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.titan_obj_root, "test")
# Performance/: tests that time the machine run one at a time
# (Performance/lit.local.cfg).
lit_config.parallelism_groups["timing"] = 1

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["titan-opt", "titan-compile", "titan-tokenize"], [config.titan_tools_dir]
)

# The host's vector ISA: generated kernels compiled for it run here.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = set(cpuinfo.read().split())
except OSError:
    flags = set()
if {"avx2", "fma"} <= flags:
    config.available_features.add("host-avx2")
if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
    config.available_features.add("host-avx512")

# Paths tests use: the source tree, the built-in models and the presets.
config.substitutions.append(("%titan_src", config.titan_src_root))
config.substitutions.append(
    ("%presets", os.path.join(config.titan_src_root, "models", "llama3", "train_configs"))
)
config.substitutions.append(("%titan_obj", config.titan_obj_root))
# The C++ compiler the build was configured with (not whichever c++ PATH
# finds).
config.substitutions.append(("%cxx", config.titan_cxx_compiler))
# What a test adds when it links a program against the runtime (which a
# sanitized build instruments): the sanitizers' link flags, or nothing.
config.substitutions.append(
    ("%sanitizer_link_flags", config.titan_sanitizer_link_flags)
)
# Tests that read the build's build.ninja: only under the Ninja generator.
if os.path.exists(os.path.join(config.titan_obj_root, "build.ninja")):
    config.available_features.add("ninja")

# lit runs many tests at once on the CI machine's two cores: each compiled
# executable's kernels take one thread (OpenMP's spinning workers would
# fight the other tests' processes). The kernels give the same values for
# any thread count; threads.test checks that with 2.
config.environment["OMP_NUM_THREADS"] = os.environ.get("TITAN_TEST_THREADS", "1")

# A sanitized build (scripts/run-tests.sh's second pass): AddressSanitizer
# reserves terabytes of shadow address space and inflates resident memory,
# so the tests of memory limits and of resident bytes do not apply.
if "Address" in config.titan_sanitizer:
    config.available_features.add("asan")

# The CPU kernels' OpenMP threads (none in the sanitized clang build,
# CMakeLists.txt's titan_find_openmp: its kernels run on one thread).
if not config.titan_kernels_single_threaded:
    config.available_features.add("threaded-kernels")

# The independent PyTorch reference runs on Debian's python3-torch.
import subprocess

reference_python = "/usr/bin/python3"
if (
    subprocess.call(
        [reference_python, "-c", "import torch, tomllib"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    == 0
):
    config.available_features.add("torch")
config.substitutions.append(("%reference_python", reference_python))

# The PyPI references (transformers, tokenizers, tiktoken, tensorboard) run
# in the project's .venv (scripts/setup.sh), which also sees Debian's torch.
test_python = os.path.join(config.titan_src_root, ".venv", "bin", "python")
if os.path.exists(test_python) and (
    subprocess.call(
        [test_python, "-c", "import transformers, tokenizers, tiktoken, tensorboard"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    == 0
):
    config.available_features.add("pypi-refs")
config.substitutions.append(("%test_python", test_python))

# Meta's Llama 3 tokenizer.model, as PyPI's llama-models ships it (installed
# without its dependencies: only the file is used).
if "pypi-refs" in config.available_features:
    llama3_model = subprocess.run(
        [test_python, "-c", "import importlib.util as u, os; "
         "s = u.find_spec('llama_models'); "
         "print(os.path.join(s.submodule_search_locations[0], 'llama3', "
         "'tokenizer.model') if s else '')"],
        capture_output=True, text=True).stdout.strip()
    if llama3_model and os.path.exists(llama3_model):
        config.available_features.add("llama3-tokenizer")
        config.substitutions.append(("%llama3_tokenizer_model", llama3_model))

# Multi-rank tests launch executables with Open MPI, as root in CI.
import shutil

if shutil.which("mpirun"):
    config.available_features.add("mpi")
    for var in ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"):
        config.environment[var] = "1"
    # Ranks of oversubscribed test jobs share the CI machine's two cores.
    config.environment["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
config.substitutions.append(("%mpirun", "mpirun --oversubscribe -np"))

if config.titan_cuda_enabled:
    config.available_features.add("cuda")
    # titan-compile --target=cuda works where libtitanrt_cuda was built.
    if os.path.exists(os.path.join(config.titan_obj_root, "lib", "libtitanrt_cuda.a")):
        config.available_features.add("cuda-target")
    # Tests that run on a GPU: only where one is visible.
    smi = shutil.which("nvidia-smi")
    gpus = subprocess.run([smi, "-L"], capture_output=True, text=True).stdout.count("GPU ") if smi else 0
    if gpus >= 1:
        config.available_features.add("gpu")
    if gpus >= 2:
        config.available_features.add("gpus-2")
