//===- LinearGemmTest.cpp - cuBLASLt linear GEMMs against the CPU kernels -===//
//
// Each of the three products of titan.linear on the GPU against the CPU
// target's kernel (runtime/lib/Kernels.h) on the same inputs: f32 within
// 1e-5 of the largest possible term sum (only the order of fp32 sums
// differs), bf16 operands with fp32 accumulation into f32 within the same
// bound, and into bf16 within one bf16 rounding (2^-8 relative) on top.
// Shapes include odd and one-sided ones.
//
//===----------------------------------------------------------------------===//

#include "LinearGemm.h"

#include "Kernels.h"
#include "LowPrecision.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;

namespace {

void checkCuda(cudaError_t rc) {
  ASSERT_EQ(rc, cudaSuccess) << cudaGetErrorString(rc);
}

struct Shape {
  int64_t m, k, n;
};
const Shape kShapes[] = {{1, 1, 1},     {7, 33, 65},    {64, 128, 96},
                         {37, 256, 11}, {256, 64, 512}, {3, 1024, 5}};

std::vector<float> random(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

/// Device copy of `v` in `type`.
void *upload(const std::vector<float> &v, Dtype type) {
  void *ptr = nullptr;
  size_t bytes = v.size() * (type == Dtype::f32 ? 4 : 2);
  EXPECT_EQ(cudaMalloc(&ptr, bytes), cudaSuccess);
  if (type == Dtype::f32) {
    cudaMemcpy(ptr, v.data(), bytes, cudaMemcpyHostToDevice);
    return ptr;
  }
  std::vector<uint16_t> narrow(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    narrow[i] = type == Dtype::bf16 ? floatToBf16(v[i]) : floatToF16(v[i]);
  cudaMemcpy(ptr, narrow.data(), bytes, cudaMemcpyHostToDevice);
  return ptr;
}

std::vector<float> download(const void *ptr, size_t n, Dtype type) {
  std::vector<float> v(n);
  if (type == Dtype::f32) {
    cudaMemcpy(v.data(), ptr, n * 4, cudaMemcpyDeviceToHost);
    return v;
  }
  std::vector<uint16_t> narrow(n);
  cudaMemcpy(narrow.data(), ptr, n * 2, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < n; ++i)
    v[i] = type == Dtype::bf16 ? bf16ToFloat(narrow[i]) : f16ToFloat(narrow[i]);
  return v;
}

/// `v` as the GPU sees it in `type` (inputs are rounded once on upload).
std::vector<float> rounded(std::vector<float> v, Dtype type) {
  if (type != Dtype::f32)
    for (float &x : v)
      x = type == Dtype::bf16 ? bf16ToFloat(floatToBf16(x))
                              : f16ToFloat(floatToF16(x));
  return v;
}

void runCase(LinearProduct product, Shape s, Dtype operands, Dtype result,
             bool accumulate) {
  GemmProblem p{product, s.m, s.k, s.n, operands, result, accumulate};
  SCOPED_TRACE(p.describe());
  std::vector<float> x = rounded(random(s.m * s.k, 1), operands);
  std::vector<float> w = rounded(random(s.n * s.k, 2), operands);
  std::vector<float> dy = rounded(random(s.m * s.n, 3), operands);

  // The CPU kernel, and the inputs in the order the GPU call takes them.
  std::vector<float> expected;
  const std::vector<float> *first = nullptr, *second = nullptr;
  int64_t inner = 0;
  switch (product) {
  case LinearProduct::Forward:
    expected.resize(s.m * s.n);
    kernels::linear(x.data(), w.data(), expected.data(), s.m, s.k, s.n);
    first = &x, second = &w, inner = s.k;
    break;
  case LinearProduct::GradInput:
    expected.resize(s.m * s.k);
    kernels::linearGradInput(dy.data(), w.data(), expected.data(), s.m, s.k,
                             s.n);
    first = &dy, second = &w, inner = s.n;
    break;
  case LinearProduct::GradWeight:
    expected.resize(s.n * s.k);
    kernels::linearGradWeight(dy.data(), x.data(), expected.data(), s.m, s.k,
                              s.n);
    first = &dy, second = &x, inner = s.m;
    break;
  }

  // The result's old value, which an accumulating GEMM adds to.
  std::vector<float> start = rounded(random(expected.size(), 4), result);
  if (accumulate)
    for (size_t i = 0; i < expected.size(); ++i)
      expected[i] += start[i];

  void *a = upload(*first, operands), *b = upload(*second, operands);
  void *out =
      upload(accumulate ? start : std::vector<float>(expected.size()), result);
  size_t workspaceBytes = 32 << 20;
  void *workspace = nullptr;
  checkCuda(cudaMalloc(&workspace, workspaceBytes));
  LinearGemms gemms(workspaceBytes);
  gemms.run(p, a, b, out, workspace, nullptr);
  checkCuda(cudaDeviceSynchronize());
  std::vector<float> actual = download(out, expected.size(), result);

  // Inputs lie in [-1, 1]: a sum of `inner` products differs by at most
  // inner * 2^-23-ish per order change; allow 1e-5 * inner, plus one
  // rounding of the result when it is 16-bit.
  double bound = 1e-5 * double(inner) + (accumulate ? 1e-5 : 0);
  double unit = result == Dtype::f32    ? 0
                : result == Dtype::bf16 ? std::ldexp(1.0, -8)
                                        : std::ldexp(1.0, -11);
  for (size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], bound + unit * std::fabs(expected[i]))
        << "element " << i;
  cudaFree(a);
  cudaFree(b);
  cudaFree(out);
  cudaFree(workspace);
}

TEST(LinearGemm, F32) {
  for (Shape s : kShapes)
    for (LinearProduct p : {LinearProduct::Forward, LinearProduct::GradInput,
                            LinearProduct::GradWeight})
      runCase(p, s, Dtype::f32, Dtype::f32, false);
}

TEST(LinearGemm, Bf16OperandsF32AndBf16Results) {
  for (Shape s : kShapes)
    for (LinearProduct p : {LinearProduct::Forward, LinearProduct::GradInput,
                            LinearProduct::GradWeight})
      for (Dtype r : {Dtype::f32, Dtype::bf16})
        runCase(p, s, Dtype::bf16, r, false);
}

// Every product can add into its result (kernel-fuse-gemm-accumulate),
// f32 and bf16 results.
TEST(LinearGemm, Accumulates) {
  for (Shape s : kShapes)
    for (LinearProduct p : {LinearProduct::Forward, LinearProduct::GradInput,
                            LinearProduct::GradWeight}) {
      runCase(p, s, Dtype::f32, Dtype::f32, true);
      runCase(p, s, Dtype::bf16, Dtype::f32, true);
      runCase(p, s, Dtype::bf16, Dtype::bf16, true);
    }
}

} // namespace
