//===- GeneratePointwise.cpp - pointwise calls as fused generated kernels -===//
//
// kernel.call "silu"(...) ... kernel.call "mul"(...)  ==>  one kernel.generic
// whose body is titan.silu's and titan.mul's scalar semantics (see
// Passes.td for when producers fuse).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Kernel/IR/IndexMaps.h"
#include "titan/Dialect/Kernel/Transforms/BufferAccess.h"
#include "titan/Dialect/Kernel/Transforms/CollectiveOverlap.h"
#include "titan/Dialect/Kernel/Transforms/JoinedBody.h"
#include "titan/Dialect/Kernel/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/Dtype.h"
#include "titan/Dialect/Titan/IR/PointwiseInterface.h"
#include "titan/Dialect/Titan/IR/RowwiseInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/CSE.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace titan::kernel {
#define GEN_PASS_DEF_KERNELGENERATEPOINTWISE
#include "titan/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace titan::kernel

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

namespace {

Type elementTypeOf(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getElementType();
}

/// `v` in type `to` (both floats): widened exactly or rounded to nearest
/// even.
Value convertFloat(OpBuilder &b, Location loc, Value v, Type to) {
  unsigned from = v.getType().getIntOrFloatBitWidth();
  unsigned width = to.getIntOrFloatBitWidth();
  if (v.getType() == to)
    return v;
  // bf16 and f16 are both 16 bits wide and convert through f32.
  if (from == width) {
    v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    return arith::TruncFOp::create(b, loc, to, v);
  }
  if (from < width)
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

//===----------------------------------------------------------------------===//
// Calls -> generated kernels
//===----------------------------------------------------------------------===//

int64_t elementCount(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getNumElements();
}

/// Whether buffers `inputs` and `outputs` fit a kernel.generic: each has
/// the largest's element count or one element (a broadcast input; an
/// output that small would be written once, so only a kernel of one
/// element has it).
bool hasGenericShape(ValueRange inputs, ValueRange outputs) {
  int64_t elements = 0;
  for (Value v : llvm::concat<Value>(inputs, outputs))
    elements = std::max(elements, elementCount(v));
  return llvm::all_of(inputs,
                      [&](Value v) {
                        return elementCount(v) == elements ||
                               elementCount(v) == 1;
                      }) &&
         llvm::all_of(outputs,
                      [&](Value v) { return elementCount(v) == elements; });
}

/// The type a call's scalar body computes in: that of its buffers, but for
/// float8 ones, which the op's body takes and produces as float8 values
/// itself (f32 when all are: the body only moves them), and integer ones
/// (labels), which it takes as they are.
std::optional<FloatType> computeType(MLIRContext *ctx, ValueRange inputs,
                                     ValueRange outputs) {
  SmallVector<Type> types;
  for (Value v : llvm::concat<Value>(inputs, outputs))
    if (Type t = elementTypeOf(v); isa<FloatType>(t) && !isFloat8Type(t))
      types.push_back(t);
  if (types.empty())
    return Float32Type::get(ctx);
  return pointwiseComputeType(types);
}

/// Whether the body only moves its float8 arguments to its yield: LLVM has
/// no float8 arithmetic, so a body computing on one (a cast from float8)
/// stays a library call.
bool movesFloat8Only(Block &body) {
  return llvm::all_of(body.getArguments(), [](BlockArgument arg) {
    return !isFloat8Type(arg.getType()) ||
           llvm::all_of(arg.getUsers(),
                        [](Operation *user) { return isa<YieldOp>(user); });
  });
}

/// The kernel inputs of `call` and their maps: its element reads (each a
/// buffer under a map the verifier can bound, writing no output), or each
/// input at the index. Nothing when a read cannot be generated.
std::optional<std::pair<SmallVector<Value>, SmallVector<AffineMap>>>
kernelInputs(const PointwiseOpInterface::Concept *semantics, CallOp call,
             CallShapes shapes) {
  SmallVector<std::pair<unsigned, AffineMap>> reads =
      semantics->getElementReads(call.getContext(), call.getParams().getValue(),
                                 shapes);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  if (reads.empty()) {
    inputs.assign(call.getInputs().begin(), call.getInputs().end());
    return std::make_pair(inputs, maps);
  }
  int64_t elements = 0;
  for (Value out : call.getOutputs())
    elements = std::max(elements, elementCount(out));
  for (auto [operand, map] : reads) {
    if (operand >= call.getInputs().size())
      return std::nullopt;
    Value input = call.getInputs()[operand];
    // An identity read of one element is a broadcast (a 0-d gradient).
    bool broadcast = map.isIdentity() && elementCount(input) == 1;
    if ((!broadcast && !mapStaysInside(map, elements, elementCount(input))) ||
        (!map.isIdentity() && llvm::any_of(call.getOutputs(), [&](Value out) {
          return viewedBuffer(out) == viewedBuffer(input);
        })))
      return std::nullopt;
    inputs.push_back(input);
    maps.push_back(map);
  }
  return std::make_pair(inputs, maps);
}

/// The generated kernel for `call` when its kernel is a pointwise op (with
/// its parameters) on buffers and types the generator handles, else null.
/// The op's absmax results become the kernel's reductions.
GenericOp generateCall(CallOp call) {
  MLIRContext *ctx = call.getContext();
  const PointwiseOpInterface::Concept *semantics =
      lookupPointwiseSemantics(ctx, ("titan." + call.getKernel()).str());
  if (!semantics)
    return nullptr;
  auto shapesOf = [](ValueRange buffers) {
    return llvm::map_to_vector(buffers, [](Value v) {
      return cast<MemRefType>(v.getType()).getShape();
    });
  };
  SmallVector<ArrayRef<int64_t>> inputShapes = shapesOf(call.getInputs()),
                                 outputShapes = shapesOf(call.getOutputs());
  CallShapes shapes{inputShapes, outputShapes};
  auto kernelReads = kernelInputs(semantics, call, shapes);
  if (!kernelReads)
    return nullptr;
  auto &[inputs, maps] = *kernelReads;
  // The lowerings address elements by whole bytes: no i1 labels.
  if (llvm::any_of(inputs, [](Value v) {
        Type t = elementTypeOf(v);
        return isa<IntegerType>(t) && t.getIntOrFloatBitWidth() < 8;
      }))
    return nullptr;
  ArrayRef<Attribute> params = call.getParams().getValue();
  unsigned reduced = semantics->getNumAbsMaxResults(params);
  if (reduced > call.getOutputs().size())
    return nullptr;
  ValueRange outputs = call.getOutputs().drop_back(reduced);
  ValueRange reductions = call.getOutputs().take_back(reduced);
  // Element reads are bounded by their maps: only the outputs size them.
  if (!hasGenericShape(maps.empty() ? ValueRange(call.getInputs())
                                    : ValueRange(),
                       outputs) ||
      !llvm::all_of(reductions, [](Value v) {
        return elementCount(v) == 1 && elementTypeOf(v).isF32();
      }))
    return nullptr;
  std::optional<FloatType> compute =
      computeType(ctx, call.getInputs(), outputs);
  if (!compute)
    return nullptr;

  // A transposed result: every output, the operands' last dimension
  // leading it.
  SmallVector<int64_t> transposed;
  if (semantics->writesTransposed(params)) {
    if (call.getInputs().empty())
      return nullptr;
    auto in = cast<MemRefType>(call.getInputs().front().getType());
    for (auto [i, out] : llvm::enumerate(outputs)) {
      auto type = cast<MemRefType>(out.getType());
      if (in.getRank() < 2 || type.getRank() < 2 ||
          type.getDimSize(0) != in.getShape().back())
        return nullptr;
      transposed.push_back(i);
    }
  }

  OpBuilder b(call);
  Location loc = call.getLoc();
  SmallVector<Attribute> kinds(
      reduced, ReductionKindAttr::get(ctx, ReductionKind::AbsMax));
  if (!maps.empty() && !transposed.empty())
    return nullptr;
  auto generic = GenericOp::create(b, loc, inputs, outputs, reductions,
                                   call.getStream(), b.getArrayAttr(kinds),
                                   b.getDenseI64ArrayAttr(transposed));
  if (!maps.empty())
    generic.setInputMapsAttr(b.getAffineMapArrayAttr(maps));
  Block *body = b.createBlock(&generic.getBody());
  SmallVector<Value> operands;
  for (Value input : inputs) {
    Value element = body->addArgument(elementTypeOf(input), loc);
    Type type = element.getType();
    operands.push_back(!isa<FloatType>(type) || isFloat8Type(type)
                           ? element
                           : convertFloat(b, loc, element, *compute));
  }
  SmallVector<Value> results =
      maps.empty()
          ? semantics->buildScalar(b, loc, operands, params)
          : semantics->buildIndexedScalar(
                b, loc, operands, IndexOp::create(b, loc, b.getI64Type()),
                params, shapes);
  SmallVector<Value> rounded;
  for (auto [result, output] : llvm::zip(results, call.getOutputs())) {
    // A float8 result comes as its float8 value.
    Type element = elementTypeOf(output);
    if (isFloat8Type(element) && result.getType() != element)
      break;
    rounded.push_back(convertFloat(b, loc, result, element));
  }
  if (results.empty() || rounded.size() != call.getOutputs().size()) {
    generic.erase();
    return nullptr;
  }
  YieldOp::create(b, loc, rounded);
  if (!movesFloat8Only(*body)) {
    generic.erase();
    return nullptr;
  }
  return generic;
}

/// Erases the kernel.allocs and views `buffers` come from (through views)
/// that nothing uses any more, the views first.
void eraseIfUnused(ArrayRef<Value> buffers) {
  SetVector<Operation *> chain;
  for (Value v : buffers)
    while (Operation *def = v ? v.getDefiningOp() : nullptr) {
      if (!isa<AllocOp, ViewOp>(def))
        break;
      chain.insert(def);
      auto view = dyn_cast<ViewOp>(def);
      v = view ? view.getSource() : Value();
    }
  SmallVector<Operation *> ops(chain.begin(), chain.end());
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation *&def : ops)
      if (def && def->use_empty()) {
        def->erase();
        def = nullptr;
        erased = true;
      }
  }
}

