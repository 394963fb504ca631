//===- Deadline.h - bounded waits on calls that may hang --------*- C++ -*-===//
//-*-===//
//
// Some teardown calls can block forever when a peer is gone: ncclCommAbort
// waits for the persistent references CUDA graphs hold, MPI_Abort may wait
// for a launcher that is itself stuck. A rank that is stopping must still
// end, so that its launcher stops the other ranks: these run such a call
// with a deadline and end the process when it passes.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_DEADLINE_H
#define TITANRT_LIB_DEADLINE_H

#include <chrono>
#include <functional>
#include <string>

namespace titanrt {

/// Runs `work` on a helper thread and waits at most `limit` for it. Returns
/// whether it finished; a helper still running is left detached (it owns
/// what it uses), for the caller to end the process under it.
bool runWithin(std::chrono::duration<double> limit, std::function<void()> work);

/// fatal(message), but the process ends within `limit` even if stopping
/// the job hangs (the abort hook blocked in MPI_Abort, say): a detached
/// timer then prints why and exits with status 1, and the launcher stops
/// the other ranks.
[[noreturn]] void fatalWithin(std::chrono::duration<double> limit,
                              const std::string &message);

/// How a watchdog stops the job on `failure`: `abort` (a communicator's
/// abort, which stops its kernels so no host thread stays blocked on
/// them) under `limit`, saying so when `what` did not return in time,
/// then fatalWithin(limit, failure), which stops every rank.
[[noreturn]] void abortThenStop(std::chrono::duration<double> limit,
                                std::function<void()> abort,
                                const std::string &what,
                                const std::string &failure);

} // namespace titanrt

#endif // TITANRT_LIB_DEADLINE_H
