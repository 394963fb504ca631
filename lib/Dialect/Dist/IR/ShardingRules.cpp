//===- ShardingRules.cpp - the titan ops' sharding rules ------------------===//
//
// ShardingRuleOpInterface for the titan ops, attached as external models.
// Each rule states only how the op's dimensions correspond (which factors
// it passes through, contracts, or needs whole); TorchTitan's plans
// (column/row-wise linears, sequence parallel, loss parallel, context
// parallel) follow from these rules plus the shardings dist-parallelize
// gives parameters and inputs. `localize` holds what an op must change
// when a factor is split: the first row of a vocabulary shard, and the ring
// of context-parallel attention.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/ShardingRule.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// One pass-through factor per dimension of `shape`; returns them.
SmallVector<int64_t> addFactors(ShardingRule &rule, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> factors;
  for (int64_t size : shape)
    factors.push_back(rule.addFactor(size));
  return factors;
}

/// Every operand and result has the same shape and dimensions.
ShardingRule elementwiseRule(Operation *op) {
  ShardingRule rule;
  SmallVector<int64_t> f = addFactors(rule, shapeOf(op->getResult(0)));
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    rule.addOperand(f);
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    rule.addResult(f);
  return rule;
}

/// Per-row statistics: results have the `rows` dimensions; operands of
/// higher rank add a last dimension (the vocabulary) contracted by
/// `reduction`; 0-d operands (a vocabulary offset) have none.
ShardingRule rowStatRule(Operation *op, ArrayRef<int64_t> rows,
                         ReductionKind reduction) {
  ShardingRule rule;
  SmallVector<int64_t> lead = addFactors(rule, rows);
  SmallVector<int64_t> withLast(lead);
  for (Value v : op->getOperands()) {
    ArrayRef<int64_t> shape = shapeOf(v);
    if (shape.empty() || shape.size() == lead.size()) {
      rule.addOperand(shape.empty() ? ArrayRef<int64_t>() : lead);
      continue;
    }
    if (withLast.size() == lead.size())
      withLast.push_back(
          rule.addFactor(shape.back(), FactorKind::Reduction, reduction));
    rule.addOperand(withLast);
  }
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    rule.addResult(lead);
  return rule;
}

template <typename Op, typename Rule>
struct Model : ShardingRuleOpInterface::ExternalModel<Model<Op, Rule>, Op> {
  ShardingRule getShardingRule(Operation *op) const {
    return Rule::rule(cast<Op>(op));
  }
  LogicalResult localize(Operation *op, ShardingLocalizer &l) const {
    return Rule::localize(cast<Op>(op), l);
  }
};

/// The common case: nothing to adjust per rank.
struct NoLocalize {
  static LogicalResult localize(Operation *, ShardingLocalizer &) {
    return success();
  }
};

struct ElementwiseRule : NoLocalize {
  static ShardingRule rule(Operation *op) { return elementwiseRule(op); }
};

/// Results computed from attributes alone (replicated).
struct ConstantRule : NoLocalize {
  static ShardingRule rule(Operation *op) {
    ShardingRule rule;
    for (Value r : op->getResults())
      rule.addResult(addFactors(rule, shapeOf(r)));
    return rule;
  }
};

/// Gives `vocabStart` (an optional operand) this rank's first vocabulary
/// row when the vocabulary factor `vocab` is split.
template <typename Op>
LogicalResult localizeVocabulary(Op op, ShardingLocalizer &l, int64_t vocab,
                                 int64_t localRows) {
  ArrayRef<StringRef> axes = l.getFactorAxes(vocab);
  if (axes.empty())
    return success();
  op.getVocabStartMutable().assign(l.shardOffset(op.getLoc(), axes, localRows));
  return success();
}

/// weight [V, D], tokens [T...] -> [T..., D]; the lookup is a one-hot
/// product, so V is contracted.
struct EmbeddingRule {
  static constexpr int64_t kVocab = 0;
  static ShardingRule rule(EmbeddingOp op) {
    ShardingRule rule;
    ArrayRef<int64_t> w = shapeOf(op.getWeight());
    int64_t vocab = rule.addFactor(w[0], FactorKind::Reduction);
    int64_t hidden = rule.addFactor(w[1]);
    SmallVector<int64_t> tokens = addFactors(rule, shapeOf(op.getTokens()));
    rule.addOperand({vocab, hidden});
    rule.addOperand(tokens);
    if (op.getVocabStart())
      rule.addOperand({});
    tokens.push_back(hidden);
    rule.addResult(tokens);
    return rule;
  }
  static LogicalResult localize(EmbeddingOp op, ShardingLocalizer &l) {
    return localizeVocabulary(op, l, kVocab, shapeOf(op.getWeight())[0]);
  }
};

