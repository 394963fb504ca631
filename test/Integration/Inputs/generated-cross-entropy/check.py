"""Inputs for, and the references of, generated-cross-entropy.test.

  check.py inputs OUT        the step's slots (arena_slots.py)
  check.py compare ARENA     the step's results against PyTorch

References: F.cross_entropy (mean over the rows) and torch.logsumexp, in
f64 on the values the step saw. The kernel computes each row in f32 (f64
for f64 logits): m = max(x), s = sum exp(x - m), lse = m + log(s). Its
error is that of s's sum, at most K roundings of 2^-24 of s (exp within 2
ulp), which log turns into as much absolute error, plus lse's own rounding
(2^-24 |lse|) and log's (2^-24):
  |lse - ref| <= (K + 2) 2^-24 + 2^-23 |ref|,
K the most additions one term goes through: on the host C / 16 + 8 (16
lanes of C / 16 terms, added pairwise); on a GPU (run.sh's check (e)) C /
256 + 8 in a thread (its packs of up to 8), 5 over the warp and 8 over the
block's warps; the larger of the two.
The row's loss lse - x[label] adds one rounding of 2^-24 (|lse| + |x|), and
the mean is summed in f64 and rounded once to f32 (2^-24 |loss|), so the
loss is within the worst row's bound plus 2^-23 (|loss| + max |x|).
f64 logits: within 1e-12 (1 + |ref|). A label outside its row, or a NaN
logit, makes the loss NaN; the NaN row's lse is NaN, the other's exact.
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
    ("loss", (), torch.float32),
    ("lse", (3, 5), torch.float32),
    ("l32", (1024, 64), torch.float32),
    ("y32", (1024,), torch.int32),
    ("loss32", (), torch.float32),
    ("lse32", (1024,), torch.float32),
    ("l64", (4, 1000), torch.float64),
    ("y64", (4,), torch.int32),
    ("loss64", (), torch.float32),
    ("lse64", (4,), torch.float64),
    ("bad", (2, 8), torch.float32),
    ("ybad", (2,), torch.int32),
    ("lossbad", (), torch.float32),
    ("lsebad", (2,), torch.float32),
]


def at(arena, name):
    return arena_slots.at(arena, SLOTS, name)


def inputs(path):
    gen = torch.Generator().manual_seed(11)
    logits = (3 * torch.randn(3, 5, 37, generator=gen)).to(torch.bfloat16)
    labels = torch.randint(0, 37, (3, 5), generator=gen, dtype=torch.int32)
    labels[0, 0], labels[2, 4] = 0, 36  # the first and the last column
    l32 = 4 * torch.randn(1024, 64, generator=gen)
    l32[::7] += 1e4  # exp(x) would overflow without the max
    y32 = torch.randint(0, 64, (1024,), generator=gen, dtype=torch.int32)
    l64 = 2 * torch.randn(4, 1000, dtype=torch.float64, generator=gen)
    y64 = torch.tensor([0, 999, 500, 312], dtype=torch.int32)
    bad = torch.randn(2, 8, generator=gen)
    bad[1, 3] = float("nan")
    ybad = torch.tensor([8, 2], dtype=torch.int32)  # 8: outside the row
    values = {"logits": logits, "labels": labels, "l32": l32, "y32": y32,
              "l64": l64, "y64": y64, "bad": bad, "ybad": ybad}
    arena_slots.write(path, SLOTS, values)


def worst(got, want, allowed):
    return float(((got.double() - want).abs() / allowed).max())


def check_f32(name, arena, fresh, logits, labels, loss, lse):
    x = at(fresh, logits).double()
    columns = x.shape[-1]
    rows = x.reshape(-1, columns)
    want_lse = torch.logsumexp(rows, -1)
    want = F.cross_entropy(rows, at(fresh, labels).long().reshape(-1))
    host, gpu = columns / 16 + 8, columns / 256 + 8 + 5 + 8
    bound = (max(host, gpu) + 2) * 2 ** -24
    e_lse = worst(at(arena, lse).reshape(-1), want_lse,
                  bound + 2 ** -23 * want_lse.abs())
    e_loss = worst(at(arena, loss), want,
                   bound + 2 ** -23 * (want.abs() + rows.abs().max()))
    print(f"{name} lse: worst {e_lse:.2e} of the tolerance")
    print(f"{name} loss: worst {e_loss:.2e} of the tolerance")
    return e_lse <= 1 and e_loss <= 1


def compare(arena, fresh):
    ok = check_f32("bf16", arena, fresh, "logits", "labels", "loss", "lse")
    ok &= check_f32("f32", arena, fresh, "l32", "y32", "loss32", "lse32")
    x = at(fresh, "l64")
    want_lse = torch.logsumexp(x, -1)
    want = F.cross_entropy(x, at(fresh, "y64").long())
    e = max(worst(at(arena, "lse64"), want_lse, 1e-12 * (1 + want_lse.abs())),
            worst(at(arena, "loss64"), want.float().double(),
                  2 ** -24 * want.abs() + 1e-12))
    print(f"f64 loss and lse: worst {e:.2e} of the tolerance")
    ok &= e <= 1
    lossbad, lsebad = float(at(arena, "lossbad")), at(arena, "lsebad")
    want_first = torch.logsumexp(at(fresh, "bad")[0].double(), -1)
    nan_ok = (lossbad != lossbad and bool(torch.isnan(lsebad[1])) and
              worst(lsebad[:1], want_first, 2 ** -22 * (1 + want_first.abs()))
              <= 1)
    print(f"outside label and NaN logit: loss {lossbad}, lse {lsebad.tolist()}")
    return ok and nan_ok


if __name__ == "__main__":
    sys.exit(arena_slots.main(sys.argv, inputs, compare))
