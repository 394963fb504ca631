//===- EmitPipelined.cpp - the stages of a pipeline-parallel job ----------===//
//
// Under pipeline parallelism each pipeline rank has its own program (its
// stages' phases and its optimizer step), compiled from the partitioned
// per-rank forward and linked into one executable with the table that
// hands each rank its program.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/Compilation.h"

#include "titan/Contract/TrainConfig.h"
#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/Driver/Link.h"
#include "titan/Driver/Manifest.h"
#include "titan/Driver/MemoryFit.h"
#include "titan/Driver/Programs.h"
#include "titan/Target/Host/ObjectFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"

using namespace titan;
using namespace titan::driver;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}
} // namespace

llvm::Error Compilation::emitPipelined(mlir::ModuleOp partitioned,
                                       llvm::raw_ostream &os) {
  Stage stage = options.stage;
  llvm::Expected<PipelineJob> pipelineJob = planPipelineJob(model, config);
  if (!pipelineJob)
    return pipelineJob.takeError();
  // The programs and their memory plans exist for every target; the
  // executable only for those whose runtime runs pipeline stages.
  if (!backend.getFeatures().pipelineParallel &&
      llvm::is_contained({Stage::LLVM, Stage::Object, Stage::Exe}, stage))
    return error("parallelism.pipeline_parallel_degree > 1 with "
                 "--target=" +
                 backend.getName() +
                 " is not implemented (this target's runtime has no "
                 "pipeline executor; --emit=memory plans it)");
  // Every parameter of the model, for the ranks' checkpoint indexes.
  llvm::Expected<manifest::Manifest> whole =
      buildManifest(model, config, partitioned);
  if (!whole)
    return whole.takeError();
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> eval =
      partitionPipelineEval(*pipelineJob, *partitioned.getContext());
  if (!eval)
    return eval.takeError();
  PipelineSources sources{*pipelineJob, partitioned, eval->get(), *whole};
  LinkInputs link;
  link.outputPath = options.outputPath;
  llvm::scope_exit cleanup([&] {
    for (const std::string &object : link.objects)
      llvm::sys::fs::remove(object);
  });
  std::vector<PlannedMemory> plans;
  for (int64_t r = 0; r < mesh.pp; ++r) {
    std::vector<std::string> functions;
    if (llvm::Error e =
            emitPipelineRank(sources, r, os, link.objects, functions, plans))
      return e;
    link.pipelinePrograms.push_back(std::move(functions));
  }
  // The ranks' programs share a machine's memory: checked together, and
  // nothing stays written for a job that cannot run.
  if (llvm::Error e = checkMemoryFits(plans)) {
    if (stage == Stage::Object)
      for (int64_t r = 0; r < mesh.pp; ++r)
        llvm::sys::fs::remove(objectPath(r));
    return e;
  }
  if (stage != Stage::Exe)
    return llvm::Error::success();
  return linkExecutable(link, backend);
}

