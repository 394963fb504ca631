//===- CudaKernelArgsTest.cpp - the CUDA entries' host-side decoding ------===//
//
// runtime/cuda/KernelArgs.h on the CPU (no CUDA headers, no GPU): what the
// CUDA target's entries (runtime/cuda/KernelABI.cpp) decode from a call
// before enqueueing anything, against hand-computed values for the debug
// model (dim 256, 16 heads of 16, FFN 768, batch 8 x 2048) and the 8B
// model (dim 4096, 32 query and 8 kv heads of 128, FFN 14336, 1 x 8192):
// the buffers' element types (float8 is 1 byte), the GEMM
// problems, the ring's ints and layout and its failure messages, the
// collective matmuls' workspace offsets against what the compiler plans
// (lib/Target/CUDA/CUDABackend.cpp), attention's dimensions, float8
// scales and operands, and the box copies.
//
//===----------------------------------------------------------------------===//

#include "BoxCopy.h"
#include "KernelArgs.h"

#include "gtest/gtest.h"

#include <initializer_list>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;
using Shape = titanrt::abi::Shape;
using titan::cuda::collectiveMatmulWorkspaceBytes;
using titan::cuda::kGemmWorkspaceBytes;

namespace {

/// A shape that owns its dimensions.
struct OwnedShape {
  std::vector<int64_t> dims;
  OwnedShape(std::initializer_list<int64_t> d) : dims(d) {}
  operator Shape() const { return {dims.data(), int64_t(dims.size())}; }
  int64_t numel() const { return Shape(*this).numel(); }
};

/// The compiler's workspace for a ring over a tensor of `elements` of
/// `bitWidth` bits (CUDABackend.cpp's bytesOf).
int64_t plannedRingWorkspace(int64_t shards, int64_t elements,
                             int64_t bitWidth) {
  return collectiveMatmulWorkspaceBytes(shards,
                                        elements * ((bitWidth + 7) / 8));
}

const int64_t kCudaTypes[] = {TITAN_RT_F32, TITAN_RT_BF16, TITAN_RT_F16,
                              TITAN_RT_F8E4M3FN, TITAN_RT_F8E5M2};

TEST(CudaKernelArgs, CudaDtypeKeepsEachType) {
  EXPECT_EQ(cudaDtype(TITAN_RT_F32), Dtype::f32);
  EXPECT_EQ(cudaDtype(TITAN_RT_BF16), Dtype::bf16);
  EXPECT_EQ(cudaDtype(TITAN_RT_F16), Dtype::f16);
  EXPECT_EQ(cudaDtype(TITAN_RT_F8E4M3FN), Dtype::f8E4M3FN);
  EXPECT_EQ(cudaDtype(TITAN_RT_F8E5M2), Dtype::f8E5M2);
  for (int64_t code : {int64_t(TITAN_RT_F64), int64_t(TITAN_RT_I32),
                       int64_t(TITAN_RT_I64), int64_t(-1), int64_t(99)})
    EXPECT_FALSE(cudaDtype(code).has_value()) << code;
  // A Dtype's value is its ABI code.
  for (int64_t code : kCudaTypes)
    EXPECT_EQ(int64_t(*cudaDtype(code)), code);
  // Float8 is 1 byte: the kernels carve and the communicator moves as many.
  EXPECT_EQ(dtypeBytes(*cudaDtype(TITAN_RT_F8E4M3FN)), 1);
  EXPECT_EQ(dtypeBytes(*cudaDtype(TITAN_RT_BF16)), 2);
}

TEST(CudaKernelArgs, LinearGemmDims) {
  // 8B's FFN up projection: x [1, 8192, 4096], w [14336, 4096].
  OwnedShape x{1, 8192, 4096}, w{14336, 4096}, dy{1, 8192, 14336};
  GemmDims f = linearDims(x, w);
  EXPECT_EQ(f.m, 8192);
  EXPECT_EQ(f.k, 4096);
  EXPECT_EQ(f.n, 14336);
  GemmDims gi = linearGradInputDims(dy, w);
  EXPECT_EQ(gi.m, 8192);
  EXPECT_EQ(gi.k, 4096);
  EXPECT_EQ(gi.n, 14336);
  GemmDims gw = linearGradWeightDims(dy, x);
  EXPECT_EQ(gw.m, 8192);
  EXPECT_EQ(gw.k, 4096);
  EXPECT_EQ(gw.n, 14336);
  // The debug model's: x [8, 2048, 256], w [768, 256].
  OwnedShape dx{8, 2048, 256}, dw{768, 256};
  GemmDims d = linearDims(dx, dw);
  EXPECT_EQ(d.m, 16384);
  EXPECT_EQ(d.k, 256);
  EXPECT_EQ(d.n, 768);
}

// A ring GEMM is titan.linear's or titan.linear_grad_input's problem.
TEST(CudaKernelArgs, RingGemmDimsAreTheLinearOnes) {
  OwnedShape x{2048, 4096}, wUp{14336, 4096};
  GemmDims forward = ringGemmDims(false, 2048, 4096, 14336);
  GemmDims expected = linearDims(x, wUp);
  EXPECT_EQ(forward.m, expected.m);
  EXPECT_EQ(forward.k, expected.k);
  EXPECT_EQ(forward.n, expected.n);
  // grad_input: dy [2048, 14336] (in) times w [14336, 4096] -> [2048, 4096].
  OwnedShape dy{2048, 14336};
  GemmDims back = ringGemmDims(true, 2048, 14336, 4096);
  expected = linearGradInputDims(dy, wUp);
  EXPECT_EQ(back.m, expected.m);
  EXPECT_EQ(back.k, expected.k);
  EXPECT_EQ(back.n, expected.n);
}

TEST(CudaKernelArgs, RingCallDecodes) {
  const int64_t ints[] = {3, 1, 1, 1 << titan::manifest::kTP};
  RingCall r = decodeRingCall("all_gather_linear", ints, /*ranked=*/true);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.count, 3);
  EXPECT_EQ(r.dim, 1);
  EXPECT_TRUE(r.gradInput);
  EXPECT_EQ(r.axis, int(titan::manifest::kTP));
  // A single-rank run is a ring of one, whatever the mask.
  const int64_t unranked[] = {1, 0, 0, 0};
  r = decodeRingCall("all_gather_linear", unranked, /*ranked=*/false);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.axis, -1);
}

