//===- titan-compile.cpp - model + training config -> compiled job --------===//
//
//   titan-compile --job.config_file FILE [--section.key value]...
//                 [--emit=STAGE] [--target=cpu|cuda] [-o OUT]
//
// Reads a TorchTitan-style training config, imports the model it names into
// the titan dialect, runs titan's pass pipelines (lib/Compiler/Pipelines.cpp,
// with options from the config) and emits the requested stage, by default a
// training executable linked against the runtime.
//
//===----------------------------------------------------------------------===//

#include "ConfigChecks.h"
#include "Manifest.h"
#include "Pipeline.h"
#include "Plan.h"
#include "Predict.h"
#include "Programs.h"
#include "Summary.h"

#include "titan/Compiler/ConfigPipelineOptions.h"
#include "titan/Compiler/Pipelines.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Cost/Hardware.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Kernel/Transforms/CollectiveSchedule.h"
#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/InitTitan.h"
#include "titan/Model/ConfigFit.h"
#include "titan/Contract/LlamaArgs.h"
#include "titan/Pipeline/Schedule.h"
#include "titan/Support/Format.h"
#include "titan/Target/CPU/CPUTarget.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace titan;
namespace cl = llvm::cl;

namespace {
// Pipeline stages, in order; --emit stops after one.
enum class EmitStage {
  Config,
  Summary,
  Schedule,
  Titan,
  Pipeline,
  Partitioned,
  Train,
  Kernel,
  Memory,
  LLVM,
  Object,
  Exe,
  Cost
};

cl::opt<EmitStage> emitStage(
    "emit", cl::desc("Stage to emit"), cl::init(EmitStage::Exe),
    cl::values(
        clEnumValN(EmitStage::Config, "config",
                   "the resolved training config (TOML, every key)"),
        clEnumValN(EmitStage::Summary, "summary",
                   "model, training-step and parallelism facts"),
        clEnumValN(EmitStage::Schedule, "schedule",
                   "each pipeline rank's stages and action list, and the "
                   "schedule's bubble (pp > 1); otherwise each step's "
                   "kernel calls and collectives in their scheduled order, "
                   "with each collective's overlap window"),
        clEnumValN(EmitStage::Titan, "titan",
                   "the imported forward graph (titan dialect)"),
        clEnumValN(EmitStage::Pipeline, "pipeline",
                   "the pass pipelines this compilation runs, as a "
                   "titan-opt --pass-pipeline (one per pipeline rank)"),
        clEnumValN(EmitStage::Partitioned, "partitioned",
                   "the per-rank forward with its collectives"),
        clEnumValN(EmitStage::Train, "train",
                   "forward + backward and the optimizer step (titan)"),
        clEnumValN(EmitStage::Kernel, "kernel",
                   "the bufferized steps with their memory plan (kernel IR)"),
        clEnumValN(EmitStage::Memory, "memory",
                   "each rank's planned memory: peak and breakdown"),
        clEnumValN(EmitStage::LLVM, "llvm",
                   "the step lowered to runtime calls (LLVM dialect)"),
        clEnumValN(EmitStage::Object, "obj", "the step as an object file"),
        clEnumValN(EmitStage::Exe, "exe", "a training executable (default)"),
        clEnumValN(EmitStage::Cost, "cost",
                   "the predicted training step on a hardware description "
                   "(--gpu, --hardware): step time, tokens/s, MFU, exposed "
                   "communication, bubble, memory, per-part breakdown")));

cl::opt<KernelTarget> target(
    "target", cl::desc("What the executable trains on"),
    cl::init(KernelTarget::CPU),
    cl::values(clEnumValN(KernelTarget::CPU, "cpu",
                          "the host's cores (oneDNN GEMMs, OpenMP threads; MPI "
                          "ranks)"),
               clEnumValN(KernelTarget::CUDA, "cuda",
                          "NVIDIA GPUs (cuBLASLt, cuDNN, fused kernels; NCCL "
                          "ranks)")));

cl::opt<std::string> gpuName(
    "gpu",
    cl::desc("With --emit=cost: the hardware to predict for (h100, "
             "h100-96gb, h200, b200, a100, cpu; default h100, or cpu with "
             "--target=cpu). A GPU compiles the CUDA program (kernel IR "
             "only: no CUDA toolkit needed)"),
    cl::value_desc("name"));

cl::opt<std::string>
    hardwareFile("hardware",
                 cl::desc("With --emit=cost: a hardware description (TOML, a "
                          "[hardware] table; overrides --gpu)"),
                 cl::value_desc("file.toml"));

enum class CostFormat { Text, JSON };

cl::opt<CostFormat> costFormat(
    "cost-format", cl::desc("--emit=cost's output"), cl::init(CostFormat::Text),
    cl::values(clEnumValN(CostFormat::Text, "text", "a report (default)"),
               clEnumValN(CostFormat::JSON, "json", "one JSON object")));

cl::opt<std::string> planMode(
    "plan",
    cl::desc("auto: search the parallel layouts of --gpus N devices (--gpu, "
             "--hardware), print the best ones and compile the best"),
    cl::value_desc("auto"));

cl::opt<int64_t> planGpus("gpus", cl::desc("With --plan auto: the devices"),
                          cl::init(0));

cl::opt<double> memoryPerGpu(
    "memory-per-gpu",
    cl::desc("With --plan auto: GiB a rank's planned memory may use "
             "(default: the hardware's capacity less 4 GiB on GPUs for the "
             "CUDA context and NCCL)"),
    cl::init(0));

cl::opt<int64_t> planTop("plan-top",
                         cl::desc("With --plan auto: the plans listed"),
                         cl::init(10));

enum class PlanFormat { Text, JSON };

cl::opt<PlanFormat> planFormat(
    "plan-format", cl::desc("--plan auto's output"), cl::init(PlanFormat::Text),
    cl::values(clEnumValN(PlanFormat::Text, "text",
                          "the top plans, then compile the best (default)"),
               clEnumValN(PlanFormat::JSON, "json",
                          "every fitting plan and the search's counts as one "
                          "JSON object; compiles nothing")));

cl::opt<double> planMaxSeconds(
    "plan-max-seconds",
    cl::desc("With --plan auto: wall seconds the search may spend predicting "
             "(0: no limit; the result then depends on the machine)"),
    cl::init(0));

cl::opt<double> planBudget(
    "plan-budget",
    cl::desc("With --plan auto: the predictions' work, in blocks compiled "
             "plus 4 per program (about 10 ms each on a 2-core machine; 0: "
             "no limit); the candidates left are counted"),
    cl::init(4000));

cl::opt<bool> planCheckExtrapolation(
    "plan-check-extrapolation",
    cl::desc("With --plan auto: also compile the best plan at full depth and "
             "print the reduced-depth extrapolation's error"),
    cl::init(false));

cl::opt<std::string> cudaArch(
    "cuda-arch",
    cl::desc("With --target=cuda: the GPU architecture (sm_90a: H100/H200); "
             "libtitanrt_cuda must have been built for it "
             "(-DTITAN_CUDA_ARCHS)"),
    cl::init("sm_90a"));

cl::opt<std::string> scheduleTimeline(
    "schedule-timeline",
    cl::desc("With --emit=schedule: also draw each rank's actions over the "
             "simulated time as an SVG chart in this file"),
    cl::value_desc("file.svg"));

cl::opt<std::string> memoryTimeline(
    "memory-timeline",
    cl::desc("With --emit=memory: also write the planned memory over time "
             "as an SVG chart to this file"),
    cl::value_desc("file.svg"));

cl::opt<int64_t> worldSize(
    "world-size",
    cl::desc("Ranks the executable runs on, >= 1 (default: the product of "
             "the parallel degrees, with data_parallel_shard_degree = -1 "
             "taken as 1)"),
    cl::init(0));

enum class KeyListing { None, Tsv, Markdown };

cl::opt<KeyListing> listConfigKeys(
    "list-config-keys", cl::desc("Print every training config key and exit"),
    cl::init(KeyListing::None),
    cl::values(clEnumValN(KeyListing::Tsv, "tsv",
                          "one per line: key, group (implemented, "
                          "no-meaning, refused, alias-of KEY), default"),
               clEnumValN(KeyListing::Markdown, "markdown",
                          "docs/config-keys.md")));

cl::opt<std::string> outputFilename(
    "o", cl::desc("Output file (default: stdout; ./train for --emit=exe)"),
    cl::value_desc("filename"), cl::init("-"));

int reportError(llvm::StringRef message) {
  llvm::SmallVector<llvm::StringRef> lines;
  message.split(lines, '\n');
  for (llvm::StringRef line : lines)
    llvm::WithColor::error(llvm::errs(), "titan-compile") << line << "\n";
  return 1;
}

int reportError(llvm::Error error) {
  return reportError(llvm::toString(std::move(error)));
}

int compilationFailed() {
  return reportError("compilation failed (see the diagnostics above)");
}

std::string runtimeDir() {
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("TITAN_RUNTIME_DIR"))
    return *env;
  return TITAN_DEFAULT_RUNTIME_DIR;
}

