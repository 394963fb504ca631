//===- TitanToCPU.cpp - titan functions -> calls into libtitanrt ----------===//
//
// A titan function is a straight-line sequence of ops on static shapes, so
// the lowering is direct: one kernel call per op, one buffer per result,
// freed after the last use of the buffer (or of any reshape view of it).
//
//===----------------------------------------------------------------------===//

#include "titan/Conversion/TitanToCPU/BufferLiveness.h"
#include "titan/Conversion/TitanToCPU/Passes.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

namespace titan {
#define GEN_PASS_DEF_TITANLOWERTOCPU
#include "titan/Conversion/TitanToCPU/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {

/// The kernel attributes of `op`, in the order KernelABI.h documents.
SmallVector<double> kernelAttributes(Operation *op) {
  auto f = [](APFloat v) { return v.convertToDouble(); };
  return TypeSwitch<Operation *, SmallVector<double>>(op)
      .Case<RMSNormOp, RMSNormGradOp>(
          [&](auto o) { return SmallVector<double>{f(o.getEps())}; })
      .Case([&](RopeAnglesOp o) {
        if (!o.hasScaling())
          return SmallVector<double>{f(o.getTheta()), 0, 0, 0, 0, 0};
        return SmallVector<double>{
            f(o.getTheta()),
            1,
            f(*o.getScalingFactor()),
            f(*o.getLowFreqFactor()),
            f(*o.getHighFreqFactor()),
            double(*o.getOriginalMaxPositionEmbeddings())};
      })
      .Case([](RopeOp o) {
        return SmallVector<double>{o.getTranspose() ? 1.0 : 0.0};
      })
      .Case<AttentionOp, AttentionGradOp>(
          [&](auto o) { return SmallVector<double>{f(o.getScale())}; })
      .Case([&](FillOp o) { return SmallVector<double>{f(o.getValue())}; })
      .Case<EmbeddingOp, EmbeddingGradOp, TargetLogitOp, TargetLogitGradOp>(
          [](auto o) {
            return SmallVector<double>{o.getVocabStart() ? 1.0 : 0.0};
          })
      .Case([](dist::ShardOffsetOp o) {
        SmallVector<double> attrs = {double(int64_t(o.getStride())),
                                     double(o.getAxes().size())};
        for (Attribute axis : o.getAxes())
          attrs.push_back(
              dist::MeshAttr::getAxisIndex(cast<StringAttr>(axis).getValue()));
        return attrs;
      })
      .Case([](GlobalNormOp o) {
        return SmallVector<double>{double(o.getInputs().size())};
      })
      .Case([&](LRScheduleOp o) {
        double type = llvm::StringSwitch<double>(o.getDecayType())
                          .Case("linear", 0)
                          .Case("sqrt", 1)
                          .Default(2);
        return SmallVector<double>{f(o.getLr()), double(o.getWarmupSteps()),
                                   o.getDecayRatio() ? f(*o.getDecayRatio())
                                                     : -1.0,
                                   type, f(o.getMinLrFactor())};
      })
      .Case([&](AdamWOp o) {
        return SmallVector<double>{f(o.getBeta1()), f(o.getBeta2()),
                                   f(o.getEps()), f(o.getWeightDecay()),
                                   f(o.getMaxNorm())};
      })
      .Case<dist::AllGatherStartOp, dist::ReduceScatterStartOp,
            dist::AllReduceStartOp, dist::AllToAllStartOp,
            dist::BroadcastStartOp, dist::SendRecvStartOp>([](auto o) {
        // (a, b, axis mask), as KernelABI.h documents per collective.
        double a = 0, b = 0;
        using Op = decltype(o);
        if constexpr (std::is_same_v<Op, dist::AllReduceStartOp>)
          b = llvm::StringSwitch<double>(o.getReduction())
                  .Case("avg", 1)
                  .Case("max", 2)
                  .Default(0);
        else if constexpr (std::is_same_v<Op, dist::AllToAllStartOp>) {
          a = double(o.getSplitDim());
          b = double(o.getConcatDim());
        } else if constexpr (std::is_same_v<Op, dist::BroadcastStartOp>)
          a = double(int64_t(o.getRoot()));
        else if constexpr (std::is_same_v<Op, dist::SendRecvStartOp>)
          a = double(int64_t(o.getShift()));
        else
          a = double(o.getDim());
        unsigned mask = 0;
        for (Attribute axis : o.getAxes())
          mask |= 1u << dist::MeshAttr::getAxisIndex(
                      cast<StringAttr>(axis).getValue());
        return SmallVector<double>{a, b, double(mask)};
      })
      .Default([](Operation *) { return SmallVector<double>{}; });
}

/// "f32" or "f64" from the op's first floating-point operand (or result);
/// failure for element types the CPU kernels do not implement. Ops on
/// integers only (dist.shard_offset) are "i32".
FailureOr<StringRef> kernelDtype(Operation *op) {
  if (isa<dist::ShardOffsetOp>(op))
    return StringRef("i32");
  auto pick = [](TypeRange types) -> Type {
    for (Type t : types) {
      if (auto future = dyn_cast<dist::FutureType>(t))
        t = future.getValueType();
      if (auto e = cast<RankedTensorType>(t).getElementType();
          isa<FloatType>(e))
        return e;
    }
    return {};
  };
  Type element = pick(op->getOperandTypes());
  if (!element)
    element = pick(op->getResultTypes());
  if (element && element.isF32())
    return StringRef("f32");
  if (element && element.isF64())
    return StringRef("f64");
  op->emitOpError() << "has element type " << element
                    << ", but the CPU target implements f32 and f64 only";
  return failure();
}

class FunctionLowering {
public:
  FunctionLowering(ModuleOp module, OpBuilder &b, StringRef prefix)
      : module(module), b(b), prefix(prefix),
        ptrType(LLVM::LLVMPointerType::get(b.getContext())),
        i64Type(b.getI64Type()) {}

