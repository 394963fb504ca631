//===- Trace.cpp - Chrome/Perfetto traces of training steps ---------------===//

#include "Trace.h"

#include "Error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace titanrt;

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
  llvm::json::Array events;
  for (const Span &s : spans)
    events.push_back(llvm::json::Object{{"name", s.name},
                                        {"cat", s.category},
                                        {"ph", "X"},
                                        {"pid", rank},
                                        {"tid", 0},
                                        {"ts", s.begin},
                                        {"dur", s.end - s.begin}});
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
