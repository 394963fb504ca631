//===- Pipelines.cpp - titan's pass pipelines -----------------------------===//

#include "titan/Compiler/Pipelines.h"

#include "titan/Contract/Manifest.h"
#include "titan/Conversion/KernelToRuntimeCalls/Passes.h"
#include "titan/Conversion/TitanToKernel/Passes.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Kernel/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"
#include "titan/Import/Passes.h"
#include "titan/Pipeline/Transforms/Passes.h"
#include "titan/Target/TargetBackend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace titan;

void titan::addFloat8Conversion(mlir::OpPassManager &pm,
                                const PartitionPipelineOptions &options) {
  if (!options.float8)
    return;
  TitanFloat8Options float8;
  float8.recipe = options.float8Recipe;
  float8.filterFqns.assign(options.float8FilterFqns.begin(),
                           options.float8FilterFqns.end());
  pm.addPass(createTitanFloat8(float8));
}

void titan::buildPartitionPipeline(mlir::OpPassManager &pm,
                                   const PartitionPipelineOptions &options) {
  // TorchTitan converts the model (Float8 linears) before parallelizing
  // it.
  addFloat8Conversion(pm, options);
  dist::DistParallelizeOptions mesh;
  mesh.pp = options.pp;
  mesh.dpReplicate = options.dpReplicate;
  mesh.dpShard = options.dpShard;
  mesh.cp = options.cp;
  mesh.tp = options.tp;
  mesh.lossParallel = options.lossParallel;
  pm.addPass(dist::createDistParallelize(mesh));
  pm.addPass(dist::createDistPropagateSharding());
  dist::DistPartitionOptions partition;
  partition.reshardAfterForward = options.reshardAfterForward;
  partition.rotateMethod = options.cpRotateMethod;
  pm.addPass(dist::createDistPartition(partition));
}

namespace {
TitanMixedPrecisionOptions
mixedPrecisionOptions(const TrainingPipelineOptions &options) {
  TitanMixedPrecisionOptions precision;
  precision.paramType = options.paramType;
  return precision;
}

TitanActivationCheckpointOptions
checkpointOptions(const TrainingPipelineOptions &options) {
  TitanActivationCheckpointOptions checkpoint;
  checkpoint.mode = options.checkpointMode;
  checkpoint.selectiveOption = options.checkpointSelectiveOption;
  checkpoint.forceRecomputeFqns.assign(
      options.checkpointForceRecomputeFqns.begin(),
      options.checkpointForceRecomputeFqns.end());
  return checkpoint;
}

TitanOptimizerOptions optimizerOptions(const TrainingPipelineOptions &options) {
  TitanOptimizerOptions o;
  o.lr = options.lr;
  o.beta1 = options.beta1;
  o.beta2 = options.beta2;
  o.eps = options.eps;
  o.weightDecay = options.weightDecay;
  o.maxNorm = options.maxNorm;
  o.warmupSteps = options.warmupSteps;
  o.decayRatio = options.decayRatio;
  o.decayType = options.decayType;
  o.minLrFactor = options.minLrFactor;
  return o;
}

/// After the expansions (and under pipeline parallelism after the phase
/// split): tensor parallel's collective matmuls.
void addAsyncTensorParallel(mlir::OpPassManager &pm,
                            const TrainingPipelineOptions &options) {
  // After autodiff and the expansions: the backward's gathers and scatters
  // are there, and Float8's GEMMs are scaled_matmul (left alone).
  if (options.asyncTensorParallel)
    pm.addPass(dist::createDistAsyncTensorParallel());
}

/// Context-parallel attention's ring steps, torchao's Float8 recipes
/// written out, FSDP's gathers of the low-precision copies; with
/// `parameterAmaxesOnly` only the weights' amaxes come from their shards
/// (the pipeline-parallel phase split follows).
void addExpansions(mlir::OpPassManager &pm,
                   const TrainingPipelineOptions &options,
                   bool parameterAmaxesOnly) {
  pm.addPass(dist::createDistExpandRingAttention());
  TitanExpandFloat8Options expand;
  expand.fsdpFloat8AllGather = options.fsdpFloat8AllGather;
  pm.addPass(createTitanExpandFloat8(expand));
  pm.addPass(dist::createDistNarrowGathers());
  dist::DistAmaxFromShardsOptions amaxes;
  amaxes.parametersOnly = parameterAmaxesOnly;
  pm.addPass(dist::createDistAmaxFromShards(amaxes));
  // With the parameters' scales known at the step's start, the forward's
  // gathers narrow to float8 too.
  pm.addPass(dist::createDistBatchParameterAmaxes());
  pm.addPass(dist::createDistNarrowGathers());
}

void addExpansionPasses(mlir::OpPassManager &pm,
                        const TrainingPipelineOptions &options) {
  addExpansions(pm, options, /*parameterAmaxesOnly=*/false);
  addAsyncTensorParallel(pm, options);
}

/// After autodiff and the expansions in both training variants (the
/// gradients were reduced in f32 by then): AdamW over `forwardNames`'
/// parameters.
void addUpdatePasses(mlir::OpPassManager &pm,
                     const TrainingPipelineOptions &options,
                     llvm::ArrayRef<std::string> forwardNames = {}) {
  // The weight gradients' GEMMs write the f32 that FSDP reduces.
  if (options.widenGemmResults)
    pm.addPass(createTitanWidenGemmResults());
  TitanOptimizerOptions optimizer = optimizerOptions(options);
  if (!forwardNames.empty())
    optimizer.forwardNames.assign(forwardNames.begin(), forwardNames.end());
  pm.addPass(createTitanOptimizer(optimizer));
  // Under pipeline parallelism the pass refuses the first stage's phase,
  // as TorchTitan refuses optimizers in backward (so does the driver).
  if (options.optimizerInBackward) {
    TitanOptimizerInBackwardOptions inBackward;
    if (!forwardNames.empty())
      inBackward.backwardName = forwardNames.front();
    pm.addPass(createTitanOptimizerInBackward(inBackward));
  }
}

/// TorchTitan's stage split of the model, then this rank's cut.
void addStageCut(mlir::OpPassManager &pm,
                 const TrainingPipelineOptions &options) {
  TitanLlamaPipelineStagesOptions stages;
  stages.schedule = options.pipelineSchedule;
  stages.layersPerStage = options.pipelineLayersPerStage;
  stages.firstStageLessLayers = options.pipelineFirstStageLessLayers;
  stages.lastStageLessLayers = options.pipelineLastStageLessLayers;
  pm.addPass(createTitanLlamaPipelineStages(stages));
  dist::DistPipelineSplitOptions split;
  split.rank = options.pipelineRank;
  pm.addPass(dist::createDistPipelineSplit(split));
}

/// The eval phase after mixed precision (and the stage cut under pipeline
/// parallelism): the training step's expansions and GEMMs.
void addEvalExpansions(mlir::OpPassManager &pm,
                       const TrainingPipelineOptions &options) {
  addExpansionPasses(pm, options);
  if (options.widenGemmResults)
    pm.addPass(createTitanWidenGemmResults());
}

} // namespace

