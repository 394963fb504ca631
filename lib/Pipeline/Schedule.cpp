//===- Schedule.cpp - pipeline schedules as per-rank action lists ---------===//
//
// The orders are the published ones: GPipe (Huang et al. 2019: every
// forward, then every backward); 1F1B (Narayanan et al. 2021, PipeDream-
// Flush as in Megatron-LM: p - r - 1 warm-up forwards, then one forward and
// one backward alternately, then the remaining backwards); Interleaved1F1B
// (ibid., section 2.2, Megatron-LM's interleaved schedule: microbatches in
// groups of p, each group through every chunk in turn, 2 (p - r - 1) +
// (v - 1) p warm-up forwards); LoopedBFS (Lamy-Poirier 2023: each local
// stage's forwards over all microbatches, then the backwards in reverse
// stage order).
//
//===----------------------------------------------------------------------===//

#include "titan/Pipeline/Schedule.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

using namespace titan;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

char PipelineAction::letter() const {
  switch (kind) {
  case Forward:
    return 'F';
  case Backward:
    return 'B';
  case BackwardInput:
    return 'I';
  case BackwardWeight:
    return 'W';
  }
  return '?';
}

std::string PipelineAction::str() const {
  return std::to_string(stage) + letter() + std::to_string(microbatch);
}

bool titan::splitsBackward(const PipelineSchedule &s) {
  for (const auto &actions : s.actions)
    for (const PipelineAction &a : actions)
      if (a.kind == PipelineAction::BackwardInput ||
          a.kind == PipelineAction::BackwardWeight)
        return true;
  return false;
}

