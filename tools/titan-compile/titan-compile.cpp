//===- titan-compile.cpp - model + training config -> compiled job --------===//
//
//   titan-compile --job.config_file FILE [--section.key value]...
//                 [--emit=config|titan|summary] [-o OUT]
//
// Reads a TorchTitan-style training config, imports the model it names into
// the titan dialect and emits the requested stage.
//
//===----------------------------------------------------------------------===//

#include "Summary.h"

#include "Manifest.h"
#include "Pipeline.h"

#include "titan/Config/TrainConfig.h"
#include "titan/Conversion/KernelToCPU/Passes.h"
#include "titan/Conversion/TitanToKernel/Passes.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/Dialect/Kernel/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/KernelTarget.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"
#include "titan/Import/LlamaImporter.h"
#include "titan/InitTitan.h"
#include "titan/Model/ConfigFit.h"
#include "titan/Model/LlamaArgs.h"
#include "titan/Model/PipelineStages.h"
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
  Partitioned,
  Train,
  Kernel,
  Memory,
  LLVM,
  Object,
  Exe
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
                   "schedule's bubble"),
        clEnumValN(EmitStage::Titan, "titan",
                   "the imported forward graph (titan dialect)"),
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
        clEnumValN(EmitStage::Exe, "exe", "a training executable (default)")));

cl::opt<KernelTarget> target(
    "target", cl::desc("What the executable trains on"),
    cl::init(KernelTarget::CPU),
    cl::values(clEnumValN(KernelTarget::CPU, "cpu",
                          "the host's cores (OpenBLAS GEMMs; MPI ranks)"),
               clEnumValN(KernelTarget::CUDA, "cuda",
                          "NVIDIA GPUs (cuBLASLt, cuDNN, fused kernels; NCCL "
                          "ranks)")));

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
    cl::desc("Ranks the executable runs on (default: the product of the "
             "parallel degrees, with data_parallel_shard_degree = -1 taken "
             "as 1)"),
    cl::init(0));

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

/// Whether libtitanrt_cuda exists in this build and has code for `arch`
/// ("sm_90a").
llvm::Error checkCudaTarget(llvm::StringRef arch) {
  llvm::SmallVector<llvm::StringRef> built;
  llvm::StringRef(TITAN_CUDA_ARCHS_BUILT).split(built, ',', -1, false);
  if (built.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--target=cuda: this titan was built without the CUDA target (no "
        "nvcc and cuBLASLt at configure time, or -DTITAN_ENABLE_CUDA=OFF)");
  if (!arch.consume_front("sm_") || !llvm::is_contained(built, arch))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--cuda-arch=" + cudaArch + ": libtitanrt_cuda has code for sm_" +
            llvm::join(built, ", sm_") +
            " only; rebuild it with -DTITAN_CUDA_ARCHS=\"" +
            llvm::join(built, ";") + ";<arch>\" (e.g. 100a)");
  return llvm::Error::success();
}

/// --emit=schedule: the stage split, each rank's actions (TorchTitan's CSV
/// notation), and the bubble simulated with unit costs (F = 1, B = 2; a
/// looped schedule's chunk costs 1 / v of that) beside the textbook's.
llvm::Error printPipelineSchedule(const LlamaArgs &model, const TrainConfig &c,
                                  llvm::raw_ostream &os) {
  const auto &p = c.parallelism;
  llvm::Expected<PipelineJob> job = planPipelineJob(model, c);
  if (!job)
    return job.takeError();
  const PipelinePlan *plan = &job->plan;
  const PipelineSchedule *schedule = &job->schedule;
  int64_t microbatches = job->microbatches;
  int64_t v = int64_t(plan->stagesOfRank.front().size());
  llvm::Expected<ScheduleTimeline> timeline =
      simulateSchedule(*schedule, 1.0 / double(v), 2.0 / double(v));
  if (!timeline)
    return timeline.takeError();
  os << llvm::formatv("schedule {0}: {1} ranks, {2} stages, {3} microbatches "
                      "of {4}\n",
                      schedule->name, schedule->ranks, schedule->stages,
                      microbatches, p.pipelineParallelMicrobatchSize);
  for (auto [s, stage] : llvm::enumerate(plan->stages))
    os << llvm::formatv("stage {0}: {1}\n", s,
                        llvm::join(stage.moduleNames(), " "));
  for (auto [r, actions] : llvm::enumerate(schedule->actions)) {
    os << "rank " << r << ":";
    for (const PipelineAction &a : actions)
      os << " " << a.str();
    os << "\n";
  }
  std::optional<double> textbook = textbookBubble(
      p.pipelineParallelSchedule, schedule->ranks, v, microbatches);
  os << llvm::formatv(
      "bubble {0:f4} (simulated: F = 1, B = 2, I = W = 1 per stage, "
      "transfers free); textbook {1}\n",
      timeline->bubble,
      !p.pipelineParallelScheduleCsv.empty() ? std::string("- (a CSV schedule)")
      : textbook ? llvm::formatv("{0:f4}", *textbook).str()
                 : std::string("- (no formula for these costs)"));
  if (!scheduleTimeline.empty()) {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> svg =
        mlir::openOutputFile(scheduleTimeline, &error);
    if (!svg)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
    writeScheduleSVG(*schedule, *timeline, 1.0 / double(v), 2.0 / double(v),
                     c.model.name + " " + model.name + ": pipeline schedule",
                     svg->os());
    svg->keep();
  }
  return llvm::Error::success();
}

