//===- GeneratedKernels.cpp - kernel.generic as host loops ----------------===//
//
// A generated kernel on the host: one LLVM function over a span of the
// kernel's work (element indices, or rows for a kernel with transposed
// outputs), vectorized by LLVM's loop vectorizer when the step's module is
// compiled; and the lowering of every generated kernel's arith/math.
//
//===----------------------------------------------------------------------===//

#include "titan/Conversion/KernelToRuntimeCalls/GeneratedKernels.h"

#include "KernelBody.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace titan;

namespace {
/// The host's reductions: each span's accumulator, atomically into the
/// buffer (which the step zeroed before the spans run).
void publishHostReductions(OpBuilder &b, Location loc,
                           ArrayRef<Value> accumulators,
                           ArrayRef<Value> buffers) {
  for (auto [acc, buffer] : llvm::zip(accumulators, buffers))
    LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::umax, buffer, acc,
                              LLVM::AtomicOrdering::monotonic);
}

/// Elements [begin, end) of `e`'s kernel, in one vectorizable loop.
SmallVector<Value> emitElementSpan(OpBuilder &b, KernelBodyEmitter &e,
                                   Value begin, Value end) {
  Location loc = e.getGeneric().getLoc();
  ParallelAccesses parallel(b.getContext());
  return emitLoop(
      b, loc, begin, end, constantI64(b, loc, 1), e.startAccumulators(b),
      [&](Value index, ValueRange acc) {
        return e.emitPack(b, index, /*width=*/1, acc, parallel.groups);
      },
      parallel.annotation);
}

/// The side of a host kernel's tile: a tile's transposed elements are a
/// 64-byte line of each float8 column.
constexpr int64_t kHostTile = 64;

/// A kHostTile x kHostTile tile on the stack (in the function's entry
/// block) for each transposed output of `e`'s kernel.
SmallVector<Value> stackTiles(OpBuilder &b, KernelBodyEmitter &e) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&b.getInsertionBlock()->getParent()->front());
  Location loc = e.getGeneric().getLoc();
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  return llvm::map_to_vector(e.getTransposedTypes(), [&](Type type) -> Value {
    return LLVM::AllocaOp::create(b, loc, ptr, memoryType(type),
                                  constantI64(b, loc, kHostTile * kHostTile),
                                  /*alignment=*/64);
  });
}

/// Rows [r0, r1) and columns [c0, c1) of `e`'s kernel of `cols` columns:
/// each row's elements in one vectorizable loop (loads and untransposed
/// stores along the row; each transposed output's elements into its
/// `tiles` entry at (row - r0) * kHostTile + (col - c0), also along it).
SmallVector<Value> emitTileRows(OpBuilder &b, KernelBodyEmitter &e,
                                ArrayRef<Value> tiles, Value r0, Value r1,
                                Value c0, Value c1, int64_t cols,
                                ValueRange accumulators) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  return emitLoop(
      b, loc, r0, r1, m.c(1), accumulators, [&](Value row, ValueRange acc) {
        Value rowStart = m.mul(row, m.c(cols));
        // Element (row, col)'s place in the tile, less col.
        Value tileRow = m.sub(m.mul(m.sub(row, r0), m.c(kHostTile)), c0);
        ParallelAccesses parallel(b.getContext());
        return emitLoop(
            b, loc, c0, c1, m.c(1), acc,
            [&](Value col, ValueRange acc) {
              Value at = m.add(tileRow, col);
              return e.emitPack(b, m.add(rowStart, col), 1, acc,
                                parallel.groups,
                                [&](OpBuilder &b, unsigned k, Value v) {
                                  storeElement(b, loc, v,
                                               elementAddress(b, loc, tiles[k],
                                                              v.getType(), at),
                                               parallel.groups);
                                });
            },
            parallel.annotation);
      });
}

