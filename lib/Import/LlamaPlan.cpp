//===- LlamaPlan.cpp - TorchTitan's parallel plan for Llama ---------------===//
//
// apply_tp's plan matched on the end of each parameter's name, as
// parallelize_module matches module names; apply_fsdp's units (one per
// transformer block, the rest in the root); the context-parallel buffers
// (the tokens and labels). The titan-llama-plan pass attaches the same plan
// to IR written by hand.
//
//===----------------------------------------------------------------------===//

#include "titan/Import/LlamaPlan.h"

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Dist/IR/DistPlan.h"
#include "titan/Dialect/Titan/IR/ModuleNames.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Import/Passes.h"

#include "mlir/IR/Builders.h"

namespace titan {
#define GEN_PASS_DEF_TITANLLAMAPLAN
#include "titan/Import/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// apply_tp's style for a parameter, or nullopt outside the plan.
std::optional<TensorParallelStyle> tensorParallelStyle(StringRef name) {
  name.consume_back(".weight");
  StringRef leaf = name.substr(name.rfind('.') + 1); // npos + 1 == 0
  // RowwiseParallel on an nn.Embedding splits its vocabulary.
  if (name == "tok_embeddings")
    return TensorParallelStyle::Embedding;
  if (llvm::is_contained({"wq", "wk", "wv", "w1", "w3", "output"}, leaf))
    return TensorParallelStyle::Colwise;
  if (llvm::is_contained({"wo", "w2"}, leaf))
    return TensorParallelStyle::Rowwise;
  // SequenceParallel norms: the weight is replicated.
  if (leaf.ends_with("norm"))
    return TensorParallelStyle::Replicate;
  return std::nullopt;
}

/// Whether `op` computes the output of a module whose plan has
/// output_layouts=Shard(1): the embedding, and the row-wise linears (wo,
/// w2) that end the attention and the feed-forward.
bool endsSequenceParallelModule(
    Operation *op, const DenseMap<Value, TensorParallelStyle> &styles) {
  auto styleOf = [&](Value weight) -> std::optional<TensorParallelStyle> {
    auto it = styles.find(weight);
    if (it == styles.end())
      return std::nullopt;
    return it->second;
  };
  if (auto embedding = dyn_cast<EmbeddingOp>(op))
    return styleOf(embedding.getWeight()) == TensorParallelStyle::Embedding;
  if (isa<LinearOp, Float8LinearOp>(op))
    return styleOf(op->getOperand(1)) == TensorParallelStyle::Rowwise;
  return false;
}

struct TitanLlamaPlanPass
    : titan::impl::TitanLlamaPlanBase<TitanLlamaPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp forward =
        lookupFunction(getOperation(), forwardName, "titan-llama-plan");
    if (!forward)
      return signalPassFailure();
    attachLlamaParallelPlan(forward);
  }
};

} // namespace

void titan::attachLlamaParallelPlan(func::FuncOp forward) {
  MLIRContext *ctx = forward.getContext();
  Builder b(ctx);
  DenseMap<Value, TensorParallelStyle> styles;
  for (const ParameterArgument &p : getParameterArguments(forward)) {
    StringRef name = p.name.getValue();
    std::optional<TensorParallelStyle> style = tensorParallelStyle(name);
    if (style)
      styles[forward.getArgument(p.index)] = *style;
    forward.setArgAttr(p.index, kParamPlanAttrName,
                       ParamPlanAttr::get(ctx, style, getLayerIndex(name)));
  }
  // Context parallel splits the tokens and labels (batch x seq) along
  // their sequence; the document starts stay whole (a position's document
  // may start in an earlier chunk).
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
    auto type = dyn_cast<RankedTensorType>(forward.getArgumentTypes()[i]);
    auto input =
        forward.getArgAttrOfType<StringAttr>(i, TitanDialect::kInputAttrName);
    if (input && input.getValue() != "document_starts" && type &&
        type.getRank() > 0)
      forward.setArgAttr(i, kContextParallelAttrName,
                         b.getI64IntegerAttr(type.getRank() - 1));
  }
  forward.walk([&](Operation *op) {
    if (endsSequenceParallelModule(op, styles))
      op->setAttr(kSequenceParallelAttrName, b.getI64IntegerAttr(1));
    // The output projection's logits stay split by vocabulary
    // (output_layouts=Shard(-1)) for the loss.
    if (isa<CrossEntropyOp>(op))
      op->setAttr(kLossParallelAttrName, b.getUnitAttr());
  });
}
