//===- HostKernels.cpp - the kernels of host steps, on any target ---------===//
//
// libtitanrt_host: what a host step (kernel.host_step: the optimizer of
// training.enable_cpu_offload) calls on any target, and what the CPU
// target's own kernels share with it so that both compute the same bits:
// the kHostStep kernels of KernelCatalog.def as titan_rt_host_<name>_f32
// and _f64, and titan_rt_host_parallel_for for the generated kernels. It
// needs OpenMP and nothing else (no oneDNN, no BLAS), so a GPU executable
// that offloads carries no CPU GEMM library.
//
//===----------------------------------------------------------------------===//

#include "titanrt/KernelABI.h"

#include "HostKernels.h"
#include "Kernels.h"
#include "LRSchedule.h"
#include "Parallel.h"
#include "Threads.h"
#include "VectorMath.h"

#include "titan/Contract/CPUWorkspaces.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <thread>

using namespace titanrt;
using titanrt::abi::Call;
using titanrt::abi::Shape;

namespace {
/// The host kernels' OpenMP threads: OMP_NUM_THREADS when set; else the
/// cores this process may run on, shared among the ranks the launcher
/// started on this machine. OpenMP's default gives every rank all of them,
/// and ranks sharing cores then spin against each other. Set when the
/// library loads (after libgomp's own start-up), before any kernel.
__attribute__((constructor)) void shareCoresAmongLocalRanks() {
  if (std::getenv("OMP_NUM_THREADS"))
    return;
  int64_t local = 1;
  for (const char *var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                          "PMI_LOCAL_SIZE", "LOCAL_WORLD_SIZE"})
    if (const char *value = std::getenv(var)) {
      local = std::max<int64_t>(1, std::atoll(value));
      break;
    }
  cpu_set_t cpus;
  int64_t cores = sched_getaffinity(0, sizeof(cpus), &cpus) == 0
                      ? CPU_COUNT(&cpus)
                      : int64_t(std::thread::hardware_concurrency());
  setMaxThreads(int(std::max<int64_t>(1, cores / local)));
}

/// sum_j x[j]^2 in f64 (compiled once per x86-64 level, VectorMath.h).
template <typename T>
TITAN_VECTOR_CLONES double sumOfSquaresOf(const T *x, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < n; ++j)
    s += double(x[j]) * double(x[j]);
  return s;
}

} // namespace

namespace titanrt::kernels {

template <typename T>
double sumOfSquares(const T *x, int64_t n, double *partials) {
  int64_t span =
      std::max(titan::cpu::kNormMinSpan,
               (n + titan::cpu::kNormSpans - 1) / titan::cpu::kNormSpans);
  int64_t spans = (n + span - 1) / span;
#pragma omp parallel for schedule(static) if (spans > 1)
  for (int64_t i = 0; i < spans; ++i)
    partials[i] =
        sumOfSquaresOf(x + i * span, std::min(n, (i + 1) * span) - i * span);
  double sum = 0;
  for (int64_t i = 0; i < spans; ++i)
    sum += partials[i];
  return sum;
}
template double sumOfSquares<float>(const float *, int64_t, double *);
template double sumOfSquares<double>(const double *, int64_t, double *);

double lrSchedule(int64_t step, int64_t totalSteps, double lr,
                  int64_t warmupSteps, double decayRatio, int decayType,
                  double minLrFactor) {
  return lrScheduleValue(step, totalSteps, lr, warmupSteps, decayRatio,
                         decayType, minLrFactor);
}

} // namespace titanrt::kernels

namespace titanrt::host {

template <typename T> void globalNorm(const Call &c) {
  int64_t count = c.ints[0];
  const int64_t *s = c.shapes;
  double total = 0;
  for (int64_t i = 0; i < count; ++i) {
    Shape shape{s + 1, s[0]};
    s += 1 + s[0];
    float norm = float(std::sqrt(kernels::sumOfSquares(
        c.buf<T>(int(i)), shape.numel(), static_cast<double *>(c.workspace))));
    total += double(norm) * norm;
  }
  *c.buf<float>(int(count)) = float(std::sqrt(total));
}

template <typename T> void lrSchedule(const Call &c) {
  *c.buf<float>(2) = float(
      kernels::lrSchedule(*c.buf<int64_t>(0), *c.buf<int64_t>(1), c.floats[0],
                          c.ints[0], c.floats[1], int(c.ints[1]), c.floats[2]));
}

template void globalNorm<float>(const Call &);
template void globalNorm<double>(const Call &);
template void lrSchedule<float>(const Call &);
template void lrSchedule<double>(const Call &);

} // namespace titanrt::host

extern "C" {

#define TITAN_RT_DEFINE_HOST(name, impl)                                       \
  void titan_rt_host_##name##_f32(void **b, const int64_t *s,                  \
                                  const int64_t *i, const double *f, void *w,  \
                                  const int64_t *t) {                          \
    host::impl<float>(Call{b, s, i, f, w, t ? t[0] : -1});                     \
  }                                                                            \
  void titan_rt_host_##name##_f64(void **b, const int64_t *s,                  \
                                  const int64_t *i, const double *f, void *w,  \
                                  const int64_t *t) {                          \
    host::impl<double>(Call{b, s, i, f, w, t ? t[0] : -1});                    \
  }
TITAN_RT_DEFINE_HOST(global_norm, globalNorm)
TITAN_RT_DEFINE_HOST(lr_schedule, lrSchedule)
#undef TITAN_RT_DEFINE_HOST

void titan_rt_host_parallel_for(titan_rt_generated_kernel kernel,
                                void *const *buffers, int64_t items,
                                int64_t span, const char *name, int64_t bytes) {
  (void)name;
  int64_t itemElements =
      span > 0 && items > 0 ? std::max<int64_t>(bytes / items / 4, 1) : 1;
  forSpans(
      items, span > 0 ? span : kElementSpan,
      [&](int64_t begin, int64_t end) { kernel(buffers, begin, end); },
      itemElements);
}

} // extern "C"
