// A runtime library with a planted violation (runtime-layering.test): it
// references a symbol of MLIR's.
namespace mlir {
struct Type {
  void dump();
};
} // namespace mlir

void dumpType(mlir::Type type) { type.dump(); }
