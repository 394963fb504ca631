//===- BufferLiveness.h - buffers of a function on the CPU target -*- C++
//-*-===//
//
// The CPU target gives every op result its own buffer, except views (reshape,
// replicate) and dist.wait results, which live in their operand's (the
// future's) buffer; a buffer is freed after the last op that uses any value
// living in it, and a collective's input stays alive until its wait. This
// analysis is that plan, shared by the lowering (where to free) and by
// titan-compile's summary (peak working memory).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONVERSION_TITANTOCPU_BUFFERLIVENESS_H
#define TITAN_CONVERSION_TITANTOCPU_BUFFERLIVENESS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace titan {

class BufferLiveness {
public:
  /// `func` must have a single block.
  explicit BufferLiveness(mlir::func::FuncOp func);

  /// Whether `op`'s result lives in its first operand's buffer.
  static bool isView(mlir::Operation *op);
  /// The value that owns the buffer `v` lives in.
  mlir::Value bufferOf(mlir::Value v) const;
  /// The block's ops in order.
  llvm::ArrayRef<mlir::Operation *> getOps() const { return ops; }
  /// The buffers (not arguments) freed after the op at `index`.
  llvm::ArrayRef<mlir::Value> freedAfter(unsigned index) const;
  /// The most bytes of buffers alive at once (arguments excluded: the
  /// caller owns them).
  int64_t peakBytes() const;

private:
  llvm::SmallVector<mlir::Operation *> ops;
  llvm::DenseMap<mlir::Value, mlir::Value> root;
  llvm::DenseMap<unsigned, llvm::SmallVector<mlir::Value>> freed;
};

/// Bytes of a statically shaped tensor (or of a future's tensor).
int64_t bufferBytes(mlir::Type type);

} // namespace titan

#endif // TITAN_CONVERSION_TITANTOCPU_BUFFERLIVENESS_H
