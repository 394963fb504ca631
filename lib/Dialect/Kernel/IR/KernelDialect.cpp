//===- KernelDialect.cpp - the kernel dialect -----------------------------===//

#include "titan/Dialect/Kernel/IR/IndexMaps.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"
#include "titan/Support/Suggest.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

#include "titan/Dialect/Kernel/IR/KernelOpsDialect.cpp.inc"

#include "titan/Dialect/Kernel/IR/KernelOpsEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "titan/Dialect/Kernel/IR/KernelOpsAttributes.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "titan/Dialect/Kernel/IR/KernelOpsTypes.cpp.inc"

void KernelDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "titan/Dialect/Kernel/IR/KernelOpsAttributes.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "titan/Dialect/Kernel/IR/KernelOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "titan/Dialect/Kernel/IR/KernelOps.cpp.inc"
      >();
}

LogicalResult KernelDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                      unsigned,
                                                      NamedAttribute attr) {
  if (attr.getName() == kSlotAttrName && !isa<StringAttr>(attr.getValue()))
    return op->emitError() << "'" << kSlotAttrName << "' must be a string";
  return success();
}

LogicalResult KernelDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  if (attr.getName() == kArenaBytesAttrName ||
      attr.getName() == kHostArenaBytesAttrName) {
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!bytes || bytes.getInt() < 0 || bytes.getInt() % kAlignment != 0)
      return op->emitError()
             << "'" << attr.getName().getValue()
             << "' must be a non-negative multiple of " << kAlignment;
    return success();
  }
  if (attr.getName() == kSlotsAttrName ||
      attr.getName() == kFrameSlotsAttrName ||
      attr.getName() == kHostSlotsAttrName) {
    auto slots = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!slots)
      return op->emitError()
             << "'" << attr.getName().getValue() << "' must be a dictionary";
    for (NamedAttribute slot : slots) {
      auto range = dyn_cast<DenseI64ArrayAttr>(slot.getValue());
      if (!range || range.size() != 2 || range[0] < 0 || range[1] < 0 ||
          range[0] % kAlignment != 0)
        return op->emitError()
               << "slot '" << slot.getName().getValue()
               << "' must be array<i64: offset, bytes> with an offset "
                  "aligned to "
               << kAlignment;
    }
    return success();
  }
  if (attr.getName() == kSeparateRoundingAttrName ||
      attr.getName() == kHostStepAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a unit attribute";
    return success();
  }
  return op->emitError() << "unknown kernel attribute '"
                         << attr.getName().getValue() << "'";
}

/// Memrefs of the kernel IR are contiguous (identity layout) and have a
/// byte size that fits in int64.
static LogicalResult verifyBuffer(Operation *op, Type type, StringRef what) {
  auto memref = cast<MemRefType>(type);
  if (!memref.getLayout().isIdentity())
    return op->emitOpError()
           << what << " must have the identity layout, got " << type;
  if (memref.getMemorySpace() && !isa<MemorySpaceAttr>(memref.getMemorySpace()))
    return op->emitOpError() << what << " must be in device memory or in "
                             << "#kernel.memory_space<host>, got " << type;
  if (!getStaticByteSize(memref))
    return op->emitOpError() << what << " of type " << type
                             << " has a size in bytes that overflows int64";
  return success();
}

LogicalResult AllocOp::verify() {
  if (std::optional<int64_t> offset = getOffset();
      offset && (*offset < 0 || *offset % KernelDialect::kAlignment != 0))
    return emitOpError() << "offset " << *offset
                         << " must be a non-negative multiple of "
                         << KernelDialect::kAlignment;
  return verifyBuffer(*this, getType(), "buffer");
}

LogicalResult ViewOp::verify() {
  if (failed(verifyBuffer(*this, getSource().getType(), "source")) ||
      failed(verifyBuffer(*this, getType(), "result")))
    return failure();
  if (getMemorySpace(getSource().getType()) != getMemorySpace(getType()))
    return emitOpError() << "views " << getSource().getType() << " as "
                         << getType() << " in another memory space";
  int64_t source = *getStaticByteSize(getSource().getType());
  int64_t result = *getStaticByteSize(getType());
  if (!getOffset()) {
    if (source != result)
      return emitOpError() << "views " << getSource().getType() << " as "
                           << getType() << ", which has another size in bytes";
    return success();
  }
  int64_t offset = int64_t(*getOffset());
  if (offset < 0 || offset + result > source)
    return emitOpError() << "views " << result << " bytes at offset " << offset
                         << " of " << getSource().getType() << " (" << source
                         << " bytes), which is not inside it";
  return success();
}

