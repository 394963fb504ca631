//===- LinearGemm.cpp - a linear layer's three GEMMs on cuBLASLt ----------===//

#include "LinearGemm.h"

#include "Error.h"

using namespace titanrt;
using namespace titanrt::cuda;

namespace {

void check(cublasStatus_t status, const char *call, const GemmProblem &p) {
  if (status != CUBLAS_STATUS_SUCCESS)
    kernelFatal(std::string(call) + " failed (" +
                cublasLtGetStatusString(status) + ") for " + p.describe());
}

cudaDataType_t cudaType(ElementType t) {
  switch (t) {
  case ElementType::F32:
    return CUDA_R_32F;
  case ElementType::BF16:
    return CUDA_R_16BF;
  case ElementType::F16:
    return CUDA_R_16F;
  case ElementType::F8E4M3FN:
    return CUDA_R_8F_E4M3;
  case ElementType::F8E5M2:
    return CUDA_R_8F_E5M2;
  }
  return CUDA_R_32F;
}

const char *typeName(ElementType t) {
  switch (t) {
  case ElementType::F32:
    return "f32";
  case ElementType::BF16:
    return "bf16";
  case ElementType::F16:
    return "f16";
  case ElementType::F8E4M3FN:
    return "f8E4M3FN";
  case ElementType::F8E5M2:
    return "f8E5M2";
  }
  return "?";
}

template <typename T>
void setAttribute(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t what,
                  const T &value, const char *name, const GemmProblem &p) {
  check(cublasLtMatmulDescSetAttribute(op, what, &value, sizeof(value)), name,
        p);
}

/// The scale pointers of `p`'s inputs: A is the second input, B the
/// first (see LinearGemms::plan), so the second's scales run along
/// cuBLASLt's M (the result's columns) and the first's along its N (the
/// result's rows).
void setScales(cublasLtMatmulDesc_t op, const GemmProblem &p,
               GemmScales scales) {
  setAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
               static_cast<const void *>(scales.second),
               "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)", p);
  setAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
               static_cast<const void *>(scales.first),
               "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)", p);
}
} // namespace

std::string GemmProblem::describe() const {
  const char *names[] = {"forward", "grad_input", "grad_weight"};
  return std::string("linear ") + names[int(product)] +
         " m=" + std::to_string(m) + " k=" + std::to_string(k) +
         " n=" + std::to_string(n) + " " + typeName(operands) + " -> " +
         typeName(result) + (accumulate ? " (accumulate)" : "") +
         (scaling == GemmScaling::Tensorwise    ? " scaled tensorwise"
          : scaling == GemmScaling::OuterVector ? " scaled rowwise"
                                                : "");
}

LinearGemms::LinearGemms(size_t workspaceBytes)
    : workspaceBytes_(workspaceBytes) {
  cublasStatus_t status = cublasLtCreate(&handle_);
  if (status != CUBLAS_STATUS_SUCCESS)
    kernelFatal(std::string("cublasLtCreate failed: ") +
                cublasLtGetStatusString(status));
}

LinearGemms::~LinearGemms() {
  for (auto &[problem, plan] : plans_) {
    cublasLtMatrixLayoutDestroy(plan.a);
    cublasLtMatrixLayoutDestroy(plan.b);
    cublasLtMatrixLayoutDestroy(plan.c);
    cublasLtMatmulDescDestroy(plan.op);
  }
  cublasLtDestroy(handle_);
}

void LinearGemms::prepare(const GemmProblem &p) { plan(p); }

