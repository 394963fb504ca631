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
// descriptors and cuBLASLt's heuristic algorithm once, on first use or ahead of
// a graph capture (prepare), and keeps them.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_LINEARGEMM_H
#define TITANRT_CUDA_LINEARGEMM_H

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace titanrt::cuda {

enum class LinearProduct { Forward, GradInput, GradWeight };
/// The GEMMs' element types; the float8 ones only as operands of the
/// forward product (the scaled GEMM's, Float8.h).
enum class ElementType { F32, BF16, F16, F8E4M3FN, F8E5M2 };
/// How cuBLASLt scales a float8 product before its one rounding to the
/// result type (run()'s GemmScales): by one device scalar per input
/// (tensorwise), or by one f32 per result row (the first input's) and per
/// result column (the second's): its outer-vector scale mode (rowwise,
/// cuBLASLt 12.9 and later on Hopper).
enum class GemmScaling { None, Tensorwise, OuterVector };

/// Device pointers to what cuBLASLt multiplies the product by for each of
/// run()'s two inputs (titan.scaled_matmul's inverse scales).
struct GemmScales {
  const float *first = nullptr, *second = nullptr;
};

struct GemmProblem {
  LinearProduct product;
  /// x is [m, k], w is [n, k], y is [m, n] (row-major).
  int64_t m, k, n;
  ElementType operands; ///< both inputs
  ElementType result;
  bool accumulate = false; ///< out += the product (beta = 1)
  /// The second input's type when it differs from the first's (float8:
  /// an e5m2 gradient times an e4m3 weight).
  std::optional<ElementType> second;
  GemmScaling scaling = GemmScaling::None;

  auto key() const {
    return std::make_tuple(int(product), m, k, n, int(operands), int(result),
                           accumulate, second ? int(*second) : -1,
                           int(scaling));
  }
  bool operator<(const GemmProblem &o) const { return key() < o.key(); }
  /// "linear grad_weight m=.. k=.. n=.. bf16 -> f32 (accumulate)".
  std::string describe() const;
};

class LinearGemms {
public:
  /// `workspaceBytes`: what each call may use of the workspace it is given
  /// (cuBLASLt's heuristic only picks algorithms that fit).
  explicit LinearGemms(size_t workspaceBytes);
  ~LinearGemms();
  LinearGemms(const LinearGemms &) = delete;
  LinearGemms &operator=(const LinearGemms &) = delete;

  /// Creates the descriptors and picks the algorithm of `p` (nothing when
  /// done before): call it before capturing a CUDA graph.
  void prepare(const GemmProblem &p);

  /// Runs `p` on `stream`. Inputs as the CPU kernels take them: Forward
  /// (x, w) -> y; GradInput (dy, w) -> dx; GradWeight (dy, x) -> dw.
  /// `workspace` holds at least the constructor's bytes and is 256-byte
  /// aligned, as are the operands. `scales` as `p.scaling` says.
  void run(const GemmProblem &p, const void *first, const void *second,
           void *out, void *workspace, cudaStream_t stream,
           GemmScales scales = {});

private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo;
  };
  Plan &plan(const GemmProblem &p, GemmScales scales = {});

  cublasLtHandle_t handle_ = nullptr;
  size_t workspaceBytes_;
  std::map<GemmProblem, Plan> plans_;
};

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_LINEARGEMM_H