namespace {
using Actions = std::vector<PipelineAction>;

/// F, B, I or W in TorchTitan's notation.
std::optional<PipelineAction::Kind> computeKind(llvm::StringRef letter) {
  return llvm::StringSwitch<std::optional<PipelineAction::Kind>>(letter)
      .Case("F", PipelineAction::Forward)
      .Case("B", PipelineAction::Backward)
      .Case("I", PipelineAction::BackwardInput)
      .Case("W", PipelineAction::BackwardWeight)
      .Default(std::nullopt);
}

PipelineAction forward(int64_t stage, int64_t mb) {
  return {PipelineAction::Forward, stage, mb};
}
PipelineAction backward(int64_t stage, int64_t mb) {
  return {PipelineAction::Backward, stage, mb};
}
PipelineAction backwardInput(int64_t stage, int64_t mb) {
  return {PipelineAction::BackwardInput, stage, mb};
}
PipelineAction backwardWeight(int64_t stage, int64_t mb) {
  return {PipelineAction::BackwardWeight, stage, mb};
}

/// ScheduleInterleavedZeroBubble (ZB1P, Qi et al. 2024) as
/// torch.distributed.pipelining builds it (_get_warmup_ops with factor 1,
/// _get_1f1b_rank_ops with enable_zero_bubble): microbatches in rounds,
/// warm-up forwards, then forward / input-gradient pairs, each weight
/// gradient deferred by `rank` steps, the remaining weight gradients last.
Actions interleavedZeroBubble(const std::vector<int64_t> &mine, int64_t p,
                              int64_t r, int64_t m) {
  int64_t v = int64_t(mine.size());
  int64_t rounds = std::max<int64_t>(1, m / p), perRound = m / rounds;
  int64_t warmup = std::min((v - 1) * perRound + (p - 1 - r), m * v);
  // Warm-up forwards, m v - warmup forward / backward pairs, warmup
  // cool-down backwards.
  int64_t total = m * v + warmup;
  auto forwardStage = [&](int64_t step) {
    return mine[size_t((step / perRound) % v)];
  };
  auto backwardStage = [&](int64_t step) {
    return mine[size_t(v - 1 - ((step - warmup) / perRound) % v)];
  };
  std::map<int64_t, int64_t> fwd, bwd, wgt;
  std::vector<int64_t> backwardSteps;
  size_t weights = 0;
  Actions a;
  auto weight = [&](int64_t op) {
    if (op - warmup < r)
      return;
    int64_t st = backwardStage(backwardSteps[weights++]);
    a.push_back(backwardWeight(st, wgt[st]++));
  };
  for (int64_t op = 0; op < total; ++op) {
    if (op < m * v) {
      int64_t st = forwardStage(op);
      a.push_back(forward(st, fwd[st]++));
    }
    if (op >= warmup) {
      int64_t st = backwardStage(op);
      a.push_back(backwardInput(st, bwd[st]++));
      backwardSteps.push_back(op);
      weight(op);
    }
  }
  while (weights < backwardSteps.size()) {
    int64_t st = backwardStage(backwardSteps[weights++]);
    a.push_back(backwardWeight(st, wgt[st]++));
  }
  return a;
}

/// ScheduleZBVZeroBubble (Qi et al. 2024, section 6) as
/// torch.distributed.pipelining builds it: rank r holds stages r (chunk 0)
/// and 2p - 1 - r (chunk 1); warm-up forwards of both chunks, then
/// F I W of each chunk in turn, then the remaining input and weight
/// gradients; actions of microbatches past m (it plans at least 2p - 1)
/// are dropped.
Actions zbvZeroBubble(int64_t p, int64_t r, int64_t m) {
  int64_t n = std::max(2 * p - 1, m);
  int64_t c0 = r, c1 = 2 * p - 1 - r;
  int64_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  Actions a;
  for (int64_t i = 0; i < 2 * (p - r) - 1; ++i)
    a.push_back(forward(c0, f0++));
  for (int64_t i = 0; i < r; ++i) {
    a.push_back(forward(c1, f1++));
    a.push_back(forward(c0, f0++));
  }
  for (int64_t i = 0; i < p - r; ++i) {
    a.push_back(forward(c1, f1++));
    a.push_back(backwardInput(c1, b1));
    a.push_back(backwardWeight(c1, b1++));
  }
  while (f1 < f0 || f0 < n) {
    if (f0 < n)
      a.push_back(forward(c0, f0++));
    a.push_back(backwardInput(c0, b0));
    a.push_back(backwardWeight(c0, b0++));
    a.push_back(forward(c1, f1++));
    a.push_back(backwardInput(c1, b1));
    a.push_back(backwardWeight(c1, b1++));
  }
  int64_t w0 = b0, w1 = b1;
  for (int64_t i = 0; i < r; ++i) {
    a.push_back(backwardInput(c0, b0++));
    a.push_back(backwardInput(c1, b1++));
  }
  for (int64_t i = 0; i < p - r; ++i) {
    a.push_back(backwardInput(c0, b0++));
    a.push_back(backwardWeight(c0, w0++));
  }
  while (w1 < b1)
    a.push_back(backwardWeight(c1, w1++));
  while (w0 < b0)
    a.push_back(backwardWeight(c0, w0++));
  llvm::erase_if(a, [&](const PipelineAction &x) { return x.microbatch >= m; });
  return a;
}

/// ScheduleDualPipeV (DeepSeek-V3's DualPipe folded into a V, as
/// torch.distributed.pipelining builds it): rank r holds stages r and
/// 2p - 1 - r; eight phases mixing whole backwards (B) with input /
/// weight gradients whose W are queued and run later. The overlapped
/// forward + backward pairs run one after the other here (F then B).
Actions dualPipeV(int64_t p, int64_t r, int64_t m) {
  int64_t s0 = r, s1 = 2 * p - 1 - r;
  std::map<std::pair<int64_t, int>, int64_t> count; // (stage, F/I/W) -> mb
  std::vector<std::pair<int64_t, int64_t>> weightQueue;
  Actions a;
  auto add = [&](int64_t stage, PipelineAction::Kind kind) {
    int which = kind == PipelineAction::Forward ? 0 : 1;
    int64_t mb = count[{stage, which}];
    a.push_back({kind, stage, mb});
    count[{stage, which}] = mb + 1;
    if (kind == PipelineAction::BackwardInput)
      weightQueue.push_back({stage, mb});
  };
  auto pendingWeight = [&] {
    if (weightQueue.empty())
      return;
    auto [stage, mb] = weightQueue.front();
    weightQueue.erase(weightQueue.begin());
    a.push_back(backwardWeight(stage, mb));
  };
  auto overlap = [&](int64_t fwdStage, int64_t bwdStage) {
    add(fwdStage, PipelineAction::Forward);
    add(bwdStage, PipelineAction::Backward);
  };
  for (int64_t i = 0; i < 2 * (p - r - 1); ++i)
    add(s0, PipelineAction::Forward);
  for (int64_t i = 0; i < r + 1; ++i) {
    add(s0, PipelineAction::Forward);
    add(s1, PipelineAction::Forward);
  }
  for (int64_t i = 0; i < p - r - 1; ++i) {
    add(s1, PipelineAction::BackwardInput);
    pendingWeight();
    add(s1, PipelineAction::Forward);
  }
  for (int64_t i = 0; i < m - 2 * p + r + 1; ++i) {
    overlap(s0, s1);
    overlap(s1, s0);
  }
  for (int64_t i = 0; i < p - r - 1; ++i) {
    add(s1, PipelineAction::Backward);
    overlap(s1, s0);
  }
  // The second half of the last backwards split into I and W.
  bool split = false;
  int64_t last = r + 1;
  auto backwardKind = [&] {
    return split ? PipelineAction::BackwardInput : PipelineAction::Backward;
  };
  for (int64_t i = 0; i < last; ++i) {
    if (i == last / 2 && r % 2 == 1)
      split = true;
    add(s1, backwardKind());
    if (i == last / 2 && r % 2 == 0)
      split = true;
    add(s0, backwardKind());
  }
  for (int64_t i = 0; i < p - r - 1; ++i) {
    pendingWeight();
    add(s0, backwardKind());
  }
  for (int64_t i = 0; i < r + 1; ++i)
    pendingWeight();
  return a;
}

Actions gpipe(int64_t stage, int64_t m) {
  Actions a;
  for (int64_t i = 0; i < m; ++i)
    a.push_back(forward(stage, i));
  for (int64_t i = 0; i < m; ++i)
    a.push_back(backward(stage, i));
  return a;
}

/// Warm-up forwards, then forward/backward pairs, then the remaining
/// backwards, over the rank's sequence of forwards and of backwards.
Actions oneForwardOneBackward(const Actions &forwards, const Actions &backwards,
                              int64_t warmup) {
  Actions a;
  int64_t n = int64_t(forwards.size());
  warmup = std::min(warmup, n);
  for (int64_t i = 0; i < warmup; ++i)
    a.push_back(forwards[size_t(i)]);
  for (int64_t i = 0; i < n - warmup; ++i) {
    a.push_back(forwards[size_t(warmup + i)]);
    a.push_back(backwards[size_t(i)]);
  }
  for (int64_t i = n - warmup; i < n; ++i)
    a.push_back(backwards[size_t(i)]);
  return a;
}

Actions loopedBFS(const std::vector<int64_t> &stages, int64_t m) {
  Actions a;
  for (int64_t s : stages)
    for (int64_t i = 0; i < m; ++i)
      a.push_back(forward(s, i));
  for (auto s = stages.rbegin(); s != stages.rend(); ++s)
    for (int64_t i = 0; i < m; ++i)
      a.push_back(backward(*s, i));
  return a;
}
} // namespace

