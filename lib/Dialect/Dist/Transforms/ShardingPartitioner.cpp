//===- ShardingPartitioner.cpp - per-rank ops from shardings --------------===//
//
// A forward walk over the program in its global types, with the shardings
// dist-propagate-sharding wrote. For each op the rule (the same choice the
// propagation made, from the operands' shardings) says how each operand
// must be sharded; operands that are otherwise are resharded:
//   pending sums      -> reduce-scatter (onto a dimension the target splits
//                        over those axes) or all-reduce;
//   split differently -> all-gather of the axes beyond the common prefix;
//   replicated        -> dist.local_shard (a copy, no communication).
// Each result takes the per-rank type of its sharding, and the op adjusts
// itself to its split factors (localize).
//
//===----------------------------------------------------------------------===//

#include "ShardingPartitioner.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVectorExtras.h"

using namespace mlir;
using namespace titan;
using namespace titan::dist;

ShardingPartitioner::ShardingPartitioner(func::FuncOp func, MeshAttr mesh,
                                         RotateMethod rotate)
    : func(func), mesh(mesh), rotate(rotate), b(func.getContext()) {
  // The rules read the global shapes: before the caller gives the
  // arguments their per-rank types, and before any op is localized (a
  // rule read from a local shape checks divisibility of the local size:
  // cp 4 at seq 24 would see 6 tokens a rank, not 24).
  for (Operation &op : func.getBody().front().without_terminator())
    if (auto rule = dyn_cast<ShardingRuleOpInterface>(&op))
      rules.try_emplace(&op, rule.getShardingRule());
}

void ShardingPartitioner::setSharding(Value v, ShardingAttr sharding,
                                      bool parameter) {
  shardings[v] = sharding;
  if (parameter)
    parameters.insert(v);
  if (Operation *def = v.getDefiningOp())
    annotate(def);
}

ShardingAttr ShardingPartitioner::getSharding(Value v) const {
  ShardingAttr s = shardings.lookup(v);
  return s ? s : replicatedSharding(mesh.getContext());
}

LogicalResult ShardingPartitioner::run() {
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops = llvm::map_to_vector(
      body.without_terminator(), [](Operation &op) { return &op; });
  for (Operation *op : ops) {
    b.setInsertionPoint(op);
    if (failed(partitionOp(op)))
      return failure();
  }
  return success();
}

LogicalResult ShardingPartitioner::partitionOp(Operation *op) {
  if (auto constraint = dyn_cast<ShardingConstraintOp>(op)) {
    FailureOr<Value> v =
        reshard(constraint.getInput(), constraint.getSharding(), op);
    if (failed(v))
      return failure();
    constraint.replaceAllUsesWith(*v);
    constraint.erase();
    return success();
  }
  // The parameters' gathers and replicas (dist-partition's own).
  if (isa_and_nonnull<DistDialect>(op->getDialect()))
    return success();
  if (auto rule = dyn_cast<ShardingRuleOpInterface>(op))
    return partitionWithRule(op, rule);
  if (llvm::any_of(op->getOperands(),
                   [&](Value v) { return !getSharding(v).isReplicated(); }))
    return op->emitOpError() << "has sharded operands but no sharding rule "
                                "(ShardingRuleOpInterface)";
  annotate(op);
  return success();
}

LogicalResult
ShardingPartitioner::partitionWithRule(Operation *op,
                                       ShardingRuleOpInterface rule) {
  auto it = rules.find(op);
  if (it == rules.end())
    return op->emitOpError()
           << "was created after the partitioner read the sharding rules "
              "(internal error)";
  const ShardingRule &r = it->second;
  SmallVector<ShardingAttr> operands;
  for (Value v : op->getOperands())
    operands.push_back(getSharding(v));
  factors = r.chooseFactorShardings(
      operands, claimOrder(op, [&](Value v) { return parameters.contains(v); }),
      mesh);
  // Results first: their shardings come from the operands as they were.
  SmallVector<ShardingAttr> results;
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    results.push_back(
        r.getResultSharding(op->getContext(), i, factors, operands));
  ArrayAttr given =
      b.getArrayAttr(SmallVector<Attribute>(results.begin(), results.end()));
  auto annotated =
      op->getAttrOfType<ArrayAttr>(DistDialect::kShardingsAttrName);
  if (annotated && annotated != given)
    return op->emitOpError() << "is annotated with result shardings "
                             << annotated << ", but its rule gives " << given
                             << " for its operands' shardings";
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    ShardingAttr needed = r.getOperandSharding(i, factors, operands[i]);
    FailureOr<Value> v = reshard(operand.get(), needed, op);
    if (failed(v))
      return failure();
    operand.set(*v);
  }
  for (auto [result, sharding] : llvm::zip(op->getResults(), results))
    if (failed(localizeType(result, sharding, op)))
      return failure();
  annotate(op);
  b.setInsertionPoint(op);
  return rule.localize(*this);
}