/// A pointwise kernel at the builder writing `from` rounded to `to`'s
/// element type (a column sum's total to its result).
void emitRounding(OpBuilder &b, Location loc, Value from, Value to,
                  Value stream) {
  auto round =
      GenericOp::create(b, loc, ValueRange{from}, ValueRange{to}, stream);
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&round.getBody());
  Value element = body->addArgument(elementTypeOf(from), loc);
  YieldOp::create(b, loc, convertFloat(b, loc, element, elementTypeOf(to)));
}

/// The fewest rows a column sum's row block takes when there are enough:
/// f32 partials of blocks of one bf16 row would move twice the row's bytes
/// (a 405B sequence-parallel norm has 512 rows a rank; 128 blocks, not
/// 512, keep its partials at half its input).
constexpr int64_t kMinBlockRows = 4;

/// The kernel at the builder writing into `result` (one element) the mean
/// of `values` (the rows' values of a mean result): a row kernel of one
/// row, the sum in f64 in the target's fixed order, divided by the count
/// and rounded once.
void emitMean(OpBuilder &b, Location loc, Value values, Value result,
              Value stream) {
  int64_t count = elementCount(values);
  auto mean =
      GenericOp::create(b, loc, ValueRange{values}, ValueRange{result}, stream);
  mean.setRowLength(count);
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&mean.getBody());
  Value v = convertFloat(b, loc, body->addArgument(elementTypeOf(values), loc),
                         b.getF64Type());
  Value sum = RowSumOp::create(b, loc, v.getType(), v);
  Value total = arith::DivFOp::create(
      b, loc, sum,
      arith::ConstantOp::create(b, loc, b.getF64FloatAttr(double(count))));
  YieldOp::create(b, loc, convertFloat(b, loc, total, elementTypeOf(result)));
}

/// How a row op's call's buffers meet its rows: the row length C, the
/// elements N, and the operands and results of one element per column,
/// per row, or (mean results) one.
struct RowCallShape {
  int64_t columns, elements;
  SmallVector<unsigned> columnOperands, rowOperands, columnSums, rowResults,
      meanResults;

  /// The element count operand or result `i` must have.
  int64_t operandElements(unsigned i) const {
    if (llvm::is_contained(columnOperands, i))
      return columns;
    return llvm::is_contained(rowOperands, i) ? elements / columns : elements;
  }
  int64_t resultElements(unsigned i) const {
    if (llvm::is_contained(columnSums, i))
      return columns;
    if (llvm::is_contained(rowResults, i))
      return elements / columns;
    return llvm::is_contained(meanResults, i) ? 1 : elements;
  }
};

/// The shape of `call`'s row op `semantics` when its buffers have it: rows
/// of the first input's last dimension, or of one column when every
/// operand is a row's (loss parallel's loss from its statistics). A
/// one-element operand is broadcast (a vocabulary slice's start).
std::optional<RowCallShape>
rowCallShape(const RowwiseOpInterface::Concept *semantics, CallOp call) {
  auto first = cast<MemRefType>(call.getInputs().front().getType());
  SmallVector<unsigned> rowOperands = semantics->getRowOperands();
  bool allRows = llvm::is_contained(rowOperands, 0u);
  if (first.getNumElements() < 1 ||
      (!allRows && (first.getRank() < 1 || first.getShape().back() < 1)))
    return std::nullopt;
  if (allRows)
    rowOperands.clear();
  RowCallShape shape{allRows ? 1 : first.getShape().back(),
                     first.getNumElements(),
                     semantics->getColumnOperands(),
                     rowOperands,
                     semantics->getColumnSumResults(),
                     semantics->getRowResults(),
                     semantics->getMeanResults()};
  for (auto [i, input] : llvm::enumerate(call.getInputs()))
    if (elementCount(input) != shape.operandElements(i) &&
        elementCount(input) != 1)
      return std::nullopt;
  for (auto [i, output] : llvm::enumerate(call.getOutputs()))
    if (isFloat8Type(elementTypeOf(output)) ||
        elementCount(output) != shape.resultElements(i))
      return std::nullopt;
  return shape;
}

