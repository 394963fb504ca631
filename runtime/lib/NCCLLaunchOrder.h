//===- NCCLLaunchOrder.h - ordering NCCL communicators ----------*- C++ -*-===//
//-*-===//
//
// titan issues each mesh-axis group's collectives on its own communicator
// and stream, so FSDP's gathers overlap TP's reductions. NCCL documents the
// hazard ("Using multiple NCCL communicators concurrently", NCCL user
// guide): before NCCL 2.26 the operations of several communicators on one
// device must be put in one total order by the application, or the ranks
// can deadlock; from 2.26, NCCL_LAUNCH_ORDER_IMPLICIT=1 has NCCL order them
// by their host launch order (with CUDA 12.3+ launch-completion events,
// still letting the kernels run in parallel), provided every rank launches
// in the same order, which titan's single-threaded, compiled step does.
// Under CUDA graph capture the same holds at capture and at launch: titan
// captures each step in program order and replays the graphs in the same
// order on every rank.
//
// Pipeline transfers break that premise: each rank issues its sends and
// receives in its own schedule's order, and NCCL's implicit order would
// chain them across communicators (a receive waiting, on the device, for a
// send issued before it on the same rank, whose peer is in the mirror
// situation: a deadlock once messages exceed NCCL's buffers). Under
// pipeline parallelism titan therefore turns NCCL's order off and
// serializes its group collectives itself, and the transfers, each
// channel its own communicator and FIFO (PeerChannels.h), stay out of any
// order, as PyTorch's point-to-point communicators do.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_NCCLLAUNCHORDER_H
#define TITANRT_LIB_NCCLLAUNCHORDER_H

#include <cstdlib>
#include <string>

namespace titanrt {

enum class NCCLLaunchOrder {
  /// NCCL orders the communicators' launches (NCCL_LAUNCH_ORDER_IMPLICIT).
  Implicit,
  /// titan orders them: each collective's stream waits for the previous
  /// collective when that one ran on another communicator's stream.
  Serialized,
};

struct NCCLLaunchOrderChoice {
  NCCLLaunchOrder order;
  /// What titan sets NCCL_LAUNCH_ORDER_IMPLICIT to before NCCL reads its
  /// environment ("1" or "0"; null: nothing).
  const char *environment;
  /// For the run's log: which order and why.
  std::string why;
};

/// NCCL's version code of 2.26.0 (NCCL_VERSION(2, 26, 0)), the first with
/// NCCL_LAUNCH_ORDER_IMPLICIT.
constexpr int kNCCLImplicitOrderVersion = 22600;

/// The order for the NCCL library of `versionCode` (ncclGetVersion's) with
/// the user's NCCL_LAUNCH_ORDER_IMPLICIT value `env` (null: unset). A value
/// set by the user is kept: "0" turns NCCL's order off, so titan orders.
/// An empty value counts as unset, as NCCL reads it (ncclLoadParam parses
/// only non-empty values).
///
/// Under pipeline parallelism (`pipelined`) NCCL's order is off whatever the
/// user set (a "1" is overridden, which the reason says).
inline NCCLLaunchOrderChoice chooseNCCLLaunchOrder(int versionCode,
                                                   const char *env,
                                                   bool pipelined = false) {
  bool supported = versionCode >= kNCCLImplicitOrderVersion;
  if (pipelined) {
    bool userOn = env && *env && std::strtol(env, nullptr, 10) != 0;
    return {
        NCCLLaunchOrder::Serialized, supported ? "0" : nullptr,
        std::string(userOn ? "NCCL_LAUNCH_ORDER_IMPLICIT=1 overridden: " : "") +
            "pipeline parallelism: titan serializes its communicators "
            "and leaves the pipeline transfers unordered (NCCL's implicit "
            "order would chain them across ranks that issue them in "
            "different orders)"};
  }
  if (env && *env) {
    bool on = std::strtol(env, nullptr, 10) != 0;
    if (on && supported)
      return {NCCLLaunchOrder::Implicit, nullptr,
              "NCCL_LAUNCH_ORDER_IMPLICIT is set"};
    return {NCCLLaunchOrder::Serialized, nullptr,
            on ? "NCCL_LAUNCH_ORDER_IMPLICIT is set, but this NCCL predates "
                 "2.26 and ignores it: titan serializes its communicators"
               : "NCCL_LAUNCH_ORDER_IMPLICIT=0: titan serializes its "
                 "communicators"};
  }
  if (supported)
    return {NCCLLaunchOrder::Implicit, "1",
            "NCCL_LAUNCH_ORDER_IMPLICIT=1 (set by titan)"};
  return {NCCLLaunchOrder::Serialized, nullptr,
          "NCCL before 2.26: titan serializes its communicators"};
}

/// Chooses the order from this process's environment and, where titan
/// sets NCCL_LAUNCH_ORDER_IMPLICIT, sets it (over an empty value, which
/// NCCL would read as its default, 0). Call before any NCCL call reads
/// its environment.
inline NCCLLaunchOrderChoice applyNCCLLaunchOrder(int versionCode,
                                                  bool pipelined = false) {
  NCCLLaunchOrderChoice choice = chooseNCCLLaunchOrder(
      versionCode, std::getenv("NCCL_LAUNCH_ORDER_IMPLICIT"), pipelined);
  if (choice.environment)
    setenv("NCCL_LAUNCH_ORDER_IMPLICIT", choice.environment,
           /*overwrite=*/1);
  return choice;
}

} // namespace titanrt

#endif // TITANRT_LIB_NCCLLAUNCHORDER_H
