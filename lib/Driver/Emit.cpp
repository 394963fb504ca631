//===- Emit.cpp - a compilation's stages up to the partition --------------===//
//
// Which phases a stage runs, and the stages that stop before the training
// phase: the summary, the pass pipelines, the partitioned forward.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/Compilation.h"

#include "titan/Contract/TrainConfig.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/Driver/ConfigChecks.h"
#include "titan/Driver/Summary.h"

#include "mlir/Pass/PassOptions.h"

using namespace titan;
using namespace titan::driver;

llvm::Error Compilation::print(mlir::Operation *op, llvm::raw_ostream &os) {
  op->print(os);
  os << "\n";
  return llvm::Error::success();
}

llvm::Error Compilation::emit(mlir::ModuleOp module, llvm::raw_ostream &os) {
  Stage stage = options.stage;
  if (stage == Stage::Summary)
    return emitSummary(module, os);
  if (stage == Stage::Titan)
    return print(module, os);
  if (stage >= Stage::Train || stage == Stage::Schedule)
    if (llvm::Error e = checkConfig(config, backend, options.warn))
      return e;
  if (llvm::Error e = resolveMesh())
    return e;
  if (stage == Stage::Pipeline) {
    if (mesh.pp == 1) {
      printPipelineInvocations(nullptr, os);
      return llvm::Error::success();
    }
    llvm::Expected<PipelineJob> pipelineJob = planPipelineJob(model, config);
    if (!pipelineJob)
      return pipelineJob.takeError();
    printPipelineInvocations(&*pipelineJob, os);
    return llvm::Error::success();
  }
  if (llvm::Error e = partition(module))
    return e;
  if (stage == Stage::Partitioned)
    return print(module, os);
  if (backend.getFeatures().float8Gemms)
    if (llvm::Error e = checkCudaFloat8Shapes(module, config))
      return e;
  if (mesh.pp > 1)
    return emitPipelined(module, os);
  return emitProgram(module, os);
}

// The summary: the model and step facts, Float8's plan, and with a world
// size (or fixed degrees) what one rank holds and sends.
llvm::Error Compilation::emitSummary(mlir::ModuleOp module,
                                     llvm::raw_ostream &os) {
  const TrainConfig &c = config;
  printSummary(model, c, module, os);
  if (c.float8.enabled(c.model.converters)) {
    PartitionPipelineOptions conversion;
    partitionOptions(conversion);
    printFloat8Plan(module, conversion, os);
  }
  if (options.worldSize == 0 && c.parallelism.dataParallelShardDegree <= 0)
    return llvm::Error::success();
  if (llvm::Error e = resolveMesh())
    return e;
  if (llvm::Error e = partition(module))
    return e;
  // Under pipeline parallelism each pipeline rank has its own program;
  // what each holds, from the stage plan (the memory stage plans them).
  if (mesh.pp > 1) {
    llvm::Expected<PipelineJob> pipelineJob = planPipelineJob(model, c);
    if (!pipelineJob)
      return pipelineJob.takeError();
    printPipelineSummary(*pipelineJob, module, os);
    return llvm::Error::success();
  }
  if (llvm::Error e = train(module))
    return e;
  // The peak comes from the memory plan of the same program.
  mlir::OwningOpRef<mlir::ModuleOp> planned = module.clone();
  if (llvm::Error e = execute(*planned))
    return e;
  printPerRankPlan(module, kernel::getArenaBytes(*planned),
                   kernel::getHostArenaBytes(*planned), os);
  return llvm::Error::success();
}

// A titan-opt invocation per program that reproduces this compilation from
// the imported module (the titan stage with --mlir-print-debuginfo: the
// passes read the ops' module paths).
void Compilation::printPipelineInvocations(const PipelineJob *pipelineJob,
                                           llvm::raw_ostream &os) {
  auto phase = [&](llvm::StringRef name,
                   const mlir::detail::PassOptions &phaseOptions) {
    os << name;
    phaseOptions.print(os);
  };
  PartitionPipelineOptions partition;
  partitionOptions(partition);
  int64_t programs = pipelineJob ? pipelineJob->plan.ranks : 1;
  for (int64_t r = 0; r < programs; ++r) {
    TrainingPipelineOptions training;
    trainingOptions(training);
    ExecutionPipelineOptions execution;
    executionOptions(execution);
    LoweringPipelineOptions lowering;
    loweringOptions(lowering);
    if (pipelineJob) {
      os << "// pipeline rank " << r << "\n";
      std::vector<std::string> steps =
          setPipelineRankOptions(*pipelineJob, r, training);
      steps.push_back("optimizer_step");
      execution.functions = llvm::ArrayRef(steps);
      lowering.symbolPrefix = "titan_pp" + std::to_string(r) + "_";
    }
    os << "builtin.module(";
    phase("titan-partition-pipeline", partition);
    os << ",";
    phase(pipelineJob ? "titan-pipeline-parallel-training-pipeline"
                      : "titan-training-pipeline",
          training);
    os << ",";
    phase("titan-execution-pipeline", execution);
    os << ",";
    phase("titan-lowering-pipeline", lowering);
    os << ")\n";
    if (!pipelineJob || pipelineJob->evalMicrobatchSize == 0)
      continue;
    // The rank's eval stages, cut from the forward imported at an eval
    // microbatch's shape; the driver moves them into the program above
    // before its execution phase.
    os << "// eval steps of pipeline rank " << r
       << " (validation.enable), on the forward imported at "
       << pipelineJob->evalMicrobatchSize << " x " << config.validation.seqLen
       << " tokens\nbuiltin.module(";
    phase("titan-partition-pipeline", partition);
    os << ",";
    phase("titan-pipeline-parallel-eval-pipeline", training);
    os << ")\n";
  }
  if (pipelineJob || !config.validation.enable)
    return;
  // The eval step's phases run on the forward imported at validation's
  // shape; the driver then moves it into the program above before its
  // execution phase.
  TrainingPipelineOptions training;
  trainingOptions(training);
  os << "// eval step (validation.enable), on the forward imported at "
     << config.validation.localBatchSize << " x " << config.validation.seqLen
     << " tokens\nbuiltin.module(";
  phase("titan-partition-pipeline", partition);
  os << ",";
  phase("titan-eval-pipeline", training);
  os << ")\n";
}
