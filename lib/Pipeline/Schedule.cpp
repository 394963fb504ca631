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
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>

using namespace titan;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

std::string PipelineAction::str() const {
  return std::to_string(stage) + (kind == Forward ? "F" : "B") +
         std::to_string(microbatch);
}

namespace {
using Actions = std::vector<PipelineAction>;

PipelineAction forward(int64_t stage, int64_t mb) {
  return {PipelineAction::Forward, stage, mb};
}
PipelineAction backward(int64_t stage, int64_t mb) {
  return {PipelineAction::Backward, stage, mb};
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
    } else {
      return error("parallelism.pipeline_parallel_schedule '" + schedule +
                   "': its action lists (the zero-bubble and V schedules "
                   "split the backward into input and weight gradients) are "
                   "not built yet");
    }
  }
  return s;
}

llvm::Expected<ScheduleTimeline>
titan::simulateSchedule(const PipelineSchedule &s, double forwardCost,
                        double backwardCost) {
  // Who owns each stage, and each action's finish time once simulated.
  std::vector<int64_t> owner(size_t(s.stages), -1);
  for (auto [r, stages] : llvm::enumerate(s.stagesOfRank))
    for (int64_t st : stages)
      owner[size_t(st)] = int64_t(r);
  auto key = [&](PipelineAction::Kind kind, int64_t stage, int64_t mb) {
    return (mb * s.stages + stage) * 2 +
           (kind == PipelineAction::Forward ? 0 : 1);
  };
  std::map<int64_t, double> finish;
  std::map<int64_t, int64_t> seen;
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
    }
  if (int64_t(seen.size()) != 2 * s.stages * s.microbatches)
    return error(llvm::formatv("the schedule runs {0} of the {1} forward and "
                               "backward actions",
                               seen.size(), 2 * s.stages * s.microbatches));

  ScheduleTimeline t;
  size_t ranks = s.actions.size();
  t.start.resize(ranks);
  std::vector<size_t> next(ranks, 0);
  std::vector<double> free(ranks, 0), busy(ranks, 0);
  size_t done = 0, total = 2 * size_t(s.stages * s.microbatches);
  while (done < total) {
    bool progress = false;
    for (size_t r = 0; r < ranks; ++r) {
      while (next[r] < s.actions[r].size()) {
        const PipelineAction &a = s.actions[r][next[r]];
        // Inputs: the previous stage's forward, or the next stage's
        // backward and this stage's forward.
        std::vector<int64_t> deps;
        if (a.kind == PipelineAction::Forward) {
          if (a.stage > 0)
            deps.push_back(
                key(PipelineAction::Forward, a.stage - 1, a.microbatch));
        } else {
          deps.push_back(key(PipelineAction::Forward, a.stage, a.microbatch));
          if (a.stage + 1 < s.stages)
            deps.push_back(
                key(PipelineAction::Backward, a.stage + 1, a.microbatch));
        }
        double ready = free[r];
        bool met = true;
        for (int64_t d : deps) {
          auto it = finish.find(d);
          if (it == finish.end()) {
            met = false;
            break;
          }
          ready = std::max(ready, it->second);
        }
        if (!met)
          break;
        double cost =
            a.kind == PipelineAction::Forward ? forwardCost : backwardCost;
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

double titan::textbookBubble(llvm::StringRef schedule, int64_t p, int64_t v,
                             int64_t m) {
  if (schedule == "GPipe" || schedule == "1F1B")
    return double(p - 1) / double(m + p - 1);
  return double(p - 1) / double(v * m + p - 1);
}
