//===- AsyncTensorParallel.cpp - collective matmuls on the CPU ------------===//

#include "AsyncTensorParallel.h"

#include "Communicator.h"
#include "Error.h"
#include "Gemm.h"
#include "LowPrecision.h"
#include "RingSchedule.h"

#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

namespace titanrt::kernels {

namespace {
template <typename T> Dtype dataType() {
  return std::is_same_v<T, double> ? Dtype::f64 : Dtype::f32;
}

/// rows x out = lhs (rows x in) times the weight, as titan.linear or
/// titan.linear_grad_input compute it (Kernels.cpp), beta 0 or 1.
template <typename T>
void gemmRows(RingGemm g, const T *lhs, const T *weight, T *result,
              int64_t rows, int64_t ldc, bool accumulate) {
  if (g.gradInput)
    gemm(false, false, rows, g.out, g.in, T(1), lhs, g.in, weight, g.out,
         T(accumulate), result, ldc);
  else
    gemm(false, true, rows, g.out, g.in, T(1), lhs, g.in, weight, g.in,
         T(accumulate), result, ldc);
}

/// A shift in flight. The MPI communicator moves a large message only
/// inside MPI calls (no progress thread), so the GEMMs poll it between
/// their row blocks: the transfer advances while they run.
struct InFlight {
  std::unique_ptr<Request> request;
  bool done = false;
  void poll() {
    if (request && !done)
      done = request->test();
  }
  void finish() {
    if (request && !done)
      request->finish();
    request.reset();
    done = false;
  }
  explicit operator bool() const { return request != nullptr; }
};

/// Rounds `n` values to the 16-bit storage type (1 bf16, 2 f16), in place.
template <typename T> void roundToStorage(T *v, int64_t n, int storage) {
  if constexpr (std::is_same_v<T, float>) {
    if (storage == 1)
      for (int64_t i = 0; i < n; ++i)
        v[i] = bf16ToFloat(floatToBf16(v[i]));
    else if (storage == 2)
      for (int64_t i = 0; i < n; ++i)
        v[i] = f16ToFloat(floatToF16(v[i]));
  }
}

/// Starts the ring's shift by one (send to the next rank, receive from the
/// previous one).
template <typename T>
std::unique_ptr<Request> shift(const T *send, T *recv, int64_t count,
                               const RingPlace &place) {
  return communicator().sendRecv(send, recv, dataType<T>(), count, 1,
                                 place.axisMask);
}
} // namespace

template <typename T>
void allGatherLinear(const T *input, const T *const *weights, T *gathered,
                     T *const *results, const int64_t *outs, int64_t count,
                     bool gradInput, int64_t outer, int64_t rows, int64_t in,
                     RingPlace place, T *workspace) {
  int64_t n = place.size, shard = rows * in;
  // The shard held at step s is rank (index - s)'s; the one after it
  // arrives during its GEMMs (RingSchedule.h).
  T *buffers[2] = {workspace, workspace + outer * shard};
  for (int64_t s = 0; s < n; ++s) {
    ring::AllGatherStep step = ring::allGatherStep(place.index, n, s);
    int64_t c = step.chunk;
    const T *held = step.held == ring::kOutside ? input : buffers[step.held];
    InFlight next;
    if (step.incoming != ring::kOutside)
      next.request = shift(held, buffers[step.incoming], outer * shard, place);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(gathered + (o * n + c) * shard, held + o * shard,
                  size_t(shard) * sizeof(T));
    for (int64_t i = 0; i < count; ++i) {
      RingGemm g{gradInput, in, outs[i]};
      for (int64_t o = 0; o < outer; ++o) {
        gemmRows(g, gathered + (o * n + c) * shard, weights[i],
                 results[i] + (o * n + c) * rows * g.out, rows, g.out,
                 /*accumulate=*/false);
        next.poll();
      }
    }
    next.finish();
  }
}

template <typename T>
void linearReduceScatter(const T *const *lhs, const T *const *weights,
                         const int64_t *ins, int64_t count, bool gradInput,
                         T *result, int64_t outer, int64_t rows, int64_t out,
                         RingPlace place, T *workspace, int storage) {
  int64_t n = place.size, shard = outer * rows * out;
  T *partials[2] = {workspace, workspace + shard};
  T *received = workspace + 2 * shard;
  T *scratch = workspace + 3 * shard; // rows x out, with several GEMMs
  InFlight pending;
  for (int64_t s = 0; s < n; ++s) {
    // Shard c's partial sums: this rank's term, computed while the previous
    // step's sums travel; the last step's is this rank's own shard.
    ring::ReduceScatterStep step = ring::reduceScatterStep(place.index, n, s);
    int64_t c = step.chunk;
    T *partial =
        step.partial == ring::kOutside ? result : partials[step.partial];
    for (int64_t i = 0; i < count; ++i) {
      RingGemm g{gradInput, ins[i], out};
      for (int64_t o = 0; o < outer; ++o) {
        T *block = partial + o * rows * out;
        const T *a = lhs[i] + (o * n + c) * rows * g.in;
        if (i == 0 || storage == 0) {
          // f32: the later GEMMs add into the first's result, as
          // kernel-fuse-gemm-accumulate makes the unfused GEMMs do.
          gemmRows(g, a, weights[i], block, rows, out, /*accumulate=*/i > 0);
          roundToStorage(block, rows * out, storage);
        } else {
          // 16-bit: the unfused adds (widened, so not folded into the
          // GEMMs) add the rounded GEMM results.
          gemmRows(g, a, weights[i], scratch, rows, out, /*accumulate=*/false);
          roundToStorage(scratch, rows * out, storage);
          for (int64_t e = 0; e < rows * out; ++e)
            block[e] += scratch[e];
          roundToStorage(block, rows * out, storage);
        }
        pending.poll();
      }
    }
    if (step.addsReceived) {
      pending.finish();
      for (int64_t e = 0; e < shard; ++e)
        partial[e] += received[e];
      roundToStorage(partial, shard, storage);
    }
    if (step.sends)
      pending.request = shift(partial, received, shard, place);
  }
}

#define TITAN_INSTANTIATE(T)                                                   \
  template void allGatherLinear<T>(const T *, const T *const *, T *,           \
                                   T *const *, const int64_t *, int64_t, bool, \
                                   int64_t, int64_t, int64_t, RingPlace, T *); \
  template void linearReduceScatter<T>(                                        \
      const T *const *, const T *const *, const int64_t *, int64_t, bool, T *, \
      int64_t, int64_t, int64_t, RingPlace, T *, int);
TITAN_INSTANTIATE(float)
TITAN_INSTANTIATE(double)
#undef TITAN_INSTANTIATE

} // namespace titanrt::kernels
