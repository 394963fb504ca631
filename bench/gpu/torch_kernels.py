"""PyTorch's side of bench/gpu/KernelBench.cpp: torch.matmul at the same 8B
GEMM shapes, torch._scaled_mm at the FP8 ones, and SDPA (causal, GQA via
enable_gqa) forward and backward at seq 8192, 32/8 heads of 128, bf16, on
the same random data as KernelBench's (randn; weights randn * 0.01, FP8
operands (randn * 0.1) in e4m3), timed the same way (5 warm-up runs, 50
timed with CUDA events, min and median). Attention twice: PyTorch's
default (the backend SDPA picks, its default non-deterministic backward)
and deterministic (torch.use_deterministic_algorithms(True), which makes
the flash and memory-efficient backward deterministic and excludes
cuDNN's). One JSON object per line, the same fields as KernelBench."""
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def timed(run):
    for _ in range(5):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(50):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[0], times[len(times) // 2]


def report(kind, name, work, unit, ms, **extra):
    scale = 1e-12 if unit == "TFLOP/s" else 1e-9
    print(json.dumps({"kind": kind, "name": name, "unit": unit,
                      "best": round(work * scale / (ms[0] * 1e-3), 2),
                      "median": round(work * scale / (ms[1] * 1e-3), 2),
                      "min_ms": round(ms[0], 4), "median_ms": round(ms[1], 4),
                      "impl": "torch " + torch.__version__, **extra}), flush=True)


def failed(kind, name, error):
    """A row for a measurement PyTorch refused (e.g. no SDPA backend for the
    problem), so the table says why instead of stopping."""
    print(json.dumps({"kind": kind, "name": name, "error": str(error)[:200],
                      "impl": "torch " + torch.__version__}), flush=True)


def sdpa_choice(q, k, v):
    """The backend SDPA picks for the problem by default (a private API:
    None where this PyTorch has no such function)."""
    try:
        return SDPBackend(torch._fused_sdp_choice(q, k, v, is_causal=True,
                                                  enable_gqa=True)).name
    except Exception:  # noqa: BLE001 - informative only
        return None


def attention(tokens, heads, kv, hd, dev, bf16):
    q = torch.randn(1, heads, tokens, hd, device=dev, dtype=bf16, requires_grad=True)
    k = torch.randn(1, kv, tokens, hd, device=dev, dtype=bf16, requires_grad=True)
    v = torch.randn(1, kv, tokens, hd, device=dev, dtype=bf16, requires_grad=True)
    fwd_flops = 2.0 * tokens * tokens * hd * heads
    attend = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                     enable_gqa=True)
    backend = sdpa_choice(q, k, v)
    try:
        report("attention", "SDPA default forward", fwd_flops, "TFLOP/s",
               timed(attend), backend=backend)
        out = attend()
        grad = torch.randn_like(out)
        report("attention", "SDPA default backward", 2.5 * fwd_flops, "TFLOP/s",
               timed(lambda: torch.autograd.grad(out, (q, k, v), grad,
                                                 retain_graph=True)),
               backend=backend)
    except RuntimeError as e:
        failed("attention", "SDPA default backward", e)
    torch.use_deterministic_algorithms(True)
    try:
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
            backend = sdpa_choice(q, k, v)
            out = attend()
            grad = torch.randn_like(out)
            report("attention", "SDPA deterministic backward", 2.5 * fwd_flops,
                   "TFLOP/s", timed(lambda: torch.autograd.grad(
                       out, (q, k, v), grad, retain_graph=True)), backend=backend)
    except RuntimeError as e:
        failed("attention", "SDPA deterministic backward", e)
    finally:
        torch.use_deterministic_algorithms(False)


def main():
    dev, bf16 = "cuda", torch.bfloat16
    tokens, dim, heads, kv, hd, ffn, vocab = 8192, 4096, 32, 8, 128, 14336, 128256
    nbytes = 1 << 30
    a = torch.randn(nbytes // 4, device=dev)
    b = torch.empty_like(a)
    report("copy", "cudaMemcpy D2D 1 GiB", 2.0 * nbytes, "GB/s",
           timed(lambda: b.copy_(a)))
    del a, b
    # y = x w^T, dx = dy w, dw = dy^T x, as titan's linear GEMMs.
    cases = [("wq/wo forward", "fwd", dim, dim), ("wk/wv forward", "fwd", kv * hd, dim),
             ("w1/w3 forward", "fwd", ffn, dim), ("w2 forward", "fwd", dim, ffn),
             ("output forward", "fwd", vocab, dim), ("w1 grad_input", "dx", ffn, dim),
             ("w1 grad_weight", "dw", ffn, dim)]
    for name, which, n, k in cases:
        w = torch.randn(n, k, device=dev, dtype=bf16) * 0.01
        if which == "fwd":
            x = torch.randn(tokens, k, device=dev, dtype=bf16)
            run = lambda: torch.matmul(x, w.t())
        elif which == "dx":
            dy = torch.randn(tokens, n, device=dev, dtype=bf16)
            run = lambda: torch.matmul(dy, w)
        else:
            dy = torch.randn(tokens, n, device=dev, dtype=bf16)
            x = torch.randn(tokens, k, device=dev, dtype=bf16)
            run = lambda: torch.matmul(dy.t(), x)
        report("gemm", name, 2.0 * tokens * n * k, "TFLOP/s", timed(run))
    # torch._scaled_mm at the same shapes as titan's FP8 GEMMs: e4m3
    # operands, tensorwise scales, bf16 out.
    one = torch.ones((), device=dev)
    for name, n, k in [("fp8 wq/wo forward", dim, dim), ("fp8 w1/w3 forward", ffn, dim),
                       ("fp8 w2 forward", dim, ffn)]:
        x8 = (torch.randn(tokens, k, device=dev) * 0.1).to(torch.float8_e4m3fn)
        w8 = (torch.randn(n, k, device=dev) * 0.1).to(torch.float8_e4m3fn)
        run = lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one,
                                       out_dtype=bf16)
        report("gemm", name, 2.0 * tokens * n * k, "TFLOP/s", timed(run))
    attention(tokens, heads, kv, hd, dev, bf16)


if __name__ == "__main__":
    main()
