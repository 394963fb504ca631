//===- Recompute.cpp - recompute regions in the backward ------------------===//
//
// A region's activations are copied into the backward where its gradients
// start, so the forward's copies die with the forward and the backward's
// live only while the region's gradients are built. The copies run the same
// kernels on the same values as the forward did: the step's numbers do not
// change.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/Transforms/Recompute.h"

#include "titan/Dialect/Titan/IR/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace titan;

static std::optional<int64_t> regionOf(Operation *op) {
  if (auto region = op->getAttrOfType<IntegerAttr>(
          TitanDialect::kRecomputeRegionAttrName))
    return region.getInt();
  return std::nullopt;
}

RegionRecompute::RegionRecompute(func::FuncOp step,
                                 ArrayRef<Operation *> forwardOps)
    : forwardSet(forwardOps.begin(), forwardOps.end()) {
  // Values that depend on the step's inputs (tokens, a stage's input
  // activations), not on weights alone: weights, their gathers and casts
  // are the backward's business (AdjointContext::forwardValue), not the
  // region's.
  for (BlockArgument arg : step.getArguments())
    if (!step.getArgAttr(arg.getArgNumber(), TitanDialect::kParamAttrName))
      activations.insert(arg);
  for (Operation *op : forwardOps) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return activations.contains(v); }))
      continue;
    for (Value r : op->getResults())
      activations.insert(r);
    std::optional<int64_t> region = regionOf(op);
    if (!region || op->hasAttr(TitanDialect::kSaveAttrName))
      continue;
    // A region's outputs (read by ops outside it, or returned) are kept.
    bool output = llvm::any_of(op->getUsers(), [&](Operation *user) {
      return regionOf(user) != region;
    });
    if (!output)
      recomputed[*region].push_back(op);
  }
}

void RegionRecompute::beforeAdjoint(Operation *op, OpBuilder &b,
                                    AdjointContext &ctx) {
  std::optional<int64_t> region = regionOf(op);
  if (!region || !forwardSet.contains(op))
    return;
  auto it = recomputed.find(*region);
  if (it == recomputed.end() || copies.count(*region))
    return;
  IRMapping &map = copies[*region];
  for (Operation *original : it->second) {
    for (Value operand : original->getOperands())
      if (!map.contains(operand) && !activations.contains(operand))
        map.map(operand, ctx.forwardValue(operand));
    Operation *copy = b.clone(*original, map);
    copy->removeAttr(TitanDialect::kRecomputeRegionAttrName);
    copy->setAttr(TitanDialect::kRecomputedAttrName, b.getUnitAttr());
    copyOps.push_back(copy);
  }
}

void RegionRecompute::redirectBackward() {
  for (auto &[region, ops] : recomputed) {
    auto it = copies.find(region);
    if (it == copies.end())
      continue;
    for (Operation *original : ops)
      for (Value v : original->getResults())
        v.replaceUsesWithIf(it->second.lookup(v), [&](OpOperand &use) {
          return !forwardSet.contains(use.getOwner());
        });
  }
  for (Operation *copy : llvm::reverse(copyOps))
    if (copy->use_empty())
      copy->erase();
}
