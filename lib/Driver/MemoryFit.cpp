//===- MemoryFit.cpp - a plan checked against the memory it runs in -------===//

#include "titan/Driver/MemoryFit.h"

#include "titan/Support/Format.h"
#include "titan/Target/TargetBackend.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <unistd.h>

using namespace titan;
using namespace titan::driver;

namespace {
/// The first line of `path` as a byte count, if it holds one ("max", a
/// missing file or another value: none).
std::optional<int64_t> readLimitFile(const char *path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return std::nullopt;
  int64_t bytes;
  if (llvm::StringRef((*buffer)->getBuffer()).trim().getAsInteger(10, bytes) ||
      bytes <= 0)
    return std::nullopt;
  return bytes;
}
} // namespace

std::optional<int64_t> driver::hostMemoryLimitBytes() {
  std::optional<int64_t> limit;
  long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && pageSize > 0)
    limit = int64_t(pages) * int64_t(pageSize);
  // cgroup v2, then v1: v1's "no limit" is a huge number, which the
  // physical memory then bounds.
  for (const char *path : {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"})
    if (std::optional<int64_t> cgroup = readLimitFile(path))
      limit = limit ? std::min(*limit, *cgroup) : *cgroup;
  return limit;
}

llvm::Expected<MemoryCapacity>
driver::memoryCapacity(const target::TargetBackend &target,
                       const cost::Hardware &hw, int64_t worldSize) {
  MemoryCapacity capacity;
  if (target.getFeatures().hostMemory) {
    std::optional<int64_t> host = hostMemoryLimitBytes();
    if (!host)
      return llvm::createStringError(
          "cannot read this machine's memory size to check the plan against "
          "(--allow-memory-overcommit compiles without the check)");
    capacity.bytes = *host;
    capacity.ranksPerHost =
        std::max<int64_t>(1, std::min<int64_t>(worldSize, hw.devicesPerNode));
    capacity.hostMemory = true;
    capacity.source = "this machine's memory";
    return capacity;
  }
  capacity.bytes = int64_t(hw.memoryBytes);
  capacity.source = hw.name + "'s device memory";
  return capacity;
}

llvm::Error driver::checkPlanFits(const PlannedMemory &planned,
                                  const MemoryCapacity &capacity) {
  auto bytes = [](int64_t b) {
    return llvm::formatv("{0} bytes ({1})", b, humanBytes(double(b))).str();
  };
  const char *override =
      "; lower the plan's memory (more data_parallel_shard_degree, "
      "activation_checkpoint.mode, a smaller local_batch_size or seq_len), "
      "or compile with --allow-memory-overcommit to run it anyway";
  if (capacity.hostMemory) {
    int64_t perRank = planned.deviceBytes + planned.hostBytes;
    int64_t total = perRank * capacity.ranksPerHost;
    if (total <= capacity.bytes)
      return llvm::Error::success();
    std::string ranks =
        capacity.ranksPerHost == 1
            ? "its rank plans " + bytes(perRank)
            : llvm::formatv("its {0} ranks plan {1} each, {2} in all",
                            capacity.ranksPerHost, bytes(perRank), bytes(total))
                  .str();
    return llvm::createStringError(llvm::formatv(
        "the memory plan does not fit {0}: {1}, and it has {2}{3}",
        capacity.source, ranks, bytes(capacity.bytes), override));
  }
  if (planned.deviceBytes <= capacity.bytes)
    return llvm::Error::success();
  return llvm::createStringError(llvm::formatv(
      "the memory plan does not fit {0}: a rank plans {1} on its device, "
      "which has {2} (--gpu or --hardware name another device){3}",
      capacity.source, bytes(planned.deviceBytes), bytes(capacity.bytes),
      override));
}

llvm::Error driver::checkJobMemory(const PlannedMemory &planned,
                                   const target::TargetBackend &target,
                                   const HardwareRequest &hardware,
                                   int64_t worldSize) {
  HardwareRequest request = hardware;
  request.target = target.getName().str();
  auto resolved = resolveHardware(request);
  if (!resolved)
    return resolved.takeError();
  llvm::Expected<MemoryCapacity> capacity =
      memoryCapacity(target, resolved->first, worldSize);
  if (!capacity)
    return capacity.takeError();
  return checkPlanFits(planned, *capacity);
}
