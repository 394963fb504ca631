//===- FusedKernels.cu - memory-bound kernels of the CUDA target ----------===//

#include "FusedKernels.h"

#include "DeviceUtils.cuh"
#include "Error.h"
#include "titan/Contract/CUDAWorkspaces.h"

#include <cub/device/device_radix_sort.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace titanrt;
using namespace titanrt::cuda;
using namespace titanrt::cuda::device;

namespace {

template <typename T>
__global__ void embeddingKernel(const T *weight, const int32_t *tokens, T *out,
                                int64_t n, int64_t vocab, int64_t dim,
                                const int32_t *vocabStart) {
  int64_t first = vocabStart ? *vocabStart : 0;
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    int64_t row = int64_t(tokens[i]) - first;
    bool inside = row >= 0 && row < vocab;
    for (int64_t d = threadIdx.x; d < dim; d += kThreads)
      out[i * dim + d] = inside ? weight[row * dim + d] : T(0.0f);
  }
}

/// Sort keys (the token's row, or `vocab` for a token outside the shard,
/// sorted last and skipped) and values (the token's position).
__global__ void embeddingKeysKernel(const int32_t *tokens, int32_t *keys,
                                    int32_t *positions, int64_t n,
                                    int64_t vocab, const int32_t *vocabStart) {
  int64_t first = vocabStart ? *vocabStart : 0;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * kThreads) {
    int64_t row = int64_t(tokens[i]) - first;
    keys[i] = row >= 0 && row < vocab ? int32_t(row) : int32_t(vocab);
    positions[i] = int32_t(i);
  }
}

/// A block per sorted position that starts a run of equal keys: the sum of
/// the run's gradient rows, in position order, into that vocabulary row.
template <typename T>
__global__ void embeddingGradRunsKernel(const T *grad, const int32_t *keys,
                                        const int32_t *positions, T *out,
                                        int64_t n, int64_t vocab, int64_t dim) {
  for (int64_t p = blockIdx.x; p < n; p += gridDim.x) {
    int32_t key = keys[p];
    if (key >= vocab || (p > 0 && keys[p - 1] == key))
      continue;
    int64_t end = p + 1;
    while (end < n && keys[end] == key)
      ++end;
    for (int64_t d = threadIdx.x; d < dim; d += kThreads) {
      float sum = 0;
      for (int64_t q = p; q < end; ++q)
        sum += load(grad, int64_t(positions[q]) * dim + d);
      store(out, int64_t(key) * dim + d, sum);
    }
  }
}

/// Tensors of one global-norm launch, passed by value (kernel parameters
/// are captured with a graph; a device array would have to be written
/// inside the step).
constexpr int kNormTensorsPerLaunch = 64;
struct NormTensorChunk {
  NormTensor t[kNormTensorsPerLaunch];
};

/// Per-block partial sums of squares (f64) of each tensor: partials[tensor *
/// gridDim.x + block].
__global__ void sumOfSquaresKernel(NormTensorChunk chunk, double *partials) {
  NormTensor t = chunk.t[blockIdx.y];
  double s = 0;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < t.n;
       i += int64_t(gridDim.x) * kThreads) {
    double v = t.data[i];
    s += v * v;
  }
  s = blockSumInOrder(s);
  if (threadIdx.x == 0)
    partials[int64_t(blockIdx.y) * gridDim.x + blockIdx.x] = s;
}

/// Each tensor's norm (rounded to f32), then the norm of norms, in order.
__global__ void normOfNormsKernel(const double *partials, int64_t count,
                                  int64_t blocks, float *norm) {
  if (threadIdx.x != 0)
    return;
  double total = 0;
  for (int64_t t = 0; t < count; ++t) {
    double s = 0;
    for (int64_t b = 0; b < blocks; ++b)
      s += partials[t * blocks + b];
    float n = float(sqrt(s));
    total += double(n) * n;
  }
  *norm = float(sqrt(total));
}

/// Blocks per tensor of globalNorm's first pass.
constexpr int64_t kNormBlocks = titan::cuda::kNormBlocks;

} // namespace

void titanrt::cuda::embedding(Dtype type, const void *weight,
                              const int32_t *tokens, void *out, int64_t n,
                              int64_t vocab, int64_t dim,
                              const int32_t *vocabStart, cudaStream_t stream) {
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    unsigned blocks = unsigned(std::clamp<int64_t>(n, 1, int64_t(65535) * 16));
    embeddingKernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T *>(weight), tokens, static_cast<T *>(out), n, vocab,
        dim, vocabStart);
  });
  checkLaunch("embedding");
}

size_t titanrt::cuda::globalNormWorkspaceBytes(int64_t count) {
  return size_t(titan::cuda::globalNormWorkspaceBytes(count));
}