/// x [..., K] · W[N, K]ᵀ -> [..., N]: K contracted.
template <typename LinearLike> ShardingRule linearRule(LinearLike op) {
  ShardingRule rule;
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  SmallVector<int64_t> lead = addFactors(rule, x.drop_back());
  int64_t k = rule.addFactor(x.back(), FactorKind::Reduction);
  int64_t n = rule.addFactor(shapeOf(op.getWeight())[0]);
  SmallVector<int64_t> input(lead), result(lead);
  input.push_back(k);
  result.push_back(n);
  rule.addOperand(input);
  rule.addOperand({n, k});
  rule.addResult(result);
  return rule;
}

struct LinearRule : NoLocalize {
  static ShardingRule rule(LinearOp op) { return linearRule(op); }
};

/// A Float8 linear is a linear; it records which dimension of its input,
/// weight and result is split and over which axes, so that its expansion
/// reduces the amaxes of split tensors over them (torchao's scales are
/// those of the whole tensor). Tensorwise scales take the maximum over
/// every axis splitting any of the three (a maximum over ranks that hold
/// the same values changes nothing), so tensors split over different axes
/// (context parallel's sequence, tensor parallel's features) share one
/// list; rowwise scales need each tensor split along one dimension over
/// the same axes.
struct Float8LinearRule {
  static ShardingRule rule(Float8LinearOp op) { return linearRule(op); }
  static LogicalResult localize(Float8LinearOp op, ShardingLocalizer &l) {
    ShardingRule rule = linearRule(op);
    const int64_t k = rule.getOperand(0).back().front();
    bool tensorwise = op.getRecipe() == Float8Recipe::Tensorwise;
    SmallVector<int64_t> dims;
    SmallVector<StringRef> axes;
    for (const ShardingRule::TensorFactors *t :
         {&rule.getOperand(0), &rule.getOperand(1), &rule.getResult(0)}) {
      int64_t dim = -1;
      for (auto [d, factors] : llvm::enumerate(*t)) {
        if (factors.empty())
          continue;
        ArrayRef<StringRef> split = l.getFactorAxes(factors.front());
        // A result split along the contracted K is partial, not split.
        if (split.empty() || (t == &rule.getResult(0) && factors[0] == k))
          continue;
        if (!tensorwise &&
            (dim >= 0 || (!axes.empty() && ArrayRef(axes) != split)))
          return op.emitOpError()
                 << "rowwise float8 scaling of tensors split along several "
                    "dimensions or over different mesh axes is not "
                    "supported";
        if (dim < 0)
          dim = d;
        for (StringRef axis : split)
          if (!llvm::is_contained(axes, axis))
            axes.push_back(axis);
      }
      dims.push_back(dim);
    }
    if (axes.empty())
      return success();
    llvm::sort(axes, [](StringRef a, StringRef b) {
      return MeshAttr::getAxisIndex(a) < MeshAttr::getAxisIndex(b);
    });
    OpBuilder &b = l.getBuilder();
    op.setSplitDimsAttr(b.getDenseI64ArrayAttr(dims));
    op.setSplitAxesAttr(b.getStrArrayAttr(axes));
    return success();
  }
};

/// Normalizes over the last dimension, which must stay whole.
struct RMSNormRule : NoLocalize {
  static ShardingRule rule(RMSNormOp op) {
    ShardingRule rule;
    ArrayRef<int64_t> x = shapeOf(op.getInput());
    SmallVector<int64_t> lead = addFactors(rule, x.drop_back());
    int64_t d = rule.addFactor(x.back(), FactorKind::NeedReplication);
    lead.push_back(d);
    rule.addOperand(lead);
    rule.addOperand({d});
    rule.addResult(lead);
    return rule;
  }
};

