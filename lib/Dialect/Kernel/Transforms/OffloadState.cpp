//===- OffloadState.cpp - training state in host memory -------------------===//
//
// FSDP2's CPUOffloadPolicy as a placement of the kernel IR: the sharded
// parameters, their gradients and AdamW's moments live in host memory, the
// host steps (the optimizer) run on the host, and every kernel that runs
// where one of its buffers does not live reads or writes it through a
// staging buffer in its own memory, copied in before it and out after it
// (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Kernel/Transforms/BufferAccess.h"
#include "titan/Dialect/Kernel/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace titan::kernel {
#define GEN_PASS_DEF_KERNELOFFLOADSTATE
#include "titan/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace titan::kernel

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

namespace {

/// The slots FSDP2's CPUOffloadPolicy keeps on the CPU: sharded
/// parameters, their gradients and the optimizer's state.
bool isOffloadedSlot(StringRef slot) {
  return slot.starts_with("param:") || slot.starts_with("grad:") ||
         slot.starts_with("exp_avg:") || slot.starts_with("exp_avg_sq:");
}

/// `value` and every view of it (through views of views).
SmallVector<Value> withViews(Value value) {
  SmallVector<Value> all = {value};
  for (size_t i = 0; i < all.size(); ++i)
    for (Operation *user : all[i].getUsers())
      if (auto view = dyn_cast<ViewOp>(user))
        all.push_back(view.getResult());
  return all;
}

/// Gives `value` and every view of it memory space `space`.
void moveToSpace(Value value, MemorySpace space) {
  for (Value v : withViews(value))
    v.setType(inMemorySpace(cast<MemRefType>(v.getType()), space));
}

/// Whether a collective reads or writes `alloc` (through views): such a
/// buffer stays in device memory, where the communicator works.
bool feedsCollective(AllocOp alloc) {
  return llvm::any_of(withViews(alloc.getBuffer()), [](Value v) {
    return llvm::any_of(v.getUsers(), [](Operation *user) {
      return isa<CollectiveStartOp>(user);
    });
  });
}

/// How an op uses one of its buffers.
struct Use {
  bool read = false, written = false;
};

/// The buffers `op` reads and writes, in operand order. A device library
/// call may add into its outputs (a GEMM with beta = 1), so its outputs
/// count as read too; a host step's (kHostStep kernels), a generated
/// kernel's outputs and reductions, and a collective's output are written
/// whole.
llvm::MapVector<Value, Use> buffersOf(Operation *op, bool hostStep) {
  llvm::MapVector<Value, Use> uses;
  auto read = [&](ValueRange values) {
    for (Value v : values)
      uses[v].read = true;
  };
  auto written = [&](ValueRange values) {
    for (Value v : values)
      uses[v].written = true;
  };
  if (auto call = dyn_cast<CallOp>(op)) {
    read(call.getInputs());
    if (!hostStep)
      read(call.getOutputs());
    written(call.getOutputs());
    if (Value ws = call.getWorkspace())
      written(ws);
  } else if (auto generic = dyn_cast<GenericOp>(op)) {
    read(generic.getInputs());
    written(generic.getOutputs());
    written(generic.getReductions());
    if (Value ws = generic.getWorkspace())
      written(ws);
  } else if (auto start = dyn_cast<CollectiveStartOp>(op)) {
    read(start.getInput());
    written(start.getOutput());
    if (Value ws = start.getWorkspace())
      written(ws);
  }
  return uses;
}

/// Where `op` runs: a collective on the device (the communicator's
/// buffers are device memory), a kernel where its step runs; std::nullopt
/// for ops that run no kernel (copies may cross memory spaces).
std::optional<MemorySpace> placementOf(Operation *op, bool hostStep) {
  if (isa<CollectiveStartOp>(op))
    return MemorySpace::Device;
  if (isa<CallOp, GenericOp>(op))
    return hostStep ? MemorySpace::Host : MemorySpace::Device;
  return std::nullopt;
}

class StepPlacement {
public:
  StepPlacement(func::FuncOp step, int64_t maxPrefetchBytes)
      : step(step), hostStep(step->hasAttr(KernelDialect::kHostStepAttrName)),
        maxPrefetchBytes(maxPrefetchBytes), b(step.getContext()) {}

