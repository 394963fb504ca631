//===- Passes.h - dist dialect passes ---------------------------*- C++ -*-===//

#ifndef TITAN_DIALECT_DIST_TRANSFORMS_PASSES_H
#define TITAN_DIALECT_DIST_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "titan/Dialect/Dist/IR/Dist.h"

namespace titan::dist {

#define GEN_PASS_DECL
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"

} // namespace titan::dist

#endif // TITAN_DIALECT_DIST_TRANSFORMS_PASSES_H