llvm::Expected<PipelineSchedule> titan::buildSchedule(llvm::StringRef schedule,
                                                      const PipelinePlan &plan,
                                                      int64_t m) {
  PipelineSchedule s;
  s.name = schedule.str();
  s.ranks = plan.ranks;
  s.stages = int64_t(plan.stages.size());
  s.microbatches = m;
  s.stagesOfRank = plan.stagesOfRank;
  int64_t p = plan.ranks;
  if (m < 1)
    return error("a pipeline schedule needs at least one microbatch "
                 "(training.local_batch_size / "
                 "parallelism.pipeline_parallel_microbatch_size)");
  for (int64_t r = 0; r < p; ++r) {
    const std::vector<int64_t> &mine = plan.stagesOfRank[size_t(r)];
    if (schedule == "GPipe") {
      s.actions.push_back(gpipe(mine[0], m));
    } else if (schedule == "1F1B") {
      Actions f, b;
      for (int64_t i = 0; i < m; ++i) {
        f.push_back(forward(mine[0], i));
        b.push_back(backward(mine[0], i));
      }
      s.actions.push_back(oneForwardOneBackward(f, b, p - r - 1));
    } else if (schedule == "Interleaved1F1B") {
      int64_t v = int64_t(mine.size());
      if (m % p != 0)
        return error(llvm::formatv(
            "parallelism.pipeline_parallel_schedule 'Interleaved1F1B' sends "
            "microbatches through the stages in groups of the pipeline "
            "degree: {0} microbatches (training.local_batch_size / "
            "pipeline_parallel_microbatch_size) must be a multiple of "
            "parallelism.pipeline_parallel_degree ({1})",
            m, p));
      Actions f, b;
      for (int64_t k = 0; k < m * v; ++k) {
        int64_t group = k / (p * v), within = k % (p * v);
        int64_t mb = group * p + within % p;
        int64_t chunk = within / p;
        f.push_back(forward(mine[size_t(chunk)], mb));
        b.push_back(backward(mine[size_t(v - 1 - chunk)], mb));
      }
      s.actions.push_back(
          oneForwardOneBackward(f, b, 2 * (p - r - 1) + (v - 1) * p));
    } else if (schedule == "LoopedBFS") {
      s.actions.push_back(loopedBFS(mine, m));
    } else if (schedule == "InterleavedZeroBubble") {
      int64_t rounds = std::max<int64_t>(1, m / p);
      if (m % rounds != 0)
        return error(llvm::formatv(
            "parallelism.pipeline_parallel_schedule 'InterleavedZeroBubble' "
            "runs the microbatches in max(1, m / p) = {0} rounds: {1} "
            "microbatches (training.local_batch_size / "
            "pipeline_parallel_microbatch_size) must be a multiple of {0}",
            rounds, m));
      s.actions.push_back(interleavedZeroBubble(mine, p, r, m));
    } else if (schedule == "ZBVZeroBubble") {
      s.actions.push_back(zbvZeroBubble(p, r, m));
    } else if (schedule == "DualPipeV") {
      if (m < s.stages)
        return error(llvm::formatv(
            "parallelism.pipeline_parallel_schedule 'DualPipeV' needs at "
            "least as many microbatches as stages: {0} microbatches "
            "(training.local_batch_size / pipeline_parallel_microbatch_size) "
            "for {1} stages",
            m, s.stages));
      s.actions.push_back(dualPipeV(p, r, m));
    } else {
      return error("parallelism.pipeline_parallel_schedule '" + schedule +
                   "' is not one of GPipe, 1F1B, Interleaved1F1B, LoopedBFS, "
                   "InterleavedZeroBubble, ZBVZeroBubble, DualPipeV");
    }
  }
  return s;
}

