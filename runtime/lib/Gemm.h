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
// of threads (Gemm.cpp). On a CPU with bf16 matrix units (AMX), bf16
// operands run oneDNN's bf16 matmul into f32 instead, in blocks fixed the
// same way: 4-5x the f32 rate at the debug model's shapes on a Sapphire
// Rapids core; the products are exact in f32 either way, only the order of
// the f32 sums differs from the f32 GEMM on widened copies.
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

/// A bf16 value's bits (a GEMM operand type distinct from uint16_t's f16).
struct BFloat16 {
  uint16_t bits;
};

/// Whether bf16 GEMMs run on bf16 matrix units here (oneDNN's effective ISA
/// has AMX), unless TITAN_CPU_BF16_MATMUL=0 turns them off: the 16-bit
/// linears then take the bf16 GEMM below rather than f32 copies.
bool hasFastBf16Gemm();

/// C (f32) = op(A) op(B) + beta C on bf16 operands (alpha 1): oneDNN's bf16
/// matmul, one primitive per block shape (created once per process).
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const BFloat16 *a, int64_t lda, const BFloat16 *b,
          int64_t ldb, float beta, float *c, int64_t ldc);

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
