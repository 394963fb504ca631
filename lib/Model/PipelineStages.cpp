//===- PipelineStages.cpp - TorchTitan's pipeline stage split -------------===//
//
// Line for line the rules of TorchTitan v0.2.0's pipeline_llm,
// generate_llm_fqn_per_model_part and pipeline_module_split's
// _get_stage_indices; the messages keep TorchTitan's content but name
// titan's config keys.
//
//===----------------------------------------------------------------------===//

#include "titan/Model/PipelineStages.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace titan;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

llvm::Expected<ScheduleStyle> titan::scheduleStyle(llvm::StringRef schedule) {
  std::optional<ScheduleStyle> style =
      llvm::StringSwitch<std::optional<ScheduleStyle>>(schedule)
          .Cases({"GPipe", "1F1B", "PipelineScheduleSingle"},
                 ScheduleStyle::SingleStage)
          // With a schedule CSV: TorchTitan's pipeline_llm sizes the stages
          // by the named class (_PipelineScheduleRuntime is a
          // PipelineScheduleMulti).
          .Cases({"Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble",
                  "PipelineScheduleMulti", "_PipelineScheduleRuntime"},
                 ScheduleStyle::Looped)
          .Cases({"ZBVZeroBubble", "DualPipeV"}, ScheduleStyle::V)
          .Default(std::nullopt);
  if (!style)
    return error("parallelism.pipeline_parallel_schedule '" + schedule +
                 "' is not one of GPipe, 1F1B, Interleaved1F1B, LoopedBFS, "
                 "InterleavedZeroBubble, ZBVZeroBubble, DualPipeV, "
                 "PipelineScheduleSingle, PipelineScheduleMulti, "
                 "_PipelineScheduleRuntime");
  return *style;
}

std::vector<std::string> PipelineStage::moduleNames() const {
  std::vector<std::string> names;
  if (embedding)
    names.push_back("tok_embeddings");
  for (int64_t l = firstLayer; l < firstLayer + numLayers; ++l)
    names.push_back("layers." + std::to_string(l));
  if (output) {
    names.push_back("norm");
    names.push_back("output");
  }
  return names;
}

llvm::Expected<PipelinePlan>
titan::planPipelineStages(int64_t layers, int64_t ranks,
                          llvm::StringRef schedule,
                          std::optional<int64_t> layersPerStage,
                          int64_t inputWeight, int64_t outputWeight) {
  llvm::Expected<ScheduleStyle> style = scheduleStyle(schedule);
  if (!style)
    return style.takeError();
  PipelinePlan plan;
  plan.style = *style;
  plan.ranks = ranks;
  bool singleStage = *style == ScheduleStyle::SingleStage;

  // pipeline_llm: the number of (virtual) stages.
  int64_t stages;
  std::string modelInfo = llvm::formatv(
      "{0} layers with parallelism.pipeline_parallel_layers_per_stage = "
      "{1}",
      layers, layersPerStage ? std::to_string(*layersPerStage) : "unset");
  if (layersPerStage) {
    stages = (layers + inputWeight + outputWeight + *layersPerStage - 1) /
             *layersPerStage;
    if (stages % ranks != 0)
      return error(llvm::formatv(
          "the {0} pipeline stages are not divisible by "
          "parallelism.pipeline_parallel_degree ({1}): {2}; choose "
          "pipeline_parallel_layers_per_stage so that the number of stages "
          "is divisible by {1}",
          stages, ranks, modelInfo));
    int64_t perRank = stages / ranks;
    if (singleStage && perRank != 1)
      return error(llvm::formatv(
          "parallelism.pipeline_parallel_schedule '{0}' runs exactly 1 stage "
          "per rank, but {1} gives {2} stages on {3} ranks; set "
          "pipeline_parallel_layers_per_stage to {4} (one stage per rank), "
          "or use a looped schedule such as Interleaved1F1B",
          schedule, modelInfo, stages, ranks,
          (layers + inputWeight + outputWeight + ranks - 1) / ranks));
    if (!singleStage && perRank < 2)
      return error(llvm::formatv(
          "parallelism.pipeline_parallel_schedule '{0}' needs at least 2 "
          "stages per rank, but {1} gives {2} stages on {3} ranks; decrease "
          "pipeline_parallel_layers_per_stage",
          schedule, modelInfo, stages, ranks));
  } else {
    stages = ranks * (singleStage ? 1 : 2);
  }
  int64_t perRank = stages / ranks;
  if (*style == ScheduleStyle::V && perRank != 2)
    return error(llvm::formatv(
        "parallelism.pipeline_parallel_schedule '{0}' is a V schedule: it "
        "holds exactly 2 stages per rank, but {1} gives {2} per rank",
        schedule, modelInfo, perRank));

  // generate_llm_fqn_per_model_part: the modules of each stage.
  if (stages == 1) {
    plan.stages.push_back({true, 0, layers, true});
  } else {
    int64_t effective = layers + inputWeight + outputWeight;
    if (stages > effective)
      return error(llvm::formatv(
          "the {0} pipeline stages outnumber the {1} effective layers ({2} "
          "layers + pipeline_parallel_first_stage_less_layers {3} + "
          "pipeline_parallel_last_stage_less_layers {4})",
          stages, effective, layers, inputWeight, outputWeight));
    int64_t base = effective / stages, extra = effective % stages;
    if (inputWeight > base)
      return error(llvm::formatv(
          "parallelism.pipeline_parallel_first_stage_less_layers ({0}) "
          "exceeds the {1} layers per stage",
          inputWeight, base));
    if (outputWeight > base)
      return error(llvm::formatv(
          "parallelism.pipeline_parallel_last_stage_less_layers ({0}) "
          "exceeds the {1} layers per stage",
          outputWeight, base));
    int64_t next = 0;
    for (int64_t s = 0; s < stages; ++s) {
      int64_t share = base + (s < extra ? 1 : 0);
      PipelineStage stage;
      stage.embedding = s == 0;
      stage.output = s == stages - 1;
      if (stage.embedding)
        share -= inputWeight;
      else if (stage.output)
        share -= outputWeight;
      stage.firstLayer = next;
      stage.numLayers = std::max<int64_t>(0, std::min(share, layers - next));
      next += stage.numLayers;
      plan.stages.push_back(stage);
    }
    if (next != layers)
      return error(llvm::formatv(
          "the pipeline stages hold {0} of the {1} layers (the last stage's "
          "norm and output leave no room); lower "
          "pipeline_parallel_first_stage_less_layers or "
          "pipeline_parallel_last_stage_less_layers",
          next, layers));
  }

  // pipeline_module_split's _get_stage_indices.
  plan.stagesOfRank.resize(size_t(ranks));
  for (int64_t r = 0; r < ranks; ++r) {
    if (*style == ScheduleStyle::V) {
      plan.stagesOfRank[size_t(r)] = {r, stages - 1 - r};
    } else {
      for (int64_t s = 0; s < perRank; ++s)
        plan.stagesOfRank[size_t(r)].push_back(r + s * ranks);
    }
  }
  return plan;
}
