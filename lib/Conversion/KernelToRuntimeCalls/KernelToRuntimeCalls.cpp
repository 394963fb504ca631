//===- KernelToRuntimeCalls.cpp - planned kernel IR -> libtitanrt calls ---===//
//
// Every buffer is the arena plus a planned offset, so the lowering is one
// call per kernel op with compile-time constant shapes and parameters. The
// calls are the runtime's entries (runtime/include/titanrt/KernelABI.h),
// the same for every target: the target is in the libraries linked.
//
//===----------------------------------------------------------------------===//

#include "titan/Conversion/KernelToRuntimeCalls/GeneratedKernels.h"
#include "titan/Conversion/KernelToRuntimeCalls/Passes.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Titan/IR/Dtype.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace titan {
#define GEN_PASS_DEF_KERNELTORUNTIMECALLS
#include "titan/Conversion/KernelToRuntimeCalls/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

namespace {

/// The runtime entry's dtype (dtypeName is its suffix). Kernels: f64 or f32 by
/// their first float buffer, bf16 or f16 when a buffer has that type (the
/// runtime runs the f32 kernel on widened copies), i32 when no buffer is a
/// float. Collectives: their buffers' type, f8 included. The kernels that take
/// float8 buffers (raw codes, never widened) are typed by their other
/// buffers.
FailureOr<Dtype> kernelDtype(Operation *op, const catalog::Entry &kernel,
                             ValueRange buffers, bool collective) {
  bool takesFloat8 = kernel.has(catalog::kFloat8Buffers);
  std::optional<Dtype> first, sixteen;
  for (Value v : buffers) {
    Type element = cast<MemRefType>(v.getType()).getElementType();
    if (!isa<FloatType>(element))
      continue;
    std::optional<Dtype> d = dtypeOf(element);
    bool float8 = d == Dtype::f8E4M3FN || d == Dtype::f8E5M2;
    if (!d || (!takesFloat8 && float8)) {
      op->emitOpError() << "has element type " << element
                        << ", but the runtime's kernels compute in f64, "
                           "f32, bf16 and f16 (float8 only in quantize, "
                           "scaled_matmul, cast and collectives)";
      return failure();
    }
    if (!collective && float8)
      continue;
    if (d == Dtype::bf16 || d == Dtype::f16) {
      if (sixteen && sixteen != d) {
        op->emitOpError() << "mixes bf16 and f16 buffers";
        return failure();
      }
      sixteen = d;
    }
    if (!first)
      first = d;
  }
  if (!collective && sixteen)
    return *sixteen;
  return first.value_or(Dtype::i32);
}

class ModuleLowering {
public:
  ModuleLowering(ModuleOp module, StringRef prefix, StringRef deviceChip)
      : module(module), b(module.getContext()), prefix(prefix),
        deviceChip(deviceChip),
        ptrType(LLVM::LLVMPointerType::get(module.getContext())),
        i64Type(b.getI64Type()) {}

  LogicalResult lower(func::FuncOp step) {
    auto slots =
        module->getAttrOfType<DictionaryAttr>(KernelDialect::kSlotsAttrName);
    if (!slots)
      return module.emitError()
             << "kernel-to-runtime-calls: the module has no memory plan (run "
                "kernel-plan-memory first)";
    // Under pipeline parallelism every step also takes the microbatch
    // frame of its stage (null for the optimizer).
    auto frameSlots = module->getAttrOfType<DictionaryAttr>(
        KernelDialect::kFrameSlotsAttrName);
    SmallVector<Type> params = {ptrType};
    if (frameSlots)
      params.push_back(ptrType);
    Block &body = step.getBody().front();
    b.setInsertionPoint(step);
    Location loc = step.getLoc();
    auto llvmFunc = LLVM::LLVMFuncOp::create(
        b, loc, (prefix + step.getSymName()).str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                    params));
    // The step is a straight line of calls with nothing to optimize; the
    // object emitter optimizes the generated kernels beside it.
    llvmFunc.setNoInline(true);
    llvmFunc.setOptimizeNone(true);
    Block *entry = llvmFunc.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    arena = entry->getArgument(0);
    hostStep = step->hasAttr(KernelDialect::kHostStepAttrName);
    auto hostSlots = module->getAttrOfType<DictionaryAttr>(
        KernelDialect::kHostSlotsAttrName);
    // Host memory (kernel-offload-state) is the runtime's host arena.
    hostArena =
        module->hasAttr(KernelDialect::kHostArenaBytesAttrName)
            ? LLVM::LoadOp::create(b, loc, ptrType,
                                   externalGlobal("titan_rt_host_arena", loc))
                  .getResult()
            : Value();
    Value frame = frameSlots ? entry->getArgument(1) : Value();

