//===- Float8.cu - the CUDA target's Float8 kernels -----------------------===//

#include "Float8.h"

#include "DeviceUtils.cuh"

#include "titan/Contract/CUDAWorkspaces.h"

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
__global__ void amaxRows(const T *x, float *out, int64_t cols) {
  const T *row = x + blockIdx.x * cols;
  float m = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    m = nanMax(m, fabsf(load(row, j)));
  m = blockReduceInOrder(m, NanMax());
  if (threadIdx.x == 0)
    out[blockIdx.x] = m;
}

/// Column maxima on a 2-D grid: blockIdx.x picks 32 columns (one per lane,
/// coalesced), blockIdx.y a share of the rows; the block's 8 row lanes
/// combine in shared memory and each column takes one atomic max per block
/// (exact in any order, so deterministic).
constexpr int kColumnLanes = 32, kRowLanes = 8;
template <typename T>
__global__ void amaxColumns(const T *x, float *out, int64_t rows,
                            int64_t cols) {
  __shared__ float part[kRowLanes][kColumnLanes];
  int64_t j = blockIdx.x * int64_t(kColumnLanes) + threadIdx.x;
  float m = 0;
  if (j < cols)
    for (int64_t r = blockIdx.y * int64_t(kRowLanes) + threadIdx.y; r < rows;
         r += int64_t(gridDim.y) * kRowLanes)
      m = nanMax(m, fabsf(load(x, r * cols + j)));
  part[threadIdx.y][threadIdx.x] = m;
  __syncthreads();
  if (threadIdx.y != 0 || j >= cols)
    return;
  for (int y = 1; y < kRowLanes; ++y)
    m = nanMax(m, part[y][threadIdx.x]);
  atomicMaxNonNegative(out + j, m);
}

/// The float8 code of element (r, c) of a rows x cols input, cast with its
/// scale (`scaleMode` 0 one, 1 per row, 2 per column): the one cast both
/// quantize kernels write.
template <typename T> struct QuantizedCodes {
  const T *x;
  const float *scale;
  int64_t cols;
  int scaleMode;
  __nv_fp8_interpretation_t format;
  __device__ uint8_t operator()(int64_t r, int64_t c) const {
    return at(r * cols + c, scaleMode == 1 ? r : c);
  }
  /// Element i, its (r, c) found only where its scale needs them.
  __device__ uint8_t operator()(int64_t i) const {
    return at(i, scaleMode == 0 ? 0 : scaleMode == 1 ? i / cols : i % cols);
  }
  __device__ uint8_t at(int64_t i, int64_t scaleIndex) const {
    float s = scale[scaleMode == 0 ? 0 : scaleIndex];
    return __nv_cvt_float_to_fp8(load(x, i) * s, __NV_SATFINITE, format);
  }
};

template <typename T>
__global__ void quantizeKernel(QuantizedCodes<T> codes, uint8_t *out,
                               int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = codes(i);
}

/// The bytes of a rows x cols byte matrix, as they stand.
struct StoredBytes {
  const uint8_t *in;
  int64_t cols;
  __device__ uint8_t operator()(int64_t r, int64_t c) const {
    return in[r * cols + c];
  }
};

/// out[c][r] = code(r, c) for a rows x cols matrix of byte codes (a stored
/// one, or a cast's), in 32 x 32 tiles through shared memory: reads along
/// the input's rows and writes along the output's are both coalesced.
/// blockIdx.x runs over the row tiles (up to 2^31 - 1 of them), blockIdx.y
/// over the column tiles, striding past gridDim.y's 65535.
template <typename Codes>
__global__ void transposeKernel(Codes code, uint8_t *out, int64_t rows,
                                int64_t cols) {
  __shared__ uint8_t tile[32][33];
  int64_t r0 = blockIdx.x * int64_t(32);
  for (int64_t c0 = blockIdx.y * int64_t(32); c0 < cols;
       c0 += int64_t(gridDim.y) * 32) {
    int64_t c = c0 + threadIdx.x;
    for (int dy = threadIdx.y; dy < 32; dy += blockDim.y)
      if (r0 + dy < rows && c < cols)
        tile[dy][threadIdx.x] = code(r0 + dy, c);
    __syncthreads();
    int64_t r = r0 + threadIdx.x;
    for (int dx = threadIdx.y; dx < 32; dx += blockDim.y)
      if (c0 + dx < cols && r < rows)
        out[(c0 + dx) * rows + r] = tile[threadIdx.x][dx];
    __syncthreads(); // the tile is rewritten for the next column tile
  }
}

