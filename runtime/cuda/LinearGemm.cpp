//===- LinearGemm.cpp - a linear layer's three GEMMs on cuBLASLt ----------===//

#include "LinearGemm.h"

#include "Error.h"

using namespace titanrt;
using namespace titanrt::cuda;

namespace {

std::string describeAlignments(GemmAlignments a) {
  return "operands aligned to " + std::to_string(a.a) + "/" +
         std::to_string(a.b) + "/" + std::to_string(a.c) + " bytes (A/B/C)";
}
} // namespace

LinearGemms::LinearGemms(size_t workspaceBytes)
    : workspaceBytes_(workspaceBytes) {
  cublasStatus_t status = cublasLtCreate(&handle_);
  if (status != CUBLAS_STATUS_SUCCESS)
    kernelFatal(std::string("cublasLtCreate failed: ") +
                cublasLtGetStatusString(status));
}

LinearGemms::~LinearGemms() {
  for (auto &[key, plan] : plans_)
    destroyGemmDescriptors(plan.descriptors);
  cublasLtDestroy(handle_);
}

void LinearGemms::prepare(const GemmProblem &p, GemmAlignments alignments) {
  plan({p, alignments});
}

cublasLtMatmulAlgo_t LinearGemms::pickAlgorithm(const GemmPlanKey &key,
                                                const GemmDescriptors &d) {
  const GemmProblem &p = key.problem;
  cublasLtMatmulPreference_t preference =
      createGemmPreference(p, workspaceBytes_, key.alignments);
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle_, d.op, d.a, d.b, d.c, d.c, preference, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  checkCublas(status, "cublasLtMatmulAlgoGetHeuristic", p);
  if (found == 0)
    kernelFatal("cuBLASLt has no algorithm for " + p.describe() + " with " +
                describeAlignments(key.alignments) + " within " +
                std::to_string(workspaceBytes_) + " bytes of workspace");
  return result.algo;
}

LinearGemms::Plan &LinearGemms::plan(const GemmPlanKey &key,
                                     GemmScales scales) {
  auto it = plans_.find(key);
  if (it != plans_.end())
    return it->second;
  const GemmProblem &p = key.problem;
  if (p.m <= 0 || p.k <= 0 || p.n <= 0)
    kernelFatal("empty GEMM: " + p.describe());
  // Before the outer-vector attributes, which an older cuBLASLt refuses
  // with a bare INVALID_VALUE.
  if (p.scaling == GemmScaling::OuterVector)
    requireRowwiseFloat8();
  Plan plan;
  plan.descriptors = createGemmDescriptors(p, scales);
  plan.algo = pickAlgorithm(key, plan.descriptors);
  return plans_.emplace(key, plan).first->second;
}

void LinearGemms::run(const GemmProblem &p, const void *first,
                      const void *second, void *out, void *workspace,
                      cudaStream_t stream, GemmScales scales) {
  const Plan &pl = plan({p, gemmAlignments(first, second, out)}, scales);
  const GemmDescriptors &d = pl.descriptors;
  if (p.scaling != GemmScaling::None)
    setGemmScales(d.op, p, scales);
  // A is the second input, B the first (see columnMajorGemm).
  float alpha = 1.0f, beta = p.accumulate ? 1.0f : 0.0f;
  checkCublas(cublasLtMatmul(handle_, d.op, &alpha, second, d.a, first, d.b,
                             &beta, out, d.c, out, d.c, &pl.algo, workspace,
                             workspaceBytes_, stream),
              "cublasLtMatmul", p);
}