    unsigned maxBuffers = 1;
    for (Operation &op : body)
      maxBuffers = std::max(maxBuffers, op.getNumOperands());
    buffers =
        LLVM::AllocaOp::create(b, loc, ptrType, ptrType, constant(maxBuffers));

    ptrs.clear();
    arenaOffsets.clear();
    for (BlockArgument arg : body.getArguments()) {
      auto slot = step.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), KernelDialect::kSlotAttrName);
      bool inHost = getMemorySpace(arg.getType()) == MemorySpace::Host;
      if (inHost) {
        auto place = slot && hostSlots
                         ? hostSlots.getAs<DenseI64ArrayAttr>(slot)
                         : nullptr;
        if (!place)
          return step.emitOpError()
                 << "argument #" << arg.getArgNumber()
                 << " is in host memory but has no planned slot in the "
                    "module's kernel.host_slots";
        ptrs[arg] = atOffset(place[0], loc, hostArena);
        continue;
      }
      auto place = slot ? slots.getAs<DenseI64ArrayAttr>(slot) : nullptr;
      if (!place && slot && frameSlots) {
        if (auto inFrame = frameSlots.getAs<DenseI64ArrayAttr>(slot)) {
          ptrs[arg] = atOffset(inFrame[0], loc, frame);
          continue;
        }
      }
      if (!place)
        return step.emitOpError()
               << "argument #" << arg.getArgNumber()
               << " has no planned slot in the module's kernel.slots";
      ptrs[arg] = atOffset(place[0], loc);
      arenaOffsets[arg] = place[0];
    }
    for (Operation &op : body.without_terminator())
      if (failed(lowerOp(&op)))
        return failure();
    // Outside a step no op is running.
    Value none = LLVM::ZeroOp::create(b, loc, ptrType);
    LLVM::StoreOp::create(b, loc, none, siteSlot(loc));
    LLVM::ReturnOp::create(b, loc, ValueRange{});
    return success();
  }