std::string modelsDir() {
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("TITAN_MODELS_DIR"))
    return *env;
  return TITAN_DEFAULT_MODELS_DIR;
}

/// `list` as a std::vector (the link driver's comma-separated defines).
std::vector<std::string> splitList(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef> items;
  list.split(items, ',', -1, false);
  return {items.begin(), items.end()};
}

/// What the executable links besides its objects: libtitanrt and the
/// target's kernels, with the flags this titan was built with (a sanitized
/// build's runtime needs the sanitizers').
RuntimeLink runtimeLink() {
  RuntimeLink link;
  link.runtimeDir = runtimeDir();
  link.driverFlags = splitList(TITAN_RUNTIME_LINK_FLAGS);
  if (target != KernelTarget::CUDA)
    return link;
  // The CUDA kernels link statically: the executable carries its SASS.
  link.kernelLibraries.clear();
  for (const char *archive : {"libtitanrt_cuda.a", "libtitanrt_cuda_kernels.a"})
    link.kernelLibraries.push_back(
        (llvm::Twine(link.runtimeDir) + "/" + archive).str());
  link.systemLibraries = splitList(TITAN_CUDA_LINK_LIBRARIES);
  link.libraryDirs = {TITAN_CUDA_LIBRARY_DIR};
  return link;
}

/// One compilation: the config, the model, the mesh and where the phases
/// report (the timers of --mlir-timing, the output).
struct Compilation {
  const TrainConfig &config;
  const LlamaArgs &model;
  MeshDegrees mesh;
  mlir::TimingScope &timer;
  llvm::ToolOutputFile *output;