std::string runtimeDir() {
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("TITAN_RUNTIME_DIR"))
    return *env;
  return TITAN_DEFAULT_RUNTIME_DIR;
}

/// The mesh degrees (pp, dp_replicate, dp_shard, cp, tp) for the world size,
/// resolving data_parallel_shard_degree = -1; an error names a mismatch.
llvm::Expected<std::array<int64_t, 5>> resolveMesh(const TrainConfig &c) {
  const auto &p = c.parallelism;
  int64_t others = p.pipelineParallelDegree * p.dataParallelReplicateDegree *
                   p.contextParallelDegree * p.tensorParallelDegree;
  int64_t shard = p.dataParallelShardDegree;
  int64_t world = worldSize;
  auto fail = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
  };
  if (shard < 0) {
    if (world == 0)
      world = others;
    if (world % others != 0)
      return fail(llvm::formatv(
          "parallelism.data_parallel_shard_degree = -1 takes the remaining "
          "ranks, but --world-size ({0}) is not divisible by "
          "pipeline x dp_replicate x context x tensor parallel ({1})",
          world, others));
    shard = world / others;
  } else if (world != 0 && world != others * shard) {
    return fail(llvm::formatv(
        "--world-size ({0}) must equal the product of the parallel degrees "
        "pp x dp_replicate x dp_shard x cp x tp = {1} x {2} x {3} x {4} x {5} "
        "= {6}",
        world, p.pipelineParallelDegree, p.dataParallelReplicateDegree, shard,
        p.contextParallelDegree, p.tensorParallelDegree, others * shard));
  }
  return std::array<int64_t, 5>{
      p.pipelineParallelDegree, p.dataParallelReplicateDegree, shard,
      p.contextParallelDegree, p.tensorParallelDegree};
}

/// TorchTitan's quantize.linear.float8 (recipe_name unset: tensorwise).
TitanFloat8Options float8Options(const TrainConfig &c) {
  TitanFloat8Options o;
  o.recipe = c.float8.recipeName.empty() ? "tensorwise" : c.float8.recipeName;
  o.filterFqns.assign(c.float8.filterFqns.begin(), c.float8.filterFqns.end());
  return o;
}

/// torchao's float8 all-gather: TorchTitan's enable_fsdp_float8_all_gather,
/// which goes with the tensorwise recipe (recipe_name unset).
TitanExpandFloat8Options expandFloat8Options(const TrainConfig &c) {
  TitanExpandFloat8Options o;
  o.fsdpFloat8AllGather =
      c.float8.enableFsdpFloat8AllGather && c.float8.recipeName.empty();
  return o;
}

/// Distribution passes: mesh and shardings, then the per-rank program.
void addPartitionPasses(mlir::PassManager &pm, const TrainConfig &c,
                        const std::array<int64_t, 5> &mesh) {
  // TorchTitan converts the model (Float8 linears) before parallelizing
  // it.
  if (c.float8.enabled(c.model.converters))
    pm.addPass(createTitanFloat8(float8Options(c)));
  dist::DistParallelizeOptions o;
  o.pp = mesh[0];
  o.dpReplicate = mesh[1];
  o.dpShard = mesh[2];
  o.cp = mesh[3];
  o.tp = mesh[4];
  pm.addPass(dist::createDistParallelize(o));
  dist::DistPartitionOptions partition;
  partition.lossParallel = !c.parallelism.disableLossParallel;
  partition.reshardAfterForward = c.parallelism.fsdpReshardAfterForward;
  pm.addPass(dist::createDistPartition(partition));
}