  LogicalResult run() {
    if (hostStep && failed(checkHostKernels()))
      return failure();
    placeSlots();
    if (hostStep)
      placeAllocs();
    Block &body = step.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (std::optional<MemorySpace> space = placementOf(op, hostStep))
        stageOperands(op, *space);
      else if (auto copy = dyn_cast<CopyOp>(op); copy && !hostStep)
        routeCopy(copy);
    }
    finishWriteBacks();
    return success();
  }

private:
  /// A host step's library calls must have host entries (KernelCatalog.def's
  /// kHostStep: libtitanrt_host defines their f32 and f64 ones).
  LogicalResult checkHostKernels() {
    WalkResult result = step.walk([](CallOp call) {
      const catalog::Entry *entry = catalog::lookup(call.getKernel());
      bool wide = llvm::all_of(call->getOperands(), [](Value v) {
        auto memref = dyn_cast<MemRefType>(v.getType());
        return !memref || !isa<FloatType>(memref.getElementType()) ||
               memref.getElementType().isF32() ||
               memref.getElementType().isF64();
      });
      if (entry && entry->has(catalog::kHostStep) && wide)
        return WalkResult::advance();
      call.emitOpError()
          << "runs in a host step (kernel.host_step), but libtitanrt_host "
             "has no entry for kernel '"
          << call.getKernel()
          << "' on these buffers (KernelCatalog.def's kHostStep kernels, f32 "
             "and f64)";
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  /// The offloaded slots' arguments (and their views) in host memory.
  void placeSlots() {
    SmallVector<Type> inputs;
    for (BlockArgument arg : step.getArguments()) {
      auto slot = step.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), KernelDialect::kSlotAttrName);
      if (slot && isOffloadedSlot(slot.getValue()))
        moveToSpace(arg, MemorySpace::Host);
      inputs.push_back(arg.getType());
    }
    step.setFunctionType(
        FunctionType::get(step.getContext(), inputs, TypeRange{}));
  }

  /// A host step's buffers in host memory, but for the collectives'.
  void placeAllocs() {
    for (auto alloc : step.getBody().front().getOps<AllocOp>())
      if (!feedsCollective(alloc))
        moveToSpace(alloc.getBuffer(), MemorySpace::Host);
  }

  /// Stream `index`, created at the step's top if it has none (the
  /// builder's insertion point stays).
  Value stream(int64_t index) {
    Block &body = step.getBody().front();
    for (auto stream : body.getOps<StreamOp>())
      if (stream.getIndex() == index)
        return stream;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&body);
    return StreamOp::create(b, step.getLoc(), StreamType::get(b.getContext()),
                            b.getI64IntegerAttr(index));
  }

  /// Gives `op` a staging buffer in `space` for each buffer it uses
  /// elsewhere: copied in before it (when it reads the buffer) and out
  /// after it, or after a collective's wait (when it writes it).
  void stageOperands(Operation *op, MemorySpace space) {
    Operation *last = op;
    if (auto start = dyn_cast<CollectiveStartOp>(op))
      last = *start.getRequest().getUsers().begin();
    llvm::MapVector<Value, Use> buffers = buffersOf(op, hostStep);
    // Fetched one reader ahead within the budget; a reader of more waits
    // for its copies right before it (a step's gradient accumulation reads
    // every gradient in one kernel).
    int64_t fetched = 0;
    for (auto &[buffer, use] : buffers)
      if (use.read && getMemorySpace(buffer.getType()) != space)
        fetched += *getStaticByteSize(buffer.getType());
    bool early = maxPrefetchBytes < 0 || fetched <= maxPrefetchBytes;
    bool copiedIn = false;
    for (auto &[buffer, use] : buffers) {
      auto type = cast<MemRefType>(buffer.getType());
      if (getMemorySpace(type) == space)
        continue;
      Location loc = op->getLoc();
      auto stagedType = inMemorySpace(type, space);
      Value staged;
      if (use.read && !hostStep) {
        staged = prefetch(buffer, stagedType, op, early);
        copiedIn = true;
      } else {
        b.setInsertionPoint(op);
        staged = allocStaging(stagedType, loc);
        if (use.read)
          CopyOp::create(b, loc, buffer, staged, stream(kComputeStream));
      }
      if (use.written) {
        b.setInsertionPointAfter(last);
        if (hostStep)
          CopyOp::create(b, loc, staged, buffer, stream(kComputeStream));
        else
          writeBack(staged, buffer, loc);
      }
      op->replaceUsesOfWith(buffer, staged);
    }
    if (copiedIn)
      lastPrefetchReader = op;
  }

  Value allocStaging(MemRefType type, Location loc) {
    return AllocOp::create(
        b, loc, type, AllocKindAttr::get(b.getContext(), AllocKind::Staging),
        IntegerAttr());
  }

