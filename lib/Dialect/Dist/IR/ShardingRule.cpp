//===- ShardingRule.cpp - factor-based op sharding rules ------------------===//

#include "titan/Dialect/Dist/IR/ShardingRule.h"

using namespace mlir;
using namespace titan;
using namespace titan::dist;

#include "titan/Dialect/Dist/IR/ShardingRuleInterface.cpp.inc"
#include "llvm/ADT/DenseSet.h"

int64_t ShardingRule::addFactor(int64_t size, FactorKind kind,
                                ReductionKind reduction) {
  factors.push_back({size, kind, reduction});
  return factors.size() - 1;
}

int64_t ShardingRule::addLocalFactor(int64_t size, unsigned axisMask) {
  factors.push_back({size, FactorKind::Local, ReductionKind::Sum, axisMask});
  return factors.size() - 1;
}

/// One factor per dimension; a negative index marks a size-1 dimension.
static ShardingRule::TensorFactors oneFactorPerDim(ArrayRef<int64_t> f) {
  ShardingRule::TensorFactors dims(f.size());
  for (auto [d, factor] : llvm::enumerate(f))
    if (factor >= 0)
      dims[d].push_back(factor);
  return dims;
}

void ShardingRule::addOperand(ArrayRef<int64_t> factorPerDim) {
  operands.push_back(oneFactorPerDim(factorPerDim));
}

void ShardingRule::addResult(ArrayRef<int64_t> factorPerDim) {
  results.push_back(oneFactorPerDim(factorPerDim));
}

SmallVector<SmallVector<StringRef>>
titan::dist::shardingDims(ShardingAttr sharding, int64_t rank) {
  SmallVector<SmallVector<StringRef>> dims(rank);
  if (sharding)
    for (int64_t d = 0; d < rank; ++d)
      dims[d] = sharding.getAxes(d);
  return dims;
}

ShardingAttr titan::dist::makeSharding(MLIRContext *ctx,
                                       ArrayRef<SmallVector<StringRef>> dims,
                                       ArrayRef<StringRef> partial,
                                       ReductionKind reduction) {
  Builder b(ctx);
  size_t kept = dims.size();
  while (kept > 0 && dims[kept - 1].empty())
    --kept;
  SmallVector<Attribute> dimAttrs;
  for (const SmallVector<StringRef> &axes : dims.take_front(kept))
    dimAttrs.push_back(b.getStrArrayAttr(axes));
  if (partial.empty())
    return ShardingAttr::get(ctx, b.getArrayAttr(dimAttrs));
  return ShardingAttr::get(
      ctx, b.getArrayAttr(dimAttrs), b.getStrArrayAttr(partial),
      reduction == ReductionKind::Sum ? ReductionKindAttr()
                                      : ReductionKindAttr::get(ctx, reduction));
}

ShardingAttr titan::dist::replicatedSharding(MLIRContext *ctx) {
  return makeSharding(ctx, {});
}

/// Whether some operand or result has both factors `f` and `g`.
static bool shareTensor(ArrayRef<ShardingRule::TensorFactors> tensors,
                        int64_t f, int64_t g) {
  for (const ShardingRule::TensorFactors &dims : tensors) {
    bool hasF = false, hasG = false;
    for (const auto &dimFactors : dims) {
      hasF |= llvm::is_contained(dimFactors, f);
      hasG |= llvm::is_contained(dimFactors, g);
    }
    if (hasF && hasG)
      return true;
  }
  return false;
}

bool ShardingRule::canClaim(int64_t f, ArrayRef<StringRef> axes,
                            const FactorShardings &chosen,
                            MeshAttr mesh) const {
  const ShardingFactor &factor = factors[f];
  if (factor.kind == FactorKind::NeedReplication || !chosen[f].empty())
    return false;
  int64_t parts = 1;
  for (StringRef axis : axes) {
    if (factor.kind == FactorKind::Local &&
        !(factor.allowedAxes & mesh::axisBit(*mesh::parseAxis(axis))))
      return false;
    // An axis splits at most one dimension of any tensor.
    for (auto [g, claimed] : llvm::enumerate(chosen))
      if (llvm::is_contained(claimed, axis) &&
          (shareTensor(operands, f, g) || shareTensor(results, f, g)))
        return false;
    parts *= *mesh.getAxisSize(axis);
  }
  return factor.size % parts == 0;
}

