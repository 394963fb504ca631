//===- TestSchedules.h - schedules of titan's stage plan, for tests -*- C++
//-*-===//
//
// The schedule `schedule` builds for `layers` layers on `ranks` pipeline
// ranks (TorchTitan's stage split, planPipelineStages) with `microbatches`
// microbatches: what ScheduleTest, SendRingsTest and PeerChannelsTest
// run. A plan or schedule that cannot be built fails the test, which then
// gets an empty schedule (no actions) rather than a crash.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_UNITTESTS_PIPELINE_TESTSCHEDULES_H
#define TITAN_UNITTESTS_PIPELINE_TESTSCHEDULES_H

#include "titan/Model/PipelineStages.h"
#include "titan/Pipeline/Schedule.h"

#include "gtest/gtest.h"

namespace titan::test {

inline PipelineSchedule buildPlanned(llvm::StringRef schedule, int64_t layers,
                                     int64_t ranks, int64_t microbatches) {
  llvm::Expected<PipelinePlan> plan =
      planPipelineStages(layers, ranks, schedule, std::nullopt, 1, 1);
  if (!plan) {
    ADD_FAILURE() << schedule.str() << ": " << llvm::toString(plan.takeError());
    return PipelineSchedule();
  }
  llvm::Expected<PipelineSchedule> s =
      buildSchedule(schedule, *plan, microbatches);
  if (!s) {
    ADD_FAILURE() << schedule.str() << ": " << llvm::toString(s.takeError());
    return PipelineSchedule();
  }
  return *s;
}

} // namespace titan::test

#endif // TITAN_UNITTESTS_PIPELINE_TESTSCHEDULES_H