/// Microbatches per optimizer step: the global batch over the local batch
/// of every data-parallel rank (the mesh is fixed at compile time).
int64_t accumulationSteps(const TrainConfig &c,
                          const std::array<int64_t, 5> &mesh) {
  int64_t dp = mesh[1] * mesh[2];
  int64_t local = c.training.localBatchSize;
  if (c.training.globalBatchSize <= 0)
    return 1;
  return std::max<int64_t>(1, c.training.globalBatchSize / (local * dp));
}

/// Mixed precision: bf16 (or f32) compute copies of the f32 parameters;
/// unset, the CPU target's default is f32 (so CPU runs keep their
/// numbers), the GPU's TorchTitan's bf16.
TitanMixedPrecisionOptions precisionOptions(const TrainConfig &c) {
  TitanMixedPrecisionOptions precision;
  std::string param = c.training.mixedPrecisionParam.value_or(
      target == KernelTarget::CUDA ? "bfloat16" : "float32");
  precision.paramType = param == "bfloat16" ? "bf16" : "f32";
  return precision;
}

/// The arena kernel-plan-memory planned for `module`.
int64_t arenaBytes(mlir::ModuleOp module) {
  auto bytes = module->getAttrOfType<mlir::IntegerAttr>(
      kernel::KernelDialect::kArenaBytesAttrName);
  return bytes ? bytes.getInt() : 0;
}

/// TorchTitan's [activation_checkpoint] policy.
TitanActivationCheckpointOptions checkpointOptions(const TrainConfig &c) {
  TitanActivationCheckpointOptions o;
  o.mode = c.activationCheckpoint.mode;
  o.selectiveOption = c.activationCheckpoint.selectiveAcOption;
  const auto &fqns =
      c.activationCheckpoint.perOpSacForceRecomputeMmShapesByFqns;
  o.forceRecomputeFqns.assign(fqns.begin(), fqns.end());
  return o;
}

/// AdamW, clipping and the LR schedule from the config.
TitanOptimizerOptions optimizerOptions(const TrainConfig &c) {
  TitanOptimizerOptions o;
  o.lr = c.optimizer.lr;
  o.beta1 = c.optimizer.beta1;
  o.beta2 = c.optimizer.beta2;
  o.eps = c.optimizer.eps;
  o.weightDecay = c.optimizer.weightDecay;
  o.maxNorm = c.training.maxNorm;
  o.warmupSteps = c.lrScheduler.warmupSteps;
  o.decayRatio = c.lrScheduler.decayRatio.value_or(-1.0);
  o.decayType = c.lrScheduler.decayType;
  o.minLrFactor = c.lrScheduler.minLrFactor;
  return o;
}

/// The training-step passes, configured from the training config.
void addTrainingPasses(mlir::PassManager &pm, const TrainConfig &c,
                       const std::array<int64_t, 5> &mesh) {
  pm.addPass(createTitanMixedPrecision(precisionOptions(c)));
  pm.addPass(createTitanActivationCheckpoint(checkpointOptions(c)));
  TitanAutodiffOptions autodiff;
  // FSDP's reshard_after_forward; dist-partition marks the parameters the
  // policy keeps gathered.
  autodiff.regatherParams = true;
  autodiff.accumulationSteps = accumulationSteps(c, mesh);
  pm.addPass(createTitanAutodiff(autodiff));
  pm.addPass(createTitanExpandFloat8(expandFloat8Options(c)));
  // FSDP gathers the low-precision copies (the gradients were reduced in
  // f32 by then).
  pm.addPass(dist::createDistNarrowGathers());
  pm.addPass(createTitanOptimizer(optimizerOptions(c)));
}

/// The execution layer: the steps bufferized into the kernel IR and one
/// memory plan per rank.
void addExecutionPasses(mlir::PassManager &pm,
                        llvm::ArrayRef<std::string> functions = {}) {
  // The target's kernel workspaces; the CPU target runs bf16/f16 kernels on
  // f32 copies it plans for, the GPU's kernels read 16-bit buffers
  // directly.
  TitanBufferizeOptions bufferize;
  bufferize.target = stringifyKernelTarget(target).str();
  bufferize.widenLowPrecision = target == KernelTarget::CPU;
  bufferize.functions.assign(functions.begin(), functions.end());
  pm.addPass(createTitanBufferize(bufferize));
  pm.addPass(kernel::createKernelFuseGemmAccumulate());
  pm.addPass(kernel::createKernelFuseAddRMSNorm());
  pm.addPass(kernel::createKernelFuseAdamW());
  pm.addPass(kernel::createKernelPlanMemory());
}

