//===- Programs.h - a job's planned per-rank programs -----------*- C++ -*-===//
//
// A job's programs compiled through the execution phase (scheduled
// collectives and the memory plan, in kernel IR) and no further: what the
// cost model reads. One program for a mesh without pipeline parallelism
// (every rank runs it), one per pipeline rank otherwise. Everything comes
// in as arguments (no command-line state), so --plan can compile many
// candidates in one process.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_PROGRAMS_H
#define TITAN_DRIVER_PROGRAMS_H

#include "titan/Driver/PipelineJob.h"

#include "titan/Compiler/ConfigPipelineOptions.h"
#include "titan/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace titan {
struct LlamaArgs;
struct TrainConfig;

namespace driver {

/// Imports the model the config names, at `batch` x `seqLen` tokens per
/// rank, in training.dtype.
mlir::OwningOpRef<mlir::ModuleOp> importModel(mlir::MLIRContext &context,
                                              const LlamaArgs &model,
                                              const TrainConfig &config,
                                              int64_t batch, int64_t seqLen);

struct PlannedPrograms {
  MeshDegrees mesh;
  const target::TargetBackend *target = nullptr;
  /// The stage plan and schedule under pipeline parallelism.
  std::optional<PipelineJob> pipeline;
  /// The planned kernel-IR module of each distinct program: one, or one
  /// per pipeline rank.
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  /// Under pipeline parallelism each rank's phase functions (its stages'
  /// unshard, forward, backward or I and W, reduce_grad), in order.
  std::vector<std::vector<std::string>> phases;
  /// The parameters' (and so the compute's) type: "bf16" or "f32".
  std::string paramType;
};

/// Compiles `config` for `model` on `mesh` and `target` through the
/// execution phase: partition, training (per pipeline rank under pp) and
/// execution, without the eval step. Errors name the config keys, or carry
/// the compiler's diagnostics (which go nowhere else).
llvm::Expected<PlannedPrograms>
compilePlannedPrograms(mlir::MLIRContext &context, const LlamaArgs &model,
                       const TrainConfig &config, const MeshDegrees &mesh,
                       const target::TargetBackend &target);

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_PROGRAMS_H
