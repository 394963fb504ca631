//===- Pipelines.h - titan's pass pipelines ---------------------*- C++ -*-===//
//
// The phases of a compilation, each a pass pipeline with typed options:
//
//   partition   (titan-partition-pipeline)  Float8 conversion, the mesh and
//               its shardings, the per-rank forward with its collectives
//   training    (titan-training-pipeline)   mixed precision, recompute
//               regions, autodiff, Float8 expansion, narrowed gathers and
//               the optimizer step
//   pipeline-parallel training (titan-pipeline-parallel-training-pipeline)
//               the same for one pipeline rank: its stages cut out,
//               scheduled, differentiated and split into phases
//   eval        (titan-eval-pipeline)       [validation]'s forward-only
//               step: mixed precision, Float8 expansion and narrowed
//               gathers on a second per-rank forward at validation's shape
//   execution   (titan-execution-pipeline)  bufferization into kernel calls,
//               kernel fusions and the memory plan
//   lowering    (titan-lowering-pipeline)   kernel IR to LLVM calls into the
//               runtime (kernel-to-runtime-calls), the same for every target
//
// titan-compile fills the options from a training config
// (ConfigPipelineOptions.h) and runs these functions and nothing else;
// titan-opt runs the same pipelines by name, and `titan-compile
// --emit=pipeline` prints the invocation that reproduces its compilation.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COMPILER_PIPELINES_H
#define TITAN_COMPILER_PIPELINES_H

#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LogicalResult.h"

#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
class ModuleOp;
} // namespace mlir

