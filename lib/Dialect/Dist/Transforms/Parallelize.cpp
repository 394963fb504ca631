//===- Parallelize.cpp - a model's parallel plan as shardings -------------===//
//
// The model plan (DistPlan.h; the Llama importer attaches TorchTitan's)
// says which dimension of each parameter tensor parallelism splits, which
// results sequence parallel splits along the sequence, which inputs carry
// the sequence and which cross-entropies may read vocabulary-sharded
// logits. This pass turns that plan into shardings for the mesh's degrees;
// everything after it follows from the ops' sharding rules
// (lib/Dialect/Dist/IR/ShardingRules.cpp).
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/MeshAxes.h"
#include "titan/Dialect/Dist/IR/DistPlan.h"
#include "titan/Dialect/Dist/IR/ShardingRule.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTPARALLELIZE
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

const StringRef kDPShard = mesh::axisName(mesh::kDPShard);
const StringRef kCP = mesh::axisName(mesh::kCP);
const StringRef kTP = mesh::axisName(mesh::kTP);

/// The dimension a tensor-parallel style splits, or nullopt for none.
std::optional<unsigned> splitDimension(TensorParallelStyle style) {
  switch (style) {
  case TensorParallelStyle::Colwise:
  case TensorParallelStyle::Embedding:
    return 0;
  case TensorParallelStyle::Rowwise:
    return 1;
  case TensorParallelStyle::Replicate:
    return std::nullopt;
  }
  llvm_unreachable("unknown tensor-parallel style");
}

/// The dimension of `type` a marker of the plan names, or an error on `op`.
FailureOr<int64_t> planDimension(Operation *op, Attribute marker,
                                 StringRef name, Type type) {
  auto dim = dyn_cast<IntegerAttr>(marker);
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!dim || !tensor || dim.getInt() < 0 || dim.getInt() >= tensor.getRank())
    return op->emitOpError() << "has a malformed '" << name << "': " << marker
                             << " is not a dimension of " << type;
  return dim.getInt();
}

