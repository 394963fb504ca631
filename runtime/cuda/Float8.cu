//===- Float8.cu - the CUDA target's Float8 kernels -----------------------===//

#include "Float8.h"

#include "DeviceUtils.cuh"

#include <cuda_fp8.h>

using namespace titanrt::cuda;
using namespace titanrt::cuda::device;

namespace {

/// max with NaN winning (torch.max propagates NaN; fmaxf drops it).
__device__ inline float nanMax(float a, float b) {
  return isnan(a) || isnan(b) ? NAN : fmaxf(a, b);
}

struct NanMax {
  __device__ float operator()(float a, float b) const { return nanMax(a, b); }
};

/// The non-negative float `v` as an order-preserving integer (NaN above
/// every number), for atomicMax.
__device__ inline void atomicMaxNonNegative(float *p, float v) {
  atomicMax(reinterpret_cast<unsigned *>(p), __float_as_uint(v));
}

template <typename T>
__global__ void amaxAll(const T *x, float *out, int64_t n) {
  float m = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    m = nanMax(m, fabsf(load(x, i)));
  // One block max, then one atomic per block: max is exact in any order.
  m = blockReduceInOrder(m, NanMax());
  if (threadIdx.x == 0)
    atomicMaxNonNegative(out, m);
}

template <typename T>
__global__ void amaxRows(const T *x, float *out, int64_t cols) {
  const T *row = x + blockIdx.x * cols;
  float m = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    m = nanMax(m, fabsf(load(row, j)));
  m = blockReduceInOrder(m, NanMax());
  if (threadIdx.x == 0)
    out[blockIdx.x] = m;
}

template <typename T>
__global__ void amaxColumns(const T *x, float *out, int64_t rows,
                            int64_t cols) {
  int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= cols)
    return;
  float m = 0;
  for (int64_t r = 0; r < rows; ++r)
    m = nanMax(m, fabsf(load(x, r * cols + j)));
  out[j] = m;
}

__global__ void scaleKernel(const float *amax, float *out, int64_t n,
                            bool powerOf2, double largest) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  double a = double(amax[i]);
  float s = float(largest / (isnan(a) ? a : fmax(a, 1e-12)));
  if (powerOf2)
    s = exp2f(floorf(log2f(s)));
  out[i] = s;
}

template <typename T>
__global__ void quantizeKernel(const T *x, const float *scale, uint8_t *out,
                               int64_t rows, int64_t cols, int scaleMode,
                               __nv_fp8_interpretation_t format) {
  int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float s = scaleMode == 0   ? scale[0]
              : scaleMode == 1 ? scale[i / cols]
                               : scale[i % cols];
    out[i] = __nv_cvt_float_to_fp8(load(x, i) * s, __NV_SATFINITE, format);
  }
}

__global__ void transposeKernel(const uint8_t *in, uint8_t *out, int64_t rows,
                                int64_t cols) {
  __shared__ uint8_t tile[32][33];
  int64_t c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32;
  for (int dy = threadIdx.y; dy < 32; dy += blockDim.y)
    if (r0 + dy < rows && c < cols)
      tile[dy][threadIdx.x] = in[(r0 + dy) * cols + c];
  __syncthreads();
  int64_t r = r0 + threadIdx.x, c0 = blockIdx.x * 32;
  for (int dx = threadIdx.y; dx < 32; dx += blockDim.y)
    if (c0 + dx < cols && r < rows)
      out[(c0 + dx) * rows + r] = tile[threadIdx.x][dx];
}

template <typename T>
__global__ void inverseScaleKernel(const float *acc, T *out, int64_t rows,
                                   int64_t cols, const float *lhs,
                                   bool lhsPerRow, const float *rhs,
                                   bool rhsPerColumn) {
  int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float invL = 1.0f / lhs[lhsPerRow ? i / cols : 0];
    float invR = 1.0f / rhs[rhsPerColumn ? i % cols : 0];
    store(out, i, acc[i] * (invL * invR));
  }
}

} // namespace

void titanrt::cuda::amax(ElementType type, const void *x, float *out,
                         int64_t rows, int64_t cols, int reduction,
                         cudaStream_t stream) {
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T *in = static_cast<const T *>(x);
    if (reduction == 0) {
      cudaMemsetAsync(out, 0, sizeof(float), stream);
      amaxAll<<<blocksFor(rows * cols), kThreads, 0, stream>>>(in, out,
                                                               rows * cols);
    } else if (reduction == 1) {
      amaxRows<<<unsigned(rows), kThreads, 0, stream>>>(in, out, cols);
    } else {
      amaxColumns<<<blocksFor(cols), kThreads, 0, stream>>>(in, out, rows,
                                                            cols);
    }
  });
  checkLaunch("amax");
}

void titanrt::cuda::float8Scale(const float *amax, float *out, int64_t n,
                                bool powerOf2, double fmax,
                                cudaStream_t stream) {
  scaleKernel<<<blocksFor(n), kThreads, 0, stream>>>(amax, out, n, powerOf2,
                                                     fmax);
  checkLaunch("float8_scale");
}

void titanrt::cuda::quantize(ElementType type, const void *x,
                             const float *scale, uint8_t *out, int64_t rows,
                             int64_t cols, int scaleMode, bool e5m2,
                             cudaStream_t stream) {
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    quantizeKernel<<<blocksFor(rows * cols), kThreads, 0, stream>>>(
        static_cast<const T *>(x), scale, out, rows, cols, scaleMode,
        e5m2 ? __NV_E5M2 : __NV_E4M3);
  });
  checkLaunch("quantize");
}

void titanrt::cuda::transposeBytes(const uint8_t *in, uint8_t *out,
                                   int64_t rows, int64_t cols,
                                   cudaStream_t stream) {
  dim3 block(32, 8),
      grid(unsigned((cols + 31) / 32), unsigned((rows + 31) / 32));
  transposeKernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
  checkLaunch("transpose (float8)");
}

void titanrt::cuda::applyInverseScales(const float *acc, ElementType type,
                                       void *out, int64_t rows, int64_t cols,
                                       const float *lhsScale, bool lhsPerRow,
                                       const float *rhsScale, bool rhsPerColumn,
                                       cudaStream_t stream) {
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    inverseScaleKernel<<<blocksFor(rows * cols), kThreads, 0, stream>>>(
        acc, static_cast<T *>(out), rows, cols, lhsScale, lhsPerRow, rhsScale,
        rhsPerColumn);
  });
  checkLaunch("scaled_matmul (inverse scales)");
}
