//===- Parameters.h - the model parameters of a titan function --*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_PARAMETERS_H
#define TITAN_DIALECT_TITAN_IR_PARAMETERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

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

/// Which values are computed from their function's parameters (arguments
/// tagged `titan.param`) and constants alone, memoized: what a step
/// computes once per step from its weights (FSDP's gathers, low-precision
/// copies, Float8's weight casts) rather than per microbatch. Ops with
/// regions never count. Queries must not outlive the ops they name.
class ParameterValues {
public:
  bool contains(mlir::Value v);

private:
  llvm::DenseMap<mlir::Value, bool> memo;
};

/// The function `name` of `module`, or null after an error on `module`
/// naming the pass that needs it ("<pass>: no function named '<name>'").
mlir::func::FuncOp lookupFunction(mlir::ModuleOp module, llvm::StringRef name,
                                  llvm::StringRef pass);

} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_PARAMETERS_H
