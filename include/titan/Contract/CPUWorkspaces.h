//===- CPUWorkspaces.h - the CPU kernels' scratch ---------------*- C++ -*-===//
//
// The workspace each CPU kernel uses, stated once for both sides: the
// target's workspace rules (lib/Target/CPU/CPUBackend.cpp) plan these
// bytes in the arena, and the CPU kernels (runtime/lib/) carve their tiles
// from them.
// Header-only, so the compiler and the runtime cannot disagree.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_CPUWORKSPACES_H
#define TITAN_CONTRACT_CPUWORKSPACES_H

#include <cstdint>

namespace titan::cpu {

/// Flash attention's tiles: blocks of 64 query rows against chunks of up
/// to 512 key columns. A chunk is one GEMM per operand, so few enough
/// calls that oneDNN's per-call cost stays small next to the work (64 x 64
/// tiles spent a quarter of their time there), and the online softmax
/// bounds the tiles for any sequence length. A query block's columns past
/// its last row are never computed; only its diagonal 64 x 64 has masked
/// entries.
constexpr int64_t kAttentionBlock = 64;
constexpr int64_t kAttentionKeyChunk = 512;
static_assert(kAttentionKeyChunk % kAttentionBlock == 0,
              "a key chunk starts on a query block's boundary");

/// Attention runs on at most this many threads, and on no more than it has
/// tasks; each thread has its own slot of the workspace, so the plan does
/// not depend on the machine's core count.
constexpr int64_t kAttentionSlots = 64;

/// The forward's tasks: (batch, query head, query block), the blocks cut
/// from each of the query's `chunks` chunks of seq / chunks rows (1, or
/// context parallel's 2: titanrt::ChunkLayout); the backward's: (batch, KV
/// head).
constexpr int64_t attentionTasks(int64_t batch, int64_t qHeads, int64_t seq,
                                 int64_t chunks = 1) {
  return batch * qHeads * chunks *
         ((seq / chunks + kAttentionBlock - 1) / kAttentionBlock);
}
constexpr int64_t attentionGradTasks(int64_t batch, int64_t kvHeads) {
  return batch * kvHeads;
}
constexpr int64_t attentionSlots(int64_t tasks) {
  return tasks < 1 ? 1 : tasks < kAttentionSlots ? tasks : kAttentionSlots;
}

/// A tile's rows (the query block) and columns (its row stride, the key
/// chunk), each capped by the sequence's chunk.
constexpr int64_t attentionTileRows(int64_t seq) {
  return seq < kAttentionBlock ? (seq < 1 ? 1 : seq) : kAttentionBlock;
}
constexpr int64_t attentionTileCols(int64_t seq) {
  return seq < kAttentionKeyChunk ? (seq < 1 ? 1 : seq) : kAttentionKeyChunk;
}

/// One thread's slot, in elements of the accumulator type: the S (then P)
/// tile, the dP (then dS) tile (tiles sized by the query's chunks of seq /
/// chunks rows), three per-row statistics of a query block (running max,
/// running sum, rescale factor) and, for the backward, one head's
/// rowsum(dO * O) over the query's `seq` rows; rounded up to 64 bytes.
constexpr int64_t attentionSlotElements(int64_t seq, int64_t chunks = 1) {
  int64_t rows = attentionTileRows(seq / chunks);
  int64_t elements =
      2 * rows * attentionTileCols(seq / chunks) + 3 * rows + seq;
  return (elements + 15) / 16 * 16;
}

/// `elementBytes` is 4 (f32, and the 16-bit types' f32 accumulators) or 8
/// (f64); `seq` is the query's rows, in `chunks` chunks.
constexpr int64_t attentionWorkspaceBytes(int64_t batch, int64_t qHeads,
                                          int64_t seq, int64_t elementBytes,
                                          int64_t chunks = 1) {
  return attentionSlots(attentionTasks(batch, qHeads, seq, chunks)) *
         attentionSlotElements(seq, chunks) * elementBytes;
}
constexpr int64_t attentionGradWorkspaceBytes(int64_t batch, int64_t kvHeads,
                                              int64_t seq, int64_t elementBytes,
                                              int64_t chunks = 1) {
  return attentionSlots(attentionGradTasks(batch, kvHeads)) *
         attentionSlotElements(seq, chunks) * elementBytes;
}

/// context_attention(_grad): the query's `seq` local rows are context
/// parallel's 2 chunks (whatever the key/value buffer holds).
constexpr int64_t contextAttentionWorkspaceBytes(int64_t batch, int64_t qHeads,
                                                 int64_t seq,
                                                 int64_t elementBytes) {
  return attentionWorkspaceBytes(batch, qHeads, seq, elementBytes, 2);
}
constexpr int64_t contextAttentionGradWorkspaceBytes(int64_t batch,
                                                     int64_t kvHeads,
                                                     int64_t seq,
                                                     int64_t elementBytes) {
  return attentionGradWorkspaceBytes(batch, kvHeads, seq, elementBytes, 2);
}

/// Global norm: each tensor's sum of squares in spans of at least
/// kNormMinSpan elements, at most kNormSpans of them (fixed by its size),
/// their f64 partials added in order; one set of partials serves every
/// tensor in turn, sized for the largest.
constexpr int64_t kNormSpans = 64;
constexpr int64_t kNormMinSpan = int64_t(1) << 16;
constexpr int64_t normSpan(int64_t n) {
  int64_t span = (n + kNormSpans - 1) / kNormSpans;
  return span < kNormMinSpan ? kNormMinSpan : span;
}
constexpr int64_t globalNormWorkspaceBytes(int64_t largest) {
  int64_t spans = (largest + normSpan(largest) - 1) / normSpan(largest);
  return (spans < 1 ? 1 : spans) * 8;
}

/// Float8's collective matmuls (dist.all_gather_scaled_matmul,
/// dist.scaled_matmul_reduce_scatter; runtime/lib/AsyncTensorParallel.cpp):
/// the ring's `shardCount` buffers of `shardBytes` each (the gather's two
/// float8 shards, the reduce-scatter's two f32 partial sums and the one
/// received; a 16-bit call's separately rounded GEMM results reuse the
/// product), then f32 copies of every weight
/// (`weightElements` in all, decoded once), of one row block of lhs
/// (`blockElements`) and of its GEMM product (`productElements`), each
/// part rounded up to 64 bytes.
/// Offsets of the parts after the shards (which start at 0), and the
/// total.
struct ScaledRingWorkspace {
  int64_t weights = 0, lhsBlock = 0, product = 0, bytes = 0;
};
constexpr int64_t roundUpTo64(int64_t bytes) { return (bytes + 63) / 64 * 64; }
constexpr ScaledRingWorkspace scaledRingWorkspace(int64_t shardCount,
                                                  int64_t shardBytes,
                                                  int64_t weightElements,
                                                  int64_t blockElements,
                                                  int64_t productElements) {
  ScaledRingWorkspace w;
  w.weights = shardCount * roundUpTo64(shardBytes);
  w.lhsBlock = w.weights + roundUpTo64(weightElements * 4);
  w.product = w.lhsBlock + roundUpTo64(blockElements * 4);
  w.bytes = w.product + roundUpTo64(productElements * 4);
  return w;
}

} // namespace titan::cpu

#endif // TITAN_CONTRACT_CPUWORKSPACES_H
