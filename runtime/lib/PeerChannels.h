//===- PeerChannels.h - a pipeline's point-to-point channels ----*- C++ -*-===//
//
// NCCL matches a pair's sends and receives in the order they are issued,
// and a send occupies its stream until the peer receives it. One
// communicator (and stream) per direction and flow between neighbouring
// pipeline ranks therefore keeps every message's FIFO apart: a rank's
// sends never queue behind its receives, nor activations behind
// gradients, so a channel only ever waits for the message at its head,
// which the peer sends in the same order (verifyLoweredSchedule checks
// it). Pipelines only talk to neighbours (stage s on rank s mod pp, or the
// V layout, where both neighbours of a stage are on ranks +-1 mod pp).
//
// The channels are made with ncclCommSplit over the pipeline group, which
// every member calls together: in rounds, each rank in at most one
// channel per round. Host-only, so the plan is unit-tested without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_PEERCHANNELS_H
#define TITANRT_LIB_PEERCHANNELS_H

#include <cstdint>
#include <vector>

namespace titanrt {

/// One direction of one flow between two pipeline coordinates.
struct PeerChannel {
  int64_t from, to;
  /// 0: activations, 1: gradients (PeerFlow's order).
  int flow;
  bool operator==(const PeerChannel &o) const {
    return from == o.from && to == o.to && flow == o.flow;
  }
};

/// Every channel between neighbours of a ring of `pp` pipeline ranks, each
/// once, in an order all ranks agree on; grouped into rounds in which no
/// rank is in two channels (a round is one ncclCommSplit).
inline std::vector<std::vector<PeerChannel>> peerChannelRounds(int64_t pp) {
  std::vector<PeerChannel> all;
  auto add = [&](PeerChannel c) {
    for (const PeerChannel &o : all)
      if (o == c)
        return;
    all.push_back(c);
  };
  if (pp > 1)
    for (int flow = 0; flow < 2; ++flow)
      for (int64_t x = 0; x < pp; ++x) {
        int64_t next = (x + 1) % pp;
        add({x, next, flow});
        add({next, x, flow});
      }
  // First fit: each channel in the first round where neither rank is busy.
  std::vector<std::vector<PeerChannel>> rounds;
  for (const PeerChannel &c : all) {
    bool placed = false;
    for (std::vector<PeerChannel> &round : rounds) {
      bool busy = false;
      for (const PeerChannel &o : round)
        busy |= o.from == c.from || o.from == c.to || o.to == c.from ||
                o.to == c.to;
      if (!busy) {
        round.push_back(c);
        placed = true;
        break;
      }
    }
    if (!placed)
      rounds.push_back({c});
  }
  return rounds;
}

} // namespace titanrt

#endif // TITANRT_LIB_PEERCHANNELS_H
