//===- KernelTarget.h - targets of a kernel contract ------------*- C++ -*-===//
//
// A kernel's workspace depends on how the target implements it (the CPU
// target materializes one head's scores; cuDNN's flash attention needs
// none of that but has its own scratch), so each target attaches its own
// workspace rules (CPUWorkspaceOpInterface, CUDAWorkspaceOpInterface) and
// titan-bufferize asks the one it compiles for.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_KERNELTARGET_H
#define TITAN_DIALECT_TITAN_IR_KERNELTARGET_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace titan {

enum class KernelTarget { CPU, CUDA };

/// "cpu" or "cuda".
llvm::StringRef stringifyKernelTarget(KernelTarget target);
std::optional<KernelTarget> symbolizeKernelTarget(llvm::StringRef name);

} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_KERNELTARGET_H
