//===- Partition.cpp - the per-rank program -------------------------------===//
//
// Data parallelism changes no op of the model: each rank runs the forward on
// its own rows. What changes is where parameters live (FSDP shards) and how
// the ranks agree (the loss mean, and, through autodiff, the gradient
// reductions). This pass makes both explicit, then hands the model's ops to
// the sharding partitioner (ShardingPartitioner.cpp), which applies the
// shardings dist-propagate-sharding gave them.
//
//===----------------------------------------------------------------------===//

#include "ShardingPartitioner.h"

#include "titan/Contract/MeshAxes.h"
#include "titan/Dialect/Dist/IR/DistPlan.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTPARTITION
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// The mesh axes with more than one rank among those `pred` selects from
/// the table (MeshAxes.h).
template <typename Pred>
SmallVector<StringRef> activeAxes(MeshAttr mesh, Pred pred) {
  SmallVector<StringRef> axes;
  for (const mesh::AxisInfo &info : mesh::kAxes)
    if (pred(info) && mesh.getSize(info.axis) > 1)
      axes.push_back(info.name);
  return axes;
}

/// Whether FSDP keeps a parameter of transformer block `block` (the root
/// module's without one) gathered from forward to backward, as TorchTitan
/// wraps a model with FSDP2: each block is resharded after forward unless
/// the policy is "never" or ("default") it is the last block, whose
/// backward starts right away; the root module is never resharded (FSDP2's
/// root heuristic: its parameters would be gathered again immediately).
bool keepGathered(StringRef policy, std::optional<int64_t> block,
                  int64_t lastBlock) {
  if (policy == "never" || !block)
    return true;
  return policy == "default" && *block == lastBlock;
}

/// The parameters' transformer blocks from their #dist.param_plan
/// (DistPlan.h), which this pass consumes: the attributes are removed.
/// Failure after an error on `forward`.
FailureOr<DenseMap<unsigned, int64_t>> takeBlocks(func::FuncOp forward) {
  DenseMap<unsigned, int64_t> blocks;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
    Attribute attr = forward.removeArgAttr(i, kParamPlanAttrName);
    if (!attr)
      continue;
    auto plan = dyn_cast<ParamPlanAttr>(attr);
    if (!plan || (plan.getBlock() && *plan.getBlock() < 0))
      return forward.emitOpError()
             << "argument " << i << " has a malformed '" << kParamPlanAttrName
             << "': " << attr << " is not a #dist.param_plan with a block >= 0";
    if (plan.getBlock())
      blocks[i] = *plan.getBlock();
  }
  return blocks;
}

