//===- KernelBody.cpp - a kernel.generic's body inside loops --------------===//

#include "KernelBody.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace titan;

Type titan::memoryType(Type type) {
  if (LLVM::isCompatibleType(type))
    return type;
  return IntegerType::get(type.getContext(), type.getIntOrFloatBitWidth());
}

Value titan::loadElement(OpBuilder &b, Location loc, Type type, Value address,
                         ArrayAttr groups) {
  Type stored = memoryType(type);
  auto load = LLVM::LoadOp::create(b, loc, stored, address);
  if (groups)
    load.setAccessGroupsAttr(groups);
  if (stored == type)
    return load;
  return arith::BitcastOp::create(b, loc, type, load);
}

void titan::storeElement(OpBuilder &b, Location loc, Value v, Value address,
                         ArrayAttr groups) {
  Type stored = memoryType(v.getType());
  if (stored != v.getType())
    v = arith::BitcastOp::create(b, loc, stored, v);
  auto store = LLVM::StoreOp::create(b, loc, v, address);
  if (groups)
    store.setAccessGroupsAttr(groups);
}

Value titan::elementAddress(OpBuilder &b, Location loc, Value base, Type type,
                            Value index) {
  return LLVM::GEPOp::create(b, loc, base.getType(), memoryType(type), base,
                             ArrayRef<LLVM::GEPArg>{index});
}

void titan::copyElements(OpBuilder &b, Location loc, ArrayRef<Value> from,
                         Value fromIndex, ArrayRef<Value> to, Value toIndex,
                         ArrayRef<Type> types, ArrayAttr groups) {
  for (auto [source, target, type] : llvm::zip_equal(from, to, types)) {
    Value v = loadElement(
        b, loc, type, elementAddress(b, loc, source, type, fromIndex), groups);
    storeElement(b, loc, v, elementAddress(b, loc, target, type, toIndex),
                 groups);
  }
}

Value titan::constantI64(OpBuilder &b, Location loc, int64_t v) {
  return LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                  b.getI64IntegerAttr(v));
}

Value titan::constantI32(OpBuilder &b, Location loc, int32_t v) {
  return LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                  b.getI32IntegerAttr(v));
}

SmallVector<Value>
titan::emitLoop(OpBuilder &b, Location loc, Value begin, Value end, Value step,
                ValueRange init,
                function_ref<SmallVector<Value>(Value, ValueRange)> body,
                LLVM::LoopAnnotationAttr annotation) {
  Block *before = b.getInsertionBlock();
  Region *region = before->getParent();
  SmallVector<Type> carried = {begin.getType()};
  llvm::append_range(carried, init.getTypes());
  SmallVector<Location> locs(carried.size(), loc);
  Block *header = b.createBlock(region, region->end(), carried, locs);
  Block *first = b.createBlock(region, region->end());
  Block *after = b.createBlock(region, region->end(), init.getTypes(),
                               ArrayRef(locs).drop_front());
  b.setInsertionPointToEnd(before);
  SmallVector<Value> start = {begin};
  llvm::append_range(start, init);
  LLVM::BrOp::create(b, loc, start, header);

  b.setInsertionPointToEnd(header);
  Value index = header->getArgument(0);
  Value more =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, index, end);
  LLVM::CondBrOp::create(b, loc, more, first, ValueRange{}, after,
                         header->getArguments().drop_front());

  // The body may build loops of its own; the back edge ends wherever it
  // leaves the builder.
  b.setInsertionPointToEnd(first);
  SmallVector<Value> carriedOut =
      body(index, header->getArguments().drop_front());
  SmallVector<Value> next = {LLVM::AddOp::create(b, loc, index, step)};
  llvm::append_range(next, carriedOut);
  auto latch = LLVM::BrOp::create(b, loc, next, header);
  if (annotation)
    latch.setLoopAnnotationAttr(annotation);
  b.setInsertionPointToEnd(after);
  return llvm::to_vector(ValueRange(after->getArguments()));
}

