//===- Predict.cpp - a job's predicted training step ----------------------===//
//
// The hardware a prediction is for, each program's steps costed and
// combined into the job's step, and the cost stage's reports.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/Predict.h"

#include "titan/Driver/Driver.h"
#include "titan/Driver/PipelineJob.h"
#include "titan/Driver/Programs.h"
#include "titan/InitTitan.h"

#include "titan/Contract/MeshAxes.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/Support/Format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>

using namespace titan;
using namespace titan::driver;
using cost::PartCost;
using cost::StepCost;

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

constexpr cost::WorkUnit kUnits[] = {
    cost::WorkUnit::Gemm, cost::WorkUnit::AttentionForward,
    cost::WorkUnit::AttentionBackward, cost::WorkUnit::Memory};

/// Costs the step function `name` of `module`.
llvm::Expected<StepCost> costFunction(mlir::ModuleOp module,
                                      llvm::StringRef name,
                                      llvm::ArrayRef<int64_t> degrees,
                                      const cost::Hardware &hw) {
  auto func = module.lookupSymbol<mlir::func::FuncOp>(name);
  if (!func)
    return error("internal error: the planned program has no step function @" +
                 name);
  return cost::costStep(func, degrees, hw);
}

double sum(const std::map<std::string, double> &m) {
  double total = 0;
  for (const auto &[axes, seconds] : m)
    total += seconds;
  return total;
}

/// Adds `k` x each group's seconds of `from` to `into`.
void addScaled(std::map<std::string, double> &into,
               const std::map<std::string, double> &from, double k) {
  for (const auto &[axes, seconds] : from)
    into[axes] += k * seconds;
}

/// Adds each entry of `from` to the entry of `into` it is the same as
/// (`add(into's, from's)`), or appends it: new entries at the end, so the
/// order is the program's.
template <typename T, typename Same, typename Add>
void mergeEntries(std::vector<T> &into, const std::vector<T> &from, Same same,
                  Add add) {
  for (const T &entry : from) {
    auto it = llvm::find_if(into, [&](const T &e) { return same(e, entry); });
    if (it == into.end())
      into.push_back(entry);
    else
      add(*it, entry);
  }
}

/// Adds `from`'s parts to `into` by name.
void mergeParts(std::vector<PartCost> &into,
                const std::vector<PartCost> &from) {
  mergeEntries(
      into, from,
      [](const PartCost &a, const PartCost &b) { return a.name == b.name; },
      [](PartCost &to, const PartCost &p) {
        to.computeSeconds += p.computeSeconds;
        to.commSeconds += p.commSeconds;
        to.exposedCommSeconds += p.exposedCommSeconds;
        to.flops += p.flops;
        to.calls += p.calls;
      });
}

void mergeUnits(std::map<cost::WorkUnit, StepCost::UnitTotals> &into,
                const StepCost &from) {
  for (const auto &[unit, t] : from.units) {
    StepCost::UnitTotals &u = into[unit];
    u.calls += t.calls;
    u.flops += t.flops;
    u.bytes += t.bytes;
    u.seconds += t.seconds;
  }
}

/// `kernels` by time, longest first (program order among equals).
std::vector<cost::KernelCost>
byTime(const std::vector<cost::KernelCost> &kernels) {
  std::vector<cost::KernelCost> sorted = kernels;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const cost::KernelCost &a, const cost::KernelCost &b) {
                     return a.seconds > b.seconds;
                   });
  return sorted;
}

/// Adds `from`'s kernels to `into` by name and roofline class.
void mergeKernels(std::vector<cost::KernelCost> &into, const StepCost &from) {
  mergeEntries(
      into, from.kernels,
      [](const cost::KernelCost &a, const cost::KernelCost &b) {
        return a.name == b.name && a.unit == b.unit;
      },
      [](cost::KernelCost &to, const cost::KernelCost &k) {
        to.calls += k.calls;
        to.flops += k.flops;
        to.bytes += k.bytes;
        to.seconds += k.seconds;
      });
}

/// The optimizer step as one part.
PartCost optimizerPart(const StepCost &opt) {
  PartCost part;
  part.name = "optimizer";
  part.computeSeconds = opt.computeSeconds;
  part.commSeconds = sum(opt.commSeconds);
  part.exposedCommSeconds = sum(opt.exposedCommSeconds);
  part.flops = opt.flops;
  for (const PartCost &p : opt.parts)
    part.calls += p.calls;
  return part;
}

