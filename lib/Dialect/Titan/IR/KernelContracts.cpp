//===- KernelContracts.cpp - the titan ops' kernel contracts --------------===//
//
// KernelOpInterface for the titan ops: the values of the scalar parameters
// each kernel takes (their names, types and order are its entry in
// titan/Kernel/KernelCatalog.def, as are the operands a result may
// overwrite) and its workspace. Defaults (no parameters, no workspace)
// come from the interface.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Target/CPU/KernelWorkspaces.h"
#include "titan/Target/CUDA/KernelWorkspaces.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace titan;

#include "titan/Dialect/Titan/IR/KernelInterface.cpp.inc"

llvm::StringRef titan::stringifyKernelTarget(KernelTarget target) {
  return target == KernelTarget::CPU ? "cpu" : "cuda";
}
std::optional<KernelTarget> titan::symbolizeKernelTarget(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<KernelTarget>>(name)
      .Case("cpu", KernelTarget::CPU)
      .Case("cuda", KernelTarget::CUDA)
      .Default(std::nullopt);
}

namespace {
/// Typed kernel parameters: integers as i64, floats as f64.
struct Params {
  explicit Params(Operation *op) : b(op->getContext()) {}
  Params &i(int64_t v) {
    values.push_back(b.getI64IntegerAttr(v));
    return *this;
  }
  Params &f(double v) {
    values.push_back(b.getF64FloatAttr(v));
    return *this;
  }
  Params &f(APFloat v) { return f(v.convertToDouble()); }
  operator ArrayAttr() { return b.getArrayAttr(values); }

  Builder b;
  SmallVector<Attribute> values;
};

/// Rows of a tensor: the elements before its last dimension.
int64_t rowsOf(Value v) {
  auto t = cast<ShapedType>(v.getType());
  return t.getRank() == 0 ? 1 : t.getNumElements() / t.getShape().back();
}

bool isF32(Value v) {
  return cast<ShapedType>(v.getType()).getElementType().isF32();
}

/// Bytes of the type the kernel accumulates in: f64 for f64, f32 for the
/// rest (bf16 and f16 kernels compute in f32).
int64_t accumulatorBytes(Value v) {
  return cast<ShapedType>(v.getType()).getElementType().isF64() ? 8 : 4;
}
} // namespace

ArrayAttr EmbeddingOp::getKernelParams() {
  return Params(*this).i(getVocabStart() ? 1 : 0);
}
ArrayAttr EmbeddingGradOp::getKernelParams() {
  return Params(*this).i(getVocabStart() ? 1 : 0);
}
ArrayAttr TargetLogitOp::getKernelParams() {
  return Params(*this).i(getVocabStart() ? 1 : 0);
}
ArrayAttr TargetLogitGradOp::getKernelParams() {
  return Params(*this).i(getVocabStart() ? 1 : 0);
}

ArrayAttr RMSNormOp::getKernelParams() { return Params(*this).f(getEps()); }
ArrayAttr RMSNormGradOp::getKernelParams() { return Params(*this).f(getEps()); }
// The weight gradient's per-column sums per block of rows, then summed in
// a fixed order: in f64 on the CPU, in f32 on CUDA.
int64_t RMSNormGradOp::getWorkspaceBytes(KernelTarget target) {
  int64_t dim = getWeight().getType().getNumElements();
  if (target == KernelTarget::CUDA)
    return cuda::rmsNormGradWorkspaceBytes(rowsOf(getInput()), dim);
  return cpu::rmsNormGradWorkspaceBytes(rowsOf(getInput()), dim);
}

// The inverse frequencies, one f32 per pair (the CUDA kernel computes them
// in place).
int64_t RopeAnglesOp::getWorkspaceBytes(KernelTarget target) {
  return target == KernelTarget::CPU ? getType().getDimSize(1) * 4 : 0;
}

ArrayAttr RopeAnglesOp::getKernelParams() {
  Params p(*this);
  if (!hasScaling())
    return p.i(0).i(0).f(getTheta()).f(0.0).f(0.0).f(0.0);
  return p.i(1)
      .i(*getOriginalMaxPositionEmbeddings())
      .f(getTheta())
      .f(*getScalingFactor())
      .f(*getLowFreqFactor())
      .f(*getHighFreqFactor());
}

ArrayAttr RopeOp::getKernelParams() {
  return Params(*this).i(getTranspose() ? 1 : 0);
}

// On the CPU, flash attention's tiles, one slot per thread
// (titan/Target/CPU/KernelWorkspaces.h; O and the log-sum-exp come from
// the forward). On CUDA, cuDNN's flash attention (bf16/f16) keeps
// nothing of S x S; its scratch is bounded in KernelWorkspaces.h; the f32
// kernels need none.
ArrayAttr AttentionOp::getKernelParams() { return Params(*this).f(getScale()); }
int64_t AttentionOp::getWorkspaceBytes(KernelTarget target) {
  auto q = getQuery().getType();
  int64_t batch = q.getDimSize(0), seq = q.getDimSize(1),
          heads = q.getDimSize(2);
  if (target == KernelTarget::CUDA)
    return isF32(getQuery()) ? 0
                             : cuda::attentionWorkspaceBytes(batch, heads, seq);
  return cpu::attentionWorkspaceBytes(batch, heads, seq,
                                      accumulatorBytes(getQuery()));
}
ArrayAttr AttentionGradOp::getKernelParams() {
  return Params(*this).f(getScale());
}
int64_t AttentionGradOp::getWorkspaceBytes(KernelTarget target) {
  auto q = getQuery().getType();
  int64_t batch = q.getDimSize(0), seq = q.getDimSize(1),
          heads = q.getDimSize(2), headDim = q.getDimSize(3);
  if (target == KernelTarget::CUDA)
    return isF32(getQuery())
               ? 0
               : cuda::attentionGradWorkspaceBytes(batch, heads, seq, headDim);
  int64_t kvHeads = getKey().getType().getDimSize(2);
  return cpu::attentionGradWorkspaceBytes(batch, kvHeads, seq,
                                          accumulatorBytes(getQuery()));
}

