//===- GeneratedKernels.cpp - kernel.generic as host loops or GPU kernels -===//

#include "titan/Conversion/KernelToRuntimeCalls/GeneratedKernels.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace titan;

namespace {
/// Marks the functions this file generates, for their lowering.
constexpr StringLiteral kGeneratedAttrName = "titan.generated_kernel";

/// Writes a kernel's reduction accumulators (one per reduction buffer) to
/// the buffers, at the end of its element loop.
using PublishReductions = llvm::function_ref<void(
    OpBuilder &, Location, ArrayRef<Value>, ArrayRef<Value>)>;

/// The type an element of `type` is loaded and stored as: itself, or the
/// integer of its width for a float type LLVM lacks (float8).
Type memoryType(Type type) {
  if (LLVM::isCompatibleType(type))
    return type;
  return IntegerType::get(type.getContext(), type.getIntOrFloatBitWidth());
}

/// The element of type `type` at `address`.
Value loadElement(OpBuilder &b, Location loc, Type type, Value address,
                  ArrayAttr groups) {
  Type stored = memoryType(type);
  auto load = LLVM::LoadOp::create(b, loc, stored, address);
  if (groups)
    load.setAccessGroupsAttr(groups);
  if (stored == type)
    return load;
  return arith::BitcastOp::create(b, loc, type, load);
}

/// Stores `v` at `address`.
void storeElement(OpBuilder &b, Location loc, Value v, Value address,
                  ArrayAttr groups) {
  Type stored = memoryType(v.getType());
  if (stored != v.getType())
    v = arith::BitcastOp::create(b, loc, stored, v);
  auto store = LLVM::StoreOp::create(b, loc, v, address);
  if (groups)
    store.setAccessGroupsAttr(groups);
}

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
  load.setAccessGroupsAttr(groups);
  SmallVector<Value> elements;
  for (unsigned j = 0; j < width; ++j) {
    Value lane = LLVM::ExtractElementOp::create(
        b, loc, load,
        LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                 b.getI32IntegerAttr(j)));
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
    pack = LLVM::InsertElementOp::create(
        b, loc, pack, v,
        LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                 b.getI32IntegerAttr(int32_t(j))));
  }
  unsigned bytes = elements.size() * stored.getIntOrFloatBitWidth() / 8;
  auto store = LLVM::StoreOp::create(b, loc, pack, address, bytes);
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