/// Every group that communicates gets an exposed entry, 0 when fully
/// overlapped.
void addGroups(std::map<std::string, double> &exposed, const StepCost &c) {
  for (const auto &[axes, seconds] : c.commSeconds)
    exposed.try_emplace(axes, 0.0);
}

/// Under pipeline parallelism: each rank's stages costed per action, the
/// schedule simulated with them and the transfers between ranks.
llvm::Error predictPipelined(const PlannedPrograms &programs,
                             llvm::ArrayRef<int64_t> degrees,
                             const cost::Hardware &hw, JobPrediction &p) {
  const PipelineJob &job = *programs.pipeline;
  const PipelineSchedule &schedule = job.schedule;
  bool split = splitsBackward(schedule);
  ScheduleCosts costs;
  costs.perStage.assign(size_t(schedule.stages), {0, 0, 0, 0});
  double accumulation = double(p.accumulationSteps);
  // Per rank: the once-per-step unshard and gradient reduction, the
  // optimizer, and the exposed communication of all its actions.
  std::vector<double> once(size_t(schedule.ranks), 0),
      optimizer(size_t(schedule.ranks), 0);
  std::map<std::string, double> rank0Exposed;
  int64_t boundaryBytes = 0;
  for (int64_t r = 0; r < schedule.ranks; ++r) {
    mlir::ModuleOp module = *programs.modules[size_t(r)];
    for (int64_t s : schedule.stagesOfRank[size_t(r)]) {
      std::vector<std::string> names = stagePhaseFunctions(s, split);
      std::vector<StepCost> phases;
      for (const std::string &name : names) {
        llvm::Expected<StepCost> c = costFunction(module, name, degrees, hw);
        if (!c)
          return c.takeError();
        phases.push_back(std::move(*c));
      }
      // [unshard, F, B, reduce_grad] or [unshard, F, I, W, reduce_grad].
      std::array<double, 4> &stage = costs.perStage[size_t(s)];
      stage[PipelineAction::Forward] = phases[1].seconds;
      if (split) {
        stage[PipelineAction::BackwardInput] = phases[2].seconds;
        stage[PipelineAction::BackwardWeight] = phases[3].seconds;
        stage[PipelineAction::Backward] = phases[2].seconds + phases[3].seconds;
      } else {
        stage[PipelineAction::Backward] = phases[2].seconds;
        stage[PipelineAction::BackwardInput] = phases[2].seconds / 2;
        stage[PipelineAction::BackwardWeight] = phases[2].seconds / 2;
      }
      once[size_t(r)] += phases.front().seconds + phases.back().seconds;
      boundaryBytes = std::max(boundaryBytes, stageOutputBytes(module, s));
      if (r != 0)
        continue;
      for (size_t i = 0; i < phases.size(); ++i) {
        bool perMicrobatch = i != 0 && i + 1 != phases.size();
        addScaled(rank0Exposed, phases[i].exposedCommSeconds,
                  accumulation *
                      (perMicrobatch ? double(job.microbatches) : 1.0));
        addGroups(p.exposedCommSeconds, phases[i]);
        mergeParts(p.parts, phases[i].parts);
        if (perMicrobatch) {
          mergeUnits(p.units, phases[i]);
          mergeKernels(p.kernels, phases[i]);
          p.microbatchComputeSeconds += phases[i].computeSeconds;
        }
      }
    }
    llvm::Expected<StepCost> opt =
        costFunction(module, "optimizer_step", degrees, hw);
    if (!opt)
      return opt.takeError();
    optimizer[size_t(r)] = opt->seconds;
    if (r == 0) {
      addScaled(rank0Exposed, opt->exposedCommSeconds, 1.0);
      addGroups(p.exposedCommSeconds, *opt);
      p.parts.push_back(optimizerPart(*opt));
    }
  }
  // One microbatch's activation (or its gradient) between adjacent stages
  // over the pp group.
  cost::GroupPlacement pp =
      cost::placeGroup(degrees, /*pp=*/1u, hw.devicesPerNode);
  costs.transferSeconds =
      cost::collectiveSeconds(cost::CollectiveKind::SendRecv,
                              double(boundaryBytes), pp, hw)
          .seconds;
  llvm::Expected<ScheduleTimeline> timeline = simulateSchedule(schedule, costs);
  if (!timeline)
    return timeline.takeError();
  ScheduleCosts free = costs;
  free.transferSeconds = 0;
  llvm::Expected<ScheduleTimeline> untransferred =
      simulateSchedule(schedule, free);
  if (!untransferred)
    return untransferred.takeError();

  p.bubble = timeline->bubble;
  // Ranks that share a node's cores (a CPU host) hand a stage's idle time
  // in the schedule to the other stages' ranks: the node computes while
  // any rank has work, so the schedule takes the ranks' mean busy time
  // (each action costed at a rank's share), not its makespan. Measured on
  // PP 2 x FSDP 2 CPU ranks: bench/results/cost-model-cpu.md. A rank alone
  // on its node (devicesPerNode 1) has no one to hand it to.
  double makespan = timeline->makespan;
  if (hw.ranksShareCompute &&
      std::min(p.mesh.worldSize(), hw.devicesPerNode) > 1)
    makespan *= 1 - timeline->bubble;
  for (int64_t r = 0; r < schedule.ranks; ++r)
    p.stepSeconds =
        std::max(p.stepSeconds, accumulation * (makespan + once[size_t(r)]) +
                                    optimizer[size_t(r)]);
  for (const auto &[axes, seconds] : rank0Exposed)
    p.exposedCommSeconds[axes] += seconds;
  // The transfers' share of the step: how much longer the schedule runs
  // with them.
  p.exposedCommSeconds[mesh::axisName(mesh::kPP)] +=
      accumulation * (timeline->makespan - untransferred->makespan);
  for (int64_t r = 0; r < schedule.ranks; ++r) {
    mlir::ModuleOp module = *programs.modules[size_t(r)];
    p.peakBytes.push_back(kernel::getArenaBytes(module) +
                          pipelineFramesBytes(job, r, module) +
                          pipelineSendBytes(job, r, module));
  }
  return llvm::Error::success();
}