FactorShardings
ShardingRule::chooseFactorShardings(ArrayRef<ShardingAttr> operandShardings,
                                    ArrayRef<unsigned> order,
                                    MeshAttr mesh) const {
  FactorShardings chosen(factors.size());
  for (unsigned i : order) {
    for (auto [d, dimFactors] : llvm::enumerate(operands[i])) {
      SmallVector<StringRef> axes = operandShardings[i].getAxes(d);
      if (dimFactors.empty())
        continue;
      // The axes split the outermost factor (inner ones stay whole); of a
      // list that cannot split it, the longest prefix that can (the rest
      // is gathered: sequence parallel's tp under context parallel's cp).
      for (size_t n = axes.size(); n > 0; --n) {
        ArrayRef<StringRef> prefix = ArrayRef(axes).take_front(n);
        if (canClaim(dimFactors.front(), prefix, chosen, mesh)) {
          chosen[dimFactors.front()].assign(prefix.begin(), prefix.end());
          break;
        }
      }
    }
  }
  // A factor split inside a compound dimension of another tensor (not its
  // outermost) cannot be sliced there: keep it whole.
  for (const SmallVector<TensorFactors> *group : {&operands, &results})
    for (const TensorFactors &dims : *group)
      for (const auto &dimFactors : dims)
        for (size_t j = 1; j < dimFactors.size(); ++j)
          chosen[dimFactors[j]].clear();
  return chosen;
}

ShardingAttr ShardingRule::tensorSharding(MLIRContext *ctx,
                                          const TensorFactors &dims,
                                          const FactorShardings &chosen,
                                          ArrayRef<StringRef> partial,
                                          ReductionKind reduction) const {
  SmallVector<SmallVector<StringRef>> axes(dims.size());
  for (auto [d, dimFactors] : llvm::enumerate(dims))
    if (!dimFactors.empty())
      axes[d] = chosen[dimFactors.front()];
  return makeSharding(ctx, axes, partial, reduction);
}

ShardingAttr ShardingRule::getOperandSharding(unsigned i,
                                              const FactorShardings &chosen,
                                              ShardingAttr current) const {
  MLIRContext *ctx = current.getContext();
  if (keepsPartial)
    return tensorSharding(ctx, operands[i], chosen, current.getPartialAxes(),
                          current.getReductionKind());
  return tensorSharding(ctx, operands[i], chosen, {}, ReductionKind::Sum);
}

ShardingAttr
ShardingRule::getResultSharding(MLIRContext *ctx, unsigned i,
                                const FactorShardings &chosen,
                                ArrayRef<ShardingAttr> operandShardings) const {
  SmallVector<StringRef> partial;
  ReductionKind reduction = ReductionKind::Sum;
  if (keepsPartial && !operandShardings.empty()) {
    partial = operandShardings.front().getPartialAxes();
    reduction = operandShardings.front().getReductionKind();
  }
  // A reduction factor is contracted for the results that lack it; a result
  // that has it (cross_entropy's per-row lse) is split along it instead.
  llvm::SmallDenseSet<int64_t> own;
  for (const auto &dimFactors : results[i])
    own.insert(dimFactors.begin(), dimFactors.end());
  for (auto [f, factor] : llvm::enumerate(factors))
    if (factor.kind == FactorKind::Reduction && !chosen[f].empty() &&
        !own.contains(int64_t(f))) {
      llvm::append_range(partial, chosen[f]);
      reduction = factor.reduction;
    }
  return tensorSharding(ctx, results[i], chosen, partial, reduction);
}

ShardingAttr titan::dist::withoutStorageAxes(ShardingAttr stored,
                                             int64_t rank) {
  SmallVector<SmallVector<StringRef>> dims = shardingDims(stored, rank);
  for (SmallVector<StringRef> &axes : dims)
    llvm::erase_if(axes, isStorageAxis);
  return makeSharding(stored.getContext(), dims);
}

SmallVector<unsigned>
titan::dist::claimOrder(Operation *op, function_ref<bool(Value)> isParameter) {
  SmallVector<unsigned> order;
  for (OpOperand &operand : op->getOpOperands())
    if (isParameter(operand.get()))
      order.push_back(operand.getOperandNumber());
  for (OpOperand &operand : op->getOpOperands())
    if (!isParameter(operand.get()))
      order.push_back(operand.getOperandNumber());
  return order;
}
