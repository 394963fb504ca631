//===- CollectiveCost.cpp - NCCL's ring and tree on a mesh's placement ----===//
//
// The times follow nccl-tests' bus bandwidth definitions (nccl-tests
// doc/PERFORMANCE.md): a collective of S bytes over n ranks whose bus
// bandwidth is B takes S (n-1)/n / B for all_gather and reduce_scatter
// (S the gathered or scattered whole), 2 S (n-1)/n / B for all_reduce,
// S / B for broadcast and send/recv; that is the ring's bandwidth term,
// each of its (n-1) steps moving S/n. Its latency is NCCL's tuning model's
// (src/graph/tuning.cc): the steps that cross the network (nNodes - 1 of an
// all_gather's) pay the network's latency, the others the intra-node one. A
// group that spans nodes runs as fast as its busiest link: inside a node
// NVLink's bus bandwidth, between nodes each node's k ranks of the group drive
// k NICs (NCCL's rings over all of a node's NICs), so the ring's bandwidth is
// min(NVLink bus, k x NIC).
//
// NCCL's tree (all_reduce across nodes only) has the ring's bandwidth term
// at a lower efficiency (NCCL's tuning, src/graph/tuning.cc, models the
// tree's bandwidth below the ring's: the double binary tree's nodes send
// and receive at once and its intra-node chains add hops; we take 0.9 of
// the ring's) and a latency of 2 log2(nodes) network hops plus the chain
// through each node's ranks, up and down. NCCL picks the faster; so does
// the model, which names its pick: the tree for small all_reduces over
// many nodes, the ring for large ones.
//
//===----------------------------------------------------------------------===//

#include "titan/Cost/CollectiveCost.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace titan::cost;
using llvm::StringRef;

namespace {
/// The tree's bandwidth as a fraction of the ring's (see above).
constexpr double kTreeBandwidthFactor = 0.9;
} // namespace

std::optional<CollectiveKind> titan::cost::collectiveKind(StringRef kernel) {
  return llvm::StringSwitch<std::optional<CollectiveKind>>(kernel)
      .Case("all_gather_start", CollectiveKind::AllGather)
      .Case("reduce_scatter_start", CollectiveKind::ReduceScatter)
      .Case("all_reduce_start", CollectiveKind::AllReduce)
      .Case("all_to_all_start", CollectiveKind::AllToAll)
      .Case("broadcast_start", CollectiveKind::Broadcast)
      .Case("send_recv_start", CollectiveKind::SendRecv)
      // Async TP's collective matmuls: their ring is the collective's.
      .Case("all_gather_linear", CollectiveKind::AllGather)
      .Case("linear_reduce_scatter", CollectiveKind::ReduceScatter)
      .Case("all_gather_scaled_matmul", CollectiveKind::AllGather)
      .Case("scaled_matmul_reduce_scatter", CollectiveKind::ReduceScatter)
      .Default(std::nullopt);
}

StringRef titan::cost::stringifyCollectiveKind(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::SendRecv:
    return "send_recv";
  }
  return "";
}

GroupPlacement titan::cost::placeGroup(llvm::ArrayRef<int64_t> degrees,
                                       unsigned axisMask,
                                       int64_t devicesPerNode) {
  // Strides in mesh order, the last axis (tp) fastest.
  size_t rank = degrees.size();
  std::vector<int64_t> stride(rank, 1);
  for (size_t i = rank; i-- > 1;)
    stride[i - 1] = stride[i] * std::max<int64_t>(degrees[i], 1);
  // The group of rank 0: every combination of the masked axes'
  // coordinates, the others 0.
  std::vector<size_t> axes;
  for (size_t i = 0; i < rank; ++i)
    if ((axisMask >> i) & 1 && degrees[i] > 1)
      axes.push_back(i);
  GroupPlacement group;
  group.size = 1;
  for (size_t axis : axes)
    group.size *= degrees[axis];
  int64_t perNodeDevices = std::max<int64_t>(devicesPerNode, 1);
  std::set<int64_t> nodes;
  std::vector<int64_t> coord(axes.size(), 0);
  for (int64_t member = 0; member < group.size; ++member) {
    int64_t r = 0;
    for (size_t j = 0; j < axes.size(); ++j)
      r += coord[j] * stride[axes[j]];
    nodes.insert(r / perNodeDevices);
    // The next combination, the last axis fastest.
    for (size_t j = axes.size(); j-- > 0;) {
      if (++coord[j] < degrees[axes[j]])
        break;
      coord[j] = 0;
    }
  }
  group.nodes = int64_t(nodes.size());
  group.perNode = group.size / group.nodes;
  return group;
}

