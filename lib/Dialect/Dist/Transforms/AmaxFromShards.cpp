//===- AmaxFromShards.cpp - a gathered tensor's amax from its shards ------===//
//
// Float8's dynamic scale of an FSDP weight is the amax of the gathered
// weight. A maximum is exact and the gather only moves elements, so each
// rank can reduce its shard and the ranks combine the partial amaxes: a
// few bytes on the wire instead of every rank reading the whole weight
// (torchao's amax of a sharded DTensor does the same).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTAMAXFROMSHARDS
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// The all-gather whose result `amax` reads, if any, started in its block
/// (the collective replacing it is waited for where the amax was, and a
/// start and its wait share a block).
AllGatherStartOp gatherOf(titan::AmaxOp amax) {
  auto wait = amax.getInput().getDefiningOp<WaitOp>();
  auto gather =
      wait ? wait.getFuture().getDefiningOp<AllGatherStartOp>() : nullptr;
  return gather && gather->getBlock() == amax->getBlock() ? gather : nullptr;
}

/// Whether `amax` reduces over the dimension the gather concatenates (or
/// over every element): then the gathered amax is the ranks' maximum,
/// else the ranks' amaxes concatenated.
bool reducesGatherDim(titan::AmaxOp amax, int64_t dim) {
  std::optional<ArrayRef<int64_t>> dims = amax.getDims();
  return !dims || llvm::is_contained(*dims, dim);
}

/// The single all-reduce-max reading `amax`, if that is its only user (a
/// tensor-parallel weight's amax): the gather's axes join it.
AllReduceStartOp maxReduceOf(titan::AmaxOp amax) {
  if (!amax->hasOneUse())
    return nullptr;
  auto reduce = dyn_cast<AllReduceStartOp>(*amax->getUsers().begin());
  return reduce && reduce.getReduction() == ReductionKind::Max ? reduce
                                                               : nullptr;
}

ArrayAttr joinAxes(Builder &b, ArrayAttr first, ArrayAttr second) {
  SmallVector<Attribute> axes(first.begin(), first.end());
  for (Attribute a : second)
    if (!llvm::is_contained(axes, a))
      axes.push_back(a);
  return b.getArrayAttr(axes);
}

/// amax(gather(x)) -> max over ranks of amax(x), or gather(amax(x)) when
/// the gathered dimension is kept. The shard's amax is placed at the
/// gather, where x is ready; the collective's wait at the amax.
void reduceShards(OpBuilder &b, titan::AmaxOp amax, AllGatherStartOp gather) {
  Location loc = amax.getLoc();
  Value shard = gather.getInput();
  auto shardType = cast<RankedTensorType>(shard.getType());
  RankedTensorType resultType = amax.getResult().getType();
  bool reduced = reducesGatherDim(amax, gather.getDim());
  SmallVector<int64_t> partialShape(resultType.getShape());
  if (!reduced)
    partialShape[gather.getDim()] = shardType.getDimSize(gather.getDim());

  b.setInsertionPointAfter(gather);
  Value partial = titan::AmaxOp::create(b, loc, resultType.clone(partialShape),
                                        shard, amax.getDimsAttr());
  if (!reduced) {
    auto start = AllGatherStartOp::create(
        b, loc, FutureType::get(b.getContext(), resultType), partial,
        gather.getAxesAttr(), gather.getDimAttr());
    b.setInsertionPoint(amax);
    amax.replaceAllUsesWith(WaitOp::create(b, loc, start).getResult());
  } else if (AllReduceStartOp tpReduce = maxReduceOf(amax)) {
    // One all-reduce over both groups: the weight's amax over every shard.
    tpReduce.getInputMutable().assign(partial);
    tpReduce.setAxesAttr(
        joinAxes(b, gather.getAxesAttr(), tpReduce.getAxesAttr()));
  } else {
    auto start = AllReduceStartOp::create(
        b, loc, FutureType::get(b.getContext(), resultType), partial,
        gather.getAxesAttr(), ReductionKind::Max);
    b.setInsertionPoint(amax);
    amax.replaceAllUsesWith(WaitOp::create(b, loc, start).getResult());
  }
  amax.erase();
}

/// Erases `gather` and its wait once nothing reads the gathered value.
void eraseIfUnused(AllGatherStartOp gather) {
  if (!gather->hasOneUse())
    return;
  Operation *wait = *gather->getUsers().begin();
  if (!wait->use_empty())
    return;
  wait->erase();
  gather.erase();
}

struct DistAmaxFromShardsPass
    : titan::dist::impl::DistAmaxFromShardsBase<DistAmaxFromShardsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<titan::AmaxOp, AllGatherStartOp>> amaxes;
    llvm::SetVector<AllGatherStartOp> gathers;
    ParameterValues parameterValues;
    getOperation().walk([&](titan::AmaxOp amax) {
      AllGatherStartOp gather = gatherOf(amax);
      if (!gather ||
          (parametersOnly && !parameterValues.contains(gather.getInput())))
        return;
      amaxes.push_back({amax, gather});
      gathers.insert(gather);
    });
    OpBuilder b(&getContext());
    for (auto [amax, gather] : amaxes)
      reduceShards(b, amax, gather);
    for (AllGatherStartOp gather : gathers)
      eraseIfUnused(gather);
  }
};

} // namespace
