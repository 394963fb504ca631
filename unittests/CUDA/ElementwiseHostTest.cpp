//===- ElementwiseHostTest.cpp - CUDA kernels' host checks, no GPU -------===//
//
// What the CUDA kernels' host code decides before any launch, so it runs
// on machines without a GPU (CI): a box copy of an element size it does
// not copy (1, 2, 4 and 8 bytes) stops the run, naming the size, instead of
// copying another word size.
//
//===----------------------------------------------------------------------===//

#include "Elementwise.h"

#include "gtest/gtest.h"

#include <cstdint>

using namespace titanrt;

namespace {

TEST(ElementwiseHost, CopyBoxRejectsOtherElementSizes) {
  const int64_t dims[] = {4};
  titanrt::abi::Shape shape{dims, 1};
  BoxCopyPlan plan = planBoxCopy(shape, shape, shape, nullptr, nullptr);
  alignas(16) uint8_t src[64] = {}, dst[64] = {};
  for (size_t bytes : {0, 3, 16})
    EXPECT_DEATH(cuda::copyBox(src, dst, bytes, plan, nullptr),
                 "CUDA box copy \\(slice, slice_grad, concat\\): elements of " +
                     std::to_string(bytes) +
                     " bytes; it copies elements of 1, 2, 4 or 8 bytes")
        << bytes << "-byte elements";
}

} // namespace