namespace titan {

/// The partition phase: TorchTitan's model conversion (Float8) and
/// parallelization plan, then the per-rank program.
struct PartitionPipelineOptions
    : public mlir::PassPipelineOptions<PartitionPipelineOptions> {
  Option<bool> float8{*this, "float8",
                      llvm::cl::desc("Convert eligible linears to Float8 "
                                     "(model.converters float8)"),
                      llvm::cl::init(false)};
  Option<std::string> float8Recipe{
      *this, "float8-recipe",
      llvm::cl::desc("tensorwise, rowwise or rowwise_with_gw_hp"),
      llvm::cl::init("tensorwise")};
  ListOption<std::string> float8FilterFqns{
      *this, "float8-filter-fqns",
      llvm::cl::desc("Linears kept in high precision (name substrings)")};
  Option<int64_t> pp{*this, "pp", llvm::cl::desc("Pipeline parallel degree"),
                     llvm::cl::init(1)};
  Option<int64_t> dpReplicate{*this, "dp-replicate",
                              llvm::cl::desc("Data parallel replicas"),
                              llvm::cl::init(1)};
  Option<int64_t> dpShard{*this, "dp-shard",
                          llvm::cl::desc("FSDP shard degree"),
                          llvm::cl::init(1)};
  Option<int64_t> cp{*this, "cp", llvm::cl::desc("Context parallel degree"),
                     llvm::cl::init(1)};
  Option<int64_t> tp{*this, "tp", llvm::cl::desc("Tensor parallel degree"),
                     llvm::cl::init(1)};
  Option<bool> lossParallel{*this, "loss-parallel",
                            llvm::cl::desc("Vocabulary-parallel loss under TP"),
                            llvm::cl::init(true)};
  Option<std::string> reshardAfterForward{
      *this, "reshard-after-forward",
      llvm::cl::desc("FSDP's reshard_after_forward: default, always, never"),
      llvm::cl::init("default")};
  Option<std::string> cpRotateMethod{
      *this, "cp-rotate-method",
      llvm::cl::desc("Context parallel's K/V exchange: allgather, alltoall"),
      llvm::cl::init("allgather")};
};

/// The training phases (whole-step and pipeline-parallel): how the step is
/// differentiated and updated.
struct TrainingPipelineOptions
    : public mlir::PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> paramType{
      *this, "param-type",
      llvm::cl::desc("Compute type of the parameters: f32 or bf16"),
      llvm::cl::init("f32")};
  Option<std::string> checkpointMode{
      *this, "ac-mode",
      llvm::cl::desc("Activation checkpointing: none, selective, full"),
      llvm::cl::init("none")};
  Option<std::string> checkpointSelectiveOption{
      *this, "ac-selective-option",
      llvm::cl::desc("Selective checkpointing: op, or every Nth block"),
      llvm::cl::init("op")};
  ListOption<std::string> checkpointForceRecomputeFqns{
      *this, "ac-force-recompute-fqns",
      llvm::cl::desc("Linears whose weight shape is always recomputed")};
  Option<int64_t> accumulationSteps{
      *this, "accumulation-steps",
      llvm::cl::desc("Microbatches per optimizer step"), llvm::cl::init(1)};
  Option<bool> asyncTensorParallel{
      *this, "async-tensor-parallel",
      llvm::cl::desc("Fuse sequence parallel's tp gathers and reduce-scatters "
                     "with their GEMMs (dist-async-tensor-parallel)"),
      llvm::cl::init(false)};
  Option<bool> widenGemmResults{
      *this, "widen-gemm-results",
      llvm::cl::desc("GEMMs write the f32 weight gradients FSDP reduces, "
                     "unrounded (titan-widen-gemm-results)"),
      llvm::cl::init(true)};
  Option<bool> fsdpFloat8AllGather{
      *this, "fsdp-float8-all-gather",
      llvm::cl::desc("FSDP gathers tensorwise float8 weights"),
      llvm::cl::init(false)};
  Option<double> lr{*this, "lr", llvm::cl::desc("Peak learning rate"),
                    llvm::cl::init(8e-4)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW beta1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW beta2"),
                       llvm::cl::init(0.95)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW epsilon"),
                     llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("AdamW weight decay"),
                             llvm::cl::init(0.1)};
  Option<double> maxNorm{*this, "max-norm",
                         llvm::cl::desc("Gradient clipping norm"),
                         llvm::cl::init(1.0)};
  Option<int64_t> warmupSteps{*this, "warmup-steps",
                              llvm::cl::desc("Linear warmup steps"),
                              llvm::cl::init(200)};
  Option<double> decayRatio{*this, "decay-ratio",
                            llvm::cl::desc("Share of steps that decay (-1: "
                                           "all after warmup)"),
                            llvm::cl::init(-1.0)};
  Option<std::string> decayType{*this, "decay-type",
                                llvm::cl::desc("linear, sqrt or cosine"),
                                llvm::cl::init("linear")};
  Option<double> minLrFactor{*this, "min-lr-factor",
                             llvm::cl::desc("Final lr over the peak"),
                             llvm::cl::init(0.0)};
  Option<bool> optimizerInBackward{
      *this, "optimizer-in-backward",
      llvm::cl::desc("Each parameter's AdamW update in the backward, once "
                     "its gradient is final, with no clipping (TorchTitan's "
                     "optimizer.early_step_in_backward; pp = 1 only)"),
      llvm::cl::init(false)};

