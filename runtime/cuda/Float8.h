//===- Float8.h - the CUDA target's Float8 kernels --------------*- C++ -*-===//
//
// titan-expand-float8's kernels on device buffers, the same contracts as
// the CPU target's (runtime/lib/KernelABI.cpp): amax, the scale, the
// saturating cast (CUDA's own __nv_cvt_float_to_fp8, which the CPU
// emulation matches bit for bit), and the pieces of the scaled GEMM around
// cuBLASLt's FP8 GEMM: cuBLASLt on Hopper multiplies FP8 only in the "TN"
// layout (both operands K-major), which the cast writes directly for
// grad_input's and grad_weight's operands (a transposed quantize); an
// operand that comes otherwise (the FSDP float8 all-gather's weight) is
// transposed in the workspace first; cuBLASLt itself multiplies its f32
// accumulator by
// the rows' and columns' inverse scales (tensorwise: one each, by scale
// pointers; rowwise: one per row and column, by its outer-vector scale
// mode) and rounds once to the result type.
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
/// Maxima over nothing are 0; nothing is launched for no outputs.
void amax(Dtype type, const void *x, float *out, int64_t rows, int64_t cols,
          int reduction, cudaStream_t stream);

/// out = fp8(x * scale) with saturation for a rows x cols x; `scaleMode` 0
/// one scale, 1 per row, 2 per column. `transposed` writes out cols x rows
/// (element (r, c) at c * rows + r) through the transpose's shared-memory
/// tiles: the K-major operand of a scaled GEMM in one pass.
void quantize(Dtype type, const void *x, const float *scale, uint8_t *out,
              int64_t rows, int64_t cols, int scaleMode, bool e5m2,
              bool transposed, cudaStream_t stream);

/// out[c][r] = in[r][c] for a rows x cols byte matrix (any number of rows).
void transposeBytes(const uint8_t *in, uint8_t *out, int64_t rows, int64_t cols,
                    cudaStream_t stream);

/// The inverse scales of one operand: out[i] = 1 / scale[perElement ? i :
/// 0] for i < n.
struct InverseScales {
  const float *scale;
  bool perElement;
  float *out;
  int64_t n;
};

/// Both operands' inverse scales, which cuBLASLt multiplies the FP8
/// product by (GemmPlan.h's GemmScaling), in one launch.
void inverseScales(const InverseScales &lhs, const InverseScales &rhs,
                   cudaStream_t stream);

/// One float8 operand of a scaled GEMM: a rows x cols matrix, row-major or,
/// `transposed`, stored cols x rows (titan.quantize's transposed layout),
/// and its f32 scales (one, or one per element of the dimension it is not
/// reduced over: `perElement`).
struct ScaledOperand {
  const uint8_t *data;
  Dtype type;
  int64_t rows, cols;
  const float *scale;
  bool perElement;
  bool transposed;
};

/// The cuBLASLt problem of scaledMatmul (host only, no GPU): always the
/// "TN" forward product of the K-major operands, of depth the form's
/// reduced dimension; rowwise (outer-vector) when either operand's scales
/// are per element; fast accumulation for the linear form only
/// (scaledMatmulFastAccumulation, GemmPlan.h). An f32 result is cuBLASLt's
/// own in both scale modes: NVIDIA's cublasLtMatmul() FP8 type table
/// (cuBLAS docs, CUDA 13.x) lists Ctype = Dtype = CUDA_R_32F for e4m3 x
/// e4m3 and e5m2 x e4m3, and its footnote on the outer-vector and block
/// scale modes excludes only float8 D types; PyTorch's bf16-only rowwise
/// _scaled_mm (which torchao works around) is PyTorch's restriction.
/// `accumulate` adds the scaled product into the result (beta = 1, C = D:
/// the same table's C type is D's for bf16, f16 and f32 results).
GemmProblem scaledMatmulProblem(int form, const ScaledOperand &lhs,
                                const ScaledOperand &rhs, Dtype result,
                                int64_t rows, int64_t cols,
                                bool accumulate = false);

/// titan.scaled_matmul (form 0 linear, 1 grad_input, 2 grad_weight; the
/// contract is runtime/lib/KernelABI.cpp's) into the rows x cols `out` of
/// type `result`: the operands copied K-major where the form needs it and
/// they do not come transposed, their inverse scales, then cuBLASLt's
/// scaled FP8 GEMM, adding into `out` when `accumulate`. `workspace` is
/// 256-byte aligned and carved by titan::cuda::scaledMatmulWorkspace.
void scaledMatmul(LinearGemms &gemms, int form, const ScaledOperand &lhs,
                  const ScaledOperand &rhs, Dtype result, void *out,
                  int64_t rows, int64_t cols, void *workspace,
                  cudaStream_t stream, bool accumulate = false);

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_FLOAT8_H