  LogicalResult lower(func::FuncOp func) {
    if (!func.getBody().hasOneBlock())
      return func.emitOpError() << "must have a single block to be lowered";
    for (Type t : llvm::concat<const Type>(func.getArgumentTypes(),
                                           func.getResultTypes()))
      if (!isa<RankedTensorType>(t) ||
          !cast<RankedTensorType>(t).hasStaticShape())
        return func.emitOpError()
               << "must take and return statically shaped tensors, got " << t;
    Block &body = func.getBody().front();

    // One buffer per result (views share their operand's), freed after the
    // last use of any value living in it.
    BufferLiveness liveness(func);
    ArrayRef<Operation *> ops = liveness.getOps();

    b.setInsertionPoint(func);
    Location loc = func.getLoc();
    auto llvmFunc = LLVM::LLVMFuncOp::create(
        b, loc, (prefix + func.getSymName()).str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                    {ptrType}));
    Block *entry = llvmFunc.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    Value argv = entry->getArgument(0);

    unsigned maxBuffers = 1;
    for (Operation *op : ops)
      maxBuffers = std::max<unsigned>(maxBuffers, op->getNumOperands() +
                                                      op->getNumResults());
    buffers =
        LLVM::AllocaOp::create(b, loc, ptrType, ptrType, constant(maxBuffers));

    DenseMap<Value, Value> ptr;
    for (BlockArgument arg : body.getArguments())
      ptr[arg] = loadPointer(argv, arg.getArgNumber());

    for (auto [index, op] : llvm::enumerate(ops)) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
          Value dst = loadPointer(argv, func.getNumArguments() + i);
          LLVM::MemcpyOp::create(b, op->getLoc(), dst, ptr[value],
                                 constant(bufferBytes(value.getType())),
                                 /*isVolatile=*/false);
        }
      } else if (isView(op)) {
        // lookup() copies: inserting the new key may grow the map.
        ptr[op->getResult(0)] = ptr.lookup(op->getOperand(0));
      } else if (auto wait = dyn_cast<dist::WaitOp>(op)) {
        LLVM::CallOp::create(b, op->getLoc(),
                             runtimeFunction("titan_rt_wait", {ptrType}, {}),
                             ValueRange{requests.lookup(wait.getFuture())});
        ptr[wait.getResult()] = ptr.lookup(wait.getFuture());
      } else if (op->getDialect() &&
                 isa<TitanDialect, dist::DistDialect>(op->getDialect())) {
        if (failed(lowerOp(op, ptr)))
          return failure();
      } else {
        return op->emitOpError() << "is not supported by titan-lower-to-cpu";
      }
      for (Value dead : liveness.freedAfter(index))
        LLVM::CallOp::create(b, op->getLoc(),
                             runtimeFunction("titan_rt_free", {ptrType}, {}),
                             ValueRange{ptr[dead]});
    }
    LLVM::ReturnOp::create(b, loc, ValueRange{});
    return success();
  }