LogicalResult ShardingPartitioner::localizeType(Value v, ShardingAttr s,
                                                Operation *op) {
  auto type = cast<RankedTensorType>(v.getType());
  std::string reason;
  FailureOr<SmallVector<int64_t>> local =
      s.getLocalShape(type.getShape(), mesh, &reason);
  if (failed(local))
    return op->emitOpError()
           << "cannot shard result " << type << " as " << s << ": " << reason;
  v.setType(RankedTensorType::get(*local, type.getElementType()));
  shardings[v] = s;
  return success();
}

void ShardingPartitioner::annotate(Operation *op) {
  SmallVector<Attribute> list;
  for (Value r : op->getResults())
    list.push_back(getSharding(r));
  if (!list.empty())
    op->setAttr(DistDialect::kShardingsAttrName, b.getArrayAttr(list));
}

void ShardingPartitioner::replaceOp(Operation *op, ValueRange values) {
  for (auto [old, replacement] : llvm::zip(op->getResults(), values))
    shardings[replacement] = getSharding(old);
  if (Operation *def = values.empty() ? nullptr : values[0].getDefiningOp())
    annotate(def);
  op->replaceAllUsesWith(values);
  op->erase();
}

Value ShardingPartitioner::shardOffset(Location loc, ArrayRef<StringRef> axes,
                                       int64_t stride) {
  ArrayAttr axesAttr = b.getStrArrayAttr(axes);
  Attribute key = b.getArrayAttr({axesAttr, b.getI64IntegerAttr(stride)});
  Value &offset = offsets[key];
  if (!offset) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&func.getBody().front());
    offset =
        ShardOffsetOp::create(b, loc, RankedTensorType::get({}, b.getI32Type()),
                              axesAttr, b.getI64IntegerAttr(stride));
  }
  return offset;
}

/// The product of the sizes of `axes`.
static int64_t groupSize(MeshAttr mesh, ArrayRef<StringRef> axes) {
  int64_t n = 1;
  for (StringRef axis : axes)
    n *= *mesh.getAxisSize(axis);
  return n;
}

/// `t` with dimension `dim` multiplied by `num` / `den`.
static RankedTensorType scaledDim(Value v, int64_t dim, int64_t num,
                                  int64_t den) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape[dim] = shape[dim] * num / den;
  return RankedTensorType::get(shape, t.getElementType());
}

/// The dimension `axes` (just taken off another) are wanted on next, after
/// what it is already split over; else -1.
static int64_t movedTo(ArrayRef<SmallVector<StringRef>> dims,
                       ArrayRef<SmallVector<StringRef>> wanted,
                       ArrayRef<StringRef> axes) {
  for (auto [e, want] : llvm::enumerate(wanted)) {
    SmallVector<StringRef> next(dims[e]);
    llvm::append_range(next, axes);
    if (next == want)
      return int64_t(e);
  }
  return -1;
}

Value ShardingPartitioner::gather(Value v, ArrayRef<StringRef> axes,
                                  int64_t dim) {
  return createCollective<AllGatherStartOp>(
      b, v.getLoc(), scaledDim(v, dim, groupSize(mesh, axes), 1), v,
      b.getStrArrayAttr(axes), b.getI64IntegerAttr(dim));
}

