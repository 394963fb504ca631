//===- GemmPlan.h - cuBLASLt GEMM plans, host side --------------*- C++ -*-===//
//
// What a cuBLASLt plan of LinearGemms (LinearGemm.h) is made of, as host
// functions that need neither a GPU nor a cuBLASLt handle (cuBLASLt's
// descriptor, layout and preference calls run without a device), so that
// TitanCudaHostTest checks them on a machine without a GPU: the GEMM
// problem and its plan key, the operands' alignments, the column-major
// mapping of the row-major products, the descriptors and the heuristic's
// preference, and the float8 choices (fast accumulation per product, the
// rowwise scaling version gate).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_GEMMPLAN_H
#define TITANRT_CUDA_GEMMPLAN_H

#include "titan/Contract/CUDAWorkspaces.h"
#include "titan/Contract/Dtype.h"

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace titanrt::cuda {

/// The element type of every CUDA kernel's buffers. The GEMMs take f32,
/// bf16 and f16, and the float8 types only as operands of the forward
/// product (the scaled GEMM's, Float8.h).
using titan::Dtype;

enum class LinearProduct { Forward, GradInput, GradWeight };
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
  Dtype operands; ///< both inputs
  Dtype result;
  bool accumulate = false; ///< out += the product (beta = 1)
  /// The second input's type when it differs from the first's (float8:
  /// an e5m2 gradient times an e4m3 weight).
  std::optional<Dtype> second;
  GemmScaling scaling = GemmScaling::None;
  /// Float8 only: cuBLASLt's fast accumulation (CUBLASLT_MATMUL_DESC_
  /// FAST_ACCUM: no periodic promotion of the partial sums to f32).
  bool fastAccumulation = false;

  auto key() const {
    return std::make_tuple(int(product), m, k, n, int(operands), int(result),
                           accumulate, second ? int(*second) : -1, int(scaling),
                           fastAccumulation);
  }
  bool operator<(const GemmProblem &o) const { return key() < o.key(); }
  /// "linear grad_weight m=.. k=.. n=.. bf16 -> f32 (accumulate)".
  std::string describe() const;
};

/// cuBLASLt's default assumption about every operand's address, and the
/// most a preference asks for.
constexpr uint32_t kMaxGemmAlignment = 256;

/// The largest power of two dividing `address`, at most 256 (0: 256), as
/// PyTorch's _getAlignment (aten/src/ATen/cuda/CUDABlas.cpp) finds it.
constexpr uint32_t addressAlignment(uintptr_t address) {
  uint32_t alignment = kMaxGemmAlignment;
  while (address % alignment != 0)
    alignment /= 2;
  return alignment;
}
inline uint32_t pointerAlignment(const void *p) {
  return addressAlignment(reinterpret_cast<uintptr_t>(p));
}

/// The byte alignment of each cuBLASLt matrix: A is run()'s second input, B
/// its first, C and D its result. cuBLASLt's heuristic assumes 256 unless
/// told (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES), and an algorithm
/// picked for 256 faults or misreads on a kernel.view slice or an async-TP
/// ring chunk that is less aligned.
struct GemmAlignments {
  uint32_t a = kMaxGemmAlignment, b = kMaxGemmAlignment, c = kMaxGemmAlignment,
           d = kMaxGemmAlignment;
  auto key() const { return std::make_tuple(a, b, c, d); }
};
GemmAlignments gemmAlignments(const void *first, const void *second,
                              const void *out);

/// What a plan is cached under: the problem and its operands' alignments
/// (an algorithm chosen for one alignment may not run at a smaller one; as
/// PyTorch keys its cuBLASLt plans).
struct GemmPlanKey {
  GemmProblem problem;
  GemmAlignments alignments;
  auto key() const { return std::make_tuple(problem.key(), alignments.key()); }
  bool operator<(const GemmPlanKey &o) const { return key() < o.key(); }
};

/// A matrix as cuBLASLt stores it: column-major, leading dimension `rows`
/// (a row-major [r, c] matrix is a column-major [c, r] one).
struct ColumnMajorMatrix {
  int64_t rows = 0, cols = 0;
};
/// The column-major problem C = op(A) op(B) that computes a row-major
/// product transposed (LinearGemm.h's three formulas): A is the problem's
/// second input (w, w, x), B its first (x, dy, dy).
struct ColumnMajorGemm {
  cublasOperation_t opA = CUBLAS_OP_N, opB = CUBLAS_OP_N;
  ColumnMajorMatrix a, b, c;
};
ColumnMajorGemm columnMajorGemm(const GemmProblem &p);

/// Stops the run naming `call` and `p` when cuBLASLt returned an error.
void checkCublas(cublasStatus_t status, const char *call, const GemmProblem &p);

/// A plan's descriptors, made without a handle or a GPU.
struct GemmDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
};
/// `p`'s matmul descriptor (f32 compute, transposes, scale modes and the
/// scale pointers `scales`, fast accumulation) and its A, B, C layouts.
/// Stops the run naming `p` when cuBLASLt refuses one.
GemmDescriptors createGemmDescriptors(const GemmProblem &p, GemmScales scales);
void destroyGemmDescriptors(GemmDescriptors &d);
/// Points `op` at this call's scales (a float8 plan keeps its descriptor).
void setGemmScales(cublasLtMatmulDesc_t op, const GemmProblem &p,
                   GemmScales scales);
/// The heuristic's preference: algorithms within `workspaceBytes` that run
/// at `alignments`.
cublasLtMatmulPreference_t createGemmPreference(const GemmProblem &p,
                                                uint64_t workspaceBytes,
                                                GemmAlignments alignments);

/// cublasLtGetVersion()'s encoding (major * 10000 + minor * 100 + patch)
/// of 12.9.0: the first cuBLASLt with the outer-vector scale mode
/// (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, the cuBLAS 12.9 release).
constexpr size_t kOuterVectorScalingVersion = 120900;
/// "13.1.0" for 130100.
std::string cublasLtVersionName(size_t version);
/// Empty when cuBLASLt `version` scales rowwise; else why not, naming the
/// recipe that runs on it.
std::string rowwiseFloat8VersionError(size_t version);
/// Stops the run when the cuBLASLt this process loaded (`version`,
/// cublasLtGetVersion() by default) cannot scale rowwise.
void requireRowwiseFloat8(std::optional<size_t> version = std::nullopt);

/// Whether the scaled GEMM of `form` accumulates fast, as torchao's Float8
/// training does for every recipe: use_fast_accum=True for the output GEMM
/// only (torchao/float8/config.py: Float8LinearConfig.gemm_config_output =
/// Float8GemmConfig(use_fast_accum=True), gemm_config_grad_input and
/// gemm_config_grad_weight default False; float8_linear.py passes them
/// to the output, grad_input and grad_weight ScaledMMConfig).
constexpr bool scaledMatmulFastAccumulation(titan::cuda::ScaledMatmulForm f) {
  return f == titan::cuda::ScaledMatmulForm::Linear;
}

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_GEMMPLAN_H
