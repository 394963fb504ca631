//===- CollectiveCost.h - NCCL collectives on a mesh ------------*- C++ -*-===//
//
// A collective's time from its bytes, its group and where the group's ranks
// sit: ranks are numbered in TorchTitan's mesh order (pp, dp_replicate,
// dp_shard, cp, tp; tp innermost) and fill nodes of devicesPerNode in rank
// order, so a group's ranks are spread over some nodes with some ranks on
// each. Ring and tree follow NCCL's algorithms (a ring step per rank; a
// tree's depth across nodes); NCCL picks the faster, and so does the model.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COST_COLLECTIVECOST_H
#define TITAN_COST_COLLECTIVECOST_H

#include "titan/Cost/Hardware.h"

#include "llvm/ADT/ArrayRef.h"

namespace titan::cost {

enum class CollectiveKind {
  AllGather,
  ReduceScatter,
  AllReduce,
  AllToAll,
  Broadcast,
  SendRecv
};

/// The kind of a kernel.collective_start's kernel name ("all_gather_start",
/// ...), or of a communicating call's ring; std::nullopt for others.
std::optional<CollectiveKind> collectiveKind(llvm::StringRef kernel);

/// Where one group of the mesh lies: its size, the nodes it spans and how
/// many of its ranks share each node.
struct GroupPlacement {
  int64_t size = 1, nodes = 1, perNode = 1;
};

/// The group over the mesh axes in `axisMask` (bit i is axis i of
/// `degrees`, which lists pp, dp_replicate, dp_shard, cp, tp) when nodes
/// hold `devicesPerNode` consecutive ranks.
GroupPlacement placeGroup(llvm::ArrayRef<int64_t> degrees, unsigned axisMask,
                          int64_t devicesPerNode);

struct CollectiveEstimate {
  double seconds = 0;
  /// "ring" or "tree" (the faster of the two NCCL would pick), "p2p".
  llvm::StringRef algorithm;
};

/// The time of one collective of `kind` moving `bytes` (the whole buffer:
/// an all-gather's output, a reduce-scatter's input, an all-reduce's
/// buffer, a send's message) over `group` on `hw`. Inter-node groups with
/// k ranks per node use k network links at once (NCCL's rings over the
/// node's NICs), and the other groups of the same axes on the node use the
/// rest.
CollectiveEstimate collectiveSeconds(CollectiveKind kind, double bytes,
                                     const GroupPlacement &group,
                                     const Hardware &hw);

llvm::StringRef stringifyCollectiveKind(CollectiveKind kind);

} // namespace titan::cost

#endif // TITAN_COST_COLLECTIVECOST_H
