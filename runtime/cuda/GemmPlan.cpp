//===- GemmPlan.cpp - cuBLASLt GEMM plans, host side ----------------------===//

#include "GemmPlan.h"

#include "Error.h"

using namespace titanrt;
using namespace titanrt::cuda;

void titanrt::cuda::checkCublas(cublasStatus_t status, const char *call,
                                const GemmProblem &p) {
  if (status != CUBLAS_STATUS_SUCCESS)
    kernelFatal(std::string(call) + " failed (" +
                cublasLtGetStatusString(status) + ") for " + p.describe());
}

namespace {

/// CUDA's name of `t` (cuBLASLt rejects the types no GEMM takes, naming the
/// problem).
cudaDataType_t cudaType(Dtype t) {
  switch (t) {
  case Dtype::f32:
    return CUDA_R_32F;
  case Dtype::f64:
    return CUDA_R_64F;
  case Dtype::bf16:
    return CUDA_R_16BF;
  case Dtype::f16:
    return CUDA_R_16F;
  case Dtype::i32:
    return CUDA_R_32I;
  case Dtype::i64:
    return CUDA_R_64I;
  case Dtype::f8E4M3FN:
    return CUDA_R_8F_E4M3;
  case Dtype::f8E5M2:
    return CUDA_R_8F_E5M2;
  }
  return CUDA_R_32F;
}

template <typename T>
void setAttribute(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t what,
                  const T &value, const char *name, const GemmProblem &p) {
  checkCublas(cublasLtMatmulDescSetAttribute(op, what, &value, sizeof(value)),
              name, p);
}

template <typename T>
void setPreference(cublasLtMatmulPreference_t preference,
                   cublasLtMatmulPreferenceAttributes_t what, const T &value,
                   const char *name, const GemmProblem &p) {
  checkCublas(cublasLtMatmulPreferenceSetAttribute(preference, what, &value,
                                                   sizeof(value)),
              name, p);
}

cublasLtMatrixLayout_t createLayout(cudaDataType_t type, ColumnMajorMatrix m,
                                    const char *name, const GemmProblem &p) {
  cublasLtMatrixLayout_t layout = nullptr;
  checkCublas(cublasLtMatrixLayoutCreate(&layout, type, uint64_t(m.rows),
                                         uint64_t(m.cols), m.rows),
              name, p);
  return layout;
}

/// Outer-vector scales for both inputs (cuBLASLt requires the mode on
/// both), fast accumulation where asked.
void setFloat8Modes(cublasLtMatmulDesc_t op, const GemmProblem &p) {
  if (p.scaling == GemmScaling::OuterVector) {
    int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    setAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode,
                 "cublasLtMatmulDescSetAttribute(A_SCALE_MODE)", p);
    setAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode,
                 "cublasLtMatmulDescSetAttribute(B_SCALE_MODE)", p);
  }
  if (p.fastAccumulation)
    setAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t(1),
                 "cublasLtMatmulDescSetAttribute(FAST_ACCUM)", p);
}
} // namespace

std::string GemmProblem::describe() const {
  const char *names[] = {"forward", "grad_input", "grad_weight"};
  return std::string("linear ") + names[int(product)] +
         " m=" + std::to_string(m) + " k=" + std::to_string(k) +
         " n=" + std::to_string(n) + " " + dtypeName(operands) + " -> " +
         dtypeName(result) + (accumulate ? " (accumulate)" : "") +
         (scaling == GemmScaling::Tensorwise    ? " scaled tensorwise"
          : scaling == GemmScaling::OuterVector ? " scaled rowwise"
                                                : "") +
         (fastAccumulation ? " fast accumulation" : "");
}

GemmAlignments titanrt::cuda::gemmAlignments(const void *first,
                                             const void *second,
                                             const void *out) {
  uint32_t result = pointerAlignment(out);
  return {pointerAlignment(second), pointerAlignment(first), result, result};
}

