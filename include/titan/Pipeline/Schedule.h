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

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace titan {

struct PipelineAction {
  /// F, the whole backward B, or B split into the input gradient I and the
  /// weight gradient W (zero-bubble schedules).
  enum Kind { Forward, Backward, BackwardInput, BackwardWeight } kind;
  int64_t stage, microbatch;
  /// TorchTitan's CSV notation: "2F0" (stage 2, forward, microbatch 0),
  /// "1B3", "0I2", "0W2".
  std::string str() const;
  /// The notation's letter: F, B, I or W.
  char letter() const;
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
  /// Forward actions only (validation's schedule): no microbatch has a
  /// backward, and the lowered lists have no UNSHARD or REDUCE_GRAD.
  bool forwardOnly = false;
};

/// Whether `s` runs some backward as separate input- and weight-gradient
/// actions (its stages need the I/W split of dist-pipeline-phases).
bool splitsBackward(const PipelineSchedule &s);

/// Parses a schedule in TorchTitan's CSV format
/// (parallelism.pipeline_parallel_schedule_csv: row r is rank r's actions,
/// "<stage><F|B|I|W><microbatch>" per cell; empty cells are idle steps).
/// The transfer and FSDP actions a lowered TorchTitan schedule also lists
/// (SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD, REDUCE_GRAD) are
/// skipped: titan derives them. An error names the row and cell of a
/// malformed action; simulateSchedule then checks the list.
llvm::Expected<PipelineSchedule> parseScheduleCSV(llvm::StringRef text,
                                                  const PipelinePlan &plan,
                                                  int64_t microbatches);

/// parseScheduleCSV of the file `path`; a missing or irregular file is an
/// error naming the key (as TorchTitan's build_pipeline_schedule).
llvm::Expected<PipelineSchedule> loadScheduleCSV(llvm::StringRef path,
                                                 const PipelinePlan &plan,
                                                 int64_t microbatches);

/// The action lists of `schedule` for `plan` and `microbatches`; an error
/// names the keys when the combination cannot run (for instance
/// Interleaved1F1B needs a multiple of the pipeline degree in
/// microbatches), or the schedules not built yet.
llvm::Expected<PipelineSchedule> buildSchedule(llvm::StringRef schedule,
                                               const PipelinePlan &plan,
                                               int64_t microbatches);

/// The forward-only schedule of `training`'s stage layout and microbatches
/// (validation under pipeline parallelism, TorchTitan's
/// `pp_schedule.eval`): every rank runs its stages' forwards microbatch by
/// microbatch, each microbatch through its stages in stage order. A
/// forward then waits only for forwards earlier in that order on every
/// rank, so the list cannot deadlock, and a stage's boundary tensors are
/// consumed (sent, or read by the next stage on the same rank) before its
/// next forward: one buffer per boundary tensor suffices.
PipelineSchedule forwardOnlySchedule(const PipelineSchedule &training);

/// The simulated run: each rank runs its actions in order, each as soon as
/// its inputs exist (F of stage s after F of s - 1 on the same microbatch;
/// B or I of s after B or I of s + 1, and after F of s; W after I),
/// transfers free.
struct ScheduleTimeline {
  /// Start time of each action, per rank, in list order.
  std::vector<std::vector<double>> start;
  double makespan = 0;
  /// The fraction of rank time idle: 1 - busy / (ranks x makespan).
  double bubble = 0;
};

/// What each action costs in a simulation: per stage, its F, B, I and W
/// (indexed by PipelineAction::Kind), and the time a stage's output (or
/// input gradient) takes to reach the next (or previous) stage when that
/// stage is on another rank.
struct ScheduleCosts {
  std::vector<std::array<double, 4>> perStage;
  double transferSeconds = 0;

  /// The same F and B on every one of `stages` stages, I and W half a B
  /// each, transfers free.
  static ScheduleCosts uniform(int64_t stages, double forwardCost,
                               double backwardCost);
  double cost(const PipelineAction &a) const {
    return perStage[size_t(a.stage)][size_t(a.kind)];
  }
};

/// Checks and simulates `s` with `costs` (a stage's action may start once
/// its inputs exist; an input from another rank arrives transferSeconds
/// after the action producing it ends); an error names the first action
/// that can never run (a deadlock or a missing action) or a duplicated or
/// foreign one, or a microbatch whose backward is neither one B nor one I
/// and one W, or costs that do not cover every stage.
llvm::Expected<ScheduleTimeline> simulateSchedule(const PipelineSchedule &s,
                                                  const ScheduleCosts &costs);

/// simulateSchedule with the costs of one forward and one backward of a
/// stage (the unit costs F = 1, B = 2 by default; I and W cost half a B
/// each), transfers free.
llvm::Expected<ScheduleTimeline> simulateSchedule(const PipelineSchedule &s,
                                                  double forwardCost = 1,
                                                  double backwardCost = 2);

/// `s` with its transfers, in TorchTitan's lowered notation, one list per
/// rank: first each local stage's UNSHARD ("1UNSHARD": what it computes
/// from its parameters once per step, FSDP's gathers among them), and
/// after its last B or W its REDUCE_GRAD (its gradients' once-per-step
/// reduce-scatter); before
/// each F of a stage whose previous stage is on another rank
/// its RECV_F ("2RECV_F0"), after it SEND_F when the next stage is on
/// another rank; likewise RECV_B before and SEND_B after each B or I. A
/// rank blocks at a RECV until the peer's SEND, which follows the action
/// producing the tensor, so a list the simulation runs cannot deadlock on
/// its transfers either.
std::vector<std::vector<std::string>> lowerSchedule(const PipelineSchedule &s);

/// A transfer of a lowered list: "2SEND_F0" sends stage 2's activations
/// of microbatch 0, "1RECV_B3" receives stage 1's output gradient of
/// microbatch 3.
struct PipelineTransfer {
  bool send;
  /// 0: activations (SEND_F, RECV_F), 1: gradients (SEND_B, RECV_B).
  int direction;
  int64_t stage, microbatch;
};

/// The transfer `text` names; none for other actions (F, B, I, W, UNSHARD,
/// REDUCE_GRAD) and for text that is not an action.
std::optional<PipelineTransfer> parsePipelineTransfer(llvm::StringRef text);

/// Checks a lowered schedule (`rows`, one list per rank) for the stage
/// layout and microbatches of `shape`: its compute actions as
/// simulateSchedule does, and its transfers: every action that needs a
/// remote tensor has its RECV before it, every produced tensor a remote
/// stage reads its SEND after it, each SEND its RECV on the peer's rank in
/// the same order between each pair of ranks, and no stray transfer.
/// Returns the compute-only schedule.
llvm::Expected<PipelineSchedule>
verifyLoweredSchedule(const std::vector<std::vector<std::string>> &rows,
                      const PipelineSchedule &shape);

/// What action `a` costs in the simulation: `forwardCost` for F,
/// `backwardCost` for B, half of it for I and for W.
double actionCost(const PipelineAction &a, double forwardCost,
                  double backwardCost);

/// Draws `timeline` of `s` as an SVG: one row per rank, each action a box
/// at its simulated start (forward and backward in two colors, each
/// stage's shade its own, the microbatch number inside), the bubble in the
/// title.
void writeScheduleSVG(const PipelineSchedule &s,
                      const ScheduleTimeline &timeline, double forwardCost,
                      double backwardCost, llvm::StringRef title,
                      llvm::raw_ostream &os);

/// The textbook bubble of a schedule with p ranks, v stages per rank and m
/// microbatches, in the unit costs F = I = W = 1 per stage (B = 2):
/// (p - 1) / (m + p - 1) for GPipe and 1F1B (Narayanan et al. 2021, eq. 1),
/// (p - 1) / (v m + p - 1) for Interleaved1F1B and LoopedBFS (ibid.,
/// section 2.2); for InterleavedZeroBubble ZB-H1's (p - 1)(T_F + T_B -
/// T_W) idle time per rank (Qi et al. 2024, "Zero Bubble Pipeline
/// Parallelism", section 3.1) over v chunks, (p - 1) / (3 v m + p - 1); 0
/// for ZBVZeroBubble (ibid., section 6: zero bubble when T_F = T_B = T_W,
/// m >= 2p - 1). std::nullopt where no formula is stated for these costs
/// (DualPipeV's assumes a forward and a backward overlapped in one slot).
std::optional<double> textbookBubble(llvm::StringRef schedule, int64_t ranks,
                                     int64_t stagesPerRank,
                                     int64_t microbatches);

} // namespace titan

#endif // TITAN_PIPELINE_SCHEDULE_H