double titan::actionCost(const PipelineAction &a, double forwardCost,
                         double backwardCost) {
  switch (a.kind) {
  case PipelineAction::Forward:
    return forwardCost;
  case PipelineAction::Backward:
    return backwardCost;
  case PipelineAction::BackwardInput:
  case PipelineAction::BackwardWeight:
    return backwardCost / 2;
  }
  return backwardCost;
}

ScheduleCosts ScheduleCosts::uniform(int64_t stages, double forwardCost,
                                     double backwardCost) {
  ScheduleCosts costs;
  costs.perStage.assign(
      size_t(std::max<int64_t>(stages, 0)),
      {forwardCost, backwardCost, backwardCost / 2, backwardCost / 2});
  return costs;
}

PipelineSchedule titan::forwardOnlySchedule(const PipelineSchedule &training) {
  PipelineSchedule s;
  s.name = training.name + " (forward only)";
  s.ranks = training.ranks;
  s.stages = training.stages;
  s.microbatches = training.microbatches;
  s.stagesOfRank = training.stagesOfRank;
  s.forwardOnly = true;
  for (const std::vector<int64_t> &owned : s.stagesOfRank) {
    std::vector<int64_t> mine = owned;
    llvm::sort(mine);
    std::vector<PipelineAction> &actions = s.actions.emplace_back();
    for (int64_t mb = 0; mb < s.microbatches; ++mb)
      for (int64_t stage : mine)
        actions.push_back({PipelineAction::Forward, stage, mb});
  }
  return s;
}

llvm::Expected<ScheduleTimeline>
titan::simulateSchedule(const PipelineSchedule &s, double forwardCost,
                        double backwardCost) {
  return simulateSchedule(
      s, ScheduleCosts::uniform(s.stages, forwardCost, backwardCost));
}