void titan::emitIf(OpBuilder &b, Location loc, Value condition,
                   function_ref<void()> then) {
  Block *current = b.getInsertionBlock();
  Block *after = current->splitBlock(b.getInsertionPoint());
  Block *body = b.createBlock(after);
  b.setInsertionPointToEnd(current);
  LLVM::CondBrOp::create(b, loc, condition, body, after);
  b.setInsertionPointToEnd(body);
  then();
  LLVM::BrOp::create(b, loc, ValueRange{}, after);
  b.setInsertionPointToStart(after);
}

ParallelAccesses::ParallelAccesses(MLIRContext *ctx) {
  auto group =
      LLVM::AccessGroupAttr::get(ctx, DistinctAttr::create(UnitAttr::get(ctx)));
  groups = ArrayAttr::get(ctx, {group});
  annotation = LLVM::LoopAnnotationAttr::get(
      ctx, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {group});
}

namespace {
/// The `width` elements of type `type` from `address` on: one element
/// load, or one vector load aligned to its size.
SmallVector<Value> loadPack(OpBuilder &b, Location loc, Type type,
                            Value address, unsigned width, ArrayAttr groups) {
  if (width == 1)
    return {loadElement(b, loc, type, address, groups)};
  Type stored = memoryType(type);
  auto vector = VectorType::get({int64_t(width)}, stored);
  unsigned bytes = width * stored.getIntOrFloatBitWidth() / 8;
  auto load = LLVM::LoadOp::create(b, loc, vector, address, bytes);
  if (groups)
    load.setAccessGroupsAttr(groups);
  SmallVector<Value> elements;
  for (unsigned j = 0; j < width; ++j) {
    Value lane =
        LLVM::ExtractElementOp::create(b, loc, load, constantI32(b, loc, j));
    elements.push_back(
        stored == type ? lane : arith::BitcastOp::create(b, loc, type, lane));
  }
  return elements;
}

/// Stores `elements` from `address` on: one element store, or one vector
/// store aligned to its size.
void storePack(OpBuilder &b, Location loc, ArrayRef<Value> elements,
               Value address, ArrayAttr groups) {
  if (elements.size() == 1)
    return storeElement(b, loc, elements.front(), address, groups);
  Type stored = memoryType(elements.front().getType());
  auto vector = VectorType::get({int64_t(elements.size())}, stored);
  Value pack = LLVM::PoisonOp::create(b, loc, vector);
  for (auto [j, element] : llvm::enumerate(elements)) {
    Value v = element.getType() == stored
                  ? element
                  : arith::BitcastOp::create(b, loc, stored, element);
    pack = LLVM::InsertElementOp::create(b, loc, pack, v,
                                         constantI32(b, loc, int32_t(j)));
  }
  unsigned bytes = elements.size() * stored.getIntOrFloatBitWidth() / 8;
  auto store = LLVM::StoreOp::create(b, loc, pack, address, bytes);
  if (groups)
    store.setAccessGroupsAttr(groups);
}

/// `acc` combined with the reduced value `v`: the largest |v| so far, as
/// the bits of a non-negative f32 (whose unsigned order is the floats'
/// order, with NaN above infinity, so NaN wins).
Value combineAbsMax(OpBuilder &b, Location loc, Value acc, Value v) {
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(),
                                        math::AbsFOp::create(b, loc, v));
  return LLVM::UMaxOp::create(b, loc, acc, bits);
}
} // namespace

KernelBodyEmitter::KernelBodyEmitter(kernel::GenericOp generic,
                                     ArrayRef<Value> bases,
                                     const kernel::GenericSegment &segment)
    : generic(generic), bases(bases), segment(segment),
      ops(generic.getSegmentOps(segment)), uniform(generic.getUniformValues()) {
  if (generic.getRowLength() > 0)
    rowUniform = generic.getRowUniformValues();
  findRowStages();
  columnSums = segmentReductions(kernel::ReductionKind::ColumnSum);
}