  // Pipeline parallelism only (titan-pipeline-parallel-training-pipeline).
  Option<int64_t> pipelineRank{*this, "pp-rank",
                               llvm::cl::desc("The pipeline rank compiled"),
                               llvm::cl::init(0)};
  ListOption<int64_t> pipelineStages{*this, "pp-stages",
                                     llvm::cl::desc("The stages of that rank")};
  Option<std::string> pipelineSchedule{
      *this, "pp-schedule",
      llvm::cl::desc("TorchTitan's pipeline_parallel_schedule"),
      llvm::cl::init("1F1B")};
  Option<std::string> pipelineScheduleCsv{
      *this, "pp-schedule-csv",
      llvm::cl::desc("A pipeline_parallel_schedule_csv file")};
  Option<int64_t> pipelineLayersPerStage{
      *this, "pp-layers-per-stage",
      llvm::cl::desc("Layers per stage (0: TorchTitan's split)"),
      llvm::cl::init(0)};
  Option<int64_t> pipelineFirstStageLessLayers{
      *this, "pp-first-stage-less-layers",
      llvm::cl::desc("Layer-equivalents the first stage's embedding counts"),
      llvm::cl::init(1)};
  Option<int64_t> pipelineLastStageLessLayers{
      *this, "pp-last-stage-less-layers",
      llvm::cl::desc("Layer-equivalents the last stage's output counts"),
      llvm::cl::init(1)};
  Option<int64_t> pipelineMicrobatches{
      *this, "pp-microbatches", llvm::cl::desc("Microbatches per local batch"),
      llvm::cl::init(1)};
  Option<bool> pipelineSplitWeightGrad{
      *this, "pp-split-weight-grad",
      llvm::cl::desc("The schedule runs input (I) and weight (W) gradients "
                     "apart"),
      llvm::cl::init(false)};
  Option<bool> pipelineKeepGathered{
      *this, "pp-keep-gathered",
      llvm::cl::desc("Keep what a stage computes from its parameters (FSDP's "
                     "gathered weights) for the whole step, as FSDP2 with "
                     "reshard_after_forward False (TorchTitan's default under "
                     "pipeline parallelism); false: each microbatch gathers "
                     "again (fsdp_reshard_after_forward = \"always\")"),
      llvm::cl::init(true)};
};

/// The execution phase: kernel calls on planned memory.
struct ExecutionPipelineOptions
    : public mlir::PassPipelineOptions<ExecutionPipelineOptions> {
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("The target backend (cpu, cuda, or another registered "
                     "one): its kernels' workspaces and dtype policy"),
      llvm::cl::init("cpu")};
  ListOption<std::string> functions{
      *this, "functions",
      llvm::cl::desc("The step functions (default: train_step, "
                     "optimizer_step)")};
  Option<bool> deterministic{*this, "deterministic",
                             llvm::cl::desc("Deterministic attention gradients "
                                            "(debug.deterministic)"),
                             llvm::cl::init(false)};
  Option<bool> scheduleCollectives{
      *this, "schedule-collectives",
      llvm::cl::desc("Start collectives early and wait for them late "
                     "(kernel-schedule-collectives; off with "
                     "debug.no_comm_overlap)"),
      llvm::cl::init(true)};
  Option<int64_t> maxInFlightBytes{
      *this, "max-in-flight-bytes",
      llvm::cl::desc("The scheduler's budget: collective bytes whose "
                     "lifetime it may lengthen at any point (negative: "
                     "unbounded; titan-compile: one transformer block's "
                     "FSDP gathers and gradient reductions)"),
      llvm::cl::init(-1)};
  Option<bool> offloadState{
      *this, "offload-state",
      llvm::cl::desc("Keep the parameters, gradients and optimizer state in "
                     "host memory and run optimizer_step on the host "
                     "(training.enable_cpu_offload; kernel-offload-state)"),
      llvm::cl::init(false)};
};

/// The lowering phase.
/// The CUDA toolkit titan was built with (empty in a CPU-only build).
std::string defaultCudaToolkit();

struct LoweringPipelineOptions
    : public mlir::PassPipelineOptions<LoweringPipelineOptions> {
  Option<std::string> symbolPrefix{
      *this, "symbol-prefix",
      llvm::cl::desc("Prefix of the step functions' symbols"),
      llvm::cl::init("titan_")};
  Option<std::string> deviceChip{
      *this, "device-chip",
      llvm::cl::desc("The GPU architecture generated kernels are compiled "
                     "for (sm_90a); empty: they run on the host's threads"),
      llvm::cl::init("")};
  Option<std::string> deviceToolkit{
      *this, "device-toolkit",
      llvm::cl::desc("The CUDA toolkit whose ptxas and libdevice compile the "
                     "generated GPU kernels (empty: the one titan was "
                     "built with)"),
      llvm::cl::init("")};
  Option<std::string> deviceFormat{
      *this, "device-format",
      llvm::cl::desc("What the generated GPU kernels are embedded as: bin "
                     "(a cubin from ptxas, the default) or isa (PTX)"),
      llvm::cl::init("bin")};
};

