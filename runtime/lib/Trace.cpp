//===- Trace.cpp - Chrome/Perfetto traces of training steps ---------------===//

#include "Trace.h"

#include "Error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <mutex>
#include <utility>

using namespace titanrt;

namespace {
std::mutex recorderMutex;
std::vector<trace::Span> recorded;
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

void trace::collective(const char *collective, unsigned axisMask,
                       int64_t bytes, double issued, double completed) {
  record({collective, "collective", issued, completed,
          communicationTrack(axisMask), bytes, ""});
}

void trace::wait(const char *collective, unsigned axisMask, int64_t bytes,
                 double begin, double end) {
  record({std::string("wait ") + collective, "wait", begin, end, kComputeTrack,
          bytes, ""});
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
  llvm::json::Array events;
  for (const trace::Span &s : spans) {
    llvm::json::Object event{{"name", s.name},   {"cat", s.category},
                             {"ph", "X"},        {"pid", rank},
                             {"tid", s.track},   {"ts", s.begin},
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
