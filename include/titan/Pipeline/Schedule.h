//===- Schedule.h - pipeline schedules as per-rank action lists -*- C++ -*-===//
//
// A pipeline schedule is, for every pipeline rank, the order in which it
// runs its stages' forward (F) and backward (B) passes over the
// microbatches. This file builds the action lists of the schedules whose
// order is fixed by the stage layout alone (GPipe, 1F1B, Interleaved1F1B,
// LoopedBFS), checks any list (every dependency met, no rank waiting
// forever), and simulates it with per-action costs to give its length and
// bubble, beside the textbook bubble formula. The stage-cut pass and the
// runtime of issue 11 will execute these lists; the zero-bubble and V
// schedules (I/W split) come with that pass.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PIPELINE_SCHEDULE_H
#define TITAN_PIPELINE_SCHEDULE_H

#include "titan/Model/PipelineStages.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace titan {

struct PipelineAction {
  enum Kind { Forward, Backward } kind;
  int64_t stage, microbatch;
  /// TorchTitan's CSV notation: "2F0" (stage 2, forward, microbatch 0).
  std::string str() const;
  bool operator==(const PipelineAction &o) const {
    return kind == o.kind && stage == o.stage && microbatch == o.microbatch;
  }
};

struct PipelineSchedule {
  std::string name;
  int64_t ranks = 1, stages = 1, microbatches = 1;
  /// The stages each rank holds (PipelinePlan::stagesOfRank).
  std::vector<std::vector<int64_t>> stagesOfRank;
  /// Each rank's actions, in the order it runs them.
  std::vector<std::vector<PipelineAction>> actions;
};

/// The action lists of `schedule` for `plan` and `microbatches`; an error
/// names the keys when the combination cannot run (for instance
/// Interleaved1F1B needs a multiple of the pipeline degree in
/// microbatches), or the schedules not built yet.
llvm::Expected<PipelineSchedule> buildSchedule(llvm::StringRef schedule,
                                               const PipelinePlan &plan,
                                               int64_t microbatches);

/// The simulated run: each rank runs its actions in order, each as soon as
/// its inputs exist (F of stage s after F of s - 1 on the same microbatch;
/// B of s after B of s + 1, and after F of s), transfers free.
struct ScheduleTimeline {
  /// Start time of each action, per rank, in list order.
  std::vector<std::vector<double>> start;
  double makespan = 0;
  /// The fraction of rank time idle: 1 - busy / (ranks x makespan).
  double bubble = 0;
};

/// Checks and simulates `s` with the costs of one forward and one backward
/// of a stage (the unit costs F = 1, B = 2 by default); an error names the
/// first action that can never run (a deadlock or a missing action) or a
/// duplicated or foreign one.
llvm::Expected<ScheduleTimeline> simulateSchedule(const PipelineSchedule &s,
                                                  double forwardCost = 1,
                                                  double backwardCost = 2);

/// Draws `timeline` of `s` as an SVG: one row per rank, each action a box
/// at its simulated start (forward and backward in two colors, each
/// stage's shade its own, the microbatch number inside), the bubble in the
/// title.
void writeScheduleSVG(const PipelineSchedule &s,
                      const ScheduleTimeline &timeline, double forwardCost,
                      double backwardCost, llvm::StringRef title,
                      llvm::raw_ostream &os);

/// The textbook bubble of a schedule: (p - 1) / (m + p - 1) for GPipe and
/// 1F1B (Narayanan et al. 2021, eq. 1), (p - 1) / (v m + p - 1) for the
/// interleaved ones with v stages per rank (ibid., section 2.2), with p
/// ranks and m microbatches.
double textbookBubble(llvm::StringRef schedule, int64_t ranks,
                      int64_t stagesPerRank, int64_t microbatches);

} // namespace titan

#endif // TITAN_PIPELINE_SCHEDULE_H
