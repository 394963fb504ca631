//===- DeviceUtils.cuh - what the CUDA kernels share -----------*- CUDA -*-===//
//
// Loads and stores with f32 arithmetic on f32/bf16/f16 buffers (one
// rounding per stored value), element by element or in 16-byte packs,
// elementwise launches over packs (with a scalar tail, and a scalar path
// for unaligned views), fixed-order block reductions (so every kernel
// built on them gives the same bits on every run), launch sizing and
// launch checks, and the element-type dispatch.
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
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace titanrt::cuda::device {

constexpr int kThreads = 256;

__device__ inline float toFloat(float v) { return v; }
__device__ inline float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float toFloat(__half v) { return __half2float(v); }
/// `v` rounded to nearest even in T.
template <typename T> __device__ inline T roundTo(float v);
template <> __device__ inline float roundTo<float>(float v) { return v; }
template <> __device__ inline __nv_bfloat16 roundTo<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <> __device__ inline __half roundTo<__half>(float v) {
  return __float2half_rn(v);
}

template <typename T, typename Index>
__device__ inline float load(const T *p, Index i) {
  return toFloat(p[i]);
}
template <typename T, typename Index>
__device__ inline void store(T *p, Index i, float v) {
  p[i] = roundTo<T>(v);
}

/// Elements of T in one 16-byte access.
template <typename T> constexpr int kPack = 16 / int(sizeof(T));

/// T's bits in the low bits of a 32-bit lane, and back.
__device__ inline uint32_t bitsOf(float v) { return __float_as_uint(v); }
__device__ inline uint32_t bitsOf(__nv_bfloat16 v) {
  return __bfloat16_as_ushort(v);
}
__device__ inline uint32_t bitsOf(__half v) { return __half_as_ushort(v); }
template <typename T> __device__ inline T fromBits(uint32_t bits);
template <> __device__ inline float fromBits<float>(uint32_t bits) {
  return __uint_as_float(bits);
}
template <>
__device__ inline __nv_bfloat16 fromBits<__nv_bfloat16>(uint32_t bits) {
  return __ushort_as_bfloat16((unsigned short)bits);
}
template <> __device__ inline __half fromBits<__half>(uint32_t bits) {
  return __ushort_as_half((unsigned short)bits);
}

/// `Lanes` 32-bit words at `p` in the widest accesses (16 bytes, else 8 or
/// 4) their count allows; `p` aligned to that access. Whole words keep
/// the compiler from splitting a pack into element accesses.
template <int Lanes>
__device__ inline void loadLanes(const void *p, uint32_t (&l)[Lanes]) {
  if constexpr (Lanes % 4 == 0) {
#pragma unroll
    for (int j = 0; j < Lanes / 4; ++j) {
      uint4 v = static_cast<const uint4 *>(p)[j];
      l[4 * j] = v.x;
      l[4 * j + 1] = v.y;
      l[4 * j + 2] = v.z;
      l[4 * j + 3] = v.w;
    }
  } else if constexpr (Lanes == 2) {
    uint2 v = *static_cast<const uint2 *>(p);
    l[0] = v.x;
    l[1] = v.y;
  } else {
    static_assert(Lanes == 1, "packs of 4, 8 or 16n bytes");
    l[0] = *static_cast<const uint32_t *>(p);
  }
}
/// The store of loadLanes. In global memory (`Global`) as explicit 16-byte
/// stores: nvcc splits a uint4 store into four when it cannot prove the
/// row offset's alignment.
template <bool Global, int Lanes>
__device__ inline void storeLanes(void *p, const uint32_t (&l)[Lanes]) {
  if constexpr (Lanes % 4 == 0) {
#pragma unroll
    for (int j = 0; j < Lanes / 4; ++j) {
      uint4 *q = static_cast<uint4 *>(p) + j;
      if constexpr (Global)
        asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(q),
                     "r"(l[4 * j]), "r"(l[4 * j + 1]), "r"(l[4 * j + 2]),
                     "r"(l[4 * j + 3])
                     : "memory");
      else
        *q = make_uint4(l[4 * j], l[4 * j + 1], l[4 * j + 2], l[4 * j + 3]);
    }
  } else if constexpr (Lanes == 2) {
    *static_cast<uint2 *>(p) = make_uint2(l[0], l[1]);
  } else {
    static_assert(Lanes == 1, "packs of 4, 8 or 16n bytes");
    *static_cast<uint32_t *>(p) = l[0];
  }
}

/// Elements [i, i + W) of `p`, widened to f32, in one 16-byte access for
/// kPack<T> (wider packs, the f32 accumulators of bf16 rows, in 16-byte
/// pieces); p + i must be aligned to the pack (the launch checks its
/// pointers with aligned16).
template <int W, typename T, typename Index>
__device__ inline void loadPack(const T *p, Index i, float (&out)[W]) {
  if constexpr (W == 1) {
    out[0] = toFloat(p[i]);
  } else {
    constexpr int kPerLane = 4 / int(sizeof(T));
    uint32_t lanes[W / kPerLane];
    loadLanes(p + i, lanes);
#pragma unroll
    for (int k = 0; k < W; ++k)
      out[k] = toFloat(
          fromBits<T>(lanes[k / kPerLane] >> (32 / kPerLane * (k % kPerLane))));
  }
}
/// Elements [i, i + W) of `p` set to `in`, each rounded once; `p` in
/// global memory unless `Global` is false.
template <int W, bool Global = true, typename T, typename Index>
__device__ inline void storePack(T *p, Index i, const float (&in)[W]) {
  if constexpr (W == 1) {
    p[i] = roundTo<T>(in[0]);
  } else {
    constexpr int kPerLane = 4 / int(sizeof(T));
    uint32_t lanes[W / kPerLane];
#pragma unroll
    for (int m = 0; m < W / kPerLane; ++m) {
      lanes[m] = bitsOf(roundTo<T>(in[kPerLane * m]));
      if constexpr (kPerLane == 2)
        lanes[m] |= bitsOf(roundTo<T>(in[2 * m + 1])) << 16;
    }
    storeLanes<Global>(p + i, lanes);
  }
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
  __syncthreads(); // part[0] may still be read by a previous call
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

/// One block per row, at most 65535 x 16 (blocks then loop over rows).
inline unsigned rowBlocks(int64_t rows) {
  return unsigned(std::clamp<int64_t>(rows, 1, int64_t(65535) * 16));
}

inline void checkLaunch(const char *kernel) {
  cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess)
    kernelFatal(std::string("CUDA kernel ") + kernel +
                " failed to launch: " + cudaGetErrorString(rc));
}