/// Settings that would change what a compiled step computes or writes but
/// that titan does not implement yet are errors; settings that only trade
/// memory or tooling are warnings. Nothing is silently ignored.
llvm::Error diagnoseUnsupported(const TrainConfig &c) {
  std::vector<std::string> errors;
  bool float8 = c.float8.enabled(c.model.converters);
  for (const std::string &converter : c.model.converters)
    if (converter != "float8" && converter != "quantize.linear.float8")
      errors.push_back("model.converters: '" + converter +
                       "' is not implemented (titan has the Float8 linear "
                       "converter, \"quantize.linear.float8\")");
  // TorchTitan v0.2.0 asserts this (components/quantization/float8.py).
  if (float8 && !c.float8.recipeName.empty() &&
      c.float8.enableFsdpFloat8AllGather)
    errors.push_back("quantize.linear.float8.enable_fsdp_float8_all_gather "
                     "cannot be combined with recipe_name (as in "
                     "TorchTitan: float8 all-gather is tensorwise scaling's, "
                     "with recipe_name unset)");
  if (llvm::is_contained(c.float8.filterFqns, "auto_filter_small_kn"))
    errors.push_back("quantize.linear.float8.filter_fqns: "
                     "'auto_filter_small_kn' (torchao's size-based filter) is "
                     "not implemented; name the linears to keep in high "
                     "precision");
  if (c.activationCheckpoint.mode == "memory_budget")
    errors.push_back("activation_checkpoint.mode = \"memory_budget\" "
                     "(torch.compile's min-cut recompute under a memory "
                     "budget) is not implemented; use \"selective\" or "
                     "\"full\"");
  if (c.training.dtype != "float32")
    errors.push_back("training.dtype = \"" + c.training.dtype +
                     "\" (parameters, gradients and optimizer state all in "
                     "that type) is not implemented yet: the runtime keeps "
                     "fp32 master weights; use "
                     "training.mixed_precision_param = \"bfloat16\" for bf16 "
                     "compute");
  if (c.checkpoint.lastSaveInHf || c.checkpoint.initialLoadInHf)
    errors.push_back("Hugging Face checkpoint names "
                     "(checkpoint.last_save_in_hf / initial_load_in_hf) are "
                     "not implemented yet; checkpoints use TorchTitan names");
  auto warn = [](const llvm::Twine &msg) {
    llvm::WithColor::warning(llvm::errs(), "titan-compile") << msg << "\n";
  };
  if (!float8 && !c.float8.recipeName.empty())
    warn("quantize.linear.float8.recipe_name = \"" + c.float8.recipeName +
         "\" has no effect without model.converters = "
         "[\"quantize.linear.float8\"] (as in TorchTitan)");
  if (float8 && c.float8.enableFsdpFloat8AllGather &&
      c.float8.recipeName.empty() && c.parallelism.pipelineParallelDegree > 1)
    warn("quantize.linear.float8.enable_fsdp_float8_all_gather with "
         "pipeline parallelism: each stage gathers its weights once per step "
         "(in its unshard action) in high precision and casts them per "
         "microbatch; the float8 all-gather is not applied there (the cast "
         "is then from the bf16 copy, not the f32 shard)");
  if (float8 && c.float8.enableFsdpFloat8AllGather &&
      c.float8.precomputeFloat8DynamicScaleForFsdp)
    warn("quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp: "
         "each FSDP weight's amax is all-reduced once per microbatch when it "
         "is first gathered, not all of them in one all-reduce after the "
         "optimizer step (the same scales: a max is exact)");
  if (float8 && c.float8.emulate && target == KernelTarget::CUDA)
    warn("quantize.linear.float8.emulate: the CUDA target runs the float8 "
         "GEMMs on cuBLASLt (the CPU target is titan's emulation)");
  if (c.parallelism.enableAsyncTensorParallel)
    warn("parallelism.enable_async_tensor_parallel: async TP (collective "
         "matmuls overlapping the tensor-parallel collectives) is not "
         "implemented yet; the collectives run before and after the GEMMs "
         "(the numerics are the same)");
  if (c.metrics.enableTensorboard)
    warn("metrics.enable_tensorboard: TensorBoard output is not implemented; "
         "metrics are written to <dump_folder>/metrics.jsonl");
  if (errors.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::join(errors, "\n"));
}

