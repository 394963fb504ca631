//===- BoxCopyKernelTest.cpp - slice, slice_grad and concat kernels -------===//
//
// titan.slice, titan.slice_grad and titan.concat through the CPU target's
// C ABI (titan_rt_<kernel>_f64 and the bf16 entry), against the index
// arithmetic written out here: every element of the box, and nothing else.
//
//===----------------------------------------------------------------------===//

#include "titanrt/KernelABI.h"

#include "gtest/gtest.h"

#include <numeric>
#include <vector>

namespace {

/// A [2, 5, 3] tensor whose element (i, j, k) is 100 i + 10 j + k.
std::vector<double> numbered() {
  std::vector<double> x(30);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 3; ++k)
        x[(i * 5 + j) * 3 + k] = 100 * i + 10 * j + k;
  return x;
}

TEST(BoxCopyKernels, SliceCopiesTheBox) {
  std::vector<double> x = numbered(), out(2 * 2 * 2);
  // The [2, 2, 2] box at (0, 1, 1).
  std::vector<int64_t> shapes = {3, 2, 5, 3, 3, 2, 2, 2};
  std::vector<int64_t> ints = {3, 0, 1, 1};
  void *buffers[] = {x.data(), out.data()};
  titan_rt_slice_f64(buffers, shapes.data(), ints.data(), nullptr, nullptr,
                     nullptr);
  std::vector<double> expect;
  for (int i = 0; i < 2; ++i)
    for (int j = 1; j < 3; ++j)
      for (int k = 1; k < 3; ++k)
        expect.push_back(100 * i + 10 * j + k);
  EXPECT_EQ(out, expect);
}

TEST(BoxCopyKernels, SliceGradPlacesTheBoxInZeros) {
  std::vector<double> grad(2 * 2 * 2);
  std::iota(grad.begin(), grad.end(), 1.0);
  std::vector<double> out(30, -1.0);
  std::vector<int64_t> shapes = {3, 2, 2, 2, 3, 2, 5, 3};
  std::vector<int64_t> ints = {3, 0, 3, 1};
  void *buffers[] = {grad.data(), out.data()};
  titan_rt_slice_grad_f64(buffers, shapes.data(), ints.data(), nullptr, nullptr,
                          nullptr);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 3; ++k) {
        bool inBox = j >= 3 && k >= 1;
        double expect = inBox ? grad[(i * 2 + (j - 3)) * 2 + (k - 1)] : 0.0;
        EXPECT_EQ(out[(i * 5 + j) * 3 + k], expect) << i << j << k;
      }
}

TEST(BoxCopyKernels, ConcatJoinsAlongADimension) {
  // [2, 2, 3] and [2, 3, 3] along dim 1 give the numbered [2, 5, 3].
  std::vector<double> whole = numbered(), a, b;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 3; ++k)
        (j < 2 ? a : b).push_back(whole[(i * 5 + j) * 3 + k]);
  std::vector<double> out(30);
  std::vector<int64_t> shapes = {3, 2, 2, 3, 3, 2, 3, 3, 3, 2, 5, 3};
  std::vector<int64_t> ints = {2, 1};
  void *buffers[] = {a.data(), b.data(), out.data()};
  titan_rt_concat_f64(buffers, shapes.data(), ints.data(), nullptr, nullptr,
                      nullptr);
  EXPECT_EQ(out, whole);
}

TEST(BoxCopyKernels, SixteenBitEntriesCopyExactly) {
  // bf16 values survive the f32 staging of the CPU's 16-bit entries (in
  // the workspace the compiler plans for them).
  std::vector<uint16_t> x = {0x3f80, 0x4000, 0x4040, 0x4080}, out(2);
  std::vector<char> staging(256);
  std::vector<int64_t> shapes = {2, 2, 2, 2, 1, 2};
  std::vector<int64_t> ints = {2, 1, 0};
  std::vector<int64_t> types = {1, 1, TITAN_RT_BF16, TITAN_RT_BF16};
  void *buffers[] = {x.data(), out.data()};
  titan_rt_slice_bf16(buffers, shapes.data(), ints.data(), nullptr,
                      staging.data(), types.data());
  EXPECT_EQ(out, (std::vector<uint16_t>{0x4040, 0x4080}));
}

} // namespace
