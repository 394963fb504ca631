//===- RingSchedule.h - the collective matmuls' ring, step by step -*- C++
//-*-===//
//
// Which shard async tensor parallel's ring (AsyncTensorParallel.h) works on
// at each step and which of its two workspace buffers each step fills, for
// both targets: the CPU kernels (AsyncTensorParallel.cpp) and the CUDA
// entries (runtime/cuda/KernelABI.cpp) follow the same schedule. Every
// shift sends to the next rank and receives from the previous one
// (Communicator::sendRecv with shift +1). Pure functions, so the unit tests
// check the schedule without a communicator
// (unittests/Runtime/RingScheduleTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_RINGSCHEDULE_H
#define TITANRT_RINGSCHEDULE_H

#include <cstdint>

namespace titanrt::ring {

/// At most this many GEMMs in one collective matmul (the entries decode
/// them into fixed arrays).
constexpr int64_t kMaxGemms = 16;

/// Not one of the two workspace buffers: the kernel's input (all-gather)
/// or its result (reduce-scatter).
constexpr int kOutside = -1;

/// `a` mod `n` in [0, n), for negative `a` too.
constexpr int64_t wrap(int64_t a, int64_t n) { return (a % n + n) % n; }

/// The mesh axis an axis mask names: its single set bit; -1 when it names
/// none or several (a ring runs over one axis).
constexpr int axisOfMask(unsigned mask) {
  if (mask == 0 || (mask & (mask - 1)) != 0)
    return -1;
  int axis = 0;
  while (!(mask & 1u)) {
    mask >>= 1;
    ++axis;
  }
  return axis;
}

/// Step `step` of dist.all_gather_linear's ring on rank `index` of `size`.
struct AllGatherStep {
  /// The shard held, whose GEMMs run now: the one rank (index - step)
  /// started with (each step passes every shard one rank on).
  int64_t chunk;
  /// Where it is: the input (kOutside) on the first step, else the buffer
  /// the previous step received it into.
  int held;
  /// The buffer the next shard arrives in while the GEMMs run (it is sent
  /// from `held`, never the same buffer); kOutside on the last step.
  int incoming;
};
constexpr AllGatherStep allGatherStep(int64_t index, int64_t size,
                                      int64_t step) {
  return {wrap(index - step, size), step == 0 ? kOutside : int((step - 1) % 2),
          step + 1 < size ? int(step % 2) : kOutside};
}

/// Step `step` of dist.linear_reduce_scatter's ring on rank `index` of
/// `size`.
struct ReduceScatterStep {
  /// The shard whose partial sums this rank adds its term to: rank
  /// (index - step - 1)'s, so the last step's is this rank's own.
  int64_t chunk;
  /// Where the sums go: one buffer, not the one the previous step's sums
  /// are still being sent from; the result (kOutside) on the last step.
  int partial;
  /// Whether the previous rank's sums for `chunk` (received during this
  /// step) are added in: every step but the first.
  bool addsReceived;
  /// Whether the sums are then sent on: every step but the last.
  bool sends;
};
constexpr ReduceScatterStep reduceScatterStep(int64_t index, int64_t size,
                                              int64_t step) {
  bool last = step + 1 == size;
  return {wrap(index - step - 1, size), last ? kOutside : int(step % 2),
          step > 0, !last};
}

} // namespace titanrt::ring

#endif // TITANRT_RINGSCHEDULE_H
