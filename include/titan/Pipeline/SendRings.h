//===- SendRings.h - how many sends a pipeline rank keeps -------*- C++ -*-===//
//
// A pipeline rank sends a boundary tensor whose buffer is reused before
// the peer can be known to have it (an input gradient, whose frame is
// freed at once; validation's activations, whose arena slots the next
// microbatch overwrites) from a copy, and the copies live in a ring of
// planned buffers per channel (sender, receiver, direction). Reusing a
// slot waits for the send that last used it; the ring is sized so that
// this wait is for a send the rank already knows was received (training)
// or whose receive depends on nothing the rank does later (validation's
// forward-only lists). The wait then never closes a cycle with a peer, and
// the list runs as its CPU sequential order does, which
// dist-pipeline-verify proved deadlock-free with unbounded sends.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PIPELINE_SENDRINGS_H
#define TITAN_PIPELINE_SENDRINGS_H

#include "titan/Pipeline/Schedule.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace titan {

/// One channel a rank sends on: the receiving pipeline rank, the direction
/// (0: activations, 1: gradients) and the messages its ring holds.
struct SendRing {
  int64_t peer;
  int direction;
  int64_t slots;
  bool operator==(const SendRing &o) const {
    return peer == o.peer && direction == o.direction && slots == o.slots;
  }
};

/// Which earlier send a slot's reuse may wait for.
enum class SendRingRule {
  /// Only one the rank already knows was received (some message it has
  /// received was sent after that receive, directly or through other
  /// ranks): the wait is already satisfied, so it never stalls the rank.
  /// For the training lists, whose microbatches a stall would delay.
  KnownReceived,
  /// Any one whose receive depends on nothing the rank does from the send
  /// on: the wait may stall the rank until the peer gets there, but cannot
  /// close a cycle. For the forward-only eval lists, whose layouts that do
  /// not loop back would otherwise keep every microbatch's message.
  ReceiveIndependent,
};

/// For each rank of the verified lowered lists `rows` (the stage layout of
/// `shape`), the rings of the channels it sends on, by (peer, direction):
/// at each send, the channel's earlier sends that a reuse may not wait for
/// under `rule`, plus the new one, at most. The dependencies are causal
/// (vector clocks over the lists' messages, in a run where each rank waits
/// at its receives). An error names a list that cannot run: a receive
/// whose send never comes, a send never received, a transfer with no
/// stage on another rank.
llvm::Expected<std::vector<std::vector<SendRing>>>
sendRings(const std::vector<std::vector<std::string>> &rows,
          const PipelineSchedule &shape,
          SendRingRule rule = SendRingRule::KnownReceived);

} // namespace titan

#endif // TITAN_PIPELINE_SENDRINGS_H
