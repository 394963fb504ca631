//===- Trace.cpp - Chrome/Perfetto traces of training steps ---------------===//

#include "Trace.h"

#include "Error.h"

#include "titan/Contract/Manifest.h"

#include "llvm/ADT/STLExtras.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

using namespace titanrt;

namespace {
std::mutex recorderMutex;
std::vector<trace::Span> recorded;
std::vector<trace::DeviceSpan> deviceRecorded;
} // namespace

void trace::setRecording(bool on) {
  std::lock_guard<std::mutex> lock(recorderMutex);
  if (on)
    recorded.clear();
  recordingFlag.store(on, std::memory_order_relaxed);
}

void trace::record(Span span) {
  if (!recording())
    return;
  std::lock_guard<std::mutex> lock(recorderMutex);
  recorded.push_back(std::move(span));
}

void trace::collective(const char *collective, unsigned axisMask, int64_t bytes,
                       double issued, double completed) {
  if (!recording())
    return; // before building the span's name
  record({collective, "collective", issued, completed,
          communicationTrack(axisMask), bytes, ""});
}

void trace::wait(const char *collective, unsigned axisMask, int64_t bytes,
                 double begin, double end) {
  if (!recording())
    return;
  record({std::string("wait ") + collective, "wait", begin, end, kComputeTrack,
          bytes, ""});
}

trace::ProfilerAction trace::profilerAction(int64_t stepIndex,
                                            int64_t profileFreq, int64_t warmup,
                                            int64_t active) {
  // torch/profiler/profiler.py's schedule_fn (skip_first = 0, repeat = 0).
  int64_t wait = profileFreq - (warmup + active);
  int64_t m = stepIndex % profileFreq;
  if (m < wait)
    return ProfilerAction::None;
  if (m < wait + warmup)
    return ProfilerAction::Warmup;
  return m < profileFreq - 1 ? ProfilerAction::Record
                             : ProfilerAction::RecordAndSave;
}

std::string trace::trackName(int64_t track) {
  if (track == kComputeTrack)
    return "compute";
  if (track < communicationTrack(0))
    return "track " + std::to_string(track);
  unsigned mask = unsigned(track - communicationTrack(0));
  std::string name = "comm";
  const char *separator = " ";
  for (int a = 0; a < titan::manifest::kNumAxes; ++a)
    if (mask & (1u << a)) {
      name += separator;
      name += titan::manifest::meshAxisName(titan::manifest::MeshAxis(a));
      separator = ", ";
    }
  return name;
}

void trace::setDeviceTiming(bool on) {
  deviceTimingFlag.store(on, std::memory_order_relaxed);
}

void trace::recordDevice(DeviceSpan span) {
  std::lock_guard<std::mutex> lock(recorderMutex);
  deviceRecorded.push_back(std::move(span));
}

std::vector<trace::DeviceSpan> trace::takeDevice() {
  std::lock_guard<std::mutex> lock(recorderMutex);
  return std::exchange(deviceRecorded, {});
}

std::vector<trace::Span> trace::take() {
  std::lock_guard<std::mutex> lock(recorderMutex);
  return std::exchange(recorded, {});
}

double StepTrace::now() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void StepTrace::add(std::string name, const char *category, double begin,
                    double end) {
  spans.push_back({std::move(name), category, begin, end});
}

void StepTrace::write(const std::string &folder, int64_t step, int64_t rank) {
  llvm::SmallString<256> dir(folder);
  llvm::sys::path::append(dir, "iteration_" + std::to_string(step));
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    fatal("cannot create the trace folder '" + dir.str().str() +
          "': " + ec.message());
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "rank" + std::to_string(rank) + "_trace.json");
  for (trace::Span &s : trace::take())
    spans.push_back(std::move(s));
  // Chrome's JSON nests complete events of one track by time, the enclosing
  // one first: sorted so, a file reads the same way in every viewer, and
  // the same spans always write the same file.
  llvm::stable_sort(spans, [](const trace::Span &a, const trace::Span &b) {
    return std::make_tuple(a.track, a.begin, b.end) <
           std::make_tuple(b.track, b.begin, a.end);
  });
  // A track's spans must nest. Collectives in flight together overlap
  // without nesting (one issued later may complete later), so a span that
  // would cross one still open on its lane goes to the next lane: tid
  // track + kLaneStride x lane, named "<track> #<lane + 1>".
  constexpr int64_t kLaneStride = 1000;
  std::vector<int64_t> tids(spans.size());
  // Per track, per lane: the ends of the spans open at the current start.
  std::map<int64_t, std::vector<std::vector<double>>> lanes;
  lanes[trace::kComputeTrack].emplace_back();
  for (size_t i = 0; i < spans.size(); ++i) {
    const trace::Span &s = spans[i];
    std::vector<std::vector<double>> &trackLanes = lanes[s.track];
    size_t lane = 0;
    for (;; ++lane) {
      if (lane == trackLanes.size())
        trackLanes.emplace_back();
      std::vector<double> &open = trackLanes[lane];
      while (!open.empty() && open.back() <= s.begin)
        open.pop_back();
      if (open.empty() || s.end <= open.back()) {
        open.push_back(s.end);
        break;
      }
    }
    tids[i] = s.track + kLaneStride * int64_t(lane);
  }
  llvm::json::Array events;
  // Metadata events name the process and its tracks (Perfetto and
  // chrome://tracing show them instead of the numbers).
  auto metadata = [&](const char *name, int64_t tid, llvm::json::Value arg,
                      const char *argName) {
    llvm::json::Object event{{"name", name},
                             {"ph", "M"},
                             {"pid", rank},
                             {"tid", tid},
                             {"cat", "__metadata"}};
    event["args"] = llvm::json::Object{{argName, std::move(arg)}};
    events.push_back(std::move(event));
  };
  metadata("process_name", 0, "rank " + std::to_string(rank), "name");
  metadata("process_sort_index", 0, rank, "sort_index");
  for (const auto &[track, trackLanes] : lanes)
    for (size_t lane = 0; lane < trackLanes.size(); ++lane) {
      int64_t tid = track + kLaneStride * int64_t(lane);
      metadata("thread_name", tid,
               trace::trackName(track) +
                   (lane ? " #" + std::to_string(lane + 1) : ""),
               "name");
      metadata("thread_sort_index", tid, track * 100 + int64_t(lane),
               "sort_index");
    }
  for (size_t i = 0; i < spans.size(); ++i) {
    const trace::Span &s = spans[i];
    llvm::json::Object event{
        {"name", s.name},        {"cat", s.category}, {"ph", "X"},
        {"pid", rank},           {"tid", tids[i]},    {"ts", s.begin},
        {"dur", s.end - s.begin}};
    llvm::json::Object args;
    if (s.bytes >= 0)
      args["bytes"] = s.bytes;
    if (!s.site.empty())
      args["op"] = s.site;
    if (!args.empty())
      event["args"] = std::move(args);
    events.push_back(std::move(event));
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    fatal("cannot write '" + path.str().str() + "': " + ec.message());
  os << llvm::json::Value(llvm::json::Object{{"traceEvents", std::move(events)},
                                             {"displayTimeUnit", "ms"}});
  os.close();
  if (os.has_error())
    fatal("cannot write '" + path.str().str() + "'");
  spans.clear();
}
