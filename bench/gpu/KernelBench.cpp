//===- KernelBench.cpp - the CUDA target's kernels at 8B shapes -----------===//
//
// Times each kernel of the CUDA target at Llama 3 8B's shapes (8192 tokens
// of one sequence, dim 4096, 32 query and 8 kv heads of 128, FFN 14336,
// vocabulary 128256; bf16 activations, f32 master state) with CUDA events:
// 5 warm-up runs, then 50 timed, min and median. Every input is random
// data drawn as torch_kernels.py draws PyTorch's (normals of the same
// scale, see RandomPools): constants or zeros would flatter titan (an H200
// multiplied zeros 13% faster than random bf16). GEMMs and attention in
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

#include "LowPrecision.h"
#include "titan/Contract/CUDAWorkspaces.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
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

/// How a buffer's elements are drawn: torch.randn() * scale.
struct Draw {
  double scale = 1.0;
  bool operator<(const Draw &o) const { return scale < o.scale; }
};

/// Random inputs on the device: per element type and draw, a pool of
/// normals from a fixed seed, rounded on the host to the type and uploaded
/// once, then tiled over each buffer with device copies (drawing gigabytes
/// on the host would take longer than the benchmark). The pool's length is
/// odd and shares no factor with the 8B shapes' row lengths (4096, 14336,
/// 128256), so neighbouring rows never hold the same values.
class RandomPools {
public:
  static constexpr size_t kElements = 4194301;

  void fill(void *dst, size_t bytes, Dtype type, Draw draw) {
    size_t width = size_t(dtypeBytes(type)), poolBytes = kElements * width;
    const char *src = static_cast<const char *>(pool(type, draw));
    for (size_t offset = 0; offset < bytes; offset += poolBytes)
      check(cudaMemcpy(static_cast<char *>(dst) + offset, src,
                       std::min(poolBytes, bytes - offset),
                       cudaMemcpyDeviceToDevice),
            "tiling random inputs");
  }

private:
  const void *pool(Dtype type, Draw draw) {
    void *&device = pools[{int(type), draw}];
    if (device)
      return device;
    if (normals.empty()) {
      std::mt19937_64 generator(20251202);
      std::normal_distribution<float> normal;
      normals.resize(kElements);
      for (float &x : normals)
        x = normal(generator);
    }
    std::vector<uint8_t> host(kElements * size_t(dtypeBytes(type)));
    for (size_t i = 0; i < kElements; ++i) {
      float x = float(normals[i] * draw.scale);
      switch (type) {
      case Dtype::f32:
        std::memcpy(&host[i * 4], &x, 4);
        break;
      case Dtype::bf16: {
        uint16_t bits = titanrt::floatToBf16(x);
        std::memcpy(&host[i * 2], &bits, 2);
        break;
      }
      case Dtype::f8E4M3FN:
        host[i] = titanrt::floatToFp8(x, titanrt::Dtype::f8E4M3FN, true);
        break;
      default:
        std::fprintf(stderr, "bench: no random pool for this type\n");
        std::exit(1);
      }
    }
    check(cudaMalloc(&device, host.size()), "cudaMalloc");
    check(cudaMemcpy(device, host.data(), host.size(), cudaMemcpyHostToDevice),
          "uploading random inputs");
    return device;
  }

  std::vector<float> normals;
  std::map<std::pair<int, Draw>, void *> pools;
};

/// The process's pools, never destroyed: their device memory goes with the
/// process, not with static destructors that may run after the CUDA
/// runtime has unloaded.
RandomPools &randomPools() {
  static RandomPools *pools = new RandomPools;
  return *pools;
}

/// A device buffer of `bytes` of random `type` elements drawn as `draw`
/// says.
struct Buffer {
  void *ptr = nullptr;
  explicit Buffer(size_t bytes, Dtype type = Dtype::f32, Draw draw = {}) {
    check(cudaMalloc(&ptr, bytes), "cudaMalloc");
    randomPools().fill(ptr, bytes, type, draw);
  }
  ~Buffer() { cudaFree(ptr); }
  template <typename T> T *as() const { return static_cast<T *>(ptr); }
};

