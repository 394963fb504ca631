//===- Passes.h - titan dialect passes --------------------------*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_TRANSFORMS_PASSES_H
#define TITAN_DIALECT_TITAN_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"

namespace titan {

#define GEN_PASS_DECL
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"

} // namespace titan

#endif // TITAN_DIALECT_TITAN_TRANSFORMS_PASSES_H
