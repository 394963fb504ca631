//===- Compilation.h - one compilation's phases and outputs -----*- C++ -*-===//
//
// What emitStage and compileToModule (Driver.h) are made of: one job's
// config, model, options and mesh, the phases run on its modules with the
// pipeline options the config gives (ConfigPipelineOptions.h), and what
// each stage emits, for a job of one program or of one program per
// pipeline rank.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_COMPILATION_H
#define TITAN_DRIVER_COMPILATION_H

#include "titan/Compiler/ConfigPipelineOptions.h"
#include "titan/Compiler/Pipelines.h"
#include "titan/Contract/Manifest.h"
#include "titan/Driver/Driver.h"
#include "titan/Driver/MemoryFit.h"
#include "titan/Driver/PipelineJob.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace titan {
namespace driver {

/// One compilation: the config, the model, the options and their target's
/// backend, the mesh they resolve to, and the timer its phases report to.
class Compilation {
public:
  Compilation(const TrainConfig &config, const LlamaArgs &model,
              const CompileOptions &options,
              const target::TargetBackend &backend, mlir::TimingScope &timer);

  /// The model imported at the shapes a step sees (under pipeline
  /// parallelism one microbatch), verified.
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  importStep(mlir::MLIRContext &context);

  /// Sets `mesh` for options.worldSize ranks (errors name the keys).
  llvm::Error resolveMesh();

  /// The phases of a job with one program. A failed phase's error says
  /// so; its diagnostics went to the context's handler.
  llvm::Error partition(mlir::ModuleOp module);
  /// The training phase and, with validation.enable, the eval step.
  llvm::Error train(mlir::ModuleOp module);
  llvm::Error execute(mlir::ModuleOp module);
  llvm::Error lower(mlir::ModuleOp module);

  /// Everything from the imported `module` on: the phases up to the
  /// stage, its text to `os`, its files at options.outputPath.
  llvm::Error emit(mlir::ModuleOp module, llvm::raw_ostream &os);

  const TrainConfig &config;
  const LlamaArgs &model;
  const CompileOptions &options;
  /// options.target's backend.
  const target::TargetBackend &backend;
  MeshDegrees mesh;

private:
  mlir::TimingScope &timer;

  /// Prints `op` and a newline (an IR stage's output).
  static llvm::Error print(mlir::Operation *op, llvm::raw_ostream &os);
  void partitionOptions(PartitionPipelineOptions &o) const;
  void trainingOptions(TrainingPipelineOptions &o) const;
  void executionOptions(ExecutionPipelineOptions &o) const;
  /// The lowering phase's options: generated kernels for the target's GPU
  /// architecture (--cuda-arch) when its kernels run on a device.
  void loweringOptions(LoweringPipelineOptions &o) const;

  /// Runs the pipeline `build` adds on `module`.
  llvm::Error run(mlir::ModuleOp module,
                  llvm::function_ref<void(mlir::OpPassManager &)> build);
  template <typename Options>
  llvm::Error run(mlir::ModuleOp module,
                  void (*build)(mlir::OpPassManager &, const Options &),
                  const Options &phaseOptions) {
    return run(module,
               [&](mlir::OpPassManager &pm) { build(pm, phaseOptions); });
  }

  /// validation.enable: adds the forward-only `eval` step to the trained
  /// whole-step `module`.
  llvm::Error addEval(mlir::ModuleOp module);
  /// memory_estimation.enable on a compilation that writes an object or an
  /// executable: the memory plan is printed beside it.
  bool estimatesMemory() const;
  /// Stages Object and Exe (what runs) without
  /// options.allowMemoryOvercommit: an error when the job's programs' plans
  /// (one per pipeline rank, or the one every rank runs) cannot fit their
  /// memory (driver::checkJobMemory).
  llvm::Error checkMemoryFits(llvm::ArrayRef<PlannedMemory> programs) const;

  // Emit.cpp: the stages before the training phase.
  llvm::Error emitSummary(mlir::ModuleOp module, llvm::raw_ostream &os);
  void printPipelineInvocations(const PipelineJob *pipelineJob,
                                llvm::raw_ostream &os);

  // EmitProgram.cpp: a job of one program (every rank runs it).
  llvm::Error emitProgram(mlir::ModuleOp module, llvm::raw_ostream &os);
  llvm::Expected<int64_t> arenaWithoutCheckpointing(mlir::ModuleOp partitioned);
  llvm::Error emitMemoryReport(mlir::ModuleOp module,
                               std::optional<int64_t> arenaWithout,
                               llvm::raw_ostream &os);
  llvm::Error writeProgram(mlir::ModuleOp module, manifest::Manifest manifest);

  // EmitPipelined.cpp: one program per pipeline rank.
  /// What every pipeline rank's program is compiled from.
  struct PipelineSources {
    const PipelineJob &job;
    /// The per-rank forward at a microbatch's shape.
    mlir::ModuleOp partitioned;
    /// validation.enable: the per-rank forward at an eval microbatch's
    /// shape; null without validation.
    mlir::ModuleOp eval;
    /// Every parameter of the model, for the ranks' checkpoint indexes.
    const manifest::Manifest &whole;
  };
  llvm::Error emitPipelined(mlir::ModuleOp partitioned, llvm::raw_ostream &os);
  /// validation.enable: the per-rank forward imported at an eval
  /// microbatch's shape and partitioned (null without validation).
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  partitionPipelineEval(const PipelineJob &job, mlir::MLIRContext &context);
  /// Stage Object: where pipeline rank `rank`'s object goes (`<path>.<rank>`
  /// for several ranks).
  std::string objectPath(int64_t rank) const;
  llvm::Error emitPipelineRank(const PipelineSources &sources, int64_t rank,
                               llvm::raw_ostream &os,
                               std::vector<std::string> &objects,
                               std::vector<std::string> &functions,
                               std::vector<PlannedMemory> &plans);
  /// Adds pipeline rank `rank`'s eval stages to its trained `module`;
  /// their names join `phases`.
  llvm::Error addPipelineEval(const PipelineSources &sources, int64_t rank,
                              mlir::ModuleOp module,
                              std::vector<std::string> &phases);
  void printPipelineRankMemory(const PipelineJob &pipelineJob, int64_t rank,
                               mlir::ModuleOp module, llvm::raw_ostream &os);
};

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_COMPILATION_H