LinearGemms::Plan &LinearGemms::plan(const GemmProblem &p, GemmScales scales) {
  auto it = plans_.find(p);
  if (it != plans_.end())
    return it->second;
  if (p.m <= 0 || p.k <= 0 || p.n <= 0)
    kernelFatal("empty GEMM: " + p.describe());

  // The column-major problem C = op(A) op(B), each stored matrix given by
  // its column-major rows and columns (a row-major [r, c] matrix is a
  // column-major [c, r] one, leading dimension c). A is always the
  // problem's second input (w, w, x) and B its first (x, dy, dy).
  cublasOperation_t opA = CUBLAS_OP_N, opB = CUBLAS_OP_N;
  int64_t rows = 0, cols = 0, aRows = 0, aCols = 0, bRows = 0, bCols = 0;
  switch (p.product) {
  case LinearProduct::Forward: // y^T [n, m] = (w [k, n])^T x [k, m]
    rows = p.n, cols = p.m;
    opA = CUBLAS_OP_T, aRows = p.k, aCols = p.n;
    bRows = p.k, bCols = p.m;
    break;
  case LinearProduct::GradInput: // dx^T [k, m] = w [k, n] dy [n, m]
    rows = p.k, cols = p.m;
    aRows = p.k, aCols = p.n;
    bRows = p.n, bCols = p.m;
    break;
  case LinearProduct::GradWeight: // dw^T [k, n] = x [k, m] (dy [n, m])^T
    rows = p.k, cols = p.n;
    aRows = p.k, aCols = p.m;
    opB = CUBLAS_OP_T, bRows = p.n, bCols = p.m;
    break;
  }

  Plan plan;
  // A is the second input.
  cudaDataType_t in = cudaType(p.operands), out = cudaType(p.result);
  cudaDataType_t inA = p.second ? cudaType(*p.second) : in;
  check(cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate", p);
  setAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, opA,
               "cublasLtMatmulDescSetAttribute(TRANSA)", p);
  setAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, opB,
               "cublasLtMatmulDescSetAttribute(TRANSB)", p);
  if (p.scaling == GemmScaling::OuterVector) {
    int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    setAttribute(plan.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode,
                 "cublasLtMatmulDescSetAttribute(A_SCALE_MODE)", p);
    setAttribute(plan.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode,
                 "cublasLtMatmulDescSetAttribute(B_SCALE_MODE)", p);
  }
  // The heuristic sees the scales as the first call has them (run() sets
  // each call's).
  if (p.scaling != GemmScaling::None)
    setScales(plan.op, p, scales);
  check(cublasLtMatrixLayoutCreate(&plan.a, inA, uint64_t(aRows),
                                   uint64_t(aCols), aRows),
        "cublasLtMatrixLayoutCreate(A)", p);
  check(cublasLtMatrixLayoutCreate(&plan.b, in, uint64_t(bRows),
                                   uint64_t(bCols), bRows),
        "cublasLtMatrixLayoutCreate(B)", p);
  check(cublasLtMatrixLayoutCreate(&plan.c, out, uint64_t(rows), uint64_t(cols),
                                   rows),
        "cublasLtMatrixLayoutCreate(C)", p);

  cublasLtMatmulPreference_t preference;
  check(cublasLtMatmulPreferenceCreate(&preference),
        "cublasLtMatmulPreferenceCreate", p);
  uint64_t bytes = workspaceBytes_;
  check(cublasLtMatmulPreferenceSetAttribute(
            preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes,
            sizeof(bytes)),
        "cublasLtMatmulPreferenceSetAttribute", p);
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  check(cublasLtMatmulAlgoGetHeuristic(handle_, plan.op, plan.a, plan.b, plan.c,
                                       plan.c, preference, 1, &result, &found),
        "cublasLtMatmulAlgoGetHeuristic", p);
  cublasLtMatmulPreferenceDestroy(preference);
  if (found == 0)
    kernelFatal("cuBLASLt has no algorithm for " + p.describe() + " within " +
                std::to_string(workspaceBytes_) + " bytes of workspace");
  plan.algo = result.algo;
  return plans_.emplace(p, plan).first->second;
}

void LinearGemms::run(const GemmProblem &p, const void *first,
                      const void *second, void *out, void *workspace,
                      cudaStream_t stream, GemmScales scales) {
  const Plan &pl = plan(p, scales);
  if (p.scaling != GemmScaling::None)
    setScales(pl.op, p, scales);
  // A is the second input, B the first (see plan()).
  float alpha = 1.0f, beta = p.accumulate ? 1.0f : 0.0f;
  check(cublasLtMatmul(handle_, pl.op, &alpha, second, pl.a, first, pl.b, &beta,
                       out, pl.c, out, pl.c, &pl.algo, workspace,
                       workspaceBytes_, stream),
        "cublasLtMatmul", p);
}