private:
  LogicalResult lowerOp(Operation *op) {
    Location loc = op->getLoc();
    if (auto alloc = dyn_cast<AllocOp>(op)) {
      if (!alloc.getOffset())
        return alloc.emitOpError()
               << "has no planned offset (run kernel-plan-memory first)";
      if (getMemorySpace(alloc.getType()) == MemorySpace::Host) {
        ptrs[alloc.getBuffer()] =
            atOffset(int64_t(*alloc.getOffset()), loc, hostArena);
        return success();
      }
      ptrs[alloc.getBuffer()] = atOffset(int64_t(*alloc.getOffset()), loc);
      arenaOffsets[alloc.getBuffer()] = int64_t(*alloc.getOffset());
      return success();
    }
    if (auto view = dyn_cast<ViewOp>(op)) {
      Value source = ptrs.lookup(view.getSource());
      ptrs[view.getResult()] =
          view.getOffset() ? atOffset(int64_t(*view.getOffset()), loc, source)
                           : source;
      if (auto it = arenaOffsets.find(view.getSource());
          it != arenaOffsets.end())
        arenaOffsets[view.getResult()] =
            it->second + int64_t(view.getOffset().value_or(0));
      return success();
    }
    if (isa<StreamOp>(op))
      return success();
    if (auto copy = dyn_cast<CopyOp>(op)) {
      // A runtime call, not a host memcpy: on a GPU the buffers are device
      // memory (or the pinned host arena) and the copy is ordered on the
      // step's stream; a host step's copy has completed when it returns.
      LLVM::CallOp::create(
          b, loc,
          runtimeFunction(hostStep ? "titan_rt_copy_sync" : "titan_rt_copy",
                          {ptrType, ptrType, i64Type}, {}),
          ValueRange{ptrs.lookup(copy.getTarget()),
                     ptrs.lookup(copy.getSource()),
                     constant(*getStaticByteSize(copy.getSource().getType()))});
      return success();
    }
    if (auto copy = dyn_cast<CopyStartOp>(op)) {
      // On the target's copy engine, joined back at its kernel.wait.
      requests[copy.getRequest()] =
          LLVM::CallOp::create(
              b, loc,
              runtimeFunction("titan_rt_copy_start",
                              {ptrType, ptrType, i64Type}, ptrType),
              ValueRange{
                  ptrs.lookup(copy.getTarget()), ptrs.lookup(copy.getSource()),
                  constant(*getStaticByteSize(copy.getSource().getType()))})
              .getResult();
      return success();
    }
    if (auto wait = dyn_cast<WaitOp>(op)) {
      LLVM::CallOp::create(b, loc,
                           runtimeFunction("titan_rt_wait", {ptrType}, {}),
                           ValueRange{requests.lookup(wait.getRequest())});
      return success();
    }
    if (auto generic = dyn_cast<GenericOp>(op)) {
      emitGeneratedKernelCall(generic);
      return success();
    }
    if (auto call = dyn_cast<CallOp>(op)) {
      SmallVector<Value> operands(call.getInputs());
      llvm::append_range(operands, call.getOutputs());
      emitKernelCall(op, call.getKernel(), operands, call.getInputs().size(),
                     call.getWorkspace(), call.getParams(),
                     /*returnsRequest=*/false);
      return success(!failed(lastCall));
    }
    if (auto start = dyn_cast<CollectiveStartOp>(op)) {
      emitKernelCall(op, start.getKernel(),
                     {start.getInput(), start.getOutput()}, /*numInputs=*/1,
                     start.getWorkspace(), start.getParams(),
                     /*returnsRequest=*/true);
      if (failed(lastCall))
        return failure();
      requests[start.getRequest()] = *lastCall;
      return success();
    }
    return op->emitOpError() << "is not supported by kernel-to-runtime-calls";
  }

  /// The kernel generated from `generic`'s body, run on the host's threads
  /// (titan_rt_parallel_for(kernel, buffers, items, span, name, bytes),
  /// its reductions zeroed first) or on the GPU
  /// (titan_rt_launch_generated(image, name, buffers, count, items,
  /// reductions), which zeroes them).
  void emitGeneratedKernelCall(GenericOp generic) {
    Location loc = generic.getLoc();
    recordSite(loc);
    // One function per distinct kernel (the element count is an argument);
    // on a GPU, per pack width too, which the buffers' alignment allows
    // (their arena offsets; the arena is 256-byte aligned).
    bool onHost = deviceChip.empty() || hostStep;
    unsigned width = 1;
    if (!onHost) {
      SmallVector<std::optional<int64_t>> offsets;
      for (Value v : generic->getOperands().drop_back()) {
        auto it = arenaOffsets.find(v);
        offsets.push_back(it == arenaOffsets.end()
                              ? std::nullopt
                              : std::optional<int64_t>(it->second));
      }
      width = devicePackWidth(generic, offsets);
    }
    std::string &name =
        generatedByKey[generatedKernelKey(generic) + ";pack " +
                       std::to_string(width) + (onHost ? ";host" : "")];
    bool outlined = !name.empty();
    if (!outlined)
      name =
          llvm::formatv("{0}generated_{1}", prefix, generatedByKey.size() - 1)
              .str();
    ValueRange operands = generic->getOperands().drop_back();
    for (auto [slot, v] : llvm::enumerate(operands)) {
      Value address =
          LLVM::GEPOp::create(b, loc, ptrType, ptrType, buffers,
                              ArrayRef<LLVM::GEPArg>{int32_t(slot)});
      LLVM::StoreOp::create(b, loc, ptrs.lookup(v), address);
    }
    // What one call moves (the profile's bandwidth), before the host's
    // outlining expands a log-sum-exp into two reductions.
    int64_t bytes = generic.getTrafficBytes();
    if (onHost) {
      if (!outlined) {
        outlineGeneratedKernel(generic, name);
        if (generic.getColumnSumBlocks())
          outlineColumnTotals(generic, name + "_totals");
      }
      // absmax starts from +0.0.
      for (Value reduction :
           generic.getReductionsOfKind(kernel::ReductionKind::AbsMax))
        LLVM::StoreOp::create(b, loc,
                              LLVM::ConstantOp::create(b, loc, b.getI32Type(),
                                                       b.getI32IntegerAttr(0)),
                              ptrs.lookup(reduction));
      auto [items, span] = hostWorkItems(generic);
      auto parallelFor = [&](StringRef kernel, int64_t items, int64_t span,
                             int64_t bytes) {
        LLVM::CallOp::create(
            b, loc,
            runtimeFunction(
                deviceChip.empty() ? "titan_rt_parallel_for"
                                   : "titan_rt_host_parallel_for",
                {ptrType, ptrType, i64Type, i64Type, ptrType, i64Type}, {}),
            ValueRange{
                LLVM::AddressOfOp::create(b, loc, ptrType, kernel), buffers,
                constant(items), constant(span),
                constantString(("__titan_str_" + kernel).str(), kernel, loc),
                constant(bytes)});
      };
      parallelFor(name, items, span, bytes);
      // Then the column sums' totals from their row blocks' partials.
      if (generic.getColumnSumBlocks())
        parallelFor(
            name + "_totals", generic.getRowLength(), 0,
            getStaticByteSize(generic.getWorkspace().getType()).value_or(0));
      return;
    }
    std::string deviceName = (prefix + "kernels").str();
    bool columnSums = generic.getColumnSumBlocks() != 0;
    if (!outlined) {
      gpu::GPUModuleOp device =
          getOrCreateDeviceModule(module, deviceName, deviceChip);
      outlineDeviceKernel(generic, name, device, width);
      if (columnSums)
        outlineDeviceColumnTotals(generic, name + "_totals", device);
    }
    // The launch zeroes the last `reductions` buffers' first element: the
    // absmax ones' start (a column sum's, written whole by its totals, is
    // zeroed for nothing).
    auto launch = [&](StringRef kernel, int64_t items, int64_t reductions) {
      LLVM::CallOp::create(
          b, loc,
          runtimeFunction(
              "titan_rt_launch_generated",
              {ptrType, ptrType, ptrType, i64Type, i64Type, i64Type}, {}),
          ValueRange{
              deviceImage(deviceName, loc),
              constantString(("__titan_str_" + kernel).str(), kernel, loc),
              buffers, constant(operands.size()), constant(items),
              constant(reductions)});
    };
    launch(name, deviceWorkItems(generic, width),
           generic.getReductions().size());
    if (columnSums)
      launch(name + "_totals", generic.getRowLength(), 0);
  }

  /// The address of `@<device>_image`, the compiled kernels' bytes
  /// (declared empty here, filled by kernel-embed-gpu-binaries).
  Value deviceImage(StringRef device, Location loc) {
    std::string image = (device + "_image").str();
    if (!module.lookupSymbol(image)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      LLVM::GlobalOp::create(b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), 1),
                             /*isConstant=*/true, LLVM::Linkage::Private, image,
                             b.getStringAttr(StringRef("\0", 1)));
    }
    return LLVM::AddressOfOp::create(b, loc, ptrType, image);
  }

  /// The address of private global `name`, the NUL-terminated constant
  /// string `text` (created the first time).
  Value constantString(StringRef name, StringRef text, Location loc) {
    if (!module.lookupSymbol(name)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      std::string bytes = text.str();
      bytes.push_back('\0');
      LLVM::GlobalOp::create(
          b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size()),
          /*isConstant=*/true, LLVM::Linkage::Private, name,
          b.getStringAttr(bytes));
    }
    return LLVM::AddressOfOp::create(b, loc, ptrType, name);
  }

  /// titan_rt_<kernel>_<dtype>(buffers, shapes, ints, floats, workspace,
  /// types).
  void emitKernelCall(Operation *op, StringRef kernel, ValueRange operands,
                      int64_t numInputs, Value workspace, ArrayAttr params,
                      bool returnsRequest) {
    Location loc = op->getLoc();
    lastCall = failure();
    recordSite(loc);
    // The verifier checked the kernel against the catalog.
    const catalog::Entry &entry = *catalog::lookup(kernel);
    if (entry.kind == catalog::Kind::Generated) {
      op->emitOpError() << "calls '" << kernel
                        << "', which no library implements: the compiler "
                           "generates it (run kernel-generate-pointwise "
                           "first; it takes f64, f32, bf16 and f16)";
      return;
    }
    FailureOr<Dtype> dtype = kernelDtype(op, entry, operands, returnsRequest);
    if (failed(dtype))
      return;
    bool integerStep = entry.has(catalog::kI64Buffers);
    SmallVector<int64_t> shapes,
        types = {numInputs, int64_t(operands.size()) - numInputs};
    for (auto [slot, v] : llvm::enumerate(operands)) {
      auto type = cast<MemRefType>(v.getType());
      if (auto element = dyn_cast<IntegerType>(type.getElementType());
          element && element.getWidth() != 32 && !integerStep) {
        op->emitOpError() << "the runtime takes i32 token ids and labels";
        return;
      }
      shapes.push_back(type.getRank());
      llvm::append_range(shapes, type.getShape());
      std::optional<Dtype> code = dtypeOf(type.getElementType());
      if (!code) {
        op->emitOpError() << "has a buffer of element type "
                          << type.getElementType()
                          << ", which the runtime's entries do not take";
        return;
      }
      types.push_back(int64_t(*code));
      Value address =
          LLVM::GEPOp::create(b, loc, ptrType, ptrType, buffers,
                              ArrayRef<LLVM::GEPArg>{int32_t(slot)});
      LLVM::StoreOp::create(b, loc, ptrs.lookup(v), address);
    }
    SmallVector<int64_t> ints;
    SmallVector<double> floats;
    for (Attribute p : params) {
      if (auto i = dyn_cast<IntegerAttr>(p))
        ints.push_back(i.getInt());
      else
        floats.push_back(cast<FloatAttr>(p).getValueAsDouble());
    }
    Value ws = workspace ? ptrs.lookup(workspace)
                         : LLVM::ZeroOp::create(b, loc, ptrType).getResult();
    // A host step's kernels are the host kernel library's (KernelABI.h).
    std::string name =
        ((hostStep && !returnsRequest ? "titan_rt_host_" : "titan_rt_") +
         kernel + "_" + dtypeName(*dtype))
            .str();
    auto fn = runtimeFunction(
        name, {ptrType, ptrType, ptrType, ptrType, ptrType, ptrType},
        returnsRequest ? ptrType : Type());
    auto call = LLVM::CallOp::create(
        b, loc, fn,
        ValueRange{buffers, int64Array(shapes, loc), int64Array(ints, loc),
                   doubleArray(floats, loc), ws, int64Array(types, loc)});
    lastCall = returnsRequest ? call.getResult() : Value();
  }

  /// Where an op came from, for the runtime's kernel errors: its TorchTitan
  /// module path (a NameLoc), a file position, or the first few of a fused
  /// location's.
  static std::string siteOf(Location loc) {
    if (auto name = dyn_cast<NameLoc>(loc))
      return name.getName().str();
    if (auto file = dyn_cast<FileLineColLoc>(loc))
      return llvm::formatv("{0}:{1}:{2}", file.getFilename(), file.getLine(),
                           file.getColumn())
          .str();
    if (auto callSite = dyn_cast<CallSiteLoc>(loc))
      return siteOf(callSite.getCallee());
    if (auto fused = dyn_cast<FusedLoc>(loc)) {
      SmallVector<std::string> parts;
      for (Location part : fused.getLocations())
        if (std::string site = siteOf(part); !site.empty())
          parts.push_back(site);
      if (parts.size() > 3)
        return llvm::formatv("{0}, {1}, {2} and {3} more", parts[0], parts[1],
                             parts[2], parts.size() - 3)
            .str();
      return llvm::join(parts, ", ");
    }
    return "";
  }

  /// The address of the runtime's pointer variable `name` (declared once).
  Value externalGlobal(StringRef name, Location loc) {
    if (!module.lookupSymbol(name)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      LLVM::GlobalOp::create(b, module.getLoc(), ptrType, /*isConstant=*/false,
                             LLVM::Linkage::External, name, Attribute());
    }
    return LLVM::AddressOfOp::create(b, loc, ptrType, name);
  }

  /// The address of the runtime's `titan_rt_op` (declared once).
  Value siteSlot(Location loc) {
    if (!declaredSite) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      LLVM::GlobalOp::create(b, module.getLoc(), ptrType, /*isConstant=*/false,
                             LLVM::Linkage::External, "titan_rt_op",
                             Attribute());
      declaredSite = true;
    }
    return LLVM::AddressOfOp::create(b, loc, ptrType, "titan_rt_op");
  }

  /// titan_rt_op = "<site of loc>" (one constant string per distinct site).
  void recordSite(Location loc) {
    std::string site = siteOf(loc);
    Value value;
    if (site.empty()) {
      value = LLVM::ZeroOp::create(b, loc, ptrType);
    } else {
      std::string &name = sites[site];
      if (name.empty())
        name = llvm::formatv("__titan_site_{0}", sites.size() - 1).str();
      value = constantString(name, site, loc);
    }
    LLVM::StoreOp::create(b, loc, value, siteSlot(loc));
  }

  Value constant(int64_t v) {
    return LLVM::ConstantOp::create(b, b.getUnknownLoc(), i64Type,
                                    b.getI64IntegerAttr(v));
  }

  Value atOffset(int64_t offset, Location loc, Value base = Value()) {
    // A 64-bit index: arenas of real models exceed 2 GiB.
    return LLVM::GEPOp::create(b, loc, ptrType, b.getI8Type(),
                               base ? base : arena,
                               ArrayRef<LLVM::GEPArg>{constant(offset)});
  }

  /// Declares (once) an external runtime function.
  LLVM::LLVMFuncOp runtimeFunction(StringRef name, ArrayRef<Type> args,
                                   Type result) {
    LLVM::LLVMFuncOp &f = functions[name];
    if (f)
      return f;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    Type ret = result ? result : LLVM::LLVMVoidType::get(b.getContext());
    return f = LLVM::LLVMFuncOp::create(b, module.getLoc(), name,
                                        LLVM::LLVMFunctionType::get(ret, args));
  }

  /// The address of a private constant array with `values` (one global per
  /// distinct content, compared bitwise); null for an empty array.
  template <typename T>
  Value constantArray(ArrayRef<T> values, Type elementType, Location loc) {
    if (values.empty())
      return LLVM::ZeroOp::create(b, loc, ptrType);
    std::string key(reinterpret_cast<const char *>(values.data()),
                    values.size() * sizeof(T));
    key += elementType.isF64() ? 'f' : 'i';
    std::string &name = arrays[key];
    if (name.empty()) {
      name = llvm::formatv("__titan_array_{0}", arrays.size() - 1).str();
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      auto type = RankedTensorType::get({int64_t(values.size())}, elementType);
      LLVM::GlobalOp::create(
          b, loc, LLVM::LLVMArrayType::get(elementType, values.size()),
          /*isConstant=*/true, LLVM::Linkage::Private, name,
          DenseElementsAttr::get(type, values));
    }
    return LLVM::AddressOfOp::create(b, loc, ptrType, name);
  }
  Value int64Array(ArrayRef<int64_t> values, Location loc) {
    return constantArray(values, i64Type, loc);
  }
  Value doubleArray(ArrayRef<double> values, Location loc) {
    return constantArray(values, b.getF64Type(), loc);
  }

  ModuleOp module;
  OpBuilder b;
  StringRef prefix;
  StringRef deviceChip; ///< empty: generated kernels run on the host
  Type ptrType, i64Type;
  Value arena, buffers;
  /// The host arena's base (loaded at the step's entry), when the plan has
  /// one.
  Value hostArena;
  /// The step runs on the host (kernel.host_step).
  bool hostStep = false;
  DenseMap<Value, Value> ptrs, requests;
  /// Each buffer's byte offset in the arena, where it is known statically
  /// (not for a pipeline frame's buffers).
  DenseMap<Value, int64_t> arenaOffsets;
  FailureOr<Value> lastCall = failure();
  llvm::StringMap<LLVM::LLVMFuncOp> functions;
  std::map<std::string, std::string> arrays; ///< content -> global name
  std::map<std::string, std::string> sites;  ///< op location -> global name
  bool declaredSite = false;
  /// generatedKernelKey -> the outlined kernel's name.
  std::map<std::string, std::string> generatedByKey;
};

struct KernelToRuntimeCallsPass
    : titan::impl::KernelToRuntimeCallsBase<KernelToRuntimeCallsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps(module.getOps<func::FuncOp>());
    ModuleLowering lowering(module, symbolPrefix, deviceChip);
    for (func::FuncOp step : steps) {
      if (failed(lowering.lower(step)))
        return signalPassFailure();
      step.erase();
    }
    if (failed(lowerGeneratedKernelBodies(module)))
      return signalPassFailure();
  }
};

} // namespace
