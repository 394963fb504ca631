//===- KernelProfile.h - per-kernel time of the CPU target ------*- C++ -*-===//
//
// TITAN_KERNEL_PROFILE=1 makes every titan_rt_* entry of the CPU kernel
// library time itself; at exit each process prints, to stderr, the share of
// kernel time by kernel and element type (calls, total ms, percent), the
// table a step's profile starts from, then each generated kernel's
// bandwidth beside a parallel copy of the same size measured in the same
// run. The same timer records each call as
// a span of the profiler trace while a traced step runs (trace::recording;
// named <kernel>_<dtype>, with the titan op path of titan_rt_op). Both off,
// the cost is two predictable branches per call.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_KERNELPROFILE_H
#define TITANRT_KERNELPROFILE_H

#include "Trace.h"

#include "titan/Contract/Dtype.h"

#include <chrono>
#include <cstdint>

namespace titanrt::profile {

/// The kernels of KernelCatalog.def, then the special ones.
enum KernelId : int {
#define TITAN_KERNEL_Kernel(name, impl) kKernel_##name,
#include "titan/Contract/KernelCatalog.def"
  kKernel_cast,
  kKernel_shard_offset,
  kNumKernels
};

/// Whether TITAN_KERNEL_PROFILE was set to a non-zero value at load.
bool enabled();
/// Adds one call to the profile (when enabled()) and, while a traced step
/// runs, its span to the trace.
void record(KernelId kernel, titan::Dtype type,
            std::chrono::steady_clock::time_point begin,
            std::chrono::steady_clock::time_point end);

/// Adds one call of the generated kernel `name`, which moved `bytes`, to
/// the profile (when enabled()) and, while a traced step runs, its span
/// (named "generated", with the bytes it moved) to the trace.
void recordGenerated(const char *name, int64_t bytes,
                     std::chrono::steady_clock::time_point begin,
                     std::chrono::steady_clock::time_point end);

/// Calls `record(begin, end)` with the scope's start and end times when
/// profiling or tracing is on (a kernel call's `record` or
/// `recordGenerated`); off, two predictable branches.
template <typename Record> class ScopedTimer {
public:
  explicit ScopedTimer(Record record)
      : record(record), on(enabled() || trace::recording()) {
    if (on)
      begin = std::chrono::steady_clock::now();
  }
  ~ScopedTimer() {
    if (on)
      record(begin, std::chrono::steady_clock::now());
  }

private:
  Record record;
  bool on;
  std::chrono::steady_clock::time_point begin;
};
template <typename Record> ScopedTimer(Record) -> ScopedTimer<Record>;

} // namespace titanrt::profile

#endif // TITANRT_KERNELPROFILE_H