/// Kernel parameters are i64 integers and f64 floats.
static LogicalResult verifyParams(Operation *op, ArrayAttr params) {
  for (auto [i, p] : llvm::enumerate(params)) {
    auto integer = dyn_cast<IntegerAttr>(p);
    auto real = dyn_cast<FloatAttr>(p);
    if (!(integer && integer.getType().isInteger(64)) &&
        !(real && real.getType().isF64()))
      return op->emitOpError() << "parameter #" << i
                               << " must be an i64 or f64 attribute, got " << p;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Calls against the kernel catalog (titan/Contract/KernelCatalog.def)
//===----------------------------------------------------------------------===//

/// A catalog list up to its first unnamed element.
template <typename T, size_t N> static ArrayRef<T> named(const T (&list)[N]) {
  return ArrayRef<T>(list).take_while([](const T &x) { return x.name; });
}

/// "a, b, c..." (a counted element ends in "...", an optional one in "?").
template <typename T> static std::string describe(ArrayRef<T> list) {
  SmallVector<std::string> names;
  for (const T &x : list)
    names.push_back(std::string(x.name) +
                    (x.quantity == catalog::Quantity::Counted    ? "..."
                     : x.quantity == catalog::Quantity::Optional ? "?"
                                                                 : ""));
  return llvm::join(names, ", ");
}

/// "1 input", "2 inputs".
static std::string quantity(int64_t n, StringRef noun) {
  return std::to_string(n) + " " + noun.str() + (n == 1 ? "" : "s");
}

/// The catalog's entry for `kernel`, or an error naming the closest one.
static const catalog::Entry *lookupKernel(Operation *op, StringRef kernel) {
  if (const catalog::Entry *entry = catalog::lookup(kernel))
    return entry;
  SmallVector<StringRef> names;
  for (const catalog::Entry &entry : catalog::kEntries)
    names.push_back(entry.name);
  op->emitOpError() << "calls unknown kernel '" << kernel << "'"
                    << didYouMean(kernel, names)
                    << " (titan/Contract/KernelCatalog.def lists the kernels)";
  return nullptr;
}

/// Checks each parameter's type (i64 or f64) and their number against the
/// entry; sets `count` to the value of its count parameter (0 if none).
static LogicalResult verifyCatalogParams(Operation *op,
                                         const catalog::Entry &entry,
                                         ArrayAttr params, int64_t &count) {
  auto list = named(entry.params);
  count = 0;
  size_t next = 0, least = 0, most = 0;
  for (auto [index, p] : llvm::enumerate(list)) {
    int64_t times = p.quantity == catalog::Quantity::Counted ? count : 1;
    if (p.quantity != catalog::Quantity::Optional)
      least += times;
    most += times;
    size_t at = next;
    for (int64_t i = 0; i < times && next < params.size(); ++i, ++next) {
      bool isI64 = isa<IntegerAttr>(params[next]);
      if (isI64 != (p.type == catalog::ParamType::I64))
        return op->emitOpError()
               << "kernel '" << entry.name << "' takes parameter #" << next
               << " (" << p.name << ") as " << (isI64 ? "f64" : "i64")
               << ", got " << params[next];
    }
    if (int(index) == entry.countParam && at < params.size()) {
      count = cast<IntegerAttr>(params[at]).getInt();
      if (count < 0)
        return op->emitOpError()
               << "kernel '" << entry.name << "' parameter #" << at << " ("
               << p.name << ") must be non-negative, got " << count;
    }
  }
  if (params.size() < least || params.size() > most)
    return op->emitOpError()
           << "kernel '" << entry.name << "' takes "
           << (least == most ? quantity(least, "parameter")
                             : std::to_string(least) + " to " +
                                   std::to_string(most) + " parameters")
           << " (" << describe(list) << "), got " << params.size();
  return success();
}

/// Checks the number of a call's buffers of one role (`what`).
static LogicalResult verifyCatalogBuffers(Operation *op,
                                          const catalog::Entry &entry,
                                          ArrayRef<catalog::Buffer> list,
                                          int64_t count, size_t actual,
                                          StringRef what) {
  int64_t least = 0, most = 0;
  for (const catalog::Buffer &buffer : list) {
    int64_t times = buffer.quantity == catalog::Quantity::Counted ? count : 1;
    most += times;
    if (buffer.quantity != catalog::Quantity::Optional)
      least += times;
  }
  if (int64_t(actual) < least || int64_t(actual) > most)
    return op->emitOpError()
           << "kernel '" << entry.name << "' takes "
           << (least == most
                   ? quantity(least, what)
                   : std::to_string(least) + " or " + quantity(most, what))
           << " (" << describe(list) << "), got " << actual;
  return success();
}

/// Checks a call of `kernel` against its catalog entry: the kernel exists
/// and is a collective exactly when the op starts one; the parameters'
/// types and number; the inputs' and outputs' numbers.
static LogicalResult verifyCatalogCall(Operation *op, StringRef kernel,
                                       bool collective, size_t inputs,
                                       size_t outputs, ArrayAttr params) {
  const catalog::Entry *entry = lookupKernel(op, kernel);
  if (!entry)
    return failure();
  if ((entry->kind == catalog::Kind::Collective) != collective)
    return op->emitOpError()
           << "kernel '" << kernel << "' "
           << (collective ? "is not a collective"
                          : "is a collective (kernel.collective_start)");
  int64_t count;
  if (failed(verifyCatalogParams(op, *entry, params, count)) ||
      failed(verifyCatalogBuffers(op, *entry, named(entry->inputs), count,
                                  inputs, "input")))
    return failure();
  return verifyCatalogBuffers(op, *entry, named(entry->outputs), count, outputs,
                              "output");
}

LogicalResult CallOp::verify() {
  if (getOutputs().empty())
    return emitOpError() << "must write at least one output";
  for (Value v : llvm::concat<Value>(getInputs(), getOutputs()))
    if (failed(verifyBuffer(*this, v.getType(), "buffer")))
      return failure();
  if (failed(verifyParams(*this, getParams())))
    return failure();
  return verifyCatalogCall(*this, getKernel(), /*collective=*/false,
                           getInputs().size(), getOutputs().size(),
                           getParams());
}

/// A copy's buffers have one shape and element type (their memory spaces
/// may differ: offloaded state is staged through copies).
static LogicalResult verifyCopyTypes(Operation *op, MemRefType source,
                                     MemRefType target) {
  if (source.getShape() != target.getShape() ||
      source.getElementType() != target.getElementType())
    return op->emitOpError() << "copies " << source << " into " << target
                             << "; the shapes and element types must be equal";
  return success();
}

LogicalResult CopyOp::verify() {
  return verifyCopyTypes(*this, getSource().getType(), getTarget().getType());
}

MemorySpace titan::kernel::getMemorySpace(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  auto space = memref
                   ? dyn_cast_or_null<MemorySpaceAttr>(memref.getMemorySpace())
                   : MemorySpaceAttr();
  return space ? space.getValue() : MemorySpace::Device;
}

MemRefType titan::kernel::inMemorySpace(MemRefType type, MemorySpace space) {
  Attribute attr = space == MemorySpace::Device
                       ? Attribute()
                       : MemorySpaceAttr::get(type.getContext(), space);
  return MemRefType::get(type.getShape(), type.getElementType(),
                         type.getLayout(), attr);
}

/// An async op's request is waited exactly once, in its own block: the
/// CUDA target captures each step function into a graph, whose capture
/// cannot end while a stream it forked is unjoined
/// (cudaErrorStreamCaptureUnjoined).
static LogicalResult verifyWaitedOnce(Operation *op, Value request,
                                      StringRef what) {
  if (!request.hasOneUse() || !isa<WaitOp>(*request.getUsers().begin()) ||
      request.getUsers().begin()->getBlock() != op->getBlock())
    return op->emitOpError()
           << "request must be waited exactly once, by a kernel.wait in the "
              "same block (a step's CUDA graph capture cannot end with a "
           << what << " unjoined)";
  return success();
}

LogicalResult CopyStartOp::verify() {
  auto source = getSource().getType(), target = getTarget().getType();
  if (failed(verifyCopyTypes(*this, source, target)))
    return failure();
  if (getMemorySpace(source) == getMemorySpace(target))
    return emitOpError() << "copies within one memory space (kernel.copy "
                            "does); copy_start copies between host and "
                            "device";
  return verifyWaitedOnce(*this, getRequest(), "copy");
}

LogicalResult CollectiveStartOp::verify() {
  if (failed(verifyWaitedOnce(*this, getRequest(), "collective")))
    return failure();
  if (failed(verifyParams(*this, getParams())))
    return failure();
  return verifyCatalogCall(*this, getKernel(), /*collective=*/true,
                           /*inputs=*/1, /*outputs=*/1, getParams());
}

int64_t GenericOp::getNumElements() {
  // The workspace is scratch, not a tensor the kernel runs over; a mapped
  // input is read where its map says.
  int64_t elements = 0;
  for (auto [i, v] : llvm::enumerate(getOperands().drop_back()))
    if (v != getWorkspace() && !(i < getInputs().size() && isMapped(i)))
      elements =
          std::max(elements, cast<MemRefType>(v.getType()).getNumElements());
  return elements;
}

AffineMap GenericOp::getInputMap(unsigned index) {
  ArrayRef<Attribute> maps = getInputMaps().getValue();
  if (index < maps.size())
    return cast<AffineMapAttr>(maps[index]).getValue();
  return AffineMap::getMultiDimIdentityMap(1, getContext());
}

bool GenericOp::isMapped(unsigned index) {
  return !getInputMap(index).isIdentity();
}

int64_t GenericOp::getTrafficBytes() {
  auto bytes = [](Value v) {
    return getStaticByteSize(v.getType()).value_or(0);
  };
  int64_t total = getWorkspace() ? bytes(getWorkspace()) : 0;
  for (const GenericSegment &segment : getSegmentList()) {
    SmallVector<Value> read;
    for (unsigned i = segment.inputBegin; i < segment.inputEnd; ++i)
      if (!llvm::is_contained(read, getInputs()[i]))
        read.push_back(getInputs()[i]);
    for (Value v : read)
      total += bytes(v);
    for (unsigned i = segment.outputBegin; i < segment.outputEnd; ++i)
      total += bytes(getOutputs()[i]);
    for (unsigned i = segment.reductionBegin; i < segment.reductionEnd; ++i)
      total += bytes(getReductions()[i]);
  }
  // The per-element inputs again for each further pass over rows that
  // leave the cache.
  int64_t columns = getRowLength(), passes = getRowPasses();
  if (passes > 1) {
    int64_t rowBytes = 0, inputBytes = 0;
    for (auto [i, in] : llvm::enumerate(getInputs()))
      if (!isMapped(i) && !isBroadcast(in) && !isPerColumn(in)) {
        inputBytes += bytes(in);
        rowBytes += bytes(in) / (getNumElements() / columns);
      }
    if (rowBytes > kRowCacheBytes)
      total += (passes - 1) * inputBytes;
  }
  return total;
}

DenseMap<Operation *, int64_t> GenericOp::getRowReductionPasses() {
  DenseMap<Operation *, int64_t> passes;
  if (getRowLength() <= 0 || getBody().empty())
    return passes;
  // A value's pass: that of the latest row reduction it depends on.
  DenseMap<Value, int64_t> pass;
  for (Operation &op : getBody().front().without_terminator()) {
    int64_t p = 0;
    for (Value v : op.getOperands())
      p = std::max(p, pass.lookup(v));
    if (isRowReduction(&op))
      passes[&op] = ++p;
    for (Value v : op.getResults())
      pass[v] = p;
  }
  return passes;
}

bool GenericOp::writesElements() {
  return !getReductions().empty() || llvm::any_of(getOutputs(), [&](Value out) {
    return !isBroadcast(out) && !isPerRowOutput(out);
  });
}

int64_t GenericOp::getRowPasses() {
  if (getRowLength() <= 0)
    return 0;
  int64_t passes = 0;
  for (auto [op, pass] : getRowReductionPasses())
    passes = std::max(passes, pass);
  return passes + (writesElements() ? 1 : 0);
}

bool GenericOp::readsAcrossIndices() {
  for (unsigned i = 0, e = getInputs().size(); i < e; ++i)
    if (isMapped(i) && !isPerRowInput(i))
      return true;
  return !getBody().empty() && !getBody().front().getOps<IndexOp>().empty();
}

bool GenericOp::isBroadcast(Value buffer) {
  if (cast<MemRefType>(buffer.getType()).getNumElements() != 1 ||
      isPerRowOutput(buffer) || llvm::is_contained(getReductions(), buffer))
    return false;
  // One element in a segment of more (any segment it is in: a buffer of
  // one element read at every index of one is read once by all).
  for (const GenericSegment &segment : getSegmentList()) {
    auto in = getInputs().slice(segment.inputBegin,
                                segment.inputEnd - segment.inputBegin);
    auto out = getOutputs().slice(segment.outputBegin,
                                  segment.outputEnd - segment.outputBegin);
    if (segment.elements > 1 &&
        (llvm::is_contained(in, buffer) || llvm::is_contained(out, buffer)))
      return true;
  }
  return false;
}

bool GenericOp::isPerColumn(Value buffer) {
  int64_t columns = getRowLength();
  return columns > 0 &&
         cast<MemRefType>(buffer.getType()).getNumElements() == columns &&
         getNumElements() > columns && llvm::is_contained(getInputs(), buffer);
}

bool GenericOp::isPerRowInput(unsigned index) {
  // Rows of one column read every input at its index (d0 floordiv 1 is d0).
  int64_t columns = getRowLength();
  return columns > 1 && isMapped(index) &&
         getInputMap(index) ==
             AffineMap::get(
                 1, 0, getAffineDimExpr(0, getContext()).floorDiv(columns));
}

bool GenericOp::isPerRowOutput(Value buffer) {
  int64_t columns = getRowLength(), elements = getNumElements();
  return columns > 0 &&
         cast<MemRefType>(buffer.getType()).getNumElements() ==
             elements / columns &&
         elements / columns < elements &&
         llvm::is_contained(getOutputs(), buffer);
}

DenseSet<Value> GenericOp::getUniformValues() {
  DenseSet<Value> uniform;
  Block &body = getBody().front();
  for (auto [arg, input] : llvm::zip(body.getArguments(), getInputs()))
    if (isBroadcast(input))
      uniform.insert(arg);
  // A row reduction differs from row to row, whatever it reduces; the
  // index and column from index to index.
  for (Operation &op : body.without_terminator())
    if (!isRowReduction(&op) && !isa<IndexOp, ColumnOp>(op) &&
        llvm::all_of(op.getOperands(),
                     [&](Value v) { return uniform.contains(v); }))
      uniform.insert(op.getResults().begin(), op.getResults().end());
  return uniform;
}

DenseSet<Value> GenericOp::getRowUniformValues() {
  DenseSet<Value> rowUniform = getUniformValues();
  Block &body = getBody().front();
  for (auto [i, arg] : llvm::enumerate(body.getArguments()))
    if (isPerRowInput(i))
      rowUniform.insert(arg);
  for (Operation &op : body.without_terminator())
    if (isRowReduction(&op) || (!isa<IndexOp, ColumnOp>(op) &&
                                llvm::all_of(op.getOperands(), [&](Value v) {
                                  return rowUniform.contains(v);
                                })))
      rowUniform.insert(op.getResults().begin(), op.getResults().end());
  return rowUniform;
}

SmallVector<Value> GenericOp::getReductionsOfKind(ReductionKind kind) {
  SmallVector<Value> buffers;
  for (auto [buffer, attr] :
       llvm::zip(getReductions(), getReductionKinds().getValue()))
    if (cast<ReductionKindAttr>(attr).getValue() == kind)
      buffers.push_back(buffer);
  return buffers;
}

bool GenericOp::isColumnSum(Value buffer) {
  return llvm::is_contained(getReductionsOfKind(ReductionKind::ColumnSum),
                            buffer);
}

int64_t GenericOp::getColumnSumBlocks() {
  int64_t sums = getReductionsOfKind(ReductionKind::ColumnSum).size();
  int64_t columns = getRowLength();
  if (!getWorkspace() || sums == 0 || columns <= 0)
    return 0;
  return cast<MemRefType>(getWorkspace().getType()).getNumElements() /
         (sums * columns);
}

bool GenericOp::isTransposed(Value buffer) {
  for (int64_t index : getTransposedOutputs())
    if (index >= 0 && index < int64_t(getOutputs().size()) &&
        getOutputs()[index] == buffer)
      return true;
  return false;
}

std::optional<std::pair<int64_t, int64_t>> GenericOp::getTransposedShape() {
  SmallVector<GenericSegment> segments = getSegmentList();
  if (segments.size() != 1)
    return std::nullopt;
  return getTransposedShape(segments.front());
}

std::optional<std::pair<int64_t, int64_t>>
GenericOp::getTransposedShape(const GenericSegment &segment) {
  for (int64_t index : getTransposedOutputs()) {
    if (index < int64_t(segment.outputBegin) ||
        index >= int64_t(segment.outputEnd))
      continue;
    auto type = cast<MemRefType>(getOutputs()[index].getType());
    int64_t cols = type.getRank() ? type.getDimSize(0) : 1;
    return std::make_pair(cols ? segment.elements / cols : 0, cols);
  }
  return std::nullopt;
}

SmallVector<GenericSegment> GenericOp::getSegmentList() {
  unsigned numInputs = getInputs().size(), numOutputs = getOutputs().size(),
           numReductions = getReductions().size();
  ArrayRef<int64_t> counts = getSegments();
  SmallVector<GenericSegment> segments;
  unsigned in = 0, out = 0, red = 0;
  auto add = [&](int64_t inputs, int64_t outputs, int64_t reductions) {
    GenericSegment segment{
        in,  unsigned(in + inputs),      out, unsigned(out + outputs),
        red, unsigned(red + reductions), 0};
    auto count = [&](Value v) {
      segment.elements = std::max(
          segment.elements, cast<MemRefType>(v.getType()).getNumElements());
    };
    for (unsigned i = segment.inputBegin; i < segment.inputEnd; ++i)
      if (!isMapped(i))
        count(getInputs()[i]);
    for (unsigned i = segment.outputBegin; i < segment.outputEnd; ++i)
      count(getOutputs()[i]);
    for (unsigned i = segment.reductionBegin; i < segment.reductionEnd; ++i)
      count(getReductions()[i]);
    segments.push_back(segment);
    in = segment.inputEnd, out = segment.outputEnd, red = segment.reductionEnd;
  };
  if (counts.empty()) {
    add(numInputs, numOutputs, numReductions);
    return segments;
  }
  if (counts.size() % 3 != 0)
    return {};
  for (unsigned i = 0; i < counts.size(); i += 3) {
    if (counts[i] < 0 || counts[i + 1] < 0 || counts[i + 2] < 0 ||
        in + counts[i] > numInputs || out + counts[i + 1] > numOutputs ||
        red + counts[i + 2] > numReductions)
      return {};
    add(counts[i], counts[i + 1], counts[i + 2]);
  }
  if (in != numInputs || out != numOutputs || red != numReductions)
    return {};
  return segments;
}

DenseSet<Operation *> GenericOp::getSegmentOps(const GenericSegment &segment) {
  Block &body = getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  unsigned numOutputs = getOutputs().size();
  SmallVector<Value> worklist;
  for (unsigned i = segment.outputBegin; i < segment.outputEnd; ++i)
    worklist.push_back(yield.getValues()[i]);
  for (unsigned i = segment.reductionBegin; i < segment.reductionEnd; ++i)
    worklist.push_back(yield.getValues()[numOutputs + i]);
  DenseSet<Operation *> ops;
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !ops.insert(def).second)
      continue;
    llvm::append_range(worklist, def->getOperands());
  }
  return ops;
}

