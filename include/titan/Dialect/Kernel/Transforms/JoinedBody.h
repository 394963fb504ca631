//===- JoinedBody.h - one generated kernel's body from several --*- C++ -*-===//
//
// Horizontal and sibling fusion both build one kernel.generic that runs the
// bodies of several: each part's scalar code cloned in order, its
// arguments bound to the joined kernel's, and the yields gathered as the
// op wants them (every part's outputs, then every part's reductions).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_KERNEL_TRANSFORMS_JOINEDBODY_H
#define TITAN_DIALECT_KERNEL_TRANSFORMS_JOINEDBODY_H

#include "titan/Dialect/Kernel/IR/Kernel.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace titan::kernel {

/// Builds `joined`'s body (one argument per input) from `parts`' bodies in
/// order: argument `index` of part `part` is the joined kernel's argument
/// `inputOf(part, index)`; it yields the parts' outputs in order, then
/// their reductions in order (the order `joined`'s operands must have).
void buildJoinedBody(
    mlir::OpBuilder &b, GenericOp joined, llvm::ArrayRef<GenericOp> parts,
    llvm::function_ref<unsigned(unsigned part, unsigned index)> inputOf);

/// The joined kernel's `transposed_outputs`: each part's, shifted past the
/// outputs of the parts before it (the joined kernel's outputs are the
/// parts' in order).
llvm::SmallVector<int64_t>
joinedTransposedOutputs(llvm::ArrayRef<GenericOp> parts);

} // namespace titan::kernel

#endif // TITAN_DIALECT_KERNEL_TRANSFORMS_JOINEDBODY_H