  /// A device step's copy of host `buffer` for `reader`, on the copy
  /// stream: started one reader ahead when `early` (right after the
  /// previous kernel that read a copied-in buffer, so the copy overlaps the
  /// kernels between; otherwise right before `reader`), never before the
  /// last write-back to `buffer`, and waited for right before `reader`.
  Value prefetch(Value buffer, MemRefType type, Operation *reader, bool early) {
    Block &body = step.getBody().front();
    Operation *at = !early               ? reader
                    : lastPrefetchReader ? lastPrefetchReader->getNextNode()
                                         : &*body.without_terminator().begin();
    while (isa<StreamOp>(at))
      at = at->getNextNode();
    if (CopyStartOp written = lastWriteBack.lookup(viewedBuffer(buffer));
        written && at->isBeforeInBlock(written))
      at = written->getNextNode();
    // (A write-back of what `reader` reads is issued before it.)
    if (reader->isBeforeInBlock(at))
      at = reader;
    Location loc = reader->getLoc();
    defineBefore(buffer, at);
    b.setInsertionPoint(at);
    Value staged = allocStaging(type, loc);
    Value copies = stream(kCopyStream);
    auto start = CopyStartOp::create(b, loc, RequestType::get(b.getContext()),
                                     buffer, staged, copies);
    b.setInsertionPoint(reader);
    WaitOp::create(b, loc, start.getRequest(), copies);
    return staged;
  }

  /// A device step's kernel.copy between host and device memory (a result
  /// copied into an offloaded slot) goes on the copy stream too, waited
  /// for at once: in order with the fetches and write-backs of the same
  /// slots.
  void routeCopy(CopyOp copy) {
    Value source = copy.getSource(), target = copy.getTarget();
    if (getMemorySpace(source.getType()) == getMemorySpace(target.getType()))
      return;
    b.setInsertionPoint(copy);
    Value copies = stream(kCopyStream);
    auto start =
        CopyStartOp::create(b, copy.getLoc(), RequestType::get(b.getContext()),
                            source, target, copies);
    WaitOp::create(b, copy.getLoc(), start.getRequest(), copies);
    if (getMemorySpace(target.getType()) == MemorySpace::Host)
      lastWriteBack[viewedBuffer(target)] = start;
    copy.erase();
  }

  /// A device step's copy of `staged` back into host `buffer`, started at
  /// the builder's point on the copy stream (finishWriteBacks places its
  /// wait).
  void writeBack(Value staged, Value buffer, Location loc) {
    auto start = CopyStartOp::create(b, loc, RequestType::get(b.getContext()),
                                     staged, buffer, stream(kCopyStream));
    writeBacks.push_back(start);
    CopyStartOp &last = lastWriteBack[viewedBuffer(buffer)];
    if (!last || last->isBeforeInBlock(start))
      last = start;
  }

  /// Each write-back is waited for right before the next one starts (in
  /// program order), the last before the step returns: the copy overlaps
  /// the kernels after it, and at most one staging buffer waits for it.
  void finishWriteBacks() {
    llvm::sort(writeBacks, [](CopyStartOp a, CopyStartOp c) {
      return a->isBeforeInBlock(c);
    });
    Operation *end = step.getBody().front().getTerminator();
    for (auto [i, start] : llvm::enumerate(writeBacks)) {
      Operation *next =
          i + 1 < writeBacks.size() ? writeBacks[i + 1].getOperation() : end;
      b.setInsertionPoint(next);
      WaitOp::create(b, start.getLoc(), start.getRequest(),
                     stream(kCopyStream));
    }
  }

  /// Compute's stream, and the copy engine's (kernel.stream indices; the
  /// collectives' are 1 + their axis mask, below 64).
  static constexpr int64_t kComputeStream = 0, kCopyStream = 64;

  func::FuncOp step;
  bool hostStep;
  /// The bytes a kernel's copies may fetch ahead of it (negative: any).
  int64_t maxPrefetchBytes;
  OpBuilder b;
  /// The last kernel that read a prefetched copy (a device step's).
  Operation *lastPrefetchReader = nullptr;
  /// The write-backs, and each host buffer's last.
  SmallVector<CopyStartOp> writeBacks;
  llvm::DenseMap<Value, CopyStartOp> lastWriteBack;
};

struct KernelOffloadStatePass
    : titan::kernel::impl::KernelOffloadStateBase<KernelOffloadStatePass> {
  using Base::Base;
  void runOnOperation() override {
    for (func::FuncOp step : getOperation().getOps<func::FuncOp>())
      if (failed(StepPlacement(step, maxPrefetchBytes).run()))
        return signalPassFailure();
  }
};

} // namespace
