//===- Parallelize.cpp - TorchTitan's parallel plan as shardings ----------===//
//
// The plan is the one place that knows Llama: which parameters are split
// column- or row-wise, where sequence parallel wants the residual stream
// split, and which inputs carry the sequence. Everything after it follows
// from the ops' sharding rules (lib/Dialect/Dist/IR/ShardingRules.cpp).
//
//===----------------------------------------------------------------------===//

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

/// How tensor parallelism splits a parameter (TorchTitan's Llama plan).
enum class TPStyle { Colwise, Rowwise, Replicated };

/// The plan entry for a parameter, matched on the end of its name as
/// TorchTitan's `parallelize_module` plan matches module names; nullopt for
/// a parameter the plan does not know.
std::optional<TPStyle> tensorParallelStyle(StringRef name) {
  name.consume_back(".weight");
  StringRef leaf = name.substr(name.rfind('.') + 1); // npos + 1 == 0
  // The embedding is split by vocabulary (rows), as a column-wise linear.
  if (llvm::is_contained({"wq", "wk", "wv", "w1", "w3", "output"}, leaf) ||
      name == "tok_embeddings")
    return TPStyle::Colwise;
  if (llvm::is_contained({"wo", "w2"}, leaf))
    return TPStyle::Rowwise;
  // Norm weights are replicated; sequence parallel shards their inputs.
  if (leaf.ends_with("norm"))
    return TPStyle::Replicated;
  return std::nullopt;
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
        failed(constrainSequenceParallel(forward)))
      return signalPassFailure();
    if (tp > 1 && lossParallel)
      forward.walk([](CrossEntropyOp op) { writeLossParallel(op); });
  }

  /// FSDP (and context parallel's dp_shard_cp) stores dimension 0 of the
  /// tensor-parallel shard split over these axes.
  SmallVector<StringRef> storageAxes() const {
    SmallVector<StringRef> axes;
    if (dpShard > 1)
      axes.push_back("dp_shard");
    if (cp > 1)
      axes.push_back("cp");
    return axes;
  }

  LogicalResult shardParameters(func::FuncOp forward) {
    for (const ParameterArgument &p : getParameterArguments(forward)) {
      SmallVector<SmallVector<StringRef>> dims(p.type.getRank());
      if (tp > 1) {
        std::optional<TPStyle> style = tensorParallelStyle(p.name.getValue());
        if (!style)
          return forward.emitOpError()
                 << "parameter '" << p.name.getValue()
                 << "' has no tensor-parallel plan (known: wq, wk, wv, wo, "
                    "w1, w2, w3, output, tok_embeddings and *norm weights)";
        if (*style == TPStyle::Rowwise && p.type.getRank() != 2)
          return forward.emitOpError() << "row-wise parameter '"
                                       << p.name.getValue() << "' must be 2-D";
        if (*style != TPStyle::Replicated)
          dims[*style == TPStyle::Rowwise ? 1 : 0].push_back("tp");
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

  /// Context parallel splits the token and label inputs' sequence (their
  /// last dimension) load-balanced over cp.
  LogicalResult shardInputs(func::FuncOp forward) {
    if (cp == 1)
      return success();
    for (BlockArgument arg : forward.getArguments()) {
      if (!forward.getArgAttr(arg.getArgNumber(), TitanDialect::kInputAttrName))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      SmallVector<SmallVector<StringRef>> dims(type.getRank());
      dims.back().push_back("cp");
      if (type.getShape().back() % (2 * cp) != 0)
        return forward.emitOpError()
               << "context parallel cuts the sequence ("
               << type.getShape().back() << " tokens) into 2 x cp = " << 2 * cp
               << " load-balanced chunks, which does not divide it "
                  "(training.seq_len, parallelism.context_parallel_degree)";
      forward.setArgAttr(arg.getArgNumber(), DistDialect::kShardingAttrName,
                         makeSharding(&getContext(), dims));
    }
    return success();
  }

  /// Sequence parallel: the embedding's and the row-wise linears' results
  /// (the residual stream) are split along the sequence over cp, then tp.
  LogicalResult constrainSequenceParallel(func::FuncOp forward) {
    if (tp == 1)
      return success();
    SmallVector<Operation *> producers;
    forward.walk([&](Operation *op) {
      if (isa<EmbeddingOp>(op) || isRowwiseLinear(op))
        producers.push_back(op);
    });
    for (Operation *op : producers) {
      Value v = op->getResult(0);
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<SmallVector<StringRef>> dims(type.getRank());
      if (cp > 1)
        dims[1].push_back("cp");
      dims[1].push_back("tp");
      if (type.getRank() < 3 || type.getDimSize(1) % (2 * cp * tp) != 0)
        return op->emitOpError()
               << "sequence parallel splits dimension 1 of " << type << " over "
               << (cp > 1 ? "2 x cp x tp = " : "tp = ")
               << (cp > 1 ? 2 * cp * tp : int64_t(tp))
               << " ranks, which does not divide it";
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      auto constraint = ShardingConstraintOp::create(
          b, op->getLoc(), v.getType(), v, makeSharding(&getContext(), dims));
      v.replaceAllUsesExcept(constraint, constraint);
    }
    return success();
  }

  static bool isRowwiseLinear(Operation *op) {
    if (!isa<LinearOp, Float8LinearOp>(op))
      return false;
    auto arg = dyn_cast<BlockArgument>(op->getOperand(1));
    auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                    : func::FuncOp();
    auto name = func ? func.getArgAttrOfType<StringAttr>(
                           arg.getArgNumber(), TitanDialect::kParamAttrName)
                     : StringAttr();
    return name && tensorParallelStyle(name.getValue()) == TPStyle::Rowwise;
  }

  /// Loss parallel: the cross-entropy as the per-row statistics whose rules
  /// contract a vocabulary-sharded logits tensor (max, sum of exp, target
  /// logit), combined once they are whole.
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
