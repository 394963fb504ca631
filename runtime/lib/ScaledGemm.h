//===- ScaledGemm.h - titan.scaled_matmul's pieces on the CPU --*- C++ -*-===//
//
// The float8 GEMM as the CPU computes it: the operands decoded to f32 (every
// float8 value is an f32, so exactly), an f32 GEMM, then each product
// element times its row's and column's inverse scales. The scaled_matmul
// entry (KernelABI.cpp) and Float8's collective matmuls
// (AsyncTensorParallel.cpp) share these, so a ring's row blocks compute the
// bits the whole GEMM does.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_SCALEDGEMM_H
#define TITANRT_LIB_SCALEDGEMM_H

#include "titan/Contract/Dtype.h"

#include <cstdint>

namespace titanrt::kernels {

using titan::Dtype;

/// The format of a float8 code in the catalog's parameters (0 f8E4M3FN, 1
/// f8E5M2).
inline Dtype float8Format(int64_t code) {
  return code == 1 ? Dtype::f8E5M2 : Dtype::f8E4M3FN;
}

/// The f32 values of a `rows` x `cols` float8 matrix in row-major order;
/// `transposed`: the codes are stored `cols` x `rows` (K-major).
void decodeFloat8(const uint8_t *codes, int64_t rows, int64_t cols,
                  bool transposed, Dtype format, float *out);

/// result[r][j] = product[r][j] * (1 / lhsScale[r] * (1 / rhsScale[j])),
/// plus result's old value when `accumulate` (cuBLASLt's epilogue with
/// beta = 1). A scale without `perRow` / `perColumn` is one for all.
void applyInverseScales(const float *product, const float *lhsScale,
                        bool perRow, const float *rhsScale, bool perColumn,
                        int64_t rows, int64_t cols, bool accumulate,
                        float *result);

} // namespace titanrt::kernels

#endif // TITANRT_LIB_SCALEDGEMM_H