  /// Runs the pipeline `build` adds on `module`, with the pass manager's
  /// command-line options (--mlir-print-ir-*, --mlir-timing, ...).
  mlir::LogicalResult
  run(mlir::ModuleOp module,
      llvm::function_ref<void(mlir::OpPassManager &)> build) {
    mlir::PassManager pm(module.getContext());
    if (failed(mlir::applyPassManagerCLOptions(pm)))
      return mlir::failure();
    pm.enableTiming(timer);
    build(pm);
    return pm.run(module);
  }

  /// Runs one phase, `build` with `options`.
  template <typename Options>
  mlir::LogicalResult run(mlir::ModuleOp module,
                          void (*build)(mlir::OpPassManager &, const Options &),
                          const Options &options) {
    return run(module, [&](mlir::OpPassManager &pm) { build(pm, options); });
  }

  int print(mlir::Operation *op) {
    op->print(output->os());
    output->os() << "\n";
    return 0;
  }

  void partitionOptions(PartitionPipelineOptions &o) const {
    setPartitionOptions(config, mesh, o);
  }
  void trainingOptions(TrainingPipelineOptions &o) const {
    setTrainingOptions(config, mesh, target, o);
  }
  void executionOptions(ExecutionPipelineOptions &o) const {
    setExecutionOptions(config, model, mesh, target, o);
    if (config.validation.enable)
      o.functions = {"forward_backward", "optimizer_step", "eval"};
  }

  /// validation.enable: adds the forward-only `eval` step to the trained
  /// whole-step `module`: the model imported again at validation's batch
  /// and sequence length, partitioned over the same mesh and through the
  /// eval phase. The execution phase then plans it with the training
  /// steps: it runs between them, so its activations reuse theirs.
  mlir::LogicalResult addEval(mlir::ModuleOp module) {
    if (!config.validation.enable)
      return mlir::success();
    mlir::TimingScope t = timer.nest("eval step");
    mlir::OwningOpRef<mlir::ModuleOp> eval =
        importModel(*module.getContext(), model, config,
                    config.validation.localBatchSize, config.validation.seqLen);
    PartitionPipelineOptions partition;
    partitionOptions(partition);
    TrainingPipelineOptions training;
    trainingOptions(training);
    if (failed(run(*eval, buildPartitionPipeline, partition)) ||
        failed(run(*eval, buildEvalPipeline, training)))
      return mlir::failure();
    return addEvalStep(module, *eval);
  }
};

/// --emit=pipeline: a titan-opt invocation per program that reproduces
/// this compilation from the imported module (--emit=titan with
/// --mlir-print-debuginfo: the passes read the ops' module paths).
void printPipelineInvocations(Compilation &job,
                              const PipelineJob *pipelineJob) {
  llvm::raw_ostream &os = job.output->os();
  auto phase = [&](llvm::StringRef name,
                   const mlir::detail::PassOptions &options) {
    os << name;
    options.print(os);
  };
  PartitionPipelineOptions partition;
  job.partitionOptions(partition);
  int64_t programs = pipelineJob ? pipelineJob->plan.ranks : 1;
  for (int64_t r = 0; r < programs; ++r) {
    TrainingPipelineOptions training;
    job.trainingOptions(training);
    ExecutionPipelineOptions execution;
    job.executionOptions(execution);
    LoweringPipelineOptions lowering;
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
  }
  if (pipelineJob || !job.config.validation.enable)
    return;
  // The eval step's phases run on the forward imported at validation's
  // shape; titan-compile then moves it into the program above before its
  // execution phase.
  TrainingPipelineOptions training;
  job.trainingOptions(training);
  os << "// eval step (validation.enable), on the forward imported at "
     << job.config.validation.localBatchSize << " x "
     << job.config.validation.seqLen << " tokens\nbuiltin.module(";
  phase("titan-partition-pipeline", partition);
  os << ",";
  phase("titan-eval-pipeline", training);
  os << ")\n";
}

/// --emit=summary: the model and step facts, Float8's plan, and with a
/// world size (or fixed degrees) what one rank holds and sends.
int emitSummary(Compilation &job, mlir::ModuleOp module) {
  llvm::raw_ostream &os = job.output->os();
  const TrainConfig &c = job.config;
  printSummary(job.model, c, module, os);
  if (c.float8.enabled(c.model.converters)) {
    PartitionPipelineOptions conversion;
    job.partitionOptions(conversion);
    printFloat8Plan(module, conversion, os);
  }
  if (worldSize == 0 && c.parallelism.dataParallelShardDegree <= 0)
    return 0;
  llvm::Expected<MeshDegrees> mesh = resolveMesh(c, worldSize);
  if (!mesh)
    return reportError(mesh.takeError());
  job.mesh = *mesh;
  PartitionPipelineOptions partition;
  job.partitionOptions(partition);
  if (failed(job.run(module, buildPartitionPipeline, partition)))
    return compilationFailed();
  // Under pipeline parallelism each pipeline rank has its own program;
  // what each holds, from the stage plan (--emit=memory plans them).
  if (job.mesh.pp > 1) {
    llvm::Expected<PipelineJob> pipelineJob = planPipelineJob(job.model, c);
    if (!pipelineJob)
      return reportError(pipelineJob.takeError());
    printPipelineSummary(*pipelineJob, module, os);
    return 0;
  }
  TrainingPipelineOptions training;
  job.trainingOptions(training);
  if (failed(job.run(module, buildTrainingPipeline, training)) ||
      failed(job.addEval(module)))
    return compilationFailed();
  // The peak comes from the memory plan of the same program.
  mlir::OwningOpRef<mlir::ModuleOp> planned = module.clone();
  ExecutionPipelineOptions execution;
  job.executionOptions(execution);
  if (failed(job.run(*planned, buildExecutionPipeline, execution)))
    return compilationFailed();
  printPerRankPlan(module, kernel::getArenaBytes(*planned), os);
  return 0;
}

