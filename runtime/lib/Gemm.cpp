//===- Gemm.cpp - the CPU kernels' GEMMs ----------------------------------===//

#include "Gemm.h"

#include "Error.h"

#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <algorithm>

#include <string>

namespace titanrt::kernels {

namespace {
void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           float alpha, const float *a, int64_t lda, const float *b,
           int64_t ldb, float beta, float *c, int64_t ldc) {
  dnnl_status_t status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m,
                                    n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success)
    kernelFatal("oneDNN sgemm (" + std::to_string(m) + " x " +
                std::to_string(n) + " x " + std::to_string(k) +
                ") failed with status " + std::to_string(int(status)));
}

/// A GEMM's block of rows or columns of C: at least 64, at most 16 blocks,
/// fixed by the shape alone.
int64_t blockOf(int64_t size) {
  return std::max<int64_t>(64, (size + 15) / 16);
}
} // namespace

// oneDNN splits a GEMM over its threads as it sees fit, and on some CPUs
// (AVX2) it splits the sum over k, so the bits would change with the
// thread count. The GEMM is cut into blocks of C fixed by its shape, each
// a single-threaded sgemm over the whole k (oneDNN runs on the calling
// thread alone inside a parallel region): every element's sum runs in one
// order on any number of threads.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
          float beta, float *c, int64_t ldc) {
  int64_t rows = blockOf(m), cols = blockOf(n);
  int64_t colBlocks = (n + cols - 1) / cols;
  int64_t blocks = (m + rows - 1) / rows * colBlocks;
  auto run = [&](int64_t block) {
    int64_t i = block / colBlocks * rows, j = block % colBlocks * cols;
    const float *ai = transA ? a + i : a + i * lda;
    const float *bj = transB ? b + j * ldb : b + j;
    sgemm(transA, transB, std::min(rows, m - i), std::min(cols, n - j), k,
          alpha, ai, lda, bj, ldb, beta, c + i * ldc + j, ldc);
  };
  // The same blocks on one thread, and inside a parallel region (where
  // oneDNN runs single-threaded): a whole-matrix call may round
  // differently from its blocks.
  int threads = omp_get_max_threads();
  if (threads == 1 || omp_in_parallel()) {
    for (int64_t block = 0; block < blocks; ++block)
      run(block);
    return;
  }
  // An active region even for one block: a team of one thread would not
  // count as one, and oneDNN would split that block over the threads.
#pragma omp parallel for schedule(static)                                      \
    num_threads(int(std::clamp <int64_t>(blocks, 2, threads)))
  for (int64_t block = 0; block < blocks; ++block)
    run(block);
}

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

void gemmOnThisThread(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      float alpha, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float beta, float *c, int64_t ldc) {
  if (omp_in_parallel() || omp_get_max_threads() == 1)
    return sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    // Called outside an active region (a loop too small to thread): inside
    // one, oneDNN stays on the calling thread.
#pragma omp parallel num_threads(2)
#pragma omp single
  sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemmOnThisThread(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      double alpha, const double *a, int64_t lda,
                      const double *b, int64_t ldb, double beta, double *c,
                      int64_t ldc) {
  gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

} // namespace titanrt::kernels
