//===- ConfigPipelineOptions.h - pipeline options from a config -*- C++ -*-===//
//
// What a TorchTitan training config says about each compilation phase: the
// one place that maps config keys to pass pipeline options.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COMPILER_CONFIGPIPELINEOPTIONS_H
#define TITAN_COMPILER_CONFIGPIPELINEOPTIONS_H

#include "titan/Compiler/Pipelines.h"
#include "titan/Model/MeshDegrees.h"

#include "llvm/Support/Error.h"

namespace titan {
struct TrainConfig;
struct LlamaArgs;
namespace target {
class TargetBackend;
} // namespace target

/// The mesh for `worldSize` ranks (0: the product of the fixed degrees,
/// with data_parallel_shard_degree = -1 taken as 1); errors name the keys
/// that do not multiply to the world size.
llvm::Expected<MeshDegrees> resolveMesh(const TrainConfig &config,
                                        int64_t worldSize);

/// Microbatches per optimizer step: the global batch over the local batch
/// of every data-parallel rank (the mesh is fixed at compile time).
int64_t accumulationSteps(const TrainConfig &config, const MeshDegrees &mesh);

/// [model] converters, [quantize.linear.float8] and [parallelism].
void setPartitionOptions(const TrainConfig &config, const MeshDegrees &mesh,
                         PartitionPipelineOptions &options);

/// The parameter dtype training runs in, in TorchTitan's spelling:
/// training.mixed_precision_param, or unset the target's default (its
/// DtypePolicy: f32 on the CPU, TorchTitan's bf16 on GPUs).
std::string paramDtype(const TrainConfig &config,
                       const target::TargetBackend &target);

/// [training] mixed precision (paramDtype), [activation_checkpoint],
/// [optimizer], [lr_scheduler], Float8's all-gather, and the pipeline
/// schedule's keys.
void setTrainingOptions(const TrainConfig &config, const MeshDegrees &mesh,
                        const target::TargetBackend &target,
                        TrainingPipelineOptions &options);

/// The latency-hiding scheduler's default budget, FSDP2's prefetch depth of
/// one transformer block: the bytes one block's all-gathers move (its
/// parameters over tp, in paramDtype) plus its gradient reductions' inputs
/// (the same elements in f32, training.mixed_precision_reduce):
///   (block parameters / tp) x (param bytes + 4).
int64_t collectivePrefetchBudget(const TrainConfig &config,
                                 const LlamaArgs &model,
                                 const MeshDegrees &mesh,
                                 const target::TargetBackend &target);

/// Whether the state is offloaded to host memory (kernel-offload-state):
/// training.enable_cpu_offload on a target without host memory, or
/// debug.offload_state on any.
bool offloadsState(const TrainConfig &config,
                   const target::TargetBackend &target);

/// The target, debug.deterministic, the collective scheduler
/// (debug.no_comm_overlap turns it off; its budget as above) and CPU
/// offload (offloadsState).
void setExecutionOptions(const TrainConfig &config, const LlamaArgs &model,
                         const MeshDegrees &mesh,
                         const target::TargetBackend &target,
                         ExecutionPipelineOptions &options);

} // namespace titan

#endif // TITAN_COMPILER_CONFIGPIPELINEOPTIONS_H