SmallVector<std::tuple<Value, Value, Value>>
KernelBodyEmitter::segmentInputs() {
  Block &body = generic.getBody().front();
  SmallVector<std::tuple<Value, Value, Value>> inputs;
  for (unsigned i = segment.inputBegin; i < segment.inputEnd; ++i)
    inputs.push_back({body.getArgument(i), generic.getInputs()[i], bases[i]});
  return inputs;
}

SmallVector<std::tuple<Value, Value, Value>>
KernelBodyEmitter::segmentOutputs() {
  auto yield = cast<kernel::YieldOp>(generic.getBody().front().getTerminator());
  unsigned numInputs = generic.getInputs().size();
  SmallVector<std::tuple<Value, Value, Value>> outputs;
  for (unsigned i = segment.outputBegin; i < segment.outputEnd; ++i)
    outputs.push_back(
        {yield.getValues()[i], generic.getOutputs()[i], bases[numInputs + i]});
  return outputs;
}

SmallVector<std::pair<Value, Value>>
KernelBodyEmitter::segmentReductions(kernel::ReductionKind kind) {
  auto yield = cast<kernel::YieldOp>(generic.getBody().front().getTerminator());
  unsigned numOutputs = generic.getOutputs().size();
  // The buffers' addresses: inputs, outputs, the workspace, reductions.
  unsigned first = generic.getInputs().size() + numOutputs +
                   (generic.getWorkspace() ? 1 : 0);
  SmallVector<std::pair<Value, Value>> reductions;
  for (unsigned i = segment.reductionBegin; i < segment.reductionEnd; ++i)
    if (cast<kernel::ReductionKindAttr>(generic.getReductionKinds()[i])
            .getValue() == kind)
      reductions.push_back(
          {yield.getValues()[numOutputs + i], bases[first + i]});
  return reductions;
}

SmallVector<Value> KernelBodyEmitter::getReductionBases() {
  return llvm::map_to_vector(segmentReductions(kernel::ReductionKind::AbsMax),
                             [](auto &reduction) { return reduction.second; });
}

Type KernelBodyEmitter::getColumnSumType() {
  return columnSums.empty() ? Type() : columnSums.front().first.getType();
}

Value KernelBodyEmitter::getWorkspaceBase() {
  if (!generic.getWorkspace())
    return {};
  return bases[generic.getInputs().size() + generic.getOutputs().size()];
}

SmallVector<Value> KernelBodyEmitter::getColumnSumBases() {
  return llvm::map_to_vector(columnSums,
                             [](auto &reduction) { return reduction.second; });
}

Value KernelBodyEmitter::partialAddress(OpBuilder &b, Value block, unsigned k,
                                        Value column) {
  Location loc = generic.getLoc();
  IndexMath m{b, loc};
  int64_t columns = generic.getRowLength();
  Value row =
      m.add(m.mul(block, m.c(int64_t(columnSums.size()))), m.c(int64_t(k)));
  return elementAddress(b, loc, getWorkspaceBase(), getColumnSumType(),
                        m.add(m.mul(row, m.c(columns)), column));
}

Value KernelBodyEmitter::firstRowOfBlock(OpBuilder &b, Value block) {
  Location loc = generic.getLoc();
  IndexMath m{b, loc};
  int64_t rows = generic.getNumElements() / generic.getRowLength();
  return LLVM::SDivOp::create(b, loc, m.mul(block, m.c(rows)),
                              m.c(generic.getColumnSumBlocks()));
}

void KernelBodyEmitter::zeroColumnSums(OpBuilder &b, Value column,
                                       unsigned width, ArrayAttr groups) {
  Location loc = generic.getLoc();
  Value zero =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(getColumnSumType(), 0));
  for (unsigned k = 0, e = columnSums.size(); k < e; ++k)
    storePack(b, loc, SmallVector<Value>(width, zero),
              partialAddress(b, columnSumBlock, k, column), groups);
}

