//===- PlanAuto.cpp - the parallel layout search with the predictor -------===//
//
// The extrapolating predictor, the reference layouts, the options' checks
// and the report of --plan auto.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/PlanAuto.h"

#include "titan/Driver/ConfigChecks.h"
#include "titan/Driver/Predict.h"

#include "titan/InitTitan.h"
#include "titan/Model/PipelineStages.h"
#include "titan/Planner/Plan.h"
#include "titan/Support/Format.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>

using namespace titan;
using namespace titan::driver;
using namespace titan::plan;

static constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

namespace {
/// How a candidate's depth is reduced: the transformer blocks per
/// (virtual) stage of the real model (`k`), and the two reduced depths
/// compiled (`k1` < `k2`, with layers1 and layers2 blocks in all), or
/// `exact` when the model is compiled as it is.
struct Depth {
  bool exact = true;
  double k = 0;
  int64_t k1 = 0, k2 = 0, layers1 = 0, layers2 = 0;
};

/// The reduced depths of `c`: without pp, 3 and 4 blocks (the first and
/// the last block differ from the middle ones in what they prefetch and
/// wait for, so the difference of the two is a middle block); under pp,
/// every stage with the same number of blocks as the real plan's (less the
/// embedding's and the head's weights), 2 and 3 more than the larger of
/// those weights. A plan whose stages are uneven is compiled whole.
Depth reducedDepth(const LlamaArgs &model, const TrainConfig &config,
                   const Candidate &c) {
  Depth d;
  int64_t layers = model.nLayers;
  if (c.mesh.pp == 1) {
    if (layers <= 4)
      return d;
    d = {false, double(layers), 3, 4, 3, 4};
    return d;
  }
  const auto &p = config.parallelism;
  if (p.pipelineParallelLayersPerStage)
    return d;
  llvm::Expected<ScheduleStyle> style = scheduleStyle(c.schedule);
  if (!style) {
    llvm::consumeError(style.takeError());
    return d;
  }
  int64_t stages = c.mesh.pp * (*style == ScheduleStyle::SingleStage ? 1 : 2);
  int64_t first = p.pipelineParallelFirstStageLessLayers,
          last = p.pipelineParallelLastStageLessLayers;
  int64_t effective = layers + first + last;
  if (effective % stages != 0)
    return d;
  int64_t k = effective / stages;
  int64_t k1 = std::max(first, last) + 2, k2 = k1 + 1;
  if (k <= k2)
    return d;
  d = {false,
       double(k),
       k1,
       k2,
       stages * k1 - first - last,
       stages * k2 - first - last};
  return d;
}

/// a + t (b - a).
double lerp(double a, double b, double t) { return a + t * (b - a); }

/// The predictor: predictJob at the reduced depths, extrapolated; cached
/// by candidate.
struct ExtrapolatingPredictor {
  mlir::MLIRContext &context;
  const LlamaArgs &model;
  const target::TargetBackend &target;
  const cost::Hardware &hw;
  int64_t compiles = 0;
  /// The work of the compiles since the last call: blocks plus 4 per
  /// program (the fixed part of a compile: embedding, head, optimizer,
  /// each pipeline rank's phases), about 10 ms each on this machine.
  double work = 0;

  llvm::Expected<JobPrediction> at(const TrainConfig &config,
                                   const Candidate &c, int64_t layers) {
    LlamaArgs reduced = model;
    reduced.nLayers = layers;
    ++compiles;
    work += double(layers + 4 * c.mesh.pp);
    return predictJob(context, reduced, config, c.mesh, target, hw);
  }

