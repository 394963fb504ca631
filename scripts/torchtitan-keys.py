#!/usr/bin/env python3
"""Lists every key of a TorchTitan job_config.py.

Reads the file with Python's `ast` (TorchTitan and torch are not imported) and
prints one line per key, `section.key<TAB>type<TAB>default`, walking the
nested dataclasses from JobConfig down (so `quantize.linear.float8.emulate`).
A default is printed as Python source (`None`, `"fused"`, `['model', 'loss']`);
a default computed at import time prints as its source text.

Usage: scripts/torchtitan-keys.py path/to/job_config.py
"""

import ast
import sys


def dataclasses_of(tree):
    """Maps each class name to its annotated fields, in order."""
    classes = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            classes[node.name] = [
                stmt for stmt in node.body
                if isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
            ]
    return classes


def field_default(value):
    """The default of `x: T = value`: a constant, or field(default_factory=)."""
    if value is None:
        return None, None
    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "field"):
        for kw in value.keywords:
            if kw.arg == "default":
                return ast.unparse(kw.value), None
            if kw.arg == "default_factory":
                factory = kw.value
                if isinstance(factory, ast.Lambda):
                    return ast.unparse(factory.body), None
                if isinstance(factory, ast.Name):
                    if factory.id == "list":
                        return "[]", None
                    if factory.id == "dict":
                        return "{}", None
                    return None, factory.id  # a nested dataclass
        return None, None
    return ast.unparse(value), None


def walk(classes, name, prefix, out):
    for stmt in classes[name]:
        key = stmt.target.id
        default, nested = field_default(stmt.value)
        if nested is not None and nested in classes:
            walk(classes, nested, prefix + [key], out)
            continue
        out.append((".".join(prefix + [key]), ast.unparse(stmt.annotation),
                    "" if default is None else default))


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: torchtitan-keys.py path/to/job_config.py")
    with open(argv[1], encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=argv[1])
    classes = dataclasses_of(tree)
    if "JobConfig" not in classes:
        sys.exit(f"{argv[1]}: no JobConfig dataclass")
    keys = []
    walk(classes, "JobConfig", [], keys)
    for key, type_, default in keys:
        print(f"{key}\t{' '.join(type_.split())}\t{default}")


if __name__ == "__main__":
    main(sys.argv)
