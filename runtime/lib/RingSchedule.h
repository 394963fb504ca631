//===- RingSchedule.h - the collective matmuls' ring ------------*- C++ -*-===//
//
// How a collective matmul's call describes its ring (its ints, the tensor
// split around the ring's dimension), and which shard async tensor
// parallel's ring (AsyncTensorParallel.h) works on at each step and which of
// its two workspace buffers each step fills, for both targets: the CPU kernels
// (AsyncTensorParallel.cpp) and the CUDA entries (runtime/cuda/KernelABI.cpp)
// follow the same schedule. Every shift sends to the next rank and receives
// from the previous one (Communicator::sendRecv with shift +1). Pure functions
// but ringPlace (which asks the communicator for the rank's place), so the
// unit tests check the schedule without a communicator
// (unittests/Runtime/RingScheduleTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_RINGSCHEDULE_H
#define TITANRT_RINGSCHEDULE_H

#include "KernelCall.h"

#include <cstdint>
#include <string>

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

namespace titanrt {

/// The collective matmuls' ints {count, dim, grad_input, axis_mask}.
struct RingCall {
  int64_t count = 0, dim = 0;
  bool gradInput = false;
  unsigned axisMask = 0;
  /// The ring's mesh axis; -1 in a single-rank run (a ring of one).
  int axis = -1;
  /// Why the call cannot run; empty when it can.
  std::string error;
};
/// `ranked`: a communicator is active, so the mask must name one axis.
inline RingCall decodeRingCall(const char *kernel, const int64_t *ints,
                               bool ranked) {
  RingCall r;
  r.count = ints[0];
  r.dim = ints[1];
  r.gradInput = ints[2] != 0;
  r.axisMask = unsigned(ints[3]);
  if (r.count < 1 || r.count > ring::kMaxGemms) {
    r.error = std::string(kernel) + ": " + std::to_string(r.count) +
              " GEMMs (1 to " + std::to_string(ring::kMaxGemms) + ")";
    return r;
  }
  if (!ranked)
    return r;
  r.axis = ring::axisOfMask(r.axisMask);
  if (r.axis < 0)
    r.error = std::string(kernel) +
              ": the ring runs over one mesh axis, not axis mask " +
              std::to_string(r.axisMask);
  return r;
}

/// A ring tensor as [outer][rows][last] (AsyncTensorParallel.h): `outer`
/// the elements before the ring's dimension `dim`, `rows` the rest but the
/// last dimension.
struct RingLayout {
  int64_t outer = 1, rows = 1;
};
inline RingLayout ringLayout(abi::Shape shape, int64_t dim) {
  RingLayout l;
  for (int64_t d = 0; d + 1 < shape.rank; ++d)
    (d < dim ? l.outer : l.rows) *= shape.dim(d);
  return l;
}

/// The ring's place: this rank's index in the group, its size, and the
/// group's single mesh axis (its bit in axisMask). A null communicator
/// (a single-rank run) is a ring of one.
struct RingPlace {
  int64_t index = 0, size = 1;
  unsigned axisMask = 0;
};
/// This rank's place in the ring of `call` (decodeRingCall, which checked
/// its axis mask), on either target; defined beside the other group places
/// (CollectiveABI.cpp), as it asks the communicator.
RingPlace ringPlace(const RingCall &call);

} // namespace titanrt

#endif // TITANRT_RINGSCHEDULE_H
