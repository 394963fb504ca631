//===- TensorParallel.cpp - per-rank activations under TP + SP ------------===//
//
// A forward walk that gives every value a layout over the `tp` axis, rewrites
// each op to its per-rank form and inserts collectives where an op needs a
// layout its operand does not have. Layouts are Megatron/DTensor's:
// replicated, split along one dimension, or partial (a sum still pending
// over the tp ranks). The rules are those of TorchTitan's Llama plan with
// sequence parallel; an op with no rule for its operands' layouts gathers
// them (always correct, never silently wrong).
//
//===----------------------------------------------------------------------===//

#include "TensorParallel.h"

#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// A value's distribution over the tp ranks.
struct Layout {
  int64_t dim = -1;     ///< the dimension split over tp, or -1
  bool partial = false; ///< each rank holds a term of the sum
  bool isReplicated() const { return dim < 0 && !partial; }
  bool operator==(const Layout &o) const {
    return dim == o.dim && partial == o.partial;
  }
  static Layout split(int64_t d) { return {d, false}; }
  static Layout pending() { return {-1, true}; }
};

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

class TensorParallelRewriter {
public:
  TensorParallelRewriter(func::FuncOp forward, MeshAttr mesh, bool lossParallel)
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

private:
  Layout layout(Value v) const { return layouts.lookup(v); }

  /// Gives `v` (whose type is the global one) its per-rank type for `l`.
  void setLayout(Value v, Layout l) {
    layouts[v] = l;
    if (l.dim < 0)
      return;
    RankedTensorType t = tensorType(v);
    SmallVector<int64_t> shape(t.getShape());
    shape[l.dim] /= tp;
    v.setType(RankedTensorType::get(shape, t.getElementType()));
  }