/// The tiles' rows [r0, r1) and columns [c0, c1) copied out: column j is
/// row j of each transposed output of `rows` rows (element (r, j) to
/// j * rows + r), each column one loop along the output's row.
void emitTileCopy(OpBuilder &b, KernelBodyEmitter &e, ArrayRef<Value> tiles,
                  Value r0, Value r1, Value c0, Value c1, int64_t rows) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  SmallVector<Value> outputs = e.getTransposedBases();
  SmallVector<Type> types = e.getTransposedTypes();
  emitLoop(b, loc, c0, c1, m.c(1), {}, [&](Value col, ValueRange) {
    Value outRow = m.mul(col, m.c(rows));
    // Element (row, col)'s place in the tile, less row * kHostTile.
    Value tileCol = m.sub(m.sub(col, c0), m.mul(r0, m.c(kHostTile)));
    ParallelAccesses copy(b.getContext());
    emitLoop(
        b, loc, r0, r1, m.c(1), {},
        [&](Value row, ValueRange) {
          copyElements(b, loc, tiles,
                       m.add(m.mul(row, m.c(kHostTile)), tileCol), outputs,
                       m.add(outRow, row), types, copy.groups);
          return SmallVector<Value>();
        },
        copy.annotation);
    return SmallVector<Value>();
  });
}

/// Rows [begin, end) of `e`'s R x C kernel with transposed outputs, in
/// tiles of kHostTile x kHostTile: each tile's rows computed into stack
/// tiles (emitTileRows), then copied out as rows of the transposed outputs
/// (emitTileCopy).
SmallVector<Value> emitRowSpan(OpBuilder &b, KernelBodyEmitter &e, Value begin,
                               Value end, int64_t rows, int64_t cols) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  SmallVector<Value> tiles = stackTiles(b, e);
  Value tile = m.c(kHostTile);
  return emitLoop(
      b, loc, m.c(0), m.c(cols), tile, e.startAccumulators(b),
      [&](Value c0, ValueRange acc) {
        Value c1 = m.min(m.add(c0, tile), m.c(cols));
        return emitLoop(
            b, loc, begin, end, tile, acc, [&](Value r0, ValueRange acc) {
              Value r1 = m.min(m.add(r0, tile), end);
              SmallVector<Value> combined =
                  emitTileRows(b, e, tiles, r0, r1, c0, c1, cols, acc);
              emitTileCopy(b, e, tiles, r0, r1, c0, c1, rows);
              return combined;
            });
      });
}

/// The partial results a host row kernel keeps per row reduction: a
/// 64-byte vector of its type (of the widest type, when a stage reduces
/// f32 and f64 values: 8 lanes), element k reducing the row's columns k,
/// k + lanes, ... in order (the loop vectorizer may not reorder a sum;
/// these are independent).
unsigned rowReductionLanes(Type type) {
  return 512 / type.getIntOrFloatBitWidth();
}

/// `values` combined pairwise (0 with 1, 2 with 3, ..., then those
/// pairs'), a fixed order.
Value combinePairwise(OpBuilder &b, Location loc, Operation *reduction,
                      ArrayRef<Value> values) {
  if (values.size() == 1)
    return values.front();
  size_t half = values.size() / 2;
  return KernelBodyEmitter::combineRow(
      b, loc, reduction,
      combinePairwise(b, loc, reduction, values.take_front(half)),
      combinePairwise(b, loc, reduction, values.drop_front(half)));
}