/// A row-major reshape: the dimensions of input and output are grouped
/// where their running products meet. In a group that splits one dimension
/// into several (or merges several into one), each of the finer dimensions
/// is a factor and the coarse one is their product, outermost first; any
/// other group is one factor that stays whole. Pending sums pass through
/// (a reshape is linear).
struct ReshapeRule : NoLocalize {
  static ShardingRule rule(ReshapeOp op) {
    ShardingRule rule;
    rule.setKeepsPartial();
    ArrayRef<int64_t> in = shapeOf(op.getInput()),
                      out = shapeOf(op.getResult());
    ShardingRule::TensorFactors inDims(in.size()), outDims(out.size());
    size_t i = 0, o = 0;
    while (i < in.size() && o < out.size()) {
      if (in[i] == 1 || out[o] == 1) {
        i += in[i] == 1;
        o += out[o] == 1;
        continue;
      }
      size_t i0 = i, o0 = o;
      int64_t pi = in[i++], po = out[o++];
      while (pi != po)
        pi < po ? pi *= in[i++] : po *= out[o++];
      addGroup(rule, in, i0, i, inDims, out, o0, o, outDims);
    }
    rule.addOperandDims(inDims);
    rule.addResultDims(outDims);
    return rule;
  }

  /// The factors of the group in[i0, i1) = out[o0, o1).
  static void addGroup(ShardingRule &rule, ArrayRef<int64_t> in, size_t i0,
                       size_t i1, ShardingRule::TensorFactors &inDims,
                       ArrayRef<int64_t> out, size_t o0, size_t o1,
                       ShardingRule::TensorFactors &outDims) {
    SmallVector<size_t> inSplit, outSplit;
    for (size_t d = i0; d < i1; ++d)
      if (in[d] > 1)
        inSplit.push_back(d);
    for (size_t d = o0; d < o1; ++d)
      if (out[d] > 1)
        outSplit.push_back(d);
    if (inSplit.size() > 1 && outSplit.size() > 1) {
      int64_t whole = 1;
      for (size_t d : inSplit)
        whole *= in[d];
      int64_t f = rule.addFactor(whole, FactorKind::NeedReplication);
      inDims[inSplit.front()] = {f};
      outDims[outSplit.front()] = {f};
      return;
    }
    bool inIsFine = inSplit.size() >= outSplit.size();
    ArrayRef<int64_t> fineShape = inIsFine ? in : out;
    ShardingRule::TensorFactors &fine = inIsFine ? inDims : outDims;
    ShardingRule::TensorFactors &coarse = inIsFine ? outDims : inDims;
    size_t coarseDim = inIsFine ? outSplit.front() : inSplit.front();
    for (size_t d : inIsFine ? inSplit : outSplit) {
      int64_t f = rule.addFactor(fineShape[d]);
      fine[d] = {f};
      coarse[coarseDim].push_back(f);
    }
  }
};

/// A dimension a box takes whole passes its sharding through; a cut one
/// stays whole on both sides (a box of a split dimension would span
/// ranks).
ShardingRule boxRule(ArrayRef<int64_t> whole, ArrayRef<int64_t> box,
                     bool wholeIsOperand) {
  ShardingRule rule;
  SmallVector<int64_t> wholeFactors, boxFactors;
  for (auto [w, p] : llvm::zip(whole, box)) {
    if (w == p) {
      wholeFactors.push_back(rule.addFactor(w));
      boxFactors.push_back(wholeFactors.back());
      continue;
    }
    wholeFactors.push_back(rule.addFactor(w, FactorKind::NeedReplication));
    boxFactors.push_back(rule.addFactor(p, FactorKind::NeedReplication));
  }
  rule.addOperand(wholeIsOperand ? wholeFactors : boxFactors);
  rule.addResult(wholeIsOperand ? boxFactors : wholeFactors);
  return rule;
}

struct SliceRule : NoLocalize {
  static ShardingRule rule(SliceOp op) {
    return boxRule(shapeOf(op.getInput()), shapeOf(op.getResult()), true);
  }
};

struct SliceGradRule : NoLocalize {
  static ShardingRule rule(SliceGradOp op) {
    return boxRule(shapeOf(op.getResult()), shapeOf(op.getGrad()), false);
  }
};

/// Every dimension but `dim` is shared by the inputs and the result; the
/// joined one stays whole.
struct ConcatRule : NoLocalize {
  static ShardingRule rule(ConcatOp op) {
    ShardingRule rule;
    ArrayRef<int64_t> out = shapeOf(op.getResult());
    SmallVector<int64_t> shared;
    for (auto [d, size] : llvm::enumerate(out))
      shared.push_back(
          int64_t(d) == int64_t(op.getDim()) ? -1 : rule.addFactor(size));
    auto withJoined = [&](int64_t size) {
      SmallVector<int64_t> f(shared);
      f[op.getDim()] = rule.addFactor(size, FactorKind::NeedReplication);
      return f;
    };
    for (Value input : op.getInputs())
      rule.addOperand(withJoined(shapeOf(input)[op.getDim()]));
    rule.addResult(withJoined(out[op.getDim()]));
    return rule;
  }
};

