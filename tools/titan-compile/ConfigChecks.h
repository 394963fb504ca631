//===- ConfigChecks.h - what titan-compile refuses or warns about -*- C++ -*-//

#ifndef TITAN_TOOLS_TITAN_COMPILE_CONFIGCHECKS_H
#define TITAN_TOOLS_TITAN_COMPILE_CONFIGCHECKS_H

#include "titan/Dialect/Titan/IR/KernelTarget.h"

#include "llvm/Support/Error.h"

namespace titan {
struct TrainConfig;

/// Settings that would change what a compiled step computes or writes but
/// that titan does not implement yet are errors (one line each, naming the
/// key); settings that only trade memory or tooling are warnings, printed
/// here. Nothing is silently ignored.
llvm::Error diagnoseUnsupported(const TrainConfig &config, KernelTarget target);

/// Whether libtitanrt_cuda exists in this build and has code for `arch`
/// ("sm_90a").
llvm::Error checkCudaTarget(llvm::StringRef arch);

} // namespace titan

#endif // TITAN_TOOLS_TITAN_COMPILE_CONFIGCHECKS_H
