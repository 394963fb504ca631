//===- SendRings.cpp - how many sends a pipeline rank keeps ---------------===//

#include "titan/Pipeline/SendRings.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

using namespace titan;

namespace {

/// (sender, receiver, direction): one FIFO of messages.
using Channel = std::tuple<int64_t, int64_t, int>;
/// A message: its channel and its index in the channel's order.
using Message = std::pair<Channel, int64_t>;
using Clock = std::vector<int64_t>;

/// A transfer of a rank's list, placed on its channel.
struct Step {
  bool send = false;
  Message message;
};

/// The lists' transfers, each with its channel and index; none for the
/// other actions. An error names a transfer of a stage that does not
/// exist or has no neighbour that way.
llvm::Expected<std::vector<std::vector<std::optional<Step>>>>
placeTransfers(const std::vector<std::vector<std::string>> &rows,
               const PipelineSchedule &shape) {
  std::vector<int64_t> owner(size_t(shape.stages), -1);
  for (auto [r, stages] : llvm::enumerate(shape.stagesOfRank))
    for (int64_t stage : stages)
      owner[size_t(stage)] = int64_t(r);
  std::map<Channel, int64_t> sent, received;
  std::vector<std::vector<std::optional<Step>>> steps;
  for (auto [r, row] : llvm::enumerate(rows)) {
    auto &list = steps.emplace_back();
    for (const std::string &text : row) {
      std::optional<PipelineTransfer> t = parsePipelineTransfer(text);
      if (!t) {
        list.emplace_back();
        continue;
      }
      // Activations go to the next stage, gradients to the previous one.
      int64_t other = t->stage + ((t->direction == 0) == t->send ? 1 : -1);
      if (t->stage >= shape.stages || other < 0 || other >= shape.stages ||
          owner[size_t(other)] < 0 || owner[size_t(other)] == int64_t(r))
        return llvm::createStringError(llvm::formatv(
            "pipeline rank {0}: '{1}' has no stage on another rank to "
            "transfer with",
            r, text));
      int64_t peer = owner[size_t(other)];
      Channel c = t->send ? Channel(int64_t(r), peer, t->direction)
                          : Channel(peer, int64_t(r), t->direction);
      int64_t &count = t->send ? sent[c] : received[c];
      list.push_back(Step{t->send, {c, count++}});
    }
  }
  return steps;
}

} // namespace

llvm::Expected<std::vector<std::vector<SendRing>>>
titan::sendRings(const std::vector<std::vector<std::string>> &rows,
                 const PipelineSchedule &shape, SendRingRule rule) {
  llvm::Expected<std::vector<std::vector<std::optional<Step>>>> placed =
      placeTransfers(rows, shape);
  if (!placed)
    return placed.takeError();
  const std::vector<std::vector<std::optional<Step>>> &steps = *placed;
  size_t ranks = rows.size();
  // Run the lists, each rank waiting at its receives: each rank's clock
  // (its own component: actions done), each message's clock when sent,
  // where it was received, and the sender's clock when it was sent.
  std::vector<Clock> clock(ranks, Clock(ranks, 0));
  std::vector<size_t> next(ranks, 0);
  std::map<Message, Clock> sentClock, senderKnew, receiverKnew;
  std::map<Message, int64_t> receivedAt, sentAt;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t r = 0; r < ranks; ++r)
      for (; next[r] < steps[r].size(); ++next[r], progress = true) {
        const std::optional<Step> &step = steps[r][next[r]];
        if (step && !step->send) {
          auto it = sentClock.find(step->message);
          if (it == sentClock.end())
            break; // waits for the peer's send
          for (size_t k = 0; k < ranks; ++k)
            clock[r][k] = std::max(clock[r][k], it->second[k]);
          receivedAt[step->message] = int64_t(next[r]);
          receiverKnew[step->message] = clock[r];
        }
        if (step && step->send) {
          senderKnew[step->message] = clock[r];
          sentAt[step->message] = int64_t(next[r]);
        }
        clock[r][r] = int64_t(next[r]) + 1;
        if (step && step->send)
          sentClock[step->message] = clock[r];
      }
  }
  for (size_t r = 0; r < ranks; ++r)
    if (next[r] < steps[r].size())
      return llvm::createStringError(llvm::formatv(
          "pipeline rank {0} waits forever at '{1}' (its peer never sends it)",
          r, rows[r][next[r]]));
  for (auto &[message, knew] : senderKnew)
    if (!receivedAt.count(message))
      return llvm::createStringError(llvm::formatv(
          "pipeline rank {0} sends a message rank {1} never receives",
          std::get<0>(message.first), std::get<1>(message.first)));
  // Whether reusing a slot at send `now` may wait for send `earlier`.
  auto mayWaitFor = [&](const Message &earlier, const Message &now) {
    int64_t from = std::get<0>(now.first), to = std::get<1>(now.first);
    if (rule == SendRingRule::KnownReceived)
      return senderKnew[now][size_t(to)] >= receivedAt[earlier] + 1;
    // The receive depends only on what the sender did before `now`.
    return receiverKnew[earlier][size_t(from)] <= sentAt[now];
  };
  // Per channel, in send order: the earlier sends a reuse may not wait
  // for (those it may are a prefix: the channel is a FIFO, clocks grow).
  std::vector<std::map<std::pair<int64_t, int>, int64_t>> rings(ranks);
  std::map<Channel, int64_t> waitable;
  for (auto &[message, knew] : senderKnew) {
    auto [channel, index] = message;
    auto [from, to, direction] = channel;
    int64_t &done = waitable[channel];
    while (done < index && mayWaitFor({channel, done}, message))
      ++done;
    int64_t &slots = rings[size_t(from)][{to, direction}];
    slots = std::max(slots, index - done + 1);
  }
  std::vector<std::vector<SendRing>> result(ranks);
  for (size_t r = 0; r < ranks; ++r)
    for (auto &[key, slots] : rings[r])
      result[r].push_back({key.first, key.second, slots});
  return result;
}