private:
  /// Ops whose result shares its operand's buffer and that emit no code.
  static bool isView(Operation *op) {
    return isa<ReshapeOp, dist::ReplicateOp>(op);
  }

  Value constant(int64_t v) {
    return LLVM::ConstantOp::create(b, b.getUnknownLoc(), i64Type,
                                    b.getI64IntegerAttr(v));
  }

  Value loadPointer(Value array, int32_t index) {
    Value slot = LLVM::GEPOp::create(b, array.getLoc(), ptrType, ptrType, array,
                                     ArrayRef<LLVM::GEPArg>{index});
    return LLVM::LoadOp::create(b, array.getLoc(), ptrType, slot);
  }

  /// Declares (once) an external runtime function.
  LLVM::LLVMFuncOp runtimeFunction(StringRef name, ArrayRef<Type> args,
                                   Type result) {
    if (auto f = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
      return f;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    Type ret = result ? result : LLVM::LLVMVoidType::get(b.getContext());
    return LLVM::LLVMFuncOp::create(b, module.getLoc(), name,
                                    LLVM::LLVMFunctionType::get(ret, args));
  }

  /// A private constant array global holding `values`.
  Value constantArray(Location loc, StringRef kind, Type elementType,
                      Attribute values, int64_t count) {
    std::string name =
        llvm::formatv("__titan_{0}_{1}", kind, globalCounter++).str();
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      LLVM::GlobalOp::create(
          b, loc, LLVM::LLVMArrayType::get(elementType, count),
          /*isConstant=*/true, LLVM::Linkage::Private, name, values);
    }
    return LLVM::AddressOfOp::create(b, loc, ptrType, name);
  }

  LogicalResult lowerOp(Operation *op, DenseMap<Value, Value> &ptr) {
    Location loc = op->getLoc();
    FailureOr<StringRef> dtype = kernelDtype(op);
    if (failed(dtype))
      return failure();
    for (Value operand : op->getOperands())
      if (auto t = cast<RankedTensorType>(operand.getType());
          isa<IntegerType>(t.getElementType()) &&
          !t.getElementType().isInteger(32) && !isa<LRScheduleOp, AdamWOp>(op))
        return op->emitOpError()
               << "the CPU target takes i32 token ids and labels";

    auto alloc = runtimeFunction("titan_rt_alloc", {i64Type}, ptrType);
    for (Value result : op->getResults())
      ptr[result] = LLVM::CallOp::create(
                        b, loc, alloc,
                        ValueRange{constant(bufferBytes(result.getType()))})
                        .getResult();

    SmallVector<int64_t> shapes;
    unsigned slot = 0;
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
      RankedTensorType type = bufferType(v.getType());
      shapes.push_back(type.getRank());
      llvm::append_range(shapes, type.getShape());
      Value address =
          LLVM::GEPOp::create(b, loc, ptrType, ptrType, buffers,
                              ArrayRef<LLVM::GEPArg>{int32_t(slot++)});
      LLVM::StoreOp::create(b, loc, ptr[v], address);
    }
    Value shapesPtr = constantArray(
        loc, "shapes", i64Type,
        DenseElementsAttr::get(
            RankedTensorType::get({int64_t(shapes.size())}, i64Type),
            ArrayRef<int64_t>(shapes)),
        shapes.size());
    SmallVector<double> attrs = kernelAttributes(op);
    Value attrsPtr =
        attrs.empty()
            ? LLVM::ZeroOp::create(b, loc, ptrType).getResult()
            : constantArray(loc, "attrs", b.getF64Type(),
                            DenseElementsAttr::get(
                                RankedTensorType::get({int64_t(attrs.size())},
                                                      b.getF64Type()),
                                ArrayRef<double>(attrs)),
                            attrs.size());
    std::string kernel =
        ("titan_rt_" + op->getName().stripDialect() + "_" + *dtype).str();
    // Collectives return the request that dist.wait completes.
    bool collective = op->getNumResults() == 1 &&
                      isa<dist::FutureType>(op->getResult(0).getType());
    auto call = LLVM::CallOp::create(
        b, loc,
        runtimeFunction(kernel, {ptrType, ptrType, ptrType},
                        collective ? ptrType : Type()),
        ValueRange{buffers, shapesPtr, attrsPtr});
    if (collective)
      requests[op->getResult(0)] = call.getResult();
    return success();
  }

  /// The tensor a value's buffer holds (a future holds its eventual value).
  static RankedTensorType bufferType(Type type) {
    if (auto future = dyn_cast<dist::FutureType>(type))
      return future.getValueType();
    return cast<RankedTensorType>(type);
  }

  ModuleOp module;
  OpBuilder &b;
  DenseMap<Value, Value> requests;
  StringRef prefix;
  Type ptrType, i64Type;
  Value buffers;
  unsigned globalCounter = 0;
};

struct TitanLowerToCPUPass
    : titan::impl::TitanLowerToCPUBase<TitanLowerToCPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(module.getContext());
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    FunctionLowering lowering(module, b, symbolPrefix);
    for (func::FuncOp func : funcs) {
      if (failed(lowering.lower(func)))
        return signalPassFailure();
      func.erase();
    }
  }
};

} // namespace
