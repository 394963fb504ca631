//===- LinearGemm.h - a linear layer's three GEMMs on cuBLASLt --*- C++ -*-===//
//
// The CUDA target's GEMMs (issue 10's first piece): the forward, grad-input
// and grad-weight products of titan.linear on row-major device buffers, the
// same contracts as the CPU kernels (runtime/lib/Kernels.h: linear,
// linearGradInput, linearGradWeight), with f32 or bf16/f16 operands and
// fp32 accumulation. cuBLASLt is column-major; a row-major matrix is its
// transpose there, so each product is computed transposed:
//
//   Forward     y[m,n]  = x[m,k] w[n,k]^T   as  y^T  = (w^T)^T x^T   "TN"
//   GradInput   dx[m,k] = dy[m,n] w[n,k]    as  dx^T = w^T dy^T      "NN"
//   GradWeight  dw[n,k] = dy[m,n]^T x[m,k]  as  dw^T = x^T (dy^T)^T  "NT"
//
// Each can add into its result (beta = 1): kernel-fuse-gemm-accumulate
// folds the add after a GEMM (a residual, a gradient sum, gradient
// accumulation) into it, saving that add's pass. Each distinct problem gets its
// descriptors and cuBLASLt's heuristic algorithm once per alignment of its
// operands (GemmPlan.h), on first use (a step's first run, which is eager,
// never captured) or by prepare(), and keeps them.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_LINEARGEMM_H
#define TITANRT_CUDA_LINEARGEMM_H

#include "GemmPlan.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <map>

namespace titanrt::cuda {

class LinearGemms {
public:
  /// `workspaceBytes`: what each call may use of the workspace it is given
  /// (cuBLASLt's heuristic only picks algorithms that fit).
  explicit LinearGemms(size_t workspaceBytes);
  ~LinearGemms();
  LinearGemms(const LinearGemms &) = delete;
  LinearGemms &operator=(const LinearGemms &) = delete;

  /// Creates the descriptors and picks the algorithm of `p` with operands
  /// at `alignments` (nothing when done before), so that a later run() of
  /// operands so aligned times no plan making (the kernel benchmark).
  void prepare(const GemmProblem &p, GemmAlignments alignments = {});

  /// Runs `p` on `stream`. Inputs as the CPU kernels take them: Forward
  /// (x, w) -> y; GradInput (dy, w) -> dx; GradWeight (dy, x) -> dw.
  /// `workspace` holds at least the constructor's bytes and is 256-byte
  /// aligned; the operands may be less aligned (a view, a ring chunk): the
  /// plan is picked for their alignments. `scales` as `p.scaling` says.
  void run(const GemmProblem &p, const void *first, const void *second,
           void *out, void *workspace, cudaStream_t stream,
           GemmScales scales = {});

private:
  struct Plan {
    GemmDescriptors descriptors;
    cublasLtMatmulAlgo_t algo;
  };
  Plan &plan(const GemmPlanKey &key, GemmScales scales = {});
  cublasLtMatmulAlgo_t pickAlgorithm(const GemmPlanKey &key,
                                     const GemmDescriptors &d);

  cublasLtHandle_t handle_ = nullptr;
  size_t workspaceBytes_;
  std::map<GemmPlanKey, Plan> plans_;
};

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_LINEARGEMM_H
