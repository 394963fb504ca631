//===- Float8.cpp - TorchTitan's Float8 linear converter ------------------===//
//
// Which linears run in float8: all but those TorchTitan's module_filter_fn
// keeps in high precision.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/ModuleNames.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace titan {
#define GEN_PASS_DEF_TITANFLOAT8
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {

struct TitanFloat8Pass : titan::impl::TitanFloat8Base<TitanFloat8Pass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Float8Recipe> kind = symbolizeFloat8Recipe(recipe);
    if (!kind) {
      module.emitError() << "titan-float8: recipe '" << recipe
                         << "' must be tensorwise, rowwise or "
                            "rowwise_with_gw_hp";
      return signalPassFailure();
    }
    func::FuncOp forward = lookupFunction(module, forwardName, "titan-float8");
    if (!forward)
      return signalPassFailure();
    OpBuilder b(module.getContext());
    auto recipeAttr = Float8RecipeAttr::get(b.getContext(), *kind);
    forward.walk([&](LinearOp linear) {
      std::string name =
          getModuleName(linear.getLoc()).value_or("<unnamed>").str();
      ArrayRef<int64_t> w = linear.getWeight().getType().getShape();
      if (w[0] % 16 != 0 || w[1] % 16 != 0) {
        linear.emitRemark()
            << "titan-float8: '" << name
            << "' stays in high precision: its weight (" << w[0] << " x "
            << w[1] << ") has a dimension not divisible by 16";
        return;
      }
      for (const std::string &fqn : filterFqns)
        if (StringRef(name).contains(fqn)) {
          linear.emitRemark() << "titan-float8: '" << name
                              << "' stays in high precision: filter_fqns "
                                 "names it ('"
                              << fqn << "')";
          return;
        }
      b.setInsertionPoint(linear);
      auto f8 = Float8LinearOp::create(
          b, linear.getLoc(), linear.getType(), linear.getInput(),
          linear.getWeight(), recipeAttr, DenseI64ArrayAttr(), ArrayAttr());
      f8->setDiscardableAttrs(linear->getDiscardableAttrDictionary());
      linear.replaceAllUsesWith(f8.getResult());
      linear.erase();
    });
  }
};

} // namespace
