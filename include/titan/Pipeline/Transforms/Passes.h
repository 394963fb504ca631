//===- Passes.h - the pipeline schedule's passes ----------------*- C++ -*-===//
//
// dist-pipeline-schedule and dist-pipeline-verify: a schedule's action
// lists (titan/Pipeline/Schedule.h) in the module's dist.pipeline. Declared
// in titan::dist beside the other dist passes, whose attributes they use.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PIPELINE_TRANSFORMS_PASSES_H
#define TITAN_PIPELINE_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace titan::dist {

#define GEN_PASS_DECL
#include "titan/Pipeline/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "titan/Pipeline/Transforms/Passes.h.inc"

} // namespace titan::dist

#endif // TITAN_PIPELINE_TRANSFORMS_PASSES_H
