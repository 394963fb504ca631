//===- SendRings.h - how many sends a pipeline rank keeps -------*- C++ -*-===//
//
// A pipeline rank sends each boundary tensor from a copy, so that its
// microbatch frame can be reused at once, and the copies live in a ring of
// planned buffers per channel (sender, receiver, direction). Reusing a
// slot waits for the send that last used it; the ring is sized so that
// this wait is for a send the rank already knows was received: some
// message it has received was sent (directly, or through other ranks)
// after the peer's receive. The wait then never ties the rank to a peer's
// progress, and the list runs as its CPU sequential order does, which
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

/// For each rank of the verified lowered lists `rows` (the stage layout of
/// `shape`), the rings of the channels it sends on, by (peer, direction):
/// at each send, the channel's earlier sends the rank does not yet know
/// were received, plus the new one, at most. The knowledge is causal
/// (vector clocks over the lists' messages, in a run where each rank waits
/// at its receives): a send is known received once the rank has received
/// a message its peer sent after that receive, or one that carries that
/// knowledge from another rank. An error names a list that cannot run.
llvm::Expected<std::vector<std::vector<SendRing>>>
sendRings(const std::vector<std::vector<std::string>> &rows,
          const PipelineSchedule &shape);

} // namespace titan

#endif // TITAN_PIPELINE_SENDRINGS_H
