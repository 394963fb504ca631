//===- PipelineJob.h - a pipeline-parallel job's programs -------*- C++ -*-===//
//
// Under pipeline parallelism the driver builds one program per pipeline
// rank (its stages' phases and its optimizer step) and links them into one
// executable; each rank runs the program of its pipeline coordinate. This
// file holds what those programs share: the stage plan and the schedule,
// what a rank's manifest says about them, and the table that binds the
// programs to the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_PIPELINEJOB_H
#define TITAN_DRIVER_PIPELINEJOB_H

#include "titan/Compiler/Pipelines.h"
#include "titan/Contract/Manifest.h"
#include "titan/Model/PipelineStages.h"
#include "titan/Pipeline/Schedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace titan {
struct LlamaArgs;
struct TrainConfig;

namespace driver {

struct PipelineJob {
  PipelinePlan plan;
  PipelineSchedule schedule;
  int64_t microbatches = 1, microbatchSize = 1;
  /// validation.enable: the rows of a validation batch's microbatches (the
  /// batch splits into the training schedule's microbatches, as
  /// TorchTitan's pp_schedule.eval splits it; 0 without validation) and
  /// each rank's forward-only list they run through, lowered and checked.
  int64_t evalMicrobatchSize = 0;
  std::vector<std::vector<std::string>> evalActions;
};

/// The stage plan and the schedule of `config` for `model`; errors name the
/// keys (a local batch that the microbatch size does not divide, a
/// schedule that cannot run so many microbatches).
llvm::Expected<PipelineJob> planPipelineJob(const LlamaArgs &model,
                                            const TrainConfig &config);

/// validation.enable under pipeline parallelism: sets `job`'s eval
/// microbatches and forward-only schedule; an error names the keys when
/// the validation batch does not split into the schedule's microbatches.
llvm::Error planPipelineEval(PipelineJob &job, const TrainConfig &config);

/// Sets the pipeline-rank options of `options` for `rank` of `job` (its
/// stages, the microbatches, whether the schedule splits the backward) and
/// returns the rank's phase functions, in order.
std::vector<std::string>
setPipelineRankOptions(const PipelineJob &job, int64_t rank,
                       TrainingPipelineOptions &options);

/// How many microbatches of each of `rank`'s stages are in flight at most
/// (forward run, backward not yet): the frames the runtime allocates.
std::map<int64_t, int64_t> framesInFlight(const PipelineSchedule &schedule,
                                          int64_t rank);

/// Adds `pipeline` to a rank's manifest: the rank, the stages and their
/// ranks, the microbatches, the rank's actions, and per local stage its
/// phase functions, its frame (slots and bytes, from the planned kernel-IR
/// `module`) and the frames in flight.
void addPipelineToManifest(manifest::Manifest &manifest, const PipelineJob &job,
                           int64_t rank, mlir::ModuleOp module);

/// The pipeline rank holding parameter `name` (the rank of the stage whose
/// module it belongs to), or -1 for a name of no stage.
int64_t pipelineRankOfParameter(const PipelineJob &job, llvm::StringRef name);

/// Tags each parameter of `manifest` with its pipeline rank and sets
/// `allParams` to every parameter of the model (`whole`: the manifest of
/// the partitioned model before the stage cut), so checkpoints can index
/// and export the whole model from any rank.
void addPipelineParameters(manifest::Manifest &manifest,
                           const manifest::Manifest &whole,
                           const PipelineJob &job);

/// The bytes of `rank`'s microbatch frames: per local stage, the frames
/// the schedule keeps in flight x one frame's bytes (the planned kernel-IR
/// `module`'s frame slots). The rank's peak is its arena plus these.
int64_t pipelineFramesBytes(const PipelineJob &job, int64_t rank,
                            mlir::ModuleOp module);

/// The bytes `stage` sends the next stage per microbatch: its output
/// boundary tensors' frame slots in the planned kernel-IR `module` of the
/// rank that holds it (0 for the last stage).
int64_t stageOutputBytes(mlir::ModuleOp module, int64_t stage);

/// `rank`'s send rings (titan/Pipeline/SendRings.h): per channel it sends
/// copies on (its gradients, and validation's activations: training's go
/// from their frames), the slots its training and eval lists need (the lists of
/// every rank: the planned kernel-IR `module`'s dist.pipeline actions and the
/// job's eval lists), each the bytes of the largest message the channel
/// carries (a stage's boundary tensors, from `module`'s frame slots and,
/// for the eval lists, its arena slots). An error names a list that
/// cannot run.
llvm::Expected<std::vector<manifest::Manifest::SendRing>>
pipelineSendRings(const PipelineJob &job, int64_t rank, mlir::ModuleOp module);

/// The bytes of `rank`'s send rings: planned beside its arena and frames.
int64_t pipelineSendBytes(const PipelineJob &job, int64_t rank,
                          mlir::ModuleOp module);

/// Prints `rank`'s microbatch frames (per local stage: the frames the
/// schedule keeps in flight x one frame's bytes, what they hold) and the
/// rank's peak with them: its planned arena plus the frames.
void printPipelineMemory(const PipelineJob &job, int64_t rank,
                         mlir::ModuleOp module, llvm::raw_ostream &os);

/// --emit=summary under pipeline parallelism: per pipeline rank its stages
/// and the parameter, gradient and AdamW bytes of one of its ranks (from
/// the partitioned module's per-rank parameter types).
void printPipelineSummary(const PipelineJob &job, mlir::ModuleOp partitioned,
                          llvm::raw_ostream &os);

/// The C++ source of the executable's program table and main(): for each
/// pipeline rank its manifest symbol and its functions
/// (`titan_pp<r>_<name>`), handed to the runtime's pipeline entry point.
std::string
pipelineTableSource(const std::vector<std::vector<std::string>> &functions);

/// --emit=schedule: the stage split, each rank's actions (TorchTitan's CSV
/// notation), and the bubble simulated with unit costs (F = 1, B = 2; a
/// looped schedule's chunk costs 1 / v of that) beside the textbook's;
/// with `svgPath`, also the simulated timeline as an SVG chart.
llvm::Error printPipelineSchedule(const LlamaArgs &model,
                                  const TrainConfig &config,
                                  llvm::StringRef svgPath,
                                  llvm::raw_ostream &os);

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_PIPELINEJOB_H