/// min and median milliseconds of `run` over 50 runs after 5 warm-ups.
std::pair<double, double> time(const std::function<void()> &run) {
  for (int i = 0; i < 5; ++i)
    run();
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<double> ms;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 50; ++i) {
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
  const Dtype bf16 = Dtype::bf16;

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
      Dtype result;
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
      // As torch_kernels.py: activations and gradients randn, weights
      // randn * 0.01.
      Draw weights = {g.product == LinearProduct::GradWeight ? 1.0 : 0.01};
      Buffer a(first, bf16), b(second, bf16, weights), c(out, bf16);
      gemms.prepare(p);
      report("gemm", g.name, 2.0 * double(tokens) * double(g.n) * double(g.k),
             "TFLOP/s", time([&] {
               gemms.run(p, a.ptr, b.ptr, c.ptr, workspace.ptr, nullptr);
             }));
    }
  }

  // Float8 GEMMs as titan.scaled_matmul's forward runs them: the inverse
  // scales, then cuBLASLt's FP8 GEMM (e4m3 x e4m3, f32 accumulation) scaling
  // by them and rounding to bf16.
  {
    LinearGemms gemms(size_t(titan::cuda::kGemmWorkspaceBytes));
    struct Gemm {
      const char *name;
      int64_t n, k;
    };
    const Gemm cases[] = {{"fp8 wq/wo forward", dim, dim},
                          {"fp8 w1/w3 forward", ffn, dim},
                          {"fp8 w2 forward", dim, ffn}};
    Dtype e4m3 = Dtype::f8E4M3FN;
    Buffer scales(64);
    fill(Dtype::f32, scales.ptr, 16, 1.0, nullptr);
    for (const Gemm &g : cases) {
      // As torch_kernels.py: (randn * 0.1).to(float8_e4m3fn) both.
      Buffer a(size_t(tokens * g.k), e4m3, {0.1}),
          b(size_t(g.n * g.k), e4m3, {0.1}), out(size_t(tokens * g.n) * 2),
          workspace(
              size_t(titan::cuda::scaledMatmulWorkspace(
                         titan::cuda::ScaledMatmulForm::Linear, tokens * g.k,
                         g.n * g.k, tokens, g.n, false, false)
                         .bytes));
      ScaledOperand x{a.as<uint8_t>(),    e4m3,  tokens, g.k,
                      scales.as<float>(), false, false},
          w{b.as<uint8_t>(), e4m3, g.n, g.k, scales.as<float>(), false, false};
      report("gemm", g.name, 2.0 * double(tokens) * double(g.n) * double(g.k),
             "TFLOP/s", time([&] {
               scaledMatmul(gemms, 0, x, w, bf16, out.ptr, tokens, g.n,
                            workspace.ptr, nullptr);
             }));
    }
  }

  // Attention: cuDNN's flash attention, causal GQA 32/8, head dim 128, on
  // randn q, k, v and output gradient as torch_kernels.py's; the backward
  // reads the output and log-sum-exp the timed forward runs wrote.
  {
    AttentionShape s{1, tokens, heads, kvHeads, headDim};
    size_t q = size_t(tokens * heads * headDim) * 2,
           kv = size_t(tokens * kvHeads * headDim) * 2;
    Buffer bq(q, bf16), bk(kv, bf16), bv(kv, bf16), bo(q, bf16), bdo(q, bf16),
        bdq(q, bf16), bdk(kv, bf16), bdv(kv, bf16),
        lse(size_t(tokens * heads) * 4);
    size_t fwdBytes =
        size_t(titan::cuda::attentionWorkspaceBytes(1, heads, tokens));
    size_t bwdBytes[2];
    for (bool deterministic : {false, true})
      bwdBytes[deterministic] = size_t(titan::cuda::attentionGradWorkspaceBytes(
          1, heads, tokens, headDim, deterministic));
    // The deterministic backward's O(S^2) dP workspace (4 GiB at 8192) is
    // the largest.
    Buffer workspace(std::max(fwdBytes, bwdBytes[1]));
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
      // titan's default backward (as PyTorch's) and debug.deterministic's.
      for (bool deterministic : {false, true})
        report("attention",
               deterministic ? "cuDNN flash backward deterministic"
                             : "cuDNN flash backward",
               2.5 * fwdFlops, "TFLOP/s", time([&] {
                 attention.backward(bf16, bq.ptr, bk.ptr, bv.ptr, bo.ptr,
                                    lse.as<float>(), bdo.ptr, bdq.ptr, bdk.ptr,
                                    bdv.ptr, s, SdpaViews::whole(s.seq), scale,
                                    deterministic, workspace.ptr,
                                    bwdBytes[deterministic], nullptr);
               }));
    }
  }

  // Memory-bound kernels: bytes each must read and write at least.
  {
    int64_t n = tokens * dim;
    Buffer x(size_t(n) * 2, bf16), y(size_t(n) * 2, bf16),
        dx(size_t(n) * 2, bf16);
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
  }
  {
    // The global gradient norm over 8 FFN-weight-sized gradients.
    int64_t n = ffn * dim;
    Buffer g(size_t(n) * 4);
    std::vector<NormTensor> tensors(8, NormTensor{g.as<float>(), n});
    Buffer norm(4), ws(size_t(titan::cuda::globalNormWorkspaceBytes(8)));
    report("fused", "global_norm (8 tensors)", double(8 * n * 4), "GB/s",
           time([&] {
             globalNorm(tensors.data(), 8, norm.as<float>(), ws.ptr, nullptr);
           }));
  }
  return 0;
}
