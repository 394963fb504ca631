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

/// The function `name` of `module`, or null after an error on `module`
/// naming the pass that needs it ("<pass>: no function named '<name>'").
mlir::func::FuncOp lookupFunction(mlir::ModuleOp module, llvm::StringRef name,
                                  llvm::StringRef pass);

} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_PARAMETERS_H
