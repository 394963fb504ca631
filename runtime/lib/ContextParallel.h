//===- ContextParallel.h - attention's rows in the sequence -----*- C++ -*-===//
//
// Context parallel as TorchTitan v0.2.0 defines it (load-balanced): with cp
// degree n the sequence is cut into 2n chunks of c rows, and cp rank r holds
// global chunks r and 2n-1-r, in that order. Causal attention then needs each
// row's global position, so both targets' attention kernels take where their
// operands' rows sit as a ChunkLayout; the plain causal attention is the
// layout of one chunk.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CONTEXTPARALLEL_H
#define TITANRT_CONTEXTPARALLEL_H

#include <cstdint>

namespace titanrt {

/// The query buffer's rows are `queryChunks` chunks of `chunk` rows, chunk
/// i holding positions [queryStarts[i], queryStarts[i] + chunk); the key
/// and value buffers' rows likewise. Starts are multiples of `chunk`, so two
/// chunks are either the same positions (the causal diagonal), or one lies
/// entirely before the other (every pair visible, or none). A plain struct:
/// the CUDA kernels take it by value.
struct ChunkLayout {
  static constexpr int64_t kMaxQueryChunks = 2, kMaxKeyChunks = 128;
  int64_t chunk = 0;
  int64_t queryChunks = 0, keyChunks = 0;
  int64_t queryStarts[kMaxQueryChunks] = {};
  int64_t keyStarts[kMaxKeyChunks] = {};

  int64_t querySeq() const { return queryChunks * chunk; }
  int64_t keySeq() const { return keyChunks * chunk; }
};

/// One chunk of `seq` rows from position 0: titan.attention's layout.
inline ChunkLayout wholeSequence(int64_t seq) {
  ChunkLayout layout;
  layout.chunk = seq;
  layout.queryChunks = layout.keyChunks = 1;
  return layout;
}

/// The first position of local chunk `j` (0 or 1) of cp rank `rank`.
constexpr int64_t loadBalancedStart(int64_t rank, int64_t degree, int64_t j,
                                    int64_t chunk) {
  return (j == 0 ? rank : 2 * degree - 1 - rank) * chunk;
}

/// context_attention's layout on cp rank `rank` of `degree`, whose local
/// sequence is `seq` rows (2 chunks). The key/value buffer is cp rank
/// (rank - kvShift) mod degree's local one when kvShift >= 0 (the ring),
/// every rank's in rank order when kvShift is -1 (the all-gathered K/V).
/// Callers check 2 * degree <= kMaxKeyChunks.
inline ChunkLayout loadBalancedLayout(int64_t rank, int64_t degree,
                                      int64_t kvShift, int64_t seq) {
  ChunkLayout layout;
  layout.chunk = seq / 2;
  layout.queryChunks = 2;
  for (int64_t j = 0; j < 2; ++j)
    layout.queryStarts[j] = loadBalancedStart(rank, degree, j, layout.chunk);
  int64_t first =
      kvShift < 0 ? 0 : ((rank - kvShift) % degree + degree) % degree;
  int64_t owners = kvShift < 0 ? degree : 1;
  layout.keyChunks = 2 * owners;
  for (int64_t o = 0; o < owners; ++o)
    for (int64_t j = 0; j < 2; ++j)
      layout.keyStarts[2 * o + j] =
          loadBalancedStart(first + o, degree, j, layout.chunk);
  return layout;
}

/// context_attention(_grad)'s layout from its call on this rank: `ints` =
/// {degree, kv_shift, number of cp axes, axis indices (0 pp ... 4 tp)
/// outermost first}, as KernelABI.h passes them; the rank's cp index is its
/// index over those axes. Stops the run, naming the kernel, when the shapes
/// do not fit the layout (`querySeq` odd, `keySeq` neither `querySeq` nor
/// degree * `querySeq`) or the degree is past what the layout holds.
ChunkLayout contextParallelLayout(const char *kernel, const int64_t *ints,
                                  int64_t querySeq, int64_t keySeq);

} // namespace titanrt

#endif // TITANRT_CONTEXTPARALLEL_H
