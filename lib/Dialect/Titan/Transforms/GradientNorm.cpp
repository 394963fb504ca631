//===- GradientNorm.cpp - the global gradient norm over shards ------------===//

#include "titan/Dialect/Titan/Transforms/GradientNorm.h"

#include "titan/Dialect/Titan/IR/TitanOps.h"

using namespace mlir;
using namespace titan;

std::vector<std::string> titan::gradientNormAxes(dist::ShardingAttr sharding,
                                                 bool pipelined) {
  std::vector<std::string> axes;
  if (pipelined)
    for (const mesh::AxisInfo &axis : mesh::kAxes)
      if (axis.pipeline)
        axes.push_back(axis.name);
  if (sharding)
    for (unsigned d = 0; d < sharding.getDims().size(); ++d)
      for (StringRef axis : sharding.getAxes(d))
        axes.push_back(axis.str());
  // In mesh order: [tp, dp_shard] and [dp_shard, tp] are one group.
  llvm::sort(axes, [](const std::string &a, const std::string &b) {
    return dist::MeshAttr::getAxisIndex(a) < dist::MeshAttr::getAxisIndex(b);
  });
  return axes;
}

void titan::addGradientSquares(OpBuilder &b, Location loc,
                               SquaredNormGroups &groups,
                               ArrayRef<ShardedGradient> grads,
                               bool pipelined) {
  std::map<std::vector<std::string>, SmallVector<Value>> members;
  for (const ShardedGradient &g : grads)
    members[gradientNormAxes(g.sharding, pipelined)].push_back(g.grad);
  Type scalar = RankedTensorType::get({}, b.getF32Type());
  for (auto &[axes, group] : members) {
    Value n = GlobalNormOp::create(b, loc, scalar, group);
    Value squares = MulOp::create(b, loc, n, n);
    Value &sum = groups[axes];
    sum = sum ? AddOp::create(b, loc, sum, squares).getResult() : squares;
  }
}

Value titan::buildNormFromSquares(OpBuilder &b, Location loc,
                                  const SquaredNormGroups &groups) {
  assert(!groups.empty() && "a norm of no gradients");
  Value total;
  for (const auto &[axes, sum] : groups) {
    Value squares = sum;
    if (!axes.empty()) {
      SmallVector<StringRef> names(axes.begin(), axes.end());
      auto type = cast<RankedTensorType>(squares.getType());
      auto start = dist::AllReduceStartOp::create(
          b, loc, dist::FutureType::get(b.getContext(), type), squares,
          b.getStrArrayAttr(names), dist::ReductionKind::Sum);
      squares = dist::WaitOp::create(b, loc, start);
    }
    total = total ? AddOp::create(b, loc, total, squares).getResult() : squares;
  }
  return SqrtOp::create(b, loc, total);
}
