//===- Passes.h - titan -> kernel IR ----------------------------*- C++ -*-===//

#ifndef TITAN_CONVERSION_TITANTOKERNEL_PASSES_H
#define TITAN_CONVERSION_TITANTOKERNEL_PASSES_H

#include "titan/Dialect/Kernel/IR/Kernel.h"

#include "mlir/Pass/Pass.h"

namespace titan {

#define GEN_PASS_DECL
#include "titan/Conversion/TitanToKernel/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "titan/Conversion/TitanToKernel/Passes.h.inc"

} // namespace titan

#endif // TITAN_CONVERSION_TITANTOKERNEL_PASSES_H