// cuBLASLt's workspace (the CPU's OpenBLAS needs none).
int64_t LinearOp::getWorkspaceBytes(KernelTarget target) {
  return target == KernelTarget::CUDA ? cuda::kGemmWorkspaceBytes : 0;
}
int64_t LinearGradInputOp::getWorkspaceBytes(KernelTarget target) {
  return target == KernelTarget::CUDA ? cuda::kGemmWorkspaceBytes : 0;
}
int64_t LinearGradWeightOp::getWorkspaceBytes(KernelTarget target) {
  return target == KernelTarget::CUDA ? cuda::kGemmWorkspaceBytes : 0;
}

// Each row's loss, averaged in a fixed order afterwards.
int64_t CrossEntropyOp::getWorkspaceBytes(KernelTarget target) {
  return target == KernelTarget::CUDA
             ? cuda::crossEntropyWorkspaceBytes(rowsOf(getLogits()))
             : cpu::crossEntropyWorkspaceBytes(rowsOf(getLogits()));
}
int64_t CrossEntropyFromStatsOp::getWorkspaceBytes(KernelTarget target) {
  return target == KernelTarget::CUDA
             ? cuda::crossEntropyWorkspaceBytes(
                   cast<ShapedType>(getOperand(0).getType()).getNumElements())
             : 0;
}

// CUDA: the stable sort of the tokens by row (deterministic sums).
int64_t EmbeddingGradOp::getWorkspaceBytes(KernelTarget target) {
  return target == KernelTarget::CUDA
             ? cuda::embeddingGradWorkspaceBytes(
                   cast<ShapedType>(getTokens().getType()).getNumElements())
             : 0;
}

ArrayAttr FillOp::getKernelParams() { return Params(*this).f(getValue()); }

ArrayAttr GlobalNormOp::getKernelParams() {
  return Params(*this).i(getInputs().size());
}
// CUDA: f64 partial sums per tensor, reduced in a fixed order.
int64_t GlobalNormOp::getWorkspaceBytes(KernelTarget target) {
  if (target == KernelTarget::CUDA)
    return cuda::globalNormWorkspaceBytes(getInputs().size());
  int64_t largest = 0;
  for (Value input : getInputs())
    largest =
        std::max(largest, cast<ShapedType>(input.getType()).getNumElements());
  return cpu::globalNormWorkspaceBytes(largest);
}

ArrayAttr LRScheduleOp::getKernelParams() {
  int64_t type = llvm::StringSwitch<int64_t>(getDecayType())
                     .Case("linear", 0)
                     .Case("sqrt", 1)
                     .Default(2);
  return Params(*this)
      .i(getWarmupSteps())
      .i(type)
      .f(getLr())
      .f(getDecayRatio() ? getDecayRatio()->convertToDouble() : -1.0)
      .f(getMinLrFactor());
}

ArrayAttr AdamWOp::getKernelParams() {
  return Params(*this)
      .f(getBeta1())
      .f(getBeta2())
      .f(getEps())
      .f(getWeightDecay())
      .f(getMaxNorm());
}

//===----------------------------------------------------------------------===//
// Float8 (titan-expand-float8's ops)
//===----------------------------------------------------------------------===//

namespace {
/// The catalog's code of a float8 format: 0 f8E4M3FN, 1 f8E5M2.
int64_t float8Code(Type t) {
  return isa<Float8E5M2Type>(cast<ShapedType>(t).getElementType()) ? 1 : 0;
}
int64_t bytesOf(Value v, int64_t elementBytes) {
  return (cast<ShapedType>(v.getType()).getNumElements() * elementBytes + 63) /
         64 * 64;
}
} // namespace

ArrayAttr AmaxOp::getKernelParams() { return Params(*this).i(getReduction()); }

ArrayAttr Float8ScaleOp::getKernelParams() {
  bool e5m2 = isa<Float8E5M2Type>(getFloat8Type());
  return Params(*this)
      .i(getRoundToPowerOf_2() ? 1 : 0)
      .f(e5m2 ? 57344.0 : 448.0);
}

ArrayAttr QuantizeOp::getKernelParams() {
  return Params(*this).i(float8Code(getResult().getType()));
}

ArrayAttr ScaledMatmulOp::getKernelParams() {
  int64_t form = llvm::StringSwitch<int64_t>(getForm())
                     .Case("linear", 0)
                     .Case("grad_input", 1)
                     .Default(2);
  return Params(*this)
      .i(form)
      .i(float8Code(getLhs().getType()))
      .i(float8Code(getRhs().getType()));
}
// CPU: f32 copies of both operands (exact) for the f32 GEMM. CUDA: the
// operands transposed K-major where the form needs it (cuBLASLt's FP8
// GEMMs take only the TN layout), the f32 product before its scaling, and
// cuBLASLt's workspace.
int64_t ScaledMatmulOp::getWorkspaceBytes(KernelTarget target) {
  if (target == KernelTarget::CPU)
    return bytesOf(getLhs(), 4) + bytesOf(getRhs(), 4);
  return bytesOf(getLhs(), 1) + bytesOf(getRhs(), 1) + bytesOf(getResult(), 4) +
         cuda::kGemmWorkspaceBytes;
}
