//===- FusedKernels.h - memory-bound kernels of the CUDA target -*- C++ -*-===//
//
// The CUDA versions of the CPU kernels of the same names (runtime/lib/
// Kernels.h), on row-major device buffers of f32 or bf16/f16 with f32
// arithmetic and one rounding per output, as the precision model defines.
// Each is one pass over its data, in 16-byte accesses where the buffers
// are aligned (DeviceUtils.cuh). RMSNorm and the pointwise ops are
// kernels the compiler generates (docs/codegen.md).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_FUSEDKERNELS_H
#define TITANRT_CUDA_FUSEDKERNELS_H

#include "LinearGemm.h"

#include <cuda_runtime.h>

#include <cmath>

#include <cstddef>
#include <cstdint>

namespace titanrt::cuda {

/// out[i, :] = weight[tokens[i], :] for `n` tokens of rows of `dim`. With
/// `vocabStart` (a device pointer; tensor-parallel vocabulary shards) the
/// weight holds rows [*vocabStart, *vocabStart + vocab) and other tokens
/// give zero rows; without it tokens are in [0, vocab) (the runtime checks
/// the data), and any other gives a zero row rather than a stray read.
void embedding(Dtype type, const void *weight, const int32_t *tokens, void *out,
               int64_t n, int64_t vocab, int64_t dim, const int32_t *vocabStart,
               cudaStream_t stream);

/// The workspace embeddingGrad needs for `n` tokens.
size_t embeddingGradWorkspaceBytes(int64_t n);
/// out[v, :] = sum of grad[i, :] over the tokens i with tokens[i] = v (rows
/// of a vocabulary shard with `vocabStart`, as embedding), summed in token
/// order: the tokens are stably sorted (CUB's radix sort) and each
/// vocabulary row sums its run, so the result is the same bits on every run
/// and the CPU kernel's, with no float atomics.
void embeddingGrad(Dtype type, const void *grad, const int32_t *tokens,
                   void *out, int64_t n, int64_t vocab, int64_t dim,
                   const int32_t *vocabStart, void *workspace,
                   cudaStream_t stream);

/// One f32 tensor of the global gradient norm.
struct NormTensor {
  const float *data;
  int64_t n;
};
/// The workspace globalNorm needs for `count` tensors.
size_t globalNormWorkspaceBytes(int64_t count);
/// *norm = sqrt(sum_i float(||t_i||)^2) as torch.nn.utils.clip_grad_norm_
/// computes it (each tensor's norm rounded to f32 first), with f64 sums in a
/// fixed order: deterministic. `tensors` (host memory) travel as kernel
/// parameters, 64 per launch, so the call can be captured in a CUDA graph.
void globalNorm(const NormTensor *tensors, int64_t count, float *norm,
                void *workspace, cudaStream_t stream);

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_FUSEDKERNELS_H
