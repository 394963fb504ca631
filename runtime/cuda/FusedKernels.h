//===- FusedKernels.h - memory-bound kernels of the CUDA target -*- C++ -*-===//
//
// The CUDA versions of the CPU kernels of the same names (runtime/lib/
// Kernels.h), on row-major device buffers of f32 or bf16/f16 with f32
// arithmetic and one rounding per output, as the precision model defines.
// Each is one pass over its data. The RMSNorm weight gradient is summed
// over rows in a fixed order (per-block partial sums, then one reduction),
// so it is deterministic: no float atomics.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_FUSEDKERNELS_H
#define TITANRT_CUDA_FUSEDKERNELS_H

#include "LinearGemm.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace titanrt::cuda {

/// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w.
void rmsNorm(ElementType type, const void *x, const void *w, void *out,
             int64_t rows, int64_t dim, double eps, cudaStream_t stream);

/// The workspace rmsNormGrad needs: f32 partial sums of the weight
/// gradient.
size_t rmsNormGradWorkspaceBytes(int64_t rows, int64_t dim);
/// dx and dw of rmsNorm for the output gradient dy.
void rmsNormGrad(ElementType type, const void *x, const void *w, const void *dy,
                 void *dx, void *dw, int64_t rows, int64_t dim, double eps,
                 void *workspace, cudaStream_t stream);

/// out = silu(gate) * up.
void swiglu(ElementType type, const void *gate, const void *up, void *out,
            int64_t n, cudaStream_t stream);
/// dgate = dy * up * silu'(gate), dup = dy * silu(gate).
void swigluGrad(ElementType type, const void *gate, const void *up,
                const void *dy, void *dgate, void *dup, int64_t n,
                cudaStream_t stream);

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_FUSEDKERNELS_H
