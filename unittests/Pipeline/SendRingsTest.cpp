//===- SendRingsTest.cpp - how many sends a pipeline rank keeps -----------===//
//
// titan::sendRings on small lists traced by hand (1F1B and GPipe on two
// ranks), and on every schedule titan builds on 2 to 8 ranks: each rank
// keeps at least one slot per channel it sends on and at most the sends
// of its list; and against an independent search of the lists'
// happens-before (2 to 4 ranks, training and validation lists): every
// ring suffices under its rule and one slot fewer would not.
//
//===----------------------------------------------------------------------===//

#include "titan/Pipeline/SendRings.h"

#include "Pipeline/TestSchedules.h"

#include "gtest/gtest.h"

#include <map>
#include <tuple>

using namespace titan;

namespace {

constexpr auto build = test::buildPlanned;

std::vector<std::vector<SendRing>> rings(const PipelineSchedule &s) {
  llvm::Expected<std::vector<std::vector<SendRing>>> r =
      sendRings(lowerSchedule(s), s);
  EXPECT_TRUE(bool(r)) << llvm::toString(r.takeError());
  return r ? *r : std::vector<std::vector<SendRing>>{};
}

TEST(SendRings, OneForwardOneBackwardOnTwoRanks) {
  // Rank 0: F0 SEND_F0 F1 SEND_F1 RECV_B0 B0 F2 SEND_F2 ... It learns that
  // rank 1 received F0 from B0's gradient, which rank 1 sent after
  // receiving F0: two activations are in flight at most. Rank 1 learns
  // that rank 0 received B0 from F2, sent after rank 0's RECV_B0: two
  // gradients.
  std::vector<std::vector<SendRing>> r = rings(build("1F1B", 2, 2, 4));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (std::vector<SendRing>{{1, 0, 2}}));
  EXPECT_EQ(r[1], (std::vector<SendRing>{{0, 1, 2}}));
  // GPipe: every forward before any backward: rank 0 sends all four
  // activations before it learns anything, and rank 1 all four gradients.
  r = rings(build("GPipe", 2, 2, 4));
  EXPECT_EQ(r[0], (std::vector<SendRing>{{1, 0, 4}}));
  EXPECT_EQ(r[1], (std::vector<SendRing>{{0, 1, 4}}));
  // Validation's forward-only list never hears back on these layouts: a
  // ring that may wait for the receive needs one slot.
  PipelineSchedule eval = forwardOnlySchedule(build("1F1B", 2, 2, 4));
  llvm::Expected<std::vector<std::vector<SendRing>>> e =
      sendRings(lowerSchedule(eval), eval, SendRingRule::ReceiveIndependent);
  ASSERT_TRUE(bool(e));
  EXPECT_EQ((*e)[0], (std::vector<SendRing>{{1, 0, 1}}));
}

TEST(SendRings, BoundedByTheListOnEverySchedule) {
  for (llvm::StringRef name :
       {"GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS",
        "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"}) {
    for (int64_t pp : {2, 4, 8}) {
      PipelineSchedule s = build(name, 4 * pp, pp, 2 * pp);
      std::vector<std::vector<std::string>> rows = lowerSchedule(s);
      std::vector<std::vector<SendRing>> r = rings(s);
      ASSERT_EQ(r.size(), size_t(pp));
      for (int64_t rank = 0; rank < pp; ++rank) {
        int64_t sends = 0;
        for (const std::string &text : rows[size_t(rank)])
          if (std::optional<PipelineTransfer> t = parsePipelineTransfer(text))
            sends += t->send;
        int64_t slots = 0;
        for (const SendRing &ring : r[size_t(rank)]) {
          EXPECT_GE(ring.slots, 1);
          EXPECT_NE(ring.peer, rank);
          slots += ring.slots;
        }
        EXPECT_LE(slots, sends) << name.str() << " pp " << pp;
        EXPECT_EQ(slots == 0, sends == 0) << name.str() << " pp " << pp;
      }
      // The forward-only list sends activations only.
      PipelineSchedule eval = forwardOnlySchedule(s);
      for (const std::vector<SendRing> &list : rings(eval))
        for (const SendRing &ring : list)
          EXPECT_EQ(ring.direction, 0);
    }
  }
}

/// The lists' happens-before, found by search rather than clocks: nodes
/// are (rank, position), edges each rank's order and each message from
/// its send to its receive (matched in order per channel, checked to name
/// the same microbatch).
struct HappensBefore {
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> first; ///< node index of each rank's position 0
  std::vector<std::vector<size_t>> edges;
  /// Per send node: its receive node, and the sends of each channel.
  std::map<size_t, size_t> receiveOf;
  std::map<std::tuple<int64_t, int64_t, int>, std::vector<size_t>> sends;