/// At the end of `fn`'s entry block, whose `bases` are the buffers'
/// addresses (inputs, outputs, then reductions):
///   the body's uniform part (broadcast inputs, what depends on them only);
///   if (begin == 0) store the broadcast outputs;
///   for (p = begin; p < end; p += step) { load every other input's pack
///     p (`width` elements from p * width, one vector access); the rest of
///     the body per element; store every other output's pack; combine each
///     reduction's values into its accumulator }
///   publish(accumulators)
void emitElementLoop(OpBuilder &b, LLVM::LLVMFuncOp fn,
                     kernel::GenericOp generic, ArrayRef<Value> bases,
                     Value begin, Value end, Value step, unsigned width,
                     PublishReductions publish) {
  Location loc = generic.getLoc();
  Type i64 = b.getI64Type(), i32 = b.getI32Type();
  Block &scalar = generic.getBody().front();
  auto yield = cast<kernel::YieldOp>(scalar.getTerminator());
  SmallVector<Value> buffers(generic->getOperands().drop_back());
  unsigned numInputs = generic.getInputs().size();
  unsigned numOutputs = generic.getOutputs().size();
  unsigned numReductions = generic.getReductions().size();
  DenseSet<Value> uniform = generic.getUniformValues();
  ValueRange outputs = generic.getOutputs();
  ArrayRef<Value> outputBases = bases.slice(numInputs, numOutputs);
  ArrayRef<Value> reductionBases = bases.take_back(numReductions);
  ValueRange outputValues = yield.getValues().take_front(numOutputs);
  ValueRange reducedValues = yield.getValues().take_back(numReductions);
  bool broadcastOutputs =
      llvm::any_of(outputs, [&](Value v) { return generic.isBroadcast(v); });
  Block *entry = &fn.getBody().front();
  Block *broadcastStores =
      broadcastOutputs ? b.createBlock(&fn.getBody()) : nullptr;
  SmallVector<Type> carried(1 + numReductions, i32);
  carried[0] = i64;
  Block *header = b.createBlock(&fn.getBody(), {}, carried,
                                SmallVector<Location>(carried.size(), loc));
  Block *body = b.createBlock(&fn.getBody());
  Block *exit = b.createBlock(&fn.getBody());

  // The uniform part, once per call (per span on the host, per thread on
  // a GPU), not once per element.
  IRMapping map;
  b.setInsertionPointToEnd(entry);
  for (auto [arg, buffer, base] :
       llvm::zip(scalar.getArguments(), buffers, bases))
    if (generic.isBroadcast(buffer))
      map.map(arg, loadElement(b, loc, arg.getType(), base, {}));
  auto isUniform = [&](Operation &op) {
    return llvm::all_of(op.getResults(),
                        [&](Value v) { return uniform.contains(v); });
  };
  for (Operation &op : scalar.without_terminator())
    if (isUniform(op))
      b.clone(op, map);
  // Every reduction starts from +0 (absmax over nothing).
  SmallVector<Value> start = {begin};
  Value zero32 = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0));
  start.append(numReductions, zero32);
  if (broadcastOutputs) {
    // The broadcast outputs, by whoever runs index 0.
    Value zero = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(0));
    Value first =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, begin, zero);
    LLVM::CondBrOp::create(b, loc, first, broadcastStores, ValueRange{}, header,
                           start);
    b.setInsertionPointToEnd(broadcastStores);
    for (auto [value, buffer, base] :
         llvm::zip(outputValues, outputs, outputBases))
      if (generic.isBroadcast(buffer))
        storeElement(b, loc, map.lookupOrDefault(value), base, {});
  }
  LLVM::BrOp::create(b, loc, start, header);

  b.setInsertionPointToEnd(header);
  Value index = header->getArgument(0);
  Value more =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, index, end);
  LLVM::CondBrOp::create(b, loc, more, body, exit);

  // Every load, then the scalar body, then every store. Element i is all
  // an iteration touches, so the iterations are independent even where an
  // output is an input: the accesses form one parallel access group, and
  // the vectorizer needs no run-time overlap check (which an in-place
  // kernel's identical pointers would fail). The reductions are the
  // loop's only carried values, which the vectorizer recognizes.
  MLIRContext *ctx = b.getContext();
  auto group =
      LLVM::AccessGroupAttr::get(ctx, DistinctAttr::create(UnitAttr::get(ctx)));
  ArrayAttr groups = b.getArrayAttr({group});
  b.setInsertionPointToEnd(body);
  Value first = index;
  if (width > 1)
    first = LLVM::MulOp::create(
        b, loc, index,
        LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(width)));
  auto packAddress = [&](Value base, Type element) {
    return LLVM::GEPOp::create(b, loc, base.getType(), memoryType(element),
                               base, ArrayRef<LLVM::GEPArg>{first});
  };
  // lanes[j]: element j of the pack, per body value.
  SmallVector<IRMapping> lanes(width, map);
  for (auto [arg, buffer, base] :
       llvm::zip(scalar.getArguments(), buffers, bases)) {
    if (generic.isBroadcast(buffer))
      continue;
    SmallVector<Value> elements = loadPack(
        b, loc, arg.getType(), packAddress(base, arg.getType()), width, groups);
    for (unsigned j = 0; j < width; ++j)
      lanes[j].map(arg, elements[j]);
  }
  for (IRMapping &lane : lanes)
    for (Operation &op : scalar.without_terminator())
      if (!isUniform(op))
        b.clone(op, lane);
  for (auto [value, buffer, base] :
       llvm::zip(outputValues, outputs, outputBases)) {
    if (generic.isBroadcast(buffer))
      continue;
    SmallVector<Value> elements = llvm::map_to_vector(
        lanes, [&](IRMapping &lane) { return lane.lookupOrDefault(value); });
    storePack(b, loc, elements, packAddress(base, elements.front().getType()),
              groups);
  }
  SmallVector<Value> next = {LLVM::AddOp::create(b, loc, index, step)};
  for (auto [value, acc] :
       llvm::zip(reducedValues, header->getArguments().drop_front())) {
    Value combined = acc;
    for (IRMapping &lane : lanes)
      combined = combineAbsMax(b, loc, combined, lane.lookupOrDefault(value));
    next.push_back(combined);
  }
  auto latch = LLVM::BrOp::create(b, loc, next, header);
  latch.setLoopAnnotationAttr(LLVM::LoopAnnotationAttr::get(
      ctx, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {group}));

  b.setInsertionPointToEnd(exit);
  if (numReductions)
    publish(b, loc,
            llvm::to_vector(ValueRange(header->getArguments().drop_front())),
            reductionBases);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

