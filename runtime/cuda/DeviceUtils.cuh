//===- DeviceUtils.cuh - what the CUDA kernels share -----------*- CUDA -*-===//
//
// Loads and stores with f32 arithmetic on f32/bf16/f16 buffers (one
// rounding per stored value), fixed-order block reductions (so every
// kernel built on them gives the same bits on every run), launch sizing
// and launch checks, and the element-type dispatch.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_DEVICEUTILS_CUH
#define TITANRT_CUDA_DEVICEUTILS_CUH

#include "LinearGemm.h"

#include "Error.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace titanrt::cuda::device {

constexpr int kThreads = 256;

__device__ inline float load(const float *p, int64_t i) { return p[i]; }
__device__ inline float load(const __nv_bfloat16 *p, int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ inline float load(const __half *p, int64_t i) {
  return __half2float(p[i]);
}
__device__ inline void store(float *p, int64_t i, float v) { p[i] = v; }
__device__ inline void store(__nv_bfloat16 *p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}
__device__ inline void store(__half *p, int64_t i, float v) {
  p[i] = __float2half_rn(v);
}

/// The sum of `v` over the block (every thread gets it).
__device__ inline float blockSum(float v) {
  __shared__ float warps[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads(); // warps[] may still be read by a previous call
  if (lane == 0)
    warps[warp] = v;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < kThreads / 32; ++w)
    total += warps[w];
  return total;
}

/// `v` combined over the block by `combine(a, b)` in a fixed tree order
/// (thread 0 gets the result).
template <typename T, typename Combine>
__device__ inline T blockReduceInOrder(T v, Combine combine) {
  __shared__ T part[kThreads];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      part[threadIdx.x] =
          combine(part[threadIdx.x], part[threadIdx.x + stride]);
    __syncthreads();
  }
  return part[0];
}

struct Plus {
  __device__ double operator()(double a, double b) const { return a + b; }
};

/// The f64 sum of `v` over the block in a fixed tree order (thread 0 gets
/// it).
__device__ inline double blockSumInOrder(double v) {
  return blockReduceInOrder(v, Plus());
}

/// The max of `v` over the block (every thread gets it).
__device__ inline float blockMax(float v) {
  __shared__ float warps[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0)
    warps[warp] = v;
  __syncthreads();
  float m = -INFINITY;
  for (int w = 0; w < kThreads / 32; ++w)
    m = fmaxf(m, warps[w]);
  return m;
}

/// Enough blocks to fill the GPU for `work` items, at most 65535 x 16.
inline unsigned blocksFor(int64_t work) {
  return unsigned(std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1,
                                      int64_t(65535) * 16));
}

inline void checkLaunch(const char *kernel) {
  cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess)
    kernelFatal(std::string("CUDA kernel ") + kernel +
                " failed to launch: " + cudaGetErrorString(rc));
}

/// Calls `f(T *)` with the element type of `type`.
template <typename F> void dispatch(ElementType type, F f) {
  switch (type) {
  case ElementType::F32:
    return f(static_cast<float *>(nullptr));
  case ElementType::BF16:
    return f(static_cast<__nv_bfloat16 *>(nullptr));
  case ElementType::F16:
    return f(static_cast<__half *>(nullptr));
  case ElementType::F8E4M3FN:
  case ElementType::F8E5M2:
    break;
  }
  kernelFatal("CUDA target: a float8 buffer where a kernel computes on f32, "
              "bf16 or f16");
}

} // namespace titanrt::cuda::device

#endif // TITANRT_CUDA_DEVICEUTILS_CUH