/// `segments` partitions the buffers into segments that each write
/// something.
LogicalResult GenericOp::verifySegments() {
  SmallVector<GenericSegment> segments = getSegmentList();
  if (segments.empty())
    return emitOpError() << "segments must be (inputs, outputs, reductions) "
                            "triples that partition the kernel's buffers";
  for (const GenericSegment &segment : segments)
    if (segment.outputBegin == segment.outputEnd &&
        segment.reductionBegin == segment.reductionEnd)
      return emitOpError() << "each segment must write an output or a "
                              "reduction";
  // Segments run in no order: none may touch what another writes.
  auto buffersOf = [&](const GenericSegment &segment, bool written) {
    SmallVector<Value> buffers;
    if (!written)
      for (unsigned i = segment.inputBegin; i < segment.inputEnd; ++i)
        buffers.push_back(viewedBuffer(getInputs()[i]));
    for (unsigned i = segment.outputBegin; i < segment.outputEnd; ++i)
      buffers.push_back(viewedBuffer(getOutputs()[i]));
    for (unsigned i = segment.reductionBegin; i < segment.reductionEnd; ++i)
      buffers.push_back(viewedBuffer(getReductions()[i]));
    return buffers;
  };
  for (auto [i, a] : llvm::enumerate(segments))
    for (auto [j, b] : llvm::enumerate(segments))
      if (i != j)
        for (Value written : buffersOf(a, /*written=*/true))
          if (llvm::is_contained(buffersOf(b, /*written=*/false), written))
            return emitOpError()
                   << "segment " << i << " writes a buffer segment " << j
                   << " reads or writes";
  return success();
}