/// The row kernel for `call` when its kernel is a row op (RMSNorm and its
/// gradient, the cross-entropy) on buffers and types the generator
/// handles, else null: its rows are the first input's last dimension, its
/// per-column operands and column-sum results have that many elements,
/// its per-row operands and results one a row (a per-row operand read
/// through the map `d0 floordiv C`), and every other buffer as many as
/// the first input. A column-sum result becomes a column_sum reduction in
/// the computation type (into the result, or a temporary rounded into it
/// after the kernel), its partials in a workspace of at most `blocks` row
/// blocks of at least kMinBlockRows rows (one block when there are fewer
/// rows). A mean result's rows' values go to a temporary in the
/// computation type, which a kernel after it averages (emitMean).
GenericOp generateRowCall(CallOp call, int64_t blocks) {
  MLIRContext *ctx = call.getContext();
  const RowwiseOpInterface::Concept *semantics =
      lookupRowwiseSemantics(ctx, ("titan." + call.getKernel()).str());
  if (!semantics || call.getInputs().empty() || call.getOutputs().empty())
    return nullptr;
  std::optional<RowCallShape> shape = rowCallShape(semantics, call);
  std::optional<FloatType> compute =
      computeType(ctx, call.getInputs(), call.getOutputs());
  if (!shape || !compute || llvm::any_of(call.getInputs(), [](Value v) {
        return isFloat8Type(elementTypeOf(v));
      }))
    return nullptr;
  int64_t columns = shape->columns, elements = shape->elements;
  int64_t rows = elements / columns;

  OpBuilder b(call);
  Location loc = call.getLoc();
  // The column sums' buffers: the result, or a total in the computation
  // type to round into it after the kernel; a mean's rows' values.
  SmallVector<Value> outputs, reductions;
  SmallVector<std::pair<Value, Value>> roundings, means;
  for (auto [i, output] : llvm::enumerate(call.getOutputs())) {
    if (llvm::is_contained(shape->meanResults, unsigned(i))) {
      Value values = AllocOp::create(b, loc, MemRefType::get({rows}, *compute),
                                     AllocKind::Temporary, IntegerAttr());
      means.push_back({values, output});
      outputs.push_back(values);
      continue;
    }
    if (!llvm::is_contained(shape->columnSums, unsigned(i))) {
      outputs.push_back(output);
      continue;
    }
    Value total = output;
    if (elementTypeOf(output) != *compute) {
      total = AllocOp::create(b, loc, MemRefType::get({columns}, *compute),
                              AllocKind::Temporary, IntegerAttr());
      roundings.push_back({total, output});
    }
    reductions.push_back(total);
  }
  Value workspace;
  if (!reductions.empty()) {
    int64_t p = std::clamp<int64_t>(blocks, 1,
                                    std::max<int64_t>(1, rows / kMinBlockRows));
    workspace = AllocOp::create(
        b, loc,
        MemRefType::get({p, int64_t(reductions.size()), columns}, *compute),
        AllocKind::Workspace, IntegerAttr());
  }
  SmallVector<Attribute> kinds(
      reductions.size(), ReductionKindAttr::get(ctx, ReductionKind::ColumnSum));
  // Rows of one column reduce nothing: a pointwise kernel, each row's
  // reductions its element, its column 0.
  bool pointwise = columns == 1 && reductions.empty();
  auto generic = GenericOp::create(
      b, loc, call.getInputs(), outputs, workspace, reductions,
      call.getStream(), b.getArrayAttr(kinds), b.getDenseI64ArrayAttr({}),
      b.getDenseI64ArrayAttr({}), b.getI64IntegerAttr(pointwise ? 0 : columns));
  if (!shape->rowOperands.empty() && columns > 1) {
    AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
    AffineMap perRow =
        AffineMap::get(1, 0, getAffineDimExpr(0, ctx).floorDiv(columns));
    SmallVector<AffineMap> maps;
    for (unsigned i = 0, e = call.getInputs().size(); i < e; ++i)
      maps.push_back(llvm::is_contained(shape->rowOperands, i) ? perRow
                                                               : identity);
    generic.setInputMapsAttr(b.getAffineMapArrayAttr(maps));
  }
  auto discard = [&] {
    generic.erase();
    for (Value v :
         llvm::concat<Value>(reductions, outputs, ValueRange(workspace)))
      if (v && !llvm::is_contained(call.getOutputs(), v))
        eraseIfUnused(v);
    return nullptr;
  };
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = b.createBlock(&generic.getBody());
    SmallVector<Value> operands;
    for (Value input : call.getInputs()) {
      Value arg = body->addArgument(elementTypeOf(input), loc);
      operands.push_back(isa<FloatType>(arg.getType())
                             ? convertFloat(b, loc, arg, *compute)
                             : arg);
    }
    auto sum = [&](Value v) -> Value {
      return pointwise ? v : RowSumOp::create(b, loc, v.getType(), v);
    };
    auto max = [&](Value v) -> Value {
      return pointwise ? v : RowMaxOp::create(b, loc, v.getType(), v);
    };
    auto logSumExp = [&](Value v) -> Value {
      return pointwise ? v : RowLogSumExpOp::create(b, loc, v.getType(), v);
    };
    auto column = [&]() -> Value {
      if (pointwise)
        return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0));
      return ColumnOp::create(b, loc, b.getI64Type());
    };
    SmallVector<Value> results = semantics->buildRowScalar(
        b, loc, operands, call.getParams().getValue(), columns,
        RowBuilders{sum, max, logSumExp, column});
    if (results.size() != call.getOutputs().size())
      return discard();
    // The outputs' elements rounded (a mean's rows' values in the
    // computation type), then the column sums' addends.
    SmallVector<Value> yielded, addends;
    for (auto [i, result] : llvm::enumerate(results)) {
      if (llvm::is_contained(shape->columnSums, unsigned(i)))
        addends.push_back(result);
      else
        yielded.push_back(convertFloat(b, loc, result,
                                       elementTypeOf(outputs[yielded.size()])));
    }
    llvm::append_range(yielded, addends);
    YieldOp::create(b, loc, yielded);
  }
  for (auto [total, output] : roundings)
    emitRounding(b, loc, total, output, call.getStream());
  for (auto [values, output] : means)
    emitMean(b, loc, values, output, call.getStream());
  return generic;
}

//===----------------------------------------------------------------------===//
// Producer-consumer fusion
//===----------------------------------------------------------------------===//

/// Whether every use of `buffer`'s memory (through views) is by `a` or
/// `b`.
bool onlyUsedBy(Value buffer, Operation *a, Operation *b) {
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = use.getOwner();
    if (auto view = dyn_cast<ViewOp>(user)) {
      if (!onlyUsedBy(view.getResult(), a, b))
        return false;
      continue;
    }
    if (user != a && user != b)
      return false;
  }
  return true;
}

/// A producer to fuse into a consumer, and where the fused kernel runs:
/// at the consumer's place, or at the producer's when ops between them
/// read the buffer linking them (the producer's results must stay where
/// they are; the consumer moves up).
struct Fusion {
  GenericOp producer;
  bool atProducer = false;
  /// The producer's output the consumer reads: the consumer's input itself,
  /// or a reshape of the same buffer (a view as tokens x features of a
  /// result written as batch x seq x heads x dim).
  Value produced;
};

/// `v`'s buffer when `v` is it or a reshape of it (views without an
/// offset, of one element type: the same elements in the same order).
Value reshapedBuffer(Value v) {
  Type element = cast<MemRefType>(v.getType()).getElementType();
  while (auto view = v.getDefiningOp<ViewOp>()) {
    if (view.getOffset() ||
        cast<MemRefType>(view.getSource().getType()).getElementType() !=
            element)
      return {};
    v = view.getSource();
  }
  return v;
}

/// Whether buffers `a` and `b` hold the same elements in the same order.
bool sameElements(Value a, Value b) {
  if (a == b)
    return true;
  Value root = reshapedBuffer(a);
  return root && root == reshapedBuffer(b) &&
         cast<MemRefType>(a.getType()).getElementType() ==
             cast<MemRefType>(b.getType()).getElementType();
}

class Fuser {
public:
  Fuser(func::FuncOp step, unsigned maxBuffers, unsigned maxHoist)
      : maxBuffers(maxBuffers), maxHoist(maxHoist) {
    step.walk([&](CollectiveStartOp start) {
      collectiveOutputs[viewedBuffer(start.getOutput())] = start;
    });
  }

