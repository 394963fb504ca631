//===- Elementwise.h - elementwise and step-scalar CUDA kernels -*- C++ -*-===//
//
// The CUDA versions of the CPU target's small kernels: elementwise
// arithmetic (f32 arithmetic on f32/bf16/f16, one rounding per output),
// conversions between the precision model's float types, the learning-rate
// schedule and the RoPE cos/sin table (computed on the device from device
// scalars, so a captured CUDA graph replays every step correctly), and the
// arena's fill pattern.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_ELEMENTWISE_H
#define TITANRT_CUDA_ELEMENTWISE_H

#include "BoxCopy.h"
#include "LinearGemm.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace titanrt::cuda {

/// out = a + b (elementwise, `n` elements; out may be a or b): async TP's
/// partial sums (the step's pointwise ops are generated kernels).
void add(Dtype type, const void *a, const void *b, void *out, int64_t n,
         cudaStream_t stream);
/// out[i] = value.
void fill(Dtype type, void *out, int64_t n, double value, cudaStream_t stream);
/// Converts `n` elements from `from` to `to`, rounding to nearest even.
void cast(Dtype from, const void *src, Dtype to, void *dst, int64_t n,
          cudaStream_t stream);
/// *dst = value (an int32 scalar in device memory, without a host copy:
/// capturable).
void storeInt32(int32_t *dst, int32_t value, cudaStream_t stream);
/// Whether this library's kernels have code the current GPU runs; else
/// false with the CUDA runtime's reason in `error`.
bool kernelsRunHere(std::string &error);
/// The box `plan` describes copied from `src` to `dst` (elements of
/// `elementBytes` bytes: 1 (fp8), 2, 4 or 8; any other size is a fatal
/// error), one element per thread.
void copyBox(const void *src, void *dst, size_t elementBytes,
             const BoxCopyPlan &plan, cudaStream_t stream);
/// Every 8-byte word of [dst, dst + bytes) set to `pattern`.
void fillWords(void *dst, size_t bytes, uint64_t pattern, cudaStream_t stream);

/// titan.lr_schedule (TorchTitan v0.2.0's warmup-stable-decay, as
/// kernels::lrSchedule): *lr from *step and *totalSteps.
void lrSchedule(const int64_t *step, const int64_t *totalSteps, float *lr,
                double baseLr, int64_t warmupSteps, double decayRatio,
                int decayType, double minLrFactor, cudaStream_t stream);

/// titan.rope_angles (as kernels::ropeAngles): freqsCis[p, j] = (cos, sin)
/// of p * invFreq[j], with Llama 3's frequency scaling when `scaled`.
void ropeAngles(float *freqsCis, int64_t seq, int64_t pairs, double theta,
                bool scaled, double factor, double lowFreqFactor,
                double highFreqFactor, double originalMaxPositions,
                cudaStream_t stream);

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_ELEMENTWISE_H
