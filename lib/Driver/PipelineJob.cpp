//===- PipelineJob.cpp - a pipeline-parallel job's plan and programs ------===//
//
// The stage plan and schedule of a pipeline-parallel job, what each rank's
// manifest and reports say about them, and the executable's program table.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/PipelineJob.h"

#include "titan/Compiler/Pipelines.h"
#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"
#include "titan/Pipeline/SendRings.h"
#include "titan/Support/Format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace titan;
using namespace titan::driver;

llvm::Expected<PipelineJob> driver::planPipelineJob(const LlamaArgs &model,
                                                    const TrainConfig &c) {
  const auto &p = c.parallelism;
  PipelineJob job;
  llvm::Expected<PipelinePlan> plan = planPipelineStages(
      model.nLayers, p.pipelineParallelDegree, p.pipelineParallelSchedule,
      p.pipelineParallelLayersPerStage, p.pipelineParallelFirstStageLessLayers,
      p.pipelineParallelLastStageLessLayers);
  if (!plan)
    return plan.takeError();
  job.plan = std::move(*plan);
  job.microbatchSize = p.pipelineParallelMicrobatchSize;
  // TorchTitan v0.2.0's build_pipeline_schedule: the local batch splits
  // into whole microbatches.
  if (job.microbatchSize < 1 ||
      c.training.localBatchSize % job.microbatchSize != 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("training.local_batch_size ({0}) must be divisible by "
                      "parallelism.pipeline_parallel_microbatch_size ({1})",
                      c.training.localBatchSize, job.microbatchSize)
            .str());
  job.microbatches = c.training.localBatchSize / job.microbatchSize;
  llvm::Expected<PipelineSchedule> schedule =
      p.pipelineParallelScheduleCsv.empty()
          ? buildSchedule(p.pipelineParallelSchedule, job.plan,
                          job.microbatches)
          : loadScheduleCSV(p.pipelineParallelScheduleCsv, job.plan,
                            job.microbatches);
  if (!schedule)
    return schedule.takeError();
  job.schedule = std::move(*schedule);
  // A list that cannot run would hang the ranks: the simulation proves it
  // can.
  if (llvm::Expected<ScheduleTimeline> timeline =
          simulateSchedule(job.schedule);
      !timeline)
    return timeline.takeError();
  if (c.validation.enable)
    if (llvm::Error e = planPipelineEval(job, c))
      return e;
  return job;
}

llvm::Error driver::planPipelineEval(PipelineJob &job, const TrainConfig &c) {
  // TorchTitan v0.2.0's Validator calls the training schedule's eval(),
  // which splits the validation batch into that schedule's microbatches.
  int64_t batch = c.validation.localBatchSize;
  if (batch % job.microbatches != 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv(
            "validation.local_batch_size ({0}) must be divisible by the "
            "pipeline's {1} microbatches (training.local_batch_size / "
            "parallelism.pipeline_parallel_microbatch_size): under pipeline "
            "parallelism a validation batch runs through the stages in the "
            "training schedule's microbatches, as TorchTitan's "
            "pp_schedule.eval splits it",
            batch, job.microbatches)
            .str());
  job.evalMicrobatchSize = batch / job.microbatches;
  PipelineSchedule eval = forwardOnlySchedule(job.schedule);
  job.evalActions = lowerSchedule(eval);
  if (llvm::Expected<PipelineSchedule> checked =
          verifyLoweredSchedule(job.evalActions, eval);
      !checked)
    return checked.takeError();
  return llvm::Error::success();
}

std::vector<std::string>
driver::setPipelineRankOptions(const PipelineJob &job, int64_t rank,
                               TrainingPipelineOptions &options) {
  const std::vector<int64_t> &stages = job.schedule.stagesOfRank[size_t(rank)];
  bool split = splitsBackward(job.schedule);
  options.pipelineRank = rank;
  options.pipelineStages = llvm::ArrayRef(stages);
  options.pipelineMicrobatches = job.microbatches;
  options.pipelineSplitWeightGrad = split;
  std::vector<std::string> phases;
  for (int64_t s : stages)
    for (std::string &phase : stagePhaseFunctions(s, split))
      phases.push_back(std::move(phase));
  return phases;
}

