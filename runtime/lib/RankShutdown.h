//===- RankShutdown.h - the order a rank tears down in ----------*- C++ -*-===//
//
// A CUDA graph that captured NCCL work holds persistent references on its
// communicators, and NCCL's teardown (ncclCommDestroy, ncclCommAbort)
// waits until they are gone: destroying the communicators while the graph
// execs still exist hangs the rank at exit. So the device's graphs go
// first, then the communicator, then the rest of the device (its library
// handles).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_RANKSHUTDOWN_H
#define TITANRT_LIB_RANKSHUTDOWN_H

#include "llvm/ADT/STLFunctionalExtras.h"

namespace titanrt {

class Device;

/// Ends a rank's run: `device`'s captured graphs, then the communicator
/// (`shutdownCommunicator`, null for a single-rank run), then the device's
/// remaining handles.
void finishRank(Device &device,
                llvm::function_ref<void()> shutdownCommunicator);

} // namespace titanrt

#endif // TITANRT_LIB_RANKSHUTDOWN_H
