"""Checks titan's config keys against TorchTitan v0.2.0's.

Usage: check-torchtitan-keys.py job_config_keys.tsv titan-keys.tsv

job_config_keys.tsv is scripts/torchtitan-keys.py's listing of TorchTitan's
job_config.py (key, type, Python default); titan-keys.tsv is
`titan-compile --list-config-keys=tsv` (key, group, TOML default). Fails on
a TorchTitan key titan does not know, a default that differs from
TorchTitan's (but for the exceptions below), and a titan key that is neither
TorchTitan's nor in TITAN_OWN.
"""

import ast
import sys
import tomllib

# titan's own keys (not TorchTitan's).
TITAN_OWN = {"debug.no_cuda_graphs", "debug.no_comm_overlap",
             "debug.no_widen_gemm_results", "debug.offload_state",
             "metrics.peak_tflops"}

# Defaults titan chose differently, and why.
DEFAULT_EXCEPTIONS = {
    # TorchTitan's default is a folder of its own repository; its configs
    # set "./outputs", titan's default.
    "job.dump_folder",
    # TorchTitan's default is its repository's test tokenizer folder; titan
    # ships none (empty: no tokenizer).
    "model.hf_assets_path",
    # Unset in titan: the target's default, TorchTitan's bfloat16 on CUDA and
    # float32 on the CPU (which has no fast bfloat16 GEMMs).
    "training.mixed_precision_param",
}


def torchtitan_default(text):
    return None if text == "" else ast.literal_eval(text)


def titan_default(text):
    return None if text == "" else tomllib.loads("v = " + text)["v"]


def same(a, b):
    # titan keeps an unset string (Python's None) as "".
    if a is None or b is None:
        return a in (None, "", []) and b in (None, "", [])
    return a == b


def main(torchtitan_path, titan_path):
    torchtitan = {}
    for line in open(torchtitan_path, encoding="utf-8"):
        if line.startswith("#"):
            continue
        key, _, default = line.rstrip("\n").split("\t")
        torchtitan[key] = default
    titan = {}
    for line in open(titan_path, encoding="utf-8"):
        key, group, default = line.rstrip("\n").split("\t")
        if not group.startswith("alias-of"):
            titan[key] = (group, default)
    problems = []
    for key, default in torchtitan.items():
        if key not in titan:
            problems.append(f"{key}: TorchTitan v0.2.0's key is unknown to titan")
            continue
        group, titan_text = titan[key]
        if key in DEFAULT_EXCEPTIONS:
            continue
        if not same(torchtitan_default(default), titan_default(titan_text)):
            problems.append(f"{key} ({group}): titan's default {titan_text!r} "
                            f"is not TorchTitan's {default!r}")
    for key in sorted(set(titan) - set(torchtitan) - TITAN_OWN):
        problems.append(f"{key}: neither TorchTitan v0.2.0's key nor in TITAN_OWN")
    for p in problems:
        print(p)
    groups = {}
    for key in torchtitan:
        if key in titan:
            groups.setdefault(titan[key][0], []).append(key)
    for group in sorted(groups):
        print(f"{group}: {len(groups[group])}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main(*sys.argv[1:])
