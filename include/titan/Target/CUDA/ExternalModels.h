//===- ExternalModels.h - the CUDA target's op models -----------*- C++ -*-===//

#ifndef TITAN_TARGET_CUDA_EXTERNALMODELS_H
#define TITAN_TARGET_CUDA_EXTERNALMODELS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace titan {
/// Attaches the CUDA target's rules to the titan and dist ops: their kernels'
/// workspaces (CUDAWorkspaceOpInterface).
void registerCUDATargetExternalModels(mlir::DialectRegistry &registry);
} // namespace titan

#endif // TITAN_TARGET_CUDA_EXTERNALMODELS_H
