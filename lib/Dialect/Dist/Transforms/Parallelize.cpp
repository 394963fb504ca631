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
struct DistParallelizePass
    : titan::dist::impl::DistParallelizeBase<DistParallelizePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
    if (!forward) {
      module.emitError() << "dist-parallelize: no function named '"
                         << forwardName << "'";
      return signalPassFailure();
    }
    for (auto [name, degree] :
         {std::pair<StringRef, int64_t>("tp", tp), {"cp", cp}, {"pp", pp}})
      if (degree > 1) {
        module.emitError() << "dist-parallelize: " << name << " degree "
                           << degree
                           << " is not supported yet (data parallel only: "
                              "FSDP, HSDP, DDP)";
        return signalPassFailure();
      }
    MLIRContext *ctx = &getContext();
    auto mesh = MeshAttr::getChecked(
        [&] { return module.emitError(); }, ctx, int64_t(pp),
        int64_t(dpReplicate), int64_t(dpShard), int64_t(cp), int64_t(tp));
    if (!mesh)
      return signalPassFailure();
    module->setAttr(DistDialect::kMeshAttrName, mesh);
    if (dpShard == 1)
      return;

    Builder b(ctx);
    auto sharding = ShardingAttr::get(
        ctx, b.getArrayAttr({b.getStrArrayAttr({"dp_shard"})}));
    for (const ParameterArgument &p : getParameterArguments(forward)) {
      std::string reason;
      if (failed(sharding.getLocalShape(p.type.getShape(), mesh, &reason))) {
        forward.emitOpError()
            << "parameter '" << p.name.getValue() << "' cannot be sharded "
            << int64_t(dpShard) << "-way by FSDP: " << reason;
        return signalPassFailure();
      }
      forward.setArgAttr(p.index, DistDialect::kShardingAttrName, sharding);
    }
  }
};
} // namespace
