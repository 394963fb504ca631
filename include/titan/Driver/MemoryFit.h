//===- MemoryFit.h - the memory plan against its memory ---------*- C++ -*-===//
//
// A compiled executable's memory is planned (kernel-plan-memory), so a job
// that cannot fit is known before it runs: titan-compile refuses it with
// the planned and the available numbers, instead of an out-of-memory kill
// at the first step. --allow-memory-overcommit compiles it anyway.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_MEMORYFIT_H
#define TITAN_DRIVER_MEMORYFIT_H

#include "titan/Cost/Hardware.h"
#include "titan/Driver/Predict.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace titan {
namespace target {
class TargetBackend;
} // namespace target

namespace driver {

/// What one program plans per rank: its arena in the target's memory
/// (including, under pipeline parallelism, its microbatch frames and send
/// buffers) and its host arena (training.enable_cpu_offload).
struct PlannedMemory {
  int64_t deviceBytes = 0;
  int64_t hostBytes = 0;
};

/// The memory a compiled job may plan for.
struct MemoryCapacity {
  /// Where the target's buffers live in host memory (the CPU target), the
  /// host's memory, which `ranksPerHost` ranks share; else one device's,
  /// less what no plan holds (kGpuReserveBytes).
  int64_t bytes = 0;
  int64_t ranksPerHost = 1;
  bool hostMemory = false;
  /// What `bytes` is, for messages.
  std::string source;
};

/// The limit a cgroup's memory file gives ("max" or a huge cgroup v1 value:
/// none).
std::optional<int64_t> parseCgroupMemoryLimit(llvm::StringRef text);

/// The memory limit files of this process's cgroups, from the text of
/// /proc/self/cgroup: for cgroup v2 and v1's memory controller, its own
/// cgroup's and each parent's up to the root (a limit anywhere above
/// applies too).
std::vector<std::string> cgroupMemoryLimitFiles(llvm::StringRef procSelfCgroup);

/// This machine's memory: its physical memory, or less where a cgroup of
/// this process (a container, a batch job) limits it. Null when neither can
/// be read.
std::optional<int64_t> hostMemoryLimitBytes();

/// The capacity a job of `worldSize` ranks on `target` compiles against,
/// with `hw` the description `request` named: on a target in host memory,
/// the description's memory when one was named (--gpu cpu, --hardware),
/// else this machine's (hostMemoryLimitBytes), shared by
/// min(worldSize, hw.devicesPerNode) ranks; on a device target, one of
/// `hw`'s devices less kGpuReserveBytes.
llvm::Expected<MemoryCapacity>
memoryCapacity(const target::TargetBackend &target, const cost::Hardware &hw,
               const HardwareRequest &request, int64_t worldSize);

/// An error, naming the planned and the available bytes and the override,
/// when the job's programs (one for an SPMD job, one per pipeline rank,
/// each run by worldSize / programs.size() ranks) cannot fit `capacity`:
/// on a host, the ranks on it with their device and host arenas (every
/// program's copies when all ranks share it, else the largest program's
/// times the ranks on it); on a device, the largest device arena.
llvm::Error checkPlanFits(llvm::ArrayRef<PlannedMemory> programs,
                          int64_t worldSize, const MemoryCapacity &capacity);

/// checkPlanFits against the capacity of `worldSize` ranks on `target`,
/// with a GPU target's device from `hardware` (--gpu, --hardware; h100
/// when neither is given).
llvm::Error checkJobMemory(llvm::ArrayRef<PlannedMemory> programs,
                           const target::TargetBackend &target,
                           const HardwareRequest &hardware, int64_t worldSize);

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_MEMORYFIT_H