/// Stage `stage`'s reductions of the row from `rowStart` in `e`'s row
/// kernel of `cols` columns: each one's rowReductionLanes partials over
/// the whole groups of lanes, combined pairwise, then with the rest of the
/// row's, taken in order.
SmallVector<Value> emitHostRowStage(OpBuilder &b, KernelBodyEmitter &e,
                                    unsigned stage, Value rowStart,
                                    int64_t cols) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  ArrayRef<Operation *> reductions = e.getRowReductions(stage);
  // One lane count for all (the widest type's), so one loop serves.
  unsigned lanes = 64;
  for (Operation *r : reductions)
    lanes = std::min(lanes, rowReductionLanes(r->getResult(0).getType()));
  int64_t whole = cols / lanes * lanes;
  // Each reduction's lanes as one vector, a chunk's values computed with
  // vector ops (LLVM vectorizes no ordered sum, nor these 16 chains
  // reliably).
  SmallVector<Value> partials;
  for (Operation *r : reductions) {
    Type type = r->getResult(0).getType();
    partials.push_back(arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            VectorType::get({lanes}, type),
            b.getFloatAttr(type, KernelBodyEmitter::rowIdentity(r)))));
  }
  auto combine = [&](ValueRange acc, ArrayRef<Value> values) {
    SmallVector<Value> next;
    for (auto [r, a, v] : llvm::zip_equal(reductions, acc, values))
      next.push_back(KernelBodyEmitter::combineRow(b, loc, r, a, v));
    return next;
  };
  if (whole > 0)
    partials = emitLoop(
        b, loc, m.c(0), m.c(whole), m.c(lanes), partials,
        [&](Value col, ValueRange acc) {
          return combine(acc, e.emitRowReductionVectors(
                                  b, stage, m.add(rowStart, col), col, lanes));
        });
  SmallVector<Value> rest;
  if (whole < cols)
    rest = emitLoop(b, loc, m.c(whole), m.c(cols), m.c(1),
                    e.startRowReductions(b, stage),
                    [&](Value col, ValueRange acc) {
                      SmallVector<Value> values;
                      for (auto &v : e.emitRowReductionValues(
                               b, stage, m.add(rowStart, col), col, 1, {}))
                        values.push_back(v[0]);
                      return combine(acc, values);
                    });
  SmallVector<Value> totals;
  for (auto [k, r] : llvm::enumerate(reductions)) {
    SmallVector<Value> laneValues;
    for (unsigned j = 0; j < lanes; ++j)
      laneValues.push_back(LLVM::ExtractElementOp::create(
          b, loc, partials[k], constantI32(b, loc, int32_t(j))));
    Value total = combinePairwise(b, loc, r, laneValues);
    totals.push_back(
        whole < cols ? KernelBodyEmitter::combineRow(b, loc, r, total, rest[k])
                     : total);
  }
  return totals;
}

/// Rows [begin, end) of `e`'s row kernel of `cols` columns: for each row,
/// its per-row inputs, its reductions stage by stage (emitHostRowStage),
/// its per-row outputs, then its elements in one vectorizable loop.
SmallVector<Value> emitRowKernelSpan(OpBuilder &b, KernelBodyEmitter &e,
                                     Value begin, Value end, int64_t cols,
                                     ValueRange accumulators) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  return emitLoop(
      b, loc, begin, end, m.c(1), accumulators,
      [&](Value row, ValueRange acc) -> SmallVector<Value> {
        Value rowStart = m.mul(row, m.c(cols));
        e.beginRow(b, row);
        for (unsigned stage = 0; stage < e.getNumRowStages(); ++stage)
          e.setRowReductions(b, stage,
                             emitHostRowStage(b, e, stage, rowStart, cols));
        e.storeRowOutputs(b, row);
        if (!e.getGeneric().writesElements())
          return SmallVector<Value>(acc);
        ParallelAccesses parallel(b.getContext());
        return emitLoop(
            b, loc, m.c(0), m.c(cols), m.c(1), acc,
            [&](Value col, ValueRange acc) {
              return e.emitPack(b, m.add(rowStart, col), 1, acc,
                                parallel.groups, nullptr, col);
            },
            parallel.annotation);
      });
}

/// Row blocks [begin, end) of `e`'s row kernel with column sums (R rows of
/// `cols` columns, P blocks): block p zeroes its K x C partials in the
/// workspace, then runs rows [p R / P, (p + 1) R / P), adding each row's
/// column-sum values to its partials in row order.
SmallVector<Value> emitRowBlockSpan(OpBuilder &b, KernelBodyEmitter &e,
                                    Value begin, Value end, int64_t cols) {
  Location loc = e.getGeneric().getLoc();
  IndexMath m{b, loc};
  return emitLoop(b, loc, begin, end, m.c(1), e.startAccumulators(b),
                  [&](Value block, ValueRange acc) {
                    e.setColumnSumBlock(block);
                    ParallelAccesses clear(b.getContext());
                    emitLoop(
                        b, loc, m.c(0), m.c(cols), m.c(1), {},
                        [&](Value col, ValueRange) {
                          e.zeroColumnSums(b, col, 1, clear.groups);
                          return SmallVector<Value>();
                        },
                        clear.annotation);
                    return emitRowKernelSpan(
                        b, e, e.firstRowOfBlock(b, block),
                        e.firstRowOfBlock(b, m.add(block, m.c(1))), cols, acc);
                  });
}