/// The arena of the same step without activation checkpointing, for
/// --emit=memory's comparison.
std::optional<int64_t> arenaWithoutCheckpointing(Compilation &job,
                                                 mlir::ModuleOp partitioned) {
  mlir::OwningOpRef<mlir::ModuleOp> plain = partitioned.clone();
  TrainingPipelineOptions training;
  job.trainingOptions(training);
  training.checkpointMode = "none";
  ExecutionPipelineOptions execution;
  job.executionOptions(execution);
  if (failed(job.run(*plain, buildTrainingPipeline, training)) ||
      failed(job.addEval(*plain)) ||
      failed(job.run(*plain, buildExecutionPipeline, execution)))
    return std::nullopt;
  return kernel::getArenaBytes(*plain);
}

/// The memory report of a single program (every rank runs it).
void printMemoryPlan(mlir::ModuleOp module, llvm::raw_ostream &os) {
  dist::MeshAttr meshAttr = dist::getMesh(module);
  kernel::printMemoryReport(module, meshAttr ? meshAttr.getWorldSize() : 1, os);
}

/// --emit=memory for a single program: the plan's report, the saving of
/// activation checkpointing, and the timeline chart.
int emitMemoryReport(Compilation &job, mlir::ModuleOp module,
                     std::optional<int64_t> arenaWithout) {
  llvm::raw_ostream &os = job.output->os();
  printMemoryPlan(module, os);
  if (arenaWithout) {
    const auto &ac = job.config.activationCheckpoint;
    int64_t with = kernel::getArenaBytes(module);
    os << llvm::formatv(
        "activation checkpointing ({0}{1}): arena {2} vs {3} without "
        "(mode none): {4} saved ({5:F1}%)\n",
        ac.mode, ac.mode == "selective" ? " " + ac.selectiveAcOption : "",
        humanBytes(double(with)), humanBytes(double(*arenaWithout)),
        humanBytes(double(*arenaWithout - with)),
        100.0 * double(*arenaWithout - with) /
            double(std::max<int64_t>(*arenaWithout, 1)));
  }
  if (memoryTimeline.empty())
    return 0;
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> svg =
      mlir::openOutputFile(memoryTimeline, &error);
  if (!svg)
    return reportError(error);
  kernel::writeMemoryTimelineSVG(module,
                                 job.config.model.name + " " + job.model.name +
                                     ": planned memory per rank",
                                 svg->os());
  svg->keep();
  return 0;
}

/// TorchTitan's memory_estimation.enable on a compilation that writes an
/// object or an executable: the memory plan goes to stdout beside it. It
/// is titan's exact plan (one arena per rank), not an estimate.
bool estimatesMemory(const Compilation &job) {
  return job.config.memoryEstimation.enable && !job.output;
}

/// Writes the lowered `module` as an object file: `path`, or a temporary
/// file whose name is returned (the caller removes it).
llvm::Expected<std::string> writeObject(mlir::ModuleOp module,
                                        llvm::StringRef path,
                                        llvm::StringRef tempPrefix) {
  llvm::SmallString<128> objectPath(path);
  if (path.empty())
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile(tempPrefix, "o", objectPath))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "cannot create a temporary object file: " +
                                         ec.message());
  if (llvm::Error e = emitObjectFile(module, objectPath))
    return std::move(e);
  return objectPath.str().str();
}

/// A single program (no pipeline parallelism) from the partitioned
/// per-rank forward: training (and the eval step), execution and lowering,
/// then the object and the executable.
int compileProgram(Compilation &job, mlir::ModuleOp module) {
  const TrainConfig &c = job.config;
  llvm::Expected<manifest::Manifest> manifest =
      buildManifest(job.model, c, module);
  if (!manifest)
    return reportError(manifest.takeError());
  std::optional<int64_t> arenaWithout;
  if (emitStage == EmitStage::Memory && c.activationCheckpoint.mode != "none")
    if (!(arenaWithout = arenaWithoutCheckpointing(job, module)))
      return compilationFailed();
  TrainingPipelineOptions training;
  job.trainingOptions(training);
  if (failed(job.run(module, buildTrainingPipeline, training)) ||
      failed(job.addEval(module)))
    return compilationFailed();
  if (emitStage == EmitStage::Train)
    return job.print(module);
  ExecutionPipelineOptions execution;
  job.executionOptions(execution);
  if (failed(job.run(module, buildExecutionPipeline, execution)))
    return compilationFailed();
  if (emitStage == EmitStage::Kernel)
    return job.print(module);
  if (emitStage == EmitStage::Schedule) {
    kernel::printCollectiveSchedule(module, job.output->os());
    return 0;
  }
  if (emitStage == EmitStage::Memory)
    return emitMemoryReport(job, module, arenaWithout);
  if (estimatesMemory(job))
    printMemoryPlan(module, llvm::outs());
  // The runtime places its state where the plan says.
  addArenaToManifest(*manifest, module);
  if (c.validation.enable)
    manifest->eval = {c.validation.localBatchSize, c.validation.seqLen};
  manifest->accumulationSteps = accumulationSteps(c, job.mesh);
  manifest->target = stringifyKernelTarget(target).str();
  if (target == KernelTarget::CUDA)
    manifest->cudaArch = cudaArch;
  LoweringPipelineOptions lowering;
  if (failed(job.run(module, buildLoweringPipeline, lowering)))
    return compilationFailed();
  if (emitStage == EmitStage::LLVM)
    return job.print(module);

  embedManifest(module, manifest::printManifest(*manifest));
  llvm::Expected<std::string> object = [&] {
    mlir::TimingScope t = job.timer.nest("emit object");
    return writeObject(
        module,
        emitStage == EmitStage::Object ? std::string(outputFilename) : "",
        "titan-step");
  }();
  if (!object)
    return reportError(object.takeError());
  if (emitStage == EmitStage::Object)
    return 0;
  mlir::TimingScope t = job.timer.nest("link");
  llvm::Error linked =
      linkTrainingExecutable(*object, outputFilename, runtimeLink());
  llvm::sys::fs::remove(*object);
  if (linked)
    return reportError(std::move(linked));
  return 0;
}

