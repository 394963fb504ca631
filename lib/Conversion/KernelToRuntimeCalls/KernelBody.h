//===- KernelBody.h - a kernel.generic's body inside loops ------*- C++ -*-===//
//
// What the host and GPU lowerings of a kernel.generic share: LLVM-dialect
// loops and conditionals built from blocks, element and vector accesses,
// and the body itself, cloned per element of a pack, with its loads,
// stores and reductions. Each target arranges the loops (a span of
// indices, a grid-stride loop, tiles) and says where a transposed output's
// elements go.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_LIB_CONVERSION_KERNELTORUNTIMECALLS_KERNELBODY_H
#define TITAN_LIB_CONVERSION_KERNELTORUNTIMECALLS_KERNELBODY_H

#include "titan/Dialect/Kernel/IR/Kernel.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace titan {

/// Marks the functions generated from kernel.generic bodies, for the
/// lowering of their arith/math (lowerGeneratedKernelBodies).
constexpr llvm::StringLiteral kGeneratedKernelAttrName =
    "titan.generated_kernel";

/// Rewrites each kernel.row_logsumexp of `generic`'s body as a row max,
/// then the row sum of the exponentials it shifts, plus the log of that
/// sum (the host's two reads of a row, the second from the cache).
void expandRowLogSumExps(kernel::GenericOp generic);

/// The type an element of `type` is loaded and stored as: itself, or the
/// integer of its width for a float type LLVM lacks (float8).
mlir::Type memoryType(mlir::Type type);

/// The element of type `type` at `address`; `groups` (may be null) are
/// the access groups of the loop it is in.
mlir::Value loadElement(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                        mlir::Value address, mlir::ArrayAttr groups);

/// Stores `v` at `address`.
void storeElement(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                  mlir::Value address, mlir::ArrayAttr groups);

/// The address of element `index` of `base`, whose elements are of type
/// `type` (stored as memoryType(type)).
mlir::Value elementAddress(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value base, mlir::Type type,
                           mlir::Value index);

/// For each k, element `fromIndex` of `from[k]` stored as element `toIndex`
/// of `to[k]` (elements of `types[k]`): a tile's element to its transposed
/// output.
void copyElements(mlir::OpBuilder &b, mlir::Location loc,
                  llvm::ArrayRef<mlir::Value> from, mlir::Value fromIndex,
                  llvm::ArrayRef<mlir::Value> to, mlir::Value toIndex,
                  llvm::ArrayRef<mlir::Type> types, mlir::ArrayAttr groups);

/// An i64 / i32 constant.
mlir::Value constantI64(mlir::OpBuilder &b, mlir::Location loc, int64_t v);
mlir::Value constantI32(mlir::OpBuilder &b, mlir::Location loc, int32_t v);

/// i64 index arithmetic at a builder's insertion point (the loops' bounds
/// and addresses of the tiled kernels).
struct IndexMath {
  mlir::OpBuilder &b;
  mlir::Location loc;
  mlir::Value c(int64_t v) const { return constantI64(b, loc, v); }
  mlir::Value add(mlir::Value x, mlir::Value y) const {
    return mlir::LLVM::AddOp::create(b, loc, x, y);
  }
  mlir::Value sub(mlir::Value x, mlir::Value y) const {
    return mlir::LLVM::SubOp::create(b, loc, x, y);
  }
  mlir::Value mul(mlir::Value x, mlir::Value y) const {
    return mlir::LLVM::MulOp::create(b, loc, x, y);
  }
  /// The smaller, as signed integers.
  mlir::Value min(mlir::Value x, mlir::Value y) const {
    return mlir::LLVM::SMinOp::create(b, loc, x, y);
  }
};

/// `for (i = begin; i < end; i += step) carried = body(i, carried)` at the
/// end of the builder's block (which the loop ends); the builder goes on in
/// a block after the loop, and the result is the final carried values.
/// `annotation` (may be null) marks the loop's back edge.
llvm::SmallVector<mlir::Value>
emitLoop(mlir::OpBuilder &b, mlir::Location loc, mlir::Value begin,
         mlir::Value end, mlir::Value step, mlir::ValueRange init,
         llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value,
                                                           mlir::ValueRange)>
             body,
         mlir::LLVM::LoopAnnotationAttr annotation = {});

/// `then` run under `condition`; the builder continues after it.
void emitIf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value condition,
            llvm::function_ref<void()> then);

/// A loop whose iterations touch disjoint elements: its accesses in one
/// parallel access group (`groups` for them), and the back edge's
/// annotation saying so, so the vectorizer needs no run-time overlap check
/// (which an in-place kernel's identical pointers would fail).
struct ParallelAccesses {
  explicit ParallelAccesses(mlir::MLIRContext *ctx);
  mlir::ArrayAttr groups;
  mlir::LLVM::LoopAnnotationAttr annotation;
};