/// The elements a work item of a kernel in tiles takes in its segments
/// that run element by element: a span of kHostTile items is then as much
/// work as kHostTile rows of a cast-transpose, not 64 elements.
constexpr int64_t kTiledKernelItemElements = 1024;

/// The elements of segment `segment` one work item takes: 1, or in a
/// kernel in tiles, for a segment without transposed outputs,
/// kTiledKernelItemElements (and a row of C for one in tiles, which its
/// rows' loop takes).
int64_t itemElements(kernel::GenericOp generic,
                     const kernel::GenericSegment &segment) {
  return !generic.getTransposedOutputs().empty() &&
                 !generic.getTransposedShape(segment)
             ? kTiledKernelItemElements
             : 1;
}

/// A segment's work items: its elements (or chunks of them,
/// itemElements), or its rows when it runs in tiles.
int64_t segmentItems(kernel::GenericOp generic,
                     const kernel::GenericSegment &segment) {
  std::optional<std::pair<int64_t, int64_t>> tiles =
      generic.getTransposedShape(segment);
  int64_t chunk = itemElements(generic, segment);
  return tiles ? tiles->first : (segment.elements + chunk - 1) / chunk;
}

/// The items a segment takes in the launch's: its own, and for one of
/// several in tiles up to a whole tile, so every span of kHostTile items
/// is one segment's rows (no partial tiles in the middle of a segment).
int64_t paddedSegmentItems(kernel::GenericOp generic,
                           const kernel::GenericSegment &segment) {
  int64_t items = segmentItems(generic, segment);
  if (generic.getTransposedOutputs().empty() ||
      generic.getSegmentList().size() == 1)
    return items;
  return (items + kHostTile - 1) / kHostTile * kHostTile;
}

/// Work items [begin, end) of a horizontally fused kernel, whose segments
/// follow each other in the launch's items (paddedSegmentItems): each
/// segment's items in the span, in its own loop, or its own tiles (the
/// span that holds a segment's item 0 stores its broadcast outputs).
void emitSegmentSpans(OpBuilder &b, kernel::GenericOp generic,
                      ArrayRef<Value> bases, Value begin, Value end) {
  Location loc = generic.getLoc();
  IndexMath m{b, loc};
  int64_t offset = 0;
  for (const kernel::GenericSegment &segment : generic.getSegmentList()) {
    Value at = m.c(offset);
    Value first = LLVM::AndOp::create(
        b, loc,
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::sle, begin, at),
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, at, end));
    Value lo = LLVM::SMaxOp::create(b, loc, m.sub(begin, at), m.c(0));
    Value hi = m.min(m.sub(end, at), m.c(segmentItems(generic, segment)));
    KernelBodyEmitter e(generic, bases, segment);
    e.emitUniform(b, first);
    std::optional<std::pair<int64_t, int64_t>> tiles =
        generic.getTransposedShape(segment);
    // Items of several elements cover [lo * chunk, hi * chunk), clipped.
    if (int64_t chunk = itemElements(generic, segment); chunk > 1) {
      lo = m.mul(lo, m.c(chunk));
      hi = m.min(m.mul(hi, m.c(chunk)), m.c(segment.elements));
    }
    SmallVector<Value> accumulators =
        tiles ? emitRowSpan(b, e, lo, hi, tiles->first, tiles->second)
              : emitElementSpan(b, e, lo, hi);
    publishHostReductions(b, loc, accumulators, e.getReductionBases());
    offset += paddedSegmentItems(generic, segment);
  }
}
} // namespace

