//===- BufferAccess.h - what kernel ops read and write ----------*- C++ -*-===//
//
// The buffer-level facts the kernel-IR fusions move ops by: which buffers
// an op reads and writes (through views), and whether the buffers an op
// takes can be defined earlier in its block.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_KERNEL_TRANSFORMS_BUFFERACCESS_H
#define TITAN_DIALECT_KERNEL_TRANSFORMS_BUFFERACCESS_H

#include "titan/Dialect/Kernel/IR/Kernel.h"

namespace titan::kernel {

/// The buffers `op` reads and writes, as the buffers they view (a wait
/// reads and writes its collective's buffers, in use until then); false
/// when its effects are unknown.
bool collectAccess(mlir::Operation *op,
                   llvm::SmallVectorImpl<mlir::Value> &reads,
                   llvm::SmallVectorImpl<mlir::Value> &writes);

/// Whether `v` is available before `at` (in its block), or can be by
/// moving the kernel.alloc and kernel.view ops defining it there.
bool canDefineBefore(mlir::Value v, mlir::Operation *at);

/// Moves the kernel.alloc and kernel.view ops defining `v` before `at`
/// where they come after it (canDefineBefore holds).
void defineBefore(mlir::Value v, mlir::Operation *at);

/// Whether `buffer` holds one element (a scale, an amax).
bool isOneElement(mlir::Value buffer);

/// Whether `buffer` is the step's state (a block argument, through views)
/// or one element: what a parameter shard's cast reads, which holds its
/// value from the step's start.
bool isStateOrOneElement(mlir::Value buffer);

} // namespace titan::kernel

#endif // TITAN_DIALECT_KERNEL_TRANSFORMS_BUFFERACCESS_H
