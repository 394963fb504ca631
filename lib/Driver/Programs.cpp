//===- Programs.cpp - a job's planned per-rank programs -------------------===//
//
// The import at a step's shapes, and the phases up to the memory plan run
// quietly: their diagnostics become the error.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/Programs.h"

#include "titan/Driver/ConfigChecks.h"

#include "titan/Compiler/Pipelines.h"
#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Dialect/Titan/IR/Dtype.h"
#include "titan/Import/LlamaImporter.h"
#include "titan/Model/ConfigFit.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"

using namespace titan;
using namespace titan::driver;

mlir::OwningOpRef<mlir::ModuleOp>
driver::importModel(mlir::MLIRContext &context, const LlamaArgs &model,
                    const TrainConfig &c, int64_t batch, int64_t seqLen) {
  ImportOptions options;
  options.batchSize = batch;
  options.seqLen = seqLen;
  options.elementType =
      typeOf(parseTorchDtype(c.training.dtype).value_or(Dtype::f32), &context);
  return importLlama(context, model, options);
}

namespace {
/// Runs phases on modules and keeps their error diagnostics for the
/// caller's error instead of printing them.
struct PhaseRunner {
  mlir::MLIRContext &context;
  std::vector<std::string> diagnostics;
  mlir::ScopedDiagnosticHandler handler;

  explicit PhaseRunner(mlir::MLIRContext &context)
      : context(context), handler(&context, [this](mlir::Diagnostic &d) {
          if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
            diagnostics.push_back(d.str());
          // Warnings and remarks are the emit paths' to print.
          return mlir::success();
        }) {}

  template <typename Options>
  mlir::LogicalResult run(mlir::ModuleOp module,
                          void (*build)(mlir::OpPassManager &, const Options &),
                          const Options &options) {
    mlir::PassManager pm(&context);
    build(pm, options);
    return pm.run(module);
  }

  llvm::Error failed(llvm::StringRef what) {
    std::string message = ("compilation failed (" + what + ")").str();
    for (const std::string &d : diagnostics)
      message += "\n" + d;
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  }
};
} // namespace

llvm::Expected<PlannedPrograms> driver::compilePlannedPrograms(
    mlir::MLIRContext &context, const LlamaArgs &model, const TrainConfig &c,
    const MeshDegrees &mesh, const target::TargetBackend &target) {
  // What emitStage checks before it compiles anything: a caller that
  // varies the config (--plan) gets the same errors.
  if (llvm::Error e = checkModelFitsConfig(model, c))
    return std::move(e);
  if (llvm::Error e = diagnoseUnsupported(c, target))
    return std::move(e);
  if (llvm::Error e = checkMeshSettings(c, mesh))
    return std::move(e);
  PlannedPrograms programs;
  programs.mesh = mesh;
  programs.target = &target;
  PhaseRunner runner(context);
  // A step sees one microbatch under pipeline parallelism.
  const auto &p = c.parallelism;
  int64_t batch = mesh.pp > 1 ? p.pipelineParallelMicrobatchSize
                              : c.training.localBatchSize;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importModel(context, model, c, batch, c.training.seqLen);
  if (!module || mlir::failed(mlir::verify(*module)))
    return runner.failed("the imported module does not verify");

  PartitionPipelineOptions partition;
  setPartitionOptions(c, mesh, partition);
  if (mlir::failed(runner.run(*module, buildPartitionPipeline, partition)))
    return runner.failed("partition");
  if (target.getFeatures().float8Gemms)
    if (llvm::Error e = checkCudaFloat8Shapes(*module, c))
      return std::move(e);

  TrainingPipelineOptions training;
  setTrainingOptions(c, mesh, target, training);
  programs.paramType = training.paramType;
  ExecutionPipelineOptions execution;
  setExecutionOptions(c, model, mesh, target, execution);

  if (mesh.pp == 1) {
    if (mlir::failed(runner.run(*module, buildTrainingPipeline, training)))
      return runner.failed("training");
    if (mlir::failed(runner.run(*module, buildExecutionPipeline, execution)))
      return runner.failed("execution");
    programs.modules.push_back(std::move(module));
    return programs;
  }

  llvm::Expected<PipelineJob> job = planPipelineJob(model, c);
  if (!job)
    return job.takeError();
  for (int64_t r = 0; r < mesh.pp; ++r) {
    mlir::OwningOpRef<mlir::ModuleOp> rank = module->clone();
    TrainingPipelineOptions rankTraining;
    setTrainingOptions(c, mesh, target, rankTraining);
    std::vector<std::string> phases =
        setPipelineRankOptions(*job, r, rankTraining);
    if (mlir::failed(runner.run(*rank, buildPipelineParallelTrainingPipeline,
                                rankTraining)))
      return runner.failed("training of pipeline rank " + std::to_string(r));
    std::vector<std::string> functions = phases;
    functions.push_back("optimizer_step");
    ExecutionPipelineOptions rankExecution;
    setExecutionOptions(c, model, mesh, target, rankExecution);
    rankExecution.functions = llvm::ArrayRef(functions);
    if (mlir::failed(runner.run(*rank, buildExecutionPipeline, rankExecution)))
      return runner.failed("execution of pipeline rank " + std::to_string(r));
    programs.modules.push_back(std::move(rank));
    programs.phases.push_back(std::move(phases));
  }
  programs.pipeline = std::move(*job);
  return programs;
}