TEST(CudaKernelArgs, RingCallRejectsBadCounts) {
  for (int64_t count : {int64_t(0), int64_t(-1), int64_t(17)}) {
    const int64_t ints[] = {count, 1, 0, 1 << 4};
    RingCall r = decodeRingCall("linear_reduce_scatter", ints, true);
    EXPECT_EQ(r.error, "linear_reduce_scatter: " + std::to_string(count) +
                           " GEMMs (1 to 16)");
  }
  const int64_t most[] = {16, 1, 0, 1 << 4};
  EXPECT_EQ(decodeRingCall("k", most, true).error, "");
}

TEST(CudaKernelArgs, RingCallRejectsMasksOfSeveralAxes) {
  for (unsigned mask : {0u, 0b11000u, 0b101u}) {
    const int64_t ints[] = {1, 1, 0, int64_t(mask)};
    RingCall r = decodeRingCall("all_gather_linear", ints, true);
    EXPECT_EQ(r.error,
              "all_gather_linear: the ring runs over one mesh axis, not axis "
              "mask " +
                  std::to_string(mask));
  }
}

TEST(CudaKernelArgs, RingLayoutSplitsAroundTheDimension) {
  // 8B sequence parallel on tp 4: [1, 2048, 4096] around the sequence.
  RingLayout l = ringLayout(OwnedShape{1, 2048, 4096}, 1);
  EXPECT_EQ(l.outer, 1);
  EXPECT_EQ(l.rows, 2048);
  // The debug model's batch of 8 on tp 4: [8, 512, 256].
  l = ringLayout(OwnedShape{8, 512, 256}, 1);
  EXPECT_EQ(l.outer, 8);
  EXPECT_EQ(l.rows, 512);
  l = ringLayout(OwnedShape{8, 512, 256}, 0);
  EXPECT_EQ(l.outer, 1);
  EXPECT_EQ(l.rows, 4096);
  l = ringLayout(OwnedShape{2, 3, 5, 7}, 1);
  EXPECT_EQ(l.outer, 2);
  EXPECT_EQ(l.rows, 15);
}

