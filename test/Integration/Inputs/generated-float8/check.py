"""Inputs for, and the references of, generated-float8.test.

  check.py inputs OUT        gate, up, x (bf16) in the arena's first 3 MiB
  check.py compare ARENA     the step's results against the references

PyTorch (Debian's, which predates float8 types) gives the amaxes (max |v|
in f32) and torchao's scales: f32(fmax / max(f64(amax), 1e-12)), rounded
down to a power of two for x; both must match bit for bit. The float8
codes must equal, bit for bit, those of the runtime library's hand-written
quantize kernel (saturating, round to nearest even; the harness ran it
with the step's scales); z's transposed copy those of the library's
transposed cast, and z's untransposed codes their transpose. y (SwiGLU, whose exp is a polynomial in the
generated kernel) must be within one bf16 ulp of PyTorch's, and its amax
exactly the largest |y| of the y the kernel wrote.

SwiGLU's backward: the step's casts recompute the gradients (no kernel
writes them); a second swiglu_grad writes them as the reference. Those must
be within one bf16 ulp of PyTorch's autograd; the amaxes must equal their
largest |value| and the scales torchao's, bit for bit; and the codes of both
layouts must equal the library's transposed cast of the reference
gradients with the step's scales, bit for bit, as must u2's transposed cast
(in the kernel reducing the gradients' amaxes) with x's scale.
"""
import sys

import torch

N = 135173
ROWS, COLS = 131, 1031
MB = 1 << 20


def bf16_at(arena, offset, count=N):
    return torch.frombuffer(arena, dtype=torch.bfloat16, count=count, offset=offset)


def f32_at(arena, offset):
    return float(torch.frombuffer(arena, dtype=torch.float32, count=1, offset=offset)[0])


def codes_at(arena, offset, count=N):
    return torch.frombuffer(arena, dtype=torch.uint8, count=count, offset=offset)


def reference_scale(amax, fmax, power_of_2):
    scale = torch.tensor(fmax / max(amax, 1e-12), dtype=torch.float64).float()
    if power_of_2:
        scale = torch.exp2(torch.floor(torch.log2(scale)))
    return float(scale)


def inputs(path):
    g = torch.Generator().manual_seed(5)
    gate = torch.randn(N, generator=g) * 3
    up = torch.randn(N, generator=g)
    # Values across float8's range, its subnormals and a tie or two.
    x = torch.randn(N, generator=g) * torch.exp2(
        torch.randint(-20, 12, (N,), generator=g).float())
    x[:4] = torch.tensor([0.0, -0.0, 1.0, -3000.0])
    z = torch.randn(ROWS * COLS, generator=g) * torch.exp2(
        torch.randint(-8, 8, (ROWS * COLS,), generator=g).float())
    g2 = torch.randn(ROWS * COLS, generator=g) * 3
    u2 = torch.randn(ROWS * COLS, generator=g)
    dy2 = torch.randn(ROWS * COLS, generator=g) * torch.exp2(
        torch.randint(-12, 4, (ROWS * COLS,), generator=g).float())
    arena = bytearray(19 * MB)
    for offset, t in ((0, gate), (MB, up), (2 * MB, x), (10 * MB, z),
                      (16 * MB, g2), (17 * MB, u2), (18 * MB, dy2)):
        data = bytes(t.to(torch.bfloat16).view(torch.uint8).contiguous().tolist())
        arena[offset:offset + len(data)] = data
    open(path, "wb").write(arena)