  /// Fuses producers into `consumer` while one qualifies; returns the
  /// (possibly new) consumer.
  GenericOp fuseProducers(GenericOp consumer) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (Value input : consumer.getInputs())
        if (Fusion fusion = fusableProducer(consumer, input); fusion.producer) {
          consumer = fuse(fusion, consumer, input);
          changed = true;
          break;
        }
    }
    return consumer;
  }

  /// Joins `kernel` with an earlier generated kernel reading the same
  /// tensor (a recomputed activation's cast and its transposed cast, whose
  /// scale the forward computed): one read for both, at the earlier one's
  /// place. Returns the (possibly new) kernel.
  GenericOp fuseSibling(GenericOp kernel) {
    if (!kernel.getSegments().empty())
      return kernel;
    SmallVector<Value> between, betweenReads;
    unsigned distance = 0;
    for (Operation *op = kernel->getPrevNode(); op && distance <= maxHoist;
         op = op->getPrevNode(), ++distance) {
      SmallVector<Value> reads, writes;
      if (!collectAccess(op, reads, writes))
        return kernel;
      auto sibling = dyn_cast<GenericOp>(op);
      if (sibling && isSibling(sibling, kernel) &&
          consumerCanMoveUp(sibling, kernel, Value(), between, betweenReads) &&
          siblingsSafe(sibling, kernel))
        return joinSiblings(sibling, kernel);
      llvm::append_range(between, writes);
      llvm::append_range(betweenReads, reads);
    }
    return kernel;
  }

  /// Recomputes, inside the kernels reading them, the outputs of
  /// `producer` that nothing else reads, when that moves fewer bytes, and
  /// joins those kernels into one. A tensorwise float8 cast needs its
  /// tensor's amax, complete only after the producer's last index, so the
  /// producer of both (SwiGLU's gradients with their amaxes) cannot fuse
  /// with the casts: it wrote both gradients for the casts to read back.
  /// Recomputed from dh, h1 and h3 in one kernel casting both, the
  /// gradients are neither written nor read (4 tensors moved) for one more
  /// read of those three. The producer keeps its reductions and other
  /// outputs. Returns whether it changed the IR.
  bool recomputeInConsumers(GenericOp producer) {
    if (!recomputable(producer))
      return false;
    SmallVector<Recompute> links = recomputedLinks(producer);
    SmallVector<GenericOp> consumers = joinableConsumers(links);
    llvm::erase_if(links, [&](const Recompute &r) {
      return !llvm::is_contained(consumers, r.consumer);
    });
    if (links.empty() || !savesBytes(producer, links, consumers))
      return false;
    // The kernels computing each link from the producer's inputs, fused
    // into its consumer below; checked before anything changes.
    SmallVector<Value> producerReads(producer.getInputs());
    SmallVector<GenericOp> recomputes;
    for (const Recompute &r : links) {
      recomputes.push_back(recomputeOf(producer, r));
      if (!canFuse({recomputes.back(), false, r.link}, r.consumer, r.read,
                   producerReads, {}, {})) {
        for (GenericOp g : recomputes)
          g.erase();
        return false;
      }
    }
    withoutOutputs(producer, llvm::map_to_vector(links, [](const Recompute &r) {
                     return r.link;
                   }));
    DenseMap<Operation *, GenericOp> fused;
    for (auto [r, recompute] : llvm::zip_equal(links, recomputes)) {
      GenericOp consumer = fused.lookup(r.consumer);
      if (!consumer)
        consumer = r.consumer;
      Value read = *llvm::find_if(consumer.getInputs(), [&](Value v) {
        return sameElements(v, r.link);
      });
      GenericOp next = fuse({recompute, false, r.link}, consumer, read);
      eraseDeadBodyOps(next);
      fused[r.consumer] = next;
    }
    GenericOp joined = fused.lookup(consumers.front());
    for (GenericOp consumer : llvm::drop_begin(consumers))
      joined = joinSiblings(joined, fused.lookup(consumer));
    return true;
  }