  /// `v` as every tp rank's whole value; gathers and reductions are
  /// inserted at the current point and reused by later users.
  Value replicated(Value v) {
    Layout l = layout(v);
    if (l.isReplicated())
      return v;
    if (Value done = replicas.lookup(v))
      return done;
    Location loc = v.getLoc();
    RankedTensorType t = tensorType(v);
    Value whole;
    if (l.partial) {
      whole = createCollective<AllReduceStartOp>(b, loc, t, v, tpAxes,
                                                 b.getStringAttr("sum"));
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
  void replicateOperands(Operation *op) {
    for (OpOperand &operand : op->getOpOperands())
      operand.set(replicated(operand.get()));
  }

  /// Reduce-scatters the partial result of `op` along the sequence
  /// (sequence parallel) and redirects its users to the shard.
  LogicalResult scatterAlongSequence(Operation *op) {
    Value partial = op->getResult(0);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(op);
    RankedTensorType t = tensorType(partial);
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
  Value vocabStart(Location loc, int64_t localRows) {
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

  /// Where the split dimension `dim` of reshape input `in` lands in `out`,
  /// or -1 when the reshape mixes it with other dimensions.
  int64_t reshapedDim(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                      int64_t dim) const {
    int64_t before = 1;
    for (int64_t d = 0; d < dim; ++d)
      before *= in[d];
    int64_t prefix = 1;
    for (int64_t e = 0; e < int64_t(out.size()); ++e) {
      if (prefix == before && out[e] % tp == 0 && out[e] > 1)
        return e;
      prefix *= out[e];
      if (prefix > before)
        break;
    }
    return -1;
  }

  LogicalResult rewrite(Operation *op) {
    return TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](EmbeddingOp e) {
          Layout w = layout(e.getWeight());
          if (w.dim != 0) {
            replicateOperands(op);
            return success();
          }
          // Vocabulary-parallel: zero rows for other ranks' tokens, then the
          // partial sums are reduce-scattered along the sequence.
          e.getVocabStartMutable().assign(
              vocabStart(e.getLoc(), tensorType(e.getWeight()).getDimSize(0)));
          layouts[e.getResult()] = Layout::pending();
          return scatterAlongSequence(op);
        })
        .Case([&](LinearOp l) -> LogicalResult {
          Layout w = layout(l.getWeight());
          int64_t last = tensorType(l.getResult()).getRank() - 1;
          if (w.dim == 0) { // column-wise: whole input, split features
            l.getInputMutable().assign(replicated(l.getInput()));
            setLayout(l.getResult(), Layout::split(last));
          } else if (w.dim == 1 &&
                     layout(l.getInput()) == Layout::split(last)) {
            // Row-wise on split features: partial sums, scattered along
            // the sequence.
            layouts[l.getResult()] = Layout::pending();
            return scatterAlongSequence(op);
          } else if (w.dim == 1) {
            return l.emitOpError()
                   << "row-wise tensor-parallel weight needs an input split "
                      "along its last dimension";
          } else {
            return propagateElementwise(op);
          }
          return success();
        })
        .Case([&](RMSNormOp n) {
          Layout in = layout(n.getInput());
          int64_t last = tensorType(n.getInput()).getRank() - 1;
          n.getWeightMutable().assign(replicated(n.getWeight()));
          if (in.partial || in.dim == last) {
            n.getInputMutable().assign(replicated(n.getInput()));
            in = Layout();
          }
          setLayout(n.getResult(), in);
          return success();
        })
        .Case([&](ReshapeOp r) {
          Layout in = layout(r.getInput());
          if (in.isReplicated())
            return success();
          if (in.partial) {
            layouts[r.getResult()] = in;
            return success();
          }
          RankedTensorType inType = tensorType(r.getInput());
          SmallVector<int64_t> global(inType.getShape());
          global[in.dim] *= tp;
          int64_t out =
              reshapedDim(global, tensorType(r.getResult()).getShape(), in.dim);
          if (out < 0) {
            replicateOperands(op);
            return success();
          }
          setLayout(r.getResult(), Layout::split(out));
          return success();
        })
        .Case([&](RopeOp r) {
          Layout in = layout(r.getInput());
          // Heads (or any dimension but sequence and pairs) may be split.
          int64_t rank = tensorType(r.getInput()).getRank();
          if (in.partial || in.dim == 1 || in.dim == rank - 1) {
            r.getInputMutable().assign(replicated(r.getInput()));
            in = Layout();
          }
          r.getAnglesMutable().assign(replicated(r.getAngles()));
          setLayout(r.getResult(), in);
          return success();
        })
        .Case([&](AttentionOp a) {
          // Heads split alike on q, k and v keep the GQA grouping per rank.
          Layout heads = Layout::split(2);
          if (llvm::all_of(op->getOperands(),
                           [&](Value v) { return layout(v) == heads; })) {
            setLayout(a.getResult(), heads);
            return success();
          }
          replicateOperands(op);
          return success();
        })
        .Case([&](CrossEntropyOp c) {
          int64_t last = tensorType(c.getLogits()).getRank() - 1;
          if (lossParallel && layout(c.getLogits()) == Layout::split(last) &&
              layout(c.getLabels()).isReplicated()) {
            lowerLossParallel(c);
            return success();
          }
          replicateOperands(op);
          return success();
        })
        .Case<AddOp, MulOp, SwiGLUOp, SiLUOp, SqrtOp>(
            [&](auto) { return propagateElementwise(op); })
        .Case<RopeAnglesOp, FillOp>([](auto) { return success(); })
        .Default([&](Operation *other) -> LogicalResult {
          if (llvm::all_of(other->getOperands(),
                           [&](Value v) { return layout(v).isReplicated(); }))
            return success();
          return other->emitOpError()
                 << "has no tensor-parallel rule for split operands";
        });
  }

  /// Operands with one common split layout give results with it; anything
  /// else is computed on replicated operands.
  LogicalResult propagateElementwise(Operation *op) {
    Layout first = layout(op->getOperand(0));
    bool same = !first.partial && llvm::all_of(op->getOperands(), [&](Value v) {
      return layout(v) == first;
    });
    if (!same) {
      replicateOperands(op);
      return success();
    }
    for (Value r : op->getResults())
      setLayout(r, first);
    return success();
  }

  /// loss = mean(max + log(sum_exp) - target) with each statistic combined
  /// over the vocabulary shards.
  void lowerLossParallel(CrossEntropyOp c) {
    Location loc = c.getLoc();
    Value logits = c.getLogits();
    RankedTensorType t = tensorType(logits);
    auto rowsType =
        RankedTensorType::get(t.getShape().drop_back(), t.getElementType());
    auto sum = b.getStringAttr("sum");
    Value max = createCollective<AllReduceStartOp>(
        b, loc, rowsType, RowMaxOp::create(b, loc, rowsType, logits), tpAxes,
        b.getStringAttr("max"));
    Value sumExp = createCollective<AllReduceStartOp>(
        b, loc, rowsType, SumExpOp::create(b, loc, rowsType, logits, max),
        tpAxes, sum);
    Value target = createCollective<AllReduceStartOp>(
        b, loc, rowsType,
        TargetLogitOp::create(b, loc, rowsType, logits, c.getLabels(),
                              vocabStart(loc, t.getShape().back())),
        tpAxes, sum);
    Value loss = CrossEntropyFromStatsOp::create(b, loc, c.getType(), max,
                                                 sumExp, target);
    c.replaceAllUsesWith(loss);
    c.erase();
  }

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
  return TensorParallelRewriter(forward, mesh, lossParallel)
      .run(paramShardDims);
}