FailureOr<Value> ShardingPartitioner::reshard(Value v, ShardingAttr target,
                                              Operation *user) {
  ShardingAttr current = getSharding(v);
  if (current == target)
    return v;
  if (Value done = reshards.lookup({v, target}))
    return done;
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  SmallVector<SmallVector<StringRef>> dims = shardingDims(current, rank);
  SmallVector<SmallVector<StringRef>> wanted = shardingDims(target, rank);
  SmallVector<StringRef> partial = current.getPartialAxes();
  MLIRContext *ctx = b.getContext();
  Value x = v;
  SmallVector<StringRef> pending = partial;
  auto record = [&] {
    ShardingAttr s =
        makeSharding(ctx, dims, pending, current.getReductionKind());
    shardings[x] = s;
    if (Operation *def = x.getDefiningOp())
      annotate(def);
  };
  if (!partial.empty() && partial != target.getPartialAxes()) {
    if (!target.getPartialAxes().empty())
      return user->emitOpError()
             << "cannot reshard " << current << " to " << target;
    // A sum whose target splits one dimension over exactly those axes
    // more is reduce-scattered onto it (sequence parallel).
    int64_t scatter = -1;
    for (int64_t d = 0;
         d < rank && current.getReductionKind() == ReductionKind::Sum; ++d) {
      SmallVector<StringRef> after(dims[d]);
      llvm::append_range(after, partial);
      if (after == wanted[d])
        scatter = d;
    }
    if (scatter >= 0) {
      int64_t n = groupSize(mesh, partial);
      if (cast<RankedTensorType>(x.getType()).getDimSize(scatter) % n != 0)
        return user->emitOpError()
               << "cannot reduce-scatter " << x.getType() << " along "
               << scatter << " over " << n << " ranks";
      x = createCollective<ReduceScatterStartOp>(
          b, x.getLoc(), scaledDim(x, scatter, 1, n), x,
          b.getStrArrayAttr(partial), b.getI64IntegerAttr(scatter));
      dims[scatter] = wanted[scatter];
    } else {
      x = createCollective<AllReduceStartOp>(
          b, x.getLoc(), cast<RankedTensorType>(x.getType()), x,
          b.getStrArrayAttr(partial), current.getReductionKind());
    }
    pending.clear();
    record();
  }
  for (int64_t d = 0; d < rank; ++d) {
    size_t common = 0;
    while (common < dims[d].size() && common < wanted[d].size() &&
           dims[d][common] == wanted[d][common])
      ++common;
    if (common == dims[d].size())
      continue;
    SmallVector<StringRef> axes(ArrayRef(dims[d]).drop_front(common));
    if (mesh.getSplitLayout(axes).loadBalanced)
      return user->emitOpError()
             << "needs dimension " << d << " of " << current
             << " gathered over load-balanced axes, which only "
                "context-parallel attention does";
    dims[d].resize(common);
    // The same axes wanted on another dimension: one all_to_all moves the
    // split there (each rank keeps 1/n of the bytes a gather would).
    int64_t to = movedTo(dims, wanted, axes);
    int64_t n = groupSize(mesh, axes);
    auto type = cast<RankedTensorType>(x.getType());
    if (to >= 0 && type.getDimSize(to) % n == 0) {
      SmallVector<int64_t> shape(type.getShape());
      shape[to] /= n;
      shape[d] *= n;
      x = createCollective<AllToAllStartOp>(
          b, x.getLoc(), RankedTensorType::get(shape, type.getElementType()), x,
          b.getStrArrayAttr(axes), b.getI64IntegerAttr(to),
          b.getI64IntegerAttr(d));
      llvm::append_range(dims[to], axes);
    } else {
      x = gather(x, axes, d);
    }
    record();
  }
  for (int64_t d = 0; d < rank; ++d) {
    for (size_t i = dims[d].size(); i < wanted[d].size(); ++i) {
      StringRef axis = wanted[d][i];
      mesh::SplitLayout split = mesh.getSplitLayout({axis});
      if (!split.divides(cast<RankedTensorType>(x.getType()).getDimSize(d)))
        return user->emitOpError()
               << "cannot take this rank's part of dimension " << d << " of "
               << x.getType() << " over '" << axis << "' (" << split.numChunks()
               << " parts)";
      x = LocalShardOp::create(
          b, x.getLoc(), scaledDim(x, d, 1, *mesh.getAxisSize(axis)), x,
          b.getStrArrayAttr({axis}), b.getI64IntegerAttr(d));
      dims[d].push_back(axis);
      record();
    }
  }
  if (getSharding(x) != target)
    return user->emitOpError()
           << "cannot reshard " << current << " to " << target;
  return reshards[{v, target}] = x;
}
