//===- ScaledGemm.cpp - titan.scaled_matmul's pieces on the CPU -----------===//

#include "ScaledGemm.h"

#include "LowPrecision.h"

namespace titanrt::kernels {

void decodeFloat8(const uint8_t *codes, int64_t rows, int64_t cols,
                  bool transposed, Dtype format, float *out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j)
      out[r * cols + j] =
          fp8ToFloat(codes[transposed ? j * rows + r : r * cols + j], format);
}

void applyInverseScales(const float *product, const float *lhsScale,
                        bool perRow, const float *rhsScale, bool perColumn,
                        int64_t rows, int64_t cols, bool accumulate,
                        float *result) {
  for (int64_t r = 0; r < rows; ++r) {
    float invL = 1.0f / lhsScale[perRow ? r : 0];
    for (int64_t j = 0; j < cols; ++j) {
      int64_t i = r * cols + j;
      float scaled = product[i] * (invL * (1.0f / rhsScale[perColumn ? j : 0]));
      result[i] = accumulate ? result[i] + scaled : scaled;
    }
  }
}

} // namespace titanrt::kernels
