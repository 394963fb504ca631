//===- InitTitan.h - register dialects, passes and targets ------*- C++ -*-===//

#ifndef TITAN_INITTITAN_H
#define TITAN_INITTITAN_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace titan {
/// Registers the built-in target backends, cpu and cuda
/// (titan/Target/TargetBackend.h), once per process.
void registerAllTargetBackends();
/// Adds titan's dialects, the upstream dialects titan IR uses and every
/// registered target backend's external models (the built-in backends are
/// registered first; register another one before calling this).
void registerAllDialects(mlir::DialectRegistry &registry);
/// Registers titan's passes (and the upstream ones its pipelines use) with
/// the global pass registry, for titan-opt.
void registerAllPasses();
} // namespace titan

#endif // TITAN_INITTITAN_H
