#!/usr/bin/env python3
"""Compares per-step metrics of two runs (JSON lines with step, loss,
grad_norm, lr) and, optionally, two sets of weights: safetensors files or
titan checkpoint folders (parameters and AdamW moments).

  compare_metrics.py A.jsonl B.jsonl --rtol 1e-5 [--weights W1 W2 --wtol T]

Prints the largest relative error of each quantity; exits 1 when one exceeds
its tolerance or the runs have different steps. Validation lines (step and
validation_loss) are compared apart, when either run has them.
"""

import argparse
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from llama_reference import load_weights  # noqa: E402


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("actual")
    ap.add_argument("expected")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--min-steps", type=int, default=1)
    ap.add_argument("--weights", nargs=2)
    ap.add_argument("--wtol", type=float, default=1e-4)
    ap.add_argument("--min-loss-difference", type=float, default=0.0,
                    help="also require the losses to differ by at least this "
                         "(relative) at some step: the runs really differ")
    args = ap.parse_args()
    rows = read(args.actual), read(args.expected)
    actual, expected = ([r for r in rs if "loss" in r] for rs in rows)
    validations = [[r for r in rs if "validation_loss" in r] for rs in rows]
    if validations[0] or validations[1]:
        if [r["step"] for r in validations[0]] != [r["step"] for r in
                                                    validations[1]]:
            print("FAIL: the runs validated at different steps")
            return 1
        errs = [rel(a["validation_loss"], e["validation_loss"])
                for a, e in zip(*validations)]
        worst = max(range(len(errs)), key=errs.__getitem__)
        good = errs[worst] <= args.rtol
        print(f"validation_loss max relative error {errs[worst]:.3e} at "
              f"step {validations[0][worst]['step']} "
              f"({validations[0][worst]['validation_loss']!r} vs "
              f"{validations[1][worst]['validation_loss']!r}) "
              f"{'ok' if good else 'FAIL'}")
        if not good:
            return 1
    if len(actual) != len(expected) or len(actual) < args.min_steps:
        print(f"FAIL: {len(actual)} steps vs {len(expected)} expected "
              f"(at least {args.min_steps})")
        return 1
    ok = True
    for key in ("loss", "grad_norm", "lr"):
        errs = [rel(a[key], e[key]) for a, e in zip(actual, expected)]
        worst = max(range(len(errs)), key=errs.__getitem__)
        good = errs[worst] <= args.rtol
        ok &= good
        print(f"{key:9s} max relative error {errs[worst]:.3e} at step "
              f"{worst + 1} ({actual[worst][key]!r} vs {expected[worst][key]!r})"
              f" {'ok' if good else 'FAIL'}")
    if args.min_loss_difference > 0:
        largest = max(rel(a["loss"], e["loss"]) for a, e in zip(actual, expected))
        differ = largest >= args.min_loss_difference
        ok &= differ
        print(f"loss      runs differ by up to {largest:.3e} "
              f"{'ok' if differ else 'FAIL: expected at least'} "
              f"{'' if differ else args.min_loss_difference}")
    if args.weights:
        wa, we = (load_weights(p) for p in args.weights)
        if wa.keys() != we.keys():
            print("FAIL: the weight files hold different tensors")
            return 1
        worst = max(((a := wa[n]) - (e := we[n])).abs().max().item()
                    / max(e.abs().max().item(), 1e-30) for n in we)
        good = worst <= args.wtol
        ok &= good
        print(f"weights   max relative error {worst:.3e} "
              f"{'ok' if good else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
