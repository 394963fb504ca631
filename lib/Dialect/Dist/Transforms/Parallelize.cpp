//===- Parallelize.cpp - choose the mesh and shard the parameters ---------===//

#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/Parameters.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTPARALLELIZE
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// How tensor parallelism splits a parameter (TorchTitan's Llama plan).
enum class TPStyle { Colwise, Rowwise, Replicated };

/// The plan entry for a parameter, matched on the end of its name as
/// TorchTitan's `parallelize_module` plan matches module names; nullopt for
/// a parameter the plan does not know.
std::optional<TPStyle> tensorParallelStyle(StringRef name) {
  name.consume_back(".weight");
  StringRef leaf = name.substr(name.rfind('.') + 1); // npos + 1 == 0
  // The embedding is split by vocabulary (rows), as a column-wise linear.
  if (llvm::is_contained({"wq", "wk", "wv", "w1", "w3", "output"}, leaf) ||
      name == "tok_embeddings")
    return TPStyle::Colwise;
  if (llvm::is_contained({"wo", "w2"}, leaf))
    return TPStyle::Rowwise;
  // Norm weights are replicated; sequence parallel shards their inputs.
  if (leaf.ends_with("norm"))
    return TPStyle::Replicated;
  return std::nullopt;
}

struct DistParallelizePass
    : titan::dist::impl::DistParallelizeBase<DistParallelizePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = lookupFunction(module, forwardName, "dist-parallelize");
    if (!forward)
      return signalPassFailure();
    if (cp > 1) {
      module.emitError() << "dist-parallelize: cp degree " << int64_t(cp)
                         << " is not supported yet (FSDP, HSDP, DDP, "
                            "tensor/sequence and pipeline parallel are)";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    auto mesh = MeshAttr::getChecked(
        [&] { return module.emitError(); }, ctx, int64_t(pp),
        int64_t(dpReplicate), int64_t(dpShard), int64_t(cp), int64_t(tp));
    if (!mesh)
      return signalPassFailure();
    module->setAttr(DistDialect::kMeshAttrName, mesh);
    if (dpShard == 1 && tp == 1)
      return;

    Builder b(ctx);
    for (const ParameterArgument &p : getParameterArguments(forward)) {
      // Dimension 0 is split by tensor parallel (outer) then FSDP (inner):
      // FSDP shards the tensor-parallel local shard, as TorchTitan's 2-D
      // FSDP does.
      SmallVector<SmallVector<StringRef>> dims(p.type.getRank());
      if (tp > 1) {
        std::optional<TPStyle> style = tensorParallelStyle(p.name.getValue());
        if (!style) {
          forward.emitOpError()
              << "parameter '" << p.name.getValue()
              << "' has no tensor-parallel plan (known: wq, wk, wv, wo, w1, "
                 "w2, w3, output, tok_embeddings and *norm weights)";
          return signalPassFailure();
        }
        if (*style == TPStyle::Colwise)
          dims[0].push_back("tp");
        else if (*style == TPStyle::Rowwise) {
          if (p.type.getRank() != 2) {
            forward.emitOpError() << "row-wise parameter '" << p.name.getValue()
                                  << "' must be 2-D";
            return signalPassFailure();
          }
          dims[1].push_back("tp");
        }
      }
      if (dpShard > 1)
        dims[0].push_back("dp_shard");
      if (llvm::all_of(dims, [](auto &axes) { return axes.empty(); }))
        continue;
      SmallVector<Attribute> dimAttrs;
      for (auto &axes : dims)
        dimAttrs.push_back(b.getStrArrayAttr(axes));
      // Trailing unsplit dimensions are left out, as the attribute prints.
      while (dimAttrs.size() > 1 && cast<ArrayAttr>(dimAttrs.back()).empty())
        dimAttrs.pop_back();
      auto sharding = ShardingAttr::get(ctx, b.getArrayAttr(dimAttrs));
      std::string reason;
      if (failed(sharding.getLocalShape(p.type.getShape(), mesh, &reason))) {
        forward.emitOpError()
            << "parameter '" << p.name.getValue() << "' cannot be sharded as "
            << sharding << ": " << reason;
        return signalPassFailure();
      }
      forward.setArgAttr(p.index, DistDialect::kShardingAttrName, sharding);
    }
  }
};
} // namespace