  HappensBefore(const std::vector<std::vector<std::string>> &lists,
                const PipelineSchedule &s)
      : rows(lists) {
    std::vector<int64_t> owner(size_t(s.stages));
    for (auto [r, stages] : llvm::enumerate(s.stagesOfRank))
      for (int64_t st : stages)
        owner[size_t(st)] = int64_t(r);
    size_t n = 0;
    for (const auto &row : rows) {
      first.push_back(n);
      n += row.size();
    }
    edges.resize(n);
    std::map<std::tuple<int64_t, int64_t, int>, std::vector<size_t>> recvs;
    for (auto [r, row] : llvm::enumerate(rows))
      for (auto [j, text] : llvm::enumerate(row)) {
        size_t node = first[r] + j;
        if (j + 1 < row.size())
          edges[node].push_back(node + 1);
        std::optional<PipelineTransfer> t = parsePipelineTransfer(text);
        if (!t)
          continue;
        int64_t other =
            owner[size_t(t->stage + ((t->direction == 0) == t->send ? 1 : -1))];
        auto key = t->send ? std::tuple(int64_t(r), other, t->direction)
                           : std::tuple(other, int64_t(r), t->direction);
        (t->send ? sends : recvs)[key].push_back(node);
      }
    for (auto &[key, list] : sends) {
      EXPECT_EQ(list.size(), recvs[key].size());
      for (auto [send, recv] : llvm::zip(list, recvs[key])) {
        edges[send].push_back(recv);
        receiveOf[send] = recv;
      }
    }
  }
  bool reaches(size_t from, size_t to) const {
    std::vector<bool> seen(edges.size());
    std::vector<size_t> todo = {from};
    while (!todo.empty()) {
      size_t node = todo.back();
      todo.pop_back();
      if (node == to)
        return true;
      for (size_t next : edges[node])
        if (!seen[next]) {
          seen[next] = true;
          todo.push_back(next);
        }
    }
    return false;
  }
  /// Whether every reuse of `slots` slots on channel `key` at send k may
  /// wait for send k - slots under `rule`.
  bool ringSuffices(const std::tuple<int64_t, int64_t, int> &key, int64_t slots,
                    SendRingRule rule) const {
    const std::vector<size_t> &list = sends.at(key);
    for (size_t k = size_t(slots); k < list.size(); ++k) {
      size_t receive = receiveOf.at(list[k - size_t(slots)]);
      bool ok = rule == SendRingRule::KnownReceived
                    ? reaches(receive, list[k])
                    : !reaches(list[k], receive);
      if (!ok)
        return false;
    }
    return true;
  }
};

TEST(SendRings, AgreeWithASearchOfTheHappensBefore) {
  // Each ring suffices (its waits are for sends known received, or whose
  // receive does not depend on the wait) and one slot fewer would not.
  int64_t tight = 0;
  for (llvm::StringRef name :
       {"GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS",
        "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"})
    for (int64_t pp : {2, 3, 4})
      for (int64_t m : {2 * pp, 4 * pp}) {
        PipelineSchedule s = build(name, 4 * pp, pp, m);
        for (bool eval : {false, true}) {
          PipelineSchedule list = eval ? forwardOnlySchedule(s) : s;
          SendRingRule rule = eval ? SendRingRule::ReceiveIndependent
                                   : SendRingRule::KnownReceived;
          std::vector<std::vector<std::string>> rows = lowerSchedule(list);
          llvm::Expected<std::vector<std::vector<SendRing>>> r =
              sendRings(rows, list, rule);
          ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
          HappensBefore hb(rows, list);
          size_t channels = 0;
          for (auto [rank, rings] : llvm::enumerate(*r))
            for (const SendRing &ring : rings) {
              auto key = std::tuple(int64_t(rank), ring.peer, ring.direction);
              std::string what = name.str() + " pp " + std::to_string(pp) +
                                 " m " + std::to_string(m) +
                                 (eval ? " eval" : "") + " rank " +
                                 std::to_string(rank);
              EXPECT_TRUE(hb.ringSuffices(key, ring.slots, rule)) << what;
              if (ring.slots > 1) {
                EXPECT_FALSE(hb.ringSuffices(key, ring.slots - 1, rule))
                    << what;
                ++tight;
              }
              ++channels;
            }
          EXPECT_EQ(channels, hb.sends.size());
        }
      }
  EXPECT_GT(tight, 100);
}

TEST(SendRings, NamesAListThatCannotRun) {
  PipelineSchedule s = build("1F1B", 2, 2, 1);
  std::vector<std::vector<std::string>> rows = {{"0F0"}, {"1RECV_F0", "1F0"}};
  llvm::Expected<std::vector<std::vector<SendRing>>> r = sendRings(rows, s);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(llvm::toString(r.takeError()),
            "pipeline rank 1 waits forever at '1RECV_F0' (its peer never "
            "sends it)");
}

} // namespace