void titan::buildTrainingPipeline(mlir::OpPassManager &pm,
                                  const TrainingPipelineOptions &options) {
  pm.addPass(createTitanMixedPrecision(mixedPrecisionOptions(options)));
  pm.addPass(createTitanActivationCheckpoint(checkpointOptions(options)));
  TitanAutodiffOptions autodiff;
  // FSDP's reshard_after_forward; dist-partition marks the parameters the
  // policy keeps gathered.
  autodiff.regatherParams = true;
  autodiff.accumulationSteps = options.accumulationSteps;
  pm.addPass(createTitanAutodiff(autodiff));
  addExpansionPasses(pm, options);
  addUpdatePasses(pm, options);
}

void titan::buildPipelineParallelTrainingPipeline(
    mlir::OpPassManager &pm, const TrainingPipelineOptions &options) {
  pm.addPass(createTitanMixedPrecision(mixedPrecisionOptions(options)));
  pm.addPass(createTitanActivationCheckpoint(checkpointOptions(options)));
  // The model's stage plan (TorchTitan's pipeline_llm), then the cut.
  addStageCut(pm, options);
  // Every rank's action list, with its transfers, checked, in the IR.
  dist::DistPipelineScheduleOptions schedule;
  schedule.microbatches = options.pipelineMicrobatches;
  schedule.csv = options.pipelineScheduleCsv;
  pm.addPass(dist::createDistPipelineSchedule(schedule));
  std::vector<std::string> phases;
  for (int64_t stage : options.pipelineStages) {
    TitanAutodiffOptions autodiff;
    autodiff.forwardName = "stage" + std::to_string(stage);
    autodiff.backwardName = autodiff.forwardName + "_forward_backward";
    autodiff.regatherParams = true;
    // TorchTitan's rescale_accumulated_loss over the microbatches and the
    // accumulation steps (scale_grads=False): each microbatch's loss counts
    // 1 / (m x accumulation), so the step's gradients sum to those of the
    // whole local batch's mean loss.
    autodiff.accumulationSteps =
        options.accumulationSteps * options.pipelineMicrobatches;
    pm.addPass(createTitanAutodiff(autodiff));
    for (std::string &phase :
         stagePhaseFunctions(stage, options.pipelineSplitWeightGrad))
      phases.push_back(std::move(phase));
  }
  dist::DistPipelinePhasesOptions phaseOptions;
  phaseOptions.splitWeightGrad = options.pipelineSplitWeightGrad;
  // TorchTitan keeps FSDP's weights gathered across a step's microbatches
  // under pipeline parallelism (unless fsdp_reshard_after_forward is
  // "always") ...
  phaseOptions.hoistParameterValues = options.pipelineKeepGathered;
  // ... and reduce-scatters its gradients once, after the last backward.
  phaseOptions.deferGradientReduction = true;
  // The expansions first: Float8's weight casts (their amaxes, scales and
  // codes, gathered as float8 with enable_fsdp_float8_all_gather) are then
  // parameter-only values the phase split computes once per step.
  addExpansions(pm, options, /*parameterAmaxesOnly=*/true);
  pm.addPass(dist::createDistPipelinePhases(phaseOptions));
  // Then, within each phase, the activations' amaxes from their shards
  // (reading what the phase already has) and the gathers that narrow once
  // the weights' re-gathers left the phases (sequence parallel's, for the
  // collective matmuls).
  pm.addPass(dist::createDistAmaxFromShards());
  pm.addPass(dist::createDistNarrowGathers());
  addAsyncTensorParallel(pm, options);
  addUpdatePasses(pm, options, phases);
}

