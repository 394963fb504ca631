//===- MemoryFit.cpp - the memory plan against its memory -----------------===//

#include "titan/Driver/MemoryFit.h"

#include "titan/Driver/PlanAuto.h"
#include "titan/Support/Format.h"
#include "titan/Target/TargetBackend.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <limits>
#include <unistd.h>

using namespace titan;
using namespace titan::driver;

namespace {
constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max();

/// a + b and a * b in bytes, at most kMaxBytes (a sum that large fits
/// nothing, so saturating keeps the verdict).
int64_t addBytes(int64_t a, int64_t b) {
  int64_t sum;
  return llvm::AddOverflow(a, b, sum) ? kMaxBytes : sum;
}
int64_t mulBytes(int64_t a, int64_t b) {
  int64_t product;
  return llvm::MulOverflow(a, b, product) ? kMaxBytes : product;
}

/// The whole of a small file (/proc and /sys files report size 0, which
/// MemoryBuffer::getFile would trust).
std::optional<std::string> readSmallFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFileAsStream(path);
  if (!buffer)
    return std::nullopt;
  return (*buffer)->getBuffer().str();
}

std::string bytesText(int64_t b) {
  return llvm::formatv("{0} bytes ({1})", b, humanBytes(double(b))).str();
}
} // namespace

std::optional<int64_t> driver::parseCgroupMemoryLimit(llvm::StringRef text) {
  int64_t bytes;
  if (text.trim().getAsInteger(10, bytes) || bytes <= 0)
    return std::nullopt; // "max", or not a number
  // cgroup v1 writes "no limit" as the largest page-aligned int64.
  if (bytes >= (int64_t(1) << 62))
    return std::nullopt;
  return bytes;
}

std::vector<std::string>
driver::cgroupMemoryLimitFiles(llvm::StringRef procSelfCgroup) {
  std::vector<std::string> files;
  llvm::SmallVector<llvm::StringRef> lines;
  procSelfCgroup.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    // hierarchy-ID:controllers:path
    auto [id, rest] = line.split(':');
    auto [controllers, path] = rest.split(':');
    std::string root, file;
    if (id == "0" && controllers.empty()) {
      root = "/sys/fs/cgroup";
      file = "memory.max";
    } else if (llvm::is_contained(llvm::split(controllers, ','), "memory")) {
      root = "/sys/fs/cgroup/memory";
      file = "memory.limit_in_bytes";
    } else {
      continue;
    }
    for (llvm::StringRef p = path.rtrim('/');; p = p.rsplit('/').first) {
      files.push_back(root + p.str() + "/" + file);
      if (p.empty())
        break;
    }
  }
  return files;
}

std::optional<int64_t> driver::hostMemoryLimitBytes() {
  std::optional<int64_t> limit;
  long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && pageSize > 0)
    limit = mulBytes(pages, pageSize);
  std::optional<std::string> cgroups = readSmallFile("/proc/self/cgroup");
  for (const std::string &path :
       cgroupMemoryLimitFiles(cgroups ? *cgroups : std::string()))
    if (std::optional<std::string> text = readSmallFile(path))
      if (std::optional<int64_t> cgroup = parseCgroupMemoryLimit(*text))
        limit = limit ? std::min(*limit, *cgroup) : *cgroup;
  return limit;
}

llvm::Expected<MemoryCapacity>
driver::memoryCapacity(const target::TargetBackend &target,
                       const cost::Hardware &hw, const HardwareRequest &request,
                       int64_t worldSize) {
  // A double from a description file: no more than an int64 holds.
  int64_t described = hw.memoryBytes >= double(kMaxBytes)
                          ? kMaxBytes
                          : int64_t(std::max(0.0, hw.memoryBytes));
  MemoryCapacity capacity;
  if (!target.getFeatures().hostMemory) {
    capacity.bytes = std::max<int64_t>(0, described - kGpuReserveBytes);
    capacity.source = llvm::formatv("{0}'s device memory less {1} for the "
                                    "CUDA context and NCCL",
                                    hw.name, humanBytes(kGpuReserveBytes));
    return capacity;
  }
  capacity.hostMemory = true;
  capacity.ranksPerHost =
      std::max<int64_t>(1, std::min<int64_t>(worldSize, hw.devicesPerNode));
  if (request.gpu || !request.file.empty()) {
    capacity.bytes = described;
    capacity.source = "the memory of '" + hw.name + "'";
    return capacity;
  }
  std::optional<int64_t> host = hostMemoryLimitBytes();
  if (!host)
    return llvm::createStringError(
        "cannot read this machine's memory size to check the plan against "
        "(--allow-memory-overcommit compiles without the check)");
  capacity.bytes = *host;
  capacity.source = "this machine's memory";
  return capacity;
}