/// An absmax holds one f32; a row kernel's column sums hold a row's
/// elements, of one type, with a workspace of whole blocks of their
/// partials (at least one block, at most one a row); the reductions and
/// the workspace are contiguous and distinct from every other buffer.
LogicalResult GenericOp::verifyReductions() {
  SmallVector<Value> sums = getReductionsOfKind(ReductionKind::ColumnSum);
  int64_t columns = getRowLength();
  Type sumType;
  for (auto [i, r, attr] :
       llvm::enumerate(getReductions(), getReductionKinds().getValue())) {
    auto type = cast<MemRefType>(r.getType());
    Type element = type.getElementType();
    if (!type.getLayout().isIdentity())
      return emitOpError() << "reduction buffer of type " << type
                           << " is not contiguous (identity layout)";
    for (Value other : getReductions().take_front(i))
      if (viewedBuffer(other) == viewedBuffer(r))
        return emitOpError() << "reduction buffer of type " << type
                             << " is also another reduction";
    if (cast<ReductionKindAttr>(attr).getValue() == ReductionKind::AbsMax) {
      if (type.getNumElements() != 1 || !element.isF32())
        return emitOpError() << "absmax reduction buffer of type " << type
                             << " must hold one f32";
    } else {
      if (columns <= 0)
        return emitOpError() << "column_sum reduction needs a row kernel "
                                "(a row_length)";
      if (type.getNumElements() != columns ||
          !isa<Float32Type, Float64Type>(element))
        return emitOpError()
               << "column_sum reduction buffer of type " << type
               << " must hold " << columns << " (the row length) f32 or f64";
      if (sumType && element != sumType)
        return emitOpError() << "column_sum reductions must share one "
                                "element type";
      sumType = element;
    }
    for (Value v : llvm::concat<Value>(getInputs(), getOutputs()))
      if (viewedBuffer(v) == viewedBuffer(r))
        return emitOpError() << "reduction buffer of type " << type
                             << " is also an input or output";
  }
  Value workspace = getWorkspace();
  if (!workspace) {
    if (!sums.empty())
      return emitOpError() << "column_sum reductions need a workspace for "
                              "their blocks' partial sums";
    return success();
  }
  auto type = cast<MemRefType>(workspace.getType());
  int64_t perBlock = int64_t(sums.size()) * columns;
  if (sums.empty() || type.getElementType() != sumType ||
      !type.getLayout().isIdentity() || type.getNumElements() < perBlock ||
      type.getNumElements() % perBlock != 0 ||
      type.getNumElements() / perBlock > getNumElements() / columns)
    return emitOpError() << "workspace of type " << type
                         << " must hold the column sums' partials: P x "
                         << sums.size() << " x " << columns << " elements of "
                         << (sumType ? sumType
                                     : Type(Float32Type::get(getContext())))
                         << ", contiguous, with 1 <= P <= the rows";
  for (Value v : getOperands().drop_back())
    if (v != workspace && viewedBuffer(v) == viewedBuffer(workspace))
      return emitOpError() << "workspace is also another buffer of the kernel";
  return success();
}