llvm::Expected<ScheduleTimeline>
titan::simulateSchedule(const PipelineSchedule &s, const ScheduleCosts &costs) {
  using Kind = PipelineAction::Kind;
  if (int64_t(costs.perStage.size()) < s.stages)
    return error(llvm::formatv("the schedule has {0} stages but costs for {1}",
                               s.stages, costs.perStage.size()));
  // Who owns each stage, and each action's finish time once simulated.
  std::vector<int64_t> owner(size_t(s.stages), -1);
  for (auto [r, stages] : llvm::enumerate(s.stagesOfRank))
    for (int64_t st : stages)
      owner[size_t(st)] = int64_t(r);
  auto key = [&](Kind kind, int64_t stage, int64_t mb) {
    return (mb * s.stages + stage) * 4 + int64_t(kind);
  };
  std::map<int64_t, int64_t> seen;
  size_t total = 0;
  for (auto [r, actions] : llvm::enumerate(s.actions))
    for (const PipelineAction &a : actions) {
      if (a.stage < 0 || a.stage >= s.stages || a.microbatch < 0 ||
          a.microbatch >= s.microbatches ||
          owner[size_t(a.stage)] != int64_t(r))
        return error(llvm::formatv("pipeline rank {0} runs {1}, which is not "
                                   "an action of one of its stages",
                                   r, a.str()));
      if (++seen[key(a.kind, a.stage, a.microbatch)] > 1)
        return error(
            llvm::formatv("pipeline rank {0} runs {1} twice", r, a.str()));
      ++total;
    }
  // Every microbatch of every stage: one F, and one B or one I and one W
  // (a forward-only schedule: the F alone).
  for (int64_t mb = 0; mb < s.microbatches; ++mb)
    for (int64_t st = 0; st < s.stages; ++st) {
      auto has = [&](Kind k) { return seen.count(key(k, st, mb)) != 0; };
      std::string name = std::to_string(st) + "?" + std::to_string(mb);
      auto named = [&](char c) {
        name[std::to_string(st).size()] = c;
        return name;
      };
      if (!has(Kind::Forward))
        return error("the schedule never runs " + named('F'));
      if (s.forwardOnly) {
        for (Kind k :
             {Kind::Backward, Kind::BackwardInput, Kind::BackwardWeight})
          if (has(k))
            return error("the forward-only schedule runs a backward of " +
                         named('F'));
        continue;
      }
      bool split = has(Kind::BackwardInput) || has(Kind::BackwardWeight);
      if (has(Kind::Backward) && split)
        return error("the schedule runs both " + named('B') +
                     " and its input or weight gradient");
      if (!has(Kind::Backward) && !split)
        return error("the schedule never runs " + named('B') + " (or " +
                     named('I') + " and " + named('W') + ")");
      if (split && !has(Kind::BackwardInput))
        return error("the schedule never runs " + named('I'));
      if (split && !has(Kind::BackwardWeight))
        return error("the schedule never runs " + named('W'));
    }

  std::map<int64_t, double> finish;
  // The input gradient of (stage, mb) exists once its B or I finished.
  auto gradientReady = [&](int64_t stage, int64_t mb) -> std::optional<double> {
    for (Kind k : {Kind::Backward, Kind::BackwardInput})
      if (auto it = finish.find(key(k, stage, mb)); it != finish.end())
        return it->second;
    return std::nullopt;
  };
  ScheduleTimeline t;
  size_t ranks = s.actions.size();
  t.start.resize(ranks);
  std::vector<size_t> next(ranks, 0);
  std::vector<double> free(ranks, 0), busy(ranks, 0);
  size_t done = 0;
  while (done < total) {
    bool progress = false;
    for (size_t r = 0; r < ranks; ++r) {
      while (next[r] < s.actions[r].size()) {
        const PipelineAction &a = s.actions[r][next[r]];
        // Inputs: the previous stage's forward; the next stage's input
        // gradient and this stage's forward; a weight gradient's input
        // gradient.
        std::vector<std::optional<double>> deps;
        auto finished = [&](Kind k, int64_t stage) -> std::optional<double> {
          if (auto it = finish.find(key(k, stage, a.microbatch));
              it != finish.end())
            return it->second;
          return std::nullopt;
        };
        // What another stage made arrives after the transfer when that
        // stage is on another rank.
        auto arrived = [&](std::optional<double> t,
                           int64_t from) -> std::optional<double> {
          if (t && owner[size_t(from)] != int64_t(r))
            return *t + costs.transferSeconds;
          return t;
        };
        if (a.kind == Kind::Forward) {
          if (a.stage > 0)
            deps.push_back(
                arrived(finished(Kind::Forward, a.stage - 1), a.stage - 1));
        } else if (a.kind == Kind::BackwardWeight) {
          deps.push_back(finished(Kind::BackwardInput, a.stage));
        } else {
          deps.push_back(finished(Kind::Forward, a.stage));
          if (a.stage + 1 < s.stages)
            deps.push_back(
                arrived(gradientReady(a.stage + 1, a.microbatch), a.stage + 1));
        }
        double ready = free[r];
        bool met = true;
        for (const std::optional<double> &d : deps) {
          if (!d) {
            met = false;
            break;
          }
          ready = std::max(ready, *d);
        }
        if (!met)
          break;
        double cost = costs.cost(a);
        t.start[r].push_back(ready);
        free[r] = ready + cost;
        busy[r] += cost;
        finish[key(a.kind, a.stage, a.microbatch)] = free[r];
        ++next[r];
        ++done;
        progress = true;
      }
    }
    if (!progress) {
      std::string stuck;
      for (size_t r = 0; r < ranks; ++r)
        if (next[r] < s.actions[r].size())
          stuck +=
              llvm::formatv("{0}rank {1} at {2}", stuck.empty() ? "" : ", ", r,
                            s.actions[r][next[r]].str())
                  .str();
      return error("the schedule deadlocks: every rank waits for an input "
                   "that comes later in some rank's list (" +
                   stuck + ")");
    }
  }
  double totalBusy = 0;
  for (size_t r = 0; r < ranks; ++r) {
    t.makespan = std::max(t.makespan, free[r]);
    totalBusy += busy[r];
  }
  t.bubble = t.makespan > 0 ? 1 - totalBusy / (double(ranks) * t.makespan) : 0;
  return t;
}

std::optional<double> titan::textbookBubble(llvm::StringRef schedule, int64_t p,
                                            int64_t v, int64_t m) {
  if (schedule == "GPipe" || schedule == "1F1B")
    return double(p - 1) / double(m + p - 1);
  if (schedule == "Interleaved1F1B" || schedule == "LoopedBFS")
    return double(p - 1) / double(v * m + p - 1);
  if (schedule == "InterleavedZeroBubble")
    return double(p - 1) / double(3 * v * m + p - 1);
  if (schedule == "ZBVZeroBubble")
    return 0.0;
  return std::nullopt;
}

