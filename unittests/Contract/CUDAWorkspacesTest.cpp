//===- CUDAWorkspacesTest.cpp - the CUDA plan's workspace rules -----------===//
//
// titan/Contract/CUDAWorkspaces.h's rules, on the CPU (header-only,
// no GPU), which the compiler's workspace models and the CUDA runtime both
// use:
// - attention: the backward's workspace is cudnn-frontend's on sm_90
//   (default: the f32 dQ accumulator and softmax sum; deterministic: the
//   softmax sum and the dP workspace, S^2), and the exact kernels stand in
//   for cuDNN only on f32 or short sequences;
// - the FP8 GEMM (scaledMatmulWorkspace): every part starts at a 256-byte
//   offset (cuBLASLt's alignment for its workspace and operands), parts do
//   not overlap, each holds what it is for, and only operands that do not
//   arrive transposed get room for a transposed copy.
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/CUDAWorkspaces.h"

#include "gtest/gtest.h"

using namespace titan::cuda;

namespace {

// The 8B model's attention on one GPU: B 1, Hq 32, S 8192, D 128.
constexpr int64_t kB = 1, kH = 32, kS = 8192, kD = 128;

TEST(CUDAKernelWorkspaces, AttentionGradDefault) {
  int64_t softmaxSum = kB * kH * kS * 4;   // 1 MiB
  int64_t dqAccum = kB * kH * kS * kD * 4; // 128 MiB
  EXPECT_EQ(attentionGradWorkspaceBytes(kB, kH, kS, kD, false),
            softmaxSum + dqAccum + kAttentionSlackBytes);
  EXPECT_EQ(attentionGradWorkspaceBytes(kB, kH, kS, kD, false), int64_t(133)
                                                                    << 20);
}

TEST(CUDAKernelWorkspaces, AttentionGradDeterministic) {
  int64_t softmaxSum = kB * kH * kS * 4;       // 1 MiB
  int64_t dpWorkspace = kB * kH * kS * kS * 2; // 4 GiB
  EXPECT_EQ(attentionGradWorkspaceBytes(kB, kH, kS, kD, true),
            softmaxSum + dpWorkspace + kAttentionSlackBytes);
  EXPECT_EQ(attentionGradWorkspaceBytes(kB, kH, kS, kD, true),
            (int64_t(4) << 30) + (int64_t(5) << 20));
}

// dP's rows round up to 64 and its columns to 128, as the frontend's
// required_dp_workspace_bytes_sm90; the pieces round up to 256 bytes.
TEST(CUDAKernelWorkspaces, AttentionGradDeterministicRounding) {
  EXPECT_EQ(attentionGradWorkspaceBytes(1, 2, 8, 4, true),
            256 + 1 * 2 * 64 * 128 * 2 + kAttentionSlackBytes);
  EXPECT_EQ(attentionGradWorkspaceBytes(1, 2, 8, 4, false),
            512 + kAttentionSlackBytes);
}

// Context parallel's pairs of chunks: partial dQ, dK, dV, then one chunk
// pair's backward, whichever algorithm it runs.
TEST(CUDAKernelWorkspaces, ContextAttentionGradFollowsTheAlgorithm) {
  for (bool deterministic : {false, true})
    EXPECT_EQ(
        contextAttentionGradWorkspaceBytes(kB, kH, 8, kS, kD, deterministic),
        kB * (kS / 2) * kH * kD * 4 + 2 * kB * (kS / 2) * 8 * kD * 4 +
            attentionGradWorkspaceBytes(kB, kH, kS / 2, kD, deterministic));
}

TEST(CUDAKernelWorkspaces, ReferenceStandsInOnlyForF32OrShortSequences) {
  EXPECT_TRUE(attentionReferenceAllowed(true, kS));
  EXPECT_TRUE(attentionReferenceAllowed(true, 1));
  EXPECT_TRUE(attentionReferenceAllowed(false, 1));
  EXPECT_TRUE(attentionReferenceAllowed(false, kAttentionReferenceMaxKeys));
  EXPECT_FALSE(
      attentionReferenceAllowed(false, kAttentionReferenceMaxKeys + 1));
  EXPECT_FALSE(attentionReferenceAllowed(false, kS));
}

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
