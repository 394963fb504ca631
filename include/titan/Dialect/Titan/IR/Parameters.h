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

} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_PARAMETERS_H
