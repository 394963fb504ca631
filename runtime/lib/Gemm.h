//===- Gemm.h - the CPU kernels' GEMMs --------------------------*- C++ -*-===//
//
// Row-major C = alpha * op(A) op(B) + beta * C, for every CPU kernel that
// multiplies matrices (the linears, attention's tiles, Float8's scaled
// GEMMs). f32 runs on oneDNN, whose kernels follow the CPU's features
// (AVX-512 here: 4-5x Debian's OpenBLAS 0.3.21, which falls back to generic
// kernels on CPUs it does not know); bf16 linears use it on their exact f32
// copies (oneDNN's bf16 GEMMs are slower than f32 without AMX, see
// docs/cpu.md); f64 (the gradient checks) runs on OpenBLAS, as
// oneDNN has none. Called inside an OpenMP parallel region, a
// GEMM runs on the calling thread alone; outside, an f32 GEMM runs in
// blocks of C fixed by its shape, so its bits do not depend on the number
// of threads (Gemm.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_GEMM_H
#define TITANRT_LIB_GEMM_H

#include <cstdint>

namespace titanrt::kernels {

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
          float beta, float *c, int64_t ldc);
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc);

/// The same product as one call on the calling thread, for the tiles of a
/// kernel's own parallel loop (attention): one call per tile keeps oneDNN's
/// per-call cost small, and a tile never depends on the thread count.
void gemmOnThisThread(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      float alpha, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float beta, float *c, int64_t ldc);
void gemmOnThisThread(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      double alpha, const double *a, int64_t lda,
                      const double *b, int64_t ldb, double beta, double *c,
                      int64_t ldc);

} // namespace titanrt::kernels

#endif // TITANRT_LIB_GEMM_H
