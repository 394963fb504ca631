//===- ElementwiseTest.cpp - small CUDA kernels vs the CPU ones -----------===//
//
// Elementwise arithmetic and conversions, the learning-rate schedule and
// the RoPE angles (both computed on the device from device scalars) against
// the CPU target's kernels: f32 within 1e-5 relative, bf16 within one
// rounding; the schedule at every step of a warmup + cosine-decay run
// within one f32 rounding. Sizes and offsets cover the 16-byte packs, their
// tail and unaligned views.
//
//===----------------------------------------------------------------------===//

#include "Elementwise.h"

#include "DeviceTestUtils.h"
#include "Kernels.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;
using namespace titanrt::cuda::test;

namespace {

/// Sizes and element offsets of the buffers: whole 16-byte packs with a
/// tail, a tail alone, and offset views (the element-by-element path).
struct Layout {
  size_t n, offset;
};
const Layout kLayouts[] = {{100003, 0}, {13, 0}, {100003, 1}, {4095, 1}};

TEST(Elementwise, Arithmetic) {
  for (Dtype t : {Dtype::f32, Dtype::bf16})
    for (Layout l : kLayouts) {
      SCOPED_TRACE("n " + std::to_string(l.n) + " offset " +
                   std::to_string(l.offset));
      size_t n = l.n;
      std::vector<float> a = rounded(random(n, 1, -4, 4), t),
                         b = rounded(random(n, 2, -4, 4), t);
      // The step's pointwise ops are generated kernels (docs/codegen.md);
      // add remains for async TP's partial sums.
      std::vector<float> sum(n);
      for (size_t i = 0; i < n; ++i)
        sum[i] = a[i] + b[i];
      DeviceBuffer da(a, t, l.offset), db(b, t, l.offset), out(n, t, l.offset);
      cuda::add(t, da.ptr, db.ptr, out.ptr, int64_t(n), nullptr);
      expectClose(out.read(), sum, t, 1e-6, "add");
      cuda::fill(t, out.ptr, int64_t(n), -0.375, nullptr);
      expectClose(out.read(), std::vector<float>(n, -0.375f), t, 0, "fill");
      // In place: out = out + b.
      cuda::add(t, out.ptr, db.ptr, out.ptr, int64_t(n), nullptr);
      std::vector<float> shifted(n);
      for (size_t i = 0; i < n; ++i)
        shifted[i] = -0.375f + b[i];
      expectClose(out.read(), shifted, t, 1e-6, "add in place");
    }
}

// The same bits in packs and element by element: the arithmetic per
// element does not depend on the path.
TEST(Elementwise, PacksAndElementsAgreeBitwise) {
  size_t n = 4099;
  std::vector<float> a = rounded(random(n, 4, -4, 4), Dtype::bf16),
                     b = rounded(random(n, 5, -4, 4), Dtype::bf16);
  for (Dtype t : {Dtype::f32, Dtype::bf16}) {
    DeviceBuffer da(a, t), db(b, t), packed(n, t), ua(a, t, 1), ub(b, t, 1),
        single(n, t, 1);
    cuda::add(t, da.ptr, db.ptr, packed.ptr, int64_t(n), nullptr);
    cuda::add(t, ua.ptr, ub.ptr, single.ptr, int64_t(n), nullptr);
    EXPECT_EQ(packed.read(), single.read());
  }
}

TEST(Elementwise, CastRoundsOnce) {
  for (Layout l : kLayouts) {
    SCOPED_TRACE("n " + std::to_string(l.n) + " offset " +
                 std::to_string(l.offset));
    size_t n = l.n;
    std::vector<float> x = random(n, 3, -100, 100);
    DeviceBuffer f32(x, Dtype::f32, l.offset), bf16(n, Dtype::bf16, l.offset),
        back(n, Dtype::f32, l.offset);
    cuda::cast(Dtype::f32, f32.ptr, Dtype::bf16, bf16.ptr, int64_t(n), nullptr);
    EXPECT_EQ(bf16.read(), rounded(x, Dtype::bf16));
    cuda::cast(Dtype::bf16, bf16.ptr, Dtype::f32, back.ptr, int64_t(n),
               nullptr);
    EXPECT_EQ(back.read(), rounded(x, Dtype::bf16));
  }
}

TEST(Elementwise, LRScheduleMatchesTheCpuAtEveryStep) {
  int64_t total = 50;
  std::vector<int64_t> steps(static_cast<size_t>(total));
  for (int64_t s = 0; s < total; ++s)
    steps[size_t(s)] = s;
  DeviceArray<int64_t> dSteps(steps), dTotal(std::vector<int64_t>{total});
  DeviceBuffer lr(1, Dtype::f32);
  for (int type : {0, 1, 2})
    for (int64_t s = 0; s < total; ++s) {
      cuda::lrSchedule(dSteps.ptr + s, dTotal.ptr, static_cast<float *>(lr.ptr),
                       8e-4, 7, 0.8, type, 0.1, nullptr);
      float expected =
          float(kernels::lrSchedule(s, total, 8e-4, 7, 0.8, type, 0.1));
      EXPECT_NEAR(lr.read()[0], expected, std::ldexp(double(expected), -23))
          << "decay type " << type << " step " << s;
    }
}

TEST(Elementwise, RopeAnglesMatchTheCpu) {
  for (bool scaled : {false, true}) {
    int64_t seq = 300, pairs = 64;
    std::vector<float> expected(static_cast<size_t>(seq * pairs * 2)),
        invFreq(static_cast<size_t>(pairs));
    kernels::ropeAngles(expected.data(), seq, pairs, 500000.0, scaled, 8.0, 1.0,
                        4.0, 8192.0, invFreq.data());
    DeviceBuffer freqsCis(expected.size(), Dtype::f32);
    cuda::ropeAngles(static_cast<float *>(freqsCis.ptr), seq, pairs, 500000.0,
                     scaled, 8.0, 1.0, 4.0, 8192.0, nullptr);
    // powf on the GPU and in glibc may differ by an ulp of the angle (up
    // to 299 rad here, an ulp of 3e-5), cosf and sinf by an ulp more.
    expectClose(freqsCis.read(), expected, Dtype::f32, 4e-5, "cos/sin table");
  }
}

// Box copies of every element size, 1 (fp8) to 8 bytes: each element
// moves as itself, its neighbours in the target untouched.
TEST(Elementwise, CopyBoxEveryElementSize) {
  const int64_t sourceDims[] = {5, 7}, targetDims[] = {4, 6},
                boxDims[] = {3, 4};
  titanrt::abi::Shape source{sourceDims, 2}, target{targetDims, 2},
      box{boxDims, 2};
  int64_t from[] = {1, 2}, to[] = {0, 1};
  BoxCopyPlan plan = planBoxCopy(source, target, box, from, to);
  for (size_t bytes : {1, 2, 4, 8}) {
    SCOPED_TRACE(std::to_string(bytes) + "-byte elements");
    std::vector<uint8_t> src(size_t(source.numel()) * bytes),
        expected(size_t(target.numel()) * bytes, 0xA5), got(expected.size());
    for (size_t i = 0; i < src.size(); ++i)
      src[i] = uint8_t(i * 7 + 1);
    for (int64_t e = 0; e < plan.numel(); ++e) {
      int64_t s, t;
      boxOffsets(plan, e, plan.rank, s, t);
      std::memcpy(&expected[size_t(t) * bytes], &src[size_t(s) * bytes], bytes);
    }
    void *dSrc = nullptr, *dDst = nullptr;
    ASSERT_EQ(cudaMalloc(&dSrc, src.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dDst, got.size()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dSrc, src.data(), src.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cudaMemset(dDst, 0xA5, got.size()), cudaSuccess);
    copyBox(dSrc, dDst, bytes, plan, nullptr);
    ASSERT_EQ(cudaMemcpy(got.data(), dDst, got.size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(got, expected);
    cudaFree(dSrc);
    cudaFree(dDst);
  }
}

} // namespace
