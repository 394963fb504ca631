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

/// An attention op's optional `document_starts` (TorchTitan's block-causal
/// mask), when present: i32 (the ODS type says so) B x `positions`, B the
/// query's batch and `positions` the whole sequence's (the query's own for
/// titan.attention; its rows times the context-parallel group for the
/// dist ring and block ops).
mlir::LogicalResult verifyDocumentStarts(mlir::Operation *op, mlir::Value query,
                                         mlir::Value starts, int64_t positions);
} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_TITANOPS_H