/// The host's reductions: each span's accumulator, atomically into the
/// buffer (which the step zeroed before the spans run).
void publishHostReductions(OpBuilder &b, Location loc,
                           ArrayRef<Value> accumulators,
                           ArrayRef<Value> buffers) {
  for (auto [acc, buffer] : llvm::zip(accumulators, buffers))
    LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::umax, buffer, acc,
                              LLVM::AtomicOrdering::monotonic);
}

/// nvvm.read.ptx.sreg.* as i64.
template <typename SRegOp> Value sreg(OpBuilder &b, Location loc) {
  Value v = SRegOp::create(b, loc, b.getI32Type());
  return LLVM::ZExtOp::create(b, loc, b.getI64Type(), v);
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
  // type and whether it is broadcast: kernels alike in all but the element
  // count share a function.
  auto buffers = [&](StringRef role, ValueRange values) {
    for (Value buffer : values)
      os << role << cast<MemRefType>(buffer.getType()).getElementType()
         << (generic.isBroadcast(buffer) ? "[1]," : ",");
  };
  buffers("in ", generic.getInputs());
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

LLVM::LLVMFuncOp titan::outlineGeneratedKernel(kernel::GenericOp generic,
                                               StringRef name) {
  MLIRContext *ctx = generic.getContext();
  auto module = generic->getParentOfType<ModuleOp>();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  Location loc = generic.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = b.getI64Type();
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, name,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                  {ptr, i64, i64}),
      LLVM::Linkage::Internal);
  fn->setAttr(kGeneratedAttrName, b.getUnitAttr());
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  SmallVector<Value> bases;
  for (unsigned i = 0, e = generic->getNumOperands() - 1; i < e; ++i) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, entry->getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{int32_t(i)});
    bases.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
  }
  Value one = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
  emitElementLoop(b, fn, generic, bases, entry->getArgument(1),
                  entry->getArgument(2), one, /*width=*/1,
                  publishHostReductions);
  return fn;
}

namespace {
/// The shared memory a block's reduction passes through: one i32 per warp
/// (at most 32 warps a block), declared once per device module.
Value reductionScratch(OpBuilder &b, Location loc, gpu::GPUModuleOp device) {
  constexpr StringLiteral name = "__titan_reduction_scratch";
  auto type = LLVM::LLVMArrayType::get(b.getI32Type(), 32);
  if (!device.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(device.getBody());
    LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/false,
                           LLVM::Linkage::Internal, name, Attribute(),
                           /*alignment=*/4, /*addrSpace=*/3);
  }
  return LLVM::AddressOfOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), name);
}