private:
  /// An output of a producer that one later kernel alone reads.
  struct Recompute {
    Value link;
    GenericOp consumer;
    /// The consumer's input reading `link` (it or a reshape of it).
    Value read;
  };

  /// Whether a kernel computes each element from its inputs' elements at
  /// the same index alone (not by rows, so a map reads across indices),
  /// into outputs it does not read.
  static bool recomputable(GenericOp g) {
    if (!g.getSegments().empty() || g.getRowLength() ||
        !g.getTransposedOutputs().empty() || g.getWorkspace() ||
        g.getNumElements() == 1 || g.readsAcrossIndices())
      return false;
    return llvm::none_of(g.getInputs(), [&](Value in) {
      return llvm::any_of(
          llvm::concat<Value>(g.getOutputs(), g.getReductions()),
          [&](Value out) { return viewedBuffer(out) == viewedBuffer(in); });
    });
  }

  /// The op other than `producer` using `root` (through views), when there
  /// is exactly one.
  static Operation *soleOtherUser(Value root, Operation *producer) {
    Operation *other = nullptr;
    SmallVector<Value> worklist = {root};
    while (!worklist.empty())
      for (Operation *user : worklist.pop_back_val().getUsers()) {
        if (auto view = dyn_cast<ViewOp>(user)) {
          worklist.push_back(view.getResult());
          continue;
        }
        if (user == producer || user == other)
          continue;
        if (other)
          return nullptr;
        other = user;
      }
    return other;
  }

  /// The outputs of `producer` (an allocation each, written through no
  /// other output) that one later generated kernel of as many elements
  /// alone reads, once, at its index, while reading one of the producer's
  /// reductions (so it could not take the producer in), and could compute
  /// itself: nothing between them writes what the producer reads.
  SmallVector<Recompute> recomputedLinks(GenericOp producer) {
    SmallVector<Value> producerReads = llvm::map_to_vector(
        producer.getInputs(), [](Value v) { return viewedBuffer(v); });
    SmallVector<Value> reduced = llvm::map_to_vector(
        producer.getReductions(), [](Value v) { return viewedBuffer(v); });
    SmallVector<Recompute> links;
    for (Value out : producer.getOutputs()) {
      Value root = viewedBuffer(out);
      auto consumer =
          dyn_cast_or_null<GenericOp>(soleOtherUser(root, producer));
      if (!root.getDefiningOp<AllocOp>() || !consumer ||
          !recomputesIn(consumer, producer) ||
          llvm::count_if(producer.getOutputs(),
                         [&](Value v) { return viewedBuffer(v) == root; }) != 1)
        continue;
      SmallVector<Value> reads;
      for (Value in : consumer.getInputs())
        if (viewedBuffer(in) == root)
          reads.push_back(in);
      bool readsReduction = llvm::any_of(consumer.getInputs(), [&](Value v) {
        return llvm::is_contained(reduced, viewedBuffer(v));
      });
      bool writesReads = llvm::any_of(
          llvm::concat<Value>(consumer.getOutputs(), consumer.getReductions()),
          [&](Value v) {
            Value written = viewedBuffer(v);
            return written == root ||
                   llvm::is_contained(producerReads, written);
          });
      if (reads.size() != 1 || !sameElements(reads.front(), out) ||
          !readsReduction || writesReads ||
          !inputsHeld(producer, consumer, producerReads))
        continue;
      links.push_back({out, consumer, reads.front()});
    }
    return links;
  }

  /// Whether `consumer`, after `producer` in its block and on its stream,
  /// reads each input at its own index over as many elements, by elements
  /// (no rows, segments or workspace; not by rows, a map reads across
  /// indices): it may compute the producer's outputs at its index, and
  /// join another such kernel.
  static bool recomputesIn(GenericOp consumer, GenericOp producer) {
    return consumer->getBlock() == producer->getBlock() &&
           producer->isBeforeInBlock(consumer) &&
           consumer.getStream() == producer.getStream() &&
           consumer.getNumElements() == producer.getNumElements() &&
           consumer.getSegments().empty() && !consumer.getRowLength() &&
           !consumer.getWorkspace() && !consumer.readsAcrossIndices();
  }

  /// Whether nothing between `producer` and `consumer` (at most `maxHoist`
  /// ops) writes what the producer reads.
  bool inputsHeld(GenericOp producer, GenericOp consumer,
                  ArrayRef<Value> producerReads) {
    unsigned distance = 0;
    for (Operation *op = producer->getNextNode(); op != consumer;
         op = op->getNextNode()) {
      SmallVector<Value> reads, writes;
      if (++distance > maxHoist || !collectAccess(op, reads, writes) ||
          llvm::any_of(writes, [&](Value w) {
            return llvm::is_contained(producerReads, w);
          }))
        return false;
    }
    return true;
  }

  /// The distinct consumers of `links` in program order that can run
  /// together at the first one's place: each later one moves up to it, its
  /// transposed outputs (if any) seeing the index as the others' do, its
  /// outputs holding no more than the links it read (they live from the
  /// first one's place on, where those links lived), and the joined
  /// kernel's buffers fit.
  SmallVector<GenericOp> joinableConsumers(ArrayRef<Recompute> links) {
    SmallVector<GenericOp> consumers;
    for (const Recompute &r : links)
      if (!llvm::is_contained(consumers, r.consumer))
        consumers.push_back(r.consumer);
    llvm::sort(consumers,
               [](GenericOp a, GenericOp b) { return a->isBeforeInBlock(b); });
    if (consumers.empty())
      return consumers;
    GenericOp first = consumers.front();
    std::optional<std::pair<int64_t, int64_t>> shape =
        first.getTransposedShape();
    SmallVector<GenericOp> joinable = {first};
    for (GenericOp later : llvm::drop_begin(consumers)) {
      std::optional<std::pair<int64_t, int64_t>> laterShape =
          later.getTransposedShape();
      if ((shape && laterShape && shape != laterShape) ||
          outputBytes(later) > linkBytes(links, later) ||
          !canMoveUpTo(first, later) || !siblingsSafe(first, later))
        continue;
      joinable.push_back(later);
      if (!shape)
        shape = laterShape;
    }
    return joinable;
  }

  /// The bytes of `g`'s outputs of more than one element.
  static int64_t outputBytes(GenericOp g) {
    int64_t bytes = 0;
    for (Value out : g.getOutputs())
      if (elementCount(out) > 1)
        bytes += byteSize(out);
    return bytes;
  }

  /// The bytes of the links of `links` that `consumer` reads.
  static int64_t linkBytes(ArrayRef<Recompute> links, GenericOp consumer) {
    int64_t bytes = 0;
    for (const Recompute &r : links)
      if (r.consumer == consumer)
        bytes += byteSize(r.link);
    return bytes;
  }

  /// Whether `later` can run at `first`'s place (at most `maxHoist` ops
  /// up).
  bool canMoveUpTo(GenericOp first, GenericOp later) {
    SmallVector<Value> between, betweenReads;
    unsigned distance = 0;
    for (Operation *op = later->getPrevNode(); op != first;
         op = op->getPrevNode()) {
      SmallVector<Value> reads, writes;
      if (++distance > maxHoist || !collectAccess(op, reads, writes))
        return false;
      llvm::append_range(between, writes);
      llvm::append_range(betweenReads, reads);
    }
    return consumerCanMoveUp(first, later, Value(), between, betweenReads);
  }

  /// Whether recomputing `links` in `consumers`, joined, reads fewer bytes
  /// of the producer's inputs than the links' writes and reads it saves,
  /// and the joined kernel's buffers fit. The inputs read again live on to
  /// the first consumer, where the links lived: when anything runs in
  /// between, they may hold no more than the links.
  bool savesBytes(GenericOp producer, ArrayRef<Recompute> links,
                  ArrayRef<GenericOp> consumers) {
    SmallVector<Value> read, linkRoots;
    unsigned outputs = 0;
    for (const Recompute &r : links)
      linkRoots.push_back(viewedBuffer(r.link));
    for (GenericOp c : consumers) {
      outputs += c.getOutputs().size() + c.getReductions().size();
      for (Value in : c.getInputs())
        if (!llvm::is_contained(linkRoots, viewedBuffer(in)) &&
            !llvm::is_contained(read, in))
          read.push_back(in);
    }
    int64_t extra = 0, saved = 0;
    for (Value in : producer.getInputs())
      if (!llvm::is_contained(read, in)) {
        read.push_back(in);
        extra += byteSize(in);
      }
    for (const Recompute &r : links)
      saved += 2 * byteSize(r.link);
    bool runsBetween = false;
    for (Operation *op = producer->getNextNode(); op != consumers.front();
         op = op->getNextNode())
      runsBetween |= !runsNothing(op);
    return extra < saved && (!runsBetween || 2 * extra <= saved) &&
           read.size() + outputs <= maxBuffers;
  }

  /// A kernel before `r.consumer` computing `r.link` as `producer` does.
  static GenericOp recomputeOf(GenericOp producer, const Recompute &r) {
    OpBuilder b(r.consumer);
    auto recompute = GenericOp::create(
        b, producer.getLoc(), producer.getInputs(), ValueRange{r.link},
        ValueRange{}, producer.getStream(), b.getArrayAttr({}),
        b.getDenseI64ArrayAttr({}));
    unsigned index = llvm::find(producer.getOutputs(), r.link) -
                     producer.getOutputs().begin();
    cloneBodyYielding(b, producer, recompute, {index});
    return recompute;
  }

  /// Replaces `g` by a kernel writing its outputs but `dropped` (and its
  /// reductions), or erases it when nothing is left to write.
  static void withoutOutputs(GenericOp g, ArrayRef<Value> dropped) {
    SmallVector<Value> outputs;
    SmallVector<unsigned> kept;
    for (auto [i, out] : llvm::enumerate(g.getOutputs()))
      if (!llvm::is_contained(dropped, out)) {
        outputs.push_back(out);
        kept.push_back(i);
      }
    for (unsigned i = 0, e = g.getReductions().size(); i < e; ++i)
      kept.push_back(g.getOutputs().size() + i);
    if (!kept.empty()) {
      OpBuilder b(g);
      auto rest = GenericOp::create(
          b, g.getLoc(), g.getInputs(), outputs, g.getReductions(),
          g.getStream(), g.getReductionKinds(), b.getDenseI64ArrayAttr({}));
      cloneBodyYielding(b, g, rest, kept);
      eraseDeadBodyOps(rest);
    }
    g.erase();
  }

  /// Builds `to`'s body as `from`'s, yielding `from`'s yielded values at
  /// `indices`.
  static void cloneBodyYielding(OpBuilder &b, GenericOp from, GenericOp to,
                                ArrayRef<unsigned> indices) {
    Block &source = from.getBody().front();
    Block *body = b.createBlock(&to.getBody());
    IRMapping map;
    for (BlockArgument arg : source.getArguments())
      map.map(arg, body->addArgument(arg.getType(), arg.getLoc()));
    for (Operation &op : source.without_terminator())
      b.clone(op, map);
    ValueRange yielded = cast<YieldOp>(source.getTerminator()).getValues();
    YieldOp::create(b, from.getLoc(),
                    llvm::map_to_vector(indices, [&](unsigned i) {
                      return map.lookupOrDefault(yielded[i]);
                    }));
  }

  /// Erases the body's computations nothing yields.
  static void eraseDeadBodyOps(GenericOp g) {
    Block &body = g.getBody().front();
    for (bool erased = true; erased;) {
      erased = false;
      for (Operation &op :
           llvm::make_early_inc_range(body.without_terminator()))
        if (isOpTriviallyDead(&op)) {
          op.erase();
          erased = true;
        }
    }
  }

  /// Whether `a` and `b` read one tensor of the same element count on one
  /// stream, and each sees its index as the same rows x columns. `b`'s
  /// outputs, written earlier once it moves up, hold at most half the
  /// bytes of the tensor whose second read it saves (a float8 copy of a
  /// 16-bit tensor): the move holds less memory than it saves reading.
  static bool isSibling(GenericOp a, GenericOp b) {
    if (a.getStream() != b.getStream() || !a.getSegments().empty() ||
        a.getNumElements() != b.getNumElements() || a.getNumElements() == 1 ||
        a.getRowLength() || b.getRowLength() || a.readsAcrossIndices() ||
        b.readsAcrossIndices())
      return false;
    std::optional<std::pair<int64_t, int64_t>> as = a.getTransposedShape(),
                                               bs = b.getTransposedShape();
    if (as && bs && as != bs)
      return false;
    int64_t written = 0;
    for (Value v : b.getOutputs())
      written += byteSize(v);
    return llvm::any_of(b.getInputs(), [&](Value v) {
      return elementCount(v) > 1 && llvm::is_contained(a.getInputs(), v) &&
             2 * written <= byteSize(v);
    });
  }

  static int64_t byteSize(Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    return type.getNumElements() * type.getElementTypeBitWidth() / 8;
  }

  /// The inputs of `a` then those of `b` it does not read: one argument
  /// for each tensor the siblings read.
  static SmallVector<Value> siblingInputs(GenericOp a, GenericOp b) {
    SmallVector<Value> inputs(a.getInputs());
    for (Value v : b.getInputs())
      if (!llvm::is_contained(inputs, v))
        inputs.push_back(v);
    return inputs;
  }

  /// Whether one kernel running both keeps their buffers' meaning: neither
  /// reads or writes what the other writes, and the buffers fit.
  bool siblingsSafe(GenericOp a, GenericOp b) {
    SmallVector<Value> aWrites, bWrites;
    for (GenericOp g : {a, b})
      for (Value v : llvm::concat<Value>(g.getOutputs(), g.getReductions()))
        (g == a ? aWrites : bWrites).push_back(viewedBuffer(v));
    auto touches = [](GenericOp g, ArrayRef<Value> written) {
      return llvm::any_of(g->getOperands(), [&](Value v) {
        return isa<MemRefType>(v.getType()) &&
               llvm::is_contained(written, viewedBuffer(v));
      });
    };
    if (touches(a, bWrites) || touches(b, aWrites))
      return false;
    return siblingInputs(a, b).size() + a.getOutputs().size() +
               b.getOutputs().size() + a.getReductions().size() +
               b.getReductions().size() <=
           maxBuffers;
  }

  /// One kernel at `a`'s place computing both: `a`'s outputs, then `b`'s.
  GenericOp joinSiblings(GenericOp a, GenericOp b) {
    for (Value operand : b->getOperands())
      defineBefore(operand, a);
    SmallVector<Value> inputs = siblingInputs(a, b);
    SmallVector<Value> outputs(a.getOutputs());
    llvm::append_range(outputs, b.getOutputs());
    SmallVector<Value> reductions(a.getReductions());
    llvm::append_range(reductions, b.getReductions());
    SmallVector<Attribute> kinds(a.getReductionKinds().getValue());
    llvm::append_range(kinds, b.getReductionKinds().getValue());
    GenericOp parts[] = {a, b};

    OpBuilder builder(a);
    Location loc = builder.getFusedLoc({a.getLoc(), b.getLoc()});
    auto fused = GenericOp::create(
        builder, loc, inputs, outputs, reductions, a.getStream(),
        builder.getArrayAttr(kinds),
        builder.getDenseI64ArrayAttr(joinedTransposedOutputs(parts)));
    // The inputs both read are one argument.
    buildJoinedBody(builder, fused, parts, [&](unsigned part, unsigned index) {
      Value input = parts[part].getInputs()[index];
      return unsigned(llvm::find(inputs, input) - inputs.begin());
    });
    a.erase();
    b.erase();
    return fused;
  }

  /// The generated kernel whose output `input` is, when it can run inside
  /// `consumer`, and where.
  Fusion fusableProducer(GenericOp consumer, Value input) {
    Value root = viewedBuffer(input);
    // Walk back to the last op that writes `root`, collecting what the ops
    // in between write and read; an op that only reads `root` may stand
    // between (a GEMM reading a cast's scale) when the consumer can move
    // up to the producer.
    SmallVector<Value> between, betweenReads;
    SmallVector<WaitOp> waits;
    SmallVector<Operation *> collectivesRead;
    bool readersBetween = false;
    unsigned distance = 0;
    for (Operation *op = consumer->getPrevNode(); op; op = op->getPrevNode()) {
      SmallVector<Value> reads, writes;
      if (!collectAccess(op, reads, writes))
        return {};
      if (auto wait = dyn_cast<WaitOp>(op))
        waits.push_back(wait);
      if (!runsNothing(op))
        for (Value read : reads)
          if (Operation *start = collectiveOutputs.lookup(read))
            collectivesRead.push_back(start);
      auto producer = dyn_cast<GenericOp>(op);
      Value produced;
      if (producer)
        for (Value out : producer.getOutputs())
          if (sameElements(out, input))
            produced = out;
      bool produces = bool(produced);
      if (!produces && !llvm::is_contained(writes, root)) {
        readersBetween |= llvm::is_contained(reads, root);
        llvm::append_range(between, writes);
        llvm::append_range(betweenReads, reads);
        ++distance;
        continue;
      }
      if (!produces)
        return {};
      // The consumer moves up when ops between read the link, or see what
      // the producer writes besides it (a later kernel reading the
      // producer's other output), or when the producer, moved down past a
      // wait, would leave its collective nothing to overlap.
      Fusion fusion{producer,
                    readersBetween ||
                        !producerCanMoveDown(producer, produced, reads, between,
                                             betweenReads) ||
                        !keepsOverlap(producer, waits),
                    produced};
      if (fusion.atProducer && distance > maxHoist)
        return {};
      // Moved down past an op reading a collective's result, before which
      // the collective schedule will wait, the producer would no longer
      // overlap that collective if it started before it (the rotation of
      // dq moving to its amax, after the cast of dv that a
      // context-parallel reduce-scatter delivers): the consumer moves up
      // instead where it can.
      if (!fusion.atProducer && distance <= maxHoist &&
          llvm::any_of(collectivesRead, [&](Operation *start) {
            return start->getBlock() == producer->getBlock() &&
                   start->isBeforeInBlock(producer);
          })) {
        Fusion up{producer, /*atProducer=*/true, produced};
        if (canFuse(up, consumer, input, reads, between, betweenReads))
          return up;
      }
      if (!canFuse(fusion, consumer, input, reads, between, betweenReads))
        return {};
      return fusion;
    }
    return {};
  }

  /// Whether `fusion.producer` (reading `producerReads`), the last writer
  /// of `link`, can run with `consumer`, the ops between them writing
  /// `between` and reading `betweenReads`.
  bool canFuse(Fusion fusion, GenericOp consumer, Value link,
               ArrayRef<Value> producerReads, ArrayRef<Value> between,
               ArrayRef<Value> betweenReads) {
    GenericOp producer = fusion.producer;
    Value produced = fusion.produced;
    Value root = viewedBuffer(link);
    // A transposed output is not at the consumer's index; a horizontally
    // fused kernel is already one launch of several.
    if (producer.isTransposed(produced) ||
        (producer.getWorkspace() && consumer.getWorkspace()) ||
        producer.getStream() != consumer.getStream() ||
        !producer.getSegments().empty() || !consumer.getSegments().empty())
      return false;
    if (!mapsFuse(producer, consumer, link))
      return false;
    // One of them may run by rows (a row kernel of more would sum sums),
    // and rows have no tiles. A row kernel takes in a consumer only when
    // that saves the link (its result then dies there) or a read of it
    // (a reduction): a cast whose tensor another kernel still reads (its
    // transposed copy, in tiles) joins that one as a sibling instead, so
    // the tensor dies at once rather than where the other reads it.
    if (producer.getRowLength() || consumer.getRowLength()) {
      if ((producer.getRowLength() && consumer.getRowLength()) ||
          !producer.getTransposedOutputs().empty() ||
          !consumer.getTransposedOutputs().empty())
        return false;
      if (producer.getRowLength() && !consumer.getOutputs().empty() &&
          !linkDies(producer, consumer, link))
        return false;
      if (producer.getRowLength() && gathered(link))
        return false;
    }
    // A producer's reduction is complete only after its last index: the
    // consumer may not see it (it combines on, as the fused kernel's own).
    for (Value r : producer.getReductions())
      for (Value v :
           llvm::concat<Value>(consumer.getInputs(), consumer.getOutputs(),
                               consumer.getReductions()))
        if (viewedBuffer(v) == viewedBuffer(r))
          return false;
    // The producer's other outputs: the consumer may not read them (it
    // loads before the fused kernel stores), nor write them (the
    // producer's store would come last).
    for (Value out : producer.getOutputs()) {
      Value other = viewedBuffer(out);
      if (out == produced)
        continue;
      if (other == root)
        return false;
      for (Value v :
           llvm::concat<Value>(consumer.getInputs(), consumer.getOutputs()))
        if (viewedBuffer(v) == other)
          return false;
    }
    // The consumer writes the producer's buffer, if at all, as the elements
    // of `link` (an in-place consumer: the fused kernel stores its value
    // there instead of the producer's).
    for (Value out : consumer.getOutputs())
      if (viewedBuffer(out) == root && !sameElements(out, link))
        return false;
    // The consumer reads the producer's buffer only as `link` (which it no
    // longer loads).
    for (Value other : consumer.getInputs())
      if (other != link && viewedBuffer(other) == root)
        return false;
    if (fusion.atProducer
            ? !consumerCanMoveUp(producer, consumer, link, between,
                                 betweenReads)
            : !producerCanMoveDown(producer, produced, producerReads, between,
                                   betweenReads))
      return false;
    // The fused kernel reads element i of every input before it writes
    // element i of every output, so a buffer it both reads and writes
    // must be seen the same way (the same view), never shifted.
    for (Value in : producer.getInputs()) {
      for (Value out : consumer.getOutputs())
        if (viewedBuffer(in) == viewedBuffer(out) &&
            (in != out || consumer.isTransposed(out)))
          return false;
      if (viewedBuffer(in) == root && !sameElements(in, link))
        return false;
    }
    // The producer runs at every index of the consumer, or once (a
    // one-element producer, broadcast, with nothing transposed).
    int64_t producerCount = producer.getNumElements();
    if (producerCount != consumer.getNumElements() &&
        (producerCount != 1 || producer.getTransposedShape()))
      return false;
    // Transposed outputs of both see the index as the same rows x columns.
    std::optional<std::pair<int64_t, int64_t>> producerShape =
        producer.getTransposedShape();
    std::optional<std::pair<int64_t, int64_t>> consumerShape =
        consumer.getTransposedShape();
    if (producerShape && consumerShape && producerShape != consumerShape)
      return false;
    return onceBuffersSafe(producer, consumer, link) &&
           fusedBuffers(producer, consumer, link) <= maxBuffers;
  }

  /// Whether kernels reading across indices (input maps, kernel.index)
  /// fuse: only with kernels of as many elements, neither by rows nor in
  /// tiles; the consumer reads the link at its index alone, and neither
  /// writes what the other reads through a map (another index's element).
  static bool mapsFuse(GenericOp producer, GenericOp consumer, Value link) {
    // Neither writes what either reads through a map (a row kernel's
    // per-row inputs too).
    auto writes = [](GenericOp g, Value buffer) {
      return llvm::any_of(g.getOutputs(), [&](Value out) {
        return viewedBuffer(out) == viewedBuffer(buffer);
      });
    };
    for (GenericOp reader : {producer, consumer})
      for (auto [i, input] : llvm::enumerate(reader.getInputs()))
        if (reader.isMapped(i) &&
            (writes(producer, input) || writes(consumer, input)))
          return false;
    if (!producer.readsAcrossIndices() && !consumer.readsAcrossIndices())
      return true;
    if (producer.getNumElements() != consumer.getNumElements())
      return false;
    for (GenericOp g : {producer, consumer})
      if (g.getRowLength() || !g.getTransposedOutputs().empty())
        return false;
    return true;
  }

  /// Whether `consumer` can run at `producer`'s place, the ops between them
  /// writing `between` and reading `betweenReads`: its buffers must exist
  /// there, what it reads (but `link`) must already hold its values, and
  /// nothing between may see what it writes.
  static bool consumerCanMoveUp(GenericOp producer, GenericOp consumer,
                                Value link, ArrayRef<Value> between,
                                ArrayRef<Value> betweenReads) {
    for (Value operand : consumer->getOperands())
      if (!canDefineBefore(operand, producer))
        return false;
    for (Value in : consumer.getInputs())
      if (in != link && llvm::is_contained(between, viewedBuffer(in)))
        return false;
    return llvm::none_of(
        llvm::concat<Value>(consumer.getOutputs(), consumer.getReductions()),
        [&](Value out) {
          Value written = viewedBuffer(out);
          return llvm::is_contained(between, written) ||
                 llvm::is_contained(betweenReads, written);
        });
  }

  /// Whether `producer` (reading `producerReads`) can run at the consumer's
  /// place: its outputs but `link` are written there, so nothing between
  /// may touch them, and what it reads must hold the same values there.
  static bool producerCanMoveDown(GenericOp producer, Value link,
                                  ArrayRef<Value> producerReads,
                                  ArrayRef<Value> between,
                                  ArrayRef<Value> betweenReads) {
    for (Value out :
         llvm::concat<Value>(producer.getOutputs(), producer.getReductions())) {
      Value other = viewedBuffer(out);
      if (out != link && (llvm::is_contained(between, other) ||
                          llvm::is_contained(betweenReads, other)))
        return false;
    }
    return llvm::none_of(producerReads, [&](Value read) {
      return llvm::is_contained(between, read);
    });
  }

  /// Whether the fused kernel would leave its one-element buffers well
  /// defined: nothing it reads may be a reduction it combines into (zeroed
  /// before it runs), and in a kernel of more than one element nothing it
  /// reads may be a one-element buffer it writes (written once, while
  /// other indices read it).
  static bool onceBuffersSafe(GenericOp producer, GenericOp consumer,
                              Value link) {
    SmallVector<Value> reads, writes;
    for (Value v : consumer.getInputs())
      if (v != link)
        reads.push_back(viewedBuffer(v));
    for (Value v : producer.getInputs())
      reads.push_back(viewedBuffer(v));
    for (Value v :
         llvm::concat<Value>(consumer.getOutputs(), producer.getOutputs()))
      writes.push_back(viewedBuffer(v));
    for (Value r : llvm::concat<Value>(consumer.getReductions(),
                                       producer.getReductions())) {
      Value root = viewedBuffer(r);
      if (llvm::is_contained(reads, root) || llvm::is_contained(writes, root))
        return false;
    }
    if (std::max(producer.getNumElements(), consumer.getNumElements()) == 1)
      return true;
    // The consumer no longer loads `link`; the producer loads all its
    // inputs.
    auto readsWritten = [&](Value v) {
      return elementCount(v) == 1 &&
             llvm::is_contained(writes, viewedBuffer(v));
    };
    for (Value v : consumer.getInputs())
      if (v != link && readsWritten(v))
        return false;
    return llvm::none_of(producer.getInputs(), readsWritten);
  }

  /// The buffers the fused kernel takes at most: the inputs of both but
  /// `link` (one per buffer and map, as fuse() makes them), and the outputs
  /// and reductions of both.
  static unsigned fusedBuffers(GenericOp producer, GenericOp consumer,
                               Value link) {
    SmallVector<std::pair<Value, AffineMap>> inputs;
    for (GenericOp g : {consumer, producer})
      for (auto [i, v] : llvm::enumerate(g.getInputs()))
        if (!(g == consumer && v == link) &&
            !llvm::is_contained(inputs, std::make_pair(v, g.getInputMap(i))))
          inputs.push_back({v, g.getInputMap(i)});
    return inputs.size() + consumer.getOutputs().size() +
           producer.getOutputs().size() + consumer.getReductions().size() +
           producer.getReductions().size();
  }

  /// Whether a collective reads `buffer` (a sequence-parallel norm's
  /// result, gathered across tensor parallelism): a consumer kept apart
  /// from its producer then runs while the collective moves it.
  static bool gathered(Value buffer) {
    Value root = viewedBuffer(buffer);
    SmallVector<Value> worklist = {root};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (auto view = dyn_cast<ViewOp>(user))
          worklist.push_back(view.getResult());
        else if (auto start = dyn_cast<CollectiveStartOp>(user);
                 start && start.getInput() == v)
          return true;
      }
    }
    return false;
  }

  /// Whether `link`, which `producer` writes and `consumer` reads (both
  /// through views, perhaps), is no longer written once they fuse: an
  /// allocation nothing else uses, which the consumer does not write.
  static bool linkDies(GenericOp producer, GenericOp consumer, Value link) {
    Value root = viewedBuffer(link);
    return root.getDefiningOp<AllocOp>() &&
           onlyUsedBy(root, producer, consumer) &&
           llvm::none_of(consumer.getOutputs(),
                         [&](Value out) { return viewedBuffer(out) == root; });
  }

  /// One kernel at `consumer`'s place computing both; `link` (the
  /// producer's output the consumer reads) is written only when something
  /// else reads it, the producer's other outputs always.
  GenericOp fuse(Fusion fusion, GenericOp consumer, Value link) {
    GenericOp producer = fusion.producer;
    Value produced = fusion.produced;
    bool keepLink = !linkDies(producer, consumer, link);
    // One argument per (buffer, map) read: the consumer's but the link's,
    // then the producer's.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    auto argumentOf = [&](GenericOp g, unsigned i) {
      auto read = std::make_pair(g.getInputs()[i], g.getInputMap(i));
      for (auto [k, v] : llvm::enumerate(inputs))
        if (std::make_pair(v, maps[k]) == read)
          return unsigned(k);
      inputs.push_back(read.first);
      maps.push_back(read.second);
      return unsigned(inputs.size() - 1);
    };
    SmallVector<unsigned> consumerArgs, producerArgs;
    for (auto [i, v] : llvm::enumerate(consumer.getInputs()))
      consumerArgs.push_back(v == link ? ~0u : argumentOf(consumer, i));
    for (unsigned i = 0, e = producer.getInputs().size(); i < e; ++i)
      producerArgs.push_back(argumentOf(producer, i));
    // The link, kept, is written as the producer wrote it.
    SmallVector<Value> outputs(consumer.getOutputs());
    if (keepLink && llvm::none_of(outputs, [&](Value out) {
          return sameElements(out, produced);
        }))
      outputs.push_back(produced);
    unsigned withLink = outputs.size();
    for (Value out : producer.getOutputs())
      if (out != produced)
        outputs.push_back(out);

    SmallVector<int64_t> transposed;
    for (auto [i, out] : llvm::enumerate(outputs))
      if ((i < consumer.getOutputs().size() && consumer.isTransposed(out)) ||
          (i >= withLink && producer.isTransposed(out)))
        transposed.push_back(i);

    if (fusion.atProducer)
      for (Value operand : consumer->getOperands())
        defineBefore(operand, producer);
    SmallVector<Value> reductions(consumer.getReductions());
    llvm::append_range(reductions, producer.getReductions());
    SmallVector<Attribute> kinds(consumer.getReductionKinds().getValue());
    llvm::append_range(kinds, producer.getReductionKinds().getValue());

    OpBuilder b(fusion.atProducer ? producer : consumer);
    Location loc = b.getFusedLoc({producer.getLoc(), consumer.getLoc()});
    auto fused = GenericOp::create(b, loc, inputs, outputs, reductions,
                                   consumer.getStream(), b.getArrayAttr(kinds),
                                   b.getDenseI64ArrayAttr(transposed));
    fused.setRowLength(
        std::max(producer.getRowLength(), consumer.getRowLength()));
    if (llvm::any_of(maps, [](AffineMap m) { return !m.isIdentity(); }))
      fused.setInputMapsAttr(b.getAffineMapArrayAttr(maps));
    // The row kernel's column sums keep their partials (canFuse: at most
    // one has them).
    if (Value workspace = producer.getWorkspace() ? producer.getWorkspace()
                                                  : consumer.getWorkspace())
      fused.getWorkspaceMutable().assign(workspace);
    Block *body = b.createBlock(&fused.getBody());
    for (Value v : inputs)
      body->addArgument(elementTypeOf(v), v.getLoc());

    // The producer's body, then the consumer's reading its result.
    IRMapping map;
    Block &producerBody = producer.getBody().front();
    for (auto [arg, k] :
         llvm::zip_equal(producerBody.getArguments(), producerArgs))
      map.map(arg, body->getArgument(k));
    for (Operation &op : producerBody.without_terminator())
      b.clone(op, map);
    Value linked;
    SmallVector<Value> others;
    ValueRange producerYield =
        cast<YieldOp>(producerBody.getTerminator()).getValues();
    unsigned producerOutputs = producer.getOutputs().size();
    for (auto [out, v] : llvm::zip_equal(
             producer.getOutputs(), producerYield.take_front(producerOutputs)))
      (out == produced ? linked : others.emplace_back()) =
          map.lookupOrDefault(v);
    Block &consumerBody = consumer.getBody().front();
    for (auto [arg, k] :
         llvm::zip_equal(consumerBody.getArguments(), consumerArgs))
      map.map(arg, k == ~0u ? linked : body->getArgument(k));
    for (Operation &op : consumerBody.without_terminator())
      b.clone(op, map);
    // The consumer's outputs, the link when kept, the producer's other
    // outputs, the consumer's reductions, the producer's.
    ValueRange consumerYield =
        cast<YieldOp>(consumerBody.getTerminator()).getValues();
    auto mapped = [&](ValueRange values) {
      return llvm::map_to_vector(
          values, [&](Value v) { return map.lookupOrDefault(v); });
    };
    unsigned numOutputs = consumer.getOutputs().size();
    SmallVector<Value> yielded = mapped(consumerYield.take_front(numOutputs));
    if (withLink > numOutputs)
      yielded.push_back(linked);
    llvm::append_range(yielded, others);
    llvm::append_range(yielded, mapped(consumerYield.drop_front(numOutputs)));
    llvm::append_range(yielded,
                       mapped(producerYield.drop_front(producerOutputs)));
    YieldOp::create(b, loc, yielded);

    producer.erase();
    consumer.erase();
    if (!keepLink)
      eraseIfUnused({link, produced});
    return fused;
  }

  unsigned maxBuffers, maxHoist;
  /// Each collective's output buffer, and the start writing it.
  DenseMap<Value, Operation *> collectiveOutputs;
};

