//===- ConfigChecks.h - what titan-compile refuses or warns about -*- C++ -*-//

#ifndef TITAN_TOOLS_TITAN_COMPILE_CONFIGCHECKS_H
#define TITAN_TOOLS_TITAN_COMPILE_CONFIGCHECKS_H

#include "titan/Dialect/Titan/IR/KernelTarget.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

namespace titan {
struct TrainConfig;

/// Settings that would change what a compiled step computes or writes but
/// that titan does not implement yet are errors (one line each, naming the
/// key); settings that only trade memory or tooling are warnings, printed
/// here (unless `warn` is false: a caller that compiles many variants of
/// one config). Nothing is silently ignored.
llvm::Error diagnoseUnsupported(const TrainConfig &config, KernelTarget target,
                                bool warn = true);

/// Whether libtitanrt_cuda exists in this build and has code for `arch`
/// ("sm_90a").
llvm::Error checkCudaTarget(llvm::StringRef arch);

/// --target=cuda: cuBLASLt's FP8 GEMMs need the dimensions they reduce over
/// and the result's columns to be multiples of 16 (16-byte aligned float8
/// rows, as torch._scaled_mm checks). `module` is partitioned (each rank's
/// shapes): every float8 linear's local weight dimensions, and the local
/// token count its weight gradient reduces over (unless that gradient is
/// in high precision: rowwise_with_gw_hp). One error per distinct
/// problem, naming the config keys. The CPU target's emulation takes any
/// shape.
llvm::Error checkCudaFloat8Shapes(mlir::ModuleOp module,
                                  const TrainConfig &config);

} // namespace titan

#endif // TITAN_TOOLS_TITAN_COMPILE_CONFIGCHECKS_H
