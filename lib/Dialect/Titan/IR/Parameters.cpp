//===- Parameters.cpp - the model parameters of a titan function ----------===//

#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"

using namespace mlir;

SmallVector<titan::ParameterArgument>
titan::getParameterArguments(func::FuncOp func) {
  SmallVector<ParameterArgument> params;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto name =
            func.getArgAttrOfType<StringAttr>(i, TitanDialect::kParamAttrName))
      params.push_back(
          {i, name, cast<RankedTensorType>(func.getArgumentTypes()[i])});
  return params;
}

func::FuncOp titan::lookupFunction(ModuleOp module, StringRef name,
                                   StringRef pass) {
  auto func = module.lookupSymbol<func::FuncOp>(name);
  if (!func)
    module.emitError() << pass << ": no function named '" << name << "'";
  return func;
}
