"""Inputs for, and the references of, generated-loss-grad.test.

  check.py inputs OUT        the step's slots (arena_slots.py)
  check.py compare ARENA     the step's results against PyTorch

References (PyTorch's autograd in f64, on the values the step saw):
- titan.cross_entropy_grad is the gradient of grad * F.cross_entropy
  (mean over the rows) with respect to the logits. The kernel computes
  grad / T * (exp(x - lse) - onehot) in f32 from the given f32 lse and
  rounds once: a bf16 result is within 2^-8 |ref| (the rounding) plus
  2^-16 grad / T (exp's f32 error at |x - lse| up to 16, and lse's own
  rounding) of it. In f64 (f64 statistics) within 1e-12 grad / T.
- loss parallel: each shard's sum_exp_grad + target_logit_grad, from the
  whole row's statistics (max, sum of exp, the statistics' gradients of
  titan.cross_entropy_from_stats_grad), is the whole gradient's columns
  500 to 999 (shard 1, start 500) and 0 to 499 (shard 0, no start);
  computed in f32 and rounded to bf16: within 2^-8 |ref| + 2^-16 grad / T.
  Rows whose label lies in the other shard have no -1 there.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import arena_slots  # noqa: E402

SLOTS = [
    ("logits", (3, 5, 37), torch.bfloat16),
    ("labels", (3, 5), torch.int32),
    ("lse", (3, 5), torch.float32),
    ("grad", (), torch.float32),
    ("dlogits", (3, 5, 37), torch.bfloat16),
    ("l64", (4, 1000), torch.float64),
    ("y64", (4,), torch.int32),
    ("lse64", (4,), torch.float64),
    ("d64", (4, 1000), torch.float64),
    ("part", (4, 500), torch.float32),
    ("max", (4,), torch.float32),
    ("dsum", (4,), torch.float32),
    ("dtarget", (4,), torch.float32),
    ("start", (), torch.int32),
    ("dpart", (4, 500), torch.bfloat16),
    ("part0", (4, 500), torch.float32),
    ("dpart0", (4, 500), torch.bfloat16),
]
GRAD = 0.75


def at(arena, name):
    return arena_slots.at(arena, SLOTS, name)


def inputs(path):
    gen = torch.Generator().manual_seed(5)
    logits = (3 * torch.randn(3, 5, 37, generator=gen)).to(torch.bfloat16)
    labels = torch.randint(0, 37, (3, 5), generator=gen, dtype=torch.int32)
    labels[0, 0], labels[2, 4] = 0, 36  # the first and the last column
    l64 = 2 * torch.randn(4, 1000, dtype=torch.float64, generator=gen)
    # Each shard's first column, the second's last, one inside the first.
    y64 = torch.tensor([0, 999, 500, 312], dtype=torch.int32)
    rows = l64.shape[0]
    max64 = l64.max(-1).values
    sum64 = torch.exp(l64 - max64[:, None]).sum(-1)
    values = {
        "logits": logits,
        "labels": labels,
        "lse": torch.logsumexp(logits.float(), -1),
        "grad": torch.tensor(GRAD),
        "l64": l64,
        "y64": y64,
        "lse64": torch.logsumexp(l64, -1),
        "part": l64[:, 500:],
        "part0": l64[:, :500],
        "max": max64,
        # titan.cross_entropy_from_stats_grad's results
        "dsum": GRAD / (rows * sum64),
        "dtarget": torch.full((rows,), -GRAD / rows),
        "start": torch.tensor(500, dtype=torch.int32),
    }
    arena_slots.write(path, SLOTS, values)


def reference(logits, labels):
    """d (GRAD * mean cross-entropy) / d logits, in f64."""
    x = logits.double().reshape(-1, logits.shape[-1]).requires_grad_()
    (GRAD * F.cross_entropy(x, labels.long().reshape(-1))).backward()
    return x.grad.reshape(logits.shape)


def check(name, got, want, rows, rel, absolute):
    allowed = rel * want.abs() + absolute * GRAD / rows
    e = float(((got.double() - want).abs() / allowed).max())
    print(f"{name}: worst {e:.2e} of the tolerance")
    return e <= 1


def compare(arena, fresh):
    ok = True
    want = reference(at(fresh, "logits"), at(fresh, "labels"))
    ok &= check("bf16 cross_entropy_grad", at(arena, "dlogits"), want, 15,
                2 ** -8, 2 ** -16)
    whole = reference(at(fresh, "l64"), at(fresh, "y64"))
    ok &= check("f64 cross_entropy_grad", at(arena, "d64"), whole, 4, 0, 1e-12)
    ok &= check("loss-parallel shard 1 gradient", at(arena, "dpart"),
                whole[:, 500:], 4, 2 ** -8, 2 ** -16)
    ok &= check("loss-parallel shard 0 gradient", at(arena, "dpart0"),
                whole[:, :500], 4, 2 ** -8, 2 ** -16)
    return ok


if __name__ == "__main__":
    sys.exit(arena_slots.main(sys.argv, inputs, compare))
