//===- TensorParallelModels.cpp - the titan ops' TP + SP rules ------------===//
//
// TensorParallelOpInterface for the titan ops, attached as external models:
// TorchTitan's Llama plan with sequence parallel. Column-wise linears take
// whole inputs and split their features; row-wise linears and the
// vocabulary-parallel embedding leave partial sums that are reduce-scattered
// along the sequence; heads split alike on q, k, v keep the GQA grouping;
// loss parallel combines per-shard statistics. An op whose operands do not
// fit its rule computes on replicated operands (correct, never silently
// wrong).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

using namespace mlir;
using namespace titan;
using namespace titan::dist;

#include "titan/Dialect/Dist/IR/TensorParallelInterface.cpp.inc"

namespace {

int64_t lastDim(Value v) { return tensorTypeOf(v).getRank() - 1; }

template <typename Op, typename Rule>
struct Model : TensorParallelOpInterface::ExternalModel<Model<Op, Rule>, Op> {
  LogicalResult partitionTensorParallel(Operation *op,
                                        TensorParallelRewriter &r) const {
    return Rule()(cast<Op>(op), r);
  }
};

struct EmbeddingRule {
  LogicalResult operator()(EmbeddingOp e, TensorParallelRewriter &r) const {
    if (r.getLayout(e.getWeight()).dim != 0) {
      r.replicateOperands(e);
      return success();
    }
    // Vocabulary-parallel: zero rows for other ranks' tokens, then the
    // partial sums are reduce-scattered along the sequence.
    e.getVocabStartMutable().assign(
        r.vocabStart(e.getLoc(), tensorTypeOf(e.getWeight()).getDimSize(0)));
    r.setLayout(e.getResult(), Layout::pending());
    return r.scatterAlongSequence(e);
  }
};

/// titan.linear's rule, and titan.float8_linear's (the same GEMM).
struct LinearRule {
  template <typename LinearLike>
  LogicalResult operator()(LinearLike l, TensorParallelRewriter &r) const {
    Layout w = r.getLayout(l.getWeight());
    int64_t last = lastDim(l.getResult());
    if (w.dim == 0) { // column-wise: whole input, split features
      l.getInputMutable().assign(r.replicated(l.getInput()));
      r.setLayout(l.getResult(), Layout::split(last));
      return success();
    }
    if (w.dim == 1 && r.getLayout(l.getInput()) == Layout::split(last)) {
      // Row-wise on split features: partial sums, scattered along the
      // sequence.
      r.setLayout(l.getResult(), Layout::pending());
      return r.scatterAlongSequence(l);
    }
    if (w.dim == 1)
      return l.emitOpError() << "row-wise tensor-parallel weight needs an "
                                "input split along its last dimension";
    return r.propagateElementwise(l);
  }
};

/// A Float8 linear partitions as a linear; it records the split
/// dimensions of its operands and result, so that its expansion reduces
/// the amaxes of split tensors over the axes (torchao's scales are those of
/// the whole DTensor). A partial result's gradient arrives whole.
struct Float8LinearRule {
  LogicalResult operator()(Float8LinearOp l, TensorParallelRewriter &r) const {
    if (failed(LinearRule()(l, r)))
      return failure();
    Layout result = r.getLayout(l.getResult());
    int64_t dims[] = {r.getLayout(l.getInput()).dim,
                      r.getLayout(l.getWeight()).dim,
                      result.partial ? -1 : result.dim};
    if (llvm::all_of(dims, [](int64_t d) { return d < 0; }))
      return success();
    OpBuilder &b = r.getBuilder();
    l.setSplitDimsAttr(b.getDenseI64ArrayAttr(dims));
    l.setSplitAxesAttr(r.getAxes());
    return success();
  }
};

struct RMSNormRule {
  LogicalResult operator()(RMSNormOp n, TensorParallelRewriter &r) const {
    Layout in = r.getLayout(n.getInput());
    n.getWeightMutable().assign(r.replicated(n.getWeight()));
    if (in.partial || in.dim == lastDim(n.getInput())) {
      n.getInputMutable().assign(r.replicated(n.getInput()));
      in = Layout();
    }
    r.setLayout(n.getResult(), in);
    return success();
  }
};

struct ReshapeRule {
  /// Where the split dimension `dim` of reshape input `in` lands in `out`,
  /// or -1 when the reshape mixes it with other dimensions.
  static int64_t reshapedDim(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                             int64_t dim, int64_t tp) {
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

  LogicalResult operator()(ReshapeOp op, TensorParallelRewriter &r) const {
    Layout in = r.getLayout(op.getInput());
    if (in.isReplicated())
      return success();
    if (in.partial) {
      r.setLayout(op.getResult(), in);
      return success();
    }
    SmallVector<int64_t> global(tensorTypeOf(op.getInput()).getShape());
    global[in.dim] *= r.getDegree();
    int64_t out = reshapedDim(global, tensorTypeOf(op.getResult()).getShape(),
                              in.dim, r.getDegree());
    if (out < 0) {
      r.replicateOperands(op);
      return success();
    }
    r.setLayout(op.getResult(), Layout::split(out));
    return success();
  }
};

struct RopeRule {
  LogicalResult operator()(RopeOp op, TensorParallelRewriter &r) const {
    // Heads (or any dimension but sequence and pairs) may be split.
    Layout in = r.getLayout(op.getInput());
    if (in.partial || in.dim == 1 || in.dim == lastDim(op.getInput())) {
      op.getInputMutable().assign(r.replicated(op.getInput()));
      in = Layout();
    }
    op.getAnglesMutable().assign(r.replicated(op.getAngles()));
    r.setLayout(op.getResult(), in);
    return success();
  }
};

struct AttentionRule {
  LogicalResult operator()(AttentionOp a, TensorParallelRewriter &r) const {
    // Heads split alike on q, k and v keep the GQA grouping per rank.
    Layout heads = Layout::split(2);
    if (llvm::all_of(a->getOperands(),
                     [&](Value v) { return r.getLayout(v) == heads; })) {
      r.setLayout(a.getResult(), heads);
      r.setLayout(a.getLse(), Layout::split(1)); // B x Hq x S
      return success();
    }
    r.replicateOperands(a);
    return success();
  }
};

struct CrossEntropyRule {
  LogicalResult operator()(CrossEntropyOp c, TensorParallelRewriter &r) const {
    if (!r.isLossParallel() ||
        !(r.getLayout(c.getLogits()) ==
          Layout::split(lastDim(c.getLogits()))) ||
        !r.getLayout(c.getLabels()).isReplicated()) {
      r.replicateOperands(c);
      return success();
    }
    // loss = mean(max + log(sum_exp) - target), each statistic combined over
    // the vocabulary shards.
    OpBuilder &b = r.getBuilder();
    Location loc = c.getLoc();
    Value logits = c.getLogits();
    RankedTensorType t = tensorTypeOf(logits);
    auto rowsType =
        RankedTensorType::get(t.getShape().drop_back(), t.getElementType());
    Value max = createCollective<AllReduceStartOp>(
        b, loc, rowsType, RowMaxOp::create(b, loc, rowsType, logits),
        r.getAxes(), ReductionKind::Max);
    Value sumExp = createCollective<AllReduceStartOp>(
        b, loc, rowsType, SumExpOp::create(b, loc, rowsType, logits, max),
        r.getAxes(), ReductionKind::Sum);
    Value target = createCollective<AllReduceStartOp>(
        b, loc, rowsType,
        TargetLogitOp::create(b, loc, rowsType, logits, c.getLabels(),
                              r.vocabStart(loc, t.getShape().back())),
        r.getAxes(), ReductionKind::Sum);
    Value loss = CrossEntropyFromStatsOp::create(b, loc, c.getType(), max,
                                                 sumExp, target);
    c.replaceAllUsesWith(loss);
    c.erase();
    return success();
  }
};

/// Same layout in, same layout out.
struct ElementwiseRule {
  LogicalResult operator()(Operation *op, TensorParallelRewriter &r) const {
    return r.propagateElementwise(op);
  }
};

/// Constants of the step: computed whole on every rank.
struct ReplicatedRule {
  LogicalResult operator()(Operation *, TensorParallelRewriter &) const {
    return success();
  }
};

} // namespace

void titan::dist::registerTensorParallelModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TitanDialect *) {
    EmbeddingOp::attachInterface<Model<EmbeddingOp, EmbeddingRule>>(*ctx);
    LinearOp::attachInterface<Model<LinearOp, LinearRule>>(*ctx);
    Float8LinearOp::attachInterface<Model<Float8LinearOp, Float8LinearRule>>(
        *ctx);
    RMSNormOp::attachInterface<Model<RMSNormOp, RMSNormRule>>(*ctx);
    ReshapeOp::attachInterface<Model<ReshapeOp, ReshapeRule>>(*ctx);
    RopeOp::attachInterface<Model<RopeOp, RopeRule>>(*ctx);
    AttentionOp::attachInterface<Model<AttentionOp, AttentionRule>>(*ctx);
    CrossEntropyOp::attachInterface<Model<CrossEntropyOp, CrossEntropyRule>>(
        *ctx);
    AddOp::attachInterface<Model<AddOp, ElementwiseRule>>(*ctx);
    MulOp::attachInterface<Model<MulOp, ElementwiseRule>>(*ctx);
    SwiGLUOp::attachInterface<Model<SwiGLUOp, ElementwiseRule>>(*ctx);
    SiLUOp::attachInterface<Model<SiLUOp, ElementwiseRule>>(*ctx);
    SqrtOp::attachInterface<Model<SqrtOp, ElementwiseRule>>(*ctx);
    CastOp::attachInterface<Model<CastOp, ElementwiseRule>>(*ctx);
    RopeAnglesOp::attachInterface<Model<RopeAnglesOp, ReplicatedRule>>(*ctx);
    FillOp::attachInterface<Model<FillOp, ReplicatedRule>>(*ctx);
  });
}
