"""Inputs for, and the references of, generated-rope.test.

  check.py inputs OUT        the step's slots (arena_slots.py)
  check.py compare ARENA     the step's results against PyTorch

References:
- TorchTitan's apply_rotary_emb (v0.2.0, torchtitan/models/llama3/model/
  model.py): the head dimension viewed as complex pairs (x[2j], x[2j+1]),
  multiplied by freqs_cis (polar(1, angle), precompute_freqs_cis with
  theta 10000), computed in f32 and cast back to the input's type; here
  in complex128, on the values the step saw. The generated kernel computes
  in f32 and rounds once: a bf16 result is within 2^-8 |ref| + 2^-22
  (|a| + |b|) of it (a rounding to bf16, the f32 products' and sum's
  errors), an f32 result within 2^-23 (|ref| + |a| + |b|).
- the formula as TitanOps.td states it, a c - b s and a s + b c, each
  product and the sum rounded to f32 (PyTorch's f32 ops): the generated
  kernel's results are bitwise these (no FMA contraction), rounded once.
- the transpose is the adjoint: <rope(x), r> = <x, rope^T(r)>, to 1e-6 of
  sum |x| |r|.
The amax is exactly the largest |result| the kernel wrote. The joined
launch's transpose and cast are exact (bf16 widens exactly).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import arena_slots  # noqa: E402

SLOTS = [
    ("q", (2, 12, 3, 16), torch.bfloat16),
    ("dq", (2, 12, 3, 16), torch.bfloat16),
    ("f16", (12, 8, 2), torch.float32),
    ("qr", (2, 12, 3, 16), torch.bfloat16),
    ("dqr", (2, 12, 3, 16), torch.bfloat16),
    ("amax", (), torch.float32),
    ("x", (3, 7, 2, 6), torch.float32),
    ("r", (3, 7, 2, 6), torch.float32),
    ("f6", (7, 3, 2), torch.float32),
    ("xr", (3, 7, 2, 6), torch.float32),
    ("rr", (3, 7, 2, 6), torch.float32),
    ("t", (37, 29), torch.bfloat16),
    ("tt", (29, 37), torch.float32),
    ("u", (70000,), torch.bfloat16),
    ("uf", (70000,), torch.float32),
]



def at(arena, name):
    return arena_slots.at(arena, SLOTS, name)


def freqs_cis(seq, head_dim, theta=10000.0):
    """TorchTitan's precompute_freqs_cis as (cos, sin) pairs, in f32."""
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = torch.outer(torch.arange(seq, dtype=torch.float32), freqs)
    return torch.stack([torch.cos(angles), torch.sin(angles)], dim=-1)


def inputs(path):
    gen = torch.Generator().manual_seed(11)
    values = {
        "q": 3 * torch.randn(2, 12, 3, 16, generator=gen),
        "dq": torch.randn(2, 12, 3, 16, generator=gen),
        "f16": freqs_cis(12, 16),
        "x": torch.randn(3, 7, 2, 6, generator=gen),
        "r": torch.randn(3, 7, 2, 6, generator=gen),
        "f6": freqs_cis(7, 6),
        "t": torch.randn(37, 29, generator=gen),
        "u": torch.randn(70000, generator=gen),
    }
    arena_slots.write(path, SLOTS, values)


def pairs(x):
    return x.reshape(*x.shape[:-1], -1, 2)


def reference(x, table, transpose):
    """apply_rotary_emb in complex128 (the transposed rotation conjugates)."""
    xc = torch.view_as_complex(pairs(x.double()).contiguous())
    f = torch.view_as_complex(table.double().contiguous())
    f = f.conj() if transpose else f
    out = torch.view_as_real(xc * f.reshape(1, f.shape[0], 1, f.shape[1])).flatten(3)
    magnitude = pairs(x.double()).abs().sum(-1, keepdim=True).expand(pairs(x).shape).flatten(3)
    return out, magnitude


def formula(x, table, transpose):
    """TitanOps.td's formula with f32 products and sums."""
    p = pairs(x.float())
    a, b = p[..., 0], p[..., 1]
    c = table[..., 0].reshape(1, table.shape[0], 1, table.shape[1])
    s = table[..., 1].reshape(1, table.shape[0], 1, table.shape[1])
    s = -s if transpose else s
    return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(3)


def check(name, got, x, table, transpose, rel, absolute):
    want, magnitude = reference(x, table, transpose)
    allowed = rel * want.abs() + absolute * magnitude + 1e-30
    e = float(((got.double() - want).abs() / allowed).max())
    exact = torch.equal(got, formula(x, table, transpose).to(got.dtype))
    print(f"{name}: worst {e:.3f} of the tolerance, "
          f"{'bitwise' if exact else 'not bitwise'} the f32 formula")
    return e <= 1 and exact


def compare(arena, fresh):
    ok = True
    f16, f6 = at(fresh, "f16"), at(fresh, "f6")
    ok &= check("bf16 rope", at(arena, "qr"), at(fresh, "q"), f16, False, 2 ** -8, 2 ** -22)
    ok &= check("bf16 rope transpose", at(arena, "dqr"), at(fresh, "dq"), f16, True,
                2 ** -8, 2 ** -22)
    amax = float(at(arena, "amax"))
    exact = amax == float(at(arena, "dqr").float().abs().max())
    print(f"bf16 amax: {'equal' if exact else 'differs'} (max |result|)")
    ok &= exact
    ok &= check("f32 rope", at(arena, "xr"), at(fresh, "x"), f6, False, 2 ** -23, 2 ** -23)
    ok &= check("f32 rope transpose", at(arena, "rr"), at(fresh, "r"), f6, True,
                2 ** -23, 2 ** -23)
    x, r = at(fresh, "x").double(), at(fresh, "r").double()
    lhs = float((at(arena, "xr").double() * r).sum())
    rhs = float((x * at(arena, "rr").double()).sum())
    scale = float((x.abs() * r.abs()).sum())
    adjoint = abs(lhs - rhs) <= 1e-6 * scale
    print(f"f32 transpose is the adjoint: |<rope x, r> - <x, rope^T r>| = "
          f"{abs(lhs - rhs) / scale:.1e} of sum |x| |r|")
    ok &= adjoint
    tiles = torch.equal(at(arena, "tt"), at(fresh, "t").float().t())
    elements = torch.equal(at(arena, "uf"), at(fresh, "u").float())
    print(f"one launch: tiles {'exact' if tiles else 'differ'}, "
          f"elements {'exact' if elements else 'differ'}")
    ok &= tiles and elements
    return ok


if __name__ == "__main__":
    sys.exit(arena_slots.main(sys.argv, inputs, compare))
