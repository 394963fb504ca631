//===- ConfigChecks.h - the checks a config passes first --------*- C++ -*-===//
//
// The checks a training config passes before titan compiles it: settings
// titan does not implement are errors that name their keys, settings it
// meets in its own way are warnings (both as the target's features say),
// and the CUDA target's own limits (the architectures this build has code
// for, cuBLASLt's FP8 shapes).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_CONFIGCHECKS_H
#define TITAN_DRIVER_CONFIGCHECKS_H

#include "titan/Model/MeshDegrees.h"
#include "titan/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace titan {
struct LlamaArgs;
struct TrainConfig;

namespace driver {

/// Receives a compilation's warnings, one message each (no prefix, no
/// newline); the caller decides where they go.
using WarningHandler = std::function<void(llvm::StringRef)>;

/// Settings that would change what a compiled step computes or writes but
/// that titan does not implement yet: one error line each, naming the key.
/// With configWarnings, nothing is silently ignored.
llvm::Error diagnoseUnsupported(const TrainConfig &config,
                                const target::TargetBackend &target);

/// Settings that only trade memory or tooling, or that titan meets in its
/// own way: one message each, for the caller to print.
std::vector<std::string> configWarnings(const TrainConfig &config,
                                        const target::TargetBackend &target);

/// What the model needs of the target's kernels: TorchTitan's block-causal
/// mask needs attention kernels that take document starts (context-parallel
/// ones when `contextParallelDegree` > 1).
llvm::Error checkModelOnTarget(const LlamaArgs &model,
                               const target::TargetBackend &target,
                               int64_t contextParallelDegree = 1);

/// Settings that the parallel degrees rule out (the mesh resolved, after
/// diagnoseUnsupported): one error line each, naming the keys.
llvm::Error checkMeshSettings(const TrainConfig &config,
                              const MeshDegrees &mesh);

/// Passes each of configWarnings to `warn` (when set), then returns
/// diagnoseUnsupported's errors: the order titan-compile prints them in.
llvm::Error checkConfig(const TrainConfig &config,
                        const target::TargetBackend &target,
                        const WarningHandler &warn);

/// Whether libtitanrt_cuda exists in this build and has code for `arch`
/// ("sm_90a"): for a target with TargetFeatures::deviceArch.
llvm::Error checkCudaTarget(llvm::StringRef arch);

/// A target with TargetFeatures::float8Gemms (--target=cuda): cuBLASLt's
/// FP8 GEMMs need the dimensions they reduce over
/// and the result's columns to be multiples of 16 (16-byte aligned float8
/// rows, as torch._scaled_mm checks). `module` is partitioned (each rank's
/// shapes): every float8 linear's local weight dimensions, and the local
/// token count its weight gradient reduces over (unless that gradient is
/// in high precision: rowwise_with_gw_hp). One error per distinct
/// problem, naming the config keys. The CPU target's emulation takes any
/// shape.
llvm::Error checkCudaFloat8Shapes(mlir::ModuleOp module,
                                  const TrainConfig &config);

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_CONFIGCHECKS_H
