//===- KernelContracts.cpp - the titan ops' kernel contracts --------------===//
//
// KernelOpInterface for the titan ops: the values of the scalar parameters
// each kernel takes (their names, types and order are its entry in
// titan/Contract/KernelCatalog.def, as are the operands a result may
// overwrite). Defaults (no parameters) come from the interface; the
// workspaces are the target backends' (WorkspaceOpInterface models that
// lib/Target/ attaches).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/Dtype.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace titan;

#include "titan/Dialect/Titan/IR/KernelInterface.cpp.inc"

int64_t titan::getWorkspaceBytes(Operation *op, StringRef target) {
  auto workspace = dyn_cast<WorkspaceOpInterface>(op);
  return workspace ? workspace.getWorkspaceBytes(target) : 0;
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

ArrayAttr AttentionOp::getKernelParams() { return Params(*this).f(getScale()); }
ArrayAttr AttentionGradOp::getKernelParams() {
  return Params(*this).f(getScale()).i(getDeterministic() ? 1 : 0);
}

ArrayAttr FillOp::getKernelParams() { return Params(*this).f(getValue()); }

/// {rank, offsets...}: the box's place in the whole tensor.
static ArrayAttr boxParams(Operation *op, ArrayRef<int64_t> offsets) {
  Params p(op);
  p.i(offsets.size());
  for (int64_t offset : offsets)
    p.i(offset);
  return p;
}
ArrayAttr SliceOp::getKernelParams() { return boxParams(*this, getOffsets()); }
ArrayAttr SliceGradOp::getKernelParams() {
  return boxParams(*this, getOffsets());
}
ArrayAttr ConcatOp::getKernelParams() {
  return Params(*this).i(getInputs().size()).i(getDim());
}

ArrayAttr GlobalNormOp::getKernelParams() {
  return Params(*this).i(getInputs().size());
}

ArrayAttr LRScheduleOp::getKernelParams() {
  return Params(*this)
      .i(getWarmupSteps())
      .i(int64_t(getDecayType()))
      .f(getLr())
      .f(getDecayRatio() ? getDecayRatio()->convertToDouble() : -1.0)
      .f(getMinLrFactor());
}

ArrayAttr AdamWScalarsOp::getKernelParams() {
  return Params(*this)
      .f(getBeta1())
      .f(getBeta2())
      .f(getWeightDecay())
      .f(getMaxNorm());
}

ArrayAttr AdamWOp::getKernelParams() {
  return Params(*this).f(getBeta1()).f(getBeta2()).f(getEps());
}

//===----------------------------------------------------------------------===//
// Float8 (titan-expand-float8's ops)
//===----------------------------------------------------------------------===//

namespace {
/// The catalog's code of a float8 tensor's format (Dtype.h).
int64_t float8Code(Type t) {
  return float8FormatCode(cast<ShapedType>(t).getElementType());
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
  return Params(*this)
      .i(float8Code(getResult().getType()))
      .i(getTransposed() ? 1 : 0);
}

ArrayAttr ScaledMatmulOp::getKernelParams() {
  return Params(*this)
      .i(int64_t(getForm()))
      .i(float8Code(getLhs().getType()))
      .i(float8Code(getRhs().getType()))
      .i(getLhsTransposed() ? 1 : 0)
      .i(getRhsTransposed() ? 1 : 0)
      .i(0); // accumulate: kernel-fuse-gemm-accumulate's to set
}