/// The target whose program `hw` runs: `requested` when it agrees with
/// the description (its buffers in host memory exactly where ranks share a
/// node's compute), else the first registered target that does.
llvm::Expected<const target::TargetBackend &>
targetRunning(const cost::Hardware &hw,
              const target::TargetBackend *requested) {
  auto agrees = [&](const target::TargetBackend &backend) {
    return backend.getFeatures().hostMemory == hw.ranksShareCompute;
  };
  if (requested && agrees(*requested))
    return *requested;
  registerAllTargetBackends();
  for (const std::string &name : target::getTargetBackendNames())
    if (const target::TargetBackend *backend =
            target::lookupTargetBackend(name);
        agrees(*backend))
      return *backend;
  return error("no registered target (" + target::getTargetBackendNameList() +
               ") runs the hardware description '" + hw.name + "'");
}

std::string ms(double seconds) {
  return llvm::formatv("{0:f3}", seconds * 1e3).str();
}

std::string gib(double bytes) {
  return llvm::formatv("{0:f2} GiB", bytes / (1024.0 * 1024 * 1024)).str();
}

/// A kernel's name with at most four module paths ("... + 5 more").
std::string abbreviated(llvm::StringRef name) {
  constexpr size_t kPaths = 4;
  llvm::SmallVector<llvm::StringRef> parts;
  name.split(parts, " + ");
  if (parts.size() <= kPaths)
    return name.str();
  llvm::StringRef last = parts.back();
  size_t mark = last.find(" [");
  std::string tail =
      mark == llvm::StringRef::npos ? "" : last.substr(mark).str();
  return llvm::join(llvm::ArrayRef(parts).take_front(kPaths), " + ") +
         llvm::formatv(" + {0} more", parts.size() - kPaths).str() + tail;
}

/// The longest memory-bound kernels of one microbatch's forward and
/// backward: where the memory-bound time goes.
void printMemoryBoundKernels(const JobPrediction &p, llvm::raw_ostream &os) {
  constexpr size_t kShown = 10;
  std::vector<cost::KernelCost> memory;
  for (const cost::KernelCost &k : byTime(p.kernels))
    if (k.unit == cost::WorkUnit::Memory)
      memory.push_back(k);
  if (memory.empty())
    return;
  os << llvm::formatv("memory-bound kernels (one microbatch's forward and "
                      "backward, each block's calls added up; the {0} "
                      "longest of {1}):\n",
                      std::min(kShown, memory.size()), memory.size());
  os << llvm::formatv("  {0,12}{1,10}{2,8}  {3}\n", "time ms", "GB", "calls",
                      "kernel");
  for (const cost::KernelCost &k : llvm::ArrayRef(memory).take_front(kShown))
    os << llvm::formatv("  {0,12}{1,10:f2}{2,8}  {3}\n", ms(k.seconds),
                        k.bytes / 1e9, k.calls, abbreviated(k.name));
}

} // namespace

