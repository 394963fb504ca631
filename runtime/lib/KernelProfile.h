//===- KernelProfile.h - per-kernel time of the CPU target -------*- C++
//-*-===//
//
// TITAN_KERNEL_PROFILE=1 makes every titan_rt_* entry of the CPU kernel
// library time itself; at exit each process prints, to stderr, the share of
// kernel time by kernel and element type (calls, total ms, percent), the
// table a step's profile starts from. Unset, the cost is one predictable
// branch per call.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_KERNELPROFILE_H
#define TITANRT_KERNELPROFILE_H

#include <chrono>
#include <cstdint>

namespace titanrt::profile {

/// The kernels of KernelCatalog.def, then cast.
enum KernelId : int {
#define TITAN_KERNEL_Kernel(name, impl) kKernel_##name,
#include "titan/Kernel/KernelCatalog.def"
  kKernel_cast,
  kNumKernels
};

/// The element type an entry point's name ends with.
enum TypeId : int { kF32, kF64, kBF16, kF16, kNumTypes };

/// Whether TITAN_KERNEL_PROFILE was set to a non-zero value at load.
bool enabled();
void record(KernelId kernel, TypeId type, int64_t nanoseconds);

/// Times one kernel call when profiling is on.
class ScopedTimer {
public:
  ScopedTimer(KernelId kernel, TypeId type)
      : kernel(kernel), type(type), on(enabled()) {
    if (on)
      begin = std::chrono::steady_clock::now();
  }
  ~ScopedTimer() {
    if (on)
      record(kernel, type,
             std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now() - begin)
                 .count());
  }

private:
  KernelId kernel;
  TypeId type;
  bool on;
  std::chrono::steady_clock::time_point begin;
};

} // namespace titanrt::profile

#endif // TITANRT_KERNELPROFILE_H
