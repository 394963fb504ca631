//===- RankTeardownTest.cpp - how a rank stops, on fakes ------------------===//
//
// The CUDA target's teardown rules, checked without a GPU:
//  - finishRank destroys the device's captured graphs before the
//    communicator (a graph that captured NCCL work keeps its communicators
//    referenced, and ncclCommDestroy waits for that: issue 34, item 1);
//  - CapturedGraphs destroys each exec once, whichever of the arena's
//    release, the shutdown and the device's release comes first (item 7);
//  - runWithin and fatalWithin bound calls that may never return (the
//    watchdog's ncclCommAbort, the job's abort);
//  - CaptureJoins names the collectives a capture left unjoined (item 6);
//  - the NCCL launch order for each NCCL version and user setting (item 6).
//
//===----------------------------------------------------------------------===//

#include "CaptureJoins.h"
#include "CapturedGraphs.h"
#include "Deadline.h"
#include "Error.h"
#include "NCCLLaunchOrder.h"
#include "RankShutdown.h"

#include "titanrt/Device.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace titanrt;
using namespace std::chrono_literals;

namespace {

/// A device that records what the teardown calls on it.
class RecordingDevice final : public Device {
public:
  explicit RecordingDevice(std::vector<std::string> &log) : log(log) {}
  std::string target() const override { return "fake"; }
  std::string describe() const override { return "fake"; }
  Backend communicatorBackend() const override { return Backend(); }
  char *allocateArena(int64_t, uint64_t) override { return nullptr; }
  void freeArena(char *) override { log.push_back("freeArena"); }
  char *allocateHostArena(int64_t) override { return nullptr; }
  void freeHostArena(char *) override { log.push_back("freeHostArena"); }
  bool hostAccessible() const override { return true; }
  void copyToHost(void *, const char *, size_t) override {}
  void copyToDevice(char *, const void *, size_t) override {}
  void zero(char *, size_t) override {}
  void run(Step, void (*)(char *), char *) override {}
  void runPhase(const std::string &, void (*)(char *, char *), char *,
                char *) override {}
  void copyWithin(char *, const char *, size_t) override {}
  void copyToDeviceInOrder(char *, const void *, size_t) override {}
  void releaseGraphs() override { log.push_back("releaseGraphs"); }
  void release() override { log.push_back("release"); }

private:
  std::vector<std::string> &log;
};

TEST(RankShutdown, GraphsGoBeforeTheCommunicator) {
  std::vector<std::string> log;
  RecordingDevice device(log);
  finishRank(device, [&] { log.push_back("communicator"); });
  EXPECT_EQ(log, (std::vector<std::string>{"releaseGraphs", "communicator",
                                           "release"}));
}

TEST(RankShutdown, SingleRankHasNoCommunicator) {
  std::vector<std::string> log;
  RecordingDevice device(log);
  finishRank(device, nullptr);
  EXPECT_EQ(log, (std::vector<std::string>{"releaseGraphs", "release"}));
}

TEST(CapturedGraphs, EachExecIsDestroyedOnce) {
  // Execs are ints here; 0 is "none", as a null cudaGraphExec_t.
  cuda::CapturedGraphs<int, size_t> graphs;
  graphs[0].exec = 11;
  graphs[0].runs = 5;
  graphs[2].exec = 13;
  graphs[2].runs = 2;
  std::vector<int> destroyed;
  auto destroy = [&](int exec) { destroyed.push_back(exec); };
  // The arena's release, then the shutdown's, then the device's.
  graphs.destroyAll(destroy);
  graphs.destroyAll(destroy);
  graphs.destroyAll(destroy);
  EXPECT_EQ(destroyed, (std::vector<int>{11, 13}));
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(graphs[s].exec, 0);
    // Counted as never run: the next run is eager, then captured anew.
    EXPECT_EQ(graphs[s].runs, 0);
  }
}