/// Each input map takes every index of its segment inside its buffer; a
/// kernel reading across indices is no row kernel, a segment doing so runs
/// no tiles, and none writes a buffer it reads through a map (another
/// index's element may already be written).
LogicalResult GenericOp::verifyInputMaps() {
  ArrayRef<Attribute> maps = getInputMaps().getValue();
  if (!maps.empty() && maps.size() != getInputs().size())
    return emitOpError() << "has " << maps.size() << " input maps for "
                         << getInputs().size() << " inputs";
  if (readsAcrossIndices() && getRowLength() != 0)
    return emitOpError() << "a row kernel reads each input at its index, "
                            "column or row (no other input maps, no "
                            "kernel.index)";
  for (const GenericSegment &segment : getSegmentList()) {
    if (!getTransposedShape(segment))
      continue;
    bool mapped = false;
    for (unsigned i = segment.inputBegin; i < segment.inputEnd; ++i)
      mapped |= isMapped(i);
    if (mapped || llvm::any_of(getSegmentOps(segment),
                               [](Operation *op) { return isa<IndexOp>(op); }))
      return emitOpError() << "a segment in tiles (writing a transposed "
                              "output) reads each input at its index (no "
                              "input maps, no kernel.index)";
  }
  for (const GenericSegment &segment : getSegmentList())
    for (unsigned i = segment.inputBegin; i < segment.inputEnd; ++i) {
      AffineMap map = getInputMap(i);
      if (!map.isIdentity() &&
          (map.getNumDims() != 1 || map.getNumSymbols() != 0 ||
           map.getNumResults() != 1))
        return emitOpError() << "input map " << AffineMapAttr::get(map)
                             << " must take one index to one element";
      if (!isMapped(i))
        continue;
      int64_t size =
          cast<MemRefType>(getInputs()[i].getType()).getNumElements();
      if (!mapStaysInside(map, segment.elements, size))
        return emitOpError()
               << "input map " << AffineMapAttr::get(map) << " of input " << i
               << " may leave its " << size << " elements for an index below "
               << segment.elements;
      for (Value out : getOutputs())
        if (viewedBuffer(out) == viewedBuffer(getInputs()[i]))
          return emitOpError()
                 << "input " << i << " is read through a map and also written";
    }
  return success();
}