void KernelBodyEmitter::addToColumnSums(OpBuilder &b, Value column,
                                        MutableArrayRef<IRMapping> lanes,
                                        ArrayAttr groups) {
  Location loc = generic.getLoc();
  // The pack's partials, one vector access each way (the workspace's rows
  // of C are aligned as the pack's elements are); a row block's partials
  // are its own, each column's added to by one thread.
  for (auto [k, sum] : llvm::enumerate(columnSums)) {
    Value address = partialAddress(b, columnSumBlock, k, column);
    SmallVector<Value> partials =
        loadPack(b, loc, sum.first.getType(), address, lanes.size(), groups);
    for (auto [partial, lane] : llvm::zip_equal(partials, lanes))
      partial = arith::AddFOp::create(b, loc, partial,
                                      lane.lookupOrDefault(sum.first));
    storePack(b, loc, partials, address, groups);
  }
}

SmallVector<Type> KernelBodyEmitter::getTransposedTypes() {
  SmallVector<Type> types;
  for (auto [value, out, base] : segmentOutputs())
    if (generic.isTransposed(out))
      types.push_back(cast<MemRefType>(out.getType()).getElementType());
  return types;
}

SmallVector<Value> KernelBodyEmitter::getTransposedBases() {
  SmallVector<Value> transposed;
  for (auto [value, out, base] : segmentOutputs())
    if (generic.isTransposed(out))
      transposed.push_back(base);
  return transposed;
}

void KernelBodyEmitter::emitUniform(OpBuilder &b, Value first) {
  Location loc = generic.getLoc();
  for (auto [arg, buffer, base] : segmentInputs())
    if (generic.isBroadcast(buffer))
      map.map(arg, loadElement(b, loc, arg.getType(), base, {}));
  for (Operation &op : generic.getBody().front().without_terminator())
    if (runs(op) && llvm::all_of(op.getResults(),
                                 [&](Value v) { return uniform.contains(v); }))
      b.clone(op, map);
  // The broadcast outputs, by whoever runs index 0.
  SmallVector<std::tuple<Value, Value, Value>> outputs = segmentOutputs();
  if (llvm::none_of(outputs, [&](auto &output) {
        return generic.isBroadcast(std::get<1>(output));
      }))
    return;
  emitIf(b, loc, first, [&] {
    for (auto [value, buffer, base] : outputs)
      if (generic.isBroadcast(buffer))
        storeElement(b, loc, map.lookupOrDefault(value), base, {});
  });
}

SmallVector<Value> KernelBodyEmitter::startAccumulators(OpBuilder &b) {
  return SmallVector<Value>(
      segmentReductions(kernel::ReductionKind::AbsMax).size(),
      constantI32(b, generic.getLoc(), 0));
}

namespace {
/// `expr` (of d0, bounded by the verifier: divisions of non-negative values
/// by positive constants) at d0 = `index`, in i64.
Value emitIndexExpr(IndexMath &m, AffineExpr expr, Value index) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return m.c(c.getValue());
  if (isa<AffineDimExpr>(expr))
    return index;
  auto binary = cast<AffineBinaryOpExpr>(expr);
  Value lhs = emitIndexExpr(m, binary.getLHS(), index);
  Value rhs = emitIndexExpr(m, binary.getRHS(), index);
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return m.add(lhs, rhs);
  case AffineExprKind::Mul:
    return m.mul(lhs, rhs);
  case AffineExprKind::Mod:
    return LLVM::URemOp::create(m.b, m.loc, lhs, rhs);
  case AffineExprKind::FloorDiv:
    return LLVM::UDivOp::create(m.b, m.loc, lhs, rhs);
  default: // CeilDiv
    return LLVM::UDivOp::create(m.b, m.loc, m.sub(m.add(lhs, rhs), m.c(1)),
                                rhs);
  }
}
} // namespace

