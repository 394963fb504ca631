//===- Gemm.cpp - the CPU kernels' GEMMs ----------------------------------===//

#include "Gemm.h"

#include "Error.h"

#include <cblas.h>
#include <dnnl.h>

#include <string>

namespace titanrt::kernels {

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
          float beta, float *c, int64_t ldc) {
  dnnl_status_t status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m,
                                    n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success)
    kernelFatal("oneDNN sgemm (" + std::to_string(m) + " x " +
                std::to_string(n) + " x " + std::to_string(k) +
                ") failed with status " + std::to_string(int(status)));
}

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          double alpha, const double *a, int64_t lda, const double *b,
          int64_t ldb, double beta, double *c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

} // namespace titanrt::kernels
