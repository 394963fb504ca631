//===- DistPlan.h - the attributes of a model's parallel plan ---*- C++ -*-===//
//
// The names of the discardable attributes a model plan attaches to a
// forward function (lib/Import/LlamaPlan.cpp writes TorchTitan's plan for
// Llama) and the dist passes read, so that no pass needs a parameter's or a
// module's name. #dist.param_plan itself is defined in DistPlan.td.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_DIST_IR_DISTPLAN_H
#define TITAN_DIALECT_DIST_IR_DISTPLAN_H

#include "llvm/ADT/StringRef.h"

namespace titan::dist {

/// Argument attribute (#dist.param_plan) of a parameter: its
/// tensor-parallel style and transformer block (dist-parallelize,
/// dist-partition).
inline constexpr llvm::StringLiteral kParamPlanAttrName = "dist.param_plan";

/// Operation attribute (i64 d): under tensor parallelism the op's result is
/// the residual stream, split along dimension d (the sequence) over cp and
/// tp (sequence parallel: TorchTitan's `output_layouts=Shard(1)` of the
/// embedding and the row-wise linears).
inline constexpr llvm::StringLiteral kSequenceParallelAttrName =
    "dist.sequence_parallel";

/// Argument attribute (i64 d): context parallel splits this input along
/// dimension d, its sequence (TorchTitan's context-parallel buffers).
inline constexpr llvm::StringLiteral kContextParallelAttrName =
    "dist.context_parallel";

/// Operation attribute (unit) of a cross-entropy: under tensor parallelism
/// it may read vocabulary-sharded logits (TorchTitan's loss parallel).
inline constexpr llvm::StringLiteral kLossParallelAttrName =
    "dist.loss_parallel";

/// Keys of the module's dist.pipeline that a pipeline plan writes for
/// dist-pipeline-split (which removes them once it has cut the stages):
/// the modules of each stage (an array of arrays of module names, one per
/// stage) ...
inline constexpr llvm::StringLiteral kStageModulesKey = "stage_modules";
/// ... and those computed again in every stage that reads them (an array
/// of module names).
inline constexpr llvm::StringLiteral kEveryStageModulesKey =
    "every_stage_modules";

} // namespace titan::dist

#endif // TITAN_DIALECT_DIST_IR_DISTPLAN_H