/// --emit=memory for pipeline rank `rank`: its planned arena and its
/// microbatch frames.
void printPipelineRankMemory(Compilation &job, const PipelineJob &pipelineJob,
                             int64_t rank, mlir::ModuleOp module,
                             llvm::raw_ostream &os) {
  os << "pipeline rank " << rank << " (stages "
     << llvm::join(llvm::map_range(pipelineJob.plan.stagesOfRank[size_t(rank)],
                                   [](int64_t s) { return std::to_string(s); }),
                   ", ")
     << "):\n";
  kernel::printMemoryReport(module, job.mesh.worldSize(), os);
  printPipelineMemory(pipelineJob, rank, module, os);
}

/// Pipeline rank `rank`'s program from the partitioned per-rank forward:
/// its stages' training phases, execution and lowering, written as an
/// object (appended to `objects`) unless --emit stops earlier; `functions`
/// gets the program's step functions.
int compilePipelineRank(Compilation &job, const PipelineJob &pipelineJob,
                        int64_t rank, mlir::ModuleOp partitioned,
                        const manifest::Manifest &whole,
                        llvm::SmallVectorImpl<std::string> &objects,
                        std::vector<std::string> &functions) {
  const TrainConfig &c = job.config;
  mlir::OwningOpRef<mlir::ModuleOp> module = partitioned.clone();
  TrainingPipelineOptions training;
  job.trainingOptions(training);
  std::vector<std::string> phases =
      setPipelineRankOptions(pipelineJob, rank, training);
  if (failed(job.run(*module, buildPipelineParallelTrainingPipeline, training)))
    return compilationFailed();
  auto printRank = [&] {
    job.output->os() << "// pipeline rank " << rank << "\n";
    return job.print(*module);
  };
  if (emitStage == EmitStage::Train)
    return printRank();
  llvm::Expected<manifest::Manifest> manifest =
      buildManifest(job.model, c, *module, phases);
  if (!manifest)
    return reportError(manifest.takeError());
  functions = phases;
  functions.push_back("optimizer_step");
  ExecutionPipelineOptions execution;
  job.executionOptions(execution);
  execution.functions = llvm::ArrayRef(functions);
  if (failed(job.run(*module, buildExecutionPipeline, execution)))
    return compilationFailed();
  if (emitStage == EmitStage::Kernel)
    return printRank();
  if (emitStage == EmitStage::Memory) {
    printPipelineRankMemory(job, pipelineJob, rank, *module, job.output->os());
    return 0;
  }
  if (estimatesMemory(job))
    printPipelineRankMemory(job, pipelineJob, rank, *module, llvm::outs());
  addArenaToManifest(*manifest, *module);
  addPipelineToManifest(*manifest, pipelineJob, rank, *module);
  addPipelineParameters(*manifest, whole, pipelineJob);
  manifest->accumulationSteps = accumulationSteps(c, job.mesh);
  manifest->target = stringifyKernelTarget(target).str();
  // The pipeline's transfers and its loss reduction run over pp.
  if (!llvm::is_contained(manifest->collectiveAxes, 1u))
    manifest->collectiveAxes.push_back(1);
  LoweringPipelineOptions lowering;
  lowering.symbolPrefix = "titan_pp" + std::to_string(rank) + "_";
  if (failed(job.run(*module, buildLoweringPipeline, lowering)))
    return compilationFailed();
  if (emitStage == EmitStage::LLVM)
    return printRank();
  embedManifest(*module, manifest::printManifest(*manifest),
                "titan_pp" + std::to_string(rank) + "_manifest");
  std::string path;
  if (emitStage == EmitStage::Object)
    path = outputFilename +
           (pipelineJob.plan.ranks > 1 ? "." + std::to_string(rank) : "");
  llvm::Expected<std::string> object =
      writeObject(*module, path, "titan-pp" + std::to_string(rank));
  if (!object)
    return reportError(object.takeError());
  if (emitStage != EmitStage::Object)
    objects.push_back(*object);
  return 0;
}

/// Links the pipeline ranks' objects with the generated table of their
/// programs (which defines main()).
int linkPipelineExecutable(
    llvm::SmallVectorImpl<std::string> &objects,
    const std::vector<std::vector<std::string>> &tables) {
  llvm::SmallString<128> tablePath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("titan-programs",
                                                              "cpp", tablePath))
    return reportError("cannot create a temporary source file: " +
                       ec.message());
  objects.push_back(tablePath.str().str());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tablePath, ec);
    if (ec)
      return reportError(
          ("cannot write '" + tablePath + "': " + ec.message()).str());
    os << pipelineTableSource(tables);
  }
  RuntimeLink link = runtimeLink();
  link.extraInputs.assign(objects.begin() + 1, objects.end());
  if (llvm::Error e =
          linkTrainingExecutable(objects.front(), outputFilename, link))
    return reportError(std::move(e));
  return 0;
}

