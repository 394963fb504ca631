//===- ScheduleCsvFuzzer.cpp - a pipeline schedule CSV --------------------===//
//
// titan-schedule-csv-fuzzer: the input is a schedule in TorchTitan's CSV
// format (parallelism.pipeline_parallel_schedule_csv; seed: TorchTitan's
// custom_schedule.csv), read for 2 pipeline ranks of 2 stages each and 8
// microbatches (that file's layout), then checked by simulation as
// titan-compile checks it.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "titan/Model/PipelineStages.h"
#include "titan/Pipeline/Schedule.h"

#include <cstdlib>

using namespace titan;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const PipelinePlan plan = [] {
    llvm::Expected<PipelinePlan> p = planPipelineStages(
        /*layers=*/8, /*ranks=*/2, "PipelineScheduleMulti",
        /*layersPerStage=*/std::nullopt, 0, 0);
    if (!p)
      std::abort();
    return std::move(*p);
  }();
  llvm::Expected<PipelineSchedule> schedule =
      parseScheduleCSV(fuzz::asText(data, size), plan, /*microbatches=*/8);
  if (!schedule) {
    fuzz::expectedRefusal(schedule.takeError());
    return 0;
  }
  llvm::Expected<ScheduleTimeline> timeline = simulateSchedule(*schedule);
  if (!timeline)
    fuzz::expectedRefusal(timeline.takeError());
  return 0;
}
