//===- Trace.h - Chrome/Perfetto traces of training steps -------*- C++ -*-===//
//
// TorchTitan's [profiling] writes a PyTorch profiler trace every
// profile_freq steps; titan writes the same kind of file (Chrome trace
// JSON, which Perfetto and chrome://tracing read) with the spans the
// runtime knows: the compiled steps and, under pipeline parallelism, every
// schedule action and every transfer wait, on the host's monotonic clock
// (one clock for every process of a machine, so the ranks' files line up).
//
// Below the step, the kernel library and the communicators record spans
// through the process-wide recorder (namespace trace): one track per thread
// or stream (the compute thread, one per mesh-axis group's communication),
// recorded only while a traced step runs, from any thread.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_TRACE_H
#define TITANRT_LIB_TRACE_H

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace titanrt {

namespace trace {

/// Where a span is drawn: the compute thread (or stream), or the
/// communication of one mesh-axis group (its thread on the CPU, its stream
/// on a GPU).
constexpr int64_t kComputeTrack = 0;
/// The track of the communication over the axes of `axisMask`.
inline int64_t communicationTrack(unsigned axisMask) {
  return 100 + int64_t(axisMask);
}

struct Span {
  std::string name;
  const char *category; ///< "kernel", "collective", "wait", "step", ...
  double begin, end;    ///< microseconds on StepTrace::now()'s clock
  int64_t track = kComputeTrack;
  int64_t bytes = -1; ///< a collective's payload; -1: none
  std::string site;   ///< the titan op path of a kernel, or ""
};

/// Whether spans are being recorded: one relaxed load, so that the kernel
/// library's and the communicators' hooks cost a branch when off.
inline std::atomic<bool> recordingFlag{false};
inline bool recording() {
  return recordingFlag.load(std::memory_order_relaxed);
}
/// Starts (clearing what was recorded) or stops recording; what was
/// recorded stays for take().
void setRecording(bool on);
/// Adds a span (thread-safe); ignored unless recording.
void record(Span span);
/// A collective from its issue to its completion, on its group's track.
void collective(const char *collective, unsigned axisMask, int64_t bytes,
                double issued, double completed);
/// The time the compute thread blocked in a collective's wait: what the
/// collective's communication left exposed.
void wait(const char *collective, unsigned axisMask, int64_t bytes,
          double begin, double end);
/// A span a GPU target times on the device: a pair of timing events
/// (cudaEvent_t, opaque here) recorded around its work on a stream. Host
/// timers would measure the launch, not the work; the device resolves the
/// pairs after the step (CudaDevice: cudaEventElapsedTime from an event
/// whose host time it knows) and destroys the events.
struct DeviceSpan {
  Span span; ///< begin and end are filled in when resolved
  void *beginEvent, *endEvent;
};
/// Whether the device times spans with events now: set by the device for
/// a traced step it runs uncaptured (events cannot be timed inside a CUDA
/// graph).
inline std::atomic<bool> deviceTimingFlag{false};
inline bool deviceTiming() {
  return deviceTimingFlag.load(std::memory_order_relaxed);
}
void setDeviceTiming(bool on);
/// Adds a device span (thread-safe); the events are the caller's until
/// takeDevice() hands them to the device.
void recordDevice(DeviceSpan span);
std::vector<DeviceSpan> takeDevice();

/// A track's name in the trace: "compute", or "comm " and the mesh axes of
/// a communication track ("comm dp_shard", "comm dp_shard, tp").
std::string trackName(int64_t track);
/// torch.profiler.schedule(wait = profileFreq - (warmup + active), warmup,
/// active)'s action for the 0-based step `stepIndex`: the last `active`
/// steps of every `profileFreq` are recorded, the window's last one saves.
enum class ProfilerAction { None, Warmup, Record, RecordAndSave };
ProfilerAction profilerAction(int64_t stepIndex, int64_t profileFreq,
                              int64_t warmup, int64_t active);
/// Takes the spans recorded so far.
std::vector<Span> take();

} // namespace trace

class StepTrace {
public:
  /// Microseconds on the monotonic clock.
  static double now();

  /// Adds a complete span; `category` groups them (F, B, I, W, transfer,
  /// step).
  void add(std::string name, const char *category, double begin, double end);

  /// Writes <folder>/iteration_<step>/rank<rank>_trace.json (TorchTitan's
  /// names), with the recorder's spans, and clears the spans; a failure to
  /// write is fatal.
  void write(const std::string &folder, int64_t step, int64_t rank);

private:
  std::vector<trace::Span> spans;
};

} // namespace titanrt

#endif // TITANRT_LIB_TRACE_H