/// Stores transposed output `output`'s element (`value`) where the target's
/// loops put it.
using TransposedStore =
    llvm::function_ref<void(mlir::OpBuilder &, unsigned output, mlir::Value)>;

/// A kernel.generic's body in the function being built, whose `bases` are
/// its buffers' addresses (inputs, outputs, reductions): the part of it
/// one segment runs (the whole kernel's unless horizontally fused).
class KernelBodyEmitter {
public:
  KernelBodyEmitter(kernel::GenericOp generic,
                    llvm::ArrayRef<mlir::Value> bases,
                    const kernel::GenericSegment &segment);

  /// The body's uniform part (the broadcast inputs and what depends on them
  /// only), once per call: at the builder, which then stores the broadcast
  /// outputs when `first` (i1) holds.
  void emitUniform(mlir::OpBuilder &b, mlir::Value first);

  /// Every absmax reduction's accumulator at its start, +0 (absmax over
  /// nothing): the bits of a non-negative f32, whose unsigned order is the
  /// floats'.
  llvm::SmallVector<mlir::Value> startAccumulators(mlir::OpBuilder &b);

  /// Elements [index, index + width): every input's pack loaded (one
  /// vector access each), the body per element, every untransposed
  /// output's pack stored, each transposed output's element given to
  /// `transposed`; returns `accumulators` combined with the absmax values.
  /// In a row kernel, `column` is the index's column, at which per-column
  /// inputs are read, the row reductions are those setRowReductions gave
  /// (and kernel.column the column), and each
  /// column sum's values are added to the row block's partials
  /// (setColumnSumBlock).
  llvm::SmallVector<mlir::Value>
  emitPack(mlir::OpBuilder &b, mlir::Value index, unsigned width,
           mlir::ValueRange accumulators, mlir::ArrayAttr groups,
           TransposedStore transposed = nullptr, mlir::Value column = {});
  /// The row reductions (kernel.row_sum, kernel.row_max; a host's
  /// kernel.row_logsumexp expanded into those first) the segment
  /// runs, in stages: a stage's reductions depend only on elements and on
  /// earlier stages' (a target reads the row once per stage).
  unsigned getNumRowStages() { return rowStages.size(); }
  llvm::ArrayRef<mlir::Operation *> getRowReductions(unsigned stage) {
    return rowStages[stage].reductions;
  }
  /// Each of stage `stage`'s reductions' starting value: 0 for a sum,
  /// -infinity for a max (and a log-sum-exp's max).
  llvm::SmallVector<mlir::Value> startRowReductions(mlir::OpBuilder &b,
                                                    unsigned stage);
  /// What row reduction `reduction` starts from: 0 for a sum, -infinity
  /// for a max (and for a log-sum-exp's running max, whose sum starts at
  /// 0).
  static double rowIdentity(mlir::Operation *reduction);
  /// `acc` and `v` (scalars or vectors) combined as row reduction
  /// `reduction` combines its values.
  static mlir::Value combineRow(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Operation *reduction, mlir::Value acc,
                                mlir::Value v);
  /// Starts row `row` (i64) of a row kernel: its per-row inputs loaded and
  /// what depends on them alone computed, once for the row.
  void beginRow(mlir::OpBuilder &b, mlir::Value row);
  /// For elements [index, index + width) at columns [column, ...) of a row
  /// kernel: what each of stage `stage`'s reductions reduces there, per
  /// element (result[k][j]: reduction k's value at element j), computing
  /// only what those need.
  llvm::SmallVector<llvm::SmallVector<mlir::Value>>
  emitRowReductionValues(mlir::OpBuilder &b, unsigned stage, mlir::Value index,
                         mlir::Value column, unsigned width,
                         mlir::ArrayAttr groups);
  /// The same for the `lanes` elements from `index` (columns from
  /// `column`) as vectors, one per reduction, computed with vector ops
  /// (the body's ops on vector<lanes x T>; loads need only the element's
  /// alignment), or element by element when an op has no such vector
  /// form: what the host's row reductions combine lane by lane.
  llvm::SmallVector<mlir::Value>
  emitRowReductionVectors(mlir::OpBuilder &b, unsigned stage, mlir::Value index,
                          mlir::Value column, unsigned lanes);
  /// The current row's values of stage `stage`'s reductions, which later
  /// stages and emitPack's body then read (and what depends on them and
  /// the row alone, computed once).
  void setRowReductions(mlir::OpBuilder &b, unsigned stage,
                        mlir::ValueRange values);
  /// Stores the row's per-row outputs at element `row` (after the last
  /// stage).
  void storeRowOutputs(mlir::OpBuilder &b, mlir::Value row);
  /// The row block (i64) whose partials emitPack adds to and
  /// zeroColumnSums zeroes.
  void setColumnSumBlock(mlir::Value block) { columnSumBlock = block; }
  /// The address of row block `block`'s partial of column sum `k` at
  /// `column` (the workspace is P x K x C).
  mlir::Value partialAddress(mlir::OpBuilder &b, mlir::Value block, unsigned k,
                             mlir::Value column);
  /// The first row of row block `block` (the rows R split into the
  /// workspace's P blocks: block p is rows [p R / P, (p + 1) R / P)).
  mlir::Value firstRowOfBlock(mlir::OpBuilder &b, mlir::Value block);
  /// Zeroes the row block's partials of columns [column, column + width)
  /// of each column sum (one vector store each).
  void zeroColumnSums(mlir::OpBuilder &b, mlir::Value column, unsigned width,
                      mlir::ArrayAttr groups);
  /// The number K of column sums, and their element type (null when none).
  unsigned getNumColumnSums() { return columnSums.size(); }
  mlir::Type getColumnSumType();
  /// The workspace's address (null when none), and the column sums'.
  mlir::Value getWorkspaceBase();
  llvm::SmallVector<mlir::Value> getColumnSumBases();

