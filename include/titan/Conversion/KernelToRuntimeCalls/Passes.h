//===- Passes.h - kernel IR -> calls into the runtime -----------*- C++ -*-===//

#ifndef TITAN_CONVERSION_KERNELTORUNTIMECALLS_PASSES_H
#define TITAN_CONVERSION_KERNELTORUNTIMECALLS_PASSES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/Pass.h"

namespace titan {

#define GEN_PASS_DECL
#include "titan/Conversion/KernelToRuntimeCalls/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "titan/Conversion/KernelToRuntimeCalls/Passes.h.inc"

} // namespace titan

#endif // TITAN_CONVERSION_KERNELTORUNTIMECALLS_PASSES_H
