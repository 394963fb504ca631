//===- MemoryFit.h - a plan checked against the memory it runs in -*- C++
//-*-===//
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

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace titan {
namespace target {
class TargetBackend;
} // namespace target

namespace driver {

/// What one rank's program plans: its arena in the target's memory
/// (including, under pipeline parallelism, its microbatch frames and send
/// buffers) and its host arena (training.enable_cpu_offload).
struct PlannedMemory {
  int64_t deviceBytes = 0;
  int64_t hostBytes = 0;
};

/// The memory a compiled job may plan for.
struct MemoryCapacity {
  /// Where the target's buffers live in host memory (the CPU target), the
  /// host's memory, which `ranksPerHost` ranks share; else one device's.
  int64_t bytes = 0;
  int64_t ranksPerHost = 1;
  bool hostMemory = false;
  /// What `bytes` is, for messages ("this host's physical memory",
  /// "h100's 80 GiB").
  std::string source;
};

/// This machine's memory: its physical memory, or less where its cgroup
/// (a container, a batch job) limits the processes under it. Null when
/// neither can be read.
std::optional<int64_t> hostMemoryLimitBytes();

/// The capacity a job of `worldSize` ranks on `target` compiles against:
/// on a target in host memory, this machine's (hostMemoryLimitBytes),
/// shared by min(worldSize, hw.devicesPerNode) ranks; on a device target,
/// `hw`'s device memory.
llvm::Expected<MemoryCapacity>
memoryCapacity(const target::TargetBackend &target, const cost::Hardware &hw,
               int64_t worldSize);

/// An error, naming the planned and the available bytes and the override,
/// when `planned` (the largest rank's plan) does not fit `capacity`: on a
/// host, ranksPerHost ranks' device and host arenas; on a device, one
/// rank's device arena.
llvm::Error checkPlanFits(const PlannedMemory &planned,
                          const MemoryCapacity &capacity);

/// checkPlanFits against the capacity of `worldSize` ranks on `target`,
/// with a GPU target's device from `hardware` (--gpu, --hardware; h100
/// when neither is given).
llvm::Error checkJobMemory(const PlannedMemory &planned,
                           const target::TargetBackend &target,
                           const HardwareRequest &hardware, int64_t worldSize);

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_MEMORYFIT_H
