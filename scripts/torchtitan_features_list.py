#!/usr/bin/env python3
"""Transcribes TorchTitan's integration feature tests into a data file.

Reads tests/integration_tests/features.py of a TorchTitan release (from a
file or from `git show`) with `ast`, without importing it, and writes the
OverrideDefinitions of build_features_test_list() as JSON: per test its name,
description, ngpu, disabled flag and its runs (one list of override arguments
per run, as run_tests.py passes them to run_train.sh).

    python3 scripts/torchtitan_features_list.py \
        --git-dir /work/.mirror/pytorch+torchtitan/repo --rev v0.2.0 \
        > test/Inputs/torchtitan-v0.2.0/features_tests.json
"""

import argparse
import ast
import json
import subprocess
import sys

SOURCE = "tests/integration_tests/features.py"

# OverrideDefinitions' fields in declaration order, with their defaults
# (tests/integration_tests/__init__.py).
FIELDS = ["override_args", "test_descr", "test_name", "ngpu", "disabled"]
DEFAULTS = {"test_descr": "default", "test_name": "default", "ngpu": 4,
            "disabled": False}


def definitions(tree):
    """Yields each OverrideDefinitions(...) call as a dict of its fields."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and
                getattr(node.func, "id", None) == "OverrideDefinitions"):
            continue
        test = dict(DEFAULTS)
        for name, arg in zip(FIELDS, node.args):
            test[name] = ast.literal_eval(arg)
        for kw in node.keywords:
            test[kw.arg] = ast.literal_eval(kw.value)
        yield {"name": test["test_name"], "descr": test["test_descr"],
               "ngpu": test["ngpu"], "disabled": test["disabled"],
               "runs": [list(run) for run in test["override_args"]]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features-py", help="a features.py file")
    parser.add_argument("--git-dir", help="a TorchTitan git directory")
    parser.add_argument("--rev", default="v0.2.0")
    args = parser.parse_args()
    if args.features_py:
        with open(args.features_py) as f:
            text = f.read()
        origin = args.features_py
    else:
        git = ["git", "-C", args.git_dir]
        text = subprocess.check_output(git + ["show", f"{args.rev}:{SOURCE}"],
                                       text=True)
        commit = subprocess.check_output(
            git + ["rev-parse", f"{args.rev}^{{commit}}"], text=True).strip()
        origin = f"TorchTitan {args.rev} ({commit}) {SOURCE}"
    tests = list(definitions(ast.parse(text)))
    json.dump({"comment": f"Generated from {origin} by "
                          "scripts/torchtitan_features_list.py; do not edit.",
               "tests": tests}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