void KernelBodyEmitter::loadMappedInput(OpBuilder &b, Value arg, Value base,
                                        Value index, ArrayAttr groups,
                                        MutableArrayRef<IRMapping> lanes) {
  Location loc = generic.getLoc();
  IndexMath m{b, loc};
  AffineExpr expr =
      generic.getInputMap(cast<BlockArgument>(arg).getArgNumber()).getResult(0);
  // Element by element: a map need not keep a pack's elements together
  // (LLVM joins the loads that are adjacent).
  for (auto [j, lane] : llvm::enumerate(lanes)) {
    Value at = emitIndexExpr(m, expr, m.add(index, m.c(int64_t(j))));
    lane.map(arg, loadElement(b, loc, arg.getType(),
                              elementAddress(b, loc, base, arg.getType(), at),
                              groups));
  }
}

void KernelBodyEmitter::loadInputs(OpBuilder &b, Value index, Value column,
                                   unsigned width, ArrayAttr groups,
                                   MutableArrayRef<IRMapping> lanes,
                                   function_ref<bool(Value)> needed) {
  Location loc = generic.getLoc();
  for (auto [arg, buffer, base] : segmentInputs()) {
    unsigned number = cast<BlockArgument>(arg).getArgNumber();
    // A per-row input is the row's (beginRow).
    if (generic.isBroadcast(buffer) || generic.isPerRowInput(number) ||
        !needed(arg))
      continue;
    if (generic.isMapped(number)) {
      loadMappedInput(b, arg, base, index, groups, lanes.take_front(width));
      continue;
    }
    Value at = generic.isPerColumn(buffer) ? column : index;
    SmallVector<Value> elements = loadPack(
        b, loc, arg.getType(), elementAddress(b, loc, base, arg.getType(), at),
        width, groups);
    for (unsigned j = 0; j < width; ++j)
      lanes[j].map(arg, elements[j]);
  }
}

void KernelBodyEmitter::findRowStages() {
  DenseMap<Operation *, int64_t> passes = generic.getRowReductionPasses();
  for (Operation &op : generic.getBody().front().without_terminator()) {
    if (!runs(op) || !kernel::isRowReduction(&op))
      continue;
    // The reduced value's slice, down to values the same over the row.
    RowStage slice;
    SmallVector<Value> worklist = {op.getOperand(0)};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      if (rowUniform.contains(v))
        continue;
      Operation *def = v.getDefiningOp();
      if (!def) {
        slice.args.insert(v);
        continue;
      }
      if (slice.ops.insert(def).second)
        llvm::append_range(worklist, def->getOperands());
    }
    size_t stage = passes.lookup(&op) - 1;
    if (rowStages.size() <= stage)
      rowStages.resize(stage + 1);
    RowStage &into = rowStages[stage];
    into.reductions.push_back(&op);
    into.ops.insert(slice.ops.begin(), slice.ops.end());
    into.args.insert(slice.args.begin(), slice.args.end());
  }
  // A pass only reductions the segment does not run would take.
  llvm::erase_if(rowStages,
                 [](const RowStage &s) { return s.reductions.empty(); });
}

void titan::expandRowLogSumExps(kernel::GenericOp generic) {
  SmallVector<kernel::RowLogSumExpOp> ops(
      generic.getBody().front().getOps<kernel::RowLogSumExpOp>());
  for (kernel::RowLogSumExpOp op : ops) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value x = op.getValue();
    Value max = kernel::RowMaxOp::create(b, loc, x.getType(), x);
    // A -inf element adds 0 (exp's polynomial clamps its argument), as on
    // a GPU: a row of -inf gives -inf, as torch.logsumexp does.
    Type type = x.getType();
    Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 0.0));
    Value negInf = arith::ConstantOp::create(
        b, loc, b.getFloatAttr(type, -std::numeric_limits<double>::infinity()));
    Value none =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, negInf);
    Value shifted = arith::SelectOp::create(
        b, loc, none, zero,
        math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, max)));
    Value sum = kernel::RowSumOp::create(b, loc, x.getType(), shifted);
    op.replaceAllUsesWith(
        arith::AddFOp::create(b, loc, max, math::LogOp::create(b, loc, sum))
            .getResult());
    op.erase();
  }
}