llvm::Expected<PipelineSchedule>
titan::loadScheduleCSV(llvm::StringRef path, const PipelinePlan &plan,
                       int64_t microbatches) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  if (!file || !llvm::sys::fs::is_regular_file(path))
    return error("parallelism.pipeline_parallel_schedule_csv: '" + path +
                 "' does not exist or is not a file");
  return parseScheduleCSV((*file)->getBuffer(), plan, microbatches);
}

llvm::Expected<PipelineSchedule>
titan::parseScheduleCSV(llvm::StringRef text, const PipelinePlan &plan,
                        int64_t microbatches) {
  PipelineSchedule s;
  s.name = "CSV";
  s.ranks = plan.ranks;
  s.stages = int64_t(plan.stages.size());
  s.microbatches = microbatches;
  s.stagesOfRank = plan.stagesOfRank;
  llvm::SmallVector<llvm::StringRef> rows;
  text.split(rows, '\n');
  while (!rows.empty() && rows.back().trim().empty())
    rows.pop_back();
  if (int64_t(rows.size()) != plan.ranks)
    return error(llvm::formatv("parallelism.pipeline_parallel_schedule_csv "
                               "has {0} rows; the pipeline has {1} ranks "
                               "(one row of actions per rank)",
                               rows.size(), plan.ranks));
  for (auto [r, row] : llvm::enumerate(rows)) {
    llvm::SmallVector<llvm::StringRef> cells;
    row.split(cells, ',');
    Actions actions;
    for (auto [c, cell] : llvm::enumerate(cells)) {
      llvm::StringRef text = cell.trim();
      if (text.empty())
        continue; // an idle step
      size_t digits = text.find_first_not_of("0123456789");
      llvm::StringRef kind =
          digits == llvm::StringRef::npos ? "" : text.substr(digits);
      kind = kind.take_while([](char ch) { return !llvm::isDigit(ch); });
      if (llvm::is_contained({"SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD",
                              "RESHARD", "REDUCE_GRAD"},
                             kind))
        continue; // titan derives transfers and FSDP actions
      int64_t stage = -1, mb = -1;
      std::optional<PipelineAction::Kind> k = computeKind(kind);
      if (!k || text.substr(0, digits).getAsInteger(10, stage) ||
          text.substr(digits + kind.size()).getAsInteger(10, mb))
        return error(llvm::formatv(
            "parallelism.pipeline_parallel_schedule_csv: row {0}, cell {1}: "
            "'{2}' is not an action <stage><F|B|I|W><microbatch> (e.g. 2F0)",
            r + 1, c + 1, text));
      actions.push_back({*k, stage, mb});
    }
    s.actions.push_back(std::move(actions));
  }
  return s;
}

namespace {
/// An action of a lowered schedule: "<stage><kind><microbatch>", or
/// "<stage>UNSHARD" and "<stage>REDUCE_GRAD" (microbatch -1).
struct LoweredAction {
  int64_t stage = -1;
  llvm::StringRef kind;
  int64_t microbatch = -1;
};

std::optional<LoweredAction> parseLoweredAction(llvm::StringRef text) {
  size_t digits = text.find_first_not_of("0123456789");
  LoweredAction a;
  if (digits == 0 || digits == llvm::StringRef::npos ||
      text.substr(0, digits).getAsInteger(10, a.stage))
    return std::nullopt;
  a.kind =
      text.substr(digits).take_while([](char c) { return !llvm::isDigit(c); });
  llvm::StringRef rest = text.substr(digits + a.kind.size());
  if (a.kind == "UNSHARD" || a.kind == "REDUCE_GRAD")
    return rest.empty() ? std::optional<LoweredAction>(a) : std::nullopt;
  if (rest.getAsInteger(10, a.microbatch) || a.microbatch < 0)
    return std::nullopt;
  return a;
}

} // namespace

std::optional<PipelineTransfer>
titan::parsePipelineTransfer(llvm::StringRef text) {
  std::optional<LoweredAction> a = parseLoweredAction(text);
  if (!a)
    return std::nullopt;
  for (auto [kind, send, direction] :
       {std::tuple("SEND_F", true, 0), std::tuple("RECV_F", false, 0),
        std::tuple("SEND_B", true, 1), std::tuple("RECV_B", false, 1)})
    if (a->kind == kind)
      return PipelineTransfer{send, direction, a->stage, a->microbatch};
  return std::nullopt;
}

