//===- Driver.cpp - the compilation of a training job ---------------------===//
//
// The library's entry points: the model a config names, the checks every
// compilation passes, and the stages, each from the config.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/Driver.h"

#include "titan/Driver/Compilation.h"
#include "titan/Driver/PipelineJob.h"
#include "titan/InitTitan.h"
#include "titan/Model/ConfigFit.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"

using namespace titan;
using namespace titan::driver;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// The cost stage: the prediction and its report.
llvm::Error emitCost(const TrainConfig &config, const LlamaArgs &model,
                     const CompileOptions &options, llvm::raw_ostream &os) {
  llvm::Expected<JobPrediction> prediction = predictStep(
      model, config, options.worldSize, options.hardware, options.warn);
  if (!prediction)
    return prediction.takeError();
  if (options.costJSON)
    printPredictionJSON(*prediction, os);
  else
    printPrediction(*prediction, os);
  return llvm::Error::success();
}

/// --plan auto: the search, then the best plan compiled (nothing with
/// JSON output).
llvm::Error emitPlanned(const TrainConfig &config, const LlamaArgs &model,
                        const CompileOptions &options, llvm::raw_ostream &os,
                        mlir::TimingScope &timer) {
  bool tableIsOutput = options.stage == Stage::Cost || options.plan->json;
  llvm::raw_null_ostream dropped;
  llvm::raw_ostream &tableOs = tableIsOutput     ? os
                               : options.planLog ? *options.planLog
                                                 : dropped;
  llvm::Expected<std::optional<PlanChoice>> best =
      planAuto(model, config, options.hardware, *options.plan, tableOs);
  if (!best)
    return best.takeError();
  if (!*best)
    return llvm::Error::success();
  CompileOptions chosen = options;
  chosen.plan.reset();
  chosen.worldSize = (*best)->worldSize;
  chosen.target = (*best)->target->getName().str();
  return emitStage((*best)->config, model, chosen, os, timer);
}
} // namespace

llvm::ArrayRef<StageInfo> driver::stages() {
  static const StageInfo table[] = {
      {Stage::Config, "config",
       "the resolved training config (TOML, every key)"},
      {Stage::Summary, "summary", "model, training-step and parallelism facts"},
      {Stage::Schedule, "schedule",
       "each pipeline rank's stages and action list, and the schedule's "
       "bubble (pp > 1); otherwise each step's kernel calls and collectives "
       "in their scheduled order, with each collective's overlap window"},
      {Stage::Titan, "titan", "the imported forward graph (titan dialect)"},
      {Stage::Pipeline, "pipeline",
       "the pass pipelines this compilation runs, as a titan-opt "
       "--pass-pipeline (one per pipeline rank)"},
      {Stage::Partitioned, "partitioned",
       "the per-rank forward with its collectives"},
      {Stage::Train, "train",
       "forward + backward and the optimizer step (titan)"},
      {Stage::Kernel, "kernel",
       "the bufferized steps with their memory plan (kernel IR)"},
      {Stage::Memory, "memory",
       "each rank's planned memory: peak and breakdown"},
      {Stage::LLVM, "llvm", "the step lowered to runtime calls (LLVM dialect)"},
      {Stage::Object, "obj", "the step as an object file"},
      {Stage::Exe, "exe", "a training executable (default)"},
      {Stage::Cost, "cost",
       "the predicted training step on a hardware description (--gpu, "
       "--hardware): step time, tokens/s, MFU, exposed communication, "
       "bubble, memory, per-part breakdown"},
  };
  return table;
}

llvm::Expected<const target::TargetBackend &>
driver::lookupTarget(llvm::StringRef name) {
  registerAllTargetBackends();
  if (const target::TargetBackend *backend = target::lookupTargetBackend(name))
    return *backend;
  return error("unknown target '" + name + "'; the registered ones are " +
               target::getTargetBackendNameList());
}

std::string driver::modelsDir() {
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("TITAN_MODELS_DIR"))
    return *env;
  return TITAN_DEFAULT_MODELS_DIR;
}

llvm::Expected<LlamaArgs> driver::resolveModel(const TrainConfig &config) {
  return resolveLlamaModel(config, modelsDir());
}

