//===- TitanOps.h - titan dialect ops ---------------------------*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_TITANOPS_H
#define TITAN_DIALECT_TITAN_IR_TITANOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "titan/Dialect/Titan/IR/AdjointInterface.h"
#include "titan/Dialect/Titan/IR/KernelInterface.h"
#include "titan/Dialect/Titan/IR/PointwiseInterface.h"
#include "titan/Dialect/Titan/IR/RowwiseInterface.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"

#include "titan/Dialect/Titan/IR/TitanOpsEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "titan/Dialect/Titan/IR/TitanOpsAttributes.h.inc"

#define GET_OP_CLASSES
#include "titan/Dialect/Titan/IR/TitanOps.h.inc"

namespace titan {
/// The type kernels accumulate `element` in, which softmax statistics (the
/// log-sum-exp of titan.attention and titan.cross_entropy) are kept in: f64
/// for f64, else f32.
mlir::FloatType getAccumulatorType(mlir::Type element);
} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_TITANOPS_H