void expectDisjointAligned(const std::vector<int64_t> &offsets, int64_t bytes) {
  for (size_t i = 0; i < offsets.size(); ++i) {
    EXPECT_EQ(offsets[i] % 256, 0);
    EXPECT_GE(offsets[i], kGemmWorkspaceBytes); // after cuBLASLt's
    if (i > 0) {
      EXPECT_GE(offsets[i], offsets[i - 1] + bytes);
    }
  }
}

TEST(CudaKernelArgs, AllGatherLinearCarveFitsThePlan) {
  // The debug model on tp 4, bf16: input [8, 512, 256] gathered on dim 1.
  OwnedShape x{8, 512, 256};
  AllGatherLinearCarve w =
      carveAllGatherLinear(ringLayout(x, 1), 256, dtypeBytes(Dtype::bf16));
  EXPECT_EQ(w.shardBytes, 512 * 256 * 2);
  EXPECT_EQ(w.incoming[0], kGemmWorkspaceBytes);
  EXPECT_EQ(w.incoming[1], kGemmWorkspaceBytes + (int64_t(2) << 20));
  EXPECT_EQ(w.end, kGemmWorkspaceBytes + (int64_t(4) << 20));
  EXPECT_EQ(w.end, plannedRingWorkspace(2, x.numel(), 16));
  expectDisjointAligned({w.incoming[0], w.incoming[1], w.end},
                        8 * w.shardBytes);
}

// A float8 shard is one byte an element: two bytes would run past the
// planned workspace.
TEST(CudaKernelArgs, Float8RingCarveFitsThePlan) {
  OwnedShape x{1, 200, 1};
  for (int64_t code : {int64_t(TITAN_RT_F8E4M3FN), int64_t(TITAN_RT_F8E5M2)}) {
    AllGatherLinearCarve w =
        carveAllGatherLinear(ringLayout(x, 1), 1, dtypeBytes(*cudaDtype(code)));
    EXPECT_EQ(w.shardBytes, 200);
    EXPECT_EQ(w.incoming[1], kGemmWorkspaceBytes + 256);
    EXPECT_EQ(w.end, plannedRingWorkspace(2, x.numel(), 8));
    LinearReduceScatterCarve r = carveLinearReduceScatter(
        ringLayout(x, 1), 1, dtypeBytes(*cudaDtype(code)));
    EXPECT_EQ(r.end, plannedRingWorkspace(3, x.numel(), 8));
  }
  // What the 2-byte assumption carved: past the plan.
  EXPECT_GT(carveAllGatherLinear(ringLayout(x, 1), 1, 2).end,
            plannedRingWorkspace(2, x.numel(), 8));
}

TEST(CudaKernelArgs, ScaledRingCarveFitsThePlan) {
  // A 70B-like tp 8 float8 gather: input [1, 1024, 8192] e4m3 on dim 1,
  // weights [1024, 8192], results 1024 wide. The scaled GEMM's scratch
  // (inverse scales and cuBLASLt's) comes first; the shards after it, as
  // the target's rule plans them (collectiveMatmulWorkspaceBytes with that
  // scratch).
  int64_t gemm = titan::cuda::scaledRingGemmBytes(
      /*gradInput=*/false, 1024, 8192, 1024 * 8192, 1024,
      /*rhsTransposed=*/false);
  // Inverse scales: 1024 rows and 1024 columns of f32.
  EXPECT_EQ(gemm, 2 * 1024 * 4 + kGemmWorkspaceBytes);
  int64_t shard = 1024 * 8192;
  ScaledRingCarve w = carveScaledRing(gemm, 2, shard);
  EXPECT_EQ(w.shard[0], gemm);
  EXPECT_EQ(w.shard[1], gemm + shard);
  EXPECT_EQ(w.end, collectiveMatmulWorkspaceBytes(2, shard, gemm));
  expectDisjointAligned({w.shard[0], w.shard[1], w.end}, shard);
  // The grad_input form with untransposed weights copies them K-major in
  // the scratch: the bound grows by the largest weight.
  EXPECT_EQ(titan::cuda::scaledRingGemmBytes(true, 1024, 1024, 1024 * 8192,
                                             8192, false),
            1024 * 8192 + 1024 * 4 + 8192 * 4 + kGemmWorkspaceBytes);
}

