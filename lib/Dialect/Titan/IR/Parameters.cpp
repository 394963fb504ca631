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

bool titan::ParameterValues::contains(Value v) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  bool result;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    result = func &&
             func.getArgAttr(arg.getArgNumber(), TitanDialect::kParamAttrName);
  } else {
    Operation *def = v.getDefiningOp();
    result = def->getNumRegions() == 0 &&
             llvm::all_of(def->getOperands(),
                          [&](Value operand) { return contains(operand); });
  }
  return memo[v] = result;
}

func::FuncOp titan::lookupFunction(ModuleOp module, StringRef name,
                                   StringRef pass) {
  auto func = module.lookupSymbol<func::FuncOp>(name);
  if (!func)
    module.emitError() << pass << ": no function named '" << name << "'";
  return func;
}

std::optional<std::string> titan::getStateSlot(DictionaryAttr attrs) {
  if (!attrs)
    return std::nullopt;
  static constexpr std::pair<StringLiteral, StringLiteral> kinds[] = {
      {TitanDialect::kParamAttrName, "param:"},
      {TitanDialect::kGradAttrName, "grad:"},
      {TitanDialect::kExpAvgAttrName, "exp_avg:"},
      {TitanDialect::kExpAvgSqAttrName, "exp_avg_sq:"},
      {TitanDialect::kInputAttrName, "input:"},
      {TitanDialect::kOutputAttrName, "output:"}};
  for (auto [attr, prefix] : kinds)
    if (auto name = attrs.getAs<StringAttr>(attr))
      return (prefix + name.getValue()).str();
  return std::nullopt;
}