std::map<int64_t, int64_t>
driver::framesInFlight(const PipelineSchedule &schedule, int64_t rank) {
  std::map<int64_t, int64_t> live, peak;
  for (int64_t s : schedule.stagesOfRank[size_t(rank)])
    peak[s] = 0;
  // A microbatch's frame lives from its forward to its last backward
  // action (B, or W after I).
  for (const PipelineAction &a : schedule.actions[size_t(rank)]) {
    int64_t &n = live[a.stage];
    if (a.kind == PipelineAction::Forward)
      ++n;
    else if (a.kind != PipelineAction::BackwardInput)
      --n;
    peak[a.stage] = std::max(peak[a.stage], n);
  }
  return peak;
}

/// The frame slots of the planned kernel-IR `module`, each with its place.
static std::vector<std::pair<manifest::FrameSlot, manifest::SlotRange>>
frameSlots(mlir::ModuleOp module) {
  std::vector<std::pair<manifest::FrameSlot, manifest::SlotRange>> slots;
  if (auto frameSlots = module->getAttrOfType<mlir::DictionaryAttr>(
          kernel::KernelDialect::kFrameSlotsAttrName))
    for (mlir::NamedAttribute slot : frameSlots) {
      auto range = mlir::cast<mlir::DenseI64ArrayAttr>(slot.getValue());
      slots.push_back({*manifest::FrameSlot::parse(slot.getName().getValue()),
                       {range[0], range[1]}});
    }
  return slots;
}

/// The lowered lists of every rank in `module`'s dist.pipeline attribute.
static std::vector<std::vector<std::string>>
loweredLists(mlir::ModuleOp module) {
  std::vector<std::vector<std::string>> rows;
  if (auto attr = module->getAttrOfType<mlir::DictionaryAttr>(
          dist::DistDialect::kPipelineAttrName))
    if (auto lists = attr.getAs<mlir::ArrayAttr>("actions"))
      for (mlir::Attribute list : lists) {
        std::vector<std::string> &row = rows.emplace_back();
        for (mlir::Attribute a : mlir::cast<mlir::ArrayAttr>(list))
          row.push_back(mlir::cast<mlir::StringAttr>(a).getValue().str());
      }
  return rows;
}

void driver::addPipelineToManifest(manifest::Manifest &m,
                                   const PipelineJob &job, int64_t rank,
                                   mlir::ModuleOp module) {
  manifest::Manifest::Pipeline &pipeline = m.pipeline.emplace();
  std::map<int64_t, int64_t> frames = framesInFlight(job.schedule, rank);
  bool split = splitsBackward(job.schedule);
  for (int64_t s : job.schedule.stagesOfRank[size_t(rank)]) {
    std::vector<std::string> phases = stagePhaseFunctions(s, split);
    manifest::Manifest::PipelineStage &stage = pipeline.stages.emplace_back();
    stage.stage = s;
    stage.unshard = phases[0];
    stage.forward = phases[1];
    if (split) {
      stage.backwardInput = phases[2];
      stage.backwardWeight = phases[3];
    } else {
      stage.backward = phases[2];
    }
    stage.reduceGrad = phases.back();
    stage.frames = frames[s];
    if (job.evalMicrobatchSize > 0)
      stage.eval = manifest::evalStageFunction(s);
  }
  // Each frame slot in its stage's frame, and each frame's size.
  for (auto &[slot, range] : frameSlots(module))
    for (manifest::Manifest::PipelineStage &stage : pipeline.stages)
      if (stage.stage == slot.stage) {
        stage.frameSlots.push_back({slot, range});
        stage.frameBytes = std::max(
            stage.frameBytes, range.first + kernel::alignToArena(range.second));
      }
  // The rank's list as dist-pipeline-schedule wrote it, with its
  // transfers.
  std::vector<std::vector<std::string>> lists = loweredLists(module);
  if (size_t(rank) < lists.size())
    for (const std::string &a : lists[size_t(rank)])
      pipeline.actions.push_back(*manifest::Manifest::PipelineAction::parse(a));
  // Validation's forward-only list, with its transfers.
  if (job.evalMicrobatchSize > 0)
    for (const std::string &a : job.evalActions[size_t(rank)])
      pipeline.evalActions.push_back(
          *manifest::Manifest::PipelineAction::parse(a));
  pipeline.stageRanks.resize(size_t(job.schedule.stages));
  for (auto [r, owned] : llvm::enumerate(job.schedule.stagesOfRank))
    for (int64_t s : owned)
      pipeline.stageRanks[size_t(s)] = int64_t(r);
  // Verified when written, so the lists run: an error here is internal.
  llvm::Expected<std::vector<manifest::Manifest::SendRing>> rings =
      pipelineSendRings(job, rank, module);
  if (rings)
    pipeline.sendRings = std::move(*rings);
  else
    llvm::report_fatal_error(rings.takeError());
  pipeline.rank = rank;
  pipeline.schedule = job.schedule.name;
  pipeline.numStages = job.schedule.stages;
  pipeline.microbatches = job.microbatches;
  pipeline.microbatchSize = job.microbatchSize;
}

