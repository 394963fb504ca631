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
  /// Whether titan sets NCCL_LAUNCH_ORDER_IMPLICIT=1 before NCCL reads its
  /// environment.
  bool setEnvironment;
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
inline NCCLLaunchOrderChoice chooseNCCLLaunchOrder(int versionCode,
                                                   const char *env) {
  bool supported = versionCode >= kNCCLImplicitOrderVersion;
  if (env && *env) {
    bool on = std::strtol(env, nullptr, 10) != 0;
    if (on && supported)
      return {NCCLLaunchOrder::Implicit, false,
              "NCCL_LAUNCH_ORDER_IMPLICIT is set"};
    return {NCCLLaunchOrder::Serialized, false,
            on ? "NCCL_LAUNCH_ORDER_IMPLICIT is set, but this NCCL predates "
                 "2.26 and ignores it: titan serializes its communicators"
               : "NCCL_LAUNCH_ORDER_IMPLICIT=0: titan serializes its "
                 "communicators"};
  }
  if (supported)
    return {NCCLLaunchOrder::Implicit, true,
            "NCCL_LAUNCH_ORDER_IMPLICIT=1 (set by titan)"};
  return {NCCLLaunchOrder::Serialized, false,
          "NCCL before 2.26: titan serializes its communicators"};
}

/// Chooses the order from this process's environment and, where titan
/// sets NCCL_LAUNCH_ORDER_IMPLICIT, sets it (over an empty value, which
/// NCCL would read as its default, 0). Call before any NCCL call reads
/// its environment.
inline NCCLLaunchOrderChoice applyNCCLLaunchOrder(int versionCode) {
  NCCLLaunchOrderChoice choice = chooseNCCLLaunchOrder(
      versionCode, std::getenv("NCCL_LAUNCH_ORDER_IMPLICIT"));
  if (choice.setEnvironment)
    setenv("NCCL_LAUNCH_ORDER_IMPLICIT", "1", /*overwrite=*/1);
  return choice;
}

} // namespace titanrt

#endif // TITANRT_LIB_NCCLLAUNCHORDER_H