  kernel::GenericOp getGeneric() { return generic; }
  llvm::ArrayRef<mlir::Value> getBases() { return bases; }
  /// The absmax reductions' addresses.
  llvm::SmallVector<mlir::Value> getReductionBases();
  /// The transposed outputs' addresses and element types, in output
  /// order.
  llvm::SmallVector<mlir::Value> getTransposedBases();
  llvm::SmallVector<mlir::Type> getTransposedTypes();

private:
  /// Whether the segment runs `op` of the body.
  bool runs(mlir::Operation &op) { return ops.contains(&op); }
  /// Fills rowStages.
  void findRowStages();
  /// Clones into `map` the row-uniform ops whose operands it has (once a
  /// row: rowValues lists them).
  void emitRowValues(mlir::OpBuilder &b);
  /// Loads element [index, index + width) of every per-index input, and
  /// per-column inputs at `column`, into `lanes`.
  void loadInputs(mlir::OpBuilder &b, mlir::Value index, mlir::Value column,
                  unsigned width, mlir::ArrayAttr groups,
                  llvm::MutableArrayRef<mlir::IRMapping> lanes,
                  llvm::function_ref<bool(mlir::Value)> needed);
  /// Body argument `arg` (a mapped input at address `base`) for the pack's
  /// lanes from `index`, each at its map's element.
  void loadMappedInput(mlir::OpBuilder &b, mlir::Value arg, mlir::Value base,
                       mlir::Value index, mlir::ArrayAttr groups,
                       llvm::MutableArrayRef<mlir::IRMapping> lanes);
  /// The segment's (body argument, input, address), (yielded value,
  /// output, address) and (reduced value, address) triples.
  llvm::SmallVector<std::tuple<mlir::Value, mlir::Value, mlir::Value>>
  segmentInputs();
  llvm::SmallVector<std::tuple<mlir::Value, mlir::Value, mlir::Value>>
  segmentOutputs();
  /// The segment's reductions of kind `kind`: (yielded value, address).
  llvm::SmallVector<std::pair<mlir::Value, mlir::Value>>
  segmentReductions(kernel::ReductionKind kind);
  /// Adds each column sum's values at `column` (a pack, `lanes`) to the
  /// row block's partials, in the loop's access `groups` (each index's
  /// partials are its own).
  void addToColumnSums(mlir::OpBuilder &b, mlir::Value column,
                       llvm::MutableArrayRef<mlir::IRMapping> lanes,
                       mlir::ArrayAttr groups);

  kernel::GenericOp generic;
  llvm::SmallVector<mlir::Value> bases;
  kernel::GenericSegment segment;
  llvm::DenseSet<mlir::Operation *> ops;
  llvm::DenseSet<mlir::Value> uniform;
  /// A stage's row reductions, the body's ops their values depend on (none
  /// the same over the row) and the arguments those read.
  struct RowStage {
    llvm::SmallVector<mlir::Operation *> reductions;
    llvm::DenseSet<mlir::Operation *> ops;
    llvm::DenseSet<mlir::Value> args;
  };
  llvm::SmallVector<RowStage> rowStages;
  /// The values the same over a row (GenericOp::getRowUniformValues), and
  /// those of them `map` holds for the current row.
  llvm::DenseSet<mlir::Value> rowUniform;
  llvm::SmallVector<mlir::Value> rowValues;
  /// The body's uniform values in the function.
  mlir::IRMapping map;
  /// The column sums' (yielded value, address), and the current row block
  /// (setColumnSumBlock).
  llvm::SmallVector<std::pair<mlir::Value, mlir::Value>> columnSums;
  mlir::Value columnSumBlock;
};

} // namespace titan

#endif // TITAN_LIB_CONVERSION_KERNELTORUNTIMECALLS_KERNELBODY_H