def compare(path_arena):
    arena = bytearray(open(path_arena, "rb").read())
    gate, up, x = (bf16_at(arena, i * MB) for i in range(3))
    y = bf16_at(arena, 3 * MB)
    want_y = (torch.nn.functional.silu(gate.float()) * up.float()).to(torch.bfloat16)
    ulps = (y.view(torch.int16).int() - want_y.view(torch.int16).int()).abs().max()
    print(f"swiglu: max {int(ulps)} bf16 ulp from PyTorch")
    ok = int(ulps) <= 1
    for name, v, base, library, fmax, pow2 in (
            ("y e4m3", y, 4 * MB, 8 * MB, 448.0, False),
            ("x e5m2", x, 6 * MB, 9 * MB, 57344.0, True)):
        amax = float(v.float().abs().max())
        scale = reference_scale(amax, fmax, pow2)
        got_amax, got_scale = f32_at(arena, base), f32_at(arena, base + 256)
        wrong = int((codes_at(arena, base + MB) != codes_at(arena, library)).sum())
        print(f"{name}: amax {'equal' if got_amax == amax else f'{got_amax} != {amax}'}, "
              f"scale {'equal' if got_scale == scale else f'{got_scale} != {scale}'}, "
              f"{wrong} of {N} codes differ from the library's")
        ok = ok and got_amax == amax and got_scale == scale and wrong == 0
    z = bf16_at(arena, 10 * MB, ROWS * COLS)
    amax = float(z.float().abs().max())
    scale = reference_scale(amax, 448.0, False)
    got_amax, got_scale = f32_at(arena, 11 * MB), f32_at(arena, 11 * MB + 256)
    library = codes_at(arena, 14 * MB, ROWS * COLS)
    wrong_t = int((codes_at(arena, 13 * MB, ROWS * COLS) != library).sum())
    wrong = int((codes_at(arena, 12 * MB, ROWS * COLS).view(ROWS, COLS).t().reshape(-1)
                 != library).sum())
    print(f"z e4m3: amax {'equal' if got_amax == amax else f'{got_amax} != {amax}'}, "
          f"scale {'equal' if got_scale == scale else f'{got_scale} != {scale}'}, "
          f"{wrong_t} of {ROWS * COLS} transposed codes and {wrong} untransposed "
          f"differ from the library's transposed cast")
    ok = ok and got_amax == amax and got_scale == scale and wrong == 0 and wrong_t == 0
    ok = compare_swiglu_grad(arena) and ok
    sys.exit(0 if ok else 1)


def ulps(got, want):
    return int((got.view(torch.int16).int() - want.view(torch.int16).int()).abs().max())


def compare_swiglu_grad(arena):
    count = ROWS * COLS
    g2, u2, dy2 = (bf16_at(arena, i * MB, count).float().requires_grad_()
                   for i in (16, 17, 18))
    h = torch.nn.functional.silu(g2) * u2
    want = torch.autograd.grad(h, (g2, u2), dy2.detach())
    ok = True
    for i, (name, kept, base, codes) in enumerate((
            ("dg", 19 * MB, 21 * MB, 22 * MB),
            ("du", 20 * MB, 21 * MB + 512, 24 * MB))):
        grad = bf16_at(arena, kept, count)
        off = ulps(grad, want[i].to(torch.bfloat16))
        amax = float(grad.float().abs().max())
        scale = reference_scale(amax, 57344.0, True)
        got_amax, got_scale = f32_at(arena, base), f32_at(arena, base + 256)
        library = codes_at(arena, (27 + i) * MB, count)
        wrong_t = int((codes_at(arena, codes + MB, count) != library).sum())
        wrong = int((codes_at(arena, codes, count).view(ROWS, COLS).t().reshape(-1)
                     != library).sum())
        print(f"{name} e5m2 (recomputed in its casts): max {off} bf16 ulp from PyTorch, "
              f"amax {'equal' if got_amax == amax else f'{got_amax} != {amax}'}, "
              f"scale {'equal' if got_scale == scale else f'{got_scale} != {scale}'}, "
              f"{wrong_t} of {count} transposed codes and {wrong} untransposed "
              f"differ from the library's transposed cast")
        ok = (ok and off <= 1 and got_amax == amax and got_scale == scale
              and wrong == 0 and wrong_t == 0)
    wrong_u = int((codes_at(arena, 26 * MB, count)
                   != codes_at(arena, 28 * MB + MB // 2, count)).sum())
    print(f"u2 e5m2 (with the gradients' amaxes): {wrong_u} of {count} transposed "
          f"codes differ from the library's")
    return ok and wrong_u == 0


if __name__ == "__main__":
    if sys.argv[1] == "inputs":
        inputs(sys.argv[2])
    else:
        compare(sys.argv[2])
