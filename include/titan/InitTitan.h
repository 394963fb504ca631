//===- InitTitan.h - register titan's dialects and passes -------*- C++ -*-===//

#ifndef TITAN_INITTITAN_H
#define TITAN_INITTITAN_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace titan {
/// Adds titan's dialects, the upstream dialects titan IR uses and the
/// targets' external models.
void registerAllDialects(mlir::DialectRegistry &registry);
/// Registers titan's passes (and the upstream ones its pipelines use) with
/// the global pass registry, for titan-opt.
void registerAllPasses();
} // namespace titan

#endif // TITAN_INITTITAN_H