struct DistParallelizePass
    : titan::dist::impl::DistParallelizeBase<DistParallelizePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = lookupFunction(module, forwardName, "dist-parallelize");
    if (!forward)
      return signalPassFailure();
    MLIRContext *ctx = &getContext();
    mesh = MeshAttr::getChecked([&] { return module.emitError(); }, ctx,
                                int64_t(pp), int64_t(dpReplicate),
                                int64_t(dpShard), int64_t(cp), int64_t(tp));
    if (!mesh)
      return signalPassFailure();
    module->setAttr(DistDialect::kMeshAttrName, mesh);
    if (failed(shardParameters(forward)) || failed(shardInputs(forward)) ||
        failed(constrainSequenceParallel(forward)) ||
        failed(parallelizeLoss(forward)))
      return signalPassFailure();
  }

  /// FSDP (and context parallel's dp_shard_cp) stores dimension 0 of the
  /// tensor-parallel shard split over these axes.
  SmallVector<StringRef> storageAxes() const {
    SmallVector<StringRef> axes;
    if (dpShard > 1)
      axes.push_back(kDPShard);
    if (cp > 1)
      axes.push_back(kCP);
    return axes;
  }

  /// The plan of parameter `p`: null without one (no tensor-parallel
  /// style, the root block: dist-partition reads the blocks), failure
  /// after an error on a malformed one.
  FailureOr<ParamPlanAttr> getPlan(func::FuncOp forward,
                                   const ParameterArgument &p) {
    Attribute attr = forward.getArgAttr(p.index, kParamPlanAttrName);
    if (!attr)
      return ParamPlanAttr();
    auto plan = dyn_cast<ParamPlanAttr>(attr);
    if (!plan)
      return forward.emitOpError()
             << "parameter '" << p.name.getValue() << "' has a malformed '"
             << kParamPlanAttrName << "': " << attr
             << " is not a #dist.param_plan";
    return plan;
  }

  /// The error for parameter `p` that has no plan under tensor parallel.
  LogicalResult missingPlan(func::FuncOp forward, const ParameterArgument &p) {
    InFlightDiagnostic diag = forward.emitOpError();
    if (llvm::none_of(getParameterArguments(forward),
                      [&](const ParameterArgument &q) {
                        return forward.getArgAttr(q.index, kParamPlanAttrName);
                      }))
      diag << "has no parallel plan: no parameter carries '"
           << kParamPlanAttrName << "'";
    else
      diag << "parameter '" << p.name.getValue() << "' has no '"
           << kParamPlanAttrName << "'";
    diag << " (tensor parallel, tp = " << int64_t(tp)
         << ", needs the model's plan: the Llama importer attaches "
            "TorchTitan's, titan-llama-plan attaches it to hand-written IR)";
    return diag;
  }

  LogicalResult shardParameters(func::FuncOp forward) {
    for (const ParameterArgument &p : getParameterArguments(forward)) {
      FailureOr<ParamPlanAttr> plan = getPlan(forward, p);
      if (failed(plan))
        return failure();
      SmallVector<SmallVector<StringRef>> dims(p.type.getRank());
      if (tp > 1) {
        if (!*plan)
          return missingPlan(forward, p);
        std::optional<TensorParallelStyle> style = plan->getTp();
        if (!style)
          return forward.emitOpError()
                 << "parameter '" << p.name.getValue()
                 << "' has no tensor-parallel style in its plan (" << *plan
                 << ")";
        if (*style == TensorParallelStyle::Rowwise && p.type.getRank() != 2)
          return forward.emitOpError() << "row-wise parameter '"
                                       << p.name.getValue() << "' must be 2-D";
        std::optional<unsigned> dim = splitDimension(*style);
        if (dim && *dim >= dims.size())
          return forward.emitOpError()
                 << "parameter '" << p.name.getValue() << "' of type " << p.type
                 << " has no dimension " << *dim << " to split (" << *plan
                 << ")";
        if (dim)
          dims[*dim].push_back(kTP);
      }
      llvm::append_range(dims[0], storageAxes());
      ShardingAttr sharding = makeSharding(&getContext(), dims);
      if (sharding.isReplicated())
        continue;
      std::string reason;
      if (failed(sharding.getLocalShape(p.type.getShape(), mesh, &reason)))
        return forward.emitOpError()
               << "parameter '" << p.name.getValue()
               << "' cannot be sharded as " << sharding << ": " << reason;
      forward.setArgAttr(p.index, DistDialect::kShardingAttrName, sharding);
    }
    return success();
  }

  /// Context parallel splits the inputs the plan marks along their
  /// sequence, load-balanced over cp as the mesh says.
  LogicalResult shardInputs(func::FuncOp forward) {
    for (BlockArgument arg : forward.getArguments()) {
      unsigned i = arg.getArgNumber();
      Attribute marker = forward.removeArgAttr(i, kContextParallelAttrName);
      if (!marker)
        continue;
      FailureOr<int64_t> dim = planDimension(
          forward, marker, kContextParallelAttrName, arg.getType());
      if (failed(dim))
        return failure();
      if (cp == 1)
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      SmallVector<SmallVector<StringRef>> dims(*dim + 1);
      dims[*dim].push_back(kCP);
      mesh::SplitLayout layout = mesh.getSplitLayout({kCP});
      if (!layout.divides(type.getDimSize(*dim)))
        return forward.emitOpError()
               << "context parallel cuts the sequence ("
               << type.getDimSize(*dim) << " tokens) into "
               << (layout.loadBalanced ? "2 x cp = " : "cp = ")
               << layout.numChunks()
               << (layout.loadBalanced ? " load-balanced" : "")
               << " chunks, which does not divide it "
                  "(training.seq_len, parallelism.context_parallel_degree)";
      forward.setArgAttr(i, DistDialect::kShardingAttrName,
                         makeSharding(&getContext(), dims));
    }
    return success();
  }

  /// Sequence parallel: the results the plan marks (the residual stream)
  /// are split along the sequence over cp, then tp.
  LogicalResult constrainSequenceParallel(func::FuncOp forward) {
    SmallVector<std::pair<Operation *, int64_t>> producers;
    WalkResult walk = forward.walk([&](Operation *op) {
      Attribute marker = op->removeAttr(kSequenceParallelAttrName);
      if (!marker)
        return WalkResult::advance();
      if (op->getNumResults() != 1) {
        op->emitOpError() << "has '" << kSequenceParallelAttrName
                          << "' but not one result";
        return WalkResult::interrupt();
      }
      FailureOr<int64_t> dim = planDimension(
          op, marker, kSequenceParallelAttrName, op->getResult(0).getType());
      if (failed(dim))
        return WalkResult::interrupt();
      producers.push_back({op, *dim});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (tp == 1)
      return success();
    SmallVector<StringRef> axes;
    if (cp > 1)
      axes.push_back(kCP);
    axes.push_back(kTP);
    mesh::SplitLayout layout = mesh.getSplitLayout(axes);
    for (auto [op, dim] : producers) {
      Value v = op->getResult(0);
      auto type = cast<RankedTensorType>(v.getType());
      if (!layout.divides(type.getDimSize(dim)))
        return op->emitOpError()
               << "sequence parallel splits dimension " << dim << " of " << type
               << " over "
               << (layout.loadBalanced ? "2 x cp x tp = "
                                       : (cp > 1 ? "cp x tp = " : "tp = "))
               << layout.numChunks() << " ranks, which does not divide it";
      SmallVector<SmallVector<StringRef>> dims(dim + 1);
      dims[dim] = axes;
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      auto constraint = ShardingConstraintOp::create(
          b, op->getLoc(), v.getType(), v, makeSharding(&getContext(), dims));
      v.replaceAllUsesExcept(constraint, constraint);
    }
    return success();
  }

  /// Loss parallel: each cross-entropy the plan marks, as the per-row
  /// statistics whose rules contract a vocabulary-sharded logits tensor
  /// (max, sum of exp, target logit), combined once they are whole.
  LogicalResult parallelizeLoss(func::FuncOp forward) {
    SmallVector<CrossEntropyOp> losses;
    WalkResult walk = forward.walk([&](Operation *op) {
      Attribute marker = op->removeAttr(kLossParallelAttrName);
      if (!marker)
        return WalkResult::advance();
      auto loss = dyn_cast<CrossEntropyOp>(op);
      if (!loss || !isa<UnitAttr>(marker)) {
        op->emitOpError() << "has a malformed '" << kLossParallelAttrName
                          << "': a unit attribute of a titan.cross_entropy";
        return WalkResult::interrupt();
      }
      losses.push_back(loss);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (tp > 1 && lossParallel)
      for (CrossEntropyOp loss : losses)
        writeLossParallel(loss);
    return success();
  }

  static void writeLossParallel(CrossEntropyOp c) {
    OpBuilder b(c);
    Location loc = c.getLoc();
    Value logits = c.getLogits();
    auto t = cast<RankedTensorType>(logits.getType());
    auto rows =
        RankedTensorType::get(t.getShape().drop_back(), t.getElementType());
    Value max = RowMaxOp::create(b, loc, rows, logits);
    Value sumExp = SumExpOp::create(b, loc, rows, logits, max);
    Value target =
        TargetLogitOp::create(b, loc, rows, logits, c.getLabels(), Value());
    // The forward alone reads the loss: no backward reads the lse yet.
    c.getResult().replaceAllUsesWith(
        CrossEntropyFromStatsOp::create(b, loc, c.getResult().getType(), max,
                                        sumExp, target)
            .getResult());
    c.erase();
  }

  MeshAttr mesh;
};
} // namespace
