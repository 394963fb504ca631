//===- RankShutdown.h - the order a rank tears down in ----------*- C++ -*-===//
//
// A CUDA graph that captured NCCL work holds persistent references on its
// communicators, and NCCL's teardown (ncclCommDestroy, ncclCommAbort)
// waits until they are gone: destroying the communicators while the graph
// execs still exist hangs the rank at exit. So the device's graphs go
// first, then the communicator, then the rest of the device (its library
// handles). A stop signal ends a rank too (stopOnSignals).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_RANKSHUTDOWN_H
#define TITANRT_LIB_RANKSHUTDOWN_H

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>

namespace titanrt {

class Device;

/// Ends a rank's run: `device`'s captured graphs, then the communicator
/// (`shutdownCommunicator`, null for a single-rank run), then the device's
/// remaining handles.
void finishRank(Device &device,
                llvm::function_ref<void()> shutdownCommunicator);

/// SIGTERM and SIGINT (to the rank, or to a launcher that forwards them):
/// the rank says "error: rank <R> stopped by SIGTERM during step <S>; ..."
/// and the signal's default action ends it, so its exit status names the
/// signal and its launcher stops the other ranks. No final checkpoint is
/// written, as in TorchTitan v0.2.0, which installs no handler
/// (torchtitan/train.py: SIGTERM kills the process, and SIGINT's
/// KeyboardInterrupt escapes its `except Exception`, which alone closes the
/// checkpointer); a save cut short stays a step-<N>.tmp that is never
/// loaded. `underLauncher`: one rank of several, whose parent is the
/// launcher.
void stopOnSignals(int64_t rank, bool underLauncher);
/// The step the rank is in, for that message.
void noteStep(int64_t step);

/// This rank knows why the job stops (it failed, or it waits for the rank
/// that names the problem to abort every rank): a stop signal that follows
/// (the launcher stopping every rank) ends it without stopOnSignals' line,
/// which would only add a second, misleading reason.
void noteStopUnderWay();

} // namespace titanrt

#endif // TITANRT_LIB_RANKSHUTDOWN_H
