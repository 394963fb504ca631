#!/usr/bin/env python3
"""The runtime depends on the contract layer only (issue 35).

    runtime-layering.py SOURCE_DIR BUILD_DIR

Fails, listing each violation, when
  - a file under runtime/ includes a compiler header (titan/<X>/ other than
    the contract layer's titan/Contract and titan/Support, and the
    runtime's own titan/Data) or one of MLIR's (mlir/, mlir-c/);
  - a file of the contract layer (include/titan/{Contract,Support},
    lib/{Contract,Support}) includes anything of titan's but itself, or MLIR;
  - build.ninja links a runtime library (libtitanrt*) with an MLIR library
    or a compiler library (libTitan* other than TitanContract, TitanSupport
    and TitanData);
  - a built runtime library needs an MLIR shared library (ELF NEEDED), or
    defines or references a symbol of namespace mlir (static archives
    included: what they would bring into an executable).
"""

import os
import re
import shutil
import subprocess
import sys

SOURCE_SUFFIXES = (".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh", ".def", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
RUNTIME_TITAN_DIRS = {"Contract", "Support", "Data"}
CONTRACT_TITAN_DIRS = {"Contract", "Support"}
CONTRACT_TREES = ["include/titan/Contract", "include/titan/Support",
                  "lib/Contract", "lib/Support"]
RUNTIME_LIBRARY = re.compile(r"(^|/)libtitanrt\w*\.(so|a)$")
ALLOWED_TITAN_LIBRARIES = {"TitanContract", "TitanSupport", "TitanData"}
# Libraries the runtime's link statements must exist for (the test must not
# pass because it found nothing to check).
REQUIRED_LINKS = ["libtitanrt.so", "libtitanrt_cpu.so", "libtitanrt_comm.so"]


def sources(root):
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(folder, name)


def include_violations(path, allowed_titan_dirs):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for match in INCLUDE.finditer(text):
        header = match.group(1)
        line = text.count("\n", 0, match.start()) + 1
        parts = header.split("/")
        if parts[0] in ("mlir", "mlir-c"):
            yield f"{path}:{line}: includes MLIR's {header}"
        elif parts[0] == "titan" and len(parts) > 2 and \
                parts[1] not in allowed_titan_dirs:
            yield f"{path}:{line}: includes the compiler's {header}"


def check_includes(src):
    problems, count = [], 0
    runtime = os.path.join(src, "runtime")
    if not os.path.isdir(runtime):
        return [f"{runtime}: not found"], 0
    for path in sources(runtime):
        count += 1
        problems += include_violations(path, RUNTIME_TITAN_DIRS)
    for tree in CONTRACT_TREES:
        for path in sources(os.path.join(src, tree)):
            count += 1
            problems += include_violations(path, CONTRACT_TITAN_DIRS)
    return problems, count


def link_statements(build_ninja):
    """(outputs, inputs and variables) of each build statement."""
    with open(build_ninja, encoding="utf-8") as f:
        lines = f.read().replace("$\n", "").splitlines()
    statement = None
    for line in lines:
        if line.startswith("build "):
            if statement:
                yield statement
            head, _, rest = line[len("build "):].partition(":")
            statement = (head.split(), [rest])
        elif statement and line.startswith("  "):
            statement[1].append(line.strip())
        elif statement:
            yield statement
            statement = None
    if statement:
        yield statement


def library_violations(output, words):
    for word in words:
        name = os.path.basename(word)
        if re.search(r"(^|lib|-l)MLIR", name):
            yield f"build.ninja: {output} links {word}"
            continue
        titan = re.match(r"lib(Titan\w*)\.(a|so)", name)
        if titan and titan.group(1) not in ALLOWED_TITAN_LIBRARIES:
            yield f"build.ninja: {output} links the compiler's {word}"


def check_links(build):
    build_ninja = os.path.join(build, "build.ninja")
    if not os.path.exists(build_ninja):
        return [f"{build_ninja}: not found"], 0
    problems, found = [], set()
    for outputs, body in link_statements(build_ninja):
        for output in outputs:
            if not RUNTIME_LIBRARY.search(output):
                continue
            found.add(os.path.basename(output))
            words = dict.fromkeys(" ".join(body).split())
            problems += library_violations(output, words)
    for name in REQUIRED_LINKS:
        if name not in found:
            problems.append(f"build.ninja: no link statement of {name}")
    return problems, len(found)


def tool(*names):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    sys.exit(f"runtime-layering: none of {', '.join(names)} found")


def check_binaries(build):
    libdir = os.path.join(build, "lib")
    libraries = sorted(
        os.path.join(libdir, name) for name in
        (os.listdir(libdir) if os.path.isdir(libdir) else [])
        if RUNTIME_LIBRARY.search(name))
    if not any(path.endswith("libtitanrt.so") for path in libraries):
        return [f"{libdir}/libtitanrt.so: not built"], 0
    readelf, nm = tool("llvm-readelf", "readelf"), tool("llvm-nm", "nm")
    problems = []
    for path in libraries:
        if path.endswith(".so"):
            dynamic = subprocess.run([readelf, "-d", path], capture_output=True,
                                     text=True, check=True).stdout
            for needed in re.findall(r"\(NEEDED\).*\[(.*)\]", dynamic):
                if needed.startswith("libMLIR"):
                    problems.append(f"{path}: needs {needed}")
        symbols = subprocess.run([nm, "--demangle", path], capture_output=True,
                                 text=True).stdout
        mlir = sorted({line.split(None, 2)[-1] for line in symbols.splitlines()
                       if re.search(r"\bmlir::", line)})
        for symbol in mlir[:5]:
            problems.append(f"{path}: has MLIR's symbol {symbol}")
        if len(mlir) > 5:
            problems.append(f"{path}: and {len(mlir) - 5} more MLIR symbols")
    return problems, len(libraries)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, build = sys.argv[1:]
    includes, files = check_includes(src)
    links, statements = check_links(build)
    binaries, libraries = check_binaries(build)
    problems = includes + links + binaries
    for problem in problems:
        print(problem)
    if problems:
        print(f"runtime layering: {len(problems)} violations")
        return 1
    print(f"runtime layering: ok ({files} files, {statements} link "
          f"statements, {libraries} libraries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
