//===- PropagateSharding.cpp - shardings through the graph by rules ------===//
//
// One forward walk: every op's results get the shardings its rule gives
// for its operands' shardings. The program is a single block in which
// every value is defined before it is used, and the plan's shardings all
// sit at the inputs (parameters, tokens) or in constraints, so one pass in
// program order reaches the fixed point Shardy's propagation iterates to.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/ShardingRule.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTPROPAGATESHARDING
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

struct DistPropagateShardingPass
    : titan::dist::impl::DistPropagateShardingBase<DistPropagateShardingPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshAttr mesh = getMesh(module);
    auto forward =
        lookupFunction(module, forwardName, "dist-propagate-sharding");
    if (!forward || !mesh) {
      if (forward)
        module.emitError() << "dist-propagate-sharding: needs a #dist.mesh "
                              "(run dist-parallelize first)";
      return signalPassFailure();
    }
    if (mesh.getWorldSize() == 1)
      return;
    seedArguments(forward);
    WalkResult walk = forward.walk([&](Operation *op) {
      if (op->getNumResults() == 0 || isa<func::FuncOp>(op))
        return WalkResult::advance();
      return WalkResult(propagate(op));
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }

  void seedArguments(func::FuncOp forward) {
    for (BlockArgument arg : forward.getArguments()) {
      auto sharding = forward.getArgAttrOfType<ShardingAttr>(
          arg.getArgNumber(), DistDialect::kShardingAttrName);
      if (!sharding)
        continue;
      if (isParameter(arg))
        sharding = withoutStorageAxes(
            sharding, cast<RankedTensorType>(arg.getType()).getRank());
      shardings[arg] = sharding;
    }
  }

  bool isParameter(Value v) const {
    auto arg = dyn_cast<BlockArgument>(v);
    auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                    : func::FuncOp();
    return func &&
           func.getArgAttr(arg.getArgNumber(), TitanDialect::kParamAttrName);
  }

  ShardingAttr shardingOf(Value v) {
    ShardingAttr s = shardings.lookup(v);
    return s ? s : replicatedSharding(&getContext());
  }

  LogicalResult propagate(Operation *op) {
    SmallVector<ShardingAttr> operands;
    for (Value v : op->getOperands())
      operands.push_back(shardingOf(v));
    SmallVector<Attribute> results;
    if (auto constraint = dyn_cast<ShardingConstraintOp>(op)) {
      results.push_back(constraint.getSharding());
    } else if (auto rule = dyn_cast<ShardingRuleOpInterface>(op)) {
      ShardingRule r = rule.getShardingRule();
      if (r.getNumOperands() != op->getNumOperands() ||
          r.getNumResults() != op->getNumResults())
        return op->emitOpError()
               << "has a sharding rule for " << r.getNumOperands()
               << " operands and " << r.getNumResults() << " results";
      FactorShardings factors = r.chooseFactorShardings(
          operands, claimOrder(op, [&](Value v) { return isParameter(v); }),
          getMesh(op));
      for (unsigned i = 0; i < op->getNumResults(); ++i)
        results.push_back(
            r.getResultSharding(&getContext(), i, factors, operands));
    } else if (llvm::all_of(operands,
                            [](ShardingAttr s) { return s.isReplicated(); })) {
      results.assign(op->getNumResults(), replicatedSharding(&getContext()));
    } else {
      return op->emitOpError() << "has sharded operands but no sharding rule "
                                  "(ShardingRuleOpInterface)";
    }
    for (auto [result, sharding] : llvm::zip(op->getResults(), results))
      shardings[result] = cast<ShardingAttr>(sharding);
    op->setAttr(DistDialect::kShardingsAttrName,
                ArrayAttr::get(&getContext(), results));
    return success();
  }

  DenseMap<Value, ShardingAttr> shardings;
};
} // namespace
