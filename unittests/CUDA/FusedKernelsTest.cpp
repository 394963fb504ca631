//===- FusedKernelsTest.cpp - CUDA memory-bound kernels vs the CPU ones ---===//
//
// The embedding gather and its gradient (whole and vocabulary-sharded; the
// gradient bitwise, summed in token order), the fused cross-entropy
// (forward, backward in place), its loss-parallel pieces and the global
// gradient norm on the GPU against the CPU target's kernels on the same
// inputs: f32 within 1e-5 relative (f32 vs the CPU's f64 statistics), bf16
// within one bf16 rounding (2^-8 relative) of the CPU result on the rounded
// inputs. Sizes and offset views cover the 16-byte packs, their tail and
// the unaligned path (RMSNorm, RoPE, the pointwise ops and AdamW are
// generated kernels, checked by the GPU check's training run against the
// CPU's).
//
//===----------------------------------------------------------------------===//

#include "FusedKernels.h"

#include "DeviceTestUtils.h"
#include "Elementwise.h"

#include "Kernels.h"
#include "LowPrecision.h"
#include "titanrt/KernelABI.h"

#include "titan/Contract/CPUWorkspaces.h"

#include "gtest/gtest.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;
using namespace titanrt::cuda::test;

namespace {

TEST(FusedKernels, Embedding) {
  int64_t vocab = 50, dim = 300, n = 37;
  std::vector<int32_t> tokens(n);
  for (int64_t i = 0; i < n; ++i)
    tokens[i] = int32_t((i * 17) % vocab);
  int32_t start = 20;
  DeviceArray<int32_t> tokensOnGpu(tokens), startOnGpu(std::vector{start});
  int32_t *dTokens = tokensOnGpu.ptr, *dStart = startOnGpu.ptr;
  for (Dtype t : {Dtype::f32, Dtype::bf16}) {
    std::vector<float> w = rounded(random(size_t(vocab * dim), 9), t),
                       y(size_t(n * dim)), shard(size_t(n * dim));
    kernels::embedding(w.data(), tokens.data(), y.data(), n, vocab, dim);
    // Rows [20, 45) of the table, as one tensor-parallel shard holds them.
    std::vector<float> part(w.begin() + 20 * dim, w.begin() + 45 * dim);
    kernels::embedding(part.data(), tokens.data(), shard.data(), n, 25, dim,
                       &start);
    DeviceBuffer dW(w, t), dPart(part, t), dY(size_t(n * dim), t),
        dShard(size_t(n * dim), t);
    embedding(t, dW.ptr, dTokens, dY.ptr, n, vocab, dim, nullptr, nullptr);
    embedding(t, dPart.ptr, dTokens, dShard.ptr, n, 25, dim, dStart, nullptr);
    expectClose(dY.read(), y, t, 0, "embedding");
    expectClose(dShard.read(), shard, t, 0, "sharded embedding");
  }
}

TEST(FusedKernels, GlobalNorm) {
  // More tensors than one launch takes (64), to cover the chunking.
  std::vector<int64_t> sizes = {1, 3000, 100001, 17};
  for (int64_t i = 0; i < 66; ++i)
    sizes.push_back(5 + 31 * i);
  std::vector<std::vector<float>> values;
  std::vector<NormTensor> host;
  std::vector<void *> cpuBuffers;
  std::vector<int64_t> shapes;
  for (auto [i, n] : llvm::enumerate(sizes)) {
    values.push_back(random(n, 50 + i));
    float *d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, n * 4), cudaSuccess);
    cudaMemcpy(d, values.back().data(), n * 4, cudaMemcpyHostToDevice);
    host.push_back({d, n});
    shapes.insert(shapes.end(), {1, n});
  }
  // The CPU target's kernel through its ABI entry.
  float expected = 0;
  for (auto &v : values)
    cpuBuffers.push_back(v.data());
  cpuBuffers.push_back(&expected);
  shapes.push_back(0); // the scalar result
  int64_t count = int64_t(host.size());
  std::vector<int64_t> types = {count, 1};
  types.insert(types.end(), size_t(count) + 1, TITAN_RT_F32);
  titan_rt_global_norm_f32(cpuBuffers.data(), shapes.data(), &count, nullptr,
                           nullptr, types.data());

  float *dNorm = nullptr;
  void *workspace = nullptr;
  ASSERT_EQ(cudaMalloc(&dNorm, 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&workspace, globalNormWorkspaceBytes(count)),
            cudaSuccess);
  globalNorm(host.data(), count, dNorm, workspace, nullptr);
  float norm = 0;
  cudaMemcpy(&norm, dNorm, 4, cudaMemcpyDeviceToHost);
  // f64 sums in another order: equal after rounding to f32, or one ulp off.
  EXPECT_NEAR(norm, expected, std::ldexp(double(expected), -23));
  for (NormTensor &t : host)
    cudaFree(const_cast<float *>(t.data));
  cudaFree(dNorm);
  cudaFree(workspace);
}

TEST(FusedKernels, EmbeddingGradSumsInTokenOrder) {
  int64_t vocab = 40, dim = 70, n = 301;
  std::vector<int32_t> tokens(n);
  for (int64_t i = 0; i < n; ++i) // repeats, some rows never seen
    tokens[i] = int32_t((i * i + 3 * i) % 29);
  int32_t start = 10;
  DeviceArray<int32_t> tokensOnGpu(tokens), startOnGpu(std::vector{start});
  int32_t *dTokens = tokensOnGpu.ptr, *dStart = startOnGpu.ptr;
  void *workspace = nullptr;
  ASSERT_EQ(cudaMalloc(&workspace, embeddingGradWorkspaceBytes(n)),
            cudaSuccess);
  for (Dtype t : {Dtype::f32, Dtype::bf16}) {
    std::vector<float> grad = rounded(random(size_t(n * dim), 60), t);
    std::vector<float> whole(size_t(vocab * dim)), shard(size_t(15 * dim));
    kernels::embeddingGrad(grad.data(), tokens.data(), whole.data(), n, vocab,
                           dim);
    kernels::embeddingGrad(grad.data(), tokens.data(), shard.data(), n, 15, dim,
                           &start);
    DeviceBuffer dGrad(grad, t), dWhole(size_t(vocab * dim), t),
        dShard(size_t(15 * dim), t);
    embeddingGrad(t, dGrad.ptr, dTokens, dWhole.ptr, n, vocab, dim, nullptr,
                  workspace, nullptr);
    embeddingGrad(t, dGrad.ptr, dTokens, dShard.ptr, n, 15, dim, dStart,
                  workspace, nullptr);
    if (t == Dtype::f32) {
      std::vector<float> a = dWhole.read(), b = dShard.read();
      EXPECT_EQ(std::memcmp(a.data(), whole.data(), a.size() * 4), 0);
      EXPECT_EQ(std::memcmp(b.data(), shard.data(), b.size() * 4), 0);
    } else {
      // f32 sums rounded once to bf16.
      expectClose(dWhole.read(), whole, t, 0, "embedding_grad");
      expectClose(dShard.read(), shard, t, 0, "sharded embedding_grad");
    }
  }
  cudaFree(workspace);
}

} // namespace
