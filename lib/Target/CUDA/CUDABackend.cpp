//===- CUDABackend.cpp - the CUDA target ----------------------------------===//
//
// The CUDA target's backend: TorchTitan's bf16 unless the config says
// otherwise, the kernels read 16-bit buffers directly, the CUDA archives
// linked statically with the CUDA libraries this build found, and the
// workspaces of the ops whose CUDA kernels need scratch, sized by
// titan/Contract/CUDAWorkspaces.h, which the CUDA runtime (runtime/cuda/)
// carves its scratch from. Sizes only: no CUDA needed.
//
//===----------------------------------------------------------------------===//

#include "titan/Target/CUDA/CUDABackend.h"

#include "titan/Contract/CUDAWorkspaces.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Target/CommonWorkspaces.h"

#include "llvm/ADT/Twine.h"

using namespace mlir;
using namespace titan;
using namespace titan::target;

namespace {
bool isF32(Value v) {
  return cast<ShapedType>(v.getType()).getElementType().isF32();
}

/// cuDNN's flash attention (bf16/f16): its forward and default backward
/// keep nothing of S x S; the deterministic backward's does (dP). The f32
/// kernels need none.
int64_t attention(AttentionOp op) {
  auto q = op.getQuery().getType();
  return isF32(op.getQuery())
             ? 0
             : cuda::attentionWorkspaceBytes(q.getDimSize(0), q.getDimSize(2),
                                             q.getDimSize(1));
}
int64_t attentionGrad(AttentionGradOp op) {
  auto q = op.getQuery().getType();
  return isF32(op.getQuery())
             ? 0
             : cuda::attentionGradWorkspaceBytes(
                   q.getDimSize(0), q.getDimSize(2), q.getDimSize(1),
                   q.getDimSize(3), op.getDeterministic());
}

/// Context parallel's block attention: cuDNN per visible chunk pair, the
/// pairs' partial results (and, backward, partial gradients) summed or
/// merged in f32. The f32 kernels need none.
int64_t contextAttention(dist::ContextAttentionOp op) {
  auto q = op.getQuery().getType();
  return isF32(op.getQuery()) ? 0
                              : cuda::contextAttentionWorkspaceBytes(
                                    q.getDimSize(0), q.getDimSize(2),
                                    q.getDimSize(1), q.getDimSize(3));
}
int64_t contextAttentionGrad(dist::ContextAttentionGradOp op) {
  auto q = op.getQuery().getType();
  return isF32(op.getQuery())
             ? 0
             : cuda::contextAttentionGradWorkspaceBytes(
                   q.getDimSize(0), q.getDimSize(2),
                   op.getKey().getType().getDimSize(2), q.getDimSize(1),
                   q.getDimSize(3), op.getDeterministic());
}

/// cuBLASLt's workspace.
template <typename GemmOp> int64_t gemm(GemmOp) {
  return cuda::kGemmWorkspaceBytes;
}

/// The stable sort of the tokens by row (deterministic sums).
int64_t embeddingGrad(EmbeddingGradOp op) {
  return cuda::embeddingGradWorkspaceBytes(elementsOf(op.getTokens()));
}

/// f64 partial sums per tensor, reduced in a fixed order.
int64_t globalNorm(GlobalNormOp op) {
  return cuda::globalNormWorkspaceBytes(op.getInputs().size());
}

/// The operands copied K-major where the form needs it and they do not
/// come transposed (cuBLASLt's FP8 GEMMs take only the TN layout), the
/// inverse scales and cuBLASLt's workspace, at 256-byte offsets.
int64_t scaledMatmul(ScaledMatmulOp op) {
  auto result = cast<ShapedType>(op.getResult().getType());
  return cuda::scaledMatmulWorkspace(
             cuda::ScaledMatmulForm(int(op.getForm())), elementsOf(op.getLhs()),
             elementsOf(op.getRhs()), rowsOf(op.getResult()),
             result.getShape().back(), op.getLhsTransposed(),
             op.getRhsTransposed())
      .bytes;
}

/// cuBLASLt's workspace and the ring's shards, in the element type.
int64_t bytesOf(Value v) {
  auto t = cast<ShapedType>(v.getType());
  return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
}
int64_t allGatherLinear(dist::AllGatherLinearOp op) {
  return cuda::collectiveMatmulWorkspaceBytes(2, bytesOf(op.getInput()));
}
int64_t linearReduceScatter(dist::LinearReduceScatterOp op) {
  return cuda::collectiveMatmulWorkspaceBytes(3, bytesOf(op.getResult()));
}

/// Float8's: one row block's scaled GEMM scratch (bounded over the ring's
/// GEMMs), then the float8 shards or the partial sums in the result type
/// (runtime/cuda/KernelArgs.h, carveScaledRing).
int64_t allGatherScaledMatmul(dist::AllGatherScaledMatmulOp op) {
  int64_t weights = 0, widest = 0;
  for (unsigned i = 0; i < op.getNumGemms(); ++i) {
    weights = std::max(weights, elementsOf(op.getWeight(i)));
    widest = std::max(widest, lastDimOf(op.getOutputs()[i]));
  }
  int64_t gemm = cuda::scaledRingGemmBytes(
      op.getGradInput(), ringRowsOf(op.getInput(), op.getDim()),
      lastDimOf(op.getInput()), weights, widest, op.getRhsTransposed());
  return cuda::collectiveMatmulWorkspaceBytes(2, bytesOf(op.getInput()), gemm);
}
int64_t scaledMatmulReduceScatter(dist::ScaledMatmulReduceScatterOp op) {
  int64_t weights = 0, widest = 0;
  for (unsigned i = 0; i < op.getNumGemms(); ++i) {
    weights = std::max(weights, elementsOf(op.getWeight(i)));
    widest = std::max(widest, lastDimOf(op.getLhs(i)));
  }
  int64_t gemm = cuda::scaledRingGemmBytes(
      op.getGradInput(), ringRowsOf(op.getResult(), op.getDim()), widest,
      weights, lastDimOf(op.getResult()), op.getRhsTransposed());
  return cuda::collectiveMatmulWorkspaceBytes(3, bytesOf(op.getResult()), gemm);
}

/// `list` as a std::vector (CMake's comma-separated compile definitions).
std::vector<std::string> splitList(StringRef list) {
  SmallVector<StringRef> items;
  list.split(items, ',', -1, false);
  return {items.begin(), items.end()};
}

/// cuBLASLt's FP8 GEMMs, async TP's fused rings, and kernels built per
/// GPU architecture; no pipeline-parallel runtime yet (its transfers run
/// on the CPU target's MPI ranks).
TargetFeatures cudaFeatures() {
  TargetFeatures features;
  // Pointwise kernels generated as NVVM kernels (gpu-module-to-binary).
  features.generatedKernels = true;
  // About four 256-thread blocks per SM of an H100/H200's 132: a norm's
  // backward fills the GPU.
  features.columnSumBlocks = 512;
  features.float8Gemms = true;
  features.asyncTensorParallel = true;
  features.deviceArch = true;
  features.pipelineParallel = true;
  // Through cuDNN's score modifier, on whole sequences and on context
  // parallel's chunk pairs.
  features.documentMaskedAttention = true;
  features.documentMaskedContextParallel = true;
  return features;
}

class CUDABackend : public TargetBackend {
public:
  CUDABackend()
      : TargetBackend("cuda",
                      "NVIDIA GPUs (cuBLASLt, cuDNN, fused kernels; NCCL "
                      "ranks)",
                      {/*defaultParamDtype=*/"bfloat16",
                       /*widenLowPrecision=*/false},
                      cudaFeatures()) {
    WorkspaceRules &rules = getMutableWorkspaceRules();
    rules.add<AttentionOp>(attention);
    rules.add<AttentionGradOp>(attentionGrad);
    rules.add<LinearOp>(gemm<LinearOp>);
    rules.add<LinearGradInputOp>(gemm<LinearGradInputOp>);
    rules.add<LinearGradWeightOp>(gemm<LinearGradWeightOp>);
    rules.add<EmbeddingGradOp>(embeddingGrad);
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

  /// The kernels link statically (the executable carries its SASS), then
  /// the CUDA libraries runtime/cuda/CMakeLists.txt names, found at run
  /// time in the toolkit's folder.
  TargetLink getTargetLink(StringRef runtimeDir) const override {
    TargetLink link;
    for (const char *archive :
         {"libtitanrt_cuda.a", "libtitanrt_cuda_kernels.a"})
      link.kernelLibraries.push_back((Twine(runtimeDir) + "/" + archive).str());
    link.systemLibraries = splitList(TITAN_CUDA_LINK_LIBRARIES);
    link.libraryDirs = {TITAN_CUDA_LIBRARY_DIR};
    return link;
  }
};
} // namespace

std::unique_ptr<TargetBackend> titan::target::createCUDATargetBackend() {
  return std::make_unique<CUDABackend>();
}