TEST(CapturedGraphs, PhasesOnFramesAreKeyedApart) {
  // A pipeline phase is captured once per frame it runs on: the frame's
  // address is baked into the graph.
  using Key = std::pair<int, char *>;
  cuda::CapturedGraphs<int, Key> graphs;
  char frames[2];
  graphs[{1, &frames[0]}].exec = 21;
  graphs[{1, &frames[1]}].runs = 1;
  EXPECT_EQ((graphs[{1, &frames[0]}].exec), 21);
  EXPECT_EQ((graphs[{1, &frames[1]}].exec), 0);
  std::vector<int> destroyed;
  graphs.destroyAll([&](int exec) { destroyed.push_back(exec); });
  EXPECT_EQ(destroyed, (std::vector<int>{21}));
  EXPECT_EQ((graphs[{1, &frames[1]}].runs), 0);
}

TEST(Deadline, FinishedWorkReturnsTrue) {
  std::atomic<bool> ran{false};
  EXPECT_TRUE(runWithin(10s, [&] { ran = true; }));
  EXPECT_TRUE(ran);
}

TEST(Deadline, BlockedWorkIsLeftBehind) {
  // A fake ncclCommAbort that never returns (until the test lets it go).
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(runWithin(200ms, [released] { released.wait(); }));
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s);
  release->set_value(); // the detached helper ends
}

TEST(DeadlineDeathTest, StoppingTheJobIsBounded) {
  // The job's abort (MPI_Abort through the hook) hangs: the rank still
  // ends, with status 1, saying why.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setAbortHook([](const std::string &) {
          for (;;)
            std::this_thread::sleep_for(1s);
        });
        fatalWithin(300ms, "a collective timed out");
      },
      testing::ExitedWithCode(1),
      "error: a collective timed out(.|\n)*did not finish within 0 s");
}

// The watchdog's order: the communicators' abort, then the job's stop.
std::atomic<bool> abortReturned{false};

TEST(DeadlineDeathTest, WatchdogAbortsBeforeStoppingTheJob) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setAbortHook([](const std::string &) {
          std::fprintf(stderr, "job stopped after the abort: %d\n",
                       int(abortReturned.load()));
          std::_Exit(3);
        });
        abortThenStop(
            10s, [] { abortReturned = true; }, "ncclCommAbort",
            "all_reduce over [tp] timed out");
      },
      testing::ExitedWithCode(3),
      "error: all_reduce over \\[tp\\] timed out\n"
      "job stopped after the abort: 1");
}

TEST(DeadlineDeathTest, AHungAbortCannotHangTheRank) {
  // ncclCommAbort blocked (a graph still references the communicator) and
  // the job's stop blocked too: the rank still ends, saying both.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setAbortHook([](const std::string &) {
          for (;;)
            std::this_thread::sleep_for(1s);
        });
        abortThenStop(
            300ms,
            [] {
              for (;;)
                std::this_thread::sleep_for(1s);
            },
            "ncclCommAbort", "all_reduce over [tp] timed out");
      },
      testing::ExitedWithCode(1),
      "ncclCommAbort did not return within 0 s; stopping the job without "
      "it(.|\n)*error: all_reduce over \\[tp\\] timed out(.|\n)*"
      "did not finish within 0 s");
}

TEST(CaptureJoins, JoinedCollectivesLeaveNoError) {
  CaptureJoins joins;
  int64_t a = joins.issued("all_gather over [dp_shard] at step 2");
  int64_t b = joins.issued("reduce_scatter over [dp_shard] at step 2");
  joins.joined(b);
  joins.joined(a);
  EXPECT_EQ(joins.takeUnjoinedError("the CUDA graph of forward_backward"), "");
}

