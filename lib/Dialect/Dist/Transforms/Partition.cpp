//===- Partition.cpp - the per-rank program -------------------------------===//
//
// Data parallelism changes no op of the model: each rank runs the forward on
// its own rows. What changes is where parameters live (FSDP shards) and how
// the ranks agree (the loss mean, and, through autodiff, the gradient
// reductions). This pass makes both explicit, then hands the model's ops to
// the tensor-parallel rewriter (TensorParallel.cpp) when the mesh has a tp
// axis.
//
//===----------------------------------------------------------------------===//

#include "TensorParallel.h"

#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/Parameters.h"

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

/// The mesh axes with more than one rank among `candidates`.
SmallVector<StringRef> activeAxes(MeshAttr mesh,
                                  ArrayRef<StringRef> candidates) {
  SmallVector<StringRef> axes;
  for (StringRef axis : candidates)
    if (*mesh.getAxisSize(axis) > 1)
      axes.push_back(axis);
  return axes;
}

bool isDataParallelAxis(StringRef axis) {
  return axis == "dp_replicate" || axis == "dp_shard";
}

/// The transformer block of a parameter ("layers.3.attention.wq.weight" ->
/// 3), or nullopt for the root's (embedding, final norm, output).
std::optional<int64_t> blockIndex(StringRef name) {
  int64_t index;
  if (!name.consume_front("layers.") ||
      name.take_until([](char c) { return c == '.'; }).getAsInteger(10, index))
    return std::nullopt;
  return index;
}

/// Whether FSDP keeps a parameter gathered from forward to backward, as
/// TorchTitan wraps Llama with FSDP2: each block is resharded after forward
/// unless the policy is "never" or ("default") it is the last block, whose
/// backward starts right away; the root module is never resharded (FSDP2's
/// root heuristic: its parameters would be gathered again immediately).
bool keepGathered(StringRef policy, StringRef name, int64_t lastBlock) {
  std::optional<int64_t> block = blockIndex(name);
  if (policy == "never" || !block)
    return true;
  return policy == "default" && *block == lastBlock;
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
    SmallVector<StringRef> dpAxes =
        activeAxes(mesh, {"dp_replicate", "dp_shard"});
    // Axes on which a parameter not sharded over them is replicated and
    // gets its gradient summed.
    SmallVector<StringRef> syncAxes =
        activeAxes(mesh, {"dp_replicate", "dp_shard", "tp"});
    if (!llvm::is_contained({"default", "always", "never"},
                            StringRef(reshardAfterForward))) {
      module.emitError() << "dist-partition: reshard-after-forward must be "
                            "default, always or never, got '"
                         << reshardAfterForward << "'";
      return signalPassFailure();
    }
    if (syncAxes.empty())
      return;
    int64_t lastBlock = -1;
    for (const ParameterArgument &p : getParameterArguments(forward))
      lastBlock =
          std::max(lastBlock, blockIndex(p.name.getValue()).value_or(-1));
    forward->setAttr(DistDialect::kPartitionedAttrName,
                     UnitAttr::get(&getContext()));
    OpBuilder b(&getContext());
    Block &body = forward.getBody().front();
    SmallVector<Type> argTypes(forward.getArgumentTypes());
    DenseMap<Value, int64_t> tpShardDims;

    for (const ParameterArgument &p : getParameterArguments(forward)) {
      BlockArgument arg = body.getArgument(p.index);
      Location loc = NameLoc::get(p.name);
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
      auto sharding = forward.getArgAttrOfType<ShardingAttr>(
          p.index, DistDialect::kShardingAttrName);
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
      if (sharding) {
        FailureOr<SmallVector<int64_t>> local =
            sharding.getLocalShape(p.type.getShape(), mesh);
        auto localType = RankedTensorType::get(*local, p.type.getElementType());
        arg.setType(localType);
        argTypes[p.index] = localType;
        full.setType(localType);
        // FSDP gathers the data-parallel shards; tensor-parallel shards stay.
        std::optional<int64_t> tpDim;
        bool gathered = false;
        for (unsigned d = 0; d < sharding.getDims().size(); ++d) {
          // The gathered size drops FSDP's padding: the global size over
          // the axes that stay split (tp).
          SmallVector<StringRef> axes;
          SmallVector<int64_t> shape(
              cast<RankedTensorType>(full.getType()).getShape());
          shape[d] = p.type.getDimSize(d);
          for (StringRef axis : sharding.getAxes(d)) {
            if (isDataParallelAxis(axis)) {
              axes.push_back(axis);
              continue;
            }
            shape[d] /= *mesh.getAxisSize(axis);
            if (axis == "tp")
              tpDim = d;
          }
          if (axes.empty())
            continue;
          auto future = AllGatherStartOp::create(
              b, loc,
              FutureType::get(
                  &getContext(),
                  RankedTensorType::get(shape, p.type.getElementType())),
              full, b.getStrArrayAttr(axes), b.getI64IntegerAttr(d));
          if (!entry)
            entry = future;
          full = WaitOp::create(b, loc, future);
          gathered = true;
        }
        if (gathered &&
            keepGathered(reshardAfterForward, p.name.getValue(), lastBlock))
          forward.setArgAttr(p.index, DistDialect::kKeepGatheredAttrName,
                             b.getUnitAttr());
        if (tpDim)
          tpShardDims[full] = *tpDim;
      }
      if (entry)
        arg.replaceAllUsesExcept(full, entry);
    }
    forward.setFunctionType(
        b.getFunctionType(argTypes, forward.getResultTypes()));

    if (mesh.getTp() > 1 && failed(partitionTensorParallel(
                                forward, mesh, tpShardDims, lossParallel)))
      return signalPassFailure();

    // The loss is the mean over the global batch: average the ranks' means
    // (every rank has the same number of tokens).
    if (dpAxes.empty())
      return;
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    b.setInsertionPoint(ret);
    Value loss = ret.getOperand(0);
    Location loc = NameLoc::get(b.getStringAttr("loss"));
    auto future = AllReduceStartOp::create(
        b, loc,
        FutureType::get(&getContext(), cast<RankedTensorType>(loss.getType())),
        loss, b.getStrArrayAttr(dpAxes), ReductionKind::Avg);
    ret.setOperand(0, WaitOp::create(b, loc, future));
  }
};

} // namespace