/// A row kernel's rows divide its elements; it is one segment, untiled.
LogicalResult GenericOp::verifyRows() {
  int64_t columns = getRowLength();
  if (columns == 0)
    return success();
  if (columns < 0 || getNumElements() % columns != 0)
    return emitOpError() << "row length " << columns
                         << " does not divide the kernel's " << getNumElements()
                         << " elements";
  if (getSegmentList().size() != 1 || !getTransposedOutputs().empty())
    return emitOpError() << "a row kernel has one segment and no transposed "
                            "outputs";
  return success();
}

/// The transposed outputs are distinct outputs of their segment's N
/// elements with one leading dimension C (per segment) dividing N, and
/// read by nothing in the kernel.
LogicalResult GenericOp::verifyTransposedOutputs() {
  ArrayRef<int64_t> indices = getTransposedOutputs();
  SmallVector<GenericSegment> segments = getSegmentList();
  for (auto [i, index] : llvm::enumerate(indices)) {
    if (index < 0 || index >= int64_t(getOutputs().size()) ||
        llvm::is_contained(indices.take_front(i), index))
      return emitOpError() << "transposed output " << index
                           << " is not a distinct output index";
    // The segment writing it (verifySegments names a bad partition).
    const GenericSegment *segment =
        llvm::find_if(segments, [&](const GenericSegment &s) {
          return index >= int64_t(s.outputBegin) &&
                 index < int64_t(s.outputEnd);
        });
    if (segment == segments.end())
      continue;
    int64_t elements = segment->elements;
    Value out = getOutputs()[index];
    auto type = cast<MemRefType>(out.getType());
    if (type.getRank() < 2 || type.getNumElements() != elements)
      return emitOpError() << "transposed output of type " << type
                           << " must have rank 2 or more and all " << elements
                           << " elements";
    int64_t cols = type.getDimSize(0);
    if (cols != getTransposedShape(*segment)->second)
      return emitOpError() << "transposed outputs must share their leading "
                              "dimension (the kernel's columns)";
    if (cols == 0 || elements % cols != 0)
      return emitOpError() << "transposed output of type " << type
                           << ": its leading dimension does not divide the "
                           << elements << " elements";
    for (Value in : getInputs())
      if (viewedBuffer(in) == viewedBuffer(out))
        return emitOpError() << "transposed output of type " << type
                             << " is also an input: index i is written where "
                                "another index reads";
    for (auto [other, v] : llvm::enumerate(getOutputs()))
      if (int64_t(other) != index && viewedBuffer(v) == viewedBuffer(out))
        return emitOpError() << "transposed output of type " << type
                             << " is also another output";
  }
  return success();
}

