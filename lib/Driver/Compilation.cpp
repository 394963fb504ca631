//===- Compilation.cpp - one compilation's phases -------------------------===//
//
// The import at a step's shapes, the mesh, and each phase run with the
// options the config gives.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/Compilation.h"

#include "titan/Contract/TrainConfig.h"
#include "titan/Driver/ConfigChecks.h"
#include "titan/Driver/Programs.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

using namespace titan;
using namespace titan::driver;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// A failed phase: its diagnostics are already out.
llvm::Error compilationFailed() {
  return error("compilation failed (see the diagnostics above)");
}
} // namespace

Compilation::Compilation(const TrainConfig &config, const LlamaArgs &model,
                         const CompileOptions &options,
                         const target::TargetBackend &backend,
                         mlir::TimingScope &timer)
    : config(config), model(model), options(options), backend(backend),
      timer(timer) {}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
Compilation::importStep(mlir::MLIRContext &context) {
  mlir::OwningOpRef<mlir::ModuleOp> module = [&] {
    mlir::TimingScope t = timer.nest("import");
    const auto &p = config.parallelism;
    return importModel(context, model, config,
                       p.pipelineParallelDegree > 1
                           ? p.pipelineParallelMicrobatchSize
                           : config.training.localBatchSize,
                       config.training.seqLen);
  }();
  mlir::TimingScope t = timer.nest("verify");
  if (failed(mlir::verify(*module)))
    return error("internal error: the imported module does not verify (see "
                 "the diagnostics above)");
  return std::move(module);
}

llvm::Error Compilation::resolveMesh() {
  llvm::Expected<MeshDegrees> resolved =
      titan::resolveMesh(config, options.worldSize);
  if (!resolved)
    return resolved.takeError();
  mesh = *resolved;
  return checkMeshSettings(config, mesh);
}

void Compilation::partitionOptions(PartitionPipelineOptions &o) const {
  setPartitionOptions(config, mesh, o);
}

void Compilation::trainingOptions(TrainingPipelineOptions &o) const {
  setTrainingOptions(config, mesh, backend, o);
}

void Compilation::executionOptions(ExecutionPipelineOptions &o) const {
  setExecutionOptions(config, model, mesh, backend, o);
  if (config.validation.enable)
    o.functions = {"forward_backward", "optimizer_step", "eval"};
}

llvm::Error
Compilation::run(mlir::ModuleOp module,
                 llvm::function_ref<void(mlir::OpPassManager &)> build) {
  mlir::PassManager pm(module.getContext());
  if (options.configurePassManager && failed(options.configurePassManager(pm)))
    return compilationFailed();
  pm.enableTiming(timer);
  build(pm);
  if (failed(pm.run(module)))
    return compilationFailed();
  return llvm::Error::success();
}

llvm::Error Compilation::partition(mlir::ModuleOp module) {
  PartitionPipelineOptions partition;
  partitionOptions(partition);
  return run(module, buildPartitionPipeline, partition);
}

llvm::Error Compilation::train(mlir::ModuleOp module) {
  TrainingPipelineOptions training;
  trainingOptions(training);
  if (llvm::Error e = run(module, buildTrainingPipeline, training))
    return e;
  return addEval(module);
}

llvm::Error Compilation::execute(mlir::ModuleOp module) {
  ExecutionPipelineOptions execution;
  executionOptions(execution);
  return run(module, buildExecutionPipeline, execution);
}

void Compilation::loweringOptions(LoweringPipelineOptions &o) const {
  const target::TargetFeatures &features = backend.getFeatures();
  if (features.generatedKernels && features.deviceArch)
    o.deviceChip = options.cudaArch;
}

llvm::Error Compilation::lower(mlir::ModuleOp module) {
  LoweringPipelineOptions lowering;
  loweringOptions(lowering);
  return run(module, buildLoweringPipeline, lowering);
}

// The eval step: the model imported again at validation's batch and
// sequence length, partitioned over the same mesh and through the eval
// phase. The execution phase then plans it with the training steps: it
// runs between them, so its activations reuse theirs.
llvm::Error Compilation::addEval(mlir::ModuleOp module) {
  if (!config.validation.enable)
    return llvm::Error::success();
  mlir::TimingScope t = timer.nest("eval step");
  mlir::OwningOpRef<mlir::ModuleOp> eval =
      importModel(*module.getContext(), model, config,
                  config.validation.localBatchSize, config.validation.seqLen);
  PartitionPipelineOptions partition;
  partitionOptions(partition);
  TrainingPipelineOptions training;
  trainingOptions(training);
  if (llvm::Error e = run(*eval, buildPartitionPipeline, partition))
    return e;
  if (llvm::Error e = run(*eval, buildEvalPipeline, training))
    return e;
  if (failed(addEvalStep(module, *eval)))
    return compilationFailed();
  return llvm::Error::success();
}

llvm::Error
Compilation::checkMemoryFits(llvm::ArrayRef<PlannedMemory> programs) const {
  if (options.allowMemoryOvercommit ||
      !llvm::is_contained({Stage::Object, Stage::Exe}, options.stage))
    return llvm::Error::success();
  return checkJobMemory(programs, backend, options.hardware, mesh.worldSize());
}

bool Compilation::estimatesMemory() const {
  return config.memoryEstimation.enable &&
         (options.stage == Stage::Object || options.stage == Stage::Exe);
}
