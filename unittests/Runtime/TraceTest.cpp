//===- TraceTest.cpp - the profiler's schedule and trace files ------------===//
//
// The profiler's windows follow torch.profiler.schedule (TorchTitan v0.2.0's
// torchtitan/tools/profiling.py builds it with wait = profile_freq -
// (active + warmup)), and a trace file names its process and tracks and
// carries each span's op path and bytes, sorted so that spans nest.
//
//===----------------------------------------------------------------------===//

#include "Trace.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace titanrt;

namespace {

std::string actions(int64_t steps, int64_t freq, int64_t warmup,
                    int64_t active) {
  std::string out;
  for (int64_t i = 0; i < steps; ++i)
    switch (trace::profilerAction(i, freq, warmup, active)) {
    case trace::ProfilerAction::None:
      out += '.';
      break;
    case trace::ProfilerAction::Warmup:
      out += 'w';
      break;
    case trace::ProfilerAction::Record:
      out += 'r';
      break;
    case trace::ProfilerAction::RecordAndSave:
      out += 'S';
      break;
    }
  return out;
}

// torch/profiler/profiler.py's schedule: (step % (wait + warmup + active))
// < wait is NONE, < wait + warmup WARMUP, then RECORD, the window's last
// step RECORD_AND_SAVE.
TEST(TraceTest, ScheduleIsTorchProfilers) {
  // TorchTitan's defaults: profile_freq 10, warmup 3, active 1.
  EXPECT_EQ(actions(20, 10, 3, 1), "......wwwS......wwwS");
  EXPECT_EQ(actions(6, 2, 1, 1), "wSwSwS");
  EXPECT_EQ(actions(7, 3, 1, 2), "wrSwrSw");
  EXPECT_EQ(actions(5, 4, 0, 2), "..rS.");
  EXPECT_EQ(actions(3, 1, 0, 1), "SSS");
}

TEST(TraceTest, TrackNames) {
  EXPECT_EQ(trace::trackName(trace::kComputeTrack), "compute");
  EXPECT_EQ(trace::trackName(trace::communicationTrack(1u << 2)),
            "comm dp_shard");
  EXPECT_EQ(trace::trackName(trace::communicationTrack((1u << 2) | (1u << 4))),
            "comm dp_shard, tp");
}

TEST(TraceTest, WritesNamedTracksSortedSpans) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("titan-trace", dir));
  trace::setRecording(true);
  // Recorded out of order, from "threads" of the step.
  trace::record({"mul_f32", "kernel", 30, 35, trace::kComputeTrack, -1,
                 "layers.0.feed_forward"});
  trace::collective("all_gather", 1u << 2, 4096, 10, 25);
  // Issued before the first completes, completing after it: a second lane.
  trace::collective("reduce_scatter", 1u << 2, 2048, 12, 30);
  trace::wait("all_gather", 1u << 2, 4096, 20, 25);
  trace::record({"linear_f32", "kernel", 10, 20, trace::kComputeTrack, -1,
                 "layers.0.attention.wq"});
  trace::setRecording(false);
  trace::record({"ignored", "kernel", 0, 1}); // not recording
  StepTrace step;
  step.add("step 2", "step", 5, 40);
  step.write(dir.str().str(), 2, 3);

  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "iteration_2", "rank3_trace.json");
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(buffer)) << path.str().str();
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Array *events =
      json->getAsObject()->getArray("traceEvents");
  ASSERT_TRUE(events);

  std::vector<std::string> metadata, spans;
  for (const llvm::json::Value &v : *events) {
    const llvm::json::Object &e = *v.getAsObject();
    EXPECT_EQ(e.getInteger("pid"), 3);
    std::string ph = e.getString("ph")->str();
    const llvm::json::Object *args = e.getObject("args");
    if (ph == "M") {
      auto arg = args->get(args->getString("name") ? "name" : "sort_index");
      std::string value = arg->getAsString()
                              ? arg->getAsString()->str()
                              : std::to_string(*arg->getAsInteger());
      metadata.push_back(e.getString("name")->str() + " " +
                         std::to_string(*e.getInteger("tid")) + " " + value);
      continue;
    }
    ASSERT_EQ(ph, "X");
    std::string line = std::to_string(*e.getInteger("tid")) + " " +
                       e.getString("name")->str() + " " +
                       std::to_string(int(*e.getNumber("ts"))) + "+" +
                       std::to_string(int(*e.getNumber("dur")));
    if (args && args->getString("op"))
      line += " op=" + args->getString("op")->str();
    if (args && args->getInteger("bytes"))
      line += " bytes=" + std::to_string(*args->getInteger("bytes"));
    spans.push_back(line);
  }
  EXPECT_EQ(metadata, (std::vector<std::string>{
                          "process_name 0 rank 3",
                          "process_sort_index 0 3",
                          "thread_name 0 compute",
                          "thread_sort_index 0 0",
                          "thread_name 104 comm dp_shard",
                          "thread_sort_index 104 10400",
                          "thread_name 1104 comm dp_shard #2",
                          "thread_sort_index 1104 10401",
                      }));
  // Per track, by start; an enclosing span before what it holds.
  EXPECT_EQ(spans, (std::vector<std::string>{
                       "0 step 2 5+35",
                       "0 linear_f32 10+10 op=layers.0.attention.wq",
                       "0 wait all_gather 20+5 bytes=4096",
                       "0 mul_f32 30+5 op=layers.0.feed_forward",
                       "104 all_gather 10+15 bytes=4096",
                       "1104 reduce_scatter 12+18 bytes=2048",
                   }));
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
