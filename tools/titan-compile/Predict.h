//===- Predict.h - titan-compile's predicted training step -------*- C++
//-*-===//
//
// --emit=cost and --plan auto: compile a job's per-rank programs (one, or
// one per pipeline rank) through the execution phase and predict its step
// on a hardware description: each program's steps costed over its kernel
// IR (titan/Cost/StepCost.h), gradient accumulation's microbatches, the
// pipeline schedule simulated with each stage's costed forward and
// backward, and memory from each program's plan. Ranks with the same
// program are costed once.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TOOLS_TITAN_COMPILE_PREDICT_H
#define TITAN_TOOLS_TITAN_COMPILE_PREDICT_H

#include "titan/Compiler/ConfigPipelineOptions.h"
#include "titan/Compiler/Pipelines.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Cost/StepCost.h"
#include "titan/Contract/LlamaArgs.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace titan {

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
  /// The breakdown of pipeline rank 0's (or the only) program, per model
  /// part, for one microbatch's forward and backward and the optimizer.
  std::vector<cost::PartCost> parts;
  /// The same program's one microbatch's forward and backward by roofline
  /// class, and its compute seconds (the parts' sum less the optimizer).
  std::map<cost::WorkUnit, cost::StepCost::UnitTotals> units;
  double microbatchComputeSeconds = 0;

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
           KernelTarget target, const cost::Hardware &hw);

/// --emit=cost's report: the step, tokens/s per device, MFU, exposed
/// communication per mesh axis, bubble, peak memory per rank, and the
/// per-part breakdown.
void printPrediction(const JobPrediction &p, llvm::raw_ostream &os);

/// The same as one JSON object (--cost-format=json).
void printPredictionJSON(const JobPrediction &p, llvm::raw_ostream &os);

} // namespace titan

#endif // TITAN_TOOLS_TITAN_COMPILE_PREDICT_H