std::string titan::generatedKernelKey(kernel::GenericOp generic) {
  std::string key;
  llvm::raw_string_ostream os(key);
  DenseMap<Value, unsigned> number;
  auto valueNumber = [&](Value v) {
    return number.try_emplace(v, number.size()).first->second;
  };
  // Each buffer's role (input, output, reduction and its kind), element
  // type and whether it is broadcast or transposed: kernels alike in all
  // but the element count share a function.
  auto buffers = [&](StringRef role, ValueRange values) {
    for (Value buffer : values)
      os << role << cast<MemRefType>(buffer.getType()).getElementType()
         << (generic.isBroadcast(buffer)      ? "[1],"
             : generic.isTransposed(buffer)   ? "[T],"
             : generic.isPerColumn(buffer)    ? "[C],"
             : generic.isPerRowOutput(buffer) ? "[R],"
                                              : ",");
  };
  // A row kernel has its row length built in; with column sums, its rows
  // and row blocks too.
  if (int64_t cols = generic.getRowLength())
    os << "rows of " << cols << ";";
  if (int64_t blocks = generic.getColumnSumBlocks())
    os << "column sums of " << generic.getNumElements() / generic.getRowLength()
       << " rows in " << blocks << " blocks;";
  // A kernel in tiles has its rows and columns built in, a horizontally
  // fused one its segments.
  SmallVector<kernel::GenericSegment> segments = generic.getSegmentList();
  for (const kernel::GenericSegment &segment : segments) {
    if (segments.size() > 1)
      os << "segment " << segment.inputEnd << "," << segment.outputEnd << ","
         << segment.reductionEnd << "," << segment.elements << ";";
    if (std::optional<std::pair<int64_t, int64_t>> shape =
            generic.getTransposedShape(segment))
      os << "tiles " << shape->first << "x" << shape->second << ";";
  }
  buffers("in ", generic.getInputs());
  // Input maps are built in (RoPE's hold its shape).
  for (unsigned i = 0, e = generic.getInputs().size(); i < e; ++i)
    if (generic.isMapped(i))
      os << "map " << i << " " << generic.getInputMap(i) << ";";
  buffers("out ", generic.getOutputs());
  for (auto [buffer, kind] :
       llvm::zip(generic.getReductions(), generic.getReductionKinds()))
    os << "reduce " << kind << " "
       << cast<MemRefType>(buffer.getType()).getElementType() << ",";
  Block &body = generic.getBody().front();
  for (BlockArgument arg : body.getArguments())
    valueNumber(arg);
  for (Operation &op : body) {
    os << ";" << op.getName() << "(";
    for (Value operand : op.getOperands())
      os << valueNumber(operand) << ",";
    os << ")" << op.getAttrDictionary() << ":";
    for (Value result : op.getResults())
      os << valueNumber(result) << result.getType() << ",";
  }
  return key;
}

std::pair<int64_t, int64_t> titan::hostWorkItems(kernel::GenericOp generic) {
  // Every segment's items (elements, or rows in tiles), one after another;
  // spans of whole tiles, or the runtime's (0).
  if (int64_t cols = generic.getRowLength()) {
    // Rows (or row blocks, with column sums), at least the runtime's span
    // of elements (4096) at a time.
    int64_t rows = generic.getNumElements() / cols;
    if (int64_t blocks = generic.getColumnSumBlocks())
      return {blocks, std::max<int64_t>(1, 4096 * blocks / (rows * cols))};
    return {rows, std::max<int64_t>(1, 4096 / cols)};
  }
  int64_t items = 0;
  for (const kernel::GenericSegment &segment : generic.getSegmentList())
    items += paddedSegmentItems(generic, segment);
  return {items, generic.getTransposedOutputs().empty() ? 0 : kHostTile};
}