/// input [B, S, H, Dh], freqs_cis [S, Dh/2, 2]: the pairs of Dh and the
/// table's (cos, sin) stay whole; the sequence is shared with the table.
struct RopeRule : NoLocalize {
  static ShardingRule rule(RopeOp op) {
    ShardingRule rule;
    ArrayRef<int64_t> x = shapeOf(op.getInput());
    ArrayRef<int64_t> table = shapeOf(op.getFreqsCis());
    int64_t b = rule.addFactor(x[0]), s = rule.addFactor(x[1]);
    int64_t h = rule.addFactor(x[2]);
    int64_t d = rule.addFactor(x[3], FactorKind::NeedReplication);
    int64_t pairs = rule.addFactor(table[1], FactorKind::NeedReplication);
    int64_t cosSin = rule.addFactor(table[2], FactorKind::NeedReplication);
    rule.addOperand({b, s, h, d});
    rule.addOperand({s, pairs, cosSin});
    rule.addResult({b, s, h, d});
    return rule;
  }
};

/// q [B, S, Hq, Dh], k and v [B, Skv, Hkv, Dh] (, document_starts [B, S])
/// -> out [B, S, Hq, Dh], lse [B, Hq, S], with Hq = Hkv x G (query heads
/// grouped by their kv head). The key sequence is contracted through the
/// softmax: it may be split only over the axes that split the sequence
/// (context parallel), whose ring attention `localize` builds. The
/// document starts stay whole along the sequence (a position's start may
/// lie in any earlier chunk).
struct AttentionRule {
  static constexpr int64_t kKeySequence = 2;
  static ShardingRule rule(AttentionOp op) {
    ShardingRule rule;
    ArrayRef<int64_t> q = shapeOf(op.getQuery()), k = shapeOf(op.getKey());
    int64_t b = rule.addFactor(q[0]), s = rule.addFactor(q[1]);
    int64_t skv = rule.addLocalFactor(
        k[1],
        mesh::axesWhere([](const mesh::AxisInfo &a) { return a.sequence; }));
    int64_t hkv = rule.addFactor(k[2]);
    SmallVector<int64_t, 2> heads{hkv};
    if (q[2] != k[2])
      heads.push_back(rule.addFactor(q[2] / k[2]));
    int64_t d = rule.addFactor(q[3], FactorKind::NeedReplication);
    rule.addOperandDims({{b}, {s}, heads, {d}});
    rule.addOperandDims({{b}, {skv}, {hkv}, {d}});
    rule.addOperandDims({{b}, {skv}, {hkv}, {d}});
    if (op.getDocumentStarts())
      rule.addOperandDims(
          {{b}, {rule.addFactor(q[1], FactorKind::NeedReplication)}});
    rule.addResultDims({{b}, {s}, heads, {d}});
    rule.addResultDims({{b}, heads, {s}});
    return rule;
  }
  static LogicalResult localize(AttentionOp op, ShardingLocalizer &l) {
    ArrayRef<StringRef> axes = l.getFactorAxes(kKeySequence);
    if (axes.empty())
      return success();
    // The ring skips the blocks the causal mask excludes by the chunks'
    // places, which it knows only for the load-balanced split.
    MeshAttr mesh = getMesh(op);
    if (!mesh || !mesh.getSplitLayout(axes).loadBalanced) {
      InFlightDiagnostic diag = op.emitOpError()
                                << "splits its key sequence over ";
      llvm::interleaveComma(
          axes, diag, [&](StringRef axis) { diag << "'" << axis << "'"; });
      return diag << ", which the mesh splits contiguously: context "
                     "parallel's ring attention needs the sequence split "
                     "load-balanced (#dist.mesh's load_balanced)";
    }
    OpBuilder &b = l.getBuilder();
    auto ring = RingAttentionOp::create(
        b, op.getLoc(), op.getResult().getType(), op.getLse().getType(),
        op.getQuery(), op.getKey(), op.getValue(), op.getDocumentStarts(),
        b.getStrArrayAttr(axes),
        RotateMethodAttr::get(b.getContext(), l.getRotateMethod()),
        op.getScaleAttr());
    l.replaceOp(op, ring.getResults());
    return success();
  }
};