/// Pipeline parallel: one program per pipeline rank, from the partitioned
/// per-rank forward: rank r's stages (dist-pipeline-split), each
/// differentiated from its output's gradient and split into the phases the
/// schedule runs (dist-pipeline-phases), the optimizer over its stages'
/// parameters, then the execution layer and the lowering of each, linked
/// into one executable with the table that hands the rank its program.
int compilePipelined(mlir::ModuleOp partitioned, const LlamaArgs &model,
                     const TrainConfig &c, const std::array<int64_t, 5> &mesh,
                     llvm::ToolOutputFile *output) {
  llvm::Expected<PipelineJob> job = planPipelineJob(model, c);
  if (!job)
    return reportError(job.takeError());
  if (target == KernelTarget::CUDA)
    return reportError("parallelism.pipeline_parallel_degree > 1 with "
                       "--target=cuda is not implemented yet (the pipeline "
                       "runtime's transfers run on MPI ranks of the CPU "
                       "target)");
  const auto &p = c.parallelism;
  int64_t ranks = mesh[0];
  // Every parameter of the model, for the ranks' checkpoint indexes.
  llvm::Expected<manifest::Manifest> whole =
      buildManifest(model, c, partitioned);
  if (!whole)
    return reportError(whole.takeError());
  std::vector<std::vector<std::string>> tables;
  llvm::SmallVector<std::string> objects;
  llvm::scope_exit cleanup([&] {
    for (const std::string &object : objects)
      llvm::sys::fs::remove(object);
  });
  for (int64_t r = 0; r < ranks; ++r) {
    mlir::OwningOpRef<mlir::ModuleOp> module = partitioned.clone();
    mlir::PassManager pm(partitioned.getContext());
    if (failed(mlir::applyPassManagerCLOptions(pm)))
      return reportError("invalid pass manager options");
    pm.addPass(createTitanMixedPrecision(precisionOptions(c)));
    pm.addPass(createTitanActivationCheckpoint(checkpointOptions(c)));
    dist::DistPipelineSplitOptions split;
    split.schedule = p.pipelineParallelSchedule;
    split.layersPerStage = p.pipelineParallelLayersPerStage.value_or(0);
    split.firstStageLessLayers = p.pipelineParallelFirstStageLessLayers;
    split.lastStageLessLayers = p.pipelineParallelLastStageLessLayers;
    split.rank = r;
    pm.addPass(dist::createDistPipelineSplit(split));
    // Every rank's action list, with its transfers, checked, in the IR.
    dist::DistPipelineScheduleOptions scheduleOptions;
    scheduleOptions.microbatches = job->microbatches;
    scheduleOptions.csv = p.pipelineParallelScheduleCsv;
    pm.addPass(dist::createDistPipelineSchedule(scheduleOptions));
    std::vector<std::string> phases;
    for (int64_t s : job->plan.stagesOfRank[size_t(r)]) {
      TitanAutodiffOptions autodiff;
      autodiff.forwardName = "stage" + std::to_string(s);
      autodiff.backwardName = autodiff.forwardName + "_forward_backward";
      autodiff.regatherParams = true;
      // TorchTitan's rescale_accumulated_loss over the microbatches and the
      // accumulation steps (scale_grads=False): each microbatch's loss
      // counts 1 / (m x accumulation), so the step's gradients sum to those
      // of the whole local batch's mean loss.
      autodiff.accumulationSteps =
          accumulationSteps(c, mesh) * job->microbatches;
      pm.addPass(createTitanAutodiff(autodiff));
      for (std::string &phase :
           stagePhaseFunctions(s, splitsBackward(job->schedule)))
        phases.push_back(std::move(phase));
    }
    dist::DistPipelinePhasesOptions phaseOptions;
    phaseOptions.splitWeightGrad = splitsBackward(job->schedule);
    // TorchTitan keeps FSDP's weights gathered across a step's microbatches
    // under pipeline parallelism.
    phaseOptions.hoistParameterValues = true;
    // ... and reduce-scatters its gradients once, after the last backward.
    phaseOptions.deferGradientReduction = true;
    pm.addPass(dist::createDistPipelinePhases(phaseOptions));
    pm.addPass(createTitanExpandFloat8(expandFloat8Options(c)));
    pm.addPass(dist::createDistNarrowGathers());
    TitanOptimizerOptions o = optimizerOptions(c);
    o.forwardNames.assign(phases.begin(), phases.end());
    pm.addPass(createTitanOptimizer(o));
    if (failed(pm.run(*module)))
      return reportError("compilation failed (see the diagnostics above)");
    auto printRank = [&] {
      output->os() << "// pipeline rank " << r << "\n";
      module->print(output->os());
      output->os() << "\n";
    };
    if (emitStage == EmitStage::Train) {
      printRank();
      continue;
    }
    llvm::Expected<manifest::Manifest> manifest =
        buildManifest(model, c, *module, phases);
    if (!manifest)
      return reportError(manifest.takeError());
    pm.clear();
    std::vector<std::string> steps = phases;
    steps.push_back("optimizer_step");
    addExecutionPasses(pm, steps);
    if (failed(pm.run(*module)))
      return reportError("compilation failed (see the diagnostics above)");
    if (emitStage == EmitStage::Kernel) {
      printRank();
      continue;
    }
    if (emitStage == EmitStage::Memory) {
      output->os() << "pipeline rank " << r << " (stages "
                   << llvm::join(
                          llvm::map_range(
                              job->plan.stagesOfRank[size_t(r)],
                              [](int64_t s) { return std::to_string(s); }),
                          ", ")
                   << "):\n";
      kernel::printMemoryReport(*module,
                                mesh[0] * mesh[1] * mesh[2] * mesh[3] * mesh[4],
                                output->os());
      printPipelineMemory(*job, r, *module, output->os());
      continue;
    }
    addArenaToManifest(*manifest, *module);
    addPipelineToManifest(*manifest, *job, r, *module);
    addPipelineParameters(*manifest, *whole, *job);
    manifest->accumulationSteps = accumulationSteps(c, mesh);
    manifest->target = stringifyKernelTarget(target).str();
    // The pipeline's transfers and its loss reduction run over pp.
    if (!llvm::is_contained(manifest->collectiveAxes, 1u))
      manifest->collectiveAxes.push_back(1);
    pm.clear();
    KernelLowerToCPUOptions lower;
    lower.symbolPrefix = "titan_pp" + std::to_string(r) + "_";
    pm.addPass(createKernelLowerToCPU(lower));
    if (failed(pm.run(*module)))
      return reportError("compilation failed (see the diagnostics above)");
    if (emitStage == EmitStage::LLVM) {
      printRank();
      continue;
    }
    embedManifest(*module, manifest::printManifest(*manifest),
                  "titan_pp" + std::to_string(r) + "_manifest");
    llvm::SmallString<128> objectPath;
    if (emitStage == EmitStage::Object) {
      objectPath = outputFilename;
      if (ranks > 1)
        objectPath += "." + std::to_string(r);
    } else if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
                   "titan-pp" + std::to_string(r), "o", objectPath)) {
      return reportError("cannot create a temporary object file: " +
                         ec.message());
    }
    if (emitStage != EmitStage::Object)
      objects.push_back(objectPath.str().str());
    if (llvm::Error e = emitObjectFile(*module, objectPath))
      return reportError(std::move(e));
    std::vector<std::string> table = phases;
    table.push_back("optimizer_step");
    tables.push_back(std::move(table));
  }
  if (emitStage != EmitStage::Exe) {
    if (output)
      output->keep();
    return 0;
  }
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
  RuntimeLink link;
  link.runtimeDir = runtimeDir();
  link.extraInputs.assign(objects.begin() + 1, objects.end());
  if (llvm::Error e =
          linkTrainingExecutable(objects.front(), outputFilename, link))
    return reportError(std::move(e));
  return 0;
}