double KernelBodyEmitter::rowIdentity(Operation *reduction) {
  // A log-sum-exp starts from the max of nothing (and a sum of 0).
  return isa<kernel::RowMaxOp, kernel::RowLogSumExpOp>(reduction)
             ? -std::numeric_limits<double>::infinity()
             : 0.0;
}

SmallVector<Value> KernelBodyEmitter::startRowReductions(OpBuilder &b,
                                                         unsigned stage) {
  return llvm::map_to_vector(
      rowStages[stage].reductions, [&](Operation *op) -> Value {
        return arith::ConstantOp::create(
            b, generic.getLoc(),
            b.getFloatAttr(op->getResult(0).getType(), rowIdentity(op)));
      });
}

Value KernelBodyEmitter::combineRow(OpBuilder &b, Location loc,
                                    Operation *reduction, Value acc, Value v) {
  assert(!isa<kernel::RowLogSumExpOp>(reduction) &&
         "a log-sum-exp is a pair on a GPU, expanded on the host");
  if (isa<kernel::RowMaxOp>(reduction))
    return arith::MaximumFOp::create(b, loc, acc, v);
  return arith::AddFOp::create(b, loc, acc, v);
}

void KernelBodyEmitter::emitRowValues(OpBuilder &b) {
  for (Operation &op : generic.getBody().front().without_terminator()) {
    if (!runs(op) || kernel::isRowReduction(&op) || op.getNumResults() == 0 ||
        !rowUniform.contains(op.getResult(0)) || map.contains(op.getResult(0)))
      continue;
    if (!llvm::all_of(op.getOperands(),
                      [&](Value v) { return map.contains(v); }))
      continue;
    b.clone(op, map);
    llvm::append_range(rowValues, op.getResults());
  }
}

void KernelBodyEmitter::beginRow(OpBuilder &b, Value row) {
  for (Value v : rowValues)
    map.erase(v);
  rowValues.clear();
  for (auto [arg, buffer, base] : segmentInputs())
    if (!generic.isBroadcast(buffer) &&
        generic.isPerRowInput(cast<BlockArgument>(arg).getArgNumber())) {
      map.map(arg, loadElement(b, generic.getLoc(), arg.getType(),
                               elementAddress(b, generic.getLoc(), base,
                                              arg.getType(), row),
                               {}));
      rowValues.push_back(arg);
    }
  emitRowValues(b);
}

SmallVector<SmallVector<Value>>
KernelBodyEmitter::emitRowReductionValues(OpBuilder &b, unsigned stage,
                                          Value index, Value column,
                                          unsigned width, ArrayAttr groups) {
  RowStage &slice = rowStages[stage];
  SmallVector<IRMapping> lanes(width, map);
  loadInputs(b, index, column, width, groups, lanes,
             [&](Value arg) { return slice.args.contains(arg); });
  IndexMath m{b, generic.getLoc()};
  for (auto op : generic.getBody().front().getOps<kernel::ColumnOp>())
    for (auto [j, lane] : llvm::enumerate(lanes))
      lane.map(op.getResult(), m.add(column, m.c(int64_t(j))));
  for (IRMapping &lane : lanes)
    for (Operation &op : generic.getBody().front().without_terminator())
      if (slice.ops.contains(&op) && !isa<kernel::ColumnOp>(op))
        b.clone(op, lane);
  SmallVector<SmallVector<Value>> values;
  for (Operation *reduction : slice.reductions)
    values.push_back(llvm::map_to_vector(lanes, [&](IRMapping &lane) {
      return lane.lookupOrDefault(reduction->getOperand(0));
    }));
  return values;
}