int64_t driver::pipelineRankOfParameter(const PipelineJob &job,
                                        llvm::StringRef name) {
  for (auto [s, stage] : llvm::enumerate(job.plan.stages))
    for (const std::string &module : stage.moduleNames())
      if (name.starts_with(module + "."))
        for (auto [r, owned] : llvm::enumerate(job.plan.stagesOfRank))
          if (llvm::is_contained(owned, int64_t(s)))
            return int64_t(r);
  return -1;
}

void driver::addPipelineParameters(manifest::Manifest &m,
                                   const manifest::Manifest &whole,
                                   const PipelineJob &job) {
  m.allParams = whole.params;
  for (auto *params : {&m.params, &m.allParams})
    for (manifest::Manifest::Param &p : *params)
      p.pipelineRank = pipelineRankOfParameter(job, p.name);
}

int64_t driver::pipelineFramesBytes(const PipelineJob &job, int64_t rank,
                                    mlir::ModuleOp module) {
  std::map<int64_t, int64_t> frameBytes;
  for (auto &[slot, range] : frameSlots(module))
    frameBytes[slot.stage] =
        std::max(frameBytes[slot.stage],
                 range.first + kernel::alignToArena(range.second));
  std::map<int64_t, int64_t> frames = framesInFlight(job.schedule, rank);
  int64_t total = 0;
  for (int64_t s : job.schedule.stagesOfRank[size_t(rank)])
    total += frameBytes[s] * frames[s];
  return total;
}

int64_t driver::stageOutputBytes(mlir::ModuleOp module, int64_t stage) {
  int64_t bytes = 0;
  for (auto &[slot, range] : frameSlots(module))
    if (slot.stage == stage && slot.kind == manifest::FrameSlot::StageOutput)
      bytes += range.second;
  return bytes;
}

/// The bytes of the message `stage` sends in `direction`: its boundary
/// tensors (output or input gradient frame slots; for the eval list, its
/// eval outputs' arena slots), each aligned to 256.
static int64_t messageBytes(mlir::ModuleOp module, int64_t stage, int direction,
                            bool eval) {
  using manifest::FrameSlot;
  int64_t bytes = 0;
  if (!eval) {
    FrameSlot::Kind kind =
        direction == 0 ? FrameSlot::StageOutput : FrameSlot::StageInputGrad;
    for (auto &[slot, range] : frameSlots(module))
      if (slot.stage == stage && slot.kind == kind)
        bytes += manifest::Manifest::SendRing::placed(range.second);
    return bytes;
  }
  auto slots = module->getAttrOfType<mlir::DictionaryAttr>(
      kernel::KernelDialect::kSlotsAttrName);
  for (int64_t i = 0; slots; ++i) {
    auto range = slots.getAs<mlir::DenseI64ArrayAttr>(
        "output:" + manifest::evalStageOutputName(stage, i));
    if (!range)
      break;
    bytes += manifest::Manifest::SendRing::placed(range[1]);
  }
  return bytes;
}

