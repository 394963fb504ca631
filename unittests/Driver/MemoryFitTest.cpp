//===- MemoryFitTest.cpp - a plan checked against its memory --------------===//

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
} // namespace

// On the host every rank's device and host arenas count, times the ranks
// on it; exactly full fits.
TEST(MemoryFit, HostSharedByItsRanks) {
  EXPECT_EQ(message(checkPlanFits({600, 400}, host(4000, 4))), "");
  std::string over = message(checkPlanFits({600, 401}, host(4000, 4)));
  EXPECT_NE(over.find("its 4 ranks plan 1001 bytes"), std::string::npos)
      << over;
  EXPECT_NE(over.find("4004 bytes"), std::string::npos) << over;
  EXPECT_NE(over.find("it has 4000 bytes"), std::string::npos) << over;
  EXPECT_NE(over.find("--allow-memory-overcommit"), std::string::npos);
  EXPECT_NE(message(checkPlanFits({1001, 0}, host(1000, 1)))
                .find("its rank plans 1001 bytes"),
            std::string::npos);
}

// On a device only one rank's device arena counts: the host arena of CPU
// offload is the host's.
TEST(MemoryFit, DeviceHoldsOneRank) {
  MemoryCapacity h100{80, 1, /*hostMemory=*/false, "h100's device memory"};
  EXPECT_EQ(message(checkPlanFits({80, 1000}, h100)), "");
  std::string over = message(checkPlanFits({81, 0}, h100));
  EXPECT_NE(over.find("does not fit h100's device memory: a rank plans 81 "
                      "bytes"),
            std::string::npos)
      << over;
}

// This machine's memory is known and no more than its physical memory.
TEST(MemoryFit, HostLimitIsReadable) {
  std::optional<int64_t> bytes = hostMemoryLimitBytes();
  ASSERT_TRUE(bytes.has_value());
  EXPECT_GT(*bytes, int64_t(1) << 26);
}
