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

#include "titan/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

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

/// Gives `value` and every view of it memory space `space`.
void moveToSpace(Value value, MemorySpace space) {
  SmallVector<Value> worklist = {value};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    v.setType(inMemorySpace(cast<MemRefType>(v.getType()), space));
    for (Operation *user : v.getUsers())
      if (auto view = dyn_cast<ViewOp>(user))
        worklist.push_back(view.getResult());
  }
}

/// Whether a collective reads or writes `alloc` (through views): such a
/// buffer stays in device memory, where the communicator works.
bool feedsCollective(AllocOp alloc) {
  SmallVector<Value> worklist = {alloc.getBuffer()};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (auto view = dyn_cast<ViewOp>(user))
        worklist.push_back(view.getResult());
      else if (isa<CollectiveStartOp>(user))
        return true;
    }
  }
  return false;
}

/// How an op uses one of its buffers.
struct Use {
  bool read = false, written = false;
};

/// The buffers `op` reads and writes, in operand order. A library call may
/// add into its outputs (a GEMM with beta = 1), so its outputs count as
/// read too; a generated kernel's outputs and reductions, and a
/// collective's output, are written whole.
llvm::MapVector<Value, Use> buffersOf(Operation *op) {
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
  StepPlacement(func::FuncOp step)
      : step(step), hostStep(step->hasAttr(KernelDialect::kHostStepAttrName)),
        b(step.getContext()) {}

  void run() {
    placeSlots();
    if (hostStep)
      placeAllocs();
    Block &body = step.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops)
      if (std::optional<MemorySpace> space = placementOf(op, hostStep))
        stageOperands(op, *space);
  }

private:
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

  /// The compute stream, created at the step's top if it has none.
  Value computeStream() {
    Block &body = step.getBody().front();
    for (auto stream : body.getOps<StreamOp>())
      if (stream.getIndex() == 0)
        return stream;
    b.setInsertionPointToStart(&body);
    return StreamOp::create(b, step.getLoc(), StreamType::get(b.getContext()),
                            b.getI64IntegerAttr(0));
  }

  /// Gives `op` a staging buffer in `space` for each buffer it uses
  /// elsewhere: copied in before it (when it reads the buffer) and out
  /// after it, or after a collective's wait (when it writes it).
  void stageOperands(Operation *op, MemorySpace space) {
    Operation *last = op;
    if (auto start = dyn_cast<CollectiveStartOp>(op))
      last = *start.getRequest().getUsers().begin();
    for (auto &[buffer, use] : buffersOf(op)) {
      auto type = cast<MemRefType>(buffer.getType());
      if (getMemorySpace(type) == space)
        continue;
      Value stream = computeStream();
      Location loc = op->getLoc();
      b.setInsertionPoint(op);
      Value staged = AllocOp::create(
          b, loc, inMemorySpace(type, space),
          AllocKindAttr::get(b.getContext(), AllocKind::Staging),
          IntegerAttr());
      if (use.read)
        CopyOp::create(b, loc, buffer, staged, stream);
      if (use.written) {
        b.setInsertionPointAfter(last);
        CopyOp::create(b, loc, staged, buffer, stream);
      }
      op->replaceUsesOfWith(buffer, staged);
    }
  }

  func::FuncOp step;
  bool hostStep;
  OpBuilder b;
};

struct KernelOffloadStatePass
    : titan::kernel::impl::KernelOffloadStateBase<KernelOffloadStatePass> {
  void runOnOperation() override {
    for (func::FuncOp step : getOperation().getOps<func::FuncOp>())
      StepPlacement(step).run();
  }
};

} // namespace