/// Pipeline parallel: one program per pipeline rank, from the partitioned
/// per-rank forward, linked into one executable with the table that hands
/// each rank its program.
int compilePipelined(Compilation &job, mlir::ModuleOp partitioned) {
  // TorchTitan evaluates through a forward-only pipeline schedule, which
  // titan does not have yet.
  if (job.config.validation.enable)
    return reportError("validation.enable with "
                       "parallelism.pipeline_parallel_degree > 1 is not "
                       "implemented yet (the eval step runs on whole-step "
                       "programs: FSDP, HSDP, TP, CP)");
  llvm::Expected<PipelineJob> pipelineJob =
      planPipelineJob(job.model, job.config);
  if (!pipelineJob)
    return reportError(pipelineJob.takeError());
  // The programs and their memory plans exist for the CUDA target; its
  // executable does not.
  if (target == KernelTarget::CUDA &&
      llvm::is_contained({EmitStage::LLVM, EmitStage::Object, EmitStage::Exe},
                         emitStage))
    return reportError("parallelism.pipeline_parallel_degree > 1 with "
                       "--target=cuda is not implemented yet (the pipeline "
                       "runtime's transfers run on MPI ranks of the CPU "
                       "target; --emit=memory plans it)");
  // Every parameter of the model, for the ranks' checkpoint indexes.
  llvm::Expected<manifest::Manifest> whole =
      buildManifest(job.model, job.config, partitioned);
  if (!whole)
    return reportError(whole.takeError());
  std::vector<std::vector<std::string>> tables;
  llvm::SmallVector<std::string> objects;
  llvm::scope_exit cleanup([&] {
    for (const std::string &object : objects)
      llvm::sys::fs::remove(object);
  });
  for (int64_t r = 0; r < job.mesh.pp; ++r) {
    std::vector<std::string> functions;
    if (int rc = compilePipelineRank(job, *pipelineJob, r, partitioned, *whole,
                                     objects, functions))
      return rc;
    tables.push_back(std::move(functions));
  }
  if (emitStage != EmitStage::Exe)
    return 0;
  return linkPipelineExecutable(objects, tables);
}

/// Everything from the imported model on: the phases up to --emit's stage.
int compile(Compilation &job, mlir::ModuleOp module) {
  if (emitStage == EmitStage::Summary)
    return emitSummary(job, module);
  if (emitStage == EmitStage::Titan)
    return job.print(module);
  if (emitStage >= EmitStage::Train || emitStage == EmitStage::Schedule)
    if (llvm::Error e = diagnoseUnsupported(job.config, target))
      return reportError(std::move(e));
  llvm::Expected<MeshDegrees> mesh = resolveMesh(job.config, worldSize);
  if (!mesh)
    return reportError(mesh.takeError());
  job.mesh = *mesh;
  if (emitStage == EmitStage::Pipeline) {
    if (job.mesh.pp == 1) {
      printPipelineInvocations(job, nullptr);
      return 0;
    }
    llvm::Expected<PipelineJob> pipelineJob =
        planPipelineJob(job.model, job.config);
    if (!pipelineJob)
      return reportError(pipelineJob.takeError());
    printPipelineInvocations(job, &*pipelineJob);
    return 0;
  }
  PartitionPipelineOptions partition;
  job.partitionOptions(partition);
  if (failed(job.run(module, buildPartitionPipeline, partition)))
    return compilationFailed();
  if (emitStage == EmitStage::Partitioned)
    return job.print(module);
  if (target == KernelTarget::CUDA)
    if (llvm::Error e = checkCudaFloat8Shapes(module, job.config))
      return reportError(std::move(e));
  if (job.mesh.pp > 1)
    return compilePipelined(job, module);
  return compileProgram(job, module);
}

/// The hardware --emit=cost predicts for (--hardware, else --gpu, else
/// h100, or the CPU with --target=cpu) and the program it runs: the CUDA
/// program on a GPU, the CPU program where ranks share a node's cores.
llvm::Expected<std::pair<cost::Hardware, KernelTarget>> resolveHardware() {
  cost::Hardware hw;
  if (!hardwareFile.empty()) {
    llvm::Expected<cost::Hardware> loaded =
        cost::loadHardwareFile(hardwareFile);
    if (!loaded)
      return loaded.takeError();
    hw = std::move(*loaded);
  } else {
    std::string name =
        gpuName.getNumOccurrences() ? gpuName.getValue()
        : target.getNumOccurrences() && target == KernelTarget::CPU ? "cpu"
                                                                    : "h100";
    const cost::Hardware *found = cost::lookupHardware(name);
    if (!found)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "--gpu " + name + ": unknown hardware; the known ones are " +
              llvm::join(llvm::map_range(
                             cost::builtinHardware(),
                             [](const cost::Hardware &h) { return h.name; }),
                         ", ") +
              " (--hardware FILE.toml describes any other)");
    hw = *found;
  }
  KernelTarget described =
      hw.ranksShareCompute ? KernelTarget::CPU : KernelTarget::CUDA;
  if (target.getNumOccurrences() && target != described)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("--target={0} contradicts the hardware description "
                      "'{1}', which runs the {2} program (leave --target out, "
                      "or pick a {3} description)",
                      stringifyKernelTarget(target), hw.name,
                      stringifyKernelTarget(described),
                      target == KernelTarget::CPU ? "CPU (--gpu cpu)" : "GPU")
            .str());
  return std::make_pair(std::move(hw), described);
}

