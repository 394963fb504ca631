//===- LRSchedule.h - TorchTitan's warmup-stable-decay schedule -*- C++ -*-===//
//
// titan.lr_schedule's formula, once for the CPU kernel and the CUDA kernel
// (a __host__ __device__ function under nvcc, a plain inline one
// elsewhere), so the two targets cannot drift apart.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LRSCHEDULE_H
#define TITANRT_LRSCHEDULE_H

#include <math.h>
#include <stdint.h>

#include "HostDevice.h"

namespace titanrt {

/// The learning rate of step `step` (0-based) of `totalSteps`: TorchTitan
/// v0.2.0, components/lr_scheduler.py (build_lr_schedulers): linear warmup
/// over `warmupSteps`, then constant, then decay over round(totalSteps *
/// decayRatio) steps (all the rest when decayRatio < 0) of type 0 linear,
/// 1 sqrt, 2 cosine, down to `minLrFactor`.
TITANRT_HOST_DEVICE inline double
lrScheduleValue(int64_t step, int64_t totalSteps, double lr,
                int64_t warmupSteps, double decayRatio, int decayType,
                double minLrFactor) {
  int64_t warmup = warmupSteps < totalSteps ? warmupSteps : totalSteps;
  // Python's round() is round-half-to-even, as nearbyint in the default mode.
  int64_t decay = decayRatio >= 0
                      ? int64_t(::nearbyint(double(totalSteps) * decayRatio))
                      : totalSteps - warmup;
  if (warmup + decay > totalSteps)
    decay = totalSteps - warmup;
  // The "virtual last step": the last real step stays above the floor.
  int64_t stable = totalSteps + 1 - warmup - decay;
  double factor;
  if (step < warmup) {
    factor = double(step + 1) / double(warmup);
  } else if (step < warmup + stable || decay == 0) {
    factor = 1.0;
  } else {
    // Steps past the run's end (never taken by the trainer) hold the floor.
    double progress =
        ::fmin(1.0, double(step + 1 - (warmup + stable)) / double(decay));
    double adjusted = decayType == 0   ? 1.0 - progress
                      : decayType == 1 ? 1.0 - ::sqrt(progress)
                                       : 0.5 * (1.0 + ::cos(M_PI * progress));
    factor = minLrFactor + (1.0 - minLrFactor) * adjusted;
  }
  return lr * factor;
}

} // namespace titanrt

#endif // TITANRT_LRSCHEDULE_H
