//===- ExternalModels.h - the CPU target's op models ------------*- C++ -*-===//

#ifndef TITAN_TARGET_CPU_EXTERNALMODELS_H
#define TITAN_TARGET_CPU_EXTERNALMODELS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace titan {
/// Attaches the CPU target's rules to the titan and dist ops: their kernels'
/// workspaces (CPUWorkspaceOpInterface).
void registerCPUTargetExternalModels(mlir::DialectRegistry &registry);
} // namespace titan

#endif // TITAN_TARGET_CPU_EXTERNALMODELS_H
