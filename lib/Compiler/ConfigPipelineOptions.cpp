//===- ConfigPipelineOptions.cpp - pipeline options from a config ---------===//

#include "titan/Compiler/ConfigPipelineOptions.h"

#include "titan/Contract/Dtype.h"
#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Target/TargetBackend.h"

#include "llvm/Support/FormatVariadic.h"

using namespace titan;

std::string titan::paramDtype(const TrainConfig &c,
                              const target::TargetBackend &target) {
  return c.training.mixedPrecisionParam.value_or(
      target.getDtypePolicy().defaultParamDtype);
}

/// The type training computes in for a config's dtype key: bf16 for
/// "bfloat16", else f32 (the config's schema admits only those two).
static Dtype trainingDtype(llvm::StringRef torchName) {
  return parseTorchDtype(torchName) == Dtype::bf16 ? Dtype::bf16 : Dtype::f32;
}

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

llvm::Expected<MeshDegrees> titan::resolveMesh(const TrainConfig &c,
                                               int64_t world) {
  const auto &p = c.parallelism;
  MeshDegrees mesh;
  mesh.pp = p.pipelineParallelDegree;
  mesh.dpReplicate = p.dataParallelReplicateDegree;
  mesh.cp = p.contextParallelDegree;
  mesh.tp = p.tensorParallelDegree;
  int64_t others = mesh.pp * mesh.dpReplicate * mesh.cp * mesh.tp;
  mesh.dpShard = p.dataParallelShardDegree;
  if (mesh.dpShard < 0) {
    if (world == 0)
      world = others;
    if (world % others != 0)
      return makeError(llvm::formatv(
          "parallelism.data_parallel_shard_degree = -1 takes the remaining "
          "ranks, but --world-size ({0}) is not divisible by "
          "pipeline x dp_replicate x context x tensor parallel ({1})",
          world, others));
    mesh.dpShard = world / others;
  } else if (world != 0 && world != mesh.worldSize()) {
    return makeError(llvm::formatv(
        "--world-size ({0}) must equal the product of the parallel degrees "
        "pp x dp_replicate x dp_shard x cp x tp = {1} x {2} x {3} x {4} x {5} "
        "= {6}",
        world, mesh.pp, mesh.dpReplicate, mesh.dpShard, mesh.cp, mesh.tp,
        mesh.worldSize()));
  }
  return mesh;
}

int64_t titan::accumulationSteps(const TrainConfig &c,
                                 const MeshDegrees &mesh) {
  int64_t dp = mesh.dpReplicate * mesh.dpShard;
  int64_t local = c.training.localBatchSize;
  if (c.training.globalBatchSize <= 0)
    return 1;
  return std::max<int64_t>(1, c.training.globalBatchSize / (local * dp));
}

void titan::setPartitionOptions(const TrainConfig &c, const MeshDegrees &mesh,
                                PartitionPipelineOptions &o) {
  o.float8 = c.float8.enabled(c.model.converters);
  // TorchTitan's quantize.linear.float8 (recipe_name unset: tensorwise).
  o.float8Recipe =
      c.float8.recipeName.empty() ? "tensorwise" : c.float8.recipeName;
  o.float8FilterFqns = llvm::ArrayRef(c.float8.filterFqns);
  o.pp = mesh.pp;
  o.dpReplicate = mesh.dpReplicate;
  o.dpShard = mesh.dpShard;
  o.cp = mesh.cp;
  o.tp = mesh.tp;
  o.lossParallel = !c.parallelism.disableLossParallel;
  o.reshardAfterForward = c.parallelism.fsdpReshardAfterForward;
  o.cpRotateMethod = c.parallelism.contextParallelRotateMethod;
}

void titan::setTrainingOptions(const TrainConfig &c, const MeshDegrees &mesh,
                               const target::TargetBackend &target,
                               TrainingPipelineOptions &o) {
  o.paramType = dtypeName(trainingDtype(paramDtype(c, target)));
  const auto &ac = c.activationCheckpoint;
  o.checkpointMode = ac.mode;
  o.checkpointSelectiveOption = ac.selectiveAcOption;
  o.checkpointForceRecomputeFqns =
      llvm::ArrayRef(ac.perOpSacForceRecomputeMmShapesByFqns);
  o.accumulationSteps = accumulationSteps(c, mesh);
  // torchao's float8 all-gather goes with the tensorwise recipe
  // (recipe_name unset).
  o.fsdpFloat8AllGather =
      c.float8.enableFsdpFloat8AllGather && c.float8.recipeName.empty();
  o.asyncTensorParallel =
      c.parallelism.enableAsyncTensorParallel && mesh.tp > 1;
  o.widenGemmResults = !c.debug.noWidenGemmResults;
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
  o.optimizerInBackward = c.optimizer.earlyStepInBackward;
  const auto &p = c.parallelism;
  o.pipelineSchedule = p.pipelineParallelSchedule;
  o.pipelineScheduleCsv = p.pipelineParallelScheduleCsv;
  // TorchTitan's apply_fsdp: reshard_after_forward = not pp_enabled by
  // default, so only "always" reshards under pipeline parallelism.
  o.pipelineKeepGathered = p.fsdpReshardAfterForward != "always";
  o.pipelineLayersPerStage = p.pipelineParallelLayersPerStage.value_or(0);
  o.pipelineFirstStageLessLayers = p.pipelineParallelFirstStageLessLayers;
  o.pipelineLastStageLessLayers = p.pipelineParallelLastStageLessLayers;
}

int64_t titan::collectivePrefetchBudget(const TrainConfig &c,
                                        const LlamaArgs &model,
                                        const MeshDegrees &mesh,
                                        const target::TargetBackend &target) {
  // One block's parameters (all blocks have the same shapes).
  int64_t elements = 0;
  for (const ParamSpec &p : llamaParameters(model))
    if (llvm::StringRef(p.name).starts_with("layers.0."))
      elements += p.numel();
  int64_t paramBytes = dtypeBytes(trainingDtype(paramDtype(c, target)));
  int64_t reduceBytes =
      dtypeBytes(trainingDtype(c.training.mixedPrecisionReduce));
  return elements / std::max<int64_t>(mesh.tp, 1) * (paramBytes + reduceBytes);
}

void titan::setExecutionOptions(const TrainConfig &c, const LlamaArgs &model,
                                const MeshDegrees &mesh,
                                const target::TargetBackend &target,
                                ExecutionPipelineOptions &o) {
  o.target = target.getName().str();
  o.deterministic = c.training.deterministic;
  o.scheduleCollectives = !c.debug.noCommOverlap;
  o.maxInFlightBytes = collectivePrefetchBudget(c, model, mesh, target);
  o.offloadState = offloadsState(c, target);
}

bool titan::offloadsState(const TrainConfig &c,
                          const target::TargetBackend &target) {
  // On a target with host memory, offloading has nothing to move (a
  // warning) but for the CPU target's test of the path.
  return (c.training.enableCpuOffload && !target.getFeatures().hostMemory) ||
         c.debug.offloadState;
}