/// Whether every pointer is 16-byte aligned, so that kernels may access
/// their buffers in packs (a view at an odd offset is not).
inline bool aligned16(std::initializer_list<const void *> pointers) {
  return std::all_of(pointers.begin(), pointers.end(), [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
  });
}

/// Calls op.apply<W>(i) on the elements [i, i + W) of the whole packs
/// first, first + stride, ... in [0, n), then op.apply<1>(i) on the tail.
template <int W, typename Index, typename Op>
__device__ void forEachPack(const Op &op, Index n, Index first, Index stride) {
  Index packs = n / W;
  for (Index p = first; p < packs; p += stride)
    op.template apply<W>(p * W);
  for (Index i = packs * W + first; i < n; i += stride)
    op.template apply<1>(i);
}

/// forEachPack over the grid.
template <int W, typename Index, typename Op>
__global__ void forEachKernel(Op op, Index n) {
  forEachPack<W>(op, n, Index(blockIdx.x) * kThreads + threadIdx.x,
                 Index(gridDim.x) * kThreads);
}

/// Runs an elementwise `op` over [0, n): in packs of Op::kWidth elements
/// (16-byte accesses) when `aligned`, else element by element; with 32-bit
/// indices unless `n` needs 64.
template <typename Op>
void forEach(const Op &op, int64_t n, bool aligned, cudaStream_t stream,
             const char *name) {
  if (n <= 0)
    return;
  auto launch = [&](auto width, auto index) {
    constexpr int w = decltype(width)::value;
    using Index = decltype(index);
    forEachKernel<w>
        <<<blocksFor((n + w - 1) / w), kThreads, 0, stream>>>(op, Index(n));
  };
  using Wide = std::integral_constant<int, Op::kWidth>;
  using One = std::integral_constant<int, 1>;
  // A 32-bit index stays below 2^32 while it strides past n (< 2^31).
  bool narrow = n <= INT32_MAX;
  if (aligned && narrow)
    launch(Wide(), uint32_t());
  else if (aligned)
    launch(Wide(), int64_t());
  else if (narrow)
    launch(One(), uint32_t());
  else
    launch(One(), int64_t());
  checkLaunch(name);
}

/// Calls `f(T *)` with the element type of `type`.
template <typename F> void dispatch(Dtype type, F f) {
  switch (type) {
  case Dtype::f32:
    return f(static_cast<float *>(nullptr));
  case Dtype::bf16:
    return f(static_cast<__nv_bfloat16 *>(nullptr));
  case Dtype::f16:
    return f(static_cast<__half *>(nullptr));
  default:
    break;
  }
  kernelFatal(std::string("CUDA target: a ") + dtypeName(type) +
              " buffer where a kernel computes on f32, bf16 or f16");
}

/// out[i] = f(in[0][i], ..., in[N - 1][i]) for N (0 to 2) inputs of In,
/// one rounding to Out per element; packs sized by the wider type.
template <typename In, typename Out, typename F, int N> struct Map {
  using Wider = std::conditional_t<(sizeof(In) > sizeof(Out)), In, Out>;
  static constexpr int kWidth = kPack<Wider>;
  const In *in[N > 0 ? N : 1];
  Out *out;
  F f;
  template <int W, typename Index> __device__ void apply(Index i) const {
    float v[N > 0 ? N : 1][W];
#pragma unroll
    for (int j = 0; j < N; ++j)
      loadPack<W>(in[j], i, v[j]);
    float r[W];
#pragma unroll
    for (int k = 0; k < W; ++k) {
      if constexpr (N == 0)
        r[k] = f();
      else if constexpr (N == 1)
        r[k] = f(v[0][k]);
      else
        r[k] = f(v[0][k], v[1][k]);
    }
    storePack<W>(out, i, r);
  }
};

/// out = f(in...) elementwise over `n` elements of `type` (out may be an
/// input).
template <size_t N, typename F>
void map(Dtype type, const std::array<const void *, N> &in, void *out,
         int64_t n, F f, cudaStream_t stream, const char *name) {
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    Map<T, T, F, int(N)> op{{}, static_cast<T *>(out), f};
    bool aligned = aligned16({out});
    for (size_t j = 0; j != N; ++j) {
      op.in[j] = static_cast<const T *>(in[j]);
      aligned = aligned && aligned16({in[j]});
    }
    forEach(op, n, aligned, stream, name);
  });
}

} // namespace titanrt::cuda::device

#endif // TITANRT_CUDA_DEVICEUTILS_CUH