/// --emit=cost: the job compiled for the hardware's target through the
/// execution phase, and its predicted step.
int emitCost(const LlamaArgs &model, const TrainConfig &config,
             llvm::raw_ostream &os) {
  llvm::Expected<std::pair<cost::Hardware, KernelTarget>> hw =
      resolveHardware();
  if (!hw)
    return reportError(hw.takeError());
  if (llvm::Error e = diagnoseUnsupported(config, hw->second))
    return reportError(std::move(e));
  llvm::Expected<MeshDegrees> mesh = resolveMesh(config, worldSize);
  if (!mesh)
    return reportError(mesh.takeError());
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  llvm::Expected<JobPrediction> prediction =
      predictJob(context, model, config, *mesh, hw->second, hw->first);
  if (!prediction)
    return reportError(prediction.takeError());
  if (costFormat == CostFormat::JSON)
    printPredictionJSON(*prediction, os);
  else
    printPrediction(*prediction, os);
  return 0;
}

/// --plan auto: searches the layouts of --gpus devices and replaces
/// `config` with the best one's (the mesh, the world size and the target
/// of the hardware follow), which main then compiles; with
/// --plan-format=json it prints every fitting plan to `output` instead.
int planAuto(const LlamaArgs &model, TrainConfig &config,
             llvm::ToolOutputFile *output) {
  llvm::Expected<std::pair<cost::Hardware, KernelTarget>> hw =
      resolveHardware();
  if (!hw)
    return reportError(hw.takeError());
  PlanOptions opts;
  opts.gpus = planGpus;
  opts.memoryGiB = memoryPerGpu;
  opts.top = planTop;
  opts.json = planFormat == PlanFormat::JSON;
  opts.checkExtrapolation = planCheckExtrapolation;
  opts.maxSeconds = planMaxSeconds;
  opts.maxWork = planBudget;
  if (memoryPerGpu.getNumOccurrences() && !(memoryPerGpu > 0))
    return reportError("--memory-per-gpu must be positive (GiB)");
  // The enumeration walks the divisors of the device count and the global
  // batch: bound them so a typo errors instead of spinning.
  constexpr int64_t kMaxPlanDevices = int64_t(1) << 20;
  if (planGpus > kMaxPlanDevices)
    return reportError(llvm::formatv("--gpus {0}: at most {1} devices",
                                     planGpus.getValue(), kMaxPlanDevices)
                           .str());
  if (config.training.globalBatchSize > kMaxPlanDevices * 1024)
    return reportError(
        llvm::formatv("--plan auto: training.global_batch_size {0} is over "
                      "the planner's limit {1}",
                      config.training.globalBatchSize, kMaxPlanDevices * 1024)
            .str());
  if (planTop < 1)
    return reportError("--plan-top must be at least 1");
  if (planBudget < 0)
    return reportError("--plan-budget must be 0 (no limit) or positive");
  // The table is the output only when it is what was asked for (--emit=cost
  // prints the prediction after it, --plan-format=json the plans); before a
  // program (--emit=kernel, ...) or an executable it goes to stderr, so the
  // output stays what --emit says.
  bool tableIsOutput =
      emitStage == EmitStage::Cost || planFormat == PlanFormat::JSON;
  llvm::raw_ostream &os = !tableIsOutput ? llvm::errs()
                          : output       ? output->os()
                                         : llvm::outs();
  llvm::Expected<std::optional<TrainConfig>> best =
      runPlanAuto(model, config, hw->first, hw->second, opts, os);
  if (!best)
    return reportError(best.takeError());
  if (!*best)
    return 0;
  config = std::move(**best);
  worldSize = planGpus;
  target = hw->second;
  if (target == KernelTarget::CUDA &&
      llvm::is_contained({EmitStage::LLVM, EmitStage::Object, EmitStage::Exe},
                         emitStage.getValue()))
    if (llvm::Error e = checkCudaTarget(cudaArch))
      return reportError(std::move(e));
  return 0;
}