llvm::Expected<std::pair<cost::Hardware, const target::TargetBackend *>>
driver::resolveHardware(const HardwareRequest &request) {
  const target::TargetBackend *requested = nullptr;
  if (request.target) {
    llvm::Expected<const target::TargetBackend &> found =
        lookupTarget(*request.target);
    if (!found)
      return found.takeError();
    requested = &*found;
  }
  cost::Hardware hw;
  if (!request.file.empty()) {
    llvm::Expected<cost::Hardware> loaded =
        cost::loadHardwareFile(request.file);
    if (!loaded)
      return loaded.takeError();
    hw = std::move(*loaded);
  } else {
    std::string name = request.gpu ? *request.gpu
                       : requested && requested->getFeatures().hostMemory
                           ? "cpu"
                           : "h100";
    const cost::Hardware *found = cost::lookupHardware(name);
    if (!found)
      return error("--gpu " + name + ": unknown hardware; the known ones are " +
                   llvm::join(llvm::map_range(cost::builtinHardware(),
                                              [](const cost::Hardware &h) {
                                                return h.name;
                                              }),
                              ", ") +
                   " (--hardware FILE.toml describes any other)");
    hw = *found;
  }
  llvm::Expected<const target::TargetBackend &> described =
      targetRunning(hw, requested);
  if (!described)
    return described.takeError();
  if (requested && requested != &*described)
    return error(
        llvm::formatv(
            "--target={0} contradicts the hardware description '{1}', which "
            "runs the {2} program (leave --target out, or pick a {3} "
            "description)",
            requested->getName(), hw.name, described->getName(),
            requested->getFeatures().hostMemory ? "CPU (--gpu cpu)" : "GPU")
            .str());
  return std::make_pair(std::move(hw), &*described);
}

llvm::Expected<JobPrediction>
driver::predictStep(const LlamaArgs &model, const TrainConfig &config,
                    int64_t worldSize, const HardwareRequest &request,
                    const WarningHandler &warn) {
  llvm::Expected<std::pair<cost::Hardware, const target::TargetBackend *>> hw =
      resolveHardware(request);
  if (!hw)
    return hw.takeError();
  if (llvm::Error e = checkConfig(config, *hw->second, warn))
    return std::move(e);
  llvm::Expected<MeshDegrees> mesh = resolveMesh(config, worldSize);
  if (!mesh)
    return mesh.takeError();
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  return predictJob(context, model, config, *mesh, *hw->second, hw->first);
}