/// Launches transposeKernel over a rows x cols matrix (none when empty).
template <typename Codes>
void transposeCodes(Codes code, uint8_t *out, int64_t rows, int64_t cols,
                    cudaStream_t stream) {
  if (rows * cols == 0)
    return;
  dim3 block(32, 8), grid(unsigned((rows + 31) / 32),
                          unsigned(std::min<int64_t>((cols + 31) / 32, 65535)));
  transposeKernel<<<grid, block, 0, stream>>>(code, out, rows, cols);
}

/// out[i] = 1 / scale[i or 0] of both operands (the lhs's indices first):
/// the inverse scales cuBLASLt multiplies the FP8 product by, a scalar one
/// broadcast to `n` when the other operand's are a vector.
__global__ void inverseScalesKernel(titanrt::cuda::InverseScales lhs,
                                    titanrt::cuda::InverseScales rhs) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  titanrt::cuda::InverseScales s = i < lhs.n ? lhs : rhs;
  int64_t j = i < lhs.n ? i : i - lhs.n;
  if (j < s.n)
    s.out[j] = 1.0f / s.scale[s.perElement ? j : 0];
}

/// Zeroes `n` floats that atomic maxima then raise.
void zero(float *out, int64_t n, cudaStream_t stream) {
  cudaError_t rc = cudaMemsetAsync(out, 0, size_t(n) * sizeof(float), stream);
  if (rc != cudaSuccess)
    titanrt::kernelFatal(std::string("amax: cudaMemsetAsync failed: ") +
                         cudaGetErrorString(rc));
}

/// Column blocks times enough row shares for about 2048 blocks (every SM
/// busy several times over), each share at least one block row.
dim3 columnGrid(int64_t rows, int64_t cols) {
  int64_t x = (cols + kColumnLanes - 1) / kColumnLanes;
  int64_t y = std::clamp<int64_t>((2048 + x - 1) / x, 1,
                                  (rows + kRowLanes - 1) / kRowLanes);
  return dim3(unsigned(x), unsigned(std::min<int64_t>(y, 65535)));
}
} // namespace

void titanrt::cuda::amax(Dtype type, const void *x, float *out, int64_t rows,
                         int64_t cols, int reduction, cudaStream_t stream) {
  // The whole tensor's amax is a generated kernel (kernel.generic's absmax
  // reduction, fused with its producer where it can be).
  if (reduction == 0)
    titanrt::kernelFatal("amax over the whole tensor is a generated kernel "
                         "(kernel-generate-pointwise), not the library's");
  // Nothing to launch without outputs.
  int64_t outputs = reduction == 1 ? rows : cols;
  if (outputs == 0)
    return;
  if (reduction != 1 || cols == 0)
    zero(out, outputs, stream);
  if (rows * cols == 0)
    return;
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T *in = static_cast<const T *>(x);
    if (reduction == 1)
      amaxRows<<<unsigned(rows), kThreads, 0, stream>>>(in, out, cols);
    else
      amaxColumns<<<columnGrid(rows, cols), dim3(kColumnLanes, kRowLanes), 0,
                    stream>>>(in, out, rows, cols);
  });
  checkLaunch("amax");
}

void titanrt::cuda::quantize(Dtype type, const void *x, const float *scale,
                             uint8_t *out, int64_t rows, int64_t cols,
                             int scaleMode, bool e5m2, bool transposed,
                             cudaStream_t stream) {
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    QuantizedCodes<T> codes{static_cast<const T *>(x), scale, cols, scaleMode,
                            e5m2 ? __NV_E5M2 : __NV_E4M3};
    if (transposed)
      transposeCodes(codes, out, rows, cols, stream);
    else
      quantizeKernel<<<blocksFor(rows * cols), kThreads, 0, stream>>>(
          codes, out, rows * cols);
  });
  checkLaunch("quantize");
}

