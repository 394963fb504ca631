//===- Float8.h - the CUDA target's Float8 kernels --------------*- C++ -*-===//
//
// titan-expand-float8's kernels on device buffers, the same contracts as
// the CPU target's (runtime/lib/KernelABI.cpp): amax, the scale, the
// saturating cast (CUDA's own __nv_cvt_float_to_fp8, which the CPU
// emulation matches bit for bit), and the pieces of the scaled GEMM around
// cuBLASLt's FP8 GEMM: cuBLASLt on Hopper multiplies FP8 only in the "TN"
// layout (both operands K-major), so grad_input and grad_weight transpose
// their operands first, and the rows' and columns' inverse scales (one,
// or one per row/column: rowwise) are applied to its f32 product by one
// fused kernel that also rounds to the result type.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_FLOAT8_H
#define TITANRT_CUDA_FLOAT8_H

#include "LinearGemm.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace titanrt::cuda {

/// out = max |x| of a rows x cols tensor: `reduction` 0 over everything
/// (out[0]), 1 per row (out[rows]), 2 per column (out[cols]). NaN wins.
void amax(ElementType type, const void *x, float *out, int64_t rows,
          int64_t cols, int reduction, cudaStream_t stream);

/// out[i] = f32(fmax / max(f64(amax[i]), 1e-12)), rounded down to a power
/// of two when `powerOf2`.
void float8Scale(const float *amax, float *out, int64_t n, bool powerOf2,
                 double fmax, cudaStream_t stream);

/// out = fp8(x * scale) with saturation; `scaleMode` 0 one scale, 1 per
/// row, 2 per column.
void quantize(ElementType type, const void *x, const float *scale, uint8_t *out,
              int64_t rows, int64_t cols, int scaleMode, bool e5m2,
              cudaStream_t stream);

/// out[c][r] = in[r][c] for a rows x cols byte matrix.
void transposeBytes(const uint8_t *in, uint8_t *out, int64_t rows, int64_t cols,
                    cudaStream_t stream);

/// out[r][c] = acc[r][c] * (1 / lhsScale[r or 0]) * (1 / rhsScale[c or 0]),
/// rounded to `type`.
void applyInverseScales(const float *acc, ElementType type, void *out,
                        int64_t rows, int64_t cols, const float *lhsScale,
                        bool lhsPerRow, const float *rhsScale,
                        bool rhsPerColumn, cudaStream_t stream);

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_FLOAT8_H