namespace {
/// `v` (a scalar) in every lane of a vector of `lanes`.
Value splat(OpBuilder &b, Location loc, Value v, unsigned lanes) {
  auto type = VectorType::get({int64_t(lanes)}, v.getType());
  Value one = LLVM::InsertElementOp::create(
      b, loc, LLVM::PoisonOp::create(b, loc, type), v, constantI32(b, loc, 0));
  return LLVM::ShuffleVectorOp::create(b, loc, one, one,
                                       SmallVector<int32_t>(lanes, 0));
}

/// column, column + 1, ..., column + lanes - 1 (i64).
Value columnVector(OpBuilder &b, Location loc, Value column, unsigned lanes) {
  auto type = VectorType::get({int64_t(lanes)}, b.getI64Type());
  SmallVector<int64_t> steps(lanes);
  for (unsigned j = 0; j < lanes; ++j)
    steps[j] = j;
  Value iota = LLVM::ConstantOp::create(
      b, loc, type, DenseElementsAttr::get(type, ArrayRef<int64_t>(steps)));
  return LLVM::AddOp::create(b, loc, splat(b, loc, column, lanes), iota);
}
} // namespace

SmallVector<Value> KernelBodyEmitter::emitRowReductionVectors(
    OpBuilder &b, unsigned stage, Value index, Value column, unsigned lanes) {
  Location loc = generic.getLoc();
  RowStage &slice = rowStages[stage];
  // Ops whose vector forms lower as their scalar ones do, lane by lane:
  // arith's and math's (exp's polynomial on vectors too, through the
  // vector dialect). Otherwise the chunk's elements one by one, gathered
  // into vectors.
  if (llvm::any_of(slice.ops, [](Operation *op) {
        return !isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) &&
               !isa<kernel::ColumnOp>(op);
      })) {
    SmallVector<Value> chunks;
    for (Operation *reduction : slice.reductions)
      chunks.push_back(LLVM::PoisonOp::create(
          b, loc,
          VectorType::get({int64_t(lanes)},
                          reduction->getResult(0).getType())));
    for (unsigned j = 0; j < lanes; ++j) {
      Value lane = constantI64(b, loc, j);
      for (auto [k, v] : llvm::enumerate(emitRowReductionValues(
               b, stage, LLVM::AddOp::create(b, loc, index, lane),
               LLVM::AddOp::create(b, loc, column, lane), 1, {})))
        chunks[k] = LLVM::InsertElementOp::create(b, loc, chunks[k], v[0],
                                                  constantI32(b, loc, j));
    }
    return chunks;
  }
  IRMapping vectors;
  for (auto [arg, buffer, base] : segmentInputs()) {
    if (!slice.args.contains(arg))
      continue;
    Value at = generic.isPerColumn(buffer) ? column : index;
    Type stored = memoryType(arg.getType());
    Value load =
        LLVM::LoadOp::create(b, loc, VectorType::get({int64_t(lanes)}, stored),
                             elementAddress(b, loc, base, arg.getType(), at),
                             stored.getIntOrFloatBitWidth() / 8);
    if (stored != arg.getType())
      load = arith::BitcastOp::create(
          b, loc, VectorType::get({int64_t(lanes)}, arg.getType()), load);
    vectors.map(arg, load);
  }
  // Each op again on vectors; a value the same over the row (computed once,
  // before the loops) is splat.
  for (Operation &op : generic.getBody().front().without_terminator()) {
    if (!slice.ops.contains(&op))
      continue;
    if (isa<kernel::ColumnOp>(op)) {
      vectors.map(op.getResult(0), columnVector(b, loc, column, lanes));
      continue;
    }
    OperationState state(op.getLoc(), op.getName());
    for (Value operand : op.getOperands())
      state.addOperands(vectors.contains(operand)
                            ? vectors.lookup(operand)
                            : splat(b, loc, map.lookup(operand), lanes));
    for (Type t : op.getResultTypes())
      state.addTypes(VectorType::get({int64_t(lanes)}, t));
    state.addAttributes(op.getAttrs());
    Operation *vectorOp = b.create(state);
    for (auto [from, to] :
         llvm::zip_equal(op.getResults(), vectorOp->getResults()))
      vectors.map(from, to);
  }
  // A reduced value the same over the row (a reduction of another) is
  // splat.
  return llvm::map_to_vector(slice.reductions, [&](Operation *reduction) {
    Value v = reduction->getOperand(0);
    return vectors.contains(v) ? vectors.lookup(v)
                               : splat(b, loc, map.lookup(v), lanes);
  });
}

