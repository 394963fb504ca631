//===- Parameters.h - the model parameters of a titan function --*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_PARAMETERS_H
#define TITAN_DIALECT_TITAN_IR_PARAMETERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace titan {

/// A function argument tagged `titan.param`.
struct ParameterArgument {
  unsigned index;
  mlir::StringAttr name;
  mlir::RankedTensorType type;
};

/// The arguments of `func` tagged `titan.param`, in argument order.
llvm::SmallVector<ParameterArgument>
getParameterArguments(mlir::func::FuncOp func);

/// The state slot a step argument or result lives in, from its titan
/// attributes: "param:<name>", "grad:<name>", "exp_avg:<name>",
/// "exp_avg_sq:<name>", "input:<name>" or "output:<name>"; std::nullopt for
/// an untagged value.
std::optional<std::string> getStateSlot(mlir::DictionaryAttr attrs);

/// The function `name` of `module`, or null after an error on `module`
/// naming the pass that needs it ("<pass>: no function named '<name>'").
mlir::func::FuncOp lookupFunction(mlir::ModuleOp module, llvm::StringRef name,
                                  llvm::StringRef pass);

} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_PARAMETERS_H
