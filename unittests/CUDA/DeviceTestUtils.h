//===- DeviceTestUtils.h - what the CUDA kernel tests share -----*- C++ -*-===//
//
// Random inputs, their bf16 rounding, device buffers holding f32 or bf16
// copies of host vectors, and the tolerance check against the CPU kernels:
// f32 within 1e-5 relative, bf16 within one bf16 rounding (2^-7 relative,
// the output's rounding on top of the inputs') plus an absolute term.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_UNITTESTS_CUDA_DEVICETESTUTILS_H
#define TITAN_UNITTESTS_CUDA_DEVICETESTUTILS_H

#include "DocumentMask.h"
#include "LinearGemm.h"
#include "LowPrecision.h"

#include "gtest/gtest.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace titanrt::cuda::test {

inline std::vector<float> random(size_t n, uint32_t seed, float lo = -1,
                                 float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

inline std::vector<float> rounded(std::vector<float> v, Dtype t) {
  if (t == Dtype::bf16)
    for (float &x : v)
      x = bf16ToFloat(floatToBf16(x));
  return v;
}

/// A device buffer holding `v` in type `t`, `offset` elements into its
/// allocation (an offset of 1 is a view no kernel may read in 16-byte
/// packs).
struct DeviceBuffer {
  void *base = nullptr, *ptr = nullptr;
  size_t n;
  Dtype type;
  DeviceBuffer(const std::vector<float> &v, Dtype t, size_t offset = 0)
      : n(v.size()), type(t) {
    EXPECT_EQ(cudaMalloc(&base, (n + offset) * size_t(dtypeBytes(t)) + 1),
              cudaSuccess);
    ptr = static_cast<char *>(base) + offset * size_t(dtypeBytes(t));
    std::vector<char> bytes(n * size_t(dtypeBytes(t)));
    for (size_t i = 0; i < n; ++i) {
      if (t == Dtype::f32) {
        std::memcpy(bytes.data() + 4 * i, &v[i], 4);
      } else {
        uint16_t h = floatToBf16(v[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      }
    }
    cudaMemcpy(ptr, bytes.data(), bytes.size(), cudaMemcpyHostToDevice);
  }
  DeviceBuffer(size_t n, Dtype t, size_t offset = 0)
      : DeviceBuffer(std::vector<float>(n, 0.0f), t, offset) {}
  ~DeviceBuffer() { cudaFree(base); }
  std::vector<float> read() const {
    std::vector<char> bytes(n * size_t(dtypeBytes(type)));
    cudaDeviceSynchronize();
    cudaMemcpy(bytes.data(), ptr, bytes.size(), cudaMemcpyDeviceToHost);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
      if (type == Dtype::f32) {
        std::memcpy(&v[i], bytes.data() + 4 * i, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        v[i] = bf16ToFloat(h);
      }
    }
    return v;
  }
};

/// The document starts (DocumentMask.h) of `batch` random sequences of
/// `seq` tokens whose documents end with probability 1 / meanLength after
/// each token: some documents cross chunk and rank boundaries, some fit in
/// one chunk.
inline std::vector<int32_t> randomStarts(int64_t batch, int64_t seq,
                                         int64_t meanLength, uint32_t seed) {
  std::vector<float> draws = random(size_t(batch * seq), seed, 0, 1);
  std::vector<int32_t> tokens(draws.size(), 0);
  double endRate = 1.0 / double(std::max<int64_t>(meanLength, 1));
  for (size_t i = 0; i < draws.size(); ++i)
    tokens[i] = draws[i] < endRate ? 1 : 0;
  std::vector<int32_t> starts(tokens.size());
  documentStarts(tokens.data(), batch, seq, /*eosId=*/1, starts.data());
  return starts;
}

/// A device copy of `v` (int32 or float) that frees itself.
template <typename T> struct DeviceArray {
  T *ptr = nullptr;
  explicit DeviceArray(const std::vector<T> &v) {
    EXPECT_EQ(cudaMalloc(&ptr, v.size() * sizeof(T) + 4), cudaSuccess);
    cudaMemcpy(ptr, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~DeviceArray() { cudaFree(ptr); }
};

inline void expectClose(const std::vector<float> &actual,
                        const std::vector<float> &expected, Dtype t,
                        double absolute, const char *what) {
  double unit = t == Dtype::f32 ? 1e-5 : std::ldexp(1.0, -7);
  for (size_t i = 0; i < expected.size(); ++i) {
    if (actual[i] == expected[i]) // equal infinities (lse -inf) too
      continue;
    ASSERT_NEAR(actual[i], expected[i],
                unit * std::fabs(expected[i]) + absolute)
        << what << " element " << i;
  }
}

} // namespace titanrt::cuda::test

#endif // TITAN_UNITTESTS_CUDA_DEVICETESTUTILS_H
