//===- Trace.h - Chrome/Perfetto traces of training steps -------*- C++ -*-===//
//
// TorchTitan's [profiling] writes a PyTorch profiler trace every
// profile_freq steps; titan writes the same kind of file (Chrome trace
// JSON, which Perfetto and chrome://tracing read) with the spans the
// runtime knows: the compiled steps and, under pipeline parallelism, every
// schedule action and every transfer wait, on the host's monotonic clock
// (one clock for every process of a machine, so the ranks' files line up).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_TRACE_H
#define TITANRT_LIB_TRACE_H

#include <cstdint>
#include <string>
#include <vector>

namespace titanrt {

class StepTrace {
public:
  /// Microseconds on the monotonic clock.
  static double now();

  /// Adds a complete span; `category` groups them (F, B, I, W, transfer,
  /// step).
  void add(std::string name, const char *category, double begin, double end);

  /// Writes <folder>/iteration_<step>/rank<rank>_trace.json (TorchTitan's
  /// names) and clears the spans; a failure to write is fatal.
  void write(const std::string &folder, int64_t step, int64_t rank);

private:
  struct Span {
    std::string name;
    const char *category;
    double begin, end;
  };
  std::vector<Span> spans;
};

} // namespace titanrt

#endif // TITANRT_LIB_TRACE_H