CollectiveEstimate titan::cost::collectiveSeconds(CollectiveKind kind,
                                                  double bytes,
                                                  const GroupPlacement &group,
                                                  const Hardware &hw) {
  double n = double(group.size);
  if (group.size <= 1 || bytes <= 0)
    return {0, kind == CollectiveKind::SendRecv ? "p2p" : "ring"};
  bool crossesNodes = group.nodes > 1;
  // The ring's bus bandwidth: NVLink's inside a node; across nodes each
  // node's k ranks of the group drive k NICs.
  double busBandwidth = hw.intraNodeBusBytesPerSecond;
  if (crossesNodes)
    busBandwidth = std::min(busBandwidth,
                            double(group.perNode) * hw.interNodeBytesPerSecond);
  // A ring's latency, as NCCL's tuning model charges it
  // (src/graph/tuning.cc, ncclTopoTuneModel): of its `steps`, the
  // `interSteps` that cross the network pay the network's latency (nNodes -
  // 1 for all_gather and reduce_scatter, 2 (nNodes - 1) for all_reduce),
  // the rest the intra-node one.
  double nodes = double(group.nodes);
  auto ringLatency = [&](double steps, double interSteps) {
    return (steps - interSteps) * hw.intraNodeLatencySeconds +
           interSteps * hw.interNodeLatencySeconds;
  };
  switch (kind) {
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
    // n-1 steps of S/n each.
    return {(n - 1) / n * bytes / busBandwidth + ringLatency(n - 1, nodes - 1),
            "ring"};
  case CollectiveKind::AllReduce: {
    // Reduce-scatter then all-gather: 2(n-1) steps of S/n.
    double ring = 2 * (n - 1) / n * bytes / busBandwidth +
                  ringLatency(2 * (n - 1), 2 * (nodes - 1));
    if (!crossesNodes)
      return {ring, "ring"};
    double depth = std::ceil(std::log2(nodes));
    double tree =
        2 * (n - 1) / n * bytes / (kTreeBandwidthFactor * busBandwidth) +
        2 * depth * hw.interNodeLatencySeconds +
        2 * double(group.perNode - 1) * hw.intraNodeLatencySeconds;
    if (tree < ring)
      return {tree, "tree"};
    return {ring, "ring"};
  }
  case CollectiveKind::AllToAll:
    // Each rank sends (n-1)/n of its buffer, one message per peer: n-1
    // messages, those to other nodes over the network.
    return {(n - 1) / n * bytes / busBandwidth +
                ringLatency(n - 1, n - double(group.perNode)),
            "ring"};
  case CollectiveKind::Broadcast:
    // A pipelined ring: the whole buffer once over the bus, plus the
    // pipeline's fill of n-1 hops, nNodes - 1 of them between nodes.
    return {bytes / busBandwidth + ringLatency(n - 1, nodes - 1), "ring"};
  case CollectiveKind::SendRecv: {
    // One message between adjacent ranks of the group: over the network
    // when the group spans nodes (its stride reaches past a node: the
    // slowest pair bounds a pipeline), else over NVLink.
    double link = crossesNodes ? hw.interNodeBytesPerSecond
                               : hw.intraNodeBusBytesPerSecond;
    return {bytes / link + (crossesNodes ? hw.interNodeLatencySeconds
                                         : hw.intraNodeLatencySeconds),
            "p2p"};
  }
  }
  return {0, "ring"};
}
