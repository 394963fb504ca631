#!/usr/bin/env python3
"""Checks, without a GPU, that the kernels on 16-byte packs (DeviceUtils.cuh's
loadPack/storePack) access global memory in 16-byte vector instructions, in
the PTX nvcc generated for titanrt_cuda_kernels' objects (OBJECT.ARCH.ptx,
left by check-kernel-resources.py), and that box copies of 1-byte (fp8)
elements move single bytes.

    check-ptx-packs.py OBJECT...

A pack path that nvcc splits into element accesses (an alignment it cannot
prove, a pack type it widens) fails here, naming the kernel.
"""

import glob
import re
import shutil
import subprocess
import sys

LD_GLOBAL_V4 = "ld.global.v4", r"\bld\.global(?:\.nc)?(?:\.L[12]::\w+)*\.v4\.(?:b32|u32|f32)\b"
ST_GLOBAL_V4 = "st.global.v4", r"\bst\.global(?:\.L[12]::\w+)*\.v4\.(?:b32|u32|f32)\b"
# (file, demangled kernel name pattern, the instructions each match must
# have). Every pattern must match at least one kernel. The casts that widen
# or narrow (f32 <-> bf16/f16) read or write 8-byte halves, so they are
# only checked on their 16-byte side.
SAME = r"Map<(float|__nv_bfloat16|__half), \2, "
EXPECTED = [
    ("Elementwise", r"forEachKernel<(4|8), [^,]+, " + SAME +
     r"(Add|Identity), [12]>",
     [LD_GLOBAL_V4, ST_GLOBAL_V4]),
    ("Elementwise", r"forEachKernel<(4|8), [^,]+, " + SAME + r"Constant, 0>",
     [ST_GLOBAL_V4]),
    ("Elementwise", r"forEachKernel<4, [^,]+, Map<float, "
     r"(__nv_bfloat16|__half), Identity, 1>", [LD_GLOBAL_V4]),
    ("Elementwise", r"forEachKernel<4, [^,]+, Map<(__nv_bfloat16|__half), "
     r"float, Identity, 1>", [ST_GLOBAL_V4]),
    ("Elementwise", r"copyBoxKernel<unsigned char>",
     [("ld.global.u8", r"\bld\.global\.(?:u8|b8)\b"),
      ("st.global.u8", r"\bst\.global\.(?:u8|b8)\b")]),
]

# Namespaces dropped from the demangled names, which the patterns match.
NAMESPACES = re.compile(
    r"\(anonymous namespace\)::|titanrt::cuda::device::|titanrt::cuda::")
ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+(\w+)", re.M)


def demangle(names):
    tool = shutil.which("c++filt") or shutil.which("llvm-cxxfilt")
    if not tool:
        sys.exit("check-ptx-packs.py: needs c++filt or llvm-cxxfilt")
    out = subprocess.run([tool], input="\n".join(names), capture_output=True,
                         text=True, check=True).stdout.split("\n")
    return [NAMESPACES.sub("", n) for n in out[: len(names)]]


def kernels(ptx_file):
    """(demangled name, body) of each .entry of a PTX file."""
    text = open(ptx_file).read()
    starts = list(ENTRY.finditer(text))
    names = demangle([m.group(1) for m in starts])
    for i, (m, name) in enumerate(zip(starts, names)):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        yield name, text[m.end():end]


def main():
    failures, checked = [], 0
    ptx_files = [f for obj in sys.argv[1:] for f in sorted(glob.glob(obj + ".*.ptx"))]
    for source in sorted({e[0] for e in EXPECTED}):
        mine = [f for f in ptx_files if re.search(rf"/{source}\.cu\.o\.", f)]
        if not mine:
            failures.append(f"no PTX of {source}.cu (OBJECT.ARCH.ptx, left by "
                            "check-kernel-resources.py)")
            continue
        for ptx in mine:
            arch = ptx.rsplit(".", 2)[-2]
            found = list(kernels(ptx))
            for file, pattern, needed in EXPECTED:
                if file != source:
                    continue
                matches = [(n, b) for n, b in found if re.search(pattern, n)]
                if not matches:
                    failures.append(f"{source}.cu [{arch}]: no kernel matches "
                                    f"/{pattern}/")
                for name, body in matches:
                    checked += 1
                    for label, instruction in needed:
                        if not re.search(instruction, body):
                            failures.append(f"{source}.cu [{arch}]: {name}: "
                                            f"no {label}")
    for f in failures:
        print(f"FAIL: {f}")
    print(f"checked {checked} kernel PTX bodies; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
