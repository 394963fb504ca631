//===- KernelWorkspaces.h - the CPU kernels' scratch ------------*- C++ -*-===//
//
// The workspace each CPU kernel uses, stated once for both sides: the kernel
// contracts (lib/Dialect/Titan/IR/KernelContracts.cpp) plan these bytes in
// the arena, and the CPU kernels (runtime/lib/) carve their tiles from them.
// Header-only, so the compiler and the runtime cannot disagree.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TARGET_CPU_KERNELWORKSPACES_H
#define TITAN_TARGET_CPU_KERNELWORKSPACES_H

#include <cstdint>

namespace titan::cpu {

/// Flash attention's tiles: query and key blocks of the same size, so a
/// query block's diagonal key block is the only one with masked entries.
/// 64 x 64 f32 tiles keep a thread's S and dP tiles (32 KiB) in L1/L2.
constexpr int64_t kAttentionBlock = 64;

/// Attention runs on at most this many threads, and on no more than it has
/// tasks; each thread has its own slot of the workspace, so the plan does
/// not depend on the machine's core count.
constexpr int64_t kAttentionSlots = 64;

/// The forward's tasks: (batch, query head, query block); the backward's:
/// (batch, KV head).
constexpr int64_t attentionTasks(int64_t batch, int64_t qHeads, int64_t seq) {
  return batch * qHeads * ((seq + kAttentionBlock - 1) / kAttentionBlock);
}
constexpr int64_t attentionGradTasks(int64_t batch, int64_t kvHeads) {
  return batch * kvHeads;
}
constexpr int64_t attentionSlots(int64_t tasks) {
  return tasks < 1 ? 1 : tasks < kAttentionSlots ? tasks : kAttentionSlots;
}

/// A tile's rows and row stride: the block, or the whole sequence when it
/// is shorter.
constexpr int64_t attentionTile(int64_t seq) {
  return seq < kAttentionBlock ? (seq < 1 ? 1 : seq) : kAttentionBlock;
}

/// One thread's slot, in elements of the accumulator type: the S (then P)
/// tile, the dP (then dS) tile, three per-row statistics of a query block
/// (running max, running sum, rescale factor) and, for the backward, one
/// head's rowsum(dO * O) over the sequence; rounded up to 64 bytes.
constexpr int64_t attentionSlotElements(int64_t seq) {
  int64_t tile = attentionTile(seq);
  int64_t elements = 2 * tile * tile + 3 * tile + seq;
  return (elements + 15) / 16 * 16;
}

/// `elementBytes` is 4 (f32, and the 16-bit types' f32 accumulators) or 8
/// (f64).
constexpr int64_t attentionWorkspaceBytes(int64_t batch, int64_t qHeads,
                                          int64_t seq, int64_t elementBytes) {
  return attentionSlots(attentionTasks(batch, qHeads, seq)) *
         attentionSlotElements(seq) * elementBytes;
}
constexpr int64_t attentionGradWorkspaceBytes(int64_t batch, int64_t kvHeads,
                                              int64_t seq,
                                              int64_t elementBytes) {
  return attentionSlots(attentionGradTasks(batch, kvHeads)) *
         attentionSlotElements(seq) * elementBytes;
}

} // namespace titan::cpu

#endif // TITAN_TARGET_CPU_KERNELWORKSPACES_H
