//===- LlamaImporter.cpp - Llama model -> titan IR ------------------------===//
//
// Mirrors TorchTitan's llama3 Transformer.forward op for op, so that a
// parameter, an activation or a diagnostic can be traced back to the module
// it belongs to, and attaches TorchTitan's parallel plan (LlamaPlan.h).
//
//===----------------------------------------------------------------------===//

#include "titan/Import/LlamaImporter.h"

#include "titan/Contract/LlamaArgs.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Import/LlamaPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace titan;

namespace {

class LlamaBuilder {
public:
  LlamaBuilder(MLIRContext &ctx, const LlamaArgs &args,
               const ImportOptions &options)
      : ctx(ctx), b(&ctx), args(args), batch(options.batchSize),
        seq(options.seqLen),
        elt(options.elementType ? options.elementType : b.getF32Type()) {}

  OwningOpRef<ModuleOp> build(StringRef funcName) {
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc(args.name));
    std::vector<ParamSpec> specs = llamaParameters(args);

    SmallVector<Type> argTypes;
    SmallVector<Attribute> argAttrs;
    for (const ParamSpec &p : specs) {
      argTypes.push_back(RankedTensorType::get(p.shape, elt));
      argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          TitanDialect::kParamAttrName, b.getStringAttr(p.name))));
    }
    Type tokenType = RankedTensorType::get({batch, seq}, b.getI32Type());
    SmallVector<StringRef, 3> inputs = {"tokens", "labels"};
    // TorchTitan's block-causal mask: each position's document start, which
    // the runtime computes from the tokens and the tokenizer's EOS id.
    if (args.documentMasked())
      inputs.push_back("document_starts");
    for (StringRef input : inputs) {
      argTypes.push_back(tokenType);
      argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          TitanDialect::kInputAttrName, b.getStringAttr(input))));
    }
    Type lossType = RankedTensorType::get({}, b.getF32Type());

    b.setInsertionPointToEnd(module->getBody());
    auto func = func::FuncOp::create(b, loc(args.name), funcName,
                                     b.getFunctionType(argTypes, lossType));
    func.setAllArgAttrs(argAttrs);
    Block *entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);

    for (auto [spec, value] : llvm::zip(specs, entry->getArguments()))
      params[spec.name] = value;
    Value tokens = entry->getArgument(specs.size());
    Value labels = entry->getArgument(specs.size() + 1);
    if (args.documentMasked())
      documentStarts = entry->getArgument(specs.size() + 2);

    Value h = EmbeddingOp::create(b, loc("tok_embeddings"), act({args.dim}),
                                  param("tok_embeddings"), tokens,
                                  /*vocab_start=*/Value());
    angles = buildRopeAngles();
    for (int64_t i = 0; i < args.nLayers; ++i)
      h = buildBlock("layers." + std::to_string(i), h);
    h = rmsNorm("norm", h);
    Value logits = linear(args.tieWordEmbeddings ? "tok_embeddings" : "output",
                          h, args.vocabSize);
    auto lseType = RankedTensorType::get(
        cast<RankedTensorType>(labels.getType()).getShape(),
        getAccumulatorType(elt));
    Value loss = CrossEntropyOp::create(b, loc("loss"), lossType, lseType,
                                        logits, labels)
                     .getResult();
    func::ReturnOp::create(b, loc("loss"), loss);
    attachLlamaParallelPlan(func);
    return module;
  }

private:
  Location loc(StringRef name) { return NameLoc::get(b.getStringAttr(name)); }

  /// Activation type batch x seq x trailing.
  RankedTensorType act(ArrayRef<int64_t> trailing) {
    SmallVector<int64_t> shape = {batch, seq};
    shape.append(trailing.begin(), trailing.end());
    return RankedTensorType::get(shape, elt);
  }

  Value param(StringRef module) {
    return params.at((module + ".weight").str());
  }

  Value linear(StringRef module, Value x, int64_t outFeatures) {
    return LinearOp::create(b, loc(module), act({outFeatures}), x,
                            param(module));
  }

  Value rmsNorm(StringRef module, Value x) {
    return RMSNormOp::create(b, loc(module), x.getType(), x, param(module),
                             b.getF64FloatAttr(args.normEps));
  }

  Value reshape(StringRef module, Value x, ArrayRef<int64_t> trailing) {
    return ReshapeOp::create(b, loc(module), act(trailing), x);
  }

  Value buildRopeAngles() {
    auto type =
        RankedTensorType::get({seq, args.headDim() / 2, 2}, b.getF32Type());
    auto op = RopeAnglesOp::create(b, loc("freqs_cis"), type,
                                   b.getF64FloatAttr(args.ropeTheta), nullptr,
                                   nullptr, nullptr, nullptr);
    if (const auto &s = args.ropeScaling) {
      op.setScalingFactorAttr(b.getF64FloatAttr(s->scalingFactor));
      op.setLowFreqFactorAttr(b.getF64FloatAttr(s->lowFreqFactor));
      op.setHighFreqFactorAttr(b.getF64FloatAttr(s->highFreqFactor));
      op.setOriginalMaxPositionEmbeddingsAttr(
          b.getI64IntegerAttr(s->originalMaxPositionEmbeddings));
    }
    return op;
  }

  /// One TransformerBlock: h + attention(norm(h)), then + ffn(norm(.)).
  Value buildBlock(const std::string &prefix, Value h) {
    int64_t hd = args.headDim();
    std::string attn = prefix + ".attention";
    Value x = rmsNorm(prefix + ".attention_norm", h);
    Value q = linear(attn + ".wq", x, args.nHeads * hd);
    Value k = linear(attn + ".wk", x, args.nKvHeads * hd);
    Value v = linear(attn + ".wv", x, args.nKvHeads * hd);
    q = reshape(attn, q, {args.nHeads, hd});
    k = reshape(attn, k, {args.nKvHeads, hd});
    v = reshape(attn, v, {args.nKvHeads, hd});
    q = RopeOp::create(b, loc(attn), q.getType(), q, angles);
    k = RopeOp::create(b, loc(attn), k.getType(), k, angles);
    auto lseType =
        RankedTensorType::get({batch, args.nHeads, seq}, b.getF32Type());
    Value o = AttentionOp::create(b, loc(attn), q.getType(), lseType, q, k, v,
                                  documentStarts,
                                  b.getF64FloatAttr(1.0 / std::sqrt(hd)))
                  .getResult();
    o = reshape(attn, o, {args.nHeads * hd});
    o = linear(attn + ".wo", o, args.dim);
    h = AddOp::create(b, loc(prefix), h, o);

    std::string ffn = prefix + ".feed_forward";
    x = rmsNorm(prefix + ".ffn_norm", h);
    Value gate = linear(ffn + ".w1", x, args.ffnHidden);
    Value up = linear(ffn + ".w3", x, args.ffnHidden);
    Value a = SwiGLUOp::create(b, loc(ffn), gate, up);
    Value f = linear(ffn + ".w2", a, args.dim);
    return AddOp::create(b, loc(prefix), h, f);
  }

  MLIRContext &ctx;
  OpBuilder b;
  const LlamaArgs &args;
  int64_t batch, seq;
  Type elt;
  llvm::StringMap<Value> params;
  Value angles;
  /// The block-causal mask's input (null: causal over the whole sequence).
  Value documentStarts;
};

} // namespace

OwningOpRef<ModuleOp> titan::importLlama(MLIRContext &context,
                                         const LlamaArgs &args,
                                         const ImportOptions &options) {
  context.loadDialect<TitanDialect, dist::DistDialect, func::FuncDialect>();
  return LlamaBuilder(context, args, options).build(options.funcName);
}
