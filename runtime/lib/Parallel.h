//===- Parallel.h - how the CPU kernels split work over threads -*- C++ -*-===//
//
// The CPU kernels run on OpenMP's threads (one pool for the process, sized
// by OMP_NUM_THREADS or the cores shared among the local ranks, see
// KernelABI.cpp). Work is split by the shape only, never by the thread
// count, and no value is reduced across threads, so every kernel gives the
// same bits on any number of threads.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_PARALLEL_H
#define TITANRT_LIB_PARALLEL_H

#include <algorithm>
#include <cstdint>

namespace titanrt {

/// Loops with less work than this (elements) stay on one thread.
constexpr int64_t kParallelWork = 1 << 15;

/// Elementwise kernels' spans.
constexpr int64_t kElementSpan = 4096;

/// Runs body(begin, end) over [0, n) in spans of `span` on the OpenMP
/// threads (one thread below kParallelWork elements, each item being
/// `itemElements` of them: a row of a kernel working by rows). The spans
/// are fixed by n; the bodies write only their own elements.
template <typename F>
void forSpans(int64_t n, int64_t span, F body, int64_t itemElements = 1) {
  int64_t spans = (n + span - 1) / span;
#pragma omp parallel for schedule(static) if (spans > 1 && n * itemElements >= \
                                                               kParallelWork)
  for (int64_t i = 0; i < spans; ++i)
    body(i * span, std::min(n, (i + 1) * span));
}

} // namespace titanrt

#endif // TITANRT_LIB_PARALLEL_H