llvm::Error driver::checkJob(const LlamaArgs &model, const TrainConfig &config,
                             const WarningHandler &warn) {
  if (llvm::Error e = checkModelFitsConfig(model, config))
    return e;
  // TorchTitan v0.2.0 (llama3 update_from_config) warns and trains at the
  // longer length (the long-context runs go past the flavor's 131072).
  if (config.training.seqLen > model.maxSeqLen && warn)
    warn(llvm::formatv("training.seq_len {0} exceeds the model's max_seq_len "
                       "{1}; max_seq_len becomes the sequence length, as "
                       "TorchTitan's",
                       config.training.seqLen, model.maxSeqLen)
             .str());
  return llvm::Error::success();
}

llvm::Error driver::emitStage(const TrainConfig &config, const LlamaArgs &model,
                              const CompileOptions &options,
                              llvm::raw_ostream &os, mlir::TimingScope &timer) {
  if (options.stage == Stage::Config) {
    printTrainConfig(config, os);
    return llvm::Error::success();
  }
  if (options.plan)
    return emitPlanned(config, model, options, os, timer);
  llvm::Expected<const target::TargetBackend &> backend =
      lookupTarget(options.target);
  if (!backend)
    return backend.takeError();
  // A CUDA object or executable needs libtitanrt_cuda for its
  // architecture; the kernel IR and the reports do not.
  if (backend->getFeatures().deviceArch &&
      llvm::is_contained({Stage::LLVM, Stage::Object, Stage::Exe},
                         options.stage))
    if (llvm::Error e = checkCudaTarget(options.cudaArch))
      return e;
  if (llvm::Error e = checkJob(model, config, options.warn))
    return e;
  if (llvm::Error e = checkModelOnTarget(
          model, *backend, config.parallelism.contextParallelDegree))
    return e;
  if (options.stage == Stage::Cost)
    return emitCost(config, model, options, os);
  // Pipeline parallel: the pipeline schedule, from the stage plan alone;
  // otherwise the steps' kernel order, after compiling them.
  if (options.stage == Stage::Schedule &&
      config.parallelism.pipelineParallelDegree > 1)
    return printPipelineSchedule(model, config, options.scheduleTimeline, os);
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  Compilation job(config, model, options, *backend, timer);
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      job.importStep(context);
  if (!module)
    return module.takeError();
  if (options.stage == Stage::Schedule && !options.scheduleTimeline.empty())
    return error("--schedule-timeline draws a pipeline schedule; "
                 "parallelism.pipeline_parallel_degree is 1");
  return job.emit(**module, os);
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
driver::compileToModule(mlir::MLIRContext &context, const TrainConfig &config,
                        const LlamaArgs &model, const CompileOptions &options) {
  Stage stage = options.stage;
  if (!llvm::is_contained({Stage::Titan, Stage::Partitioned, Stage::Train,
                           Stage::Kernel, Stage::LLVM},
                          stage))
    return error("compileToModule: the stage is not one of the IR stages "
                 "(titan, partitioned, train, kernel, llvm)");
  llvm::Expected<const target::TargetBackend &> backend =
      lookupTarget(options.target);
  if (!backend)
    return backend.takeError();
  if (llvm::Error e = checkJob(model, config, options.warn))
    return std::move(e);
  if (llvm::Error e = checkModelOnTarget(
          model, *backend, config.parallelism.contextParallelDegree))
    return std::move(e);
  mlir::TimingScope untimed;
  Compilation job(config, model, options, *backend, untimed);
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      job.importStep(context);
  if (!module || stage == Stage::Titan)
    return module;
  if (stage >= Stage::Train)
    if (llvm::Error e = checkConfig(config, *backend, options.warn))
      return std::move(e);
  if (llvm::Error e = job.resolveMesh())
    return std::move(e);
  if (job.mesh.pp > 1)
    return error("compileToModule: parallelism.pipeline_parallel_degree > 1 "
                 "compiles one program per pipeline rank (emitStage prints "
                 "each)");
  mlir::ModuleOp m = **module;
  if (llvm::Error e = job.partition(m))
    return std::move(e);
  if (stage == Stage::Partitioned)
    return module;
  if (backend->getFeatures().float8Gemms)
    if (llvm::Error e = checkCudaFloat8Shapes(m, config))
      return std::move(e);
  if (llvm::Error e = job.train(m))
    return std::move(e);
  if (stage == Stage::Train)
    return module;
  if (llvm::Error e = job.execute(m))
    return std::move(e);
  if (stage == Stage::Kernel)
    return module;
  if (llvm::Error e = job.lower(m))
    return std::move(e);
  return module;
}