/// Splits `--section.key value` config overrides from the tool's own
/// options and parses the latter.
llvm::Expected<std::vector<ConfigOverride>> parseArguments(int argc,
                                                           char **argv) {
  std::vector<ConfigOverride> overrides;
  std::vector<const char *> toolArgs = {argv[0]};
  if (llvm::Error e = extractConfigOverrides(
          llvm::ArrayRef<const char *>(argv + 1, argv + argc), overrides,
          toolArgs))
    return std::move(e);

  // The config keys are listed after the tool's own options in --help.
  static std::string configKeyHelp = [] {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "\nTRAINING CONFIG KEYS (--section.key value | "
          "--section.key=value):\n\n";
    printTrainConfigKeys(os);
    return text;
  }();
  static cl::extrahelp configHelp(configKeyHelp);

  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerPassManagerCLOptions();
  cl::ParseCommandLineOptions(
      toolArgs.size(), toolArgs.data(),
      "titan-compile: Llama model + TorchTitan-style training config -> "
      "compiled training job\n\n"
      "  titan-compile --job.config_file FILE [--section.key value]... "
      "[--emit=STAGE] [-o OUT]\n\n"
      "Every key of the training config can be overridden as "
      "--section.key value or --section.key=value.\n");
  return overrides;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::Expected<std::vector<ConfigOverride>> overrides =
      parseArguments(argc, argv);
  if (!overrides)
    return reportError(overrides.takeError());
  if (listConfigKeys != KeyListing::None) {
    if (listConfigKeys == KeyListing::Tsv)
      listTrainConfigKeys(llvm::outs());
    else
      printTrainConfigKeysMarkdown(llvm::outs());
    return 0;
  }
  // 0 is the option's "unset" (the degrees' product); written, it is wrong.
  if (worldSize.getNumOccurrences() && worldSize <= 0)
    return reportError(llvm::formatv("--world-size: {0} ranks; it must be at "
                                     "least 1",
                                     worldSize.getValue())
                           .str());
  llvm::Expected<TrainConfig> config = loadTrainConfig(*overrides);
  if (!config)
    return reportError(config.takeError());
  // --emit=cost needs no CUDA runtime: it stops at the kernel IR.
  if (target == KernelTarget::CUDA && emitStage != EmitStage::Cost)
    if (llvm::Error e = checkCudaTarget(cudaArch))
      return reportError(std::move(e));
  if (emitStage != EmitStage::Cost && planMode.empty())
    for (cl::Option *o : std::initializer_list<cl::Option *>{
             &gpuName, &hardwareFile, &costFormat})
      if (o->getNumOccurrences())
        return reportError("--" + o->ArgStr.str() +
                           " describes what --emit=cost predicts; this "
                           "compilation emits something else");
  if (!planMode.empty() && planMode != "auto")
    return reportError("--plan " + planMode + ": the only planner is 'auto'");
  if (planMode.empty())
    for (cl::Option *o : std::initializer_list<cl::Option *>{
             &planGpus, &memoryPerGpu, &planTop, &planFormat,
             &planCheckExtrapolation, &planMaxSeconds, &planBudget})
      if (o->getNumOccurrences())
        return reportError("--" + o->ArgStr.str() + " needs --plan auto");
  if (config->job.printConfig)
    printTrainConfig(*config, llvm::errs());

  bool toFile = emitStage == EmitStage::Object || emitStage == EmitStage::Exe;
  if (toFile && outputFilename == "-")
    outputFilename = emitStage == EmitStage::Exe ? "train" : "train.o";
  std::string errorMessage;
  std::unique_ptr<llvm::ToolOutputFile> output;
  if (!toFile) {
    output = mlir::openOutputFile(outputFilename, &errorMessage);
    if (!output)
      return reportError(errorMessage);
  }
  if (emitStage == EmitStage::Config) {
    printTrainConfig(*config, output->os());
    output->keep();
    return 0;
  }

  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope rootTimer = timing.getRootScope();
  llvm::Expected<LlamaArgs> model = [&] {
    mlir::TimingScope t = rootTimer.nest("resolve model");
    return resolveLlamaModel(*config, modelsDir());
  }();
  if (!model)
    return reportError(model.takeError());
  if (!planMode.empty()) {
    int rc = planAuto(*model, *config, output.get());
    if (rc != 0 || planFormat == PlanFormat::JSON) {
      if (rc == 0 && output)
        output->keep();
      return rc;
    }
  }
  if (llvm::Error e = checkModelFitsConfig(*model, *config))
    return reportError(std::move(e));
  // TorchTitan v0.2.0 (llama3 update_from_config) warns and trains at the
  // longer length (the long-context runs go past the flavor's 131072).
  if (config->training.seqLen > model->maxSeqLen)
    llvm::WithColor::warning(llvm::errs(), "titan-compile")
        << "training.seq_len " << config->training.seqLen
        << " exceeds the model's max_seq_len " << model->maxSeqLen
        << "; max_seq_len becomes the sequence length, as TorchTitan's\n";
  if (emitStage == EmitStage::Cost) {
    int rc = emitCost(*model, *config, output->os());
    if (rc == 0)
      output->keep();
    return rc;
  }
  // Pipeline parallel: the pipeline schedule, from the stage plan alone;
  // otherwise the steps' kernel order, after compiling them.
  if (emitStage == EmitStage::Schedule &&
      config->parallelism.pipelineParallelDegree > 1) {
    if (llvm::Error e = printPipelineSchedule(*model, *config, scheduleTimeline,
                                              output->os()))
      return reportError(std::move(e));
    output->keep();
    return 0;
  }

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module = [&] {
    mlir::TimingScope t = rootTimer.nest("import");
    // At the shapes a step sees (under pipeline parallelism one
    // microbatch).
    const auto &p = config->parallelism;
    return importModel(context, *model, *config,
                       p.pipelineParallelDegree > 1
                           ? p.pipelineParallelMicrobatchSize
                           : config->training.localBatchSize,
                       config->training.seqLen);
  }();
  {
    mlir::TimingScope t = rootTimer.nest("verify");
    if (failed(mlir::verify(*module)))
      return reportError("internal error: the imported module does not "
                         "verify (see the diagnostics above)");
  }
  if (emitStage == EmitStage::Schedule && !scheduleTimeline.empty())
    return reportError("--schedule-timeline draws a pipeline schedule; "
                       "parallelism.pipeline_parallel_degree is 1");
  Compilation job{*config, *model, MeshDegrees(), rootTimer, output.get()};
  int rc = compile(job, *module);
  if (rc == 0 && output)
    output->keep();
  return rc;
}
