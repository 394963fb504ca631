//===- ContextParallel.h - attention's rows in the sequence -----*- C++ -*-===//
//
// Context parallel as TorchTitan v0.2.0 defines it: with cp degree n the
// sequence is cut into chunks, load-balanced 2n of c rows with cp rank r
// holding global chunks r and 2n-1-r, in that order, or n contiguous ones
// (titan/Contract/ContextParallelLayout.h; the kernels' load_balanced
// parameter says which). Causal attention then needs each row's global
// position, so both targets' attention kernels take where their operands'
// rows sit as a ChunkLayout; the plain causal attention is the layout of
// one chunk.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CONTEXTPARALLEL_H
#define TITANRT_CONTEXTPARALLEL_H

#include "titan/Contract/ContextParallelLayout.h"

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

/// context_attention's layout on the rank with index `rank` in the group
/// that splits the sequence as `split`, whose local sequence is `seq` rows
/// (its split.chunksPerRank() chunks). The key/value buffer is rank
/// (rank - kvShift) mod degree's local one when kvShift >= 0 (the ring),
/// every rank's in rank order when kvShift is -1 (the all-gathered K/V).
/// Callers check split.numChunks() <= kMaxKeyChunks.
inline ChunkLayout contextLayout(titan::mesh::SplitLayout split, int64_t rank,
                                 int64_t kvShift, int64_t seq) {
  ChunkLayout layout;
  int64_t parts = split.chunksPerRank(), degree = split.degree;
  layout.chunk = seq / parts;
  layout.queryChunks = parts;
  for (int64_t j = 0; j < parts; ++j)
    layout.queryStarts[j] = split.globalChunk(rank, j) * layout.chunk;
  int64_t first =
      kvShift < 0 ? 0 : ((rank - kvShift) % degree + degree) % degree;
  int64_t owners = kvShift < 0 ? degree : 1;
  layout.keyChunks = parts * owners;
  for (int64_t o = 0; o < owners; ++o)
    for (int64_t j = 0; j < parts; ++j)
      layout.keyStarts[parts * o + j] =
          split.globalChunk(first + o, j) * layout.chunk;
  return layout;
}

/// contextLayout of TorchTitan's load-balanced split over `degree` ranks.
inline ChunkLayout loadBalancedLayout(int64_t rank, int64_t degree,
                                      int64_t kvShift, int64_t seq) {
  return contextLayout({degree, /*loadBalanced=*/true}, rank, kvShift, seq);
}

/// context_attention(_grad)'s layout from its call on this rank: `ints` =
/// {degree, kv_shift, load_balanced, number of cp axes, axis indices (0 pp
/// ... 4 tp) outermost first}, as KernelABI.h passes them; the rank's cp
/// index is its index over those axes. Stops the run, naming the kernel,
/// when the shapes do not fit the layout (`querySeq` not a whole number of
/// chunks, `keySeq` neither `querySeq` nor degree * `querySeq`) or the
/// degree is past what the layout holds.
ChunkLayout contextParallelLayout(const char *kernel, const int64_t *ints,
                                  int64_t querySeq, int64_t keySeq);

} // namespace titanrt

#endif // TITANRT_CONTEXTPARALLEL_H
