//===- MemoryFitTest.cpp - the memory plan against its memory -------------===//

#include "titan/Driver/MemoryFit.h"

#include "gtest/gtest.h"

using namespace titan::driver;

namespace {
std::string message(llvm::Error e) {
  return e ? llvm::toString(std::move(e)) : std::string();
}

MemoryCapacity host(int64_t bytes, int64_t ranks) {
  return {bytes, ranks, /*hostMemory=*/true, "this machine's memory"};
}

bool contains(const std::string &text, const char *part) {
  return text.find(part) != std::string::npos;
}
} // namespace

// On the host every rank's device and host arenas count, times the ranks
// on it; exactly full fits.
TEST(MemoryFit, HostSharedByItsRanks) {
  EXPECT_EQ(message(checkPlanFits({{600, 400}}, 4, host(4000, 4))), "");
  std::string over = message(checkPlanFits({{600, 401}}, 4, host(4000, 4)));
  EXPECT_TRUE(contains(over, "its 4 ranks plan 4004 bytes")) << over;
  EXPECT_TRUE(contains(over, "it has 4000 bytes")) << over;
  EXPECT_TRUE(contains(over, "--allow-memory-overcommit")) << over;
  EXPECT_TRUE(contains(message(checkPlanFits({{1001, 0}}, 1, host(1000, 1))),
                       "its rank plans 1001 bytes"));
}

// Pipeline ranks' programs differ: on one machine each runs on world/pp
// ranks; where only some ranks share a machine, the largest program
// bounds them.
TEST(MemoryFit, PipelineProgramsShareTheHost) {
  // PP 2 x DP 2: 2 ranks of 10 and 2 of 4 = 28.
  EXPECT_EQ(message(checkPlanFits({{10, 0}, {4, 0}}, 4, host(28, 4))), "");
  EXPECT_TRUE(
      contains(message(checkPlanFits({{10, 0}, {4, 0}}, 4, host(27, 4))),
               "its 4 ranks plan 28 bytes"));
  // 2 of the 4 ranks on this machine: at most 2 x 10.
  EXPECT_EQ(message(checkPlanFits({{10, 0}, {4, 0}}, 4, host(20, 2))), "");
}

// Sizes that overflow int64 saturate and never fit.
TEST(MemoryFit, OverflowDoesNotFit) {
  int64_t huge = int64_t(1) << 62;
  EXPECT_TRUE(contains(
      message(checkPlanFits({{huge, huge}}, 8, host(int64_t(1) << 40, 8))),
      "does not fit"));
}

// On a device only the largest device arena counts: the host arena of
// CPU offload is the host's.
TEST(MemoryFit, DeviceHoldsOneRank) {
  MemoryCapacity h100{80, 1, /*hostMemory=*/false, "h100's device memory"};
  EXPECT_EQ(message(checkPlanFits({{80, 1000}, {20, 0}}, 2, h100)), "");
  std::string over = message(checkPlanFits({{20, 0}, {81, 0}}, 2, h100));
  EXPECT_TRUE(contains(over, "does not fit h100's device memory: a rank plans "
                             "81 bytes"))
      << over;
}

TEST(MemoryFit, CgroupLimits) {
  EXPECT_EQ(parseCgroupMemoryLimit("max\n"), std::nullopt);
  EXPECT_EQ(parseCgroupMemoryLimit("25769803776\n"), int64_t(25769803776));
  // cgroup v1's "no limit".
  EXPECT_EQ(parseCgroupMemoryLimit("9223372036854771712\n"), std::nullopt);
  EXPECT_EQ(parseCgroupMemoryLimit(""), std::nullopt);
  std::vector<std::string> v2 = cgroupMemoryLimitFiles("0::/job/step\n");
  EXPECT_EQ(v2, (std::vector<std::string>{"/sys/fs/cgroup/job/step/memory.max",
                                          "/sys/fs/cgroup/job/memory.max",
                                          "/sys/fs/cgroup/memory.max"}));
  std::vector<std::string> v1 =
      cgroupMemoryLimitFiles("12:cpu,cpuacct:/a\n4:memory:/b\n");
  EXPECT_EQ(v1, (std::vector<std::string>{
                    "/sys/fs/cgroup/memory/b/memory.limit_in_bytes",
                    "/sys/fs/cgroup/memory/memory.limit_in_bytes"}));
  EXPECT_EQ(cgroupMemoryLimitFiles("0::/\n"),
            (std::vector<std::string>{"/sys/fs/cgroup/memory.max"}));
}

// This machine's memory is known and no more than its physical memory.
TEST(MemoryFit, HostLimitIsReadable) {
  std::optional<int64_t> bytes = hostMemoryLimitBytes();
  ASSERT_TRUE(bytes.has_value());
  EXPECT_GT(*bytes, int64_t(1) << 26);
}