void KernelBodyEmitter::setRowReductions(OpBuilder &b, unsigned stage,
                                         ValueRange values) {
  for (auto [op, value] :
       llvm::zip_equal(rowStages[stage].reductions, values)) {
    map.map(op->getResult(0), value);
    rowValues.push_back(op->getResult(0));
  }
  emitRowValues(b);
}

void KernelBodyEmitter::storeRowOutputs(OpBuilder &b, Value row) {
  Location loc = generic.getLoc();
  for (auto [value, buffer, base] : segmentOutputs())
    if (generic.isPerRowOutput(buffer))
      storeElement(b, loc, map.lookupOrDefault(value),
                   elementAddress(b, loc, base, value.getType(), row), {});
}

SmallVector<Value>
KernelBodyEmitter::emitPack(OpBuilder &b, Value index, unsigned width,
                            ValueRange accumulators, ArrayAttr groups,
                            TransposedStore transposed, Value column) {
  Location loc = generic.getLoc();
  auto packAddress = [&](Value base, Type element) {
    return elementAddress(b, loc, base, element, index);
  };
  // lanes[j]: element j of the pack, per body value (the row sums are the
  // row's, from setRowReductions).
  SmallVector<IRMapping> lanes(width, map);
  loadInputs(b, index, column, width, groups, lanes,
             [](Value) { return true; });
  IndexMath m{b, loc};
  for (auto op : generic.getBody().front().getOps<kernel::IndexOp>())
    for (auto [j, lane] : llvm::enumerate(lanes))
      lane.map(op.getResult(), m.add(index, m.c(int64_t(j))));
  for (auto op : generic.getBody().front().getOps<kernel::ColumnOp>())
    for (auto [j, lane] : llvm::enumerate(lanes))
      lane.map(op.getResult(), m.add(column, m.c(int64_t(j))));
  // What is the same at every index, or over the row, is in `map` already.
  for (IRMapping &lane : lanes)
    for (Operation &op : generic.getBody().front().without_terminator())
      if (runs(op) && !kernel::isRowReduction(&op) &&
          !isa<kernel::IndexOp, kernel::ColumnOp>(op) &&
          !llvm::all_of(op.getResults(),
                        [&](Value v) { return map.contains(v); }))
        b.clone(op, lane);
  unsigned transposedNumber = 0;
  for (auto [value, buffer, base] : segmentOutputs()) {
    if (generic.isBroadcast(buffer) || generic.isPerRowOutput(buffer))
      continue;
    SmallVector<Value> elements = llvm::map_to_vector(
        lanes, [&](IRMapping &lane) { return lane.lookupOrDefault(value); });
    if (generic.isTransposed(buffer)) {
      assert(transposed && width == 1 && "a transposed output needs tiles");
      transposed(b, transposedNumber++, elements.front());
      continue;
    }
    storePack(b, loc, elements, packAddress(base, elements.front().getType()),
              groups);
  }
  if (!columnSums.empty())
    addToColumnSums(b, column, lanes, groups);
  SmallVector<Value> combined;
  for (auto [reduction, acc] : llvm::zip_equal(
           segmentReductions(kernel::ReductionKind::AbsMax), accumulators)) {
    Value c = acc;
    for (IRMapping &lane : lanes)
      c = combineAbsMax(b, loc, c, lane.lookupOrDefault(reduction.first));
    combined.push_back(c);
  }
  return combined;
}
