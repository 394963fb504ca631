//===- FuseAdamW.cpp - multi-tensor AdamW in the kernel IR ----------------===//
//
// Groups runs of per-parameter `kernel.call "adamw"` into one
// `kernel.call "adamw_multi"` (see Passes.td for the layout).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Kernel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace titan::kernel {
#define GEN_PASS_DEF_KERNELFUSEADAMW
#include "titan/Dialect/Kernel/Transforms/Passes.h.inc"
} // namespace titan::kernel

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

namespace {

/// kernel.call "adamw": inputs (param, grad, exp_avg, exp_avg_sq, lr,
/// grad_norm, step), outputs (param, exp_avg, exp_avg_sq), as the kernel
/// catalog has them (the verifier checked the numbers).
bool isAdamW(Operation *op) {
  auto call = dyn_cast<CallOp>(op);
  return call && call.calls(catalog::KernelId::adamw) && !call.getWorkspace();
}

/// A run of calls to fuse: the tensors' updates must be independent, since
/// a multi-tensor kernel runs them at once.
struct Run {
  SmallVector<CallOp> calls;
  llvm::SmallPtrSet<Value, 16> read, written;

  /// Whether `call` can join: the same shared scalars, stream and
  /// hyperparameters, and no buffer another update of the run writes or
  /// reads written by it.
  bool accepts(CallOp call) const {
    CallOp first = calls.front();
    if (first.getInputs().drop_front(4) != call.getInputs().drop_front(4) ||
        first.getStream() != call.getStream() ||
        first.getParams() != call.getParams())
      return false;
    for (Value v : call.getInputs().take_front(4))
      if (written.contains(viewedBuffer(v)))
        return false;
    for (Value v : call.getOutputs())
      if (written.contains(viewedBuffer(v)) || read.contains(viewedBuffer(v)))
        return false;
    return true;
  }
  void add(CallOp call) {
    calls.push_back(call);
    for (Value v : call.getInputs().take_front(4))
      read.insert(viewedBuffer(v));
    for (Value v : call.getOutputs())
      written.insert(viewedBuffer(v));
  }
};

void fuse(ArrayRef<CallOp> run) {
  CallOp first = run.front();
  SmallVector<Value> inputs, outputs;
  for (CallOp call : run) {
    llvm::append_range(inputs, call.getInputs().take_front(4));
    llvm::append_range(outputs, call.getOutputs());
  }
  llvm::append_range(inputs, first.getInputs().drop_front(4));
  OpBuilder b(first);
  SmallVector<Attribute> params = {b.getI64IntegerAttr(int64_t(run.size()))};
  llvm::append_range(params, first.getParams());
  SmallVector<Location> locs;
  for (CallOp call : run)
    locs.push_back(call.getLoc());
  CallOp::create(b, b.getFusedLoc(locs),
                 b.getStringAttr(catalog::name(catalog::KernelId::adamw_multi)),
                 inputs, outputs, Value(), first.getStream(),
                 b.getArrayAttr(params));
  for (CallOp call : run)
    call.erase();
}

struct KernelFuseAdamWPass
    : kernel::impl::KernelFuseAdamWBase<KernelFuseAdamWPass> {
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks) {
      SmallVector<SmallVector<CallOp>> runs;
      Run current;
      auto close = [&] {
        if (current.calls.size() > 1)
          runs.push_back(current.calls);
        current = Run();
      };
      for (Operation &op : *block) {
        if (!isAdamW(&op)) {
          close();
          continue;
        }
        auto call = cast<CallOp>(op);
        if (!current.calls.empty() && !current.accepts(call))
          close();
        current.add(call);
      }
      close();
      for (ArrayRef<CallOp> run : runs)
        fuse(run);
    }
  }
};

} // namespace
