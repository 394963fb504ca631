//===- Passes.h - kernel IR passes ------------------------------*- C++ -*-===//

#ifndef TITAN_DIALECT_KERNEL_TRANSFORMS_PASSES_H
#define TITAN_DIALECT_KERNEL_TRANSFORMS_PASSES_H

#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"

#include "mlir/Pass/Pass.h"

namespace titan::kernel {

#define GEN_PASS_DECL
#include "titan/Dialect/Kernel/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "titan/Dialect/Kernel/Transforms/Passes.h.inc"

} // namespace titan::kernel

#endif // TITAN_DIALECT_KERNEL_TRANSFORMS_PASSES_H