namespace {
/// Where each stage lives.
std::vector<int64_t> stageOwners(const PipelineSchedule &s) {
  std::vector<int64_t> owner(size_t(s.stages), -1);
  for (auto [r, stages] : llvm::enumerate(s.stagesOfRank))
    for (int64_t st : stages)
      owner[size_t(st)] = int64_t(r);
  return owner;
}

std::string transfer(int64_t stage, llvm::StringRef kind, int64_t mb) {
  return std::to_string(stage) + kind.str() + std::to_string(mb);
}
} // namespace

std::vector<std::vector<std::string>>
titan::lowerSchedule(const PipelineSchedule &s) {
  std::vector<int64_t> owner = stageOwners(s);
  auto remote = [&](int64_t stage, int64_t rank) {
    return stage >= 0 && stage < s.stages && owner[size_t(stage)] != rank;
  };
  std::vector<std::vector<std::string>> rows;
  for (auto [r, actions] : llvm::enumerate(s.actions)) {
    std::vector<std::string> &row = rows.emplace_back();
    int64_t rank = int64_t(r);
    // Each local stage's weights are gathered once, before its actions (a
    // forward-only step gathers in its forwards).
    std::vector<int64_t> mine = s.stagesOfRank[r];
    llvm::sort(mine);
    if (!s.forwardOnly)
      for (int64_t stage : mine)
        row.push_back(std::to_string(stage) + "UNSHARD");
    // Each stage's gradients are reduced once, after its last backward.
    std::map<int64_t, size_t> lastBackward;
    for (auto [i, a] : llvm::enumerate(actions))
      if (a.kind != PipelineAction::Forward)
        lastBackward[a.stage] = i;
    for (auto [i, a] : llvm::enumerate(actions)) {
      bool forward = a.kind == PipelineAction::Forward;
      bool input = a.kind == PipelineAction::Backward ||
                   a.kind == PipelineAction::BackwardInput;
      if (forward && remote(a.stage - 1, rank))
        row.push_back(transfer(a.stage, "RECV_F", a.microbatch));
      if (input && remote(a.stage + 1, rank))
        row.push_back(transfer(a.stage, "RECV_B", a.microbatch));
      row.push_back(a.str());
      if (forward && remote(a.stage + 1, rank))
        row.push_back(transfer(a.stage, "SEND_F", a.microbatch));
      if (input && remote(a.stage - 1, rank))
        row.push_back(transfer(a.stage, "SEND_B", a.microbatch));
      if (auto it = lastBackward.find(a.stage);
          it != lastBackward.end() && it->second == i)
        row.push_back(std::to_string(a.stage) + "REDUCE_GRAD");
    }
  }
  return rows;
}