LogicalResult GenericOp::verify() {
  if (getOutputs().empty() && getReductions().empty())
    return emitOpError() << "must write at least one output or reduction";
  if (failed(verifyTransposedOutputs()))
    return failure();
  if (getReductionKinds().size() != getReductions().size())
    return emitOpError() << "has " << getReductions().size()
                         << " reductions but " << getReductionKinds().size()
                         << " reduction kinds";
  if (failed(verifyReductions()) || failed(verifySegments()) ||
      failed(verifyRows()))
    return failure();
  if (failed(verifyInputMaps()))
    return failure();
  for (const GenericSegment &segment : getSegmentList()) {
    SmallVector<Value> buffers;
    for (unsigned i = segment.inputBegin; i < segment.inputEnd; ++i)
      buffers.push_back(getInputs()[i]);
    llvm::append_range(
        buffers, getOutputs().slice(segment.outputBegin,
                                    segment.outputEnd - segment.outputBegin));
    for (auto [k, v] : llvm::enumerate(buffers)) {
      auto type = cast<MemRefType>(v.getType());
      if (!type.getLayout().isIdentity())
        return emitOpError() << "buffer of type " << type
                             << " is not contiguous (identity layout)";
      bool mapped = k < segment.inputEnd - segment.inputBegin &&
                    isMapped(segment.inputBegin + k);
      if (!mapped && type.getNumElements() != segment.elements &&
          type.getNumElements() != 1 && !isPerColumn(v) && !isPerRowOutput(v))
        return emitOpError()
               << "buffer of type " << type << " has " << type.getNumElements()
               << " elements; every buffer must have " << segment.elements
               << (getRowLength()
                       ? ", one (broadcast), for an input the row length, or "
                         "for an output one a row"
                       : " or one (broadcast)");
    }
  }
  for (Value out : getOutputs())
    if (isBroadcast(out) && llvm::any_of(getInputs(), [&](Value in) {
          return viewedBuffer(in) == viewedBuffer(out);
        }))
      return emitOpError() << "broadcast output of type " << out.getType()
                           << " is also an input: it is written once, "
                              "before the other indices read it";
  return success();
}

