//===- Plan.cpp - searching parallel layouts for a training job -----------===//

#include "titan/Planner/Plan.h"

#include "titan/Contract/MeshAxes.h"
#include "titan/Model/ConfigFit.h"
#include "titan/Model/PipelineStages.h"
#include "titan/Pipeline/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <chrono>
#include <set>

using namespace titan;
using namespace titan::plan;

static constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// The pipeline schedules searched. GPipe and LoopedBFS are left out: with
/// the same stage costs their bubble equals 1F1B's and Interleaved1F1B's
/// while they keep every microbatch's activations (dominated).
static const char *const kSchedules[] = {"1F1B", "Interleaved1F1B",
                                         "InterleavedZeroBubble",
                                         "ZBVZeroBubble", "DualPipeV"};
/// Activation checkpointing modes, least recomputation first.
static const char *const kACModes[] = {"none", "op", "full"};

static std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

std::string Candidate::degrees() const {
  return llvm::formatv("{0}x{1}x{2}x{3}x{4}", mesh.dpReplicate, mesh.dpShard,
                       mesh.cp, mesh.tp, mesh.pp);
}

std::string Candidate::key() const {
  return llvm::formatv("{0}|{1}|mbs{2}|lbs{3}|{4}|f8{5}|atp{6}|acc{7}",
                       degrees(), schedule, microbatchSize, localBatch, ac,
                       float8, asyncTP, accumulation);
}

double Score::exposedComm() const {
  double total = 0;
  for (const auto &[axes, s] : exposedCommSeconds)
    total += s;
  return total;
}

void Counts::reject(llvm::StringRef reason, llvm::StringRef message) {
  auto &entry = reasons[reason.str()];
  if (entry.first++ == 0)
    entry.second = message.str();
}

TrainConfig plan::applyCandidate(const TrainConfig &base, const Candidate &c) {
  TrainConfig config = base;
  auto &p = config.parallelism;
  p.pipelineParallelDegree = c.mesh.pp;
  p.dataParallelReplicateDegree = c.mesh.dpReplicate;
  p.dataParallelShardDegree = c.mesh.dpShard;
  p.contextParallelDegree = c.mesh.cp;
  p.tensorParallelDegree = c.mesh.tp;
  p.enableAsyncTensorParallel = c.asyncTP;
  if (c.mesh.pp > 1) {
    p.pipelineParallelSchedule = c.schedule;
    p.pipelineParallelMicrobatchSize = c.microbatchSize;
  }
  config.training.localBatchSize = c.localBatch;
  auto &ac = config.activationCheckpoint;
  if (c.ac == "op") {
    ac.mode = "selective";
    ac.selectiveAcOption = "op";
  } else {
    ac.mode = c.ac;
  }
  auto &conv = config.model.converters;
  llvm::erase_if(conv, [](const std::string &s) {
    return s == "float8" || s == "quantize.linear.float8";
  });
  if (c.float8)
    conv.push_back("quantize.linear.float8");
  return config;
}

std::string plan::overrides(const Candidate &c, int64_t globalBatch) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "--parallelism.data_parallel_replicate_degree " << c.mesh.dpReplicate
     << " --parallelism.data_parallel_shard_degree " << c.mesh.dpShard
     << " --parallelism.context_parallel_degree " << c.mesh.cp
     << " --parallelism.tensor_parallel_degree " << c.mesh.tp
     << " --parallelism.pipeline_parallel_degree " << c.mesh.pp;
  if (c.mesh.pp > 1)
    os << " --parallelism.pipeline_parallel_schedule " << c.schedule
       << " --parallelism.pipeline_parallel_microbatch_size "
       << c.microbatchSize;
  if (c.mesh.tp > 1)
    os << " --parallelism.enable_async_tensor_parallel "
       << (c.asyncTP ? "true" : "false");
  os << " --training.local_batch_size " << c.localBatch
     << " --training.global_batch_size " << globalBatch;
  if (c.ac == "op")
    os << " --activation_checkpoint.mode selective "
          "--activation_checkpoint.selective_ac_option op";
  else
    os << " --activation_checkpoint.mode " << c.ac;
  if (c.float8)
    os << " --model.converters quantize.linear.float8";
  return s;
}

