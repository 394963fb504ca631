//===- Summary.h - the summary stage's reports ------------------*- C++ -*-===//
//
// The summary stage (titan-compile --emit=summary): model, step and
// parallelism facts read off the imported IR, Float8's plan, and what one
// rank holds and sends.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_SUMMARY_H
#define TITAN_DRIVER_SUMMARY_H

#include "titan/Compiler/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace titan {
struct LlamaArgs;
struct TrainConfig;

namespace driver {

/// Prints the model, training-step and parallelism facts of a compile job;
/// parameter and op counts are read off the imported IR.
void printSummary(const LlamaArgs &args, const TrainConfig &config,
                  mlir::ModuleOp module, llvm::raw_ostream &os);

/// Float8's plan: the recipe, how many linears run in float8, and each one
/// kept in high precision with the reason (titan-float8, run with
/// `options` on a copy of the imported `module`, and its remarks).
void printFloat8Plan(mlir::ModuleOp module,
                     const PartitionPipelineOptions &options,
                     llvm::raw_ostream &os);

/// Prints what one rank holds and communicates per step, read off the
/// differentiated per-rank program (`forward_backward`, `optimizer_step`,
/// `eval`): parameter, gradient and AdamW bytes, the planned peak
/// `arenaBytes` (and `hostArenaBytes`, training.enable_cpu_offload's pinned
/// host memory, when not 0), and each collective's count and payload per kind
/// and mesh axes.
void printPerRankPlan(mlir::ModuleOp module, int64_t arenaBytes,
                      int64_t hostArenaBytes, llvm::raw_ostream &os);
} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_SUMMARY_H