void titan::buildEvalPipeline(mlir::OpPassManager &pm,
                              const TrainingPipelineOptions &options) {
  pm.addPass(createTitanMixedPrecision(mixedPrecisionOptions(options)));
  addEvalExpansions(pm, options);
}

void titan::buildPipelineParallelEvalPipeline(
    mlir::OpPassManager &pm, const TrainingPipelineOptions &options) {
  pm.addPass(createTitanMixedPrecision(mixedPrecisionOptions(options)));
  addStageCut(pm, options);
  addEvalExpansions(pm, options);
}

mlir::LogicalResult titan::addEvalStep(mlir::ModuleOp module,
                                       mlir::ModuleOp evalModule) {
  using namespace mlir;
  auto forward = lookupFunction(evalModule, "forward", "titan-compile");
  if (!forward)
    return failure();
  if (module.lookupSymbol("eval"))
    return module.emitError()
           << "titan-compile: the program already has a symbol 'eval'";
  dist::MeshAttr mesh = dist::getMesh(module);
  if (mesh != dist::getMesh(evalModule))
    return evalModule.emitError()
           << "titan-compile: the eval step is partitioned over another mesh "
              "than the training step";
  auto lossType = forward.getNumResults() == 1
                      ? dyn_cast<RankedTensorType>(forward.getResultTypes()[0])
                      : RankedTensorType();
  if (!lossType || lossType.getRank() != 0)
    return forward.emitOpError() << "must return the loss alone to become "
                                    "the eval step";
  // Its own batch slots, at validation's shape; the parameters are the
  // training step's.
  Builder b(module.getContext());
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    if (auto input = forward.getArgAttrOfType<StringAttr>(
            i, TitanDialect::kInputAttrName))
      forward.setArgAttr(i, TitanDialect::kInputAttrName,
                         b.getStringAttr("eval_" + input.getValue()));
  forward.setResultAttr(0, TitanDialect::kOutputAttrName,
                        b.getStringAttr("eval_loss"));
  forward.setSymName("eval");
  forward->remove();
  module.push_back(forward);
  return success();
}