llvm::Expected<PipelineSchedule>
titan::verifyLoweredSchedule(const std::vector<std::vector<std::string>> &rows,
                             const PipelineSchedule &shape) {
  PipelineSchedule s = shape;
  s.actions.clear();
  if (int64_t(rows.size()) != s.ranks)
    return error(llvm::formatv("the lowered schedule has {0} rank lists for "
                               "{1} ranks",
                               rows.size(), s.ranks));
  std::vector<int64_t> owner = stageOwners(s);
  // Per (from rank, to rank, direction): the (stage, mb) of each send and
  // of each receive, in list order.
  using Key = std::tuple<int64_t, int64_t, int>;
  std::map<Key, std::vector<std::pair<int64_t, int64_t>>> sends, recvs;
  for (auto [r, row] : llvm::enumerate(rows)) {
    int64_t rank = int64_t(r);
    std::vector<PipelineAction> &actions = s.actions.emplace_back();
    // The row parsed, and each stage's backward actions (B or W) in it.
    std::vector<LoweredAction> parsed;
    std::map<int64_t, int64_t> backwardsLeft;
    for (const std::string &text : row) {
      std::optional<LoweredAction> a = parseLoweredAction(text);
      if (!a || a->stage >= s.stages || a->microbatch >= s.microbatches)
        return error(llvm::formatv("pipeline rank {0}: '{1}' is not an "
                                   "action of this schedule",
                                   rank, text));
      if (owner[size_t(a->stage)] != rank)
        return error(llvm::formatv("pipeline rank {0} runs {1}, which is not "
                                   "an action of one of its stages",
                                   rank, text));
      if (a->kind == "B" || a->kind == "W")
        ++backwardsLeft[a->stage];
      parsed.push_back(*a);
    }
    // Received tensors not yet consumed, produced tensors not yet sent.
    std::set<std::pair<int64_t, int64_t>> receivedF, receivedB;
    std::set<std::pair<int64_t, int64_t>> unsentF, unsentB;
    // Stages gathered (UNSHARD), whose actions have begun, whose gradients
    // are reduced (REDUCE_GRAD).
    std::set<int64_t> unsharded, begun, reduced;
    for (auto [text, a] : llvm::zip(row, parsed)) {
      int64_t stage = a.stage, mb = a.microbatch;
      llvm::StringRef kind = a.kind;
      if (kind == "REDUCE_GRAD") {
        if (backwardsLeft[stage] != 0 || !reduced.insert(stage).second)
          return error(llvm::formatv("pipeline rank {0}: {1} must come once, "
                                     "after the stage's last backward",
                                     rank, text));
        continue;
      }
      if (kind == "UNSHARD") {
        if (begun.count(stage) || !unsharded.insert(stage).second)
          return error(llvm::formatv("pipeline rank {0}: {1} must come once, "
                                     "before the stage's other actions",
                                     rank, text));
        continue;
      }
      begun.insert(stage);
      if (reduced.count(stage))
        return error(llvm::formatv("pipeline rank {0}: {1} comes after the "
                                   "stage's REDUCE_GRAD",
                                   rank, text));
      auto key = std::make_pair(stage, mb);
      bool prevRemote = stage > 0 && owner[size_t(stage - 1)] != rank;
      bool nextRemote =
          stage + 1 < s.stages && owner[size_t(stage + 1)] != rank;
      auto fail = [&](const llvm::Twine &why) {
        return error(
            llvm::formatv("pipeline rank {0}: {1} {2}", rank, text, why.str()));
      };
      if (kind == "RECV_F" || kind == "RECV_B") {
        bool f = kind == "RECV_F";
        if (!(f ? prevRemote : nextRemote))
          return fail("receives from a stage on the same rank");
        int64_t peer = owner[size_t(f ? stage - 1 : stage + 1)];
        recvs[{peer, rank, f ? 0 : 1}].push_back(key);
        (f ? receivedF : receivedB).insert(key);
        continue;
      }
      if (kind == "SEND_F" || kind == "SEND_B") {
        bool f = kind == "SEND_F";
        if (!(f ? nextRemote : prevRemote))
          return fail("sends to a stage on the same rank");
        if (!(f ? unsentF : unsentB).erase(key))
          return fail("comes before the action that computes what it sends, "
                      "or repeats a send");
        int64_t peer = owner[size_t(f ? stage + 1 : stage - 1)];
        sends[{rank, peer, f ? 0 : 1}].push_back(key);
        continue;
      }
      std::optional<PipelineAction::Kind> k = computeKind(kind);
      if (!k)
        return fail("is not F, B, I, W, SEND_F, RECV_F, SEND_B or RECV_B");
      if (*k == PipelineAction::Forward) {
        if (prevRemote && !receivedF.erase(key))
          return fail("has no RECV_F before it");
        if (nextRemote)
          unsentF.insert(key);
      } else if (*k != PipelineAction::BackwardWeight) {
        if (nextRemote && !receivedB.erase(key))
          return fail("has no RECV_B before it");
        if (prevRemote)
          unsentB.insert(key);
      }
      if (*k == PipelineAction::Backward ||
          *k == PipelineAction::BackwardWeight)
        --backwardsLeft[stage];
      actions.push_back({*k, stage, mb});
    }
    for (auto *left : {&receivedF, &receivedB, &unsentF, &unsentB})
      if (!left->empty())
        return error(llvm::formatv(
            "pipeline rank {0}: microbatch {1} of stage {2} is {3}", rank,
            left->begin()->second, left->begin()->first,
            left == &receivedF || left == &receivedB
                ? "received but never used"
                : "computed for another rank but never sent"));
  }
  // Between each pair of ranks the receives match the sends, in order
  // (NCCL matches them by order; MPI by tag).
  auto peerStage = [](const std::pair<int64_t, int64_t> &sent, int dir) {
    return std::make_pair(sent.first + (dir == 0 ? 1 : -1), sent.second);
  };
  for (auto &[key, sent] : sends) {
    auto [from, to, dir] = key;
    const auto &received = recvs[key];
    for (size_t i = 0; i < std::max(sent.size(), received.size()); ++i)
      if (i >= received.size() || i >= sent.size() ||
          peerStage(sent[i], dir) != received[i])
        return error(llvm::formatv(
            "pipeline ranks {0} and {1}: the {2} rank {0} sends do not match "
            "the ones rank {1} receives, in order, at transfer {3}",
            from, to, dir == 0 ? "activations" : "gradients", i + 1));
  }
  for (auto &[key, received] : recvs)
    if (!sends.count(key) && !received.empty())
      return error(
          llvm::formatv("pipeline rank {0} receives {1} from rank "
                        "{2}, which never sends it",
                        std::get<1>(key),
                        transfer(received.front().first,
                                 std::get<2>(key) == 0 ? "RECV_F" : "RECV_B",
                                 received.front().second),
                        std::get<0>(key)));
  if (llvm::Expected<ScheduleTimeline> t = simulateSchedule(s); !t)
    return t.takeError();
  return s;
}
