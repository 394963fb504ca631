//===- ContextParallelLayout.h - which chunks a rank holds ------*- C++ -*-===//
//
// How a group of ranks splits one dimension, stated once for the compiler
// (dist.local_shard's and the partitioner's part counts) and the runtime
// (the local_shard and context-attention kernels, the dataset's sequence
// shards). Contiguously, rank r holds chunk r of n. Load-balanced, as
// TorchTitan's context parallel splits the sequence for causal attention,
// the dimension is cut into 2n chunks and rank r holds chunks r and
// 2n-1-r in that order, so that every rank gets the same share of the
// causal mask's work. Whether a split is load-balanced is data
// (#dist.mesh's load_balanced, the kernels' load_balanced parameter, the
// manifest's load_balanced axes), never an axis name.
// Header-only and free of MLIR and LLVM, so the runtime includes it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_CONTEXTPARALLELLAYOUT_H
#define TITAN_CONTRACT_CONTEXTPARALLELLAYOUT_H

#include <cstdint>

namespace titan::mesh {

/// The split of one dimension over a group of `degree` ranks.
struct SplitLayout {
  int64_t degree = 1;
  bool loadBalanced = false;

  /// The chunks each rank holds: 2 load-balanced, else 1.
  constexpr int64_t chunksPerRank() const { return loadBalanced ? 2 : 1; }
  /// The chunks the dimension is cut into.
  constexpr int64_t numChunks() const { return degree * chunksPerRank(); }
  /// Whether a dimension of `size` cuts into equal chunks.
  constexpr bool divides(int64_t size) const { return size % numChunks() == 0; }
  /// The global index of local chunk `j` (< chunksPerRank()) of the rank
  /// with index `rank` in the group.
  constexpr int64_t globalChunk(int64_t rank, int64_t j) const {
    return j == 0 ? rank : 2 * degree - 1 - rank;
  }
  /// The global position of element `t` of that rank's local part, whose
  /// chunks are `chunk` elements each.
  constexpr int64_t globalPosition(int64_t rank, int64_t t,
                                   int64_t chunk) const {
    return globalChunk(rank, t / chunk) * chunk + t % chunk;
  }
};

} // namespace titan::mesh

#endif // TITAN_CONTRACT_CONTEXTPARALLELLAYOUT_H
