"""Inputs for, and the references of, generated-loss-parallel.test.

  check.py inputs OUT        the step's slots (arena_slots.py)
  check.py compare ARENA     the step's results against PyTorch

References, in f64 on the values the step saw (torchtitan's loss parallel
computes F.cross_entropy on vocabulary-sharded logits; these are the
statistics its collectives combine):
- row_max of each shard: exact (a max rounds nothing).
- sum_exp of each shard from the whole row's max, in 16 f32 lanes of 500 /
  16 terms (exp within 2 ulp), added over the shards: within (500 / 16 +
  8 + 2) 2^-24 of the sum relative.
- target_logit: exact (the logit at the label's column of its shard, 0 in
  the other); without a start, NaN for a label outside the shard.
- cross_entropy_from_stats: F.cross_entropy of the whole logits; each
  row's max + log(sum) - target in f32 (the sum's error above, log's and
  two roundings of 2^-24 |x|), their mean in f64: within that bound plus
  2^-23 (|loss| + max |x|).
- its gradients: (grad / T) / sum and -(grad / T), two f32 roundings
  (2^-23 relative).
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import arena_slots  # noqa: E402

ROWS, HALF = 4, 500
SLOTS = [
    ("part0", (ROWS, HALF), torch.float32),
    ("part1", (ROWS, HALF), torch.float32),
    ("labels", (ROWS,), torch.int32),
    ("start0", (), torch.int32),
    ("start1", (), torch.int32),
    ("max", (ROWS,), torch.float32),
    ("grad", (), torch.float32),
    ("max0", (ROWS,), torch.float32),
    ("max1", (ROWS,), torch.float32),
    ("sum", (ROWS,), torch.float32),
    ("target", (ROWS,), torch.float32),
    ("loss", (), torch.float32),
    ("dsum", (ROWS,), torch.float32),
    ("dtarget", (ROWS,), torch.float32),
    ("nostart", (ROWS,), torch.float32),
]
GRAD = 0.75


def at(arena, name):
    return arena_slots.at(arena, SLOTS, name)


def inputs(path):
    gen = torch.Generator().manual_seed(17)
    logits = 3 * torch.randn(ROWS, 2 * HALF, generator=gen)
    logits[2] += 40  # a row far from 0: the shift matters
    # Each shard's first column, the second's last, one inside the first.
    labels = torch.tensor([0, 999, 500, 312], dtype=torch.int32)
    values = {
        "part0": logits[:, :HALF], "part1": logits[:, HALF:],
        "labels": labels,
        "start0": torch.tensor(0, dtype=torch.int32),
        "start1": torch.tensor(HALF, dtype=torch.int32),
        "max": logits.max(-1).values, "grad": torch.tensor(GRAD),
    }
    arena_slots.write(path, SLOTS, values)


def worst(got, want, allowed):
    return float(((got.double() - want).abs() / allowed).max())


def compare(arena, fresh):
    x = torch.cat([at(fresh, "part0"), at(fresh, "part1")], -1).double()
    labels = at(fresh, "labels").long()
    ok = True
    exact = (torch.equal(at(arena, "max0"), at(fresh, "part0").max(-1).values)
             and torch.equal(at(arena, "max1"),
                             at(fresh, "part1").max(-1).values))
    print(f"row_max per shard: {'exact' if exact else 'DIFFERS'}")
    ok &= exact
    m = at(fresh, "max").double()
    want_sum = torch.exp(x - m[:, None]).sum(-1)
    bound = (HALF / 16 + 10) * 2 ** -24
    e = worst(at(arena, "sum"), want_sum, bound * want_sum)
    print(f"sum_exp over the shards: worst {e:.2e} of the tolerance")
    ok &= e <= 1
    want_target = x.gather(1, labels[:, None])[:, 0]
    exact = torch.equal(at(arena, "target").double(), want_target)
    print(f"target_logit over the shards: {'exact' if exact else 'DIFFERS'}")
    ok &= exact
    want = F.cross_entropy(x, labels)
    e = worst(at(arena, "loss"), want,
              bound + 2 ** -22 + 2 ** -23 * (want.abs() + x.abs().max()))
    print(f"cross_entropy_from_stats: worst {e:.2e} of the tolerance")
    ok &= e <= 1
    got_sum = at(arena, "sum").double()
    want_dsum = GRAD / ROWS / got_sum
    e = max(worst(at(arena, "dsum"), want_dsum, 2 ** -23 * want_dsum.abs()),
            worst(at(arena, "dtarget"), torch.full((ROWS,), -GRAD / ROWS),
                  torch.full((ROWS,), 2 ** -24 * GRAD / ROWS)))
    print(f"cross_entropy_from_stats_grad: worst {e:.2e} of the tolerance")
    ok &= e <= 1
    nostart = at(arena, "nostart")
    part0 = at(fresh, "part0")
    nan_ok = (float(nostart[0]) == float(part0[0, 0]) and
              bool(torch.isnan(nostart[1])) and bool(torch.isnan(nostart[2]))
              and float(nostart[3]) == float(part0[3, 312]))
    print(f"target_logit without a start: {nostart.tolist()}")
    return ok and nan_ok


if __name__ == "__main__":
    sys.exit(arena_slots.main(sys.argv, inputs, compare))
