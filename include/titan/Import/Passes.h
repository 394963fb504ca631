//===- Passes.h - the Llama plan's passes -----------------------*- C++ -*-===//
//
// TorchTitan's plans for Llama as passes: on hand-written IR (the importer
// attaches the parallel plan itself) and, for the stage split, in the
// pipeline-parallel training pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_IMPORT_PASSES_H
#define TITAN_IMPORT_PASSES_H

#include "mlir/Pass/Pass.h"

namespace titan {

#define GEN_PASS_DECL
#include "titan/Import/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "titan/Import/Passes.h.inc"

} // namespace titan

#endif // TITAN_IMPORT_PASSES_H