TEST(CudaKernelArgs, LinearReduceScatterCarveFitsThePlan) {
  // 8B on tp 4, bf16: result [1, 2048, 4096] scattered on dim 1.
  OwnedShape result{1, 2048, 4096};
  LinearReduceScatterCarve w = carveLinearReduceScatter(
      ringLayout(result, 1), 4096, dtypeBytes(Dtype::bf16));
  EXPECT_EQ(w.shardElements, 2048 * 4096);
  int64_t mib = int64_t(1) << 20;
  EXPECT_EQ(w.partials[0], 32 * mib);
  EXPECT_EQ(w.partials[1], 48 * mib);
  EXPECT_EQ(w.received, 64 * mib);
  EXPECT_EQ(w.end, 80 * mib);
  EXPECT_EQ(w.end, plannedRingWorkspace(3, result.numel(), 16));
  expectDisjointAligned({w.partials[0], w.partials[1], w.received, w.end},
                        w.shardElements * 2);
  // f32, an odd size: each part still 256-aligned.
  OwnedShape odd{3, 5, 7};
  w = carveLinearReduceScatter(ringLayout(odd, 1), 7, dtypeBytes(Dtype::f32));
  EXPECT_EQ(w.shardElements, 105);
  expectDisjointAligned({w.partials[0], w.partials[1], w.received, w.end},
                        105 * 4);
  EXPECT_EQ(w.end, plannedRingWorkspace(3, odd.numel(), 32));
}

TEST(CudaKernelArgs, AttentionDims) {
  AttentionDims d =
      attentionDims(OwnedShape{1, 8192, 32, 128}, OwnedShape{1, 8192, 8, 128});
  EXPECT_EQ(d.error, "");
  EXPECT_EQ(d.batch, 1);
  EXPECT_EQ(d.seq, 8192);
  EXPECT_EQ(d.qHeads, 32);
  EXPECT_EQ(d.kvHeads, 8);
  EXPECT_EQ(d.headDim, 128);
  d = attentionDims(OwnedShape{8, 2048, 16, 16}, OwnedShape{8, 2048, 16, 16});
  EXPECT_EQ(d.error, "");
  EXPECT_EQ(d.qHeads, 16);
  EXPECT_EQ(d.kvHeads, 16);
  EXPECT_EQ(d.headDim, 16);
  // Context parallel's keys may be another number of rows than the queries.
  d = attentionDims(OwnedShape{1, 4096, 32, 128}, OwnedShape{1, 8192, 8, 128});
  EXPECT_EQ(d.error, "");
  EXPECT_EQ(d.seq, 4096);
}

TEST(CudaKernelArgs, AttentionDimsRejectMismatches) {
  EXPECT_NE(attentionDims(OwnedShape{8192, 32, 128}, OwnedShape{8192, 8, 128})
                .error.find("rank 4"),
            std::string::npos);
  // 32 query heads do not share 5 kv heads evenly.
  EXPECT_NE(
      attentionDims(OwnedShape{1, 8192, 32, 128}, OwnedShape{1, 8192, 5, 128})
          .error,
      "");
  EXPECT_NE(
      attentionDims(OwnedShape{1, 8192, 32, 128}, OwnedShape{1, 8192, 8, 64})
          .error,
      "");
  EXPECT_NE(
      attentionDims(OwnedShape{1, 8192, 32, 128}, OwnedShape{2, 8192, 8, 128})
          .error,
      "");
}