struct DistPartitionPass
    : titan::dist::impl::DistPartitionBase<DistPartitionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
    MeshAttr mesh = getMesh(module);
    if (!forward || !mesh) {
      module.emitError() << "dist-partition: needs a function '" << forwardName
                         << "' and a #dist.mesh (run dist-parallelize first)";
      return signalPassFailure();
    }
    if (!llvm::is_contained({"default", "always", "never"},
                            StringRef(reshardAfterForward))) {
      module.emitError() << "dist-partition: reshard-after-forward must be "
                            "default, always or never, got '"
                         << reshardAfterForward << "'";
      return signalPassFailure();
    }
    std::optional<RotateMethod> rotate = symbolizeRotateMethod(rotateMethod);
    if (!rotate) {
      module.emitError() << "dist-partition: cp-rotate-method must be "
                            "allgather or alltoall, got '"
                         << rotateMethod << "'";
      return signalPassFailure();
    }
    FailureOr<DenseMap<unsigned, int64_t>> blocks = takeBlocks(forward);
    if (failed(blocks))
      return signalPassFailure();
    if (mesh.getWorldSize() == 1)
      return;
    forward->setAttr(DistDialect::kPartitionedAttrName,
                     UnitAttr::get(&getContext()));
    ShardingPartitioner partitioner(forward, mesh, *rotate);
    if (failed(partitionArguments(forward, mesh, *blocks, partitioner)) ||
        failed(partitioner.run()) ||
        failed(completeResults(forward, mesh, partitioner)))
      return signalPassFailure();
  }

  /// Gives sharded arguments their per-rank types; parameters are gathered
  /// over their storage axes before first use (FSDP) and replicated over
  /// the axes their gradients are summed on.
  LogicalResult partitionArguments(func::FuncOp forward, MeshAttr mesh,
                                   const DenseMap<unsigned, int64_t> &blocks,
                                   ShardingPartitioner &partitioner) {
    // Axes on which a parameter not sharded over them is replicated and
    // gets its gradient summed: all but the pipeline's.
    SmallVector<StringRef> syncAxes =
        activeAxes(mesh, [](const mesh::AxisInfo &a) { return !a.pipeline; });
    int64_t lastBlock = -1;
    for (auto [arg, block] : blocks)
      lastBlock = std::max(lastBlock, block);
    OpBuilder b(&getContext());
    Block &body = forward.getBody().front();
    for (BlockArgument arg : body.getArguments()) {
      auto sharding = forward.getArgAttrOfType<ShardingAttr>(
          arg.getArgNumber(), DistDialect::kShardingAttrName);
      auto type = cast<RankedTensorType>(arg.getType());
      if (sharding) {
        FailureOr<SmallVector<int64_t>> local =
            sharding.getLocalShape(type.getShape(), mesh);
        arg.setType(RankedTensorType::get(*local, type.getElementType()));
      }
      auto name = forward.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), TitanDialect::kParamAttrName);
      if (!name) {
        if (sharding)
          partitioner.setSharding(arg, sharding, /*parameter=*/false);
        continue;
      }
      auto block = blocks.find(arg.getArgNumber());
      Value full = partitionParameter(
          forward, arg, name, type, sharding, syncAxes,
          keepGathered(reshardAfterForward,
                       block == blocks.end() ? std::nullopt
                                             : std::optional(block->second),
                       lastBlock),
          mesh);
      partitioner.setSharding(full,
                              sharding
                                  ? withoutStorageAxes(sharding, type.getRank())
                                  : replicatedSharding(&getContext()),
                              /*parameter=*/true);
    }
    forward.setFunctionType(
        b.getFunctionType(body.getArgumentTypes(), forward.getResultTypes()));
    return success();
  }

  /// The parameter as the model's ops use it: replicated over `syncAxes` it
  /// is not split over, then gathered over its storage axes (and marked to
  /// stay gathered for the backward when `keep`).
  Value partitionParameter(func::FuncOp forward, BlockArgument arg,
                           StringAttr name, RankedTensorType global,
                           ShardingAttr sharding, ArrayRef<StringRef> syncAxes,
                           bool keep, MeshAttr mesh) {
    OpBuilder b(&getContext());
    Block &body = forward.getBody().front();
    Location loc = NameLoc::get(name);
    // Gather just before the first use, so that a parameter is materialized
    // (and, after its last use, freed) layer by layer.
    Operation *firstUse = nullptr;
    for (Operation *user : arg.getUsers())
      if (!firstUse || user->isBeforeInBlock(firstUse))
        firstUse = user;
    if (firstUse)
      b.setInsertionPoint(firstUse);
    else
      b.setInsertionPointToStart(&body);
    // Replicate the shard first, so that the gradient is reduce-scattered
    // before it is all-reduced across replicas (1/dp_shard of the bytes).
    SmallVector<StringRef> shardedAxes;
    if (sharding)
      for (unsigned d = 0; d < sharding.getDims().size(); ++d)
        llvm::append_range(shardedAxes, sharding.getAxes(d));
    SmallVector<StringRef> replicatedAxes;
    for (StringRef axis : syncAxes)
      if (!llvm::is_contained(shardedAxes, axis))
        replicatedAxes.push_back(axis);
    Value full = arg;
    Operation *entry = nullptr; // the op that consumes `arg` itself
    if (!replicatedAxes.empty()) {
      entry = ReplicateOp::create(b, loc, arg.getType(), arg,
                                  b.getStrArrayAttr(replicatedAxes));
      full = entry->getResult(0);
    }
    bool gathered = false;
    for (unsigned d = 0; sharding && d < sharding.getDims().size(); ++d) {
      // FSDP gathers the storage axes; tensor-parallel shards stay. The
      // gathered size drops FSDP's padding: the global size over the axes
      // that stay split.
      SmallVector<StringRef> axes;
      SmallVector<int64_t> shape(
          cast<RankedTensorType>(full.getType()).getShape());
      shape[d] = global.getDimSize(d);
      for (StringRef axis : sharding.getAxes(d)) {
        if (isStorageAxis(axis))
          axes.push_back(axis);
        else
          shape[d] /= *mesh.getAxisSize(axis);
      }
      if (axes.empty())
        continue;
      auto future = AllGatherStartOp::create(
          b, loc,
          FutureType::get(&getContext(), RankedTensorType::get(
                                             shape, global.getElementType())),
          full, b.getStrArrayAttr(axes), b.getI64IntegerAttr(d));
      if (!entry)
        entry = future;
      full = WaitOp::create(b, loc, future);
      gathered = true;
    }
    if (gathered && keep)
      forward.setArgAttr(arg.getArgNumber(), DistDialect::kKeepGatheredAttrName,
                         b.getUnitAttr());
    if (entry)
      arg.replaceAllUsesExcept(full, entry);
    return full;
  }

  /// The loss, a mean over the global batch, is averaged over the
  /// data-parallel axes (every rank has the same number of tokens) and the
  /// axes it is still a partial mean over (context parallel); other
  /// results are made whole.
  LogicalResult completeResults(func::FuncOp forward, MeshAttr mesh,
                                ShardingPartitioner &partitioner) {
    auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    OpBuilder &b = partitioner.getBuilder();
    b.setInsertionPoint(ret);
    for (OpOperand &operand : llvm::drop_begin(ret->getOpOperands())) {
      FailureOr<Value> whole = partitioner.reshard(
          operand.get(), replicatedSharding(&getContext()), ret);
      if (failed(whole))
        return failure();
      operand.set(*whole);
    }
    Value loss = ret.getOperand(0);
    ShardingAttr sharding = partitioner.getSharding(loss);
    if (!sharding.isReplicated() &&
        (sharding.getReductionKind() != ReductionKind::Avg ||
         !sharding.getDims().empty()))
      return ret.emitOpError() << "returns a loss sharded as " << sharding
                               << "; it must be a mean";
    SmallVector<StringRef> axes;
    for (const mesh::AxisInfo &info : mesh::kAxes)
      if ((info.batch && mesh.getSize(info.axis) > 1) ||
          llvm::is_contained(sharding.getPartialAxes(), info.name))
        axes.push_back(info.name);
    if (axes.empty())
      return success();
    // Located where the loss is computed (a pipeline stage cut puts it
    // there too).
    Location loc =
        loss.getDefiningOp() ? loss.getDefiningOp()->getLoc() : ret.getLoc();
    auto future = AllReduceStartOp::create(
        b, loc,
        FutureType::get(&getContext(), cast<RankedTensorType>(loss.getType())),
        loss, b.getStrArrayAttr(axes), ReductionKind::Avg);
    ret.setOperand(0, WaitOp::create(b, loc, future));
    return success();
  }
};

} // namespace