  /// `config` predicted at full depth, directly or extrapolated.
  llvm::Expected<JobPrediction> predict(const TrainConfig &config,
                                        const Candidate &c) {
    Depth d = reducedDepth(model, config, c);
    if (d.exact)
      return at(config, c, model.nLayers);
    llvm::Expected<JobPrediction> a = at(config, c, d.layers1);
    if (!a)
      return a.takeError();
    llvm::Expected<JobPrediction> b = at(config, c, d.layers2);
    if (!b)
      return b.takeError();
    double t = (d.k - double(d.k1)) / double(d.k2 - d.k1);
    JobPrediction p = *b;
    p.stepSeconds = lerp(a->stepSeconds, b->stepSeconds, t);
    // The idle rank-time of the schedule is linear in the stage costs
    // when they are: bubble x step extrapolates.
    double idleA = a->bubble * a->stepSeconds,
           idleB = b->bubble * b->stepSeconds;
    p.bubble = p.stepSeconds > 0 ? lerp(idleA, idleB, t) / p.stepSeconds : 0;
    for (auto &[axes, s] : p.exposedCommSeconds) {
      double sa = a->exposedCommSeconds.count(axes)
                      ? a->exposedCommSeconds.at(axes)
                      : 0;
      s = lerp(sa, s, t);
    }
    for (size_t i = 0; i < p.peakBytes.size() && i < a->peakBytes.size(); ++i)
      p.peakBytes[i] = int64_t(std::llround(
          lerp(double(a->peakBytes[i]), double(b->peakBytes[i]), t)));
    p.flopsPerToken = trainingFlopsPerToken(model, config.training.seqLen);
    if (p.stepSeconds > 0)
      p.tokensPerSecondPerDevice = p.tokensPerStep / p.stepSeconds / p.gpus;
    if (p.peakFlops > 0)
      p.mfu = p.flopsPerToken * p.tokensPerSecondPerDevice / p.peakFlops;
    return p;
  }

  llvm::Expected<Score> operator()(const TrainConfig &config,
                                   const Candidate &c) {
    work = 0;
    llvm::Expected<JobPrediction> p = predict(config, c);
    if (!p)
      return p.takeError();
    Score s = toScore(*p);
    s.work = work;
    return s;
  }

