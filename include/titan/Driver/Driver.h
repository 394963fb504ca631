//===- Driver.h - the compilation of a training job -------------*- C++ -*-===//
//
// The compiler as a library: a TorchTitan-style training config and the
// model it names, through titan's pass pipelines to one stage (the IR of a
// phase, a report, an object or a training executable). titan-compile is
// these functions behind command-line options; tests call them directly.
// Errors come back as llvm::Error (the text titan-compile prints), warnings
// go to the caller's handler, and MLIR's diagnostics to the context's
// handler; nothing here exits.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_DRIVER_H
#define TITAN_DRIVER_DRIVER_H

#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Driver/ConfigChecks.h"
#include "titan/Driver/PlanAuto.h"
#include "titan/Driver/Predict.h"
#include "titan/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <optional>
#include <string>

namespace mlir {
class PassManager;
} // namespace mlir

namespace titan {
namespace driver {

/// What a compilation emits, in the order of the phases (a compilation
/// stops after its stage; titan-compile's --emit).
enum class Stage {
  Config,      ///< the resolved training config (TOML, every key)
  Summary,     ///< model, training-step and parallelism facts
  Schedule,    ///< the pipeline schedule (pp > 1), else the kernel order
  Titan,       ///< the imported forward (titan dialect)
  Pipeline,    ///< the pass pipelines, as titan-opt invocations
  Partitioned, ///< the per-rank forward with its collectives
  Train,       ///< forward + backward and the optimizer step
  Kernel,      ///< the bufferized steps with their memory plan
  Memory,      ///< each rank's planned memory
  LLVM,        ///< the steps lowered to runtime calls (LLVM dialect)
  Object,      ///< the steps as an object file
  Exe,         ///< a training executable
  Cost         ///< the predicted training step on a hardware description
};

/// A stage's name (titan-compile --emit=NAME) and what it emits.
struct StageInfo {
  Stage stage;
  llvm::StringLiteral name;
  llvm::StringLiteral description;
};

/// Every stage, in order.
llvm::ArrayRef<StageInfo> stages();

/// How to compile, and where the files go: titan-compile's options.
struct CompileOptions {
  Stage stage = Stage::Exe;
  /// The target backend's name (titan-compile's --target; lookupTarget).
  std::string target = "cpu";
  /// The ranks the job runs on; 0: the product of the parallel degrees
  /// (data_parallel_shard_degree = -1 taken as 1).
  int64_t worldSize = 0;
  /// With a target that has TargetFeatures::deviceArch (CUDA): the GPU
  /// architecture the build must have code for and the manifest records.
  std::string cudaArch = "sm_90a";
  /// Stage Object: the object (under pipeline parallelism with several
  /// ranks, one per rank: `<path>.<rank>`); stage Exe: the executable.
  std::string outputPath;
  /// Stage Schedule under pipeline parallelism, stage Memory: also an SVG
  /// chart at this path (none when empty).
  std::string scheduleTimeline, memoryTimeline;
  /// Stage Cost and --plan auto: the hardware; the report as one JSON
  /// object.
  HardwareRequest hardware;
  bool costJSON = false;
  /// Stages Object and Exe: skip the check that every rank's memory plan
  /// fits its memory (driver::checkPlanFits), which `hardware` names for a
  /// GPU target.
  bool allowMemoryOvercommit = false;
  /// --plan auto: search the layouts of plan->gpus devices of `hardware`,
  /// print the best ones and compile the best (its mesh, world size and
  /// target replace the config's and the options'). The table is the
  /// stage's output for stage Cost and for plan->json (which then compiles
  /// nothing), else it goes to `planLog` (unset: dropped).
  std::optional<PlanOptions> plan;
  llvm::raw_ostream *planLog = nullptr;
  /// Applied to each pass manager before it runs (titan-compile: the
  /// --mlir-print-ir-* and --mlir-timing options); its failure fails the
  /// compilation.
  std::function<mlir::LogicalResult(mlir::PassManager &)> configurePassManager;
  /// Receives the compilation's warnings; unset, they are dropped.
  WarningHandler warn;
};

/// The target backend registered as `name` (the built-in ones are
/// registered first); an error names the registered ones.
llvm::Expected<const target::TargetBackend &>
lookupTarget(llvm::StringRef name);

/// Where the built-in model flavors are: $TITAN_MODELS_DIR, else this
/// build's models folder.
std::string modelsDir();

/// The model `config` names (model.name, model.flavor), from modelsDir().
llvm::Expected<LlamaArgs> resolveModel(const TrainConfig &config);

/// The checks every compilation of `model` with `config` passes first: the
/// model fits the config (errors name the keys); a sequence longer than
/// the model's max_seq_len is a warning, as in TorchTitan.
llvm::Error checkJob(const LlamaArgs &model, const TrainConfig &config,
                     const WarningHandler &warn);

/// Compiles `config` for `model` (or, with options.plan, the best layout
/// of it) up to `options.stage` and writes what the stage emits: text to
/// `os` (and for stages Object and Exe, the memory plan when
/// memory_estimation.enable), files to options.outputPath. `timer` times
/// the phases (a default TimingScope: untimed).
llvm::Error emitStage(const TrainConfig &config, const LlamaArgs &model,
                      const CompileOptions &options, llvm::raw_ostream &os,
                      mlir::TimingScope &timer);

/// The module of an IR stage (Titan, Partitioned, Train, Kernel, LLVM) in
/// `context`: the same program emitStage prints for a job with one
/// program. Errors for other stages, and under pipeline parallelism
/// (one program per pipeline rank: emitStage prints each).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
compileToModule(mlir::MLIRContext &context, const TrainConfig &config,
                const LlamaArgs &model, const CompileOptions &options);

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_DRIVER_H
