//===- Elementwise.cu - elementwise and step-scalar CUDA kernels ----------===//

#include "Elementwise.h"

#include "DeviceUtils.cuh"
#include "LRSchedule.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

using namespace titanrt;
using namespace titanrt::cuda;
using namespace titanrt::cuda::device;

namespace {

struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};

/// fill's value, rounded to the output type as it is stored.
struct Constant {
  float value;
  __device__ float operator()() const { return value; }
};
/// cast: bf16 and f16 widen exactly to f32, so f32 arithmetic rounds once.
struct Identity {
  __device__ float operator()(float x) const { return x; }
};

__global__ void storeInt32Kernel(int32_t *dst, int32_t value) { *dst = value; }

__global__ void fillWordsKernel(uint64_t *dst, int64_t n, uint64_t pattern) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * kThreads)
    dst[i] = pattern;
}

/// One element of a box copy per thread (BoxCopy.h), by value.
template <typename Word>
__global__ void copyBoxKernel(const Word *src, Word *dst, BoxCopyPlan plan,
                              int64_t n) {
  for (int64_t e = int64_t(blockIdx.x) * kThreads + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * kThreads) {
    int64_t s, t;
    boxOffsets(plan, e, plan.rank, s, t);
    dst[t] = src[s];
  }
}

/// The schedule of the CPU kernel (LRSchedule.h), from device scalars.
__global__ void lrScheduleKernel(const int64_t *step, const int64_t *totalSteps,
                                 float *lrOut, double lr, int64_t warmupSteps,
                                 double decayRatio, int decayType,
                                 double minLrFactor) {
  *lrOut = float(lrScheduleValue(*step, *totalSteps, lr, warmupSteps,
                                 decayRatio, decayType, minLrFactor));
}

/// kernels::ropeAngles, one (position, pair) per thread: the angle's cos
/// and sin, each computed once per step.
/// The wavelength bounds and the smoothing's denominator are rounded from
/// double on the host, as the CPU kernel rounds them.
__global__ void ropeAnglesKernel(float *freqsCis, int64_t seq, int64_t pairs,
                                 float theta, bool scaled, float factor,
                                 float lowFreqFactor, float lowWavelen,
                                 float highWavelen, float smoothDenominator,
                                 float originalMaxPositions) {
  const float pi = 3.14159265358979323846f;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
       i < seq * pairs; i += int64_t(gridDim.x) * kThreads) {
    int64_t p = i / pairs, j = i % pairs;
    float exponent = float(2 * j) / float(2 * pairs);
    float f = 1.0f / powf(theta, exponent);
    if (scaled) {
      float wavelen = 2.0f * pi / f;
      if (wavelen > lowWavelen) {
        f = f / factor;
      } else if (!(wavelen < highWavelen)) {
        float smooth = (originalMaxPositions / wavelen - lowFreqFactor) /
                       smoothDenominator;
        f = (1.0f - smooth) * f / factor + smooth * f;
      }
    }
    float angle = float(p) * f;
    freqsCis[2 * i] = cosf(angle);
    freqsCis[2 * i + 1] = sinf(angle);
  }
}

} // namespace

void titanrt::cuda::add(Dtype type, const void *a, const void *b, void *out,
                        int64_t n, cudaStream_t stream) {
  map<2>(type, {a, b}, out, n, Add{}, stream, "add");
}

void titanrt::cuda::fill(Dtype type, void *out, int64_t n, double value,
                         cudaStream_t stream) {
  map<0>(type, {}, out, n, Constant{float(value)}, stream, "fill");
}

void titanrt::cuda::cast(Dtype from, const void *src, Dtype to, void *dst,
                         int64_t n, cudaStream_t stream) {
  dispatch(from, [&](auto *fromTag) {
    using From = std::remove_pointer_t<decltype(fromTag)>;
    dispatch(to, [&](auto *toTag) {
      using To = std::remove_pointer_t<decltype(toTag)>;
      Map<From, To, Identity, 1> op{
          {static_cast<const From *>(src)}, static_cast<To *>(dst), {}};
      forEach(op, n, aligned16({src, dst}), stream, "cast");
    });
  });
}

void titanrt::cuda::storeInt32(int32_t *dst, int32_t value,
                               cudaStream_t stream) {
  storeInt32Kernel<<<1, 1, 0, stream>>>(dst, value);
  checkLaunch("shard_offset");
}

bool titanrt::cuda::kernelsRunHere(std::string &error) {
  cudaFuncAttributes attributes;
  cudaError_t rc = cudaFuncGetAttributes(&attributes, fillWordsKernel);
  if (rc == cudaSuccess)
    return true;
  error = cudaGetErrorString(rc);
  return false;
}

void titanrt::cuda::copyBox(const void *src, void *dst, size_t elementBytes,
                            const BoxCopyPlan &plan, cudaStream_t stream) {
  // The element size is checked before the empty-box return, so that a bad
  // size stops the run whatever the box.
  auto launch = [&](auto *word) {
    using Word = std::remove_pointer_t<decltype(word)>;
    int64_t n = plan.numel();
    if (n <= 0)
      return;
    copyBoxKernel<<<blocksFor(n), kThreads, 0, stream>>>(
        static_cast<const Word *>(src), static_cast<Word *>(dst), plan, n);
    checkLaunch("box copy");
  };
  // Each size as its own word: copying a 1-byte (fp8) element as a wider
  // word would write its neighbours in the target.
  switch (elementBytes) {
  case 1:
    return launch(static_cast<uint8_t *>(nullptr));
  case 2:
    return launch(static_cast<uint16_t *>(nullptr));
  case 4:
    return launch(static_cast<uint32_t *>(nullptr));
  case 8:
    return launch(static_cast<uint64_t *>(nullptr));
  default:
    kernelFatal("CUDA box copy (slice, slice_grad, concat): elements of " +
                std::to_string(elementBytes) +
                " bytes; it copies elements of 1, 2, 4 or 8 bytes");
  }
}

void titanrt::cuda::fillWords(void *dst, size_t bytes, uint64_t pattern,
                              cudaStream_t stream) {
  int64_t n = int64_t(bytes / 8);
  if (n <= 0)
    return;
  fillWordsKernel<<<blocksFor(n), kThreads, 0, stream>>>(
      static_cast<uint64_t *>(dst), n, pattern);
  checkLaunch("arena fill");
}

void titanrt::cuda::lrSchedule(const int64_t *step, const int64_t *totalSteps,
                               float *lr, double baseLr, int64_t warmupSteps,
                               double decayRatio, int decayType,
                               double minLrFactor, cudaStream_t stream) {
  lrScheduleKernel<<<1, 1, 0, stream>>>(step, totalSteps, lr, baseLr,
                                        warmupSteps, decayRatio, decayType,
                                        minLrFactor);
  checkLaunch("lr_schedule");
}

void titanrt::cuda::ropeAngles(float *freqsCis, int64_t seq, int64_t pairs,
                               double theta, bool scaled, double factor,
                               double lowFreqFactor, double highFreqFactor,
                               double originalMaxPositions,
                               cudaStream_t stream) {
  if (seq * pairs <= 0)
    return;
  ropeAnglesKernel<<<blocksFor(seq * pairs), kThreads, 0, stream>>>(
      freqsCis, seq, pairs, float(theta), scaled, float(factor),
      float(lowFreqFactor), float(originalMaxPositions / lowFreqFactor),
      float(originalMaxPositions / highFreqFactor),
      float(highFreqFactor - lowFreqFactor), float(originalMaxPositions));
  checkLaunch("rope_angles");
}
