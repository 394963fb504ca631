//===- CUDAKernelWorkspacesTest.cpp - the CUDA plan's attention rules -----===//
//
// titan/Target/CUDA/KernelWorkspaces.h's attention rules, on the CPU: the
// backward's workspace is cudnn-frontend's on sm_90 (default: the f32 dQ
// accumulator and softmax sum; deterministic: the softmax sum and the dP
// workspace, S^2), and the exact kernels stand in for cuDNN only on f32 or
// short sequences.
//
//===----------------------------------------------------------------------===//

#include "titan/Target/CUDA/KernelWorkspaces.h"

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

} // namespace
