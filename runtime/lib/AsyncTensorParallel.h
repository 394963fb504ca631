//===- AsyncTensorParallel.h - collective matmuls on the CPU ---*- C++ -*-===//
//
// Async tensor parallel's kernels (dist.all_gather_linear,
// dist.linear_reduce_scatter): a ring of send/recv over one mesh axis, one
// shard per step, the GEMMs of the shard already here running while the
// next travels (PyTorch's micro-pipeline TP, XLA's windowed einsum).
//
// Tensors are [outer][rows][cols] around the ring's dimension: `outer` is
// the elements before it, `rows` each rank's shard of it times the
// dimensions between it and the last (the GEMMs' rows of one outer index),
// so shard c of a gathered tensor is rows [c rows, (c + 1) rows) of every
// outer index.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_ASYNCTENSORPARALLEL_H
#define TITANRT_LIB_ASYNCTENSORPARALLEL_H

#include "Gemm.h"
#include "RingSchedule.h"

#include "titan/Contract/Dtype.h"

#include <cstdint>

namespace titanrt::kernels {

using titan::Dtype;

/// The GEMM of one collective matmul: titan.linear (lhs W^T, W [n, k]) or,
/// `gradInput`, titan.linear_grad_input (lhs W, W [k, n]); `in` and `out`
/// are the lhs's and the result's last dimensions.
struct RingGemm {
  bool gradInput;
  int64_t in, out;
};

/// Workspace elements (of the operand type In; the reduce-scatter's of Out)
/// each kernel needs for shards of `shardElements`.
inline int64_t allGatherLinearWorkspace(int64_t shardElements) {
  return 2 * shardElements;
}
/// The reduce-scatter's: three shards, and with several GEMMs one block
/// (`blockElements`, a shard's rows of one outer index) for a 16-bit
/// call's separately rounded GEMM results.
inline int64_t linearReduceScatterWorkspace(int64_t shardElements,
                                            int64_t blockElements = 0) {
  return 3 * shardElements + blockElements;
}

/// gathered = all_gather(input) ([outer][size rows][gemm.in]);
/// results[i] = GEMM(gathered, weights[i]) ([outer][size rows][outs[i]]).
/// Every result row is the dot products the GEMM over `gathered` computes.
/// In and Out: f32, f64, or bf16 operands (the ring moving bf16) into f32
/// results on the matrix units (Gemm.h), as the unfused 16-bit linears
/// there. `workspace`: allGatherLinearWorkspace elements of In.
template <typename In, typename Out = In>
void allGatherLinear(const In *input, const In *const *weights, In *gathered,
                     Out *const *results, const int64_t *outs, int64_t count,
                     bool gradInput, int64_t outer, int64_t rows, int64_t in,
                     RingPlace place, void *workspace);

/// result = reduce_scatter(sum_i GEMM(lhs[i], weights[i])): lhs[i] is
/// [outer][size rows][ins[i]], result [outer][rows][out]. Shard c's partial
/// sums travel the ring and every rank adds its term: the sum over ranks
/// runs in ring order (from rank c + 1 around to c).
/// `storage` (0 none, 1 bf16, 2 f16): the f32 kernel of a 16-bit call
/// rounds each GEMM's partial sums and each ring sum to it, as the unfused
/// GEMMs' 16-bit results and the communicator's 16-bit sums are.
/// In and Out as allGatherLinear's (the partial sums are Out).
template <typename In, typename Out = In>
void linearReduceScatter(const In *const *lhs, const In *const *weights,
                         const int64_t *ins, int64_t count, bool gradInput,
                         Out *result, int64_t outer, int64_t rows, int64_t out,
                         RingPlace place, Out *workspace, int storage = 0);

/// Float8's collective matmuls: titan.scaled_matmul's linear form (lhs
/// [rows, in] times weight [out, in]^T) or, `gradInput`, its grad_input
/// form (lhs [rows, in] times weight [in, out]; `rhsTransposed`: stored
/// K-major, [out, in]). The lhs codes are `lhsFormat`, the weights'
/// `rhsFormat`; each lhs scale is one for the tensor, each weight's one or
/// one per output column (`scalePerColumn[i]`). The products are f32 (a
/// 16-bit result is the f32 kernel's, widened).
struct ScaledRing {
  bool gradInput = false, rhsTransposed = false;
  Dtype lhsFormat = Dtype::f8E4M3FN, rhsFormat = Dtype::f8E4M3FN;
  const uint8_t *const *weights = nullptr;
  const float *const *weightScales = nullptr;
  const bool *scalePerColumn = nullptr;
  int64_t count = 0;
};

/// gathered = all_gather(input) (float8 [outer][size rows][in]);
/// results[i] = scaled GEMM(gathered, inputScale, weights[i], scales[i])
/// ([outer][size rows][outs[i]]). `workspace`:
/// titan::cpu::scaledRingWorkspace with two shards of the input's bytes.
void allGatherScaledMatmul(const uint8_t *input, const float *inputScale,
                           const ScaledRing &ring, uint8_t *gathered,
                           float *const *results, const int64_t *outs,
                           int64_t outer, int64_t rows, int64_t in,
                           RingPlace place, void *workspace);

/// result = reduce_scatter(sum_i scaled GEMM(lhs[i], lhsScales[i],
/// weights[i], scales[i])): lhs[i] is [outer][size rows][ins[i]], result
/// [outer][rows][out]; lhsScales[i] one scale, or (`lhsPerRow[i]`) one per
/// lhs row; `storage` as linearReduceScatter's. `workspace`:
/// titan::cpu::scaledRingWorkspace with three f32 shards of the result.
void scaledMatmulReduceScatter(const uint8_t *const *lhs,
                               const float *const *lhsScales,
                               const bool *lhsPerRow, const int64_t *ins,
                               const ScaledRing &ring, float *result,
                               int64_t outer, int64_t rows, int64_t out,
                               RingPlace place, void *workspace, int storage);

} // namespace titanrt::kernels

#endif // TITANRT_LIB_ASYNCTENSORPARALLEL_H
