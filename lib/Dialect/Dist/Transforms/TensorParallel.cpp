//===- TensorParallel.cpp - per-rank activations under TP + SP ------------===//
//
// A forward walk that gives every value a layout over the `tp` axis, rewrites
// each op to its per-rank form and inserts collectives where an op needs a
// layout its operand does not have. Layouts are Megatron/DTensor's:
// replicated, split along one dimension, or partial (a sum still pending
// over the tp ranks). Each op's rule is its TensorParallelOpInterface (the
// titan ops': lib/Dialect/Dist/IR/TensorParallelModels.cpp, TorchTitan's
// Llama plan with sequence parallel); a rule that cannot use its operands'
// layouts gathers them (always correct, never silently wrong).
//
//===----------------------------------------------------------------------===//

#include "TensorParallel.h"

#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

class ForwardRewriter : public TensorParallelRewriter {
public:
  ForwardRewriter(func::FuncOp forward, MeshAttr mesh, bool lossParallel)
      : forward(forward), b(forward.getContext()), tp(mesh.getTp()),
        lossParallel(lossParallel), tpAxes(b.getStrArrayAttr({"tp"})) {}

  LogicalResult run(const DenseMap<Value, int64_t> &paramShardDims) {
    for (auto [value, dim] : paramShardDims)
      layouts[value] = Layout::split(dim);
    Block &body = forward.getBody().front();
    // The token ids give the sequence dimension of activations.
    for (BlockArgument arg : body.getArguments())
      if (auto t = dyn_cast<RankedTensorType>(arg.getType());
          t && isa<IntegerType>(t.getElementType()))
        seqDim = t.getRank() - 1;
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      // Collectives and replicas come from the parameter partitioning.
      if (isa_and_nonnull<DistDialect>(op->getDialect()))
        continue;
      b.setInsertionPoint(op);
      if (failed(rewrite(op)))
        return failure();
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    b.setInsertionPoint(ret);
    for (OpOperand &operand : ret->getOpOperands())
      operand.set(replicated(operand.get()));
    return success();
  }

  OpBuilder &getBuilder() override { return b; }
  int64_t getDegree() const override { return tp; }
  ArrayAttr getAxes() const override { return tpAxes; }
  bool isLossParallel() const override { return lossParallel; }
  Layout getLayout(Value v) const override { return layouts.lookup(v); }

  /// Gives `v` (whose type is the global one) its per-rank type for `l`.
  void setLayout(Value v, Layout l) override {
    layouts[v] = l;
    if (l.dim < 0)
      return;
    RankedTensorType t = tensorTypeOf(v);
    SmallVector<int64_t> shape(t.getShape());
    shape[l.dim] /= tp;
    v.setType(RankedTensorType::get(shape, t.getElementType()));
  }

  /// `v` as every tp rank's whole value; gathers and reductions are
  /// inserted at the current point and reused by later users.
  Value replicated(Value v) override {
    Layout l = getLayout(v);
    if (l.isReplicated())
      return v;
    if (Value done = replicas.lookup(v))
      return done;
    Location loc = v.getLoc();
    RankedTensorType t = tensorTypeOf(v);
    Value whole;
    if (l.partial) {
      whole = createCollective<AllReduceStartOp>(b, loc, t, v, tpAxes,
                                                 ReductionKind::Sum);
    } else {
      SmallVector<int64_t> shape(t.getShape());
      shape[l.dim] *= tp;
      whole = createCollective<AllGatherStartOp>(
          b, loc, RankedTensorType::get(shape, t.getElementType()), v, tpAxes,
          b.getI64IntegerAttr(l.dim));
    }
    return replicas[v] = whole;
  }

  /// Replaces `op`'s operands by their replicated forms.
  void replicateOperands(Operation *op) override {
    for (OpOperand &operand : op->getOpOperands())
      operand.set(replicated(operand.get()));
  }

  /// Reduce-scatters the partial result of `op` along the sequence
  /// (sequence parallel) and redirects its users to the shard.
  LogicalResult scatterAlongSequence(Operation *op) override {
    Value partial = op->getResult(0);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(op);
    RankedTensorType t = tensorTypeOf(partial);
    if (t.getRank() <= seqDim || t.getDimSize(seqDim) % tp != 0)
      return op->emitOpError()
             << "sequence parallel splits dimension " << seqDim << " of " << t
             << " over " << tp << " tensor-parallel ranks, which does "
             << "not divide it";
    SmallVector<int64_t> shape(t.getShape());
    shape[seqDim] /= tp;
    Value shard = createCollective<ReduceScatterStartOp>(
        b, op->getLoc(), RankedTensorType::get(shape, t.getElementType()),
        partial, tpAxes, b.getI64IntegerAttr(seqDim));
    partial.replaceAllUsesExcept(
        shard, shard.getDefiningOp<WaitOp>().getFuture().getDefiningOp());
    layouts[shard] = Layout::split(seqDim);
    return success();
  }

  /// The rank's first vocabulary index for a table split `tp` ways with
  /// `localRows` rows each.
  Value vocabStart(Location loc, int64_t localRows) override {
    Value &start = vocabStarts[localRows];
    if (!start) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&forward.getBody().front());
      start = ShardOffsetOp::create(b, loc,
                                    RankedTensorType::get({}, b.getI32Type()),
                                    tpAxes, b.getI64IntegerAttr(localRows));
    }
    return start;
  }

  /// The op's rule (TensorParallelOpInterface); an op without one must
  /// have replicated operands.
  LogicalResult rewrite(Operation *op) {
    if (auto rule = dyn_cast<TensorParallelOpInterface>(op))
      return rule.partitionTensorParallel(*this);
    if (llvm::all_of(op->getOperands(),
                     [&](Value v) { return getLayout(v).isReplicated(); }))
      return success();
    return op->emitOpError()
           << "has no tensor-parallel rule for split operands";
  }

  /// Operands with one common split layout give results with it; anything
  /// else is computed on replicated operands.
  LogicalResult propagateElementwise(Operation *op) override {
    Layout first = getLayout(op->getOperand(0));
    bool same = !first.partial && llvm::all_of(op->getOperands(), [&](Value v) {
      return getLayout(v) == first;
    });
    if (!same) {
      replicateOperands(op);
      return success();
    }
    for (Value r : op->getResults())
      setLayout(r, first);
    return success();
  }

private:
  func::FuncOp forward;
  OpBuilder b;
  int64_t tp;
  bool lossParallel;
  ArrayAttr tpAxes;
  int64_t seqDim = 1;
  DenseMap<Value, Layout> layouts;
  DenseMap<Value, Value> replicas;
  DenseMap<int64_t, Value> vocabStarts;
};

} // namespace

LogicalResult titan::dist::partitionTensorParallel(
    func::FuncOp forward, MeshAttr mesh,
    const DenseMap<Value, int64_t> &paramShardDims, bool lossParallel) {
  return ForwardRewriter(forward, mesh, lossParallel).run(paramShardDims);
}
