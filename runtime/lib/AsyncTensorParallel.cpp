//===- AsyncTensorParallel.cpp - collective matmuls on the CPU ------------===//

#include "AsyncTensorParallel.h"

#include "Communicator.h"
#include "Error.h"
#include "Gemm.h"
#include "Kernels.h"
#include "LowPrecision.h"
#include "RingSchedule.h"
#include "ScaledGemm.h"

#include "titan/Contract/CPUWorkspaces.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

namespace titanrt::kernels {

namespace {
template <typename T> Dtype dataType() {
  if constexpr (std::is_same_v<T, BFloat16>)
    return Dtype::bf16;
  return std::is_same_v<T, double> ? Dtype::f64 : Dtype::f32;
}

/// rows x out = lhs (rows x in) times the weight, as titan.linear or
/// titan.linear_grad_input compute it (Kernels.cpp; bf16 operands on the
/// matrix units, into f32, as the 16-bit linears there), beta 0 or 1.
template <typename In, typename Out>
void gemmRows(RingGemm g, const In *lhs, const In *weight, Out *result,
              int64_t rows, int64_t ldc, bool accumulate) {
  if (g.gradInput)
    gemm(false, false, rows, g.out, g.in, Out(1), lhs, g.in, weight, g.out,
         Out(accumulate), result, ldc);
  else
    gemm(false, true, rows, g.out, g.in, Out(1), lhs, g.in, weight, g.in,
         Out(accumulate), result, ldc);
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

/// The all-gather ring (RingSchedule.h) over `outer` shards of
/// `shardBytes` each: every step copies the shard held into `gathered`
/// and runs `gemms(chunk, next)` on its rows while the next shard travels
/// (`next` to poll). `workspace`: two buffers of outer x shardBytes.
template <typename ChunkGemms>
void allGatherRing(const void *input, void *gathered, Dtype type,
                   int64_t elementBytes, int64_t outer, int64_t shardBytes,
                   RingPlace place, void *workspace, ChunkGemms &&gemms) {
  int64_t n = place.size, bytes = outer * shardBytes;
  char *buffers[2] = {static_cast<char *>(workspace),
                      static_cast<char *>(workspace) + bytes};
  for (int64_t s = 0; s < n; ++s) {
    ring::AllGatherStep step = ring::allGatherStep(place.index, n, s);
    int64_t c = step.chunk;
    const char *held = step.held == ring::kOutside
                           ? static_cast<const char *>(input)
                           : buffers[step.held];
    InFlight next;
    if (step.incoming != ring::kOutside)
      next.request =
          communicator().sendRecv(held, buffers[step.incoming], type,
                                  bytes / elementBytes, 1, place.axisMask);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char *>(gathered) + (o * n + c) * shardBytes,
                  held + o * shardBytes, size_t(shardBytes));
    gemms(c, next);
    next.finish();
  }
}

/// The reduce-scatter ring over a result of `shard` elements: every step
/// runs `term(chunk, partial, pending)`, which writes (with `storage`'s
/// rounding) this rank's term of shard `chunk` into `partial` while the
/// previous step's sums travel (`pending` to poll), adds the sums
/// received, and sends them on. `workspace`: three f32 shards (two partial
/// sums, the one received).
template <typename T, typename ChunkTerm>
void reduceScatterRing(T *result, int64_t shard, RingPlace place, T *workspace,
                       int storage, ChunkTerm &&term) {
  int64_t n = place.size;
  T *partials[2] = {workspace, workspace + shard};
  T *received = workspace + 2 * shard;
  InFlight pending;
  for (int64_t s = 0; s < n; ++s) {
    // Shard c's partial sums: this rank's term, computed while the previous
    // step's sums travel; the last step's is this rank's own shard.
    ring::ReduceScatterStep step = ring::reduceScatterStep(place.index, n, s);
    T *partial =
        step.partial == ring::kOutside ? result : partials[step.partial];
    term(step.chunk, partial, pending);
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

/// Adds GEMM `i`'s term (`compute(block or scratch, accumulate)` writes
/// it) into one block of a partial sum: f32 accumulates into the first
/// GEMM's result, as kernel-fuse-gemm-accumulate makes the unfused GEMMs
/// do; 16-bit adds the separately rounded results, as the unfused adds
/// (widened, so not folded into the GEMMs) do.
template <typename T, typename Compute>
void addTerm(int64_t i, T *block, T *scratch, int64_t elements, int storage,
             Compute &&compute) {
  if (i == 0 || storage == 0) {
    compute(block, /*accumulate=*/i > 0);
    roundToStorage(block, elements, storage);
    return;
  }
  compute(scratch, /*accumulate=*/false);
  roundToStorage(scratch, elements, storage);
  for (int64_t e = 0; e < elements; ++e)
    block[e] += scratch[e];
  roundToStorage(block, elements, storage);
}
} // namespace

template <typename In, typename Out>
void allGatherLinear(const In *input, const In *const *weights, In *gathered,
                     Out *const *results, const int64_t *outs, int64_t count,
                     bool gradInput, int64_t outer, int64_t rows, int64_t in,
                     RingPlace place, void *workspace) {
  int64_t n = place.size, shard = rows * in;
  allGatherRing(input, gathered, dataType<In>(), sizeof(In), outer,
                shard * int64_t(sizeof(In)), place, workspace,
                [&](int64_t c, InFlight &next) {
                  for (int64_t i = 0; i < count; ++i) {
                    RingGemm g{gradInput, in, outs[i]};
                    for (int64_t o = 0; o < outer; ++o) {
                      gemmRows(g, gathered + (o * n + c) * shard, weights[i],
                               results[i] + (o * n + c) * rows * g.out, rows,
                               g.out, /*accumulate=*/false);
                      next.poll();
                    }
                  }
                });
}

template <typename In, typename Out>
void linearReduceScatter(const In *const *lhs, const In *const *weights,
                         const int64_t *ins, int64_t count, bool gradInput,
                         Out *result, int64_t outer, int64_t rows, int64_t out,
                         RingPlace place, Out *workspace, int storage) {
  int64_t n = place.size, shard = outer * rows * out;
  Out *scratch = workspace + 3 * shard; // rows x out, with several GEMMs
  reduceScatterRing(
      result, shard, place, workspace, storage,
      [&](int64_t c, Out *partial, InFlight &pending) {
        for (int64_t i = 0; i < count; ++i) {
          RingGemm g{gradInput, ins[i], out};
          for (int64_t o = 0; o < outer; ++o) {
            const In *a = lhs[i] + (o * n + c) * rows * g.in;
            addTerm(i, partial + o * rows * out, scratch, rows * out, storage,
                    [&](Out *to, bool accumulate) {
                      gemmRows(g, a, weights[i], to, rows, out, accumulate);
                    });
            pending.poll();
          }
        }
      });
}

namespace {
/// Float8's ring GEMMs: the weights decoded to f32 once, then per row
/// block the lhs decoded, the f32 GEMM and the inverse scales, as
/// titan.scaled_matmul computes them (ScaledGemm.h).
class ScaledBlocks {
public:
  ScaledBlocks(const ScaledRing &ring, const int64_t *ins, const int64_t *outs,
               void *workspace, const titan::cpu::ScaledRingWorkspace &layout)
      : ring(ring), ins(ins), outs(outs) {
    char *ws = static_cast<char *>(workspace);
    lhsBlock = reinterpret_cast<float *>(ws + layout.lhsBlock);
    product = reinterpret_cast<float *>(ws + layout.product);
    float *w = reinterpret_cast<float *>(ws + layout.weights);
    for (int64_t i = 0; i < ring.count; ++i) {
      weights[i] = w;
      // The weight as the form's rows x cols: linear's [out, in],
      // grad_input's [in, out].
      int64_t wr = ring.gradInput ? ins[i] : outs[i];
      int64_t wc = ring.gradInput ? outs[i] : ins[i];
      decodeFloat8(ring.weights[i], wr, wc, ring.rhsTransposed, ring.rhsFormat,
                   w);
      w += wr * wc;
    }
  }
  /// GEMM `i` of `rows` lhs rows (float8 codes) with their scales
  /// (`lhsPerRow`: one per row, else one for all), into `to` (rows x
  /// outs[i]), added to its old values when `accumulate`.
  void run(int64_t i, const uint8_t *lhs, const float *lhsScale, bool lhsPerRow,
           int64_t rows, float *to, bool accumulate) {
    int64_t in = ins[i], out = outs[i];
    decodeFloat8(lhs, rows, in, /*transposed=*/false, ring.lhsFormat, lhsBlock);
    if (ring.gradInput)
      linearGradInput(lhsBlock, weights[i], product, rows, out, in, false);
    else
      linear(lhsBlock, weights[i], product, rows, in, out, false);
    applyInverseScales(product, lhsScale, lhsPerRow, ring.weightScales[i],
                       ring.scalePerColumn[i], rows, out, accumulate, to);
  }
  float *scratch() { return product; }

private:
  const ScaledRing &ring;
  const int64_t *ins, *outs;
  const float *weights[ring::kMaxGemms];
  float *lhsBlock, *product;
};
} // namespace

void allGatherScaledMatmul(const uint8_t *input, const float *inputScale,
                           const ScaledRing &ring, uint8_t *gathered,
                           float *const *results, const int64_t *outs,
                           int64_t outer, int64_t rows, int64_t in,
                           RingPlace place, void *workspace) {
  int64_t n = place.size, shard = rows * in;
  int64_t ins[ring::kMaxGemms], weightElements = 0, widest = 0;
  for (int64_t i = 0; i < ring.count; ++i) {
    ins[i] = in;
    weightElements += in * outs[i];
    widest = std::max(widest, outs[i]);
  }
  titan::cpu::ScaledRingWorkspace layout = titan::cpu::scaledRingWorkspace(
      2, outer * shard, weightElements, shard, rows * widest);
  ScaledBlocks blocks(ring, ins, outs, workspace, layout);
  allGatherRing(input, gathered, ring.lhsFormat, 1, outer, shard, place,
                workspace, [&](int64_t c, InFlight &next) {
                  for (int64_t i = 0; i < ring.count; ++i)
                    for (int64_t o = 0; o < outer; ++o) {
                      blocks.run(i, gathered + (o * n + c) * shard, inputScale,
                                 /*lhsPerRow=*/false, rows,
                                 results[i] + (o * n + c) * rows * outs[i],
                                 /*accumulate=*/false);
                      next.poll();
                    }
                });
}

void scaledMatmulReduceScatter(const uint8_t *const *lhs,
                               const float *const *lhsScales,
                               const bool *lhsPerRow, const int64_t *ins,
                               const ScaledRing &ring, float *result,
                               int64_t outer, int64_t rows, int64_t out,
                               RingPlace place, void *workspace, int storage) {
  int64_t n = place.size, shard = outer * rows * out;
  int64_t outs[ring::kMaxGemms], weightElements = 0, widest = 0;
  for (int64_t i = 0; i < ring.count; ++i) {
    outs[i] = out;
    weightElements += ins[i] * out;
    widest = std::max(widest, ins[i]);
  }
  titan::cpu::ScaledRingWorkspace layout = titan::cpu::scaledRingWorkspace(
      3, shard * 4, weightElements, rows * widest, rows * out);
  ScaledBlocks blocks(ring, ins, outs, workspace, layout);
  reduceScatterRing(result, shard, place, static_cast<float *>(workspace),
                    storage, [&](int64_t c, float *partial, InFlight &pending) {
                      for (int64_t i = 0; i < ring.count; ++i)
                        for (int64_t o = 0; o < outer; ++o) {
                          int64_t first = (o * n + c) * rows;
                          const uint8_t *a = lhs[i] + first * ins[i];
                          // A row block's own scales (rowwise).
                          const float *scale = lhsPerRow[i]
                                                   ? lhsScales[i] + first
                                                   : lhsScales[i];
                          // The 16-bit path's separate result is the product
                          // itself (scaled in place).
                          addTerm(i, partial + o * rows * out, blocks.scratch(),
                                  rows * out, storage,
                                  [&](float *to, bool accumulate) {
                                    blocks.run(i, a, scale, lhsPerRow[i], rows,
                                               to, accumulate);
                                  });
                          pending.poll();
                        }
                    });
}

#define TITAN_INSTANTIATE(In, Out)                                             \
  template void allGatherLinear<In, Out>(                                      \
      const In *, const In *const *, In *, Out *const *, const int64_t *,      \
      int64_t, bool, int64_t, int64_t, int64_t, RingPlace, void *);            \
  template void linearReduceScatter<In, Out>(                                  \
      const In *const *, const In *const *, const int64_t *, int64_t, bool,    \
      Out *, int64_t, int64_t, int64_t, RingPlace, Out *, int);
TITAN_INSTANTIATE(float, float)
TITAN_INSTANTIATE(double, double)
TITAN_INSTANTIATE(BFloat16, float)
#undef TITAN_INSTANTIATE

} // namespace titanrt::kernels