llvm::Expected<JobPrediction>
driver::predictJob(mlir::MLIRContext &context, const LlamaArgs &model,
                   const TrainConfig &config, const MeshDegrees &mesh,
                   const target::TargetBackend &target,
                   const cost::Hardware &hw) {
  llvm::Expected<PlannedPrograms> programs =
      compilePlannedPrograms(context, model, config, mesh, target);
  if (!programs)
    return programs.takeError();
  std::array<int64_t, 5> degrees = {mesh.pp, mesh.dpReplicate, mesh.dpShard,
                                    mesh.cp, mesh.tp};
  JobPrediction p;
  p.hardware = hw.name;
  p.mesh = mesh;
  p.gpus = mesh.worldSize();
  p.model = config.model.name + " / " + model.name;
  p.accumulationSteps = accumulationSteps(config, mesh);
  p.memoryBytesPerDevice = hw.memoryBytes;

  if (programs->pipeline) {
    p.schedule = programs->pipeline->schedule.name;
    p.pipelineMicrobatches = programs->pipeline->microbatches;
    if (llvm::Error e = predictPipelined(*programs, degrees, hw, p))
      return std::move(e);
  } else {
    mlir::ModuleOp module = *programs->modules.front();
    llvm::Expected<StepCost> fb =
        costFunction(module, "forward_backward", degrees, hw);
    if (!fb)
      return fb.takeError();
    llvm::Expected<StepCost> opt =
        costFunction(module, "optimizer_step", degrees, hw);
    if (!opt)
      return opt.takeError();
    double accumulation = double(p.accumulationSteps);
    p.stepSeconds = accumulation * fb->seconds + opt->seconds;
    addGroups(p.exposedCommSeconds, *fb);
    addGroups(p.exposedCommSeconds, *opt);
    addScaled(p.exposedCommSeconds, fb->exposedCommSeconds, accumulation);
    addScaled(p.exposedCommSeconds, opt->exposedCommSeconds, 1.0);
    p.parts = fb->parts;
    p.parts.push_back(optimizerPart(*opt));
    mergeUnits(p.units, *fb);
    mergeKernels(p.kernels, *fb);
    p.microbatchComputeSeconds = fb->computeSeconds;
    p.peakBytes.push_back(kernel::getArenaBytes(module));
    p.hostBytes = kernel::getHostArenaBytes(module);
  }

  // The global batch: every data-parallel rank's local batch, each
  // microbatch of accumulation; tp, cp and pp ranks share theirs.
  p.tokensPerStep =
      double(config.training.localBatchSize) * double(config.training.seqLen) *
      double(mesh.dpReplicate * mesh.dpShard) * double(p.accumulationSteps);
  if (p.stepSeconds > 0)
    p.tokensPerSecondPerDevice =
        p.tokensPerStep / p.stepSeconds / double(p.gpus);
  // TorchTitan's MFU: PaLM's FLOPs per token over one device's peak (bf16
  // for bf16 and Float8 training alike). CPU ranks on a node share its
  // cores, so a rank's peak is its share of the node's.
  p.flopsPerToken = trainingFlopsPerToken(model, config.training.seqLen);
  p.peakFlops = hw.peakFlops(programs->paramType == "bf16");
  if (hw.ranksShareCompute)
    p.peakFlops /= double(std::min<int64_t>(p.gpus, hw.devicesPerNode));
  if (p.peakFlops > 0)
    p.mfu = p.flopsPerToken * p.tokensPerSecondPerDevice / p.peakFlops;
  return p;
}

void driver::printPrediction(const JobPrediction &p, llvm::raw_ostream &os) {
  const MeshDegrees &m = p.mesh;
  os << llvm::formatv("predicted step: {0} on {1}, {2} device{3} (pp {4} x "
                      "dp_replicate {5} x dp_shard {6} x cp {7} x tp {8})",
                      p.model, p.hardware, p.gpus, p.gpus == 1 ? "" : "s", m.pp,
                      m.dpReplicate, m.dpShard, m.cp, m.tp);
  if (!p.schedule.empty())
    os << llvm::formatv(", {0} with {1} microbatches", p.schedule,
                        p.pipelineMicrobatches);
  os << llvm::formatv(", {0} accumulation step{1}\n", p.accumulationSteps,
                      p.accumulationSteps == 1 ? "" : "s");
  // Keys pad to one column; a long group of axes still gets its space.
  auto row = [&](llvm::StringRef key, const llvm::Twine &value) {
    os << "  " << key;
    os.indent(std::max<int>(1, 28 - int(key.size()))) << value << "\n";
  };
  row("step", ms(p.stepSeconds) + " ms");
  row("tokens/s per device",
      formatWithCommas(int64_t(p.tokensPerSecondPerDevice + 0.5)) +
          llvm::formatv(" ({0} tokens per step)",
                        formatWithCommas(int64_t(p.tokensPerStep)))
              .str());
  row("MFU", llvm::formatv("{0:f2} % ({1} FLOP per token at {2} TFLOP/s "
                           "peak)",
                           100 * p.mfu, humanCount(p.flopsPerToken),
                           llvm::formatv("{0:f1}", p.peakFlops / 1e12))
                 .str());
  for (const auto &[axes, seconds] : p.exposedCommSeconds)
    row("exposed comm " + axes,
        llvm::formatv("{0} ms ({1:f1} % of step)", ms(seconds),
                      p.stepSeconds > 0 ? 100 * seconds / p.stepSeconds : 0.0)
            .str());
  row("pipeline bubble", llvm::formatv("{0:f1} %", 100 * p.bubble).str());
  for (auto [r, bytes] : llvm::enumerate(p.peakBytes))
    row(p.peakBytes.size() > 1
            ? llvm::formatv("peak memory pp rank {0}", r).str()
            : std::string("peak memory"),
        llvm::formatv(
            "{0} of {1} ({2})", gib(double(bytes)), gib(p.memoryBytesPerDevice),
            double(bytes) <= p.memoryBytesPerDevice ? "fits" : "does not fit")
            .str());
  if (p.hostBytes > 0)
    row("host memory (cpu offload)",
        llvm::formatv("{0} pinned per rank", gib(double(p.hostBytes))).str());
  os << (p.peakBytes.size() > 1 ? "per part (pipeline rank 0: one "
                                  "microbatch's forward and backward, the "
                                  "once-per-step unshard and gradient "
                                  "reduction, and the optimizer):\n"
                                : "per part (one microbatch's forward and "
                                  "backward, and the optimizer):\n");
  os << llvm::formatv("  {0,-18}{1,12}{2,12}{3,12}{4,12}{5,8}\n", "part",
                      "compute ms", "comm ms", "exposed ms", "GFLOP", "calls");
  for (const PartCost &part : p.parts)
    os << llvm::formatv("  {0,-18}{1,12}{2,12}{3,12}{4,12:f3}{5,8}\n",
                        part.name, ms(part.computeSeconds),
                        ms(part.commSeconds), ms(part.exposedCommSeconds),
                        part.flops / 1e9, part.calls);
  printMemoryBoundKernels(p, os);
}