llvm::Expected<std::vector<manifest::Manifest::SendRing>>
driver::pipelineSendRings(const PipelineJob &job, int64_t rank,
                          mlir::ModuleOp module) {
  std::map<std::pair<int64_t, int>, manifest::Manifest::SendRing> rings;
  std::vector<int64_t> owner(size_t(job.schedule.stages));
  for (auto [r, stages] : llvm::enumerate(job.schedule.stagesOfRank))
    for (int64_t stage : stages)
      owner[size_t(stage)] = int64_t(r);
  for (bool eval : {false, true}) {
    std::vector<std::vector<std::string>> rows =
        eval ? job.evalActions : loweredLists(module);
    if (rows.empty())
      continue;
    // Training never stalls on a ring; validation's forward-only lists
    // may, where a ring that never waits would hold every microbatch.
    llvm::Expected<std::vector<std::vector<SendRing>>> lists = sendRings(
        rows, job.schedule,
        eval ? SendRingRule::ReceiveIndependent : SendRingRule::KnownReceived);
    if (!lists)
      return lists.takeError();
    for (const SendRing &ring : (*lists)[size_t(rank)]) {
      // Training's activations go from their frames
      // (runtime/lib/PipelineExecutor.h).
      if (!eval && ring.direction == 0)
        continue;
      manifest::Manifest::SendRing &r = rings[{ring.peer, ring.direction}];
      r.peer = ring.peer;
      r.flow = ring.direction;
      (eval ? r.evalSlots : r.slots) = ring.slots;
      // The largest message of a stage of this rank that sends to `peer`.
      int64_t &bytes = eval ? r.evalBytes : r.bytes;
      for (int64_t s : job.schedule.stagesOfRank[size_t(rank)]) {
        int64_t to = s + (ring.direction == 0 ? 1 : -1);
        if (to >= 0 && to < job.schedule.stages &&
            owner[size_t(to)] == ring.peer)
          bytes =
              std::max(bytes, messageBytes(module, s, ring.direction, eval));
      }
    }
  }
  std::vector<manifest::Manifest::SendRing> result;
  for (auto &[key, ring] : rings)
    result.push_back(ring);
  return result;
}

int64_t driver::pipelineSendBytes(const PipelineJob &job, int64_t rank,
                                  mlir::ModuleOp module) {
  llvm::Expected<std::vector<manifest::Manifest::SendRing>> rings =
      pipelineSendRings(job, rank, module);
  // The lists were verified when they were written: an error is internal.
  if (!rings)
    llvm::report_fatal_error(rings.takeError());
  int64_t bytes = 0;
  for (const manifest::Manifest::SendRing &r : *rings)
    bytes += r.ringBytes();
  return bytes;
}

void driver::printPipelineMemory(const PipelineJob &job, int64_t rank,
                                 mlir::ModuleOp module, llvm::raw_ostream &os) {
  // Per stage: one frame's bytes, and by kind.
  std::map<int64_t, int64_t> frameBytes;
  std::map<int64_t, std::map<std::string, int64_t>> kinds;
  for (auto &[slot, range] : frameSlots(module)) {
    using manifest::FrameSlot;
    int64_t bytes = kernel::alignToArena(range.second);
    frameBytes[slot.stage] =
        std::max(frameBytes[slot.stage], range.first + bytes);
    kinds[slot.stage]
         [slot.kind == FrameSlot::Stash ? "stashed activations"
          : slot.kind == FrameSlot::Tokens || slot.kind == FrameSlot::Labels
              ? "tokens and labels"
          : slot.kind == FrameSlot::DocumentStarts ? "document starts"
                                                   : "boundary tensors"] +=
        bytes;
  }
  std::map<int64_t, int64_t> frames = framesInFlight(job.schedule, rank);
  int64_t total = 0;
  os << "  pipeline frames (per microbatch in flight, " << job.schedule.name
     << " schedule):\n";
  for (int64_t s : job.schedule.stagesOfRank[size_t(rank)]) {
    int64_t bytes = frameBytes[s] * frames[s];
    total += bytes;
    os << llvm::formatv("    stage {0}: {1} in flight x {2} bytes = {3} "
                        "bytes\n",
                        s, frames[s], frameBytes[s], bytes);
    for (auto &[kind, b] : kinds[s])
      os << llvm::formatv("      {0,-30} {1,12} bytes per frame\n", kind, b);
  }
  int64_t sends = pipelineSendBytes(job, rank, module);
  os << llvm::formatv("  pipeline send buffers (a ring per channel: the "
                      "sends not yet known received): {0} bytes\n",
                      sends);
  int64_t arena = kernel::getArenaBytes(module);
  os << llvm::formatv("pipeline rank {0} peak: {1} bytes (arena {2} + "
                      "frames {3} + send buffers {4})\n",
                      rank, arena + total + sends, arena, total, sends);
}