/// The largest of `v` over the warp's 32 lanes, in every lane (butterfly
/// shuffles).
Value warpAbsMax(OpBuilder &b, Location loc, Value v) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t x) {
    return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(x));
  };
  Value all = c(-1), clamp = c(31);
  for (int offset = 16; offset > 0; offset /= 2) {
    Value other = NVVM::ShflOp::create(b, loc, i32, all, v, c(offset), clamp,
                                       NVVM::ShflKind::bfly, UnitAttr());
    v = LLVM::UMaxOp::create(b, loc, v, other);
  }
  return v;
}

/// `then` run under `condition`; the builder continues after it.
void emitIf(OpBuilder &b, Location loc, Value condition,
            llvm::function_ref<void()> then) {
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

/// A GPU's reductions: each thread's accumulator reduced over its warp
/// (shuffles), the warps' over the block (shared memory), and the block's
/// atomically into the buffer (which the launch zeroed): one atomic per
/// block, in any order, to the same bits.
void publishDeviceReductions(OpBuilder &b, Location loc,
                             ArrayRef<Value> accumulators,
                             ArrayRef<Value> buffers, gpu::GPUModuleOp device) {
  Type i32 = b.getI32Type();
  auto c = [&](int64_t x) {
    return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(x));
  };
  Value thread = NVVM::ThreadIdXOp::create(b, loc, i32);
  Value warps = LLVM::UDivOp::create(
      b, loc, NVVM::BlockDimXOp::create(b, loc, i32), c(32));
  Value lane = LLVM::AndOp::create(b, loc, thread, c(31));
  Value warp = LLVM::LShrOp::create(b, loc, thread, c(5));
  Value laneZero =
      LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, lane, c(0));
  Value scratch = reductionScratch(b, loc, device);
  Type ptr3 = scratch.getType();
  for (auto [acc, buffer] : llvm::zip(accumulators, buffers)) {
    Value mine = warpAbsMax(b, loc, acc);
    emitIf(b, loc, laneZero, [&] {
      Value slot = LLVM::GEPOp::create(b, loc, ptr3, i32, scratch,
                                       ArrayRef<LLVM::GEPArg>{warp});
      LLVM::StoreOp::create(b, loc, mine, slot);
    });
    NVVM::Barrier0Op::create(b, loc);
    Value firstWarp =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, warp, c(0));
    emitIf(b, loc, firstWarp, [&] {
      Value inBlock =
          LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, lane, warps);
      // Lanes past the block's warps read slot 0 (any warp's value is a
      // valid stand-in for max).
      Value slotIndex = LLVM::SelectOp::create(b, loc, inBlock, lane, c(0));
      Value slot = LLVM::GEPOp::create(b, loc, ptr3, i32, scratch,
                                       ArrayRef<LLVM::GEPArg>{slotIndex});
      Value block = warpAbsMax(b, loc, LLVM::LoadOp::create(b, loc, i32, slot));
      emitIf(b, loc, laneZero, [&] {
        LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::umax, buffer,
                                  block, LLVM::AtomicOrdering::monotonic);
      });
    });
    // The scratch is reused by the next reduction.
    NVVM::Barrier0Op::create(b, loc);
  }
}
} // namespace

gpu::GPUModuleOp titan::getOrCreateDeviceModule(ModuleOp module, StringRef name,
                                                StringRef chip) {
  if (auto existing = module.lookupSymbol<gpu::GPUModuleOp>(name))
    return existing;
  MLIRContext *ctx = module.getContext();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(ctx));
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto target = NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/2,
                                          "nvptx64-nvidia-cuda", chip);
  return gpu::GPUModuleOp::create(b, module.getLoc(), name,
                                  b.getArrayAttr({target}));
}