namespace {
/// A host kernel's function, each buffer's address (in `generic`'s
/// operand order) and its span of work items [begin, end).
struct HostKernel {
  LLVM::LLVMFuncOp fn;
  SmallVector<Value> bases;
  Value begin, end;
};

/// `void name(ptr buffers, i64 begin, i64 end)`, private to `generic`'s
/// module, with `b` at its entry after loading each buffer's address.
HostKernel createHostKernel(OpBuilder &b, kernel::GenericOp generic,
                            StringRef name) {
  MLIRContext *ctx = generic.getContext();
  b.setInsertionPointToEnd(generic->getParentOfType<ModuleOp>().getBody());
  Location loc = generic.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = b.getI64Type();
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, name,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                  {ptr, i64, i64}),
      LLVM::Linkage::Internal);
  fn->setAttr(kGeneratedKernelAttrName, b.getUnitAttr());
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  HostKernel kernel{fn, {}, entry->getArgument(1), entry->getArgument(2)};
  for (unsigned i = 0, e = generic->getNumOperands() - 1; i < e; ++i) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, entry->getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{int32_t(i)});
    kernel.bases.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
  }
  return kernel;
}
} // namespace

LLVM::LLVMFuncOp titan::outlineGeneratedKernel(kernel::GenericOp generic,
                                               StringRef name) {
  expandRowLogSumExps(generic);
  OpBuilder b(generic.getContext());
  Location loc = generic.getLoc();
  auto [fn, bases, begin, end] = createHostKernel(b, generic, name);
  SmallVector<kernel::GenericSegment> segments = generic.getSegmentList();
  if (segments.size() == 1) {
    KernelBodyEmitter e(generic, bases, segments.front());
    e.emitUniform(b, LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq,
                                          begin, constantI64(b, loc, 0)));
    std::optional<std::pair<int64_t, int64_t>> tiles =
        generic.getTransposedShape();
    int64_t cols = generic.getRowLength();
    SmallVector<Value> accumulators =
        e.getNumColumnSums() ? emitRowBlockSpan(b, e, begin, end, cols)
        : cols
            ? emitRowKernelSpan(b, e, begin, end, cols, e.startAccumulators(b))
        : tiles ? emitRowSpan(b, e, begin, end, tiles->first, tiles->second)
                : emitElementSpan(b, e, begin, end);
    publishHostReductions(b, loc, accumulators, e.getReductionBases());
  } else {
    emitSegmentSpans(b, generic, bases, begin, end);
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return fn;
}

