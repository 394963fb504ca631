//===- Float8WorkspaceTest.cpp - the CUDA FP8 GEMM's workspace carving ----===//
//
// titan::cuda::scaledMatmulWorkspace, which both the compiler's workspace
// rule and the CUDA runtime use (header-only, no GPU): every part starts at
// a 256-byte offset (cuBLASLt's alignment for its workspace and operands),
// parts do not overlap, each holds what it is for, and only an operand the
// form needs K-major that does not come transposed has room for a copy.
//
//===----------------------------------------------------------------------===//

#include "titan/Target/CUDA/KernelWorkspaces.h"

#include "gtest/gtest.h"

#include <tuple>

using namespace titan::cuda;

namespace {

struct Case {
  int64_t lhsElements, rhsElements, rows, cols;
};
const Case kCases[] = {{1, 1, 1, 1},
                       {7 * 33, 65 * 33, 7, 65},
                       {8192 * 4096, 14336 * 4096, 8192, 14336},
                       {3 * 17, 17 * 5, 3, 5}};

TEST(Float8CudaWorkspace, PartsAre256ByteAlignedAndDisjoint) {
  for (auto form : {ScaledMatmulForm::Linear, ScaledMatmulForm::GradInput,
                    ScaledMatmulForm::GradWeight})
    for (Case c : kCases)
      for (bool given : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "form " << int(form) << ", " << c.rows << " x "
                     << c.cols << (given ? ", given transposed" : ""));
        // Only an operand the form reduces over its leading dimensions
        // comes transposed (titan.scaled_matmul's verifier).
        bool lhsGiven = given && form == ScaledMatmulForm::GradWeight;
        bool rhsGiven = given && form != ScaledMatmulForm::Linear;
        ScaledMatmulWorkspace w =
            scaledMatmulWorkspace(form, c.lhsElements, c.rhsElements, c.rows,
                                  c.cols, lhsGiven, rhsGiven);
        for (int64_t offset :
             {w.lhsTransposed, w.rhsTransposed, w.lhsInverseScales,
              w.rhsInverseScales, w.gemm, w.bytes})
          EXPECT_EQ(offset % 256, 0) << offset;
        bool lhs = form == ScaledMatmulForm::GradWeight && !given;
        bool rhs = form != ScaledMatmulForm::Linear && !given;
        EXPECT_EQ(w.copiesLhs, lhs);
        EXPECT_EQ(w.copiesRhs, rhs);
        EXPECT_EQ(w.lhsTransposed, 0);
        EXPECT_GE(w.rhsTransposed - w.lhsTransposed, lhs ? c.lhsElements : 0);
        EXPECT_GE(w.lhsInverseScales - w.rhsTransposed,
                  rhs ? c.rhsElements : 0);
        EXPECT_GE(w.rhsInverseScales - w.lhsInverseScales, c.rows * 4);
        EXPECT_GE(w.gemm - w.rhsInverseScales, c.cols * 4);
        EXPECT_EQ(w.bytes - w.gemm, kGemmWorkspaceBytes);
      }
}

// The linear form is already in cuBLASLt's TN layout, and the gradients'
// operands come transposed from titan.quantize: no transposed copies, the
// same scratch for all three forms.
TEST(Float8CudaWorkspace, NothingTransposedInTheWorkspace) {
  for (auto [form, lhsGiven, rhsGiven] :
       {std::tuple{ScaledMatmulForm::Linear, false, false},
        {ScaledMatmulForm::GradInput, false, true},
        {ScaledMatmulForm::GradWeight, true, true}}) {
    ScaledMatmulWorkspace w =
        scaledMatmulWorkspace(form, 4096, 4096, 64, 64, lhsGiven, rhsGiven);
    EXPECT_FALSE(w.copiesLhs || w.copiesRhs);
    EXPECT_EQ(w.lhsInverseScales, 0);
    EXPECT_EQ(w.rhsInverseScales, 256);
    EXPECT_EQ(w.gemm, 512);
    EXPECT_EQ(w.bytes, 512 + kGemmWorkspaceBytes);
  }
}

// The FSDP float8 all-gather's weight comes untransposed: grad_input copies
// it (and only it).
TEST(Float8CudaWorkspace, AnUntransposedOperandIsCopied) {
  ScaledMatmulWorkspace w = scaledMatmulWorkspace(
      ScaledMatmulForm::GradInput, 4096, 8192, 64, 64, false, false);
  EXPECT_FALSE(w.copiesLhs);
  EXPECT_TRUE(w.copiesRhs);
  EXPECT_EQ(w.rhsTransposed, 0);
  EXPECT_EQ(w.lhsInverseScales, 8192);
}

} // namespace