ColumnMajorGemm titanrt::cuda::columnMajorGemm(const GemmProblem &p) {
  ColumnMajorGemm g;
  switch (p.product) {
  case LinearProduct::Forward: // y^T [n, m] = (w [k, n])^T x [k, m]
    g.opA = CUBLAS_OP_T;
    g.a = {p.k, p.n}, g.b = {p.k, p.m}, g.c = {p.n, p.m};
    break;
  case LinearProduct::GradInput: // dx^T [k, m] = w [k, n] dy [n, m]
    g.a = {p.k, p.n}, g.b = {p.n, p.m}, g.c = {p.k, p.m};
    break;
  case LinearProduct::GradWeight: // dw^T [k, n] = x [k, m] (dy [n, m])^T
    g.opB = CUBLAS_OP_T;
    g.a = {p.k, p.m}, g.b = {p.n, p.m}, g.c = {p.k, p.n};
    break;
  }
  return g;
}

void titanrt::cuda::setGemmScales(cublasLtMatmulDesc_t op, const GemmProblem &p,
                                  GemmScales scales) {
  // A is the second input, B the first: the second's scales run along
  // cuBLASLt's M (the result's columns), the first's along its N (rows).
  setAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
               static_cast<const void *>(scales.second),
               "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)", p);
  setAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
               static_cast<const void *>(scales.first),
               "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)", p);
}

GemmDescriptors titanrt::cuda::createGemmDescriptors(const GemmProblem &p,
                                                     GemmScales scales) {
  ColumnMajorGemm g = columnMajorGemm(p);
  GemmDescriptors d;
  checkCublas(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
              "cublasLtMatmulDescCreate", p);
  setAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, g.opA,
               "cublasLtMatmulDescSetAttribute(TRANSA)", p);
  setAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, g.opB,
               "cublasLtMatmulDescSetAttribute(TRANSB)", p);
  setFloat8Modes(d.op, p);
  // The heuristic sees the scales as the first call has them (run() sets
  // each call's).
  if (p.scaling != GemmScaling::None)
    setGemmScales(d.op, p, scales);
  cudaDataType_t first = cudaType(p.operands);
  d.a = createLayout(p.second ? cudaType(*p.second) : first, g.a,
                     "cublasLtMatrixLayoutCreate(A)", p);
  d.b = createLayout(first, g.b, "cublasLtMatrixLayoutCreate(B)", p);
  d.c =
      createLayout(cudaType(p.result), g.c, "cublasLtMatrixLayoutCreate(C)", p);
  return d;
}

void titanrt::cuda::destroyGemmDescriptors(GemmDescriptors &d) {
  cublasLtMatrixLayoutDestroy(d.a);
  cublasLtMatrixLayoutDestroy(d.b);
  cublasLtMatrixLayoutDestroy(d.c);
  cublasLtMatmulDescDestroy(d.op);
  d = {};
}

cublasLtMatmulPreference_t titanrt::cuda::createGemmPreference(
    const GemmProblem &p, uint64_t workspaceBytes, GemmAlignments alignments) {
  cublasLtMatmulPreference_t preference = nullptr;
  checkCublas(cublasLtMatmulPreferenceCreate(&preference),
              "cublasLtMatmulPreferenceCreate", p);
  setPreference(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                workspaceBytes, "cublasLtMatmulPreferenceSetAttribute", p);
  setPreference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                alignments.a, "cublasLtMatmulPreferenceSetAttribute(A)", p);
  setPreference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                alignments.b, "cublasLtMatmulPreferenceSetAttribute(B)", p);
  setPreference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                alignments.c, "cublasLtMatmulPreferenceSetAttribute(C)", p);
  setPreference(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                alignments.d, "cublasLtMatmulPreferenceSetAttribute(D)", p);
  return preference;
}

std::string titanrt::cuda::cublasLtVersionName(size_t version) {
  return std::to_string(version / 10000) + "." +
         std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

std::string titanrt::cuda::rowwiseFloat8VersionError(size_t version) {
  if (version >= kOuterVectorScalingVersion)
    return {};
  return "rowwise Float8 needs cuBLASLt " +
         cublasLtVersionName(kOuterVectorScalingVersion) +
         " or later (its outer-vector scale mode); this process loaded " +
         cublasLtVersionName(version) +
         ": use quantize.linear.float8.recipe_name = \"tensorwise\" or a newer "
         "cuBLAS";
}

void titanrt::cuda::requireRowwiseFloat8(std::optional<size_t> version) {
  std::string error =
      rowwiseFloat8VersionError(version ? *version : cublasLtGetVersion());
  if (!error.empty())
    kernelFatal(error);
}
