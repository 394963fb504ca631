//===- PipelineStages.h - how pipeline parallel cuts a Llama ----*- C++ -*-===//
//
// TorchTitan v0.2.0's stage split (torchtitan/distributed/
// pipeline_parallel.py: pipeline_llm, generate_llm_fqn_per_model_part,
// pipeline_module_split): how many stages, which modules each holds, and
// which stages each pipeline rank runs. titan-llama-pipeline-stages
// (lib/Import) writes it into the IR for the stage cut; the schedules
// (lib/Pipeline), the driver and the planner build on it too.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_MODEL_PIPELINESTAGES_H
#define TITAN_MODEL_PIPELINESTAGES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace titan {

/// The schedules' shapes: one stage per rank (GPipe, 1F1B), several looped
/// over the ranks (rank r holds r, r + p, ...), or two in a V (rank r holds
/// r and 2p - 1 - r: ZBVZeroBubble, DualPipeV).
enum class ScheduleStyle { SingleStage, Looped, V };

/// The style of a pipeline_parallel_schedule name, or an error naming the
/// known schedules.
llvm::Expected<ScheduleStyle> scheduleStyle(llvm::StringRef schedule);

/// One stage's modules: the embedding, transformer layers [firstLayer,
/// firstLayer + numLayers), the final norm and output projection.
struct PipelineStage {
  bool embedding = false;
  int64_t firstLayer = 0, numLayers = 0;
  bool output = false;
  /// TorchTitan's module names: "tok_embeddings", "layers.3", "norm",
  /// "output".
  std::vector<std::string> moduleNames() const;
};

struct PipelinePlan {
  ScheduleStyle style = ScheduleStyle::SingleStage;
  int64_t ranks = 1;
  std::vector<PipelineStage> stages;
  /// The stages each pipeline rank runs, in the order TorchTitan builds
  /// them.
  std::vector<std::vector<int64_t>> stagesOfRank;
};

/// The plan for `layers` transformer layers on `ranks` pipeline ranks with
/// `schedule`; `layersPerStage` (pipeline_parallel_layers_per_stage) when
/// set, else 1 stage per rank (single-stage schedules) or 2; the embedding
/// and the norm + output weigh `firstStageLessLayers` and
/// `lastStageLessLayers` layers. Errors name the keys, as TorchTitan's.
llvm::Expected<PipelinePlan>
planPipelineStages(int64_t layers, int64_t ranks, llvm::StringRef schedule,
                   std::optional<int64_t> layersPerStage,
                   int64_t firstStageLessLayers, int64_t lastStageLessLayers);

} // namespace titan

#endif // TITAN_MODEL_PIPELINESTAGES_H