std::string Compilation::objectPath(int64_t rank) const {
  return options.outputPath +
         (mesh.pp > 1 ? "." + std::to_string(rank) : std::string());
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
Compilation::partitionPipelineEval(const PipelineJob &job,
                                   mlir::MLIRContext &context) {
  if (job.evalMicrobatchSize == 0)
    return mlir::OwningOpRef<mlir::ModuleOp>();
  mlir::TimingScope t = timer.nest("eval step");
  mlir::OwningOpRef<mlir::ModuleOp> eval = importModel(
      context, model, config, job.evalMicrobatchSize, config.validation.seqLen);
  PartitionPipelineOptions partition;
  partitionOptions(partition);
  if (llvm::Error e = run(*eval, buildPartitionPipeline, partition))
    return std::move(e);
  return std::move(eval);
}

llvm::Error Compilation::addPipelineEval(const PipelineSources &sources,
                                         int64_t rank, mlir::ModuleOp module,
                                         std::vector<std::string> &phases) {
  if (!sources.eval)
    return llvm::Error::success();
  mlir::OwningOpRef<mlir::ModuleOp> eval = mlir::ModuleOp(sources.eval).clone();
  TrainingPipelineOptions training;
  trainingOptions(training);
  setPipelineRankOptions(sources.job, rank, training);
  if (llvm::Error e = run(*eval, buildPipelineParallelEvalPipeline, training))
    return e;
  mlir::FailureOr<std::vector<std::string>> stages =
      addPipelineEvalStages(module, *eval);
  if (failed(stages))
    return error("compilation failed (see the diagnostics above)");
  phases.insert(phases.end(), stages->begin(), stages->end());
  return llvm::Error::success();
}

// Pipeline rank `rank`'s program from the partitioned per-rank forward: its
// stages' training phases (and eval stages), execution and lowering,
// written as an object (appended to `objects`) unless the stage stops
// earlier; `functions` gets the program's step functions.
llvm::Error Compilation::emitPipelineRank(const PipelineSources &sources,
                                          int64_t rank, llvm::raw_ostream &os,
                                          std::vector<std::string> &objects,
                                          std::vector<std::string> &functions,
                                          std::vector<PlannedMemory> &plans) {
  Stage stage = options.stage;
  const PipelineJob &pipelineJob = sources.job;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp(sources.partitioned).clone();
  TrainingPipelineOptions training;
  trainingOptions(training);
  std::vector<std::string> phases =
      setPipelineRankOptions(pipelineJob, rank, training);
  if (llvm::Error e =
          run(*module, buildPipelineParallelTrainingPipeline, training))
    return e;
  if (llvm::Error e = addPipelineEval(sources, rank, *module, phases))
    return e;
  auto printRank = [&] {
    os << "// pipeline rank " << rank << "\n";
    return print(*module, os);
  };
  if (stage == Stage::Train)
    return printRank();
  llvm::Expected<manifest::Manifest> manifest =
      buildManifest(model, config, *module, phases);
  if (!manifest)
    return manifest.takeError();
  functions = phases;
  functions.push_back("optimizer_step");
  ExecutionPipelineOptions execution;
  executionOptions(execution);
  execution.functions = llvm::ArrayRef(functions);
  if (llvm::Error e = run(*module, buildExecutionPipeline, execution))
    return e;
  if (stage == Stage::Kernel)
    return printRank();
  if (stage == Stage::Memory) {
    printPipelineRankMemory(pipelineJob, rank, *module, os);
    return llvm::Error::success();
  }
  if (estimatesMemory())
    printPipelineRankMemory(pipelineJob, rank, *module, os);
  plans.push_back({kernel::getArenaBytes(*module) +
                       pipelineFramesBytes(pipelineJob, rank, *module) +
                       pipelineSendBytes(pipelineJob, rank, *module),
                   kernel::getHostArenaBytes(*module)});
  addProgramToManifest(*manifest, config, mesh, backend, options.cudaArch,
                       *module);
  addPipelineToManifest(*manifest, pipelineJob, rank, *module);
  addPipelineParameters(*manifest, sources.whole, pipelineJob);
  // The pipeline's transfers and its loss reduction run over pp.
  if (!llvm::is_contained(manifest->collectiveAxes, 1u))
    manifest->collectiveAxes.push_back(1);
  std::string prefix = "titan_pp" + std::to_string(rank) + "_";
  LoweringPipelineOptions lowering;
  loweringOptions(lowering);
  lowering.symbolPrefix = prefix;
  if (llvm::Error e = run(*module, buildLoweringPipeline, lowering))
    return e;
  if (stage == Stage::LLVM)
    return printRank();
  embedManifest(*module, manifest::printManifest(*manifest),
                prefix + "manifest");
  std::string path;
  if (stage == Stage::Object)
    path = objectPath(rank);
  llvm::Expected<std::string> object =
      writeObject(*module, path, "titan-pp" + std::to_string(rank), backend);
  if (!object)
    return object.takeError();
  if (stage != Stage::Object)
    objects.push_back(*object);
  return llvm::Error::success();
}

// The memory stage for pipeline rank `rank`: its planned arena and its
// microbatch frames.
void Compilation::printPipelineRankMemory(const PipelineJob &pipelineJob,
                                          int64_t rank, mlir::ModuleOp module,
                                          llvm::raw_ostream &os) {
  os << "pipeline rank " << rank << " (stages "
     << llvm::join(llvm::map_range(pipelineJob.plan.stagesOfRank[size_t(rank)],
                                   [](int64_t s) { return std::to_string(s); }),
                   ", ")
     << "):\n";
  kernel::printMemoryReport(module, mesh.worldSize(), os);
  printPipelineMemory(pipelineJob, rank, module, os);
}
