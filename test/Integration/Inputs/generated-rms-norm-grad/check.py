"""Inputs for, and the references of, generated-rms-norm-grad.test.

  check.py inputs OUT        the step's slots (arena_slots.py)
  check.py compare ARENA     the step's results against PyTorch

The reference is PyTorch's autograd, in float64, of TorchTitan's RMSNorm
(x * rsqrt(mean(x^2) + eps) * w) on the inputs as the step saw them (bf16
values widened exactly). Tolerances: the generated kernel computes in f32
and rounds each result once, so a bf16 dx is within 2^-7 of its reference
plus 2^-7 of the row's largest |dx| (the projection's cancellation), and
the f32 dx within 1e-5 of the same; the weight gradient sums 300 (129)
terms in f32 and is within 2^-8 (bf16, rounded once) or 1e-5 (f32) of
the sum of the terms' magnitudes. The residual gradient r + dx is checked
the same way, and the amax must be exactly the largest |r| the kernel
wrote.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import arena_slots  # noqa: E402

EPS = 1e-5
# (name, shape, dtype) in the step's argument order.
SLOTS = [
    ("x", (300, 70), torch.bfloat16),
    ("w", (70,), torch.bfloat16),
    ("dy", (300, 70), torch.bfloat16),
    ("r", (300, 70), torch.bfloat16),
    ("dwf", (70,), torch.float32),
    ("amax", (), torch.float32),
    ("xf", (129, 256), torch.float32),
    ("wf", (256,), torch.float32),
    ("dyf", (129, 256), torch.float32),
    ("dxf", (129, 256), torch.float32),
    ("dwf32", (256,), torch.float32),
]



def at(arena, name):
    return arena_slots.at(arena, SLOTS, name)


def inputs(path):
    gen = torch.Generator().manual_seed(7)
    values = {
        "x": 3 * torch.randn(300, 70, generator=gen),
        "w": 0.5 + torch.rand(70, generator=gen),
        "dy": torch.randn(300, 70, generator=gen),
        "r": torch.randn(300, 70, generator=gen),
        "xf": 3 * torch.randn(129, 256, generator=gen),
        "wf": 0.5 + torch.rand(256, generator=gen),
        "dyf": torch.randn(129, 256, generator=gen),
    }
    arena_slots.write(path, SLOTS, values)


def reference(x, w, dy):
    x = x.double().requires_grad_()
    w = w.double().requires_grad_()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w
    y.backward(dy.double())
    terms = (dy.double() * x.detach() *
             torch.rsqrt(x.detach().pow(2).mean(-1, keepdim=True) + EPS)).abs().sum(0)
    return x.grad, w.grad, terms


def worst(got, want, rel):
    """Largest error over the allowed one: rel * (|want| + the row's max)."""
    got, want = got.double(), want.double()
    row_max = want.abs().amax(-1, keepdim=True)
    allowed = rel * (want.abs() + row_max) + 1e-30
    return float(((got - want).abs() / allowed).max())


def compare(arena, fresh):
    ok = True

    dx, dw, terms = reference(at(fresh, "x"), at(fresh, "w"), at(fresh, "dy"))
    r = at(arena, "r").double()
    r_in = at(fresh, "r").double()
    e = worst(r, r_in + dx, 2 ** -7)
    print(f"bf16 r + dx: worst {e:.3f} of the tolerance")
    ok &= e <= 1
    e = float(((at(arena, "dwf").double() - dw).abs() / (2 ** -8 * terms)).max())
    print(f"bf16 dw: worst {e:.3f} of the tolerance")
    ok &= e <= 1
    amax = float(at(arena, "amax"))
    exact = amax == float(r.abs().max())
    print(f"bf16 amax: {'equal' if exact else 'differs'} (max |r|)")
    ok &= exact

    dx, dw, terms = reference(at(fresh, "xf"), at(fresh, "wf"), at(fresh, "dyf"))
    e = worst(at(arena, "dxf"), dx, 1e-5)
    print(f"f32 dx: worst {e:.3f} of the tolerance")
    ok &= e <= 1
    e = float(((at(arena, "dwf32").double() - dw).abs() / (1e-5 * terms)).max())
    print(f"f32 dw: worst {e:.3f} of the tolerance")
    ok &= e <= 1
    return ok


if __name__ == "__main__":
    sys.exit(arena_slots.main(sys.argv, inputs, compare))
