//===- Predict.h - a job's predicted training step --------------*- C++ -*-===//
//
// The cost stage (titan-compile --emit=cost) and --plan auto's predictor:
// compile a job's per-rank programs (one, or one per pipeline rank)
// through the execution phase and predict its step on a hardware
// description: each program's steps costed over its kernel
// IR (titan/Cost/StepCost.h), gradient accumulation's microbatches, the
// pipeline schedule simulated with each stage's costed forward and
// backward, and memory from each program's plan. Ranks with the same
// program are costed once.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_PREDICT_H
#define TITAN_DRIVER_PREDICT_H

#include "titan/Compiler/ConfigPipelineOptions.h"
#include "titan/Compiler/Pipelines.h"
#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Cost/Hardware.h"
#include "titan/Cost/StepCost.h"
#include "titan/Driver/ConfigChecks.h"
#include "titan/Target/TargetBackend.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace titan {
namespace driver {

/// The hardware a prediction is for, as titan-compile's flags name it.
struct HardwareRequest {
  /// A built-in description by name (--gpu: h100, h200, cpu, ...).
  std::optional<std::string> gpu;
  /// A hardware description file (--hardware; overrides `gpu`).
  std::string file;
  /// The target backend asked for by name (--target), if any: without
  /// `gpu` and `file`, a target in host memory (the CPU) predicts for the
  /// built-in cpu, others for h100; it must agree with the description's.
  std::optional<std::string> target;
};

/// The hardware `request` names and the target whose program it runs: the
/// one asked for, else the first registered one (by name) that agrees with
/// the description: a target in host memory (TargetFeatures::hostMemory)
/// where ranks share a node's cores, a GPU target (cuda) otherwise. Errors
/// name an unknown --gpu or --target, a bad file, or a --target the
/// description contradicts.
llvm::Expected<std::pair<cost::Hardware, const target::TargetBackend *>>
resolveHardware(const HardwareRequest &request);

struct JobPrediction {
  std::string hardware;
  MeshDegrees mesh;
  int64_t gpus = 1;
  /// One optimizer step: every microbatch's forward and backward (the
  /// pipeline schedule's makespan under pp), then the optimizer.
  double stepSeconds = 0;
  double tokensPerSecondPerDevice = 0;
  /// Model FLOPs (6N + 12 L H Q T per token, PaLM's count, as TorchTitan's
  /// MFU) over the step time and the device's bf16 (or f32) peak.
  double mfu = 0;
  /// Per step, by group of mesh axes: the communication compute waited
  /// for, seconds.
  std::map<std::string, double> exposedCommSeconds;
  /// The pipeline schedule's idle fraction (0 without pp).
  double bubble = 0;
  /// The memory plan's peak of each distinct program (one entry per
  /// pipeline rank; one for SPMD meshes), bytes.
  std::vector<int64_t> peakBytes;
  /// training.enable_cpu_offload: the pinned host memory per rank (the
  /// host arena), bytes; 0 without.
  int64_t hostBytes = 0;
  /// The breakdown of pipeline rank 0's (or the only) program, per model
  /// part, for one microbatch's forward and backward and the optimizer.
  std::vector<cost::PartCost> parts;
  /// The same program's one microbatch's forward and backward by roofline
  /// class, and its compute seconds (the parts' sum less the optimizer).
  std::map<cost::WorkUnit, cost::StepCost::UnitTotals> units;
  double microbatchComputeSeconds = 0;
  /// The same by kernel, the blocks' calls added up, in program order.
  std::vector<cost::KernelCost> kernels;

  /// What the report's header and the figures above derive from: the
  /// model ("llama3 / 8B"), the pipeline schedule ("" without pp), the
  /// microbatches (gradient accumulation's, and the schedule's per
  /// accumulation step), the global batch's tokens per step, the model
  /// FLOPs per token, the peak rate MFU is against, the device's memory.
  std::string model, schedule;
  int64_t accumulationSteps = 1, pipelineMicrobatches = 1;
  double tokensPerStep = 0, flopsPerToken = 0, peakFlops = 0;
  double memoryBytesPerDevice = 0;
};

/// Predicts `config` on `mesh` compiled for `target`, on `hw`. Errors are
/// the compiler's (an impossible config names its keys).
llvm::Expected<JobPrediction>
predictJob(mlir::MLIRContext &context, const LlamaArgs &model,
           const TrainConfig &config, const MeshDegrees &mesh,
           const target::TargetBackend &target, const cost::Hardware &hw);

/// The cost stage: `config` on `worldSize` ranks (0: the degrees'
/// product), compiled for the hardware `request` names and predicted on
/// it. The config's warnings go to `warn`; errors name the keys.
llvm::Expected<JobPrediction> predictStep(const LlamaArgs &model,
                                          const TrainConfig &config,
                                          int64_t worldSize,
                                          const HardwareRequest &request,
                                          const WarningHandler &warn);

/// --emit=cost's report: the step, tokens/s per device, MFU, exposed
/// communication per mesh axis, bubble, peak memory per rank, and the
/// per-part breakdown.
void printPrediction(const JobPrediction &p, llvm::raw_ostream &os);

/// The same as one JSON object (--cost-format=json).
void printPredictionJSON(const JobPrediction &p, llvm::raw_ostream &os);

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_PREDICT_H