  static Score toScore(const JobPrediction &p) {
    Score s;
    s.stepSeconds = p.stepSeconds;
    s.tokensPerSecondPerDevice = p.tokensPerSecondPerDevice;
    s.mfu = p.mfu;
    s.exposedCommSeconds = p.exposedCommSeconds;
    s.bubble = p.bubble;
    for (int64_t b : p.peakBytes)
      s.peakBytes = std::max(s.peakBytes, b);
    return s;
  }
};

/// A reference layout to compare with: the decision tree's or a published
/// one.
struct Reference {
  std::string name;
  Candidate candidate;
  /// Local batches to try, largest first (the first whose plan fits).
  std::vector<int64_t> locals;
};

double billions(const LlamaArgs &model) {
  return double(llamaParameterCount(model)) / 1e9;
}

/// The local batches that divide the global batch over dp, largest first.
std::vector<int64_t> localsFor(int64_t global, int64_t dp) {
  std::vector<int64_t> out;
  if (dp <= 0 || global % dp != 0)
    return out;
  for (int64_t l = global / dp; l >= 1; --l)
    if ((global / dp) % l == 0)
      out.push_back(l);
  return out;
}

/// The seed's decision tree (<= 10B: FSDP + compile + Float8; 10-100B:
/// FSDP + TP + async TP + selective AC; > 100B: 3D with Interleaved 1F1B)
/// and TorchTitan's published layout of this model on this many GPUs
/// (benchmarks/llama3_h100_202412_torchtitan.md, v0.2.0).
std::vector<Reference> references(const LlamaArgs &model,
                                  const TrainConfig &config,
                                  const Request &request) {
  std::vector<Reference> refs;
  int64_t n = request.gpus, global = config.training.globalBatchSize;
  bool fp8 = request.hardware.peakFlopsFP8 > 0;
  double size = billions(model);
  int64_t tp = std::min<int64_t>({8, n, request.hardware.devicesPerNode});
  Reference tree;
  Candidate &t = tree.candidate;
  if (size <= 10) {
    tree.name = fp8 ? "decision tree (<= 10B): FSDP + Float8"
                    : "decision tree (<= 10B): FSDP (+ Float8: not on this "
                      "device)";
    t.mesh.dpShard = n;
    t.float8 = fp8;
    t.ac = "op";
  } else if (size <= 100 || n < tp * 2) {
    // Above 100B with too few devices for a pipeline: the 2D branch.
    tree.name = size <= 100 ? "decision tree (10-100B): FSDP + TP + async TP "
                              "+ selective AC"
                            : "decision tree (> 100B, too few devices for "
                              "3D): FSDP + TP + async TP + selective AC";
    t.mesh.tp = tp;
    t.mesh.dpShard = n / tp;
    t.asyncTP = tp > 1;
    t.ac = "op";
  } else {
    tree.name = "decision tree (> 100B): 3D, Interleaved1F1B";
    t.mesh.tp = tp;
    t.mesh.pp = std::min<int64_t>(8, n / tp);
    t.mesh.dpShard = n / (tp * t.mesh.pp);
    t.asyncTP = tp > 1;
    t.schedule = "Interleaved1F1B";
    t.ac = "full";
  }
  tree.locals = localsFor(global, t.mesh.dpShard);
  if (t.mesh.worldSize() == n)
    refs.push_back(tree);

  // TorchTitan's published runs (H100, benchmarks/
  // llama3_h100_202412_torchtitan.md; the local batch, AC and converters
  // of each row).
  Reference pub;
  Candidate &q = pub.candidate;
  if (model.name == "8B") {
    pub.name = "TorchTitan published (8B): FSDP, local bs 2, selective op "
               "AC, Float8";
    q.mesh.dpShard = n;
    q.localBatch = 2;
    q.ac = "op";
    q.float8 = fp8;
  } else if (model.name == "70B" && n == 256) {
    pub.name = "TorchTitan published (70B, 256 GPUs): FSDP 32 x TP 8, "
               "local bs 16, full AC, Float8, async TP";
    q.mesh.dpShard = 32;
    q.mesh.tp = 8;
    q.localBatch = 16;
    q.ac = "full";
    q.float8 = fp8;
    q.asyncTP = true;
  } else if (model.name == "405B" && n == 512) {
    pub.name = "TorchTitan published (405B, 512 GPUs): FSDP 8 x TP 8 x PP 8, "
               "Interleaved1F1B, local bs 32, full AC, Float8, async TP";
    q.mesh.dpShard = 8;
    q.mesh.tp = 8;
    q.mesh.pp = 8;
    q.schedule = "Interleaved1F1B";
    q.localBatch = 32;
    q.ac = "full";
    q.float8 = fp8;
    q.asyncTP = true;
  } else {
    return refs;
  }
  pub.locals = {q.localBatch};
  refs.push_back(pub);
  return refs;
}

void printReference(const Reference &ref, const Request &request,
                    const TrainConfig &config, const Ranked *best,
                    ExtrapolatingPredictor &predictor, llvm::raw_ostream &os) {
  os << ref.name << ":\n";
  int64_t global = config.training.globalBatchSize;
  int64_t dp = ref.candidate.mesh.dpReplicate * ref.candidate.mesh.dpShard;
  int64_t smallest = -1;
  std::string lastError;
  for (int64_t local : ref.locals) {
    Candidate c = ref.candidate;
    c.localBatch = local;
    if (dp * local <= 0 || global % (dp * local) != 0) {
      lastError = llvm::formatv("training.global_batch_size {0} is not a "
                                "multiple of its local batch {1} x dp {2}",
                                global, local, dp);
      continue;
    }
    c.accumulation = global / (dp * local);
    if (memoryLowerBound(predictor.model, config, c, request.bf16) >
        request.memoryBytes)
      continue;
    llvm::Expected<Score> s = predictor(applyCandidate(config, c), c);
    if (!s) {
      lastError = llvm::toString(s.takeError());
      lastError = llvm::StringRef(lastError).split('\n').first.str();
      continue;
    }
    if (smallest < 0 || s->peakBytes < smallest)
      smallest = s->peakBytes;
    if (s->peakBytes > request.memoryBytes)
      continue;
    os << llvm::formatv("  {0} {1} lbs {2} AC {3}: {4:F1} tok/s/gpu, MFU "
                        "{5:F1}%, peak {6:F1} GiB",
                        c.degrees(), c.schedule.empty() ? "-" : c.schedule,
                        local, c.ac, s->tokensPerSecondPerDevice, s->mfu * 100,
                        double(s->peakBytes) / kGiB);
    if (best && s->tokensPerSecondPerDevice > 0) {
      double gain =
          (best->score.tokensPerSecondPerDevice / s->tokensPerSecondPerDevice -
           1) *
          100;
      os << llvm::formatv("; the planner's pick: {0}{1:F1}%",
                          gain >= 0 ? "+" : "", gain);
    }
    os << "\n";
    return;
  }
  if (smallest >= 0)
    os << llvm::formatv("  not feasible: needs {0:F1} GiB, {1:F1} GiB per "
                        "GPU available\n",
                        double(smallest) / kGiB,
                        double(request.memoryBytes) / kGiB);
  else if (!lastError.empty())
    os << "  not feasible: " << lastError << "\n";
  else
    os << "  not feasible: its state alone exceeds the memory per GPU\n";
}

/// The enumeration walks the divisors of the device count and the global
/// batch: bound them so a typo errors instead of spinning.
constexpr int64_t kMaxPlanDevices = int64_t(1) << 20;

/// The options' and the batch's bounds, each error naming its option.
llvm::Error checkPlanOptions(const TrainConfig &config,
                             const PlanOptions &opts) {
  if (opts.memoryGiB && !(*opts.memoryGiB > 0))
    return error("--memory-per-gpu must be positive (GiB)");
  if (opts.gpus > kMaxPlanDevices)
    return error(llvm::formatv("--gpus {0}: at most {1} devices", opts.gpus,
                               kMaxPlanDevices));
  if (config.training.globalBatchSize > kMaxPlanDevices * 1024)
    return error(llvm::formatv("--plan auto: training.global_batch_size {0} "
                               "is over the planner's limit {1}",
                               config.training.globalBatchSize,
                               kMaxPlanDevices * 1024));
  if (opts.top < 1)
    return error("--plan-top must be at least 1");
  if (opts.maxWork < 0)
    return error("--plan-budget must be 0 (no limit) or positive");
  return llvm::Error::success();
}

/// The search on `hw` for `target` and its report; the best plan's config.
llvm::Expected<std::optional<TrainConfig>>
runPlanAuto(const LlamaArgs &model, const TrainConfig &config,
            const cost::Hardware &hw, const target::TargetBackend &target,
            const PlanOptions &opts, llvm::raw_ostream &os) {
  if (opts.gpus < 1)
    return error("--plan auto needs --gpus N (the devices to plan for, >= 1)");
  if (config.training.globalBatchSize <= 0)
    return error(llvm::formatv(
        "--plan auto needs training.global_batch_size > 0 (it is {0}): "
        "TorchTitan's -1 means local batch x dp, which depends on the plan",
        config.training.globalBatchSize));
  Request request;
  request.gpus = opts.gpus;
  request.hardware = hw;
  request.top = opts.top;
  // A model the target cannot run is refused before the search.
  if (llvm::Error e = checkModelOnTarget(model, target))
    return std::move(e);
  request.bf16 = paramDtype(config, target) == "bfloat16";
  request.float8 = target.getFeatures().float8Gemms;
  request.asyncTP = target.getFeatures().asyncTensorParallel;
  if (opts.memoryGiB)
    request.memoryBytes = int64_t(*opts.memoryGiB * kGiB);
  else
    request.memoryBytes =
        int64_t(hw.memoryBytes) - (hw.ranksShareCompute ? 0 : kGpuReserveBytes);
  if (request.memoryBytes <= 0)
    return error(llvm::formatv("--plan auto: no memory per GPU ({0} bytes); "
                               "give --memory-per-gpu GiB",
                               request.memoryBytes));
  request.maxSeconds = opts.maxSeconds;
  request.maxWork = opts.maxWork;
  request.extraCheck = [&target](const TrainConfig &c) {
    return diagnoseUnsupported(c, target);
  };

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  ExtrapolatingPredictor predictor{context, model, target, hw};
  PlanResult result = search(model, config, request,
                             [&](const TrainConfig &c, const Candidate &cand) {
                               return predictor(c, cand);
                             });

  if (opts.json) {
    printJSON(result, request, os);
    return std::optional<TrainConfig>();
  }
  if (result.fitted.empty()) {
    std::string need;
    if (result.counts.smallestPeak >= 0)
      need = llvm::formatv("the smallest planned peak is {0} bytes ({1:F2} "
                           "GiB)",
                           formatWithCommas(result.counts.smallestPeak),
                           double(result.counts.smallestPeak) / kGiB);
    else if (result.counts.smallestBound >= 0)
      need = llvm::formatv("the smallest need is {0} bytes ({1:F2} GiB: "
                           "a lower bound, parameters, gradients and AdamW "
                           "state and the activations it must keep)",
                           formatWithCommas(result.counts.smallestBound),
                           double(result.counts.smallestBound) / kGiB);
    else
      need = "every layout is rejected by titan's checks";
    std::string counts;
    llvm::raw_string_ostream cs(counts);
    printCounts(result, cs);
    return error(llvm::formatv("--plan auto: no layout of {0} on {1} x {2} "
                               "fits {3} bytes per GPU: {4}\n{5}",
                               model.name, opts.gpus, hw.name,
                               formatWithCommas(request.memoryBytes), need,
                               llvm::StringRef(counts).rtrim()));
  }
  os << llvm::formatv("plan auto: {0} ({1:F2}B parameters) on {2} x {3}, "
                      "{4:F2} GiB per GPU, global batch {5} x seq {6}\n",
                      model.name, billions(model), opts.gpus, hw.name,
                      double(request.memoryBytes) / kGiB,
                      config.training.globalBatchSize, config.training.seqLen);
  printTable(result, request, os);
  printCounts(result, os);
  os << llvm::formatv("  {0} jobs compiled and costed (reduced depth: two "
                      "per candidate of a deep model)\n",
                      predictor.compiles);
  const Ranked &best = result.fitted.front();
  for (const Reference &ref : references(model, config, request))
    printReference(ref, request, config, &best, predictor, os);
  os << "best plan: titan-compile --job.config_file ... "
     << overrides(best.candidate, config.training.globalBatchSize) << "\n";
  TrainConfig chosen = applyCandidate(config, best.candidate);
  if (opts.checkExtrapolation) {
    llvm::Expected<JobPrediction> full =
        predictor.at(chosen, best.candidate, model.nLayers);
    if (!full)
      return full.takeError();
    Score f = ExtrapolatingPredictor::toScore(*full);
    double rel = std::abs(best.score.stepSeconds - f.stepSeconds) /
                 std::max(f.stepSeconds, 1e-30);
    os << llvm::formatv("extrapolation check: step {0:E6} s extrapolated, "
                        "{1:E6} s compiled (relative error {2:E1}); peak "
                        "{3} bytes extrapolated, {4} compiled (difference "
                        "{5})\n",
                        best.score.stepSeconds, f.stepSeconds, rel,
                        best.score.peakBytes, f.peakBytes,
                        best.score.peakBytes - f.peakBytes);
  }
  return std::optional<TrainConfig>(std::move(chosen));
}
} // namespace

llvm::Expected<std::optional<PlanChoice>>
driver::planAuto(const LlamaArgs &model, const TrainConfig &config,
                 const HardwareRequest &request, const PlanOptions &opts,
                 llvm::raw_ostream &os) {
  llvm::Expected<std::pair<cost::Hardware, const target::TargetBackend *>> hw =
      resolveHardware(request);
  if (!hw)
    return hw.takeError();
  if (llvm::Error e = checkPlanOptions(config, opts))
    return std::move(e);
  llvm::Expected<std::optional<TrainConfig>> best =
      runPlanAuto(model, config, hw->first, *hw->second, opts, os);
  if (!best)
    return best.takeError();
  if (!*best)
    return std::optional<PlanChoice>();
  return std::optional<PlanChoice>(
      PlanChoice{std::move(**best), opts.gpus, hw->second});
}