/// The body's arguments and yielded values are the buffers' elements, and
/// it only computes: a target generates it as straight-line code.
LogicalResult GenericOp::verifyRegions() {
  Block &body = getBody().front();
  auto elementTypes = [](ValueRange buffers) {
    return llvm::map_to_vector(buffers, [](Value v) {
      return cast<MemRefType>(v.getType()).getElementType();
    });
  };
  if (TypeRange(body.getArgumentTypes()) !=
      TypeRange(elementTypes(getInputs())))
    return emitOpError()
           << "body's arguments must be the element types of the inputs";
  auto yield = cast<YieldOp>(body.getTerminator());
  SmallVector<Type> yielded = elementTypes(getOutputs());
  llvm::append_range(yielded, elementTypes(getReductions()));
  if (TypeRange(yield.getValues().getTypes()) != TypeRange(yielded))
    return yield.emitOpError() << "must yield one value of each output's, "
                                  "then each reduction's, element type";
  // Each segment's part of the body reads its own arguments only.
  SmallVector<GenericSegment> segments = getSegmentList();
  auto foreign = [&](Value v, const GenericSegment &segment) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &body &&
           (arg.getArgNumber() < segment.inputBegin ||
            arg.getArgNumber() >= segment.inputEnd);
  };
  unsigned numOutputs = getOutputs().size();
  if (segments.size() > 1)
    for (const GenericSegment &segment : segments) {
      DenseSet<Operation *> ops = getSegmentOps(segment);
      for (Operation &op : body.without_terminator())
        if (ops.contains(&op) && llvm::any_of(op.getOperands(), [&](Value v) {
              return foreign(v, segment);
            }))
          return op.emitOpError()
                 << "reads an input of another segment of its kernel.generic";
      SmallVector<Value> yielded(yield.getValues().slice(
          segment.outputBegin, segment.outputEnd - segment.outputBegin));
      llvm::append_range(yielded,
                         yield.getValues().slice(
                             numOutputs + segment.reductionBegin,
                             segment.reductionEnd - segment.reductionBegin));
      if (llvm::any_of(yielded, [&](Value v) { return foreign(v, segment); }))
        return yield.emitOpError()
               << "yields an input of another segment for a segment's buffer";
    }
  DenseSet<Value> uniform = getUniformValues();
  for (auto [value, out] : llvm::zip(yield.getValues(), getOutputs()))
    if (isBroadcast(out) && !uniform.contains(value))
      return yield.emitOpError()
             << "yields a broadcast output's value that depends on a "
                "per-element input";
  DenseSet<Value> rowUniform;
  if (getRowLength() > 0)
    rowUniform = getRowUniformValues();
  for (auto [value, out] : llvm::zip(yield.getValues(), getOutputs()))
    if (isPerRowOutput(out) && !rowUniform.contains(value))
      return yield.emitOpError()
             << "yields a per-row output's value that depends on an element "
                "(not only on the row's reductions and per-row inputs)";
  for (Operation &op : body.without_terminator()) {
    if (!isMemoryEffectFree(&op) || op.getNumRegions() != 0)
      return op.emitOpError()
             << "cannot be in a kernel.generic body: the body only computes "
                "(no memory effects, no regions)";
    for (Type t :
         llvm::concat<const Type>(op.getOperandTypes(), op.getResultTypes()))
      if (!t.isIntOrIndexOrFloat())
        return op.emitOpError()
               << "computes on " << t
               << "; a kernel.generic body computes on scalars";
  }
  return success();
}

LogicalResult IndexOp::verify() {
  auto generic = (*this)->getParentOfType<GenericOp>();
  if (generic.getRowLength() != 0)
    return emitOpError() << "cannot be in a row kernel";
  return success();
}

/// Row reductions and the column are a row kernel's.
static LogicalResult verifyInRowKernel(Operation *op) {
  auto generic = op->getParentOfType<GenericOp>();
  if (!generic || generic.getRowLength() == 0)
    return op->emitOpError() << "must be in a row kernel (a kernel.generic "
                                "with a row_length)";
  return success();
}

LogicalResult RowSumOp::verify() { return verifyInRowKernel(*this); }
LogicalResult RowMaxOp::verify() { return verifyInRowKernel(*this); }
LogicalResult RowLogSumExpOp::verify() { return verifyInRowKernel(*this); }
LogicalResult ColumnOp::verify() { return verifyInRowKernel(*this); }

#define GET_OP_CLASSES
#include "titan/Dialect/Kernel/IR/KernelOps.cpp.inc"

std::optional<unsigned> titan::kernel::communicationAxisMask(Operation *op) {
  StringRef kernel;
  ArrayAttr params;
  if (auto start = dyn_cast<CollectiveStartOp>(op)) {
    kernel = start.getKernel();
    params = start.getParams();
  } else if (auto call = dyn_cast<CallOp>(op)) {
    kernel = call.getKernel();
    params = call.getParams();
  } else {
    return std::nullopt;
  }
  const catalog::Entry *entry = catalog::lookup(kernel);
  if (!entry || (entry->kind != catalog::Kind::Collective &&
                 !entry->has(catalog::kCommunicates)))
    return std::nullopt;
  std::optional<unsigned> index = catalog::paramIndex(*entry, "axis_mask");
  if (!index || *index >= params.size())
    return std::nullopt;
  auto mask = dyn_cast<IntegerAttr>(params[*index]);
  if (!mask || mask.getInt() < 0)
    return std::nullopt;
  return unsigned(mask.getInt());
}