unsigned titan::devicePackWidth(kernel::GenericOp generic,
                                ArrayRef<std::optional<int64_t>> offsets) {
  unsigned widest = 1;
  SmallVector<std::pair<unsigned, std::optional<int64_t>>> packed;
  for (auto [buffer, offset] :
       llvm::zip(generic->getOperands().drop_back(), offsets)) {
    if (generic.isBroadcast(buffer) ||
        llvm::is_contained(generic.getReductions(), buffer))
      continue;
    unsigned bytes = cast<MemRefType>(buffer.getType())
                         .getElementType()
                         .getIntOrFloatBitWidth() /
                     8;
    widest = std::max(widest, bytes);
    packed.push_back({bytes, offset});
  }
  unsigned width = 16 / widest;
  if (width <= 1 || generic.getNumElements() % width != 0)
    return 1;
  for (auto [bytes, offset] : packed)
    if (!offset || *offset % (width * bytes) != 0)
      return 1;
  return width;
}

LLVM::LLVMFuncOp titan::outlineDeviceKernel(kernel::GenericOp generic,
                                            StringRef name,
                                            gpu::GPUModuleOp device,
                                            unsigned width) {
  MLIRContext *ctx = generic.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(device.getBody());
  Location loc = generic.getLoc();
  Type global = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/1);
  Type i64 = b.getI64Type();
  unsigned buffers = generic->getNumOperands() - 1;
  SmallVector<Type> params(buffers, global);
  params.push_back(i64);
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, name,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params));
  fn->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  fn->setAttr(kGeneratedAttrName, b.getUnitAttr());
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  // A grid-stride loop: thread t of the grid takes pack t, t + threads,
  // ... (consecutive threads, consecutive packs: coalesced).
  Value block = sreg<NVVM::BlockIdXOp>(b, loc);
  Value blockSize = sreg<NVVM::BlockDimXOp>(b, loc);
  Value thread = sreg<NVVM::ThreadIdXOp>(b, loc);
  Value gridSize = sreg<NVVM::GridDimXOp>(b, loc);
  Value begin = LLVM::AddOp::create(
      b, loc, LLVM::MulOp::create(b, loc, block, blockSize), thread);
  Value step = LLVM::MulOp::create(b, loc, gridSize, blockSize);
  SmallVector<Value> bases(entry->getArguments().take_front(buffers));
  // The launch passes the packs: the element count over `width`.
  Value packs = entry->getArgument(buffers);
  emitElementLoop(b, fn, generic, bases, begin, packs, step, width,
                  [&](OpBuilder &b, Location loc, ArrayRef<Value> accumulators,
                      ArrayRef<Value> buffers) {
                    publishDeviceReductions(b, loc, accumulators, buffers,
                                            device);
                  });
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
/// intrinsic: f64 math (NVPTX has no f64 exp), and f32 log2, whose
/// intrinsic NVPTX lowers to the approximate lg2.approx (a float8 scale's
/// power of two takes CUDA's log2f, as the torch.log2 of torchao's does).
bool usesLibDevice(Operation *op) { return isF64(op) || isa<math::Log2Op>(op); }

/// arith and math to the LLVM dialect. On a GPU, f64 math and f32 log2 as
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
  if (device)
    populateLibDeviceConversionPatterns(converter, rest);
  else
    populateMathToLLVMConversionPatterns(converter, rest);
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
    fn->removeAttr(kGeneratedAttrName);
  }
  return success();
}
} // namespace

LogicalResult titan::lowerGeneratedKernelBodies(ModuleOp module) {
  SmallVector<LLVM::LLVMFuncOp> host, device;
  module.walk([&](LLVM::LLVMFuncOp fn) {
    if (!fn->hasAttr(kGeneratedAttrName))
      return;
    (fn->getParentOfType<gpu::GPUModuleOp>() ? device : host).push_back(fn);
  });
  if (failed(expandBodies(host)) || failed(expandBodies(device)))
    return failure();
  return success(succeeded(lowerToLLVM(host, /*device=*/false)) &&
                 succeeded(lowerToLLVM(device, /*device=*/true)));
}