void titanrt::cuda::globalNorm(const NormTensor *tensors, int64_t count,
                               float *norm, void *workspace,
                               cudaStream_t stream) {
  auto *partials = static_cast<double *>(workspace);
  for (int64_t first = 0; first < count; first += kNormTensorsPerLaunch) {
    NormTensorChunk chunk{};
    int64_t n = std::min<int64_t>(kNormTensorsPerLaunch, count - first);
    std::copy(tensors + first, tensors + first + n, chunk.t);
    dim3 grid{unsigned(kNormBlocks), unsigned(n)};
    sumOfSquaresKernel<<<grid, kThreads, 0, stream>>>(
        chunk, partials + first * kNormBlocks);
    checkLaunch("global_norm");
  }
  normOfNormsKernel<<<1, 32, 0, stream>>>(partials, count, kNormBlocks, norm);
  checkLaunch("global_norm (norm of norms)");
}
namespace {
/// The workspace of embeddingGrad: keys and positions, sorted copies of
/// both (256-byte aligned), then CUB's temporary storage.
struct EmbeddingGradLayout {
  size_t keyBytes, sortBytes;
  explicit EmbeddingGradLayout(int64_t n) {
    keyBytes = size_t(titan::cuda::embeddingGradKeyBytes(n));
    sortBytes = 0;
    cub::DeviceRadixSort::SortPairs(nullptr, sortBytes, (int32_t *)nullptr,
                                    (int32_t *)nullptr, (int32_t *)nullptr,
                                    (int32_t *)nullptr, int(n));
  }
};
} // namespace

size_t titanrt::cuda::embeddingGradWorkspaceBytes(int64_t n) {
  return size_t(titan::cuda::embeddingGradWorkspaceBytes(n));
}

void titanrt::cuda::embeddingGrad(Dtype type, const void *grad,
                                  const int32_t *tokens, void *out, int64_t n,
                                  int64_t vocab, int64_t dim,
                                  const int32_t *vocabStart, void *workspace,
                                  cudaStream_t stream) {
  if (n > int64_t(INT32_MAX) || vocab >= int64_t(INT32_MAX))
    kernelFatal("embedding_grad: " + std::to_string(n) + " tokens or " +
                std::to_string(vocab) + " rows exceed the 32-bit sort keys");
  EmbeddingGradLayout layout(n);
  // The plan reserves a bound on CUB's storage (KernelWorkspaces.h).
  if (layout.sortBytes > size_t(titan::cuda::embeddingGradSortBytes(n)))
    kernelFatal("embedding_grad: CUB's radix sort asks for " +
                std::to_string(layout.sortBytes) + " bytes of storage for " +
                std::to_string(n) + " tokens, more than the planned " +
                std::to_string(titan::cuda::embeddingGradSortBytes(n)) +
                " (titan/Contract/CUDAWorkspaces.h)");
  char *base = static_cast<char *>(workspace);
  auto *keys = reinterpret_cast<int32_t *>(base);
  auto *positions = reinterpret_cast<int32_t *>(base + layout.keyBytes);
  auto *sortedKeys = reinterpret_cast<int32_t *>(base + 2 * layout.keyBytes);
  auto *sortedPositions =
      reinterpret_cast<int32_t *>(base + 3 * layout.keyBytes);
  size_t sortBytes = layout.sortBytes;
  if (cudaMemsetAsync(out, 0, size_t(vocab * dim * dtypeBytes(type)), stream) !=
      cudaSuccess)
    kernelFatal("embedding_grad: cudaMemsetAsync failed");
  embeddingKeysKernel<<<blocksFor(n), kThreads, 0, stream>>>(
      tokens, keys, positions, n, vocab, vocabStart);
  checkLaunch("embedding_grad (keys)");
  // Radix sorts are stable: equal rows keep their position order. Keys are
  // in [0, vocab], so only their low bits are sorted.
  int bits = 1;
  while ((int64_t(1) << bits) <= vocab)
    ++bits;
  cudaError_t rc = cub::DeviceRadixSort::SortPairs(
      base + 4 * layout.keyBytes, sortBytes, keys, sortedKeys, positions,
      sortedPositions, int(n), 0, bits, stream);
  if (rc != cudaSuccess)
    kernelFatal(std::string("embedding_grad: cub::DeviceRadixSort::SortPairs "
                            "failed: ") +
                cudaGetErrorString(rc));
  dispatch(type, [&](auto *tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    unsigned blocks = unsigned(std::clamp<int64_t>(n, 1, int64_t(65535) * 16));
    embeddingGradRunsKernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T *>(grad), sortedKeys, sortedPositions,
        static_cast<T *>(out), n, vocab, dim);
  });
  checkLaunch("embedding_grad");
}
