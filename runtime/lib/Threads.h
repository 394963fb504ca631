//===- Threads.h - the CPU kernels' OpenMP thread queries ------*- C++ -*-===//
//
// What the kernels ask OpenMP, in one place, so the runtime also builds
// without OpenMP: the sanitized build (clang, whose OpenMP runtime Debian's
// clang packages do not install beside gcc's libgomp) runs every kernel on
// one thread. Kernels split work by shape, never by thread count
// (Parallel.h), so both give the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_THREADS_H
#define TITANRT_LIB_THREADS_H

#ifdef _OPENMP
#include <omp.h>
#endif

namespace titanrt {

/// The threads a parallel region started now would have.
inline int maxThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/// This thread's index in its parallel region (0 outside one).
inline int threadIndex() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/// Whether this code runs inside a parallel region.
inline bool inParallelRegion() {
#ifdef _OPENMP
  return omp_in_parallel();
#else
  return false;
#endif
}

/// Sets the threads later parallel regions get.
inline void setMaxThreads(int threads) {
#ifdef _OPENMP
  omp_set_num_threads(threads);
#else
  (void)threads;
#endif
}

} // namespace titanrt

#endif // TITANRT_LIB_THREADS_H