void driver::printPipelineSummary(const PipelineJob &job,
                                  mlir::ModuleOp partitioned,
                                  llvm::raw_ostream &os) {
  auto forward = partitioned.lookupSymbol<mlir::func::FuncOp>("forward");
  dist::MeshAttr mesh = dist::getMesh(partitioned);
  if (!forward || !mesh)
    return;
  std::vector<int64_t> bytes(size_t(job.plan.ranks), 0);
  for (const ParameterArgument &p : getParameterArguments(forward))
    if (int64_t r = pipelineRankOfParameter(job, p.name.getValue()); r >= 0)
      bytes[size_t(r)] += *getStaticByteSize(p.type);
  os << "per rank (mesh pp " << mesh.getPp() << " x dp_replicate "
     << mesh.getDpReplicate() << " x dp_shard " << mesh.getDpShard() << " x cp "
     << mesh.getCp() << " x tp " << mesh.getTp() << " = " << mesh.getWorldSize()
     << " ranks; " << job.schedule.name << ", " << job.microbatches
     << " microbatches of " << job.microbatchSize
     << "; --emit=memory plans each pipeline rank's program)\n";
  for (int64_t r = 0; r < job.plan.ranks; ++r) {
    std::vector<std::string> modules;
    for (int64_t s : job.plan.stagesOfRank[size_t(r)])
      modules.push_back(
          llvm::formatv(
              "{0} ({1})", s,
              llvm::join(job.plan.stages[size_t(s)].moduleNames(), " "))
              .str());
    os << "  pipeline rank " << r << ": stages " << llvm::join(modules, ", ")
       << "\n";
    os << "    parameters " << humanBytes(double(bytes[size_t(r)]))
       << ", gradients " << humanBytes(double(bytes[size_t(r)]))
       << ", AdamW state " << humanBytes(2.0 * double(bytes[size_t(r)]))
       << "\n";
  }
}

std::string driver::pipelineTableSource(
    const std::vector<std::vector<std::string>> &functions) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// Generated by titan-compile: the programs of a pipeline-parallel\n"
        "// executable, one per pipeline rank, for the runtime's\n"
        "// titan_rt_pipeline_main (runtime/include/titanrt/Trainer.h has\n"
        "// the same struct).\n"
        "#include <cstdint>\n"
        "extern \"C\" {\n"
        "typedef void (*titan_step_fn)(char *arena, char *frame);\n"
        "struct titan_program {\n"
        "  const char *manifest;\n"
        "  int64_t num_functions;\n"
        "  const char *const *names;\n"
        "  const titan_step_fn *functions;\n"
        "};\n"
        "int titan_rt_pipeline_main(int argc, char **argv,\n"
        "                           const titan_program *programs,\n"
        "                           int64_t count);\n";
  for (auto [r, names] : llvm::enumerate(functions)) {
    os << "extern const char titan_pp" << r << "_manifest[];\n";
    for (const std::string &name : names)
      os << "void titan_pp" << r << "_" << name << "(char *, char *);\n";
  }
  os << "}\n\nnamespace {\n";
  for (auto [r, names] : llvm::enumerate(functions)) {
    os << "const char *const names" << r << "[] = {";
    for (const std::string &name : names)
      os << "\"" << name << "\", ";
    os << "};\nconst titan_step_fn functions" << r << "[] = {";
    for (const std::string &name : names)
      os << "titan_pp" << r << "_" << name << ", ";
    os << "};\n";
  }
  os << "const titan_program programs[] = {\n";
  for (auto [r, names] : llvm::enumerate(functions))
    os << "    {titan_pp" << r << "_manifest, " << names.size() << ", names"
       << r << ", functions" << r << "},\n";
  os << "};\n} // namespace\n\n"
        "int main(int argc, char **argv) {\n"
        "  return titan_rt_pipeline_main(argc, argv, programs, "
     << functions.size() << ");\n}\n";
  return text;
}

llvm::Error driver::printPipelineSchedule(const LlamaArgs &model,
                                          const TrainConfig &c,
                                          llvm::StringRef svgPath,
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
  if (!svgPath.empty()) {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> svg =
        mlir::openOutputFile(svgPath, &error);
    if (!svg)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
    writeScheduleSVG(*schedule, *timeline, 1.0 / double(v), 2.0 / double(v),
                     c.model.name + " " + model.name + ": pipeline schedule",
                     svg->os());
    svg->keep();
  }
  return llvm::Error::success();
}