struct KernelGeneratePointwisePass
    : titan::kernel::impl::KernelGeneratePointwiseBase<
          KernelGeneratePointwisePass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp step) {
      for (auto call : llvm::make_early_inc_range(step.getOps<CallOp>())) {
        if (!generateCall(call) && !generateRowCall(call, columnSumBlocks))
          continue;
        Value workspace = call.getWorkspace();
        call.erase();
        if (workspace)
          eraseIfUnused(workspace);
      }
      Fuser fuser(step, maxBuffers, maxHoist);
      SmallVector<GenericOp> generics(step.getOps<GenericOp>());
      for (GenericOp generic : generics)
        fuser.fuseProducers(generic);
      // Then outputs read back only by kernels that cannot fuse with
      // their producer (a cast needing the producer's amax), recomputed
      // there where that moves fewer bytes.
      while (llvm::any_of(step.getOps<GenericOp>(), [&](GenericOp generic) {
        return fuser.recomputeInConsumers(generic);
      })) {
      }
      // Then siblings: kernels reading one tensor (its two float8 layouts).
      generics.assign(step.getOps<GenericOp>().begin(),
                      step.getOps<GenericOp>().end());
      for (GenericOp generic : generics)
        fuser.fuseSibling(generic);
      // Fused bodies compute some values twice (a cast and its transposed
      // copy encode the same element): once is enough.
      IRRewriter rewriter(&getContext());
      DominanceInfo dominance;
      for (GenericOp generic : step.getOps<GenericOp>())
        if (generic.getSegments().empty())
          eliminateCommonSubExpressions(rewriter, dominance, generic);
    });
  }
};

} // namespace