void titanrt::cuda::transposeBytes(const uint8_t *in, uint8_t *out,
                                   int64_t rows, int64_t cols,
                                   cudaStream_t stream) {
  transposeCodes(StoredBytes{in, cols}, out, rows, cols, stream);
  checkLaunch("transpose (float8)");
}

void titanrt::cuda::inverseScales(const InverseScales &lhs,
                                  const InverseScales &rhs,
                                  cudaStream_t stream) {
  inverseScalesKernel<<<blocksFor(lhs.n + rhs.n), kThreads, 0, stream>>>(lhs,
                                                                         rhs);
  checkLaunch("scaled_matmul (inverse scales)");
}

/// The operand's data K-major: as it stands, or its transposed copy at
/// `copy` when `copies`.
static const uint8_t *kMajor(const ScaledOperand &operand, bool copies,
                             char *copy, cudaStream_t stream) {
  if (!copies)
    return operand.data;
  auto *t = reinterpret_cast<uint8_t *>(copy);
  transposeBytes(operand.data, t, operand.rows, operand.cols, stream);
  return t;
}

GemmProblem titanrt::cuda::scaledMatmulProblem(int form,
                                               const ScaledOperand &lhs,
                                               const ScaledOperand &rhs,
                                               Dtype result, int64_t rows,
                                               int64_t cols, bool accumulate) {
  using titan::cuda::ScaledMatmulForm;
  auto f = ScaledMatmulForm(form);
  int64_t depth = f == ScaledMatmulForm::Linear      ? lhs.cols
                  : f == ScaledMatmulForm::GradInput ? rhs.rows
                                                     : lhs.rows;
  bool outer = lhs.perElement || rhs.perElement;
  GemmProblem p{LinearProduct::Forward, rows, depth, cols, lhs.type, result};
  p.second = rhs.type;
  p.scaling = outer ? GemmScaling::OuterVector : GemmScaling::Tensorwise;
  p.fastAccumulation = scaledMatmulFastAccumulation(f);
  p.accumulate = accumulate;
  return p;
}

void titanrt::cuda::scaledMatmul(LinearGemms &gemms, int form,
                                 const ScaledOperand &lhs,
                                 const ScaledOperand &rhs, Dtype result,
                                 void *out, int64_t rows, int64_t cols,
                                 void *workspace, cudaStream_t stream,
                                 bool accumulate) {
  using titan::cuda::ScaledMatmulForm;
  auto f = ScaledMatmulForm(form);
  titan::cuda::ScaledMatmulWorkspace parts = titan::cuda::scaledMatmulWorkspace(
      f, lhs.rows * lhs.cols, rhs.rows * rhs.cols, rows, cols, lhs.transposed,
      rhs.transposed);
  char *w = static_cast<char *>(workspace);
  auto *lhsInverse = reinterpret_cast<float *>(w + parts.lhsInverseScales);
  auto *rhsInverse = reinterpret_cast<float *>(w + parts.rhsInverseScales);
  // TN: linear x [m, k] . w [n, k]^T as it stands; grad_input
  // dy [m, n] . (w^T [k, n])^T; grad_weight dy^T [n, m] . (x^T [k, m])^T.
  const uint8_t *a = kMajor(lhs, parts.copiesLhs, w + parts.lhsTransposed,
                            stream),
                *b = kMajor(rhs, parts.copiesRhs, w + parts.rhsTransposed,
                            stream);
  // One inverse scale each (tensorwise), or one per result row and column
  // (a scalar broadcast): cuBLASLt's outer-vector mode scales both inputs.
  GemmProblem p =
      scaledMatmulProblem(form, lhs, rhs, result, rows, cols, accumulate);
  bool outer = p.scaling == GemmScaling::OuterVector;
  inverseScales({lhs.scale, lhs.perElement, lhsInverse, outer ? rows : 1},
                {rhs.scale, rhs.perElement, rhsInverse, outer ? cols : 1},
                stream);
  gemms.run(p, a, b, out, w + parts.gemm, stream,
            GemmScales{lhsInverse, rhsInverse});
}