namespace {
/// Eval stage `stage` of a pipeline rank: `fn` renamed, its boundary
/// tensors, batch and loss given the eval slots, no longer a pipeline
/// phase (its values are the arena's, not a frame's).
mlir::LogicalResult makeEvalStage(mlir::func::FuncOp fn, int64_t stage) {
  using namespace mlir;
  Builder b(fn.getContext());
  auto rename = [&](DictionaryAttr attrs, StringRef attr, StringRef slotAttr,
                    auto name) -> std::optional<NamedAttrList> {
    NamedAttrList list(attrs);
    auto index = attrs ? attrs.getAs<IntegerAttr>(attr) : IntegerAttr();
    if (!index)
      return std::nullopt;
    list.erase(attr);
    list.set(slotAttr, b.getStringAttr(name(stage, index.getInt())));
    return list;
  };
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    DictionaryAttr attrs = fn.getArgAttrDict(i);
    if (auto list = rename(attrs, dist::DistDialect::kStageInputAttrName,
                           TitanDialect::kInputAttrName,
                           manifest::evalStageInputName)) {
      fn.setArgAttrs(i, list->getDictionary(fn.getContext()));
      continue;
    }
    if (auto input =
            fn.getArgAttrOfType<StringAttr>(i, TitanDialect::kInputAttrName))
      fn.setArgAttr(i, TitanDialect::kInputAttrName,
                    b.getStringAttr("eval_" + input.getValue()));
  }
  for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i) {
    DictionaryAttr attrs = fn.getResultAttrDict(i);
    if (auto list = rename(attrs, dist::DistDialect::kStageOutputAttrName,
                           TitanDialect::kOutputAttrName,
                           manifest::evalStageOutputName)) {
      fn.setResultAttrs(i, list->getDictionary(fn.getContext()));
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(fn.getResultTypes()[i]);
    if (!type || type.getRank() != 0)
      return fn.emitOpError()
             << "result #" << i
             << " is neither a stage output nor the loss: it cannot become "
                "an eval step";
    fn.setResultAttr(i, TitanDialect::kOutputAttrName,
                     b.getStringAttr("eval_loss"));
  }
  fn->removeAttr(dist::DistDialect::kStageAttrName);
  fn->removeAttr(dist::DistDialect::kPhaseAttrName);
  fn.setSymName(manifest::evalStageFunction(stage));
  return success();
}
} // namespace

