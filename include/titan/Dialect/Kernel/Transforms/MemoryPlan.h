//===- MemoryPlan.h - one static arena per rank -----------------*- C++ -*-===//
//
// Every buffer of a rank gets an offset in one arena: the state slots
// (parameters, gradients, optimizer state, the step's inputs and outputs)
// for the whole run, then each step's buffers, which reuse one region
// because the steps run one after the other.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_KERNEL_TRANSFORMS_MEMORYPLAN_H
#define TITAN_DIALECT_KERNEL_TRANSFORMS_MEMORYPLAN_H

#include "titan/Dialect/Kernel/IR/Kernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"
#include <optional>

namespace titan::kernel {

/// Rounds `bytes` up to the arena alignment.
int64_t alignToArena(int64_t bytes);

/// One kernel.alloc of a step and the ops it is alive for (indices into the
/// step's body): from its first use to its last, through views; the
/// operands of a collective until its kernel.wait.
struct BufferInterval {
  AllocOp alloc;
  unsigned first, last;
  int64_t bytes; ///< aligned
};

/// The allocations of `step` in program order, with their intervals.
llvm::SmallVector<BufferInterval>
computeBufferIntervals(mlir::func::FuncOp step);

/// The pipeline stage whose microbatch frame holds `slot` (a
/// manifest::FrameSlot), or std::nullopt for an arena slot.
std::optional<int64_t> getFrameStage(llvm::StringRef slot);

/// The memory category of a state slot ("param:x" -> "parameters", ...).
llvm::StringRef getSlotCategory(llvm::StringRef slot);

/// Plans `module`: sets every kernel.alloc's offset and the module's
/// kernel.arena_bytes and kernel.slots. Slots are laid out in order of first
/// appearance over the steps; each step's buffers go first-fit by
/// decreasing size (ties by program order) above them. Buffers in host
/// memory (kernel-offload-state) get a host arena of their own, planned
/// alike (kernel.host_arena_bytes, kernel.host_slots). Deterministic.
mlir::LogicalResult planMemory(mlir::ModuleOp module);

/// The arena planMemory recorded on `module` (kernel.arena_bytes), 0 before
/// planning.
int64_t getArenaBytes(mlir::ModuleOp module);

/// The host arena planMemory recorded (kernel.host_arena_bytes), 0 when
/// nothing lives in host memory.
int64_t getHostArenaBytes(mlir::ModuleOp module);

/// The planned peak of a rank with its breakdown by category (at the op
/// where the step's live buffers peak), per step, ending with
/// `peak: N bytes`. `module` must be planned.
void printMemoryReport(mlir::ModuleOp module, int64_t worldSize,
                       llvm::raw_ostream &os);

/// The planned memory over time (every op of every step) as a stacked-area
/// SVG chart.
void writeMemoryTimelineSVG(mlir::ModuleOp module, llvm::StringRef title,
                            llvm::raw_ostream &os);

} // namespace titan::kernel

#endif // TITAN_DIALECT_KERNEL_TRANSFORMS_MEMORYPLAN_H