std::vector<Candidate> plan::enumerate(const LlamaArgs &model,
                                       const TrainConfig &config,
                                       const Request &request) {
  std::vector<Candidate> out;
  int64_t n = request.gpus, global = config.training.globalBatchSize;
  bool fp8 = request.float8 && request.hardware.peakFlopsFP8 > 0;
  // Tensor parallel stays inside a node (NVLink); context parallel's ring
  // is searched up to 8, as TorchTitan's published runs.
  int64_t maxTP = std::min<int64_t>(8, request.hardware.devicesPerNode);
  for (int64_t pp : divisors(n)) {
    if (pp > model.nLayers)
      continue;
    for (int64_t tp : divisors(n / pp)) {
      // A tp group that does not divide a node would straddle two for
      // some ranks (the cost model places rank 0's group only).
      if (tp > maxTP || request.hardware.devicesPerNode % tp != 0)
        continue;
      for (int64_t cp : divisors(n / (pp * tp))) {
        if (cp > 8)
          continue;
        int64_t dp = n / (pp * tp * cp);
        for (int64_t dpr : divisors(dp)) {
          Candidate c;
          c.mesh.pp = pp;
          c.mesh.tp = tp;
          c.mesh.cp = cp;
          c.mesh.dpReplicate = dpr;
          c.mesh.dpShard = dp / dpr;
          // The local batches that divide the global batch over dp (a
          // global batch dp does not divide is one rejected candidate).
          std::vector<int64_t> locals;
          if (global % dp == 0)
            locals = divisors(global / dp);
          else
            locals = {0};
          std::vector<std::string> schedules;
          if (pp == 1)
            schedules = {""};
          else
            schedules.assign(std::begin(kSchedules), std::end(kSchedules));
          for (int64_t local : locals) {
            c.localBatch = local;
            c.accumulation = local ? global / (dp * local) : 0;
            for (const std::string &sched : schedules) {
              c.schedule = sched;
              std::vector<int64_t> mbs =
                  pp > 1 && local ? divisors(local) : std::vector<int64_t>{1};
              for (int64_t mb : mbs) {
                c.microbatchSize = mb;
                for (const char *ac : kACModes) {
                  c.ac = ac;
                  for (int f8 = 0; f8 <= (fp8 ? 1 : 0); ++f8) {
                    c.float8 = f8;
                    for (int atp = 0;
                         atp <= (request.asyncTP && tp > 1 ? 1 : 0); ++atp) {
                      c.asyncTP = atp;
                      out.push_back(c);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

/// The key of `c`'s pipeline schedule among RuleChecker's caches: the
/// degree, the schedule and the microbatches.
static std::string scheduleKey(const Candidate &c) {
  return llvm::formatv("{0}|{1}|{2}", c.mesh.pp, c.schedule,
                       c.localBatch / c.microbatchSize)
      .str();
}

/// The model's parameters (the last model's, cached: the search asks for
/// every candidate).
static int64_t paramCount(const LlamaArgs &model) {
  static thread_local LlamaArgs last;
  static thread_local int64_t count = -1;
  if (count >= 0 && !firstArchitectureDifference(last, model))
    return count;
  count = llamaParameterCount(model);
  last = model;
  return count;
}

int64_t plan::memoryLowerBound(const LlamaArgs &model,
                               const TrainConfig &config, const Candidate &c,
                               bool bf16, double liveBlocks) {
  // FSDP shards over dp_shard x cp, tensor parallel over tp, pipeline
  // stages split the model over pp: the busiest rank holds at least the
  // average share.
  double share = double(c.mesh.dpShard * c.mesh.cp * c.mesh.tp * c.mesh.pp);
  double params = double(paramCount(model)) / share;
  // f32 master weights, f32 gradients (none kept with the optimizer in the
  // backward), AdamW's two f32 moments; training in bf16 also holds a bf16
  // working copy of the shard it gathers from.
  double gradients = config.optimizer.earlyStepInBackward ? 0.0 : 4.0;
  double state = params * (12.0 + gradients + (bf16 ? 2.0 : 0.0));
  // Activations: each of the rank's blocks keeps, per token of a
  // microbatch (sequence parallel: over tp; context parallel: over cp), at
  // least its input under full checkpointing; the inputs of its linears
  // and SwiGLU (the attention and FFN norms' outputs, the attention output,
  // w1's and w3's outputs, the SwiGLU output: 3 dim + 3 hidden) without
  // checkpointing; the block input and the attention output under the
  // selective op policy. Under pp, the blocks of every microbatch the
  // schedule keeps in flight on its busiest rank (`liveBlocks`).
  int64_t batch = c.mesh.pp > 1 ? c.microbatchSize : c.localBatch;
  double tokens = double(batch) * double(config.training.seqLen) /
                  double(c.mesh.cp * c.mesh.tp);
  if (liveBlocks < 0)
    liveBlocks = double(model.nLayers) / double(c.mesh.pp);
  double perToken = double(model.dim);
  if (c.ac == "none")
    perToken = 3.0 * double(model.dim) + 3.0 * double(model.ffnHidden);
  else if (c.ac == "op")
    perToken = 2.0 * double(model.dim);
  double activations = liveBlocks * tokens * perToken * (bf16 ? 2 : 4);
  return int64_t(state + activations);
}

double plan::throughputUpperBound(const LlamaArgs &model,
                                  const TrainConfig &config, const Candidate &c,
                                  const cost::Hardware &hw, bool bf16) {
  double peak = bf16 ? hw.peakFlopsBF16 : hw.peakFlopsF32;
  if (!(peak > 0))
    return 0;
  double linearPeak = c.float8 && hw.peakFlopsFP8 > 0 ? hw.peakFlopsFP8 : peak;
  int64_t seq = config.training.seqLen;
  double attention = 12.0 * double(model.nLayers) * double(model.nHeads) *
                     double(model.headDim()) * double(seq);
  // trainingFlopsPerToken's 6N: the token embedding is a lookup.
  int64_t embed = model.vocabSize * model.dim;
  double linear =
      6.0 * double(paramCount(model) - (model.tieWordEmbeddings ? 0 : embed));
  // Full checkpointing recomputes at least the blocks' forward GEMMs (a
  // third of their 6 x params).
  if (c.ac == "full") {
    double blocks = double(paramCount(model) - 2 * embed);
    linear += 2.0 * std::max(0.0, blocks);
  }
  double attentionEff =
      std::max({hw.attentionForwardEfficiency, hw.attentionBackwardEfficiency,
                hw.gemmEfficiency});
  double perToken = linear / (linearPeak * hw.gemmEfficiency) +
                    attention / (peak * attentionEff);
  int64_t sharing = hw.ranksShareCompute ? std::min<int64_t>(hw.devicesPerNode,
                                                             c.mesh.worldSize())
                                         : 1;
  perToken *= double(sharing);
  // Ranks sharing a node's cores hand the bubble to each other, and
  // predictJob does not charge it then (Predict.cpp): nor may the bound.
  double bubble = 0;
  if (c.mesh.pp > 1 && sharing == 1) {
    int64_t v = c.schedule == "1F1B" ? 1 : 2;
    int64_t m = c.localBatch / c.microbatchSize;
    bubble = textbookBubble(c.schedule, c.mesh.pp, v, m).value_or(0.0);
  }
  // Each device computes its share of the global tokens; ranks of one
  // tp x cp x pp group share their tokens.
  return (1.0 - bubble) / perToken;
}

/// The most block-microbatches any rank of `s` keeps alive at once: each
/// forward of a stage's microbatch keeps its blocks' activations until
/// that microbatch's backward (B, or I: the input gradient consumes what
/// the weight gradient does not need).
static double liveBlockFrames(const PipelineSchedule &s,
                              const PipelinePlan &plan) {
  double most = 0;
  for (const auto &actions : s.actions) {
    double live = 0;
    for (const PipelineAction &a : actions) {
      double blocks = double(plan.stages[size_t(a.stage)].numLayers);
      if (a.kind == PipelineAction::Forward)
        live += blocks;
      else if (a.kind != PipelineAction::BackwardWeight)
        live -= blocks;
      most = std::max(most, live);
    }
  }
  return most;
}

namespace {
using Rejection = std::optional<std::pair<std::string, std::string>>;

/// titan's checks on a candidate, each cached by what it depends on: most
/// candidates share them.
struct RuleChecker {
  const LlamaArgs &model;
  const TrainConfig &config;
  const Request &request;
  std::map<std::string, Rejection> fit, stages, schedules, unsupported;
  std::map<std::string, PipelinePlan> plans;
  /// liveBlockFrames of each schedule (by scheduleKey).
  std::map<std::string, double> live;

  /// The live block frames of `c`'s schedule (after check passed it), or
  /// the rank's average share of the blocks without pp.
  double liveBlocks(const Candidate &c) {
    if (c.mesh.pp == 1)
      return double(model.nLayers);
    return live[scheduleKey(c)];
  }

  Rejection check(const Candidate &c) {
    if (c.localBatch == 0)
      return std::make_pair(
          std::string("global batch not divisible by dp"),
          std::string(llvm::formatv(
              "training.global_batch_size ({0}) is not divisible by "
              "dp_replicate x dp_shard ({1})",
              config.training.globalBatchSize,
              c.mesh.dpReplicate * c.mesh.dpShard)));
    // The model's fit: the degrees and the stage split.
    std::string key = llvm::formatv("{0}|{1}|{2}|{3}", c.mesh.tp, c.mesh.cp,
                                    c.mesh.pp, c.schedule);
    auto [fitIt, newFit] = fit.try_emplace(key);
    if (newFit)
      if (llvm::Error e =
              checkModelFitsConfig(model, applyCandidate(config, c)))
        fitIt->second = std::make_pair(std::string("checkModelFitsConfig"),
                                       llvm::toString(std::move(e)));
    if (fitIt->second)
      return fitIt->second;
    if (c.mesh.pp > 1) {
      std::string stageKey = llvm::formatv("{0}|{1}", c.mesh.pp, c.schedule);
      auto [stageIt, newStage] = stages.try_emplace(stageKey);
      if (newStage) {
        const auto &p = config.parallelism;
        llvm::Expected<PipelinePlan> plan =
            planPipelineStages(model.nLayers, c.mesh.pp, c.schedule,
                               p.pipelineParallelLayersPerStage,
                               p.pipelineParallelFirstStageLessLayers,
                               p.pipelineParallelLastStageLessLayers);
        if (!plan)
          stageIt->second = std::make_pair(std::string("pipeline stages"),
                                           llvm::toString(plan.takeError()));
        else
          plans[stageKey] = std::move(*plan);
      }
      if (stageIt->second)
        return stageIt->second;
      int64_t m = c.localBatch / c.microbatchSize;
      auto [schedIt, newSched] = schedules.try_emplace(scheduleKey(c));
      if (newSched) {
        llvm::Expected<PipelineSchedule> s =
            buildSchedule(c.schedule, plans[stageKey], m);
        if (!s)
          schedIt->second = std::make_pair(std::string("buildSchedule"),
                                           llvm::toString(s.takeError()));
        else
          live[scheduleKey(c)] = liveBlockFrames(*s, plans[stageKey]);
      }
      if (schedIt->second)
        return schedIt->second;
    }
    if (!request.extraCheck)
      return std::nullopt;
    // What titan does not implement: the features, not the batch.
    std::string featureKey =
        llvm::formatv("{0}|{1}|{2}|{3}|{4}|{5}|{6}", c.mesh.tp > 1,
                      c.mesh.cp > 1, c.mesh.pp > 1, c.mesh.dpReplicate > 1,
                      c.schedule, c.ac, c.float8)
            .str() +
        (c.asyncTP ? "|atp" : "");
    auto [unsupIt, newUnsup] = unsupported.try_emplace(featureKey);
    if (newUnsup)
      if (llvm::Error e = request.extraCheck(applyCandidate(config, c)))
        unsupIt->second = std::make_pair(std::string("diagnoseUnsupported"),
                                         llvm::toString(std::move(e)));
    return unsupIt->second;
  }
};

/// The first line of an error message.
std::string firstLine(llvm::StringRef message) {
  return message.split('\n').first.str();
}

/// Candidates that differ only in local batch and AC mode.
std::string layoutKey(const Candidate &c) {
  return llvm::formatv("{0}|{1}|{2}|{3}|{4}", c.degrees(), c.schedule,
                       c.microbatchSize, c.float8, c.asyncTP);
}

int acRank(llvm::StringRef ac) { return ac == "none" ? 0 : ac == "op" ? 1 : 2; }
} // namespace

PlanResult plan::search(const LlamaArgs &model, const TrainConfig &config,
                        const Request &request, const Predictor &predict) {
  auto start = std::chrono::steady_clock::now();
  PlanResult result;
  Counts &counts = result.counts;
  RuleChecker rules{model, config, request, {}, {}, {}, {}, {}, {}};

  // Rules and the memory bound.
  struct Survivor {
    Candidate c;
    double upper;
    int64_t bound;
  };
  // Layouts in enumeration order (fewer pipeline stages, then smaller tp,
  // cp and dp_replicate first): the order among equal bounds.
  std::map<std::string, size_t> groupIndex;
  std::vector<std::vector<Survivor>> groups;
  std::vector<Candidate> all = enumerate(model, config, request);
  counts.enumerated = int64_t(all.size());
  for (const Candidate &c : all) {
    if (auto why = rules.check(c)) {
      ++counts.rejectedByRule;
      counts.reject(why->first, firstLine(why->second));
      continue;
    }
    // titan runs Float8's scaled GEMMs beside the tensor-parallel
    // collectives, not fused with them: async TP changes nothing then.
    if (c.float8 && c.asyncTP) {
      ++counts.dominated;
      continue;
    }
    int64_t bound =
        memoryLowerBound(model, config, c, request.bf16, rules.liveBlocks(c));
    if (counts.smallestBound < 0 || bound < counts.smallestBound)
      counts.smallestBound = bound;
    if (bound > request.memoryBytes) {
      ++counts.prunedByBound;
      continue;
    }
    double upper =
        throughputUpperBound(model, config, c, request.hardware, request.bf16);
    auto [at, added] = groupIndex.try_emplace(layoutKey(c), groups.size());
    if (added)
      groups.emplace_back();
    groups[at->second].push_back({c, upper, bound});
  }

  result.screenSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  // Each layout's candidates: least recomputation first, then the largest
  // local batch. A candidate that fits dominates those with more
  // recomputation and no larger local batch (same work per token, more
  // recomputed or more accumulation steps), so only larger local batches
  // are tried under the heavier AC modes.
  struct Group {
    std::vector<Survivor> members;
    double upper = 0;
  };
  std::vector<Group> ordered;
  for (std::vector<Survivor> &members : groups) {
    llvm::stable_sort(members, [](const Survivor &a, const Survivor &b) {
      if (acRank(a.c.ac) != acRank(b.c.ac))
        return acRank(a.c.ac) < acRank(b.c.ac);
      return a.c.localBatch > b.c.localBatch;
    });
    Group g{members, 0};
    for (const Survivor &s : members)
      g.upper = std::max(g.upper, s.upper);
    ordered.push_back(std::move(g));
  }
  // Highest upper bound first (ties in enumeration order: deterministic).
  llvm::stable_sort(ordered, [](const Group &a, const Group &b) {
    return a.upper > b.upper;
  });

  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  // Predictions by candidate key: std::nullopt when the compiler rejected
  // it.
  std::map<std::string, std::optional<Score>> predicted;
  auto evaluate = [&](const Candidate &c) -> std::optional<Score> {
    auto [it, added] = predicted.try_emplace(c.key());
    if (!added)
      return it->second;
    ++counts.predicted;
    llvm::Expected<Score> score = predict(applyCandidate(config, c), c);
    if (!score) {
      ++counts.rejectedByCompiler;
      std::string message = firstLine(llvm::toString(score.takeError()));
      counts.reject("compiler: " + message.substr(0, 60), message);
      return std::nullopt;
    }
    result.work += score->work;
    if (counts.smallestPeak < 0 || score->peakBytes < counts.smallestPeak)
      counts.smallestPeak = score->peakBytes;
    if (score->peakBytes > request.memoryBytes)
      ++counts.overMemory;
    it->second = *score;
    return *score;
  };
  auto outOfBudget = [&] {
    return (request.maxSeconds > 0 && elapsed() > request.maxSeconds) ||
           (request.maxWork > 0 && result.work >= request.maxWork);
  };
  auto fits = [&](const std::optional<Score> &s) {
    return s && s->peakBytes <= request.memoryBytes;
  };
  // Memory grows with the local batch, the microbatch size and lighter
  // checkpointing (more of the same tensors kept): when a layout's
  // smallest candidate (full AC, the smallest local batch) does not fit,
  // none of it does, nor the same degrees and schedule with larger
  // microbatches. Smallest infeasible microbatch size by that key.
  std::map<std::string, int64_t> infeasible;
  auto familyKey = [](const Candidate &c) {
    return llvm::formatv("{0}|{1}|{2}", c.degrees(), c.schedule, c.float8)
        .str();
  };

  double best = 0;
  for (Group &g : ordered) {
    const Candidate &first = g.members.front().c;
    auto inf = infeasible.find(familyKey(first));
    if (inf != infeasible.end() && first.microbatchSize >= inf->second) {
      counts.prunedBySmallest += int64_t(g.members.size());
      continue;
    }
    // Probe the smallest candidate when the layout has more than one and
    // could still win.
    // (Pipelines only: their compiles are the expensive ones and their
    // memory the least bounded; without pp the members are cheap and the
    // probe would mostly find a slow plan that fits.)
    if (first.mesh.pp > 1 && g.members.size() > 1 && g.upper >= best &&
        !outOfBudget()) {
      const Survivor *smallest = &g.members.front();
      for (const Survivor &s : g.members)
        if (acRank(s.c.ac) > acRank(smallest->c.ac) ||
            (acRank(s.c.ac) == acRank(smallest->c.ac) &&
             s.c.localBatch < smallest->c.localBatch))
          smallest = &s;
      std::optional<Score> probe = evaluate(smallest->c);
      if (probe && !fits(probe)) {
        int64_t &mbs =
            infeasible.try_emplace(familyKey(first), first.microbatchSize)
                .first->second;
        mbs = std::min(mbs, first.microbatchSize);
        // The probe itself was predicted; the rest are pruned.
        counts.prunedBySmallest += int64_t(g.members.size()) - 1;
        continue;
      }
      if (fits(probe)) {
        ++counts.fitted;
        best = std::max(best, probe->tokensPerSecondPerDevice);
        result.fitted.push_back({smallest->c, *probe, ""});
      }
    }
    // Per AC mode, least recomputation first: the largest local batch
    // that fits, by bisection (memory grows with the local batch; the
    // smaller ones that fit on the way are kept too). A fitting plan
    // dominates heavier AC at no larger local batch.
    int64_t fittedLocal = 0;
    for (const char *ac : kACModes) {
      std::vector<const Survivor *> open; // ascending local batch
      for (auto it = g.members.rbegin(); it != g.members.rend(); ++it) {
        const Candidate &c = it->c;
        if (c.ac != ac || predicted.count(c.key()))
          continue; // another mode, or the probe (counted)
        if (c.localBatch <= fittedLocal) {
          ++counts.dominated;
          continue;
        }
        if (it->upper > 0 && it->upper < best) {
          ++counts.prunedByRoofline;
          continue;
        }
        open.push_back(&*it);
      }
      size_t lo = 0, hi = open.size();
      std::vector<bool> done(open.size(), false);
      bool stopped = false;
      while (lo < hi) {
        if (outOfBudget()) {
          stopped = true;
          break;
        }
        size_t mid = lo + (hi - lo) / 2;
        done[mid] = true;
        const Candidate &c = open[mid]->c;
        std::optional<Score> score = evaluate(c);
        if (!fits(score)) {
          hi = mid;
          continue;
        }
        lo = mid + 1;
        ++counts.fitted;
        fittedLocal = std::max(fittedLocal, c.localBatch);
        best = std::max(best, score->tokensPerSecondPerDevice);
        result.fitted.push_back({c, *score, ""});
      }
      for (size_t i = 0; i < open.size(); ++i) {
        if (done[i])
          continue;
        if (stopped && i >= lo && i < hi)
          ++counts.overTime;
        else if (i >= hi)
          ++counts.prunedBySmallest; // a smaller local batch did not fit
        else
          ++counts.dominated; // a larger local batch fits
      }
    }
  }

  llvm::stable_sort(result.fitted, [](const Ranked &a, const Ranked &b) {
    return a.score.tokensPerSecondPerDevice > b.score.tokensPerSecondPerDevice;
  });
  // Why each was kept: its margin over the next, and what differs.
  for (size_t i = 0; i < result.fitted.size(); ++i) {
    Ranked &r = result.fitted[i];
    if (i + 1 == result.fitted.size()) {
      r.why = i == 0 ? "only fitting plan" : "fits";
      continue;
    }
    const Ranked &next = result.fitted[i + 1];
    double gain = next.score.tokensPerSecondPerDevice > 0
                      ? r.score.tokensPerSecondPerDevice /
                                next.score.tokensPerSecondPerDevice -
                            1
                      : 0;
    std::vector<std::string> because;
    if (r.score.exposedComm() < next.score.exposedComm() * 0.95)
      because.push_back("less exposed comm");
    if (r.score.bubble < next.score.bubble - 0.005)
      because.push_back("smaller bubble");
    if (acRank(r.candidate.ac) < acRank(next.candidate.ac))
      because.push_back("less recompute");
    if (r.candidate.float8 && !next.candidate.float8)
      because.push_back("Float8");
    if (r.candidate.localBatch > next.candidate.localBatch)
      because.push_back("larger local batch");
    r.why =
        llvm::formatv("{0}+{1:F1}% over #{2}{3}{4}",
                      i == 0 ? "best fitting; " : "", gain * 100, i + 2,
                      because.empty() ? "" : ": ", llvm::join(because, ", "));
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

static std::string acName(llvm::StringRef ac) {
  return ac == "op" ? "sel-op" : ac.str();
}

void plan::printTable(const PlanResult &result, const Request &request,
                      llvm::raw_ostream &os) {
  os << llvm::formatv("{0,4} {1,-14} {2,-24} {3,5} {4,-6} {5,3} {6,3} {7,10} "
                      "{8,6} {9,8} {10,9} {11,6} {12,13}  {13}\n",
                      "rank", "dpr x dps x cp x tp x pp",
                      "schedule (mb x size)", "lbs", "AC", "f8", "atp",
                      "tok/s/gpu", "MFU", "step s", "exp comm", "bubble",
                      "peak/mem GiB", "why kept");
  int64_t shown = 0;
  for (const Ranked &r : result.fitted) {
    if (shown++ == request.top)
      break;
    const Candidate &c = r.candidate;
    std::string sched = "-";
    if (c.mesh.pp > 1)
      sched = llvm::formatv("{0} ({1} x {2})", c.schedule,
                            c.localBatch / c.microbatchSize, c.microbatchSize);
    os << llvm::formatv(
        "{0,4} {1,-14} {2,-24} {3,5} {4,-6} {5,3} {6,3} {7,10:F1} {8,5:F1}% "
        "{9,8:F3} {10,9:F3} {11,6:F3} {12,6:F1}/{13,-6:F1}  {14}\n",
        shown, c.degrees(), sched, c.localBatch, acName(c.ac),
        c.float8 ? "on" : "off",
        c.mesh.tp > 1 ? (c.asyncTP ? "on" : "off") : "-",
        r.score.tokensPerSecondPerDevice, r.score.mfu * 100,
        r.score.stepSeconds, r.score.exposedComm(), r.score.bubble,
        double(r.score.peakBytes) / kGiB, double(request.memoryBytes) / kGiB,
        r.why);
  }
}

void plan::printCounts(const PlanResult &result, llvm::raw_ostream &os) {
  const Counts &c = result.counts;
  os << llvm::formatv(
      "searched in {0:F2} s ({10:F2} s enumerating and screening): {1} "
      "enumerated, {2} rejected by rule, {3} pruned by the memory bound, {4} "
      "dominated, {5} pruned by the roofline bound, {12} pruned by their "
      "layout's smallest plan's memory, {11} left unpredicted (budget), "
      "{6} predicted ({7} rejected by the compiler, {8} over memory; work "
      "{13:F0}), {9} fitted\n",
      result.seconds, c.enumerated, c.rejectedByRule, c.prunedByBound,
      c.dominated, c.prunedByRoofline, c.predicted, c.rejectedByCompiler,
      c.overMemory, c.fitted, result.screenSeconds, c.overTime,
      c.prunedBySmallest, result.work);
  for (const auto &[reason, entry] : c.reasons)
    os << llvm::formatv("  rejected {0,7} x {1}: {2}\n", entry.first, reason,
                        entry.second);
}

static llvm::json::Object countsJSON(const Counts &c) {
  llvm::json::Object reasons;
  for (const auto &[reason, entry] : c.reasons)
    reasons[reason] =
        llvm::json::Object{{"count", entry.first}, {"example", entry.second}};
  return llvm::json::Object{{"enumerated", c.enumerated},
                            {"rejected_by_rule", c.rejectedByRule},
                            {"pruned_by_bound", c.prunedByBound},
                            {"dominated", c.dominated},
                            {"pruned_by_roofline", c.prunedByRoofline},
                            {"predicted", c.predicted},
                            {"rejected_by_compiler", c.rejectedByCompiler},
                            {"over_memory", c.overMemory},
                            {"fitted", c.fitted},
                            {"over_budget", c.overTime},
                            {"pruned_by_smallest", c.prunedBySmallest},
                            {"reasons", std::move(reasons)}};
}

void plan::printJSON(const PlanResult &result, const Request &request,
                     llvm::raw_ostream &os) {
  llvm::json::Array ranked;
  for (const Ranked &r : result.fitted) {
    const Candidate &c = r.candidate;
    llvm::json::Object exposed;
    for (const auto &[axes, s] : r.score.exposedCommSeconds)
      exposed[axes] = s;
    llvm::json::Object sizes;
    for (const mesh::AxisInfo &axis : mesh::kAxes)
      sizes[axis.name] = c.mesh.degree(axis.axis);
    ranked.push_back(llvm::json::Object{
        {"mesh", std::move(sizes)},
        {"schedule", c.schedule},
        {"microbatch_size", c.microbatchSize},
        {"local_batch_size", c.localBatch},
        {"accumulation_steps", c.accumulation},
        {"activation_checkpoint", c.ac},
        {"float8", c.float8},
        {"async_tp", c.asyncTP},
        {"tokens_per_second_per_device", r.score.tokensPerSecondPerDevice},
        {"mfu", r.score.mfu},
        {"step_seconds", r.score.stepSeconds},
        {"exposed_comm_seconds", std::move(exposed)},
        {"bubble", r.score.bubble},
        {"peak_bytes", r.score.peakBytes},
        {"why", r.why}});
  }
  llvm::json::Object root{
      {"hardware", request.hardware.name},   {"gpus", request.gpus},
      {"memory_bytes", request.memoryBytes}, {"seconds", result.seconds},
      {"counts", countsJSON(result.counts)}, {"candidates", std::move(ranked)}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
