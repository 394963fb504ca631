//===- CPUBackend.cpp - the CPU target ------------------------------------===//
//
// The CPU target's backend: f32 unless the config says otherwise, 16-bit
// kernels run on f32 copies, libtitanrt_cpu linked as a shared library,
// and the workspaces of the ops whose CPU kernels need scratch, sized by
// titan/Contract/CPUWorkspaces.h, which the kernels (runtime/lib/) carve
// their tiles from. GEMMs need none (oneDNN's own scratch is its own).
//
//===----------------------------------------------------------------------===//

#include "titan/Target/CPU/CPUBackend.h"

#include "titan/Contract/CPUWorkspaces.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Target/CommonWorkspaces.h"

#include <algorithm>

using namespace mlir;
using namespace titan;
using namespace titan::target;

namespace {
/// Bytes of the type the kernel accumulates in: f64 for f64, f32 for the
/// rest (bf16 and f16 kernels compute in f32).
int64_t accumulatorBytes(Value v) {
  return cast<ShapedType>(v.getType()).getElementType().isF64() ? 8 : 4;
}

/// The inverse frequencies, one f32 per pair.
int64_t ropeAngles(RopeAnglesOp op) { return op.getType().getDimSize(1) * 4; }

/// Flash attention's tiles, one slot per thread (O and the log-sum-exp
/// come from the forward).
int64_t attention(AttentionOp op) {
  auto q = op.getQuery().getType();
  return cpu::attentionWorkspaceBytes(q.getDimSize(0), q.getDimSize(2),
                                      q.getDimSize(1),
                                      accumulatorBytes(op.getQuery()));
}
int64_t attentionGrad(AttentionGradOp op) {
  auto q = op.getQuery().getType();
  return cpu::attentionGradWorkspaceBytes(
      q.getDimSize(0), op.getKey().getType().getDimSize(2), q.getDimSize(1),
      accumulatorBytes(op.getQuery()));
}

/// Context parallel's block attention: the same tiles over the rank's two
/// query chunks.
int64_t contextAttention(dist::ContextAttentionOp op) {
  auto q = op.getQuery().getType();
  return cpu::contextAttentionWorkspaceBytes(q.getDimSize(0), q.getDimSize(2),
                                             q.getDimSize(1),
                                             accumulatorBytes(op.getQuery()));
}
int64_t contextAttentionGrad(dist::ContextAttentionGradOp op) {
  auto q = op.getQuery().getType();
  return cpu::contextAttentionGradWorkspaceBytes(
      q.getDimSize(0), op.getKey().getType().getDimSize(2), q.getDimSize(1),
      accumulatorBytes(op.getQuery()));
}

/// One set of f64 partial sums, sized for the largest tensor.
int64_t globalNorm(GlobalNormOp op) {
  int64_t largest = 0;
  for (Value input : op.getInputs())
    largest = std::max(largest, elementsOf(input));
  return cpu::globalNormWorkspaceBytes(largest);
}

/// f32 copies of both operands (exact) for the f32 GEMM, and its product:
/// kernel-fuse-gemm-accumulate may later make the GEMM add into its result
/// (a gradient's slot, the sum of a tensor's gradients), and the product
/// is then scaled apart from the old values, as cuBLASLt's epilogue.
int64_t scaledMatmul(ScaledMatmulOp op) {
  return copyBytes(op.getLhs(), 4) + copyBytes(op.getRhs(), 4) +
         copyBytes(op.getResult(), 4);
}

/// The ring's shards (runtime/lib/AsyncTensorParallel.h): two for the
/// gather (the one held, the one arriving), three for the reduce-scatter
/// (two partial sums, one received), in the accumulator type.
int64_t allGatherLinear(dist::AllGatherLinearOp op) {
  return 2 * copyBytes(op.getInput(), accumulatorBytes(op.getInput()));
}
int64_t linearReduceScatter(dist::LinearReduceScatterOp op) {
  int64_t bytes = accumulatorBytes(op.getResult());
  int64_t shards = 3 * copyBytes(op.getResult(), bytes);
  if (op.getNumGemms() == 1)
    return shards;
  // One shard's rows of one outer index: the 16-bit kernel's separately
  // rounded GEMM results (runtime/lib/AsyncTensorParallel.h).
  auto result = op.getResult().getType();
  int64_t block = bytes;
  for (int64_t d = op.getDim(); d < result.getRank(); ++d)
    block *= result.getDimSize(d);
  return shards + block;
}

/// A Float8 ring's GEMMs: their weights' elements, and the widest of the
/// per-GEMM row lengths `widthOf(i)` (the largest row block's).
struct RingGemmSizes {
  int64_t weights = 0, widest = 0;
};
template <typename RingOp>
RingGemmSizes ringGemmSizes(RingOp op, function_ref<Value(unsigned)> widthOf) {
  RingGemmSizes sizes;
  for (unsigned i = 0; i < op.getNumGemms(); ++i) {
    sizes.weights += elementsOf(op.getWeight(i));
    sizes.widest = std::max(sizes.widest, lastDimOf(widthOf(i)));
  }
  return sizes;
}

/// Float8's rings (cpu::scaledRingWorkspace): the float8 shards the gather
/// holds and receives, or the reduce-scatter's f32 partial sums, then f32
/// copies of the weights, of one lhs row block and of its product.
int64_t allGatherScaledMatmul(dist::AllGatherScaledMatmulOp op) {
  int64_t rows = ringRowsOf(op.getInput(), op.getDim());
  RingGemmSizes g = ringGemmSizes(
      op, [&](unsigned i) -> Value { return op.getOutputs()[i]; });
  return cpu::scaledRingWorkspace(2, elementsOf(op.getInput()), g.weights,
                                  rows * lastDimOf(op.getInput()),
                                  rows * g.widest)
      .bytes;
}
int64_t scaledMatmulReduceScatter(dist::ScaledMatmulReduceScatterOp op) {
  int64_t rows = ringRowsOf(op.getResult(), op.getDim());
  RingGemmSizes g =
      ringGemmSizes(op, [&](unsigned i) -> Value { return op.getLhs(i); });
  return cpu::scaledRingWorkspace(3, elementsOf(op.getResult()) * 4, g.weights,
                                  rows * g.widest,
                                  rows * lastDimOf(op.getResult()))
      .bytes;
}

/// Host memory, f32 emulation of float8, the MPI ranks that run
/// pipeline-parallel programs, and pointwise kernels generated as host
/// loops (titan_rt_parallel_for).
TargetFeatures cpuFeatures() {
  TargetFeatures features;
  features.hostMemory = true;
  features.documentMaskedAttention = true;
  features.documentMaskedContextParallel = true;
  features.pipelineParallel = true;
  features.generatedKernels = true;
  // 64 row blocks, a few per core: their partials 64 rows of C, which the
  // totals pass reads once.
  features.columnSumBlocks = 64;
  return features;
}

class CPUBackend : public TargetBackend {
public:
  CPUBackend()
      : TargetBackend("cpu",
                      "the host's cores (oneDNN GEMMs, OpenMP threads; MPI "
                      "ranks)",
                      {/*defaultParamDtype=*/"float32",
                       /*widenLowPrecision=*/true},
                      cpuFeatures()) {
    WorkspaceRules &rules = getMutableWorkspaceRules();
    rules.add<RopeAnglesOp>(ropeAngles);
    rules.add<AttentionOp>(attention);
    rules.add<AttentionGradOp>(attentionGrad);
    rules.add<GlobalNormOp>(globalNorm);
    rules.add<ScaledMatmulOp>(scaledMatmul);
    addCollectiveWorkspaceRules(rules);
    rules.add<dist::ContextAttentionOp>(contextAttention);
    rules.add<dist::ContextAttentionGradOp>(contextAttentionGrad);
    rules.add<dist::AllGatherLinearOp>(allGatherLinear);
    rules.add<dist::LinearReduceScatterOp>(linearReduceScatter);
    rules.add<dist::AllGatherScaledMatmulOp>(allGatherScaledMatmul);
    rules.add<dist::ScaledMatmulReduceScatterOp>(scaledMatmulReduceScatter);
  }

  /// libtitanrt_cpu, a shared library beside libtitanrt.
  TargetLink getTargetLink(StringRef) const override {
    TargetLink link;
    link.kernelLibraries = {"-ltitanrt_cpu"};
    return link;
  }
};
} // namespace

std::unique_ptr<TargetBackend> titan::target::createCPUTargetBackend() {
  return std::make_unique<CPUBackend>();
}