TEST(CudaKernelArgs, ScaleMode) {
  EXPECT_EQ(scaleMode(OwnedShape{}), kScaleTensorwise);
  EXPECT_EQ(scaleMode(OwnedShape{1}), kScaleTensorwise);
  EXPECT_EQ(scaleMode(OwnedShape{1, 1}), kScaleTensorwise);
  EXPECT_EQ(scaleMode(OwnedShape{8192, 1}), kScalePerRow);
  EXPECT_EQ(scaleMode(OwnedShape{1, 8192, 1}), kScalePerRow);
  EXPECT_EQ(scaleMode(OwnedShape{1, 14336}), kScalePerColumn);
}

TEST(CudaKernelArgs, ScaledOperandDims) {
  // 8B's activations, rowwise: [1, 8192, 4096] with [1, 8192, 1] scales.
  ScaledOperandDims d =
      scaledOperandDims(OwnedShape{1, 8192, 4096}, OwnedShape{1, 8192, 1},
                        /*transposed=*/false);
  EXPECT_EQ(d.rows, 8192);
  EXPECT_EQ(d.cols, 4096);
  EXPECT_TRUE(d.vectorScales);
  // The same matrix written K-major ([4096, 8192]), one scale.
  d = scaledOperandDims(OwnedShape{4096, 8192}, OwnedShape{1},
                        /*transposed=*/true);
  EXPECT_EQ(d.rows, 8192);
  EXPECT_EQ(d.cols, 4096);
  EXPECT_FALSE(d.vectorScales);
  // A transposed [4096, 1, 8192] (its last dimension moved first).
  d = scaledOperandDims(OwnedShape{4096, 1, 8192}, OwnedShape{}, true);
  EXPECT_EQ(d.rows, 8192);
  EXPECT_EQ(d.cols, 4096);
}

TEST(CudaKernelArgs, SlicePlans) {
  const int64_t starts[] = {1, 2};
  BoxCopyPlan p = slicePlan(OwnedShape{4, 6}, OwnedShape{2, 3}, starts);
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.size[0], 2);
  EXPECT_EQ(p.size[1], 3);
  EXPECT_EQ(p.sourceBase, 1 * 6 + 2);
  EXPECT_EQ(p.targetBase, 0);
  EXPECT_EQ(p.sourceStride[0], 6);
  EXPECT_EQ(p.targetStride[0], 3);
  p = sliceGradPlan(OwnedShape{2, 3}, OwnedShape{4, 6}, starts);
  EXPECT_EQ(p.sourceBase, 0);
  EXPECT_EQ(p.targetBase, 8);
  EXPECT_EQ(p.sourceStride[0], 3);
  EXPECT_EQ(p.targetStride[0], 6);
}

// 8B's fused k and v projections' outputs concatenated on the last
// dimension: [1, 8192, 1024] twice into [1, 8192, 2048].
TEST(CudaKernelArgs, ConcatPlans) {
  OwnedShape in{1, 8192, 1024}, out{1, 8192, 2048};
  BoxCopyPlan first = concatPlan(in, out, 2, 0);
  BoxCopyPlan second = concatPlan(in, out, 2, 1024);
  EXPECT_EQ(first.targetBase, 0);
  EXPECT_EQ(second.targetBase, 1024);
  EXPECT_EQ(second.sourceBase, 0);
  EXPECT_EQ(second.targetStride[1], 2048);
  EXPECT_EQ(second.sourceStride[1], 1024);
  EXPECT_EQ(second.numel(), 8192 * 1024);
  // On the first dimension: the offset is a whole input's rows.
  BoxCopyPlan rows =
      concatPlan(OwnedShape{3, 5}, OwnedShape{7, 5}, 0, /*offset=*/4);
  EXPECT_EQ(rows.targetBase, 20);
}

} // namespace