void driver::printPredictionJSON(const JobPrediction &p,
                                 llvm::raw_ostream &os) {
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attribute("hardware", p.hardware);
    j.attribute("model", p.model);
    j.attribute("gpus", p.gpus);
    j.attributeObject("mesh", [&] {
      for (const mesh::AxisInfo &axis : mesh::kAxes)
        j.attribute(axis.name, p.mesh.degree(axis.axis));
    });
    j.attribute("schedule", p.schedule);
    j.attribute("accumulation_steps", p.accumulationSteps);
    j.attribute("pipeline_microbatches", p.pipelineMicrobatches);
    j.attribute("step_seconds", p.stepSeconds);
    j.attribute("tokens_per_step", p.tokensPerStep);
    j.attribute("tokens_per_second_per_device", p.tokensPerSecondPerDevice);
    j.attribute("flops_per_token", p.flopsPerToken);
    j.attribute("peak_flops", p.peakFlops);
    j.attribute("mfu", p.mfu);
    j.attributeObject("exposed_comm_seconds", [&] {
      for (const auto &[axes, seconds] : p.exposedCommSeconds)
        j.attribute(axes, seconds);
    });
    j.attribute("bubble", p.bubble);
    j.attributeArray("peak_bytes", [&] {
      for (int64_t bytes : p.peakBytes)
        j.value(bytes);
    });
    j.attribute("memory_bytes_per_device", p.memoryBytesPerDevice);
    j.attribute("microbatch_compute_seconds", p.microbatchComputeSeconds);
    j.attributeObject("units", [&] {
      for (cost::WorkUnit unit : kUnits) {
        StepCost::UnitTotals t;
        if (auto it = p.units.find(unit); it != p.units.end())
          t = it->second;
        j.attributeObject(cost::stringifyWorkUnit(unit), [&] {
          j.attribute("calls", t.calls);
          j.attribute("flops", t.flops);
          j.attribute("bytes", t.bytes);
          j.attribute("seconds", t.seconds);
        });
      }
    });
    j.attributeArray("kernels", [&] {
      for (const cost::KernelCost &k : byTime(p.kernels))
        j.object([&] {
          j.attribute("name", k.name);
          j.attribute("unit", cost::stringifyWorkUnit(k.unit));
          j.attribute("calls", k.calls);
          j.attribute("flops", k.flops);
          j.attribute("bytes", k.bytes);
          j.attribute("seconds", k.seconds);
        });
    });
    j.attributeArray("parts", [&] {
      for (const PartCost &part : p.parts)
        j.object([&] {
          j.attribute("name", part.name);
          j.attribute("compute_seconds", part.computeSeconds);
          j.attribute("comm_seconds", part.commSeconds);
          j.attribute("exposed_comm_seconds", part.exposedCommSeconds);
          j.attribute("flops", part.flops);
          j.attribute("calls", part.calls);
        });
    });
  });
  os << "\n";
}
