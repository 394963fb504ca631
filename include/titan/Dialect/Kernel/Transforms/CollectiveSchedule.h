//===- CollectiveSchedule.h - collectives' placement in a step --*- C++ -*-===//
//
// What kernel-schedule-collectives and --emit=schedule share: a
// collective's communication stream, the bytes it keeps in flight, and the
// printed schedule of a step.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_KERNEL_TRANSFORMS_COLLECTIVESCHEDULE_H
#define TITAN_DIALECT_KERNEL_TRANSFORMS_COLLECTIVESCHEDULE_H

#include "titan/Dialect/Kernel/IR/Kernel.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace titan::kernel {

/// The stream of `start`'s group: 1 + its mesh-axis mask (the `axis_mask`
/// parameter of every collective), so each group of mesh axes has its own
/// stream and compute keeps stream 0; std::nullopt when the params carry no
/// mask.
std::optional<int64_t> collectiveStream(CollectiveStartOp start);

/// The bytes of `start`'s input, output and workspace whose root buffer is
/// a `kernel.alloc` (the memory plan's buffers, whose lives a longer window
/// lengthens; state slots live through the step anyway).
int64_t collectivePlannedBytes(CollectiveStartOp start);

/// --emit=schedule for single programs: every step's ops in order (index,
/// kernel or collective, stream, module path), each collective's start and
/// wait with the compute calls between them (its overlap window), and a
/// summary per step: collectives, how many overlap at least one compute
/// call, and the most planned collective bytes in flight at once.
void printCollectiveSchedule(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace titan::kernel

#endif // TITAN_DIALECT_KERNEL_TRANSFORMS_COLLECTIVESCHEDULE_H