namespace {
/// The ranks on one host and what they plan in all (see checkPlanFits).
std::pair<int64_t, int64_t> hostDemand(llvm::ArrayRef<PlannedMemory> programs,
                                       int64_t worldSize,
                                       int64_t ranksPerHost) {
  int64_t copies = std::max<int64_t>(1, worldSize / int64_t(programs.size()));
  int64_t all = 0, largest = 0;
  for (const PlannedMemory &p : programs) {
    int64_t perRank = addBytes(p.deviceBytes, p.hostBytes);
    all = addBytes(all, mulBytes(perRank, copies));
    largest = std::max(largest, perRank);
  }
  if (ranksPerHost >= worldSize)
    return {worldSize, all};
  return {ranksPerHost, mulBytes(largest, ranksPerHost)};
}

/// What to change for a plan that does not fit.
const char *remedy(bool hostMemory) {
  return hostMemory
             ? "; lower the plan's memory (activation_checkpoint.mode, a "
               "smaller local_batch_size or seq_len; ranks on one machine "
               "share it, so more of them need more of it), or compile with "
               "--allow-memory-overcommit to run it anyway"
             : "; lower the plan's memory (more data_parallel_shard_degree or "
               "tensor_parallel_degree, activation_checkpoint.mode, a "
               "smaller local_batch_size or seq_len), or compile with "
               "--allow-memory-overcommit to run it anyway";
}
} // namespace

llvm::Error driver::checkPlanFits(llvm::ArrayRef<PlannedMemory> programs,
                                  int64_t worldSize,
                                  const MemoryCapacity &capacity) {
  if (programs.empty())
    return llvm::Error::success();
  if (capacity.hostMemory) {
    auto [ranks, total] =
        hostDemand(programs, worldSize, capacity.ranksPerHost);
    if (total <= capacity.bytes)
      return llvm::Error::success();
    std::string plan = ranks == 1
                           ? "its rank plans " + bytesText(total)
                           : llvm::formatv("its {0} ranks plan {1} in all",
                                           ranks, bytesText(total))
                                 .str();
    return llvm::createStringError(llvm::formatv(
        "the memory plan does not fit {0}: {1}, and it has {2}{3}",
        capacity.source, plan, bytesText(capacity.bytes), remedy(true)));
  }
  int64_t largest = 0;
  for (const PlannedMemory &p : programs)
    largest = std::max(largest, p.deviceBytes);
  if (largest <= capacity.bytes)
    return llvm::Error::success();
  return llvm::createStringError(llvm::formatv(
      "the memory plan does not fit {0}: a rank plans {1} on its device, "
      "which has {2} (--gpu or --hardware name another device){3}",
      capacity.source, bytesText(largest), bytesText(capacity.bytes),
      remedy(false)));
}

llvm::Error driver::checkJobMemory(llvm::ArrayRef<PlannedMemory> programs,
                                   const target::TargetBackend &target,
                                   const HardwareRequest &hardware,
                                   int64_t worldSize) {
  HardwareRequest request = hardware;
  request.target = target.getName().str();
  auto resolved = resolveHardware(request);
  if (!resolved)
    return resolved.takeError();
  llvm::Expected<MemoryCapacity> capacity =
      memoryCapacity(target, resolved->first, request, worldSize);
  if (!capacity)
    return capacity.takeError();
  return checkPlanFits(programs, worldSize, *capacity);
}
