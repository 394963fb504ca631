"""Inputs for, and the references of, generated-adamw.test.

  check.py inputs OUT        the step's slots (arena_slots.py)
  check.py compare ARENA     the step's results against PyTorch

References:
- titan.adamw_scalars and titan.adamw as their descriptions define them
  (TitanOps.td), term by term in PyTorch: the scalars in Python floats
  (f64, math.pow as the C library computes it) and f32 tensors, each
  element's update in the parameter's dtype, one rounded tensor op per
  product and sum. The generated kernels compute exactly these: equal
  bits (a NaN or an infinite norm's coefficient: NaN, and the update
  keeps the state bit for bit).
- torch.nn.utils.clip_grad_norm_'s coefficient (its arithmetic on the f32
  norm: max_norm / (norm + 1e-6), clamped to 1, multiplied into the
  gradients) and torch.optim.AdamW (single-tensor path, foreach=False) on
  the same state at the same step. PyTorch moves exp_avg by lerp and adds
  -step_size * (exp_avg / denom) where titan multiplies and adds, and
  (step_size * m) / denom: roundings apart, so f32 moments agree within
  2^-21 relative (the last two bits; exp_avg's relative to the magnitudes
  of the two terms it sums) and parameters within 2^-22; f64 within 1e-13
  (both take the f32 norm's f32 coefficient).
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import arena_slots  # noqa: E402

BETA1, BETA2, EPS, WEIGHT_DECAY, MAX_NORM = 0.9, 0.95, 1e-8, 0.1, 1.0
STEP = 6  # the 0-based step about to run: bias corrections at t = 7
PARAMS = [("1", (40001,), torch.float32), ("2", (3, 37), torch.float32),
          ("3", (1,), torch.float32), ("4", (64,), torch.float64)]
# Updated with a non-finite norm's coefficient (NaN) and a gradient holding
# that value: titan.adamw keeps the state.
SKIPPED = [("5", (37,), torch.float32, "nan"),
           ("6", (37,), torch.float32, "inf")]

SLOTS = [
    ("lr", (), torch.float32),
    ("norm", (), torch.float32),
    ("norm64", (), torch.float32),
    ("step", (), torch.int64),
    ("clip_coef", (), torch.float32),
    ("decay", (), torch.float32),
    ("step_size", (), torch.float32),
    ("bias_correction2_sqrt", (), torch.float32),
    ("clip_coef64", (), torch.float64),
    ("decay64", (), torch.float64),
    ("step_size64", (), torch.float64),
    ("bias_correction2_sqrt64", (), torch.float64),
    ("norm_unclipped", (), torch.float32),
    ("norm_nan", (), torch.float32),
    ("norm_inf", (), torch.float32),
    ("clip_coef_unclipped", (), torch.float32),
    ("clip_coef_nan", (), torch.float32),
    ("clip_coef_inf", (), torch.float32),
] + [(kind + name, shape, dtype) for name, shape, dtype in PARAMS
     for kind in "pgmv"] + [(kind + name, shape, dtype)
                            for name, shape, dtype, _ in SKIPPED
                            for kind in "pgmv"]


def at(arena, name):
    return arena_slots.at(arena, SLOTS, name)


def inputs(path):
    gen = torch.Generator().manual_seed(11)
    values = {
        "lr": torch.tensor(3e-4),
        "norm": torch.tensor(3.7),    # clips: coefficient 1 / 3.7
        "norm64": torch.tensor(2.5),  # clips
        "norm_unclipped": torch.tensor(0.25),
        "norm_nan": torch.tensor(float("nan")),
        "norm_inf": torch.tensor(float("inf")),
        "step": torch.tensor(STEP),
    }
    for name, shape, dtype in PARAMS:
        values["p" + name] = torch.randn(shape, generator=gen, dtype=dtype)
        values["g" + name] = torch.randn(shape, generator=gen, dtype=dtype)
        values["m" + name] = 0.1 * torch.randn(shape, generator=gen,
                                               dtype=dtype)
        values["v"
               + name] = 0.01 * torch.rand(shape, generator=gen, dtype=dtype)
    values["v3"][0] = 0.0  # sqrt(0): the update is m / eps-scaled
    for name, shape, dtype, bad in SKIPPED:
        for kind in "pgmv":
            values[kind + name] = torch.randn(shape, generator=gen,
                                              dtype=dtype).abs()
        values["g" + name][5] = float(bad)
    arena_slots.write(path, SLOTS, values)


def scalars(lr, norm, dtype):
    """titan.adamw_scalars: (clip_coef, decay, step_size,
    bias_correction2_sqrt) rounded to `dtype`."""
    f32 = torch.float32
    one = torch.tensor(1.0, dtype=f32)
    coef = torch.tensor(MAX_NORM, dtype=f32) * (
        one / (norm.to(f32) + torch.tensor(1e-6, dtype=f32)))
    coef = one if one < coef else coef
    # A non-finite norm's coefficient is NaN (PyTorch's is 0 for an
    # infinite one): titan.adamw's sign to skip the step.
    if not torch.isfinite(norm):
        coef = torch.tensor(float("nan"), dtype=f32)
    lr = float(lr)
    t = float(STEP + 1)
    bias1 = 1.0 - math.pow(BETA1, t)
    bias2 = 1.0 - math.pow(BETA2, t)
    return (coef.to(dtype), torch.tensor(1.0 - lr * WEIGHT_DECAY, dtype=dtype),
            torch.tensor(-(lr / bias1), dtype=dtype),
            torch.tensor(math.sqrt(bias2), dtype=dtype))


def update(p, g, m, v, coef, decay, step_size, bias2_sqrt):
    """titan.adamw's element, one rounded op at a time in p's dtype."""
    def c(x):
        return torch.tensor(x, dtype=p.dtype)
    g = g * coef
    decayed = p * decay
    m = m * c(BETA1) + c(1.0 - BETA1) * g
    v = v * c(BETA2) + (c(1.0 - BETA2) * g) * g
    denom = torch.sqrt(v) / bias2_sqrt + c(EPS)
    return decayed + (step_size * m) / denom, m, v


def torch_adamw(p, g, m, v, lr, norm):
    """clip_grad_norm_'s coefficient, then torch.optim.AdamW's step."""
    param = torch.nn.Parameter(p.clone())
    clip_coef = MAX_NORM / (norm.to(torch.float32) + 1e-6)
    param.grad = g.clone().mul_(torch.clamp(clip_coef, max=1.0))
    opt = torch.optim.AdamW([param], lr=float(lr), betas=(BETA1, BETA2),
                            eps=EPS, weight_decay=WEIGHT_DECAY, foreach=False)
    opt.state[param] = {"step": torch.tensor(float(STEP)),
                        "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
    opt.step()
    state = opt.state[param]
    return param.detach(), state["exp_avg"], state["exp_avg_sq"]


def same_bits(name, got, want):
    if want.isnan().all():
        ok = bool(got.isnan().all())
        print(f"{name}: {'NaN' if ok else 'not NaN'}")
        return ok
    ok = torch.equal(got.reshape(-1).view(torch.uint8),
                     want.reshape(-1).contiguous().view(torch.uint8))
    bad = (got != want).sum().item() if got.shape == want.shape else "all"
    print(f"{name}: {'equal bits' if ok else f'{bad} elements differ'}")
    return ok


def near(name, got, want, rel, scale=None):
    """|got - want| within `rel` of `scale` (the magnitude of what was
    summed; |want| by default)."""
    scale = want.double().abs() if scale is None else scale.double()
    e = float(((got.double() - want.double()).abs()
               / (rel * scale.clamp_min(1e-30))).max())
    print(f"{name}: worst {e:.2e} of the tolerance")
    return e <= 1


def compare(arena, fresh):
    ok = True
    lr, step = at(fresh, "lr"), at(fresh, "step")
    assert int(step) == STEP
    for suffix, norm, dtype in [("", "norm", torch.float32),
                                ("64", "norm64", torch.float64)]:
        want = scalars(lr, at(fresh, norm), dtype)
        for name, w in zip(["clip_coef", "decay", "step_size",
                            "bias_correction2_sqrt"], want):
            ok &= same_bits(name + suffix, at(arena, name + suffix), w)
    for suffix in ["unclipped", "nan", "inf"]:
        want = scalars(lr, at(fresh, "norm_" + suffix), torch.float32)[0]
        ok &= same_bits("clip_coef_" + suffix,
                        at(arena, "clip_coef_" + suffix), want)
    for name, _, dtype in PARAMS:
        suffix = "64" if dtype == torch.float64 else ""
        norm = at(fresh, "norm64" if suffix else "norm")
        state = [at(fresh, k + name) for k in "pgmv"]
        got = [at(arena, k + name) for k in "pmv"]
        exact = update(*state, *scalars(lr, norm, dtype))
        for kind, g, w in zip("pmv", got, exact):
            ok &= same_bits(f"{kind}{name} (titan.adamw)", g, w)
        ref = torch_adamw(*state, lr, norm)
        rel = 1e-13 if dtype == torch.float64 else 2 ** -21
        # m sums terms of either sign: relative to their magnitudes.
        coef = scalars(lr, norm, dtype)[0]
        terms = (BETA1 * state[2].abs()
                 + (1 - BETA1) * (state[1] * coef).abs())
        ok &= near(f"m{name} vs torch.optim.AdamW", got[1], ref[1], rel,
                   terms)
        ok &= near(f"v{name} vs torch.optim.AdamW", got[2], ref[2], rel)
        # The parameter moves by about lr: its roundings differ in at most
        # the last two bits.
        ok &= near(f"p{name} vs torch.optim.AdamW", got[0], ref[0],
                   1e-13 if dtype == torch.float64 else 2 ** -22)
    for name, _, _, bad in SKIPPED:
        for kind in "pmv":
            ok &= same_bits(f"{kind}{name} ({bad} norm: kept)",
                            at(arena, kind + name), at(fresh, kind + name))
    return ok


if __name__ == "__main__":
    sys.exit(arena_slots.main(sys.argv, inputs, compare))
