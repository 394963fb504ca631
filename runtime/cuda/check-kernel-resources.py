#!/usr/bin/env python3
"""The CUDA kernels' compiler launcher: runs one nvcc compile and fails it
when a kernel spills registers or uses a stack frame (local memory), unless
ALLOWLIST below names the kernel with its reason.

    check-kernel-resources.py nvcc ARGS... -o OBJECT

CMake runs every .cu of titanrt_cuda_kernels through it
(CUDA_COMPILER_LAUNCHER, runtime/cuda/CMakeLists.txt), with nvcc's
--resource-usage (ptxas -v). ptxas's -warn-lmem-usage made an error by
--Werror all-warnings cannot exempt one kernel of a file, so this check
is the per-kernel one (the files without allowlisted kernels get the ptxas
errors too). Besides the object it leaves
  OBJECT.resources.tsv  every kernel's registers, stack and spills per arch;
  OBJECT.ARCH.ptx       the PTX nvcc generated (check-ptx-packs.py reads it).
The build log gets nvcc's output without ptxas's per-kernel info lines.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Kernel name (the function's own identifier) -> (largest stack frame in
# bytes, why). Spills are never allowlisted.
ALLOWLIST = {
    "ropeAnglesKernel": (
        32,
        "cosf/sinf's Payne-Hanek reduction of arguments past 105615 keeps "
        "its 7-word table in local memory; the angles (position x "
        "frequency) reach that only past 105615 positions",
    ),
    "lrScheduleKernel": (
        40,
        "the cosine decay's double cos (LRSchedule.h, bitwise the CPU's) "
        "keeps its huge-argument reduction's table in local memory; the "
        "argument is in [0, pi], so that path never runs (one thread per "
        "step)",
    ),
}

HOW_TO_ALLOWLIST = (
    "remove the spill/local memory, or (stack only, with the reason) add "
    "the kernel to ALLOWLIST in runtime/cuda/check-kernel-resources.py and "
    "its source to TITAN_CUDA_STACK_SOURCES in runtime/cuda/CMakeLists.txt "
    "(files compiled without ptxas -warn-lmem-usage)"
)

ENTRY = re.compile(r"ptxas info\s*: Compiling entry function '([^']+)' for '(\w+)'")
PROPERTIES = re.compile(r"ptxas info\s*: Function properties for (\S+)")
FRAME = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
USED = re.compile(r"ptxas info\s*: Used (\d+) registers")
CUMULATIVE = re.compile(r"(\d+) bytes cumulative stack size")
LMEM_ERROR = re.compile(
    r"ptxas error\s*: Local memory used for function '([^']+)', "
    r"size of stack frame: (\d+) bytes"
)
SPILL_ERROR = re.compile(
    r"ptxas error\s*: Registers are spilled to local memory in "
    r"function '([^']+)', (\d+) bytes spill stores, (\d+) bytes spill loads"
)
INFO = re.compile(r"^ptxas info\s*:|^\s+\d+ bytes stack frame")


def demangle(names):
    """The demangled names (the mangled ones without a demangler)."""
    tool = shutil.which("c++filt") or shutil.which("llvm-cxxfilt")
    if not tool or not names:
        return list(names)
    out = subprocess.run(
        [tool], input="\n".join(names), capture_output=True, text=True
    ).stdout.split("\n")
    return out[: len(names)] if len(out) >= len(names) else list(names)


def allowlisted(mangled):
    """The ALLOWLIST entry naming `mangled` (Itanium's <length><name>)."""
    for name, entry in ALLOWLIST.items():
        if f"{len(name)}{name}" in mangled:
            return name, entry
    return None, None


def parse(output):
    """Per (function, arch): entry, registers, stack, spills."""
    records, order = {}, []
    arch, current = None, None

    def start(function, entry):
        records[function] = dict(entry=entry, registers=0, stack=0,
                                 cumulative=0, spill_stores=0, spill_loads=0)
        order.append(function)

    for line in output.splitlines():
        m = ENTRY.search(line)
        if m:
            arch = m.group(2)
            current = (m.group(1), arch)
            start(current, True)
            continue
        m = PROPERTIES.search(line)
        if m:
            current = (m.group(1), arch)
            if current not in records:  # a device function ptxas kept
                start(current, False)
            continue
        m = FRAME.search(line)
        if m and current in records:
            r = records[current]
            r["stack"], r["spill_stores"], r["spill_loads"] = map(int, m.groups())
            continue
        m = USED.search(line)
        if m and current in records:
            r = records[current]
            r["registers"] = int(m.group(1))
            c = CUMULATIVE.search(line)
            if c:
                r["cumulative"] = int(c.group(1))
    return [(name, arch, records[(name, arch)]) for name, arch in order]


def object_path(args):
    for i, a in enumerate(args):
        if a == "-o" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("-o") and len(a) > 2 and not a.startswith("-opt"):
            return a[2:]
    return None


def virtual_archs(command):
    """The compute_XX architectures nvcc generates PTX for."""
    return sorted(set(re.findall(r"arch=(compute_\w+)", " ".join(command))))


def keep_ptx(keep, obj, archs):
    """Moves nvcc's kept PTX to OBJECT.ARCH.ptx: nvcc names it X.ARCH.ptx
    when it generates several virtual architectures, X.ptx for one."""
    for f in os.listdir(keep):
        m = re.match(r".*\.(compute_\w+)\.ptx$", f)
        arch = m.group(1) if m else None
        if not m and f.endswith(".ptx") and len(archs) == 1:
            arch = archs[0]
        if arch:
            shutil.move(os.path.join(keep, f), f"{obj}.{arch}.ptx")


def main():
    command = sys.argv[1:]
    obj = object_path(command)
    if not command or not obj:
        print("check-kernel-resources.py: usage: nvcc ARGS... -o OBJECT",
              file=sys.stderr)
        return 2
    keep = tempfile.mkdtemp(prefix="titan-nvcc-")
    # PTX of an earlier build with other architectures would be checked too.
    for stale in glob.glob(glob.escape(obj) + ".*.ptx"):
        os.remove(stale)
    try:
        run = subprocess.run(command + ["--keep", f"--keep-dir={keep}"],
                             capture_output=True, text=True)
        keep_ptx(keep, obj, virtual_archs(command))
    finally:
        shutil.rmtree(keep, ignore_errors=True)
    output = run.stdout + run.stderr  # ptxas reports on stderr
    shown = "\n".join(l for l in output.splitlines() if not INFO.search(l))
    if shown.strip():
        print(shown, file=sys.stderr)

    functions = parse(output)
    names = demangle([f for f, _, _ in functions])
    problems, notes, reported = [], [], set()
    with open(obj + ".resources.tsv", "w") as tsv:
        tsv.write("arch\tentry\tregisters\tstack\tcumulative_stack\t"
                  "spill_stores\tspill_loads\tfunction\n")
        for (mangled, arch, r), name in zip(functions, names):
            tsv.write(f"{arch}\t{int(r['entry'])}\t{r['registers']}\t"
                      f"{r['stack']}\t{r['cumulative']}\t{r['spill_stores']}"
                      f"\t{r['spill_loads']}\t{name}\n")
            stack = max(r["stack"], r["cumulative"])
            spills = r["spill_stores"] + r["spill_loads"]
            if not stack and not spills:
                continue
            what = (f"{name} [{arch}]: {stack} bytes stack, "
                    f"{r['spill_stores']} bytes spill stores, "
                    f"{r['spill_loads']} bytes spill loads, "
                    f"{r['registers']} registers")
            key, entry = allowlisted(mangled)
            if spills or not key:
                problems.append(what)
                reported.add(mangled)
            elif stack > entry[0]:
                problems.append(f"{what} (allowlisted as {key} for at most "
                                f"{entry[0]} bytes of stack)")
                reported.add(mangled)
            else:
                notes.append(f"{what} -- allowlisted: {entry[1]}")
    # What ptxas itself stopped on (-warn-lmem-usage/-warn-spills as
    # errors), where its report did not already name the function.
    for m in LMEM_ERROR.finditer(output):
        if m.group(1) in reported:
            continue
        problems.append(f"{demangle([m.group(1)])[0]}: {m.group(2)} bytes "
                        f"stack (ptxas -warn-lmem-usage)")
    for m in SPILL_ERROR.finditer(output):
        if m.group(1) in reported:
            continue
        problems.append(f"{demangle([m.group(1)])[0]}: {m.group(2)} bytes "
                        f"spill stores, {m.group(3)} bytes spill loads "
                        f"(ptxas -warn-spills)")

    for n in notes:
        print(f"titan: note: {n}", file=sys.stderr)
    if problems:
        for p in problems:
            print(f"titan: error: kernel {p}", file=sys.stderr)
        print(f"titan: {HOW_TO_ALLOWLIST}", file=sys.stderr)
    if run.returncode or problems:
        # No object, so the next build compiles (and checks) it again.
        if os.path.exists(obj):
            os.remove(obj)
        return run.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
