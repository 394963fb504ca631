//===- CPUBackend.h - the CPU target ----------------------------*- C++ -*-===//
//
// Training on the host's cores: libtitanrt_cpu's kernels (oneDNN GEMMs,
// OpenMP threads), MPI between ranks.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TARGET_CPU_CPUBACKEND_H
#define TITAN_TARGET_CPU_CPUBACKEND_H

#include "titan/Target/TargetBackend.h"

namespace titan::target {

/// The CPU target's backend, named "cpu".
std::unique_ptr<TargetBackend> createCPUTargetBackend();

} // namespace titan::target

#endif // TITAN_TARGET_CPU_CPUBACKEND_H