std::string modelsDir() {
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("TITAN_MODELS_DIR"))
    return *env;
  return TITAN_DEFAULT_MODELS_DIR;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);

  // `--section.key value` arguments are the training config; the rest are
  // this tool's own options, parsed by llvm::cl.
  std::vector<ConfigOverride> overrides;
  std::vector<const char *> toolArgs = {argv[0]};
  if (llvm::Error e = extractConfigOverrides(
          llvm::ArrayRef<const char *>(argv + 1, argv + argc), overrides,
          toolArgs))
    return reportError(std::move(e));

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

  llvm::Expected<TrainConfig> config = loadTrainConfig(overrides);
  if (!config)
    return reportError(config.takeError());
  if (target == KernelTarget::CUDA)
    if (llvm::Error e = checkCudaTarget(cudaArch))
      return reportError(std::move(e));
  if (config->job.printArgs)
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
  if (llvm::Error e = checkModelFitsConfig(*model, *config))
    return reportError(std::move(e));
  if (emitStage == EmitStage::Schedule) {
    if (llvm::Error e = printPipelineSchedule(*model, *config, output->os()))
      return reportError(std::move(e));
    output->keep();
    return 0;
  }

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);

  ImportOptions options;
  // Under pipeline parallelism the stages run one microbatch at a time.
  options.batchSize = config->parallelism.pipelineParallelDegree > 1
                          ? config->parallelism.pipelineParallelMicrobatchSize
                          : config->training.localBatchSize;
  options.seqLen = config->training.seqLen;
  mlir::Builder builder(&context);
  options.elementType = config->training.dtype == "bfloat16"
                            ? mlir::Type(builder.getBF16Type())
                            : mlir::Type(builder.getF32Type());
  mlir::OwningOpRef<mlir::ModuleOp> module = [&] {
    mlir::TimingScope t = rootTimer.nest("import");
    return importLlama(context, *model, options);
  }();
  {
    mlir::TimingScope t = rootTimer.nest("verify");
    if (failed(mlir::verify(*module)))
      return reportError("internal error: the imported module does not "
                         "verify (see the diagnostics above)");
  }
  auto printModule = [&] {
    module->print(output->os());
    output->os() << "\n";
    output->keep();
    return 0;
  };
  if (emitStage == EmitStage::Summary) {
    printSummary(*model, *config, *module, output->os());
    if (config->float8.enabled(config->model.converters))
      printFloat8Plan(*module, float8Options(*config), output->os());
    // With a world size (or fixed degrees), what one rank holds and sends.
    if (worldSize > 0 || config->parallelism.dataParallelShardDegree > 0) {
      llvm::Expected<std::array<int64_t, 5>> mesh = resolveMesh(*config);
      if (!mesh)
        return reportError(mesh.takeError());
      mlir::PassManager pm(&context);
      addPartitionPasses(pm, *config, *mesh);
      // Under pipeline parallelism each pipeline rank has its own program;
      // what each holds, from the stage plan (--emit=memory plans them).
      if ((*mesh)[0] > 1) {
        if (failed(pm.run(*module)))
          return reportError("compilation failed (see the diagnostics above)");
        llvm::Expected<PipelineJob> job = planPipelineJob(*model, *config);
        if (!job)
          return reportError(job.takeError());
        printPipelineSummary(*job, *module, output->os());
        output->keep();
        return 0;
      }
      addTrainingPasses(pm, *config, *mesh);
      if (failed(pm.run(*module)))
        return reportError("compilation failed (see the diagnostics above)");
      // The peak comes from the memory plan of the same program.
      mlir::OwningOpRef<mlir::ModuleOp> planned = module->clone();
      mlir::PassManager plan(&context);
      addExecutionPasses(plan);
      if (failed(plan.run(*planned)))
        return reportError("compilation failed (see the diagnostics above)");
      printPerRankPlan(*module,
                       (*planned)
                           ->getAttrOfType<mlir::IntegerAttr>(
                               kernel::KernelDialect::kArenaBytesAttrName)
                           .getInt(),
                       output->os());
    }
    output->keep();
    return 0;
  }
  if (emitStage == EmitStage::Titan)
    return printModule();

  if (emitStage >= EmitStage::Train)
    if (llvm::Error e = diagnoseUnsupported(*config))
      return reportError(std::move(e));
  llvm::Expected<std::array<int64_t, 5>> mesh = resolveMesh(*config);
  if (!mesh)
    return reportError(mesh.takeError());
  mlir::PassManager pm(&context);
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    return reportError("invalid pass manager options");
  pm.enableTiming(rootTimer);
  addPartitionPasses(pm, *config, *mesh);
  if (failed(pm.run(*module)))
    return reportError("compilation failed (see the diagnostics above)");
  if (emitStage == EmitStage::Partitioned)
    return printModule();
  if ((*mesh)[0] > 1)
    return compilePipelined(*module, *model, *config, *mesh, output.get());
  llvm::Expected<manifest::Manifest> manifest =
      buildManifest(*model, *config, *module);
  if (!manifest)
    return reportError(manifest.takeError());

  // The plan without activation checkpointing, for the report's
  // comparison.
  std::optional<int64_t> arenaWithoutCheckpointing;
  if (emitStage == EmitStage::Memory &&
      config->activationCheckpoint.mode != "none") {
    mlir::OwningOpRef<mlir::ModuleOp> plain = module->clone();
    TrainConfig none = *config;
    none.activationCheckpoint.mode = "none";
    pm.clear();
    addTrainingPasses(pm, none, *mesh);
    addExecutionPasses(pm);
    if (failed(pm.run(*plain)))
      return reportError("compilation failed (see the diagnostics above)");
    arenaWithoutCheckpointing = arenaBytes(*plain);
  }
  pm.clear();
  addTrainingPasses(pm, *config, *mesh);
  if (emitStage >= EmitStage::Kernel)
    addExecutionPasses(pm);
  if (failed(pm.run(*module)))
    return reportError("compilation failed (see the diagnostics above)");
  if (emitStage == EmitStage::Train || emitStage == EmitStage::Kernel)
    return printModule();
  if (emitStage == EmitStage::Memory) {
    dist::MeshAttr meshAttr = dist::getMesh(*module);
    kernel::printMemoryReport(*module, meshAttr ? meshAttr.getWorldSize() : 1,
                              output->os());
    if (arenaWithoutCheckpointing) {
      const auto &ac = config->activationCheckpoint;
      int64_t with = arenaBytes(*module);
      output->os() << llvm::formatv(
          "activation checkpointing ({0}{1}): arena {2} vs {3} without "
          "(mode none): {4} saved ({5:F1}%)\n",
          ac.mode, ac.mode == "selective" ? " " + ac.selectiveAcOption : "",
          humanBytes(double(with)),
          humanBytes(double(*arenaWithoutCheckpointing)),
          humanBytes(double(*arenaWithoutCheckpointing - with)),
          100.0 * double(*arenaWithoutCheckpointing - with) /
              double(std::max<int64_t>(*arenaWithoutCheckpointing, 1)));
    }
    if (!memoryTimeline.empty()) {
      std::unique_ptr<llvm::ToolOutputFile> svg =
          mlir::openOutputFile(memoryTimeline, &errorMessage);
      if (!svg)
        return reportError(errorMessage);
      kernel::writeMemoryTimelineSVG(*module,
                                     config->model.name + " " + model->name +
                                         ": planned memory per rank",
                                     svg->os());
      svg->keep();
    }
    output->keep();
    return 0;
  }
  // The runtime places its state where the plan says.
  addArenaToManifest(*manifest, *module);
  manifest->accumulationSteps = accumulationSteps(*config, *mesh);
  manifest->target = stringifyKernelTarget(target).str();
  if (target == KernelTarget::CUDA)
    manifest->cudaArch = cudaArch;
  pm.clear();
  pm.addPass(createKernelLowerToCPU());
  if (failed(pm.run(*module)))
    return reportError("compilation failed (see the diagnostics above)");
  if (emitStage == EmitStage::LLVM)
    return printModule();

  embedManifest(*module, manifest::printManifest(*manifest));
  llvm::SmallString<128> objectPath;
  if (emitStage == EmitStage::Object) {
    objectPath = outputFilename;
  } else if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
                 "titan-step", "o", objectPath)) {
    return reportError("cannot create a temporary object file: " +
                       ec.message());
  }
  {
    mlir::TimingScope t = rootTimer.nest("emit object");
    if (llvm::Error e = emitObjectFile(*module, objectPath))
      return reportError(std::move(e));
  }
  if (emitStage == EmitStage::Object)
    return 0;
  mlir::TimingScope t = rootTimer.nest("link");
  RuntimeLink link;
  link.runtimeDir = runtimeDir();
  if (target == KernelTarget::CUDA) {
    // The CUDA kernels link statically: the executable carries its SASS.
    link.kernelLibraries.clear();
    for (const char *archive :
         {"libtitanrt_cuda.a", "libtitanrt_cuda_kernels.a"})
      link.kernelLibraries.push_back(
          (llvm::Twine(link.runtimeDir) + "/" + archive).str());
    llvm::SmallVector<llvm::StringRef> libs;
    llvm::StringRef(TITAN_CUDA_LINK_LIBRARIES).split(libs, ',', -1, false);
    for (llvm::StringRef lib : libs)
      link.systemLibraries.push_back(lib.str());
    link.libraryDirs = {TITAN_CUDA_LIBRARY_DIR};
  }
  llvm::Error linked = linkTrainingExecutable(objectPath, outputFilename, link);
  llvm::sys::fs::remove(objectPath);
  if (linked)
    return reportError(std::move(linked));
  return 0;
}
