//===- KernelBench.cpp - the CUDA target's kernels at 8B shapes -----------===//
//
// Times each kernel of the CUDA target at Llama 3 8B's shapes (8192 tokens
// of one sequence, dim 4096, 32 query and 8 kv heads of 128, FFN 14336,
// vocabulary 128256; bf16 activations, f32 master state) with CUDA events:
// 3 warm-up runs, then 20 timed, min and median. GEMMs and attention in
// TFLOP/s (attention counts the causal half: 2 S^2 D H FLOPs forward, 2.5x
// that backward, as FlashAttention's benchmarks do), the memory-bound
// kernels in GB/s of the bytes they must move, against the device-to-device
// copy bandwidth measured in the same run. One JSON object per line;
// bench/gpu/report.py puts them beside PyTorch's numbers.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "Elementwise.h"
#include "Float8.h"
#include "FusedKernels.h"
#include "LinearGemm.h"

#include "titan/Target/CUDA/KernelWorkspaces.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace titanrt::cuda;

namespace {

void check(cudaError_t rc, const char *what) {
  if (rc != cudaSuccess) {
    std::fprintf(stderr, "bench: %s: %s\n", what, cudaGetErrorString(rc));
    std::exit(1);
  }
}

/// A device buffer of `bytes`, filled with small values of type `type`.
struct Buffer {
  void *ptr = nullptr;
  explicit Buffer(size_t bytes, ElementType type = ElementType::F32) {
    check(cudaMalloc(&ptr, bytes), "cudaMalloc");
    size_t elements = bytes / (type == ElementType::F32 ? 4 : 2);
    fill(type, ptr, int64_t(elements), 0.01, nullptr);
  }
  ~Buffer() { cudaFree(ptr); }
  template <typename T> T *as() const { return static_cast<T *>(ptr); }
};

/// min and median milliseconds of `run` over 20 runs after 3 warm-ups.
std::pair<double, double> time(const std::function<void()> &run) {
  for (int i = 0; i < 3; ++i)
    run();
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<double> ms;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 20; ++i) {
    cudaEventRecord(start);
    run();
    cudaEventRecord(stop);
    check(cudaEventSynchronize(stop), "timed run");
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

void report(const std::string &kind, const std::string &name, double work,
            const char *unit, std::pair<double, double> ms) {
  // work: FLOPs or bytes; rate in T(FLOP)/s or GB/s at min and median time.
  double scale = std::string(unit) == "TFLOP/s" ? 1e-12 : 1e-9;
  std::printf("{\"kind\": \"%s\", \"name\": \"%s\", \"unit\": \"%s\", "
              "\"best\": %.2f, \"median\": %.2f, \"min_ms\": %.4f, "
              "\"median_ms\": %.4f}\n",
              kind.c_str(), name.c_str(), unit,
              work * scale / (ms.first * 1e-3),
              work * scale / (ms.second * 1e-3), ms.first, ms.second);
  std::fflush(stdout);
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: the kernel benchmark needs a GPU\n");
    return 77;
  }
  const int64_t tokens = 8192, dim = 4096, heads = 32, kvHeads = 8,
                headDim = 128, ffn = 14336, vocab = 128256;
  const ElementType bf16 = ElementType::BF16;

  // Device-to-device copy: the memory-bound kernels' yardstick.
  {
    size_t bytes = size_t(1) << 30;
    Buffer a(bytes), b(bytes);
    report("copy", "cudaMemcpy D2D 1 GiB", 2.0 * double(bytes), "GB/s",
           time([&] {
             cudaMemcpyAsync(b.ptr, a.ptr, bytes, cudaMemcpyDeviceToDevice);
           }));
  }

  // The linear layers' GEMMs (bf16 operands, f32 accumulation).
  {
    LinearGemms gemms(size_t(titan::cuda::kGemmWorkspaceBytes));
    Buffer workspace(size_t(titan::cuda::kGemmWorkspaceBytes));
    struct Gemm {
      const char *name;
      LinearProduct product;
      int64_t n, k;
      ElementType result;
    };
    const Gemm cases[] = {
        {"wq/wo forward", LinearProduct::Forward, dim, dim, bf16},
        {"wk/wv forward", LinearProduct::Forward, kvHeads * headDim, dim, bf16},
        {"w1/w3 forward", LinearProduct::Forward, ffn, dim, bf16},
        {"w2 forward", LinearProduct::Forward, dim, ffn, bf16},
        {"output forward", LinearProduct::Forward, vocab, dim, bf16},
        {"w1 grad_input", LinearProduct::GradInput, ffn, dim, bf16},
        {"w1 grad_weight", LinearProduct::GradWeight, ffn, dim, bf16},
    };
    for (const Gemm &g : cases) {
      GemmProblem p{g.product, tokens, g.k, g.n, bf16, g.result};
      // Inputs as the CPU kernels take them (KernelABI.h).
      size_t first =
                 size_t(g.product == LinearProduct::Forward ? tokens * g.k
                                                            : tokens * g.n) *
                 2,
             second =
                 size_t(g.product == LinearProduct::GradWeight ? tokens * g.k
                                                               : g.n * g.k) *
                 2,
             out = size_t(g.product == LinearProduct::Forward     ? tokens * g.n
                          : g.product == LinearProduct::GradInput ? tokens * g.k
                                                                  : g.n * g.k) *
                   2;
      Buffer a(first, bf16), b(second, bf16), c(out, bf16);
      gemms.prepare(p);
      report("gemm", g.name, 2.0 * double(tokens) * double(g.n) * double(g.k),
             "TFLOP/s", time([&] {
               gemms.run(p, a.ptr, b.ptr, c.ptr, workspace.ptr, nullptr);
             }));
    }
  }

  // Float8 GEMMs as titan.scaled_matmul's forward runs them: cuBLASLt's
  // FP8 GEMM (e4m3 x e4m3, f32 accumulation, f32 product) and the fused
  // pass that applies the inverse scales and rounds to bf16.
  {
    LinearGemms gemms(size_t(titan::cuda::kGemmWorkspaceBytes));
    Buffer workspace(size_t(titan::cuda::kGemmWorkspaceBytes));
    struct Gemm {
      const char *name;
      int64_t n, k;
    };
    const Gemm cases[] = {{"fp8 wq/wo forward", dim, dim},
                          {"fp8 w1/w3 forward", ffn, dim},
                          {"fp8 w2 forward", dim, ffn}};
    ElementType e4m3 = ElementType::F8E4M3FN;
    Buffer scales(64);
    for (const Gemm &g : cases) {
      GemmProblem p{LinearProduct::Forward, tokens, g.k, g.n, e4m3,
                    ElementType::F32,       false,  e4m3};
      // Byte patterns of small floats: finite e4m3 codes.
      Buffer a(size_t(tokens * g.k)), b(size_t(g.n * g.k)),
          product(size_t(tokens * g.n) * 4), out(size_t(tokens * g.n) * 2);
      gemms.prepare(p);
      report("gemm", g.name, 2.0 * double(tokens) * double(g.n) * double(g.k),
             "TFLOP/s", time([&] {
               gemms.run(p, a.ptr, b.ptr, product.ptr, workspace.ptr, nullptr);
               applyInverseScales(product.as<float>(), bf16, out.ptr, tokens,
                                  g.n, scales.as<float>(), false,
                                  scales.as<float>(), false, nullptr);
             }));
    }
  }

  // Attention: cuDNN's flash attention, causal GQA 32/8, head dim 128.
  {
    AttentionShape s{1, tokens, heads, kvHeads, headDim};
    size_t q = size_t(tokens * heads * headDim) * 2,
           kv = size_t(tokens * kvHeads * headDim) * 2;
    Buffer bq(q, bf16), bk(kv, bf16), bv(kv, bf16), bo(q, bf16), bdo(q, bf16),
        bdq(q, bf16), bdk(kv, bf16), bdv(kv, bf16),
        lse(size_t(tokens * heads) * 4);
    size_t fwdBytes =
        size_t(titan::cuda::attentionWorkspaceBytes(1, heads, tokens));
    size_t bwdBytes = size_t(titan::cuda::attentionGradWorkspaceBytes(
        1, heads, tokens, headDim, /*deterministic=*/false));
    Buffer workspace(std::max(fwdBytes, bwdBytes));
    CudnnAttention attention;
    double scale = 1.0 / 11.313708498984761;
    double fwdFlops = 2.0 * double(tokens) * double(tokens) * double(headDim) *
                      double(heads); // 4 S^2 D H, causal half
    if (haveCudnnAttention()) {
      report("attention", "cuDNN flash forward", fwdFlops, "TFLOP/s", time([&] {
               attention.forward(bf16, bq.ptr, bk.ptr, bv.ptr, bo.ptr,
                                 lse.as<float>(), s, SdpaViews::whole(s.seq),
                                 scale, workspace.ptr, fwdBytes, nullptr);
             }));
      report("attention", "cuDNN flash backward", 2.5 * fwdFlops, "TFLOP/s",
             time([&] {
               attention.backward(bf16, bq.ptr, bk.ptr, bv.ptr, bo.ptr,
                                  lse.as<float>(), bdo.ptr, bdq.ptr, bdk.ptr,
                                  bdv.ptr, s, SdpaViews::whole(s.seq), scale,
                                  /*deterministic=*/false, workspace.ptr,
                                  bwdBytes, nullptr);
             }));
    }
  }

  // Memory-bound kernels: bytes each must read and write at least.
  {
    int64_t n = tokens * dim, nf = tokens * ffn;
    Buffer x(size_t(n) * 2, bf16), y(size_t(n) * 2, bf16),
        dx(size_t(n) * 2, bf16), w(size_t(dim) * 2, bf16),
        dw(size_t(dim) * 2, bf16);
    Buffer partials(
        size_t(titan::cuda::rmsNormGradWorkspaceBytes(tokens, dim)));
    report("fused", "rms_norm", double(2 * n * 2), "GB/s", time([&] {
             rmsNorm(bf16, x.ptr, w.ptr, y.ptr, tokens, dim, 1e-5, nullptr);
           }));
    report("fused", "rms_norm_grad", double(3 * n * 2), "GB/s", time([&] {
             rmsNormGrad(bf16, x.ptr, w.ptr, y.ptr, dx.ptr, dw.ptr, tokens, dim,
                         1e-5, partials.ptr, nullptr);
           }));
    Buffer gate(size_t(nf) * 2, bf16), up(size_t(nf) * 2, bf16),
        h(size_t(nf) * 2, bf16), dgate(size_t(nf) * 2, bf16),
        dup(size_t(nf) * 2, bf16);
    report("fused", "swiglu", double(3 * nf * 2), "GB/s",
           time([&] { swiglu(bf16, gate.ptr, up.ptr, h.ptr, nf, nullptr); }));
    report("fused", "swiglu_grad", double(5 * nf * 2), "GB/s", time([&] {
             swigluGrad(bf16, gate.ptr, up.ptr, h.ptr, dgate.ptr, dup.ptr, nf,
                        nullptr);
           }));
    Buffer angles(size_t(tokens * headDim / 2) * 4);
    ropeAngles(angles.as<float>(), tokens, headDim / 2, 500000.0, false, 1, 1,
               1, 1, nullptr);
    report("fused", "rope (q, in place)", double(2 * n * 2), "GB/s", time([&] {
             rope(bf16, x.ptr, angles.as<float>(), x.ptr, 1, tokens, heads,
                  headDim / 2, false, nullptr);
           }));
    report("fused", "add (residual)", double(3 * n * 2), "GB/s",
           time([&] { add(bf16, x.ptr, y.ptr, dx.ptr, n, nullptr); }));
    std::vector<int32_t> ids(static_cast<size_t>(tokens));
    for (int64_t i = 0; i < tokens; ++i)
      ids[size_t(i)] = int32_t((i * 7919) % vocab);
    Buffer tokenIds(size_t(tokens) * 4);
    cudaMemcpy(tokenIds.ptr, ids.data(), ids.size() * 4,
               cudaMemcpyHostToDevice);
    Buffer table(size_t(vocab * dim) * 2, bf16);
    report("fused", "embedding", double(2 * n * 2), "GB/s", time([&] {
             embedding(bf16, table.ptr, tokenIds.as<int32_t>(), x.ptr, tokens,
                       vocab, dim, nullptr, nullptr);
           }));
    Buffer logits(size_t(tokens * vocab) * 4), loss(4),
        rows(size_t(tokens) * 4);
    fill(ElementType::F32, loss.ptr, 1, 1.0, nullptr);
    report("fused", "cross_entropy (f32 logits)",
           double(tokens) * double(vocab) * 4, "GB/s", time([&] {
             crossEntropy(ElementType::F32, logits.ptr, tokenIds.as<int32_t>(),
                          loss.as<float>(), tokens, vocab, rows.ptr, nullptr);
           }));
    report("fused", "cross_entropy_grad (in place)",
           2.0 * double(tokens) * double(vocab) * 4, "GB/s", time([&] {
             crossEntropyGrad(ElementType::F32, logits.ptr,
                              tokenIds.as<int32_t>(), loss.as<float>(),
                              logits.ptr, tokens, vocab, nullptr);
           }));
  }
  {
    // AdamW on one FFN weight (f32 master state): 4 reads, 3 writes.
    int64_t n = ffn * dim;
    Buffer p(size_t(n) * 4), g(size_t(n) * 4), m(size_t(n) * 4),
        v(size_t(n) * 4), scalars(16);
    fill(ElementType::F32, scalars.ptr, 2, 0.5, nullptr);
    int64_t step = 3;
    cudaMemcpy(scalars.as<char>() + 8, &step, 8, cudaMemcpyHostToDevice);
    report("fused", "adamw (f32 state)", double(7 * n * 4), "GB/s", time([&] {
             adamwStep({p.as<float>(), g.as<float>(), m.as<float>(),
                        v.as<float>(), n},
                       scalars.as<float>(), scalars.as<float>() + 1,
                       reinterpret_cast<int64_t *>(scalars.as<char>() + 8),
                       {0.9, 0.95, 1e-8, 0.1, 1.0}, nullptr);
           }));
    std::vector<NormTensor> tensors(8, NormTensor{g.as<float>(), n});
    Buffer norm(4), ws(size_t(titan::cuda::globalNormWorkspaceBytes(8)));
    report("fused", "global_norm (8 tensors)", double(8 * n * 4), "GB/s",
           time([&] {
             globalNorm(tensors.data(), 8, norm.as<float>(), ws.ptr, nullptr);
           }));
  }
  return 0;
}
