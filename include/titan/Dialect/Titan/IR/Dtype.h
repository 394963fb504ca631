//===- Dtype.h - MLIR element types as titan::Dtype -------------*- C++ -*-===//
//
// The one mapping between MLIR's element types and titan::Dtype
// (titan/Contract/Dtype.h), whose value is the runtime ABI's code and whose
// name is the kernel catalog's suffix. In the dialect's headers so that
// the kernel contracts can use it as well as the lowering to runtime calls
// and the driver's import, instead of spelling codes or names.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_DTYPE_H
#define TITAN_DIALECT_TITAN_IR_DTYPE_H

#include "titan/Contract/Dtype.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace titan {

/// The Dtype of the element type `t`, or std::nullopt for a type the
/// runtime does not take.
inline std::optional<Dtype> dtypeOf(mlir::Type t) {
  if (t.isF32())
    return Dtype::f32;
  if (t.isF64())
    return Dtype::f64;
  if (t.isBF16())
    return Dtype::bf16;
  if (t.isF16())
    return Dtype::f16;
  if (t.isInteger(32))
    return Dtype::i32;
  if (t.isInteger(64))
    return Dtype::i64;
  if (mlir::isa<mlir::Float8E4M3FNType>(t))
    return Dtype::f8E4M3FN;
  if (mlir::isa<mlir::Float8E5M2Type>(t))
    return Dtype::f8E5M2;
  return std::nullopt;
}

/// The element type of Dtype `d` (signless integers for i32 and i64).
inline mlir::Type typeOf(Dtype d, mlir::MLIRContext *context) {
  switch (d) {
  case Dtype::f32:
    return mlir::Float32Type::get(context);
  case Dtype::f64:
    return mlir::Float64Type::get(context);
  case Dtype::bf16:
    return mlir::BFloat16Type::get(context);
  case Dtype::f16:
    return mlir::Float16Type::get(context);
  case Dtype::i32:
    return mlir::IntegerType::get(context, 32);
  case Dtype::i64:
    return mlir::IntegerType::get(context, 64);
  case Dtype::f8E4M3FN:
    return mlir::Float8E4M3FNType::get(context);
  case Dtype::f8E5M2:
    return mlir::Float8E5M2Type::get(context);
  }
  return {};
}

/// Whether `t` is a float8 element type (f8E4M3FN or f8E5M2).
inline bool isFloat8Type(mlir::Type t) {
  return mlir::isa<mlir::Float8E4M3FNType, mlir::Float8E5M2Type>(t);
}

/// The kernel catalog's code of float8 element type `t` (the `format`,
/// `lhs_format` and `rhs_format` parameters): 0 f8E4M3FN, 1 f8E5M2.
inline int64_t float8FormatCode(mlir::Type t) {
  return mlir::isa<mlir::Float8E5M2Type>(t) ? 1 : 0;
}

} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_DTYPE_H
