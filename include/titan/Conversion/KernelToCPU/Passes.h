//===- Passes.h - kernel IR -> CPU ------------------------------*- C++ -*-===//

#ifndef TITAN_CONVERSION_KERNELTOCPU_PASSES_H
#define TITAN_CONVERSION_KERNELTOCPU_PASSES_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/Pass.h"

namespace titan {

#define GEN_PASS_DECL
#include "titan/Conversion/KernelToCPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "titan/Conversion/KernelToCPU/Passes.h.inc"

} // namespace titan

#endif // TITAN_CONVERSION_KERNELTOCPU_PASSES_H