TEST(CaptureJoins, UnjoinedCollectivesAreNamed) {
  CaptureJoins joins;
  joins.issued("all_gather over [dp_shard] at step 2");
  int64_t joined = joins.issued("all_reduce over [tp] at step 2");
  joins.issued("send_recv over [tp] at step 2");
  joins.joined(joined);
  std::string error =
      joins.takeUnjoinedError("the CUDA graph of forward_backward");
  EXPECT_NE(error.find("2 collective(s) issued while capturing the CUDA "
                       "graph of forward_backward were never waited for "
                       "(all_gather over [dp_shard] at step 2, send_recv "
                       "over [tp] at step 2)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("cudaErrorStreamCaptureUnjoined"), std::string::npos);
  // Forgotten: the next capture starts clean.
  EXPECT_EQ(joins.takeUnjoinedError("g"), "");
}

TEST(NCCLLaunchOrder, FollowsTheVersionAndTheUser) {
  // NCCL_VERSION(2, 26, 0) = 22600 introduced NCCL_LAUNCH_ORDER_IMPLICIT
  // (NCCL user guide, "Using multiple NCCL communicators concurrently").
  auto order = [](int version, const char *env) {
    return chooseNCCLLaunchOrder(version, env);
  };
  NCCLLaunchOrderChoice c = order(22809, nullptr); // 2.28.9, unset
  EXPECT_EQ(c.order, NCCLLaunchOrder::Implicit);
  EXPECT_STREQ(c.environment, "1");
  c = order(22600, "");
  EXPECT_EQ(c.order, NCCLLaunchOrder::Implicit);
  EXPECT_STREQ(c.environment, "1");
  c = order(22503, nullptr); // 2.25.3: titan orders them itself
  EXPECT_EQ(c.order, NCCLLaunchOrder::Serialized);
  EXPECT_EQ(c.environment, nullptr);
  c = order(22809, "0"); // the user turned NCCL's order off
  EXPECT_EQ(c.order, NCCLLaunchOrder::Serialized);
  EXPECT_EQ(c.environment, nullptr);
  c = order(22809, "1");
  EXPECT_EQ(c.order, NCCLLaunchOrder::Implicit);
  EXPECT_EQ(c.environment, nullptr);
  c = order(22400, "1"); // set, but this NCCL ignores it
  EXPECT_EQ(c.order, NCCLLaunchOrder::Serialized);
  EXPECT_NE(c.why.find("predates 2.26"), std::string::npos);
}

TEST(NCCLLaunchOrder, PipelinesTurnNCCLsOrderOff) {
  // Pipeline ranks issue their transfers in their own orders: NCCL's
  // implicit order would chain them across ranks, so it is off (even
  // where the user set it) and titan serializes its group collectives.
  for (const char *env : {static_cast<const char *>(nullptr), "", "1", "0"}) {
    NCCLLaunchOrderChoice c = chooseNCCLLaunchOrder(22809, env, true);
    EXPECT_EQ(c.order, NCCLLaunchOrder::Serialized);
    EXPECT_STREQ(c.environment, "0");
    EXPECT_EQ(c.why.find("overridden") != std::string::npos,
              env && std::string(env) == "1");
  }
  // An NCCL without the variable needs nothing set.
  EXPECT_EQ(chooseNCCLLaunchOrder(22503, nullptr, true).environment, nullptr);
}

TEST(NCCLLaunchOrder, SetsWhatNCCLWillRead) {
  // NCCL parses only a non-empty value (src/misc/param.cc): an empty one is
  // its default, 0, so titan must overwrite it.
  for (const char *before : {"", static_cast<const char *>(nullptr)}) {
    if (before)
      setenv("NCCL_LAUNCH_ORDER_IMPLICIT", before, 1);
    else
      unsetenv("NCCL_LAUNCH_ORDER_IMPLICIT");
    EXPECT_EQ(applyNCCLLaunchOrder(22809).order, NCCLLaunchOrder::Implicit);
    EXPECT_STREQ(std::getenv("NCCL_LAUNCH_ORDER_IMPLICIT"), "1");
  }
  setenv("NCCL_LAUNCH_ORDER_IMPLICIT", "0", 1); // the user's is kept
  EXPECT_EQ(applyNCCLLaunchOrder(22809).order, NCCLLaunchOrder::Serialized);
  EXPECT_STREQ(std::getenv("NCCL_LAUNCH_ORDER_IMPLICIT"), "0");
  unsetenv("NCCL_LAUNCH_ORDER_IMPLICIT");
}

} // namespace