mlir::FailureOr<std::vector<std::string>>
titan::addPipelineEvalStages(mlir::ModuleOp module, mlir::ModuleOp evalModule) {
  using namespace mlir;
  if (dist::getMesh(module) != dist::getMesh(evalModule))
    return evalModule.emitError()
           << "titan-compile: the eval step is partitioned over another mesh "
              "than the training step";
  std::vector<std::pair<int64_t, func::FuncOp>> stages;
  for (auto fn : evalModule.getOps<func::FuncOp>())
    if (auto stage =
            fn->getAttrOfType<IntegerAttr>(dist::DistDialect::kStageAttrName))
      stages.push_back({stage.getInt(), fn});
  if (stages.empty())
    return evalModule.emitError()
           << "titan-compile: the eval module has no pipeline stage (run "
              "dist-pipeline-split first)";
  llvm::sort(stages,
             [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<std::string> names;
  for (auto [stage, fn] : stages) {
    std::string name = manifest::evalStageFunction(stage);
    if (module.lookupSymbol(name))
      return module.emitError()
             << "titan-compile: the program already has a symbol '" << name
             << "'";
    if (failed(makeEvalStage(fn, stage)))
      return failure();
    fn->remove();
    module.push_back(fn);
    names.push_back(name);
  }
  return names;
}

void titan::buildExecutionPipeline(mlir::OpPassManager &pm,
                                   const ExecutionPipelineOptions &options) {
  // The target's kernel workspaces, with the f32 copies of 16-bit buffers
  // where its dtype policy runs 16-bit kernels widened (an unknown target
  // is titan-bufferize's error).
  TitanBufferizeOptions bufferize;
  bufferize.target = options.target;
  const target::TargetBackend *backend =
      target::lookupTargetBackend(options.target);
  bufferize.widenLowPrecision =
      backend && backend->getDtypePolicy().widenLowPrecision;
  bufferize.deterministic = options.deterministic;
  bufferize.functions.assign(options.functions.begin(),
                             options.functions.end());
  // FSDP2's CPU offload runs the optimizer on the host, with the host
  // target's kernels.
  if (options.offloadState) {
    bufferize.hostSteps = {"optimizer_step"};
    if (const target::TargetBackend *host = target::lookupHostTargetBackend())
      bufferize.hostTarget = host->getName().str();
  }
  pm.addPass(createTitanBufferize(bufferize));
  pm.addPass(kernel::createKernelFuseGemmAccumulate());
  // After the library fusions, which look for pointwise calls.
  if (backend && backend->getFeatures().generatedKernels) {
    kernel::KernelGeneratePointwiseOptions generate;
    generate.columnSumBlocks = backend->getFeatures().columnSumBlocks;
    pm.addPass(kernel::createKernelGeneratePointwise(generate));
  }
  // After the fusions (which look for a call and the add or norm right
  // after it), before the plan, which must see the longer lifetimes.
  if (options.scheduleCollectives) {
    kernel::KernelScheduleCollectivesOptions schedule;
    schedule.maxInFlightBytes = options.maxInFlightBytes;
    pm.addPass(kernel::createKernelScheduleCollectives(schedule));
  }
  // After the schedule, which puts each gather's cast beside its start.
  if (backend && backend->getFeatures().generatedKernels)
    pm.addPass(kernel::createKernelFuseHorizontal());
  // After the fusions and the schedule, which see the steps as on a
  // device; the plan then places the staging buffers and the host arena.
  if (options.offloadState) {
    // The fetches ahead of their readers share the collectives' budget.
    kernel::KernelOffloadStateOptions offload;
    offload.maxPrefetchBytes = options.maxInFlightBytes;
    pm.addPass(kernel::createKernelOffloadState(offload));
  }
  pm.addPass(kernel::createKernelPlanMemory());
}

std::string titan::defaultCudaToolkit() { return TITAN_CUDA_TOOLKIT_DIR; }

void titan::buildLoweringPipeline(mlir::OpPassManager &pm,
                                  const LoweringPipelineOptions &options) {
  KernelToRuntimeCallsOptions lower;
  lower.symbolPrefix = options.symbolPrefix;
  lower.deviceChip = options.deviceChip;
  pm.addPass(createKernelToRuntimeCalls(lower));
  if (options.deviceChip.empty())
    return;
  // The generated GPU kernels through LLVM's NVPTX back end and ptxas,
  // which fails the compile on a spill.
  mlir::GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.deviceFormat;
  binary.toolkitPath = options.deviceToolkit.empty()
                           ? defaultCudaToolkit()
                           : options.deviceToolkit.getValue();
  binary.cmdOptions = "--warn-on-spills --warning-as-error";
  pm.addPass(mlir::createGpuModuleToBinaryPass(binary));
  pm.addPass(createKernelEmbedGPUBinaries());
}

std::vector<std::string> titan::stagePhaseFunctions(int64_t stage,
                                                    bool splitWeightGrad) {
  std::string name = "stage" + std::to_string(stage);
  if (splitWeightGrad)
    return {name + "_unshard", name + "_forward", name + "_backward_input",
            name + "_backward_weight", name + "_reduce_grad"};
  return {name + "_unshard", name + "_forward", name + "_backward",
          name + "_reduce_grad"};
}

/// Every pipeline registerTitanPipelines registers, by index: one list, so
/// titanPipelineNames cannot miss one.
static const llvm::StringRef kPipelineNames[] = {
    "titan-partition-pipeline",
    "titan-training-pipeline",
    "titan-pipeline-parallel-training-pipeline",
    "titan-eval-pipeline",
    "titan-pipeline-parallel-eval-pipeline",
    "titan-execution-pipeline",
    "titan-lowering-pipeline"};

llvm::ArrayRef<llvm::StringRef> titan::titanPipelineNames() {
  return kPipelineNames;
}

void titan::registerTitanPipelines() {
  mlir::PassPipelineRegistration<PartitionPipelineOptions>(
      kPipelineNames[0],
      "Float8 conversion, the mesh and its shardings, the per-rank forward",
      buildPartitionPipeline);
  mlir::PassPipelineRegistration<TrainingPipelineOptions>(
      kPipelineNames[1],
      "Mixed precision, recompute regions, autodiff, Float8 expansion and "
      "the optimizer step",
      buildTrainingPipeline);
  mlir::PassPipelineRegistration<TrainingPipelineOptions>(
      kPipelineNames[2],
      "The training phase of one pipeline rank: its stages cut out, "
      "scheduled, differentiated and split into phases",
      buildPipelineParallelTrainingPipeline);
  mlir::PassPipelineRegistration<TrainingPipelineOptions>(
      kPipelineNames[3],
      "The forward-only eval step's phase (validation): mixed precision, "
      "Float8 expansion and narrowed gathers, without autodiff",
      buildEvalPipeline);
  mlir::PassPipelineRegistration<TrainingPipelineOptions>(
      kPipelineNames[4],
      "The eval phase of one pipeline rank (validation under pipeline "
      "parallelism): its stages cut out as forward-only functions",
      buildPipelineParallelEvalPipeline);
  mlir::PassPipelineRegistration<ExecutionPipelineOptions>(
      kPipelineNames[5],
      "Kernel calls on buffers, kernel fusions and the memory plan",
      buildExecutionPipeline);
  mlir::PassPipelineRegistration<LoweringPipelineOptions>(
      kPipelineNames[6], "Kernel IR to LLVM calls into the runtime",
      buildLoweringPipeline);
}
