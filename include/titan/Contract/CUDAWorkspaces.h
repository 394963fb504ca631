//===- CUDAWorkspaces.h - the CUDA kernels' scratch -------------*- C++ -*-===//
//
// The workspace each CUDA kernel uses, stated once for both sides: the
// target's workspace rules (lib/Target/CUDA/CUDABackend.cpp) plan these
// bytes in the arena, and the CUDA runtime (runtime/cuda/) carves its
// scratch from them and checks that a library's run-time request fits.
// Header-only and free of CUDA headers, so the compiler needs no CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_CUDAWORKSPACES_H
#define TITAN_CONTRACT_CUDAWORKSPACES_H

#include <algorithm>
#include <cstdint>

namespace titan::cuda {

constexpr int64_t roundUpTo(int64_t n, int64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}
constexpr int64_t alignTo256(int64_t bytes) { return roundUpTo(bytes, 256); }

/// cuBLASLt's workspace for every GEMM: 32 MiB, NVIDIA's recommendation for
/// Hopper (its heuristic then considers every split-K and stream-K kernel).
constexpr int64_t kGemmWorkspaceBytes = int64_t(32) << 20;

/// The FP8 scaled GEMM's scratch (titan.scaled_matmul on `rows` x `cols`
/// results), each part at a 256-byte offset: cuBLASLt wants its workspace,
/// and by default its A/B/C/D operands, 256-byte aligned. The float8
/// operands copied K-major where the form needs them and they do not come
/// so (cuBLASLt multiplies FP8 only in the "TN" layout: grad_input needs
/// its rhs transposed, grad_weight both; titan-expand-float8 has
/// titan.quantize write them so, `lhsGivenTransposed` and
/// `rhsGivenTransposed`, and only the FSDP float8 all-gather's weight comes
/// untransposed), the f32 inverse scales cuBLASLt multiplies the product by
/// (at most one per result row and one per result column), then cuBLASLt's
/// workspace. Offsets count from the workspace's start, which the arena
/// aligns to 256 bytes.
enum class ScaledMatmulForm { Linear = 0, GradInput = 1, GradWeight = 2 };
struct ScaledMatmulWorkspace {
  /// Whether lhs (rhs) is copied K-major, at offset lhsTransposed
  /// (rhsTransposed).
  bool copiesLhs = false, copiesRhs = false;
  int64_t lhsTransposed = 0, rhsTransposed = 0;
  int64_t lhsInverseScales = 0, rhsInverseScales = 0;
  int64_t gemm = 0, bytes = 0;
};
constexpr ScaledMatmulWorkspace
scaledMatmulWorkspace(ScaledMatmulForm form, int64_t lhsElements,
                      int64_t rhsElements, int64_t rows, int64_t cols,
                      bool lhsGivenTransposed, bool rhsGivenTransposed) {
  ScaledMatmulWorkspace w;
  w.copiesLhs = form == ScaledMatmulForm::GradWeight && !lhsGivenTransposed;
  w.copiesRhs = form != ScaledMatmulForm::Linear && !rhsGivenTransposed;
  w.rhsTransposed =
      w.lhsTransposed + (w.copiesLhs ? alignTo256(lhsElements) : 0);
  w.lhsInverseScales =
      w.rhsTransposed + (w.copiesRhs ? alignTo256(rhsElements) : 0);
  w.rhsInverseScales = w.lhsInverseScales + alignTo256(rows * 4);
  w.gemm = w.rhsInverseScales + alignTo256(cols * 4);
  w.bytes = w.gemm + kGemmWorkspaceBytes;
  return w;
}

/// Async TP's collective matmuls (dist.all_gather_linear: 2 shards, the
/// one held and the one arriving; dist.linear_reduce_scatter: 3, two
/// partial sums and the one received): the GEMMs' scratch (`gemmBytes`:
/// cuBLASLt's workspace, or Float8's scaled GEMM scratch), then the ring's
/// shards of `shardBytes` (the element type's), each 256-aligned.
constexpr int64_t
collectiveMatmulShard(int64_t shard, int64_t shardBytes,
                      int64_t gemmBytes = kGemmWorkspaceBytes) {
  return alignTo256(gemmBytes) + shard * alignTo256(shardBytes);
}
constexpr int64_t
collectiveMatmulWorkspaceBytes(int64_t shards, int64_t shardBytes,
                               int64_t gemmBytes = kGemmWorkspaceBytes) {
  return collectiveMatmulShard(shards, shardBytes, gemmBytes);
}

/// Float8's collective matmuls (dist.all_gather_scaled_matmul,
/// dist.scaled_matmul_reduce_scatter): the scratch of one row block's
/// scaled GEMM (`rows` x `in` float8 lhs rows, not transposed) bounded
/// over the ring's GEMMs by their largest weight and widest result.
constexpr int64_t scaledRingGemmBytes(bool gradInput, int64_t rows, int64_t in,
                                      int64_t weightElements, int64_t cols,
                                      bool rhsTransposed) {
  return scaledMatmulWorkspace(gradInput ? ScaledMatmulForm::GradInput
                                         : ScaledMatmulForm::Linear,
                               rows * in, weightElements, rows, cols,
                               /*lhsGivenTransposed=*/false, rhsTransposed)
      .bytes;
}

/// Embedding backward: keys and positions and their sorted copies (each
/// 256-byte aligned), then CUB's radix-sort storage, bounded by two more
/// copies of keys and values plus 1 MiB of histograms; the runtime checks
/// CUB's exact request against this bound.
constexpr int64_t embeddingGradKeyBytes(int64_t tokens) {
  return alignTo256(std::max<int64_t>(tokens, 1) * 4);
}
constexpr int64_t embeddingGradSortBytes(int64_t tokens) {
  return 4 * embeddingGradKeyBytes(tokens) + (int64_t(1) << 20);
}
constexpr int64_t embeddingGradWorkspaceBytes(int64_t tokens) {
  return 4 * embeddingGradKeyBytes(tokens) + embeddingGradSortBytes(tokens);
}

/// Global norm: f64 partial sums, 64 blocks per tensor.
constexpr int64_t kNormBlocks = 64;
constexpr int64_t globalNormWorkspaceBytes(int64_t tensors) {
  return std::max<int64_t>(tensors, 1) * kNormBlocks * 8;
}

/// Attention's kernels: cuDNN's flash attention (SDPA) for bf16/f16; the
/// exact kernels (one block per query row, O(S^2 D) on CUDA cores) for f32,
/// the parity runs against the CPU target. Where cuDNN cannot build a
/// bf16/f16 graph, the exact kernels may stand in only on short sequences,
/// at most kAttentionReferenceMaxKeys keys (the unit tests' and the debug
/// model's; a step there takes milliseconds), else the runtime stops,
/// naming the shape: at the 8B model's S = 8192 they would take minutes a
/// step. The exact kernels need no workspace.
constexpr int64_t kAttentionReferenceMaxKeys = 1024;
constexpr bool attentionReferenceAllowed(bool f32, int64_t keys) {
  return f32 || keys <= kAttentionReferenceMaxKeys;
}

/// Headroom for what cuDNN's backend plan may ask for beyond the scratch
/// the frontend states (below): the plan's own workspace, which only a
/// built plan knows. The runtime takes the heuristic's first engine that
/// builds, whatever its workspace (capping it dropped every engine at
/// long sequences), and runs it here when get_workspace_size() fits, else
/// in a buffer of its own allocated at the step's first, eager run
/// (runtime/cuda/CudnnAttention.cpp; TITAN_CUDNN_LOG=1 names the engine
/// and its bytes).
constexpr int64_t kAttentionSlackBytes = int64_t(4) << 20;

/// SDPA forward: the frontend's own scratch is empty (it holds alibi
/// slopes only, which titan does not use); the plan keeps one f32 per score
/// row beside the headroom as a bound.
constexpr int64_t attentionWorkspaceBytes(int64_t batch, int64_t qHeads,
                                          int64_t seq) {
  return alignTo256(batch * qHeads * seq * 4) + kAttentionSlackBytes;
}

/// SDPA backward on sm_90, as cudnn-frontend 1.32.0 sizes it
/// (include/cudnn_frontend/node/scaled_dot_product_flash_attention.h,
/// CompositeSDPABackwardNode::expand_node and get_fe_workspace_size_node;
/// Graph::get_workspace_size adds the backend plan's workspace):
///  - softmax_sum, f32 B x Hq x Sq (the rowsum of dO * O), always;
///  - default: dQ_accum, the f32 B x Hq x Sq x D accumulator that the
///    backward adds into atomically (run to run, the order of the adds
///    varies in the last bits);
///  - deterministic: no dQ_accum; the frontend forces the dP-workspace
///    path (use_dp_workspace: deterministic on sm_90 unless
///    CUDNN_FRONTEND_ATTN_DP_WORKSPACE_LIMIT opts into cuDNN >= 9.25's
///    ordered dQ, whose workspace is dQ_accum's, smaller), whose backend
///    workspace holds dP, 2 bytes a score: B x Hq x ceil64(Sq) x
///    ceil128(Skv) x 2 (the frontend's required_dp_workspace_bytes_sm90):
///    4 GiB at B 1, Hq 32, S 8192.
/// Keys and queries are `seq` rows each (titan's attention is self
/// attention; context parallel's pairs are chunk by chunk).
/// The part of it that is the backend plan's own (dP, and the headroom).
constexpr int64_t attentionGradBackendWorkspaceBytes(int64_t batch,
                                                     int64_t qHeads,
                                                     int64_t seq,
                                                     bool deterministic) {
  int64_t dpWorkspace = deterministic ? batch * qHeads * roundUpTo(seq, 64) *
                                            roundUpTo(seq, 128) * 2
                                      : 0;
  return alignTo256(dpWorkspace) + kAttentionSlackBytes;
}
constexpr int64_t attentionGradWorkspaceBytes(int64_t batch, int64_t qHeads,
                                              int64_t seq, int64_t headDim,
                                              bool deterministic) {
  int64_t softmaxSum = batch * qHeads * seq * 4;
  int64_t dqAccum = deterministic ? 0 : batch * qHeads * seq * headDim * 4;
  return alignTo256(softmaxSum + dqAccum) +
         attentionGradBackendWorkspaceBytes(batch, qHeads, seq, deterministic);
}

/// context_attention(_grad) on `seq` local query rows (2 chunks of
/// seq / 2): cuDNN's SDPA per pair of chunks, each pair's scratch as a
/// chunk's attention; the forward also holds one chunk's partial output
/// and log-sum-exp (merged into the result), the backward one chunk's
/// partial dQ, dK and dV (summed into the gradients). Partials are bounded
/// by f32 elements; the f32 kernels need none of it. A 16-bit backward's
/// partial dQ uses half its region; the other half holds each pair's
/// log-sum-exp packed B x Hq x chunk (cuDNN before 9.26 takes no strided
/// Stats), 4 bytes a row against the free 2 D bytes.
constexpr int64_t contextAttentionWorkspaceBytes(int64_t batch, int64_t qHeads,
                                                 int64_t seq, int64_t headDim) {
  return alignTo256(batch * (seq / 2) * qHeads * headDim * 4) +
         alignTo256(batch * qHeads * (seq / 2) * 4) +
         attentionWorkspaceBytes(batch, qHeads, seq / 2);
}
constexpr int64_t
contextAttentionGradWorkspaceBytes(int64_t batch, int64_t qHeads,
                                   int64_t kvHeads, int64_t seq,
                                   int64_t headDim, bool deterministic) {
  return alignTo256(batch * (seq / 2) * qHeads * headDim * 4) +
         2 * alignTo256(batch * (seq / 2) * kvHeads * headDim * 4) +
         attentionGradWorkspaceBytes(batch, qHeads, seq / 2, headDim,
                                     deterministic);
}

} // namespace titan::cuda

#endif // TITAN_CONTRACT_CUDAWORKSPACES_H