void buildPartitionPipeline(mlir::OpPassManager &pm,
                            const PartitionPipelineOptions &options);
/// The partition phase's first step alone (titan-float8, when `options`
/// enable it), for reports on what it converts.
void addFloat8Conversion(mlir::OpPassManager &pm,
                         const PartitionPipelineOptions &options);
void buildTrainingPipeline(mlir::OpPassManager &pm,
                           const TrainingPipelineOptions &options);
void buildPipelineParallelTrainingPipeline(
    mlir::OpPassManager &pm, const TrainingPipelineOptions &options);
/// The eval phase on a partitioned per-rank forward (validation.enable):
/// what the training phase does to the forward before differentiating it
/// (mixed precision, ring attention, Float8 expansion, narrowed gathers),
/// so the eval step computes the training step's loss, without the
/// backward and the optimizer.
void buildEvalPipeline(mlir::OpPassManager &pm,
                       const TrainingPipelineOptions &options);
/// Moves the forward of `evalModule` (after the eval phase) into the
/// training program `module` as its `eval` step: its tokens and labels
/// become the slots input:eval_tokens and input:eval_labels (document
/// starts input:eval_document_starts), its loss output:eval_loss; its
/// parameters keep their param:* slots, so it reads the training step's
/// weights. Both modules must be partitioned over the same mesh. Errors are
/// reported on the modules.
mlir::LogicalResult addEvalStep(mlir::ModuleOp module,
                                mlir::ModuleOp evalModule);
/// The eval phase under pipeline parallelism, for pipeline rank
/// `options.pipelineRank`: the eval phase's passes around the stage cut
/// (TorchTitan's split, dist-pipeline-split), leaving the rank's stages as
/// forward functions `stage<s>` that keep their FSDP gathers (the eval
/// step runs after the update, so the training step's gathered weights
/// are stale).
void buildPipelineParallelEvalPipeline(mlir::OpPassManager &pm,
                                       const TrainingPipelineOptions &options);
/// Moves the stage functions of `evalModule` (after the pipeline-parallel
/// eval phase) into pipeline rank `module` as its eval steps
/// (manifest::evalStageFunction): boundary tensors become the arena slots
/// manifest::evalStageInputName / evalStageOutputName, tokens, labels and
/// the loss the eval step's slots; parameters keep their param:* slots.
/// Returns the functions added, in stage order; errors are reported on the
/// modules.
mlir::FailureOr<std::vector<std::string>>
addPipelineEvalStages(mlir::ModuleOp module, mlir::ModuleOp evalModule);
void buildExecutionPipeline(mlir::OpPassManager &pm,
                            const ExecutionPipelineOptions &options);
void buildLoweringPipeline(mlir::OpPassManager &pm,
                           const LoweringPipelineOptions &options);

/// The function names of stage `stage`'s phases, as dist-pipeline-phases
/// names them: unshard (once per step), forward, backward, reduce_grad
/// (once per step), or with `splitWeightGrad` unshard, forward,
/// backward_input, backward_weight, reduce_grad.
std::vector<std::string> stagePhaseFunctions(int64_t stage,
                                             bool splitWeightGrad);

/// Registers the pipelines above by name, for titan-opt.
void registerTitanPipelines();

/// The names registerTitanPipelines registers, in its order (titan-opt's
/// --<name>; the MLIR fuzz target runs each).
llvm::ArrayRef<llvm::StringRef> titanPipelineNames();

} // namespace titan

#endif // TITAN_COMPILER_PIPELINES_H