LLVM::LLVMFuncOp titan::outlineColumnTotals(kernel::GenericOp generic,
                                            StringRef name) {
  OpBuilder b(generic.getContext());
  Location loc = generic.getLoc();
  auto [fn, bases, begin, end] = createHostKernel(b, generic, name);
  KernelBodyEmitter e(generic, bases, generic.getSegmentList().front());
  IndexMath m{b, loc};
  Type type = e.getColumnSumType();
  // Columns [begin, end) of each sum: block 0's partials, then each later
  // block's added in block order, each pass one vectorizable loop.
  for (auto [k, total] : llvm::enumerate(e.getColumnSumBases())) {
    auto addBlock = [&](Value block, bool first) {
      ParallelAccesses parallel(b.getContext());
      emitLoop(
          b, loc, begin, end, m.c(1), {},
          [&](Value col, ValueRange) {
            Value partial =
                loadElement(b, loc, type, e.partialAddress(b, block, k, col),
                            parallel.groups);
            Value at = elementAddress(b, loc, total, type, col);
            Value sum =
                first ? partial
                      : arith::AddFOp::create(
                            b, loc,
                            loadElement(b, loc, type, at, parallel.groups),
                            partial);
            storeElement(b, loc, sum, at, parallel.groups);
            return SmallVector<Value>();
          },
          parallel.annotation);
    };
    addBlock(m.c(0), /*first=*/true);
    emitLoop(b, loc, m.c(1), m.c(generic.getColumnSumBlocks()), m.c(1), {},
             [&](Value block, ValueRange) {
               addBlock(block, /*first=*/false);
               return SmallVector<Value>();
             });
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return fn;
}

namespace {
/// f32 exponentials as MLIR's polynomial approximation (vectorizable, no
/// library call, the same bits on every target), bf16 conversions as
/// integer arithmetic (rounding to nearest even, no runtime library call).
LogicalResult expandBodies(ArrayRef<LLVM::LLVMFuncOp> kernels) {
  if (kernels.empty())
    return success();
  MLIRContext *ctx = LLVM::LLVMFuncOp(kernels.front()).getContext();
  RewritePatternSet expansions(ctx);
  populateMathPolynomialApproximationPatterns(expansions, [](StringRef name) {
    return name == "math.exp" || name == "exp";
  });
  arith::populateExpandBFloat16Patterns(expansions);
  FrozenRewritePatternSet frozen(std::move(expansions));
  for (LLVM::LLVMFuncOp fn : kernels)
    if (failed(applyPatternsGreedily(fn, frozen)))
      return fn.emitError() << "generated kernel: expanding exp and bf16 "
                               "conversions did not converge";
  return success();
}

/// Whether `op` computes in f64.
bool isF64(Operation *op) {
  return llvm::any_of(op->getResultTypes(), [](Type t) { return t.isF64(); });
}

/// Whether a GPU computes `op` with libdevice rather than an LLVM
/// intrinsic: f64 math (NVPTX has no f64 exp), f32 log2, whose intrinsic
/// NVPTX lowers to the approximate lg2.approx (a float8 scale's power of
/// two takes CUDA's log2f, as the torch.log2 of torchao's does), and f32
/// log, which NVPTX has no instruction for (the cross-entropy's lse takes
/// CUDA's logf, as the retired kernel did).
bool usesLibDevice(Operation *op) {
  return isF64(op) || isa<math::Log2Op, math::LogOp>(op);
}

/// arith and math to the LLVM dialect. On a GPU, f64 math, f32 log and log2 as
/// libdevice's functions (usesLibDevice); the rest of f32's stays LLVM's
/// intrinsics, which NVPTX lowers correctly rounded (sqrt.rn, not
/// libdevice's sqrt.approx).
LogicalResult lowerToLLVM(ArrayRef<LLVM::LLVMFuncOp> kernels, bool device) {
  if (kernels.empty())
    return success();
  MLIRContext *ctx = LLVM::LLVMFuncOp(kernels.front()).getContext();
  LLVMTypeConverter converter(ctx);
  RewritePatternSet intrinsics(ctx), rest(ctx);
  populateMathToLLVMConversionPatterns(converter, intrinsics);
  arith::populateArithToLLVMConversionPatterns(converter, rest);
  if (device) {
    populateLibDeviceConversionPatterns(converter, rest);
  } else {
    populateMathToLLVMConversionPatterns(converter, rest);
    // exp's polynomial on the host's vectors (a row reduction's lanes)
    // builds vector-dialect ops.
    populateVectorToLLVMConversionPatterns(converter, rest);
  }
  // First the math LLVM's intrinsics serve (on a GPU, all but f64's).
  ConversionTarget intrinsicMath(*ctx);
  intrinsicMath.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  intrinsicMath.addDynamicallyLegalDialect<math::MathDialect>(
      [device](Operation *op) { return device && usesLibDevice(op); });
  LLVMConversionTarget target(*ctx);
  FrozenRewritePatternSet first(std::move(intrinsics)), second(std::move(rest));
  for (LLVM::LLVMFuncOp fn : kernels) {
    if (failed(applyPartialConversion(fn, intrinsicMath, first)) ||
        failed(applyPartialConversion(fn, target, second)))
      return failure();
    fn->removeAttr(kGeneratedKernelAttrName);
  }
  return success();
}
} // namespace

LogicalResult titan::lowerGeneratedKernelBodies(ModuleOp module) {
  SmallVector<LLVM::LLVMFuncOp> host, device;
  module.walk([&](LLVM::LLVMFuncOp fn) {
    if (!fn->hasAttr(kGeneratedKernelAttrName))
      return;
    (fn->getParentOfType<gpu::GPUModuleOp>() ? device : host).push_back(fn);
  });
  if (failed(expandBodies(host)) || failed(expandBodies(device)))
    return failure();
  return success(succeeded(lowerToLLVM(host, /*device=*/false)) &&
                 succeeded(lowerToLLVM(device, /*device=*/true)));
}