/// logits [..., V], labels [...] -> the mean over the rows, and lse [...]:
/// every row factor is contracted for the loss (a partial mean) and passes
/// through to the lse; the vocabulary must stay whole.
struct CrossEntropyRule : NoLocalize {
  static ShardingRule rule(CrossEntropyOp op) {
    ShardingRule rule;
    ArrayRef<int64_t> logits = shapeOf(op.getLogits());
    SmallVector<int64_t> rows;
    for (int64_t size : logits.drop_back())
      rows.push_back(
          rule.addFactor(size, FactorKind::Reduction, ReductionKind::Avg));
    SmallVector<int64_t> withVocab(rows);
    withVocab.push_back(
        rule.addFactor(logits.back(), FactorKind::NeedReplication));
    rule.addOperand(withVocab);
    rule.addOperand(rows);
    rule.addResult({});
    rule.addResult(rows);
    return rule;
  }
};

/// Per-row statistics of vocabulary-sharded logits (loss parallel): the
/// vocabulary is contracted, by a maximum or a sum.
template <typename Op, ReductionKind Kind> struct RowStatRule : NoLocalize {
  static ShardingRule rule(Op op) {
    return rowStatRule(op, shapeOf(op.getResult()), Kind);
  }
};

struct TargetLogitRule {
  static ShardingRule rule(TargetLogitOp op) {
    return rowStatRule(op, shapeOf(op.getResult()), ReductionKind::Sum);
  }
  static LogicalResult localize(TargetLogitOp op, ShardingLocalizer &l) {
    int64_t vocab = shapeOf(op.getResult()).size();
    return localizeVocabulary(op, l, vocab, shapeOf(op.getLogits()).back());
  }
};

/// max, sum of exp, target [...] -> the mean loss over the rows.
struct CrossEntropyFromStatsRule : NoLocalize {
  static ShardingRule rule(CrossEntropyFromStatsOp op) {
    ShardingRule rule;
    SmallVector<int64_t> rows;
    for (int64_t size : shapeOf(op.getOperand(0)))
      rows.push_back(
          rule.addFactor(size, FactorKind::Reduction, ReductionKind::Avg));
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      rule.addOperand(rows);
    rule.addResult({});
    return rule;
  }
};

} // namespace

void titan::dist::registerShardingRuleModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TitanDialect *) {
    EmbeddingOp::attachInterface<Model<EmbeddingOp, EmbeddingRule>>(*ctx);
    LinearOp::attachInterface<Model<LinearOp, LinearRule>>(*ctx);
    Float8LinearOp::attachInterface<Model<Float8LinearOp, Float8LinearRule>>(
        *ctx);
    RMSNormOp::attachInterface<Model<RMSNormOp, RMSNormRule>>(*ctx);
    ReshapeOp::attachInterface<Model<ReshapeOp, ReshapeRule>>(*ctx);
    RopeOp::attachInterface<Model<RopeOp, RopeRule>>(*ctx);
    SliceOp::attachInterface<Model<SliceOp, SliceRule>>(*ctx);
    SliceGradOp::attachInterface<Model<SliceGradOp, SliceGradRule>>(*ctx);
    ConcatOp::attachInterface<Model<ConcatOp, ConcatRule>>(*ctx);
    AttentionOp::attachInterface<Model<AttentionOp, AttentionRule>>(*ctx);
    CrossEntropyOp::attachInterface<Model<CrossEntropyOp, CrossEntropyRule>>(
        *ctx);
    RowMaxOp::attachInterface<
        Model<RowMaxOp, RowStatRule<RowMaxOp, ReductionKind::Max>>>(*ctx);
    SumExpOp::attachInterface<
        Model<SumExpOp, RowStatRule<SumExpOp, ReductionKind::Sum>>>(*ctx);
    TargetLogitOp::attachInterface<Model<TargetLogitOp, TargetLogitRule>>(*ctx);
    CrossEntropyFromStatsOp::attachInterface<
        Model<CrossEntropyFromStatsOp, CrossEntropyFromStatsRule>>(*ctx);
    AddOp::attachInterface<Model<AddOp, ElementwiseRule>>(*ctx);
    MulOp::attachInterface<Model<MulOp, ElementwiseRule>>(*ctx);
    SwiGLUOp::attachInterface<Model<SwiGLUOp, ElementwiseRule>>(*ctx);
    SiLUOp::attachInterface<Model<SiLUOp, ElementwiseRule>>(*ctx);
    SqrtOp::attachInterface<Model<SqrtOp, ElementwiseRule>>(*ctx);
    CastOp::attachInterface<Model<CastOp, ElementwiseRule>>(*ctx);
    RopeAnglesOp::attachInterface<Model<RopeAnglesOp, ConstantRule>>(*ctx);
    FillOp::attachInterface<Model<FillOp, ConstantRule>>(*ctx);
  });
}
